/*
 * bottlectl, the operator CLI of the Redis control plane
 * (docs/bottlectl.md, docs/control-plane.md).
 *
 * bottlectl.c parses the global options and dispatches a command to one of
 * the files below; each command returns the process's exit status.  The
 * store connection is opened on first use, so a command that reads a
 * policy file (--policy) never needs Redis.
 */

#ifndef BOTTLECTL_H
#define BOTTLECTL_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "bottle_policy.h"
#include "bottle_store.h"


#ifndef BOTTLECTL_VERSION
#define BOTTLECTL_VERSION   "0.1"
#endif

/* exit statuses */
#define BOTTLECTL_OK            0
#define BOTTLECTL_REFUSED       1   /* invalid input, no such bottle, ... */
#define BOTTLECTL_USAGE         2
#define BOTTLECTL_UNREACHABLE   3   /* the store cannot be reached */

#define BOTTLECTL_CONNECT_TIMEOUT   2   /* seconds */
#define BOTTLECTL_COMMAND_TIMEOUT   5   /* seconds, but audit tail -f */

#define BOTTLECTL_URL_LEN   (BOTTLE_STORE_HOST_MAX + BOTTLE_STORE_PATH_MAX + 64)


typedef struct bottlectl_s  bottlectl_t;

struct bottlectl_s {
    const char             *store;      /* --store, $BOTTLE_STORE or the
                                           default */
    bottle_store_url_t      url;        /* store parsed */
    char                    url_text[BOTTLECTL_URL_LEN];  /* no password */
    const char             *policy;     /* --policy FILE, or NULL */
    int                     json;       /* --json */
    redisContext           *redis;      /* NULL until bottlectl_connect() */
};


/* bottlectl.c */

/* one line "bottlectl: ..." on stderr */
void bottlectl_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* "usage: ..." for the command, then BOTTLECTL_USAGE */
int bottlectl_usage(const char *synopsis);


/* ctl_store.c */

/* connects (once) and authenticates; 0 or BOTTLECTL_UNREACHABLE */
int bottlectl_connect(bottlectl_t *ctl);

void bottlectl_disconnect(bottlectl_t *ctl);

/*
 * Runs one command (connecting first if needed).  Returns 0 with a new
 * reply in *out (freeReplyObject), which may be an error reply, or
 * BOTTLECTL_UNREACHABLE after one line on stderr.
 */
int bottlectl_command(bottlectl_t *ctl, redisReply **out, int argc,
    const char **argv, const size_t *argvlen);

/* the store lost mid-command: the line and BOTTLECTL_UNREACHABLE */
int bottlectl_lost(bottlectl_t *ctl);


/* ctl_policy.c */

int bottlectl_policy(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_bottles(bottlectl_t *ctl, int argc, char **argv);

/*
 * One bottle for a command that looks at it (explain): from the --policy
 * file when it was given (*out is that whole policy), else from the store
 * (*out is a policy holding that bottle alone).  Find the bottle in it
 * with bottle_policy_find_id(); free it with bottle_policy_free().
 * Returns 0, or after one line on stderr BOTTLECTL_REFUSED (no such
 * bottle, an invalid policy) or BOTTLECTL_UNREACHABLE.
 */
int bottlectl_fetch_bottle(bottlectl_t *ctl, const char *id,
    bottle_policy_t **out);


/* ctl_put.c */

int bottlectl_policy_put(bottlectl_t *ctl, const char *file);


/* ctl_audit.c */

int bottlectl_audit(bottlectl_t *ctl, int argc, char **argv);


/* ctl_explain.c */

int bottlectl_explain(bottlectl_t *ctl, int argc, char **argv);


#endif /* BOTTLECTL_H */
