/*
 * Heartbeats (docs/control-plane.md, "Heartbeats"): each gateway worker
 * and supervise-helper write one record into the store every period,
 * under a key that expires; git-gate, one process per request, writes
 * its record on each request instead.  `bottlectl status` reads them.
 *
 * A record is a JSON object (bottle_heartbeat_json); its key is
 * "bottle:heartbeat:<kind>:<id>", written with SET ... PX ttl_ms, so a
 * reader tells its age by the key's PTTL alone (Redis's clock, not the
 * writer's): age = ttl_ms - PTTL.
 *
 * No hiredis here: callers bring their own connection.
 */

#ifndef BOTTLE_HEARTBEAT_H
#define BOTTLE_HEARTBEAT_H

#include <stddef.h>
#include <stdint.h>


#define BOTTLE_HEARTBEAT_PREFIX     "bottle:heartbeat:"   /* + kind:id */

#define BOTTLE_HEARTBEAT_GATEWAY    "gateway"
#define BOTTLE_HEARTBEAT_SUPERVISE  "supervise"
#define BOTTLE_HEARTBEAT_GITGATE    "git-gate"

#define BOTTLE_HEARTBEAT_PERIOD_MS  5000    /* the default period */
#define BOTTLE_HEARTBEAT_STALE      3       /* periods: then stale */
#define BOTTLE_HEARTBEAT_KEEP       60      /* periods: then the key goes */
/* git-gate's record (no period: written per request) is kept this long */
#define BOTTLE_HEARTBEAT_IDLE_TTL_MS  (24 * 3600 * 1000)

#define BOTTLE_HEARTBEAT_ID_MAX     255     /* bytes of an id */
#define BOTTLE_HEARTBEAT_KEY_LEN                                              \
    (sizeof(BOTTLE_HEARTBEAT_PREFIX) + sizeof(BOTTLE_HEARTBEAT_SUPERVISE)      \
     + BOTTLE_HEARTBEAT_ID_MAX + 2)

#define BOTTLE_HEARTBEAT_VERSION    "0.1"   /* the components' version */


/* what a record says; -1 (or NULL) for what the component does not know */
typedef struct {
    const char   *kind;             /* BOTTLE_HEARTBEAT_GATEWAY, ... */
    const char   *id;               /* unique within its kind */
    const char   *host;             /* gethostname() */
    const char   *instance;         /* a gateway's workers share it */
    const char   *store;            /* the store as the component sees it:
                                       "up", "syncing" (connected, the
                                       bottles not read yet) */
    int64_t       pid;
    int64_t       time_ms;          /* written at, the writer's clock */
    int64_t       period_ms;        /* 0: written per request (git-gate) */
    int64_t       ttl_ms;           /* the key's expiry */
    int64_t       uptime_s;
    int64_t       policy_version;   /* highest bottle version applied */
    int64_t       bottles;          /* bottles served */
    int64_t       since_sync_s;     /* since the bottles were last read or
                                       a change applied */
    int64_t       worker;           /* a gateway worker's number */
    int64_t       workers;          /* worker_processes */
    int64_t       master_pid;
} bottle_heartbeat_t;


/* every field -1 or NULL */
void bottle_heartbeat_init(bottle_heartbeat_t *hb);

/* the key's expiry for a period: BOTTLE_HEARTBEAT_KEEP periods, or
   BOTTLE_HEARTBEAT_IDLE_TTL_MS for period 0 */
int64_t bottle_heartbeat_ttl(int64_t period_ms);

/*
 * "bottle:heartbeat:<kind>:<id>" into buf (BOTTLE_HEARTBEAT_KEY_LEN
 * bytes); an id of bytes other than printable ASCII less space has them
 * as '_', and is cut at BOTTLE_HEARTBEAT_ID_MAX.  Returns its length.
 */
size_t bottle_heartbeat_key(char *buf, const char *kind, const char *id);

/* the record as compact JSON (malloc'd: free()), or NULL */
char *bottle_heartbeat_json(const bottle_heartbeat_t *hb);


#endif /* BOTTLE_HEARTBEAT_H */
