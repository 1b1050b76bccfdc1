/*
 * supervise-helper: the MCP server an agent calls to ask the operator for
 * more (docs/supervise.md).  nginx fronts it and names the calling bottle
 * in X-Bottle-Id; the helper trusts nothing else.
 *
 *   sv_main.c   flags, signals, start and stop
 *   sv_log.c    the log, the clock, the event sequence (calls no file)
 *   sv_http.c   libmicrohttpd: routes, headers, body cap, sessions,
 *               suspend and resume
 *   sv_rpc.c    JSON-RPC 2.0 and MCP's methods (no store)
 *   sv_tools.c  the eight tools' table and tools/call
 *   sv_egress.c egress-allow, egress-block, list-egress-routes
 *   sv_repo.c   forge-connect, add-repo, create-repo
 *   sv_launch.c launch-bottle's checks
 *   sv_queue.c  what every tool ends with: a refusal or the queueing;
 *               the answers, check-proposal
 *   sv_wait.c   waiters for decisions: one subscriber thread, timeouts
 *   sv_store.c  per-thread store connections, a bottle's policy
 *   sv_heartbeat.c  the heartbeat record, from a thread of its own
 */

#ifndef SUPERVISE_H
#define SUPERVISE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bottle_ip.h"
#include "bottle_policy.h"
#include "bottle_proposal.h"
#include "bottle_store.h"


#define SV_NAME                 "supervise-helper"
#define SV_VERSION              "0.1"
#define SV_PROTOCOL_LATEST      "2025-06-18"
#define SV_PROTOCOL_OLDER       "2025-03-26"

#define SV_BODY_MAX             (1024 * 1024)   /* 413 beyond */
#define SV_BOTTLE_ID_MAX        128
/*
 * MCP sessions: at most SV_SESSIONS_BOTTLE_MAX per bottle (its least
 * recently used goes first), SV_SESSIONS_MAX in all; a bottle's new
 * session never ends another bottle's (the table full, it is refused)
 */
#define SV_SESSIONS_MAX         4096
#define SV_SESSIONS_BOTTLE_MAX  64
#define SV_TIMEOUT_DEFAULT      30      /* seconds */
#define SV_STORE_CONNECT_S      2
#define SV_STORE_COMMAND_S      5
#define SV_THREADS              4       /* MHD's pool */

/* who answers a create-repo the bottle's git_gate.actions.create allows
 * (the decision's operator, decision.resolved's operator_name) */
#define SV_POLICY_OPERATOR      "policy:git_gate.actions.create"

/* JSON-RPC error codes */
#define SV_RPC_PARSE_ERROR      -32700
#define SV_RPC_INVALID_REQUEST  -32600
#define SV_RPC_NO_METHOD        -32601
#define SV_RPC_INVALID_PARAMS   -32602
#define SV_RPC_INTERNAL         -32603
#define SV_RPC_SERVER_ERROR     -32000  /* transport: no bottle, session */


#define SV_PROBE_NETS_MAX  16


typedef struct {
    bottle_store_url_t      store;
    char                    store_text[512];    /* no password */
    int                     timeout;            /* seconds */
    unsigned long long      stream_max;
    char                    gateway[160];       /* host:pid */
    int                     heartbeat;          /* seconds, 0: none */
    char                    name[128];          /* the heartbeat's id */
    bottle_net_t            probe_allow[SV_PROBE_NETS_MAX];
                                    /* internal nets forge-connect may
                                       probe (--forge-probe-allow) */
    size_t                  nprobe_allow;
} sv_conf_t;

extern sv_conf_t  sv_conf;


/* sv_log.c, below every other file: --log FILE opened (0, or -1 with
 * errno; stderr until then) and closed */
int sv_log_open(const char *file);
void sv_log_close(void);

/* one line to stderr or --log, "supervise-helper: ..." */
void sv_log(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* a fresh event sequence number (decision.proposed ids) */
uint64_t sv_seq(void);

/* ms since the epoch */
int64_t sv_now(void);


/* sv_rpc.c: a JSON-RPC message parsed; no store, no MHD (fuzzed) */

typedef enum {
    SV_MSG_REQUEST = 0,     /* method and id */
    SV_MSG_NOTIFICATION,    /* method, no id */
    SV_MSG_RESPONSE         /* result or error: the client answering */
} sv_msg_kind_e;

typedef struct {
    sv_msg_kind_e           kind;
    json_t                 *root;       /* new reference: the whole body */
    json_t                 *id;         /* borrowed from root; NULL for a
                                           notification */
    const char             *method;     /* borrowed from root */
    json_t                 *params;     /* borrowed; NULL if absent */
} sv_msg_t;

/*
 * Parses one JSON-RPC 2.0 message (no batches: MCP 2025-06-18 has none).
 * 0, or the JSON-RPC error code with one line in err and, when the id
 * could be read, *id_out a new reference to it (else json_null()).
 */
int sv_rpc_parse(sv_msg_t *out, const char *body, size_t len,
    json_t **id_out, char *err, size_t errlen);

void sv_msg_free(sv_msg_t *m);

/* {"jsonrpc":"2.0","id":id,"result":result}; steals result */
json_t *sv_rpc_result(json_t *id, json_t *result);

/* {"jsonrpc":"2.0","id":id|null,"error":{code, message}} */
json_t *sv_rpc_error(json_t *id, int code, const char *message);

/* initialize's result for the version the client asked for */
json_t *sv_rpc_initialize(const json_t *params, const char **version);

/* tools/list's result */
json_t *sv_rpc_tools_list(void);

/* 1 if v is a protocol version this server speaks */
int sv_rpc_version_ok(const char *v);

/* a tool's result: one text content, isError */
json_t *sv_tool_text(int is_error, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;


/* sv_heartbeat.c: --heartbeat; 0, or -1 after a line */
int sv_heartbeat_start(void);
void sv_heartbeat_stop(void);


/* sv_store.c: this thread's store connection (NULL and err if none) */

struct redisContext *sv_store(char *err, size_t errlen);

/* the connection failed mid-command: drop it, the next call reconnects */
void sv_store_lost(void);

/* sv_forge.c: asked of the forge before a create-repo is queued */
int sv_forge_create_check(const bottle_repo_t *repo, char *err,
    size_t errlen);

/* sv_forge.c: a forge-connect's host of no known kind, probed: 0 Gitea,
 * GitHub or not probed; -1 refused (err says why) */
int sv_forge_probe(const char *forge, char *err, size_t errlen);

/*
 * One read-only command (redisCommand's format), on a fresh connection
 * once more if this thread's was lost (a store restarted since its last
 * use): the reply, or NULL and err.
 */
struct redisReply *sv_store_read(char *err, size_t errlen,
    const char *fmt, ...);

/*
 * A bottle as the store holds it: its JSON (new reference) and its policy
 * parsed.  0; 1 if no such bottle; -1 and err.
 */
typedef struct {
    json_t                 *json;       /* the stored object */
    bottle_policy_t        *policy;     /* holds this bottle alone */
    const bottle_t         *bottle;     /* in policy */
    int                     is_child;   /* "parent" set */
    long long               children_max;   /* children.max, 0 for a
                                               child */
} sv_bottle_t;

int sv_bottle_load(sv_bottle_t *out, const char *id, char *err,
    size_t errlen);
void sv_bottle_free(sv_bottle_t *b);


/* sv_wait.c: waiters for a proposal's decision */

typedef struct sv_waiter_s  sv_waiter_t;

struct sv_waiter_s {
    char                    id[BOTTLE_PROPOSAL_ID_LEN];
    int64_t                 deadline_ms;
    void                   *connection;     /* MHD's, once suspended */
    int                     listed;
    int                     fired;          /* a decision, a timeout, a
                                               resubscribe, or shutdown */
    sv_waiter_t            *prev, *next;
};

int sv_wait_start(void);
void sv_wait_stop(void);

/* listed, not suspended yet: a decision meanwhile is remembered */
void sv_wait_add(sv_waiter_t *w, const char *id, int64_t deadline_ms);

/*
 * Suspends the connection until the waiter fires, unless it fired
 * already: 1 suspended, 0 fired (answer now; the waiter is unlisted).
 */
int sv_wait_suspend(sv_waiter_t *w, void *connection);

/* unlisted (the request ends) */
void sv_wait_remove(sv_waiter_t *w);

/* resumes every waiter (shutdown); returns how many were waiting */
size_t sv_wait_release_all(void);


/* sv_tools.c: tools/call for a bottle.  The result (new reference) in
 * *out, or the waiter listed with *out NULL: wait, then sv_tools_answer */

typedef struct {
    char                    bottle[SV_BOTTLE_ID_MAX + 1];
    char                    request_id[128];    /* X-Bottle-Request-Id */
    char                    tool[32];
    char                    proposal[BOTTLE_PROPOSAL_ID_LEN];
    sv_waiter_t             waiter;
} sv_call_t;

/* 0 (*out or a waiter), or a JSON-RPC error code with err */
int sv_tools_call(json_t **out, sv_call_t *call, const json_t *params,
    char *err, size_t errlen);

/* sv_queue.c: the answer of a queued proposal now: decided, or pending
 * (*pending 1; also when the store cannot say) */
json_t *sv_tools_answer(sv_call_t *call, int *pending);


/* sv_http.c */
struct MHD_Daemon;
int sv_http_start(struct MHD_Daemon **out, const char *listen);
void sv_http_stop(struct MHD_Daemon *d, const char *listen);


#endif /* SUPERVISE_H */
