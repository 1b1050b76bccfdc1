
/*
 * ngx_bottle: what the stream front and the http pipeline share.
 */

#ifndef _NGX_BOTTLE_H_INCLUDED_
#define _NGX_BOTTLE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "bottle_cookie.h"
#include "bottle_decide.h"
#include "bottle_ip.h"
#include "bottle_policy.h"
#include "bottle_proposal.h"
#include "bottle_rule.h"
#include "bottle_scan.h"

#include "ngx_bottle_store.h"


/* the gateway's own host: introspection, never a route */
#define NGX_BOTTLE_EGRESS_HOST  "_egress.local"


#define ngx_bottle_is_egress_host(h)                                         \
    ((h)->len == sizeof(NGX_BOTTLE_EGRESS_HOST) - 1                          \
     && ngx_strncmp((h)->data, NGX_BOTTLE_EGRESS_HOST, (h)->len) == 0)


/* the core module's conf: the compiled policy of this cycle */
typedef struct {
    ngx_str_t            path;       /* a file, a directory or a URL */
    bottle_policy_t     *policy;     /* the file's */
    ngx_bottle_store_t  *store;      /* the bottles, from either source */
    ngx_msec_t           stale_max;  /* bottle_store_stale_max */
    ngx_uint_t           scanners;   /* bottle_store_scanners */
    bottle_limits_t      limits;     /* bottle_store_limits */
    ngx_shm_zone_t      *zone;       /* CONNECT records, safelist */
    ngx_shm_zone_t      *jar_zone;   /* the cookie jars */
    size_t               jar_size;   /* bottle_jar_zone */
    size_t               jar_bottle_max;  /* bottle_jar_bottle_max */
    bottle_scan_db_t    *scan_db;    /* vendor rules, for every bottle */
    bottle_scan_secrets_t   *inbound;    /* no secrets: response scans */
    ngx_msec_t           heartbeat;  /* bottle_heartbeat, 0: off */
    ngx_str_t            heartbeat_id;   /* its id=, "": the host name */
    ngx_uint_t           refusal_log_level;  /* bottle_refusal_log_level */
} ngx_bottle_conf_t;


/* a CONNECT's decision, as the http side finds it again */
typedef struct {
    ngx_str_t            id;         /* the bottle's id */
    ngx_str_t            host;       /* canonical target host */
    in_port_t            port;
} ngx_bottle_target_t;


/* a few hundred bytes a tunnel or a safelist entry */
#define NGX_BOTTLE_ZONE_SIZE     (16 * 1024 * 1024)
#define NGX_BOTTLE_ZONE_KEY_LEN  (NGX_SOCKADDR_STRLEN + sizeof(":65535"))

/* the cookie jars: the zone, and what one bottle may hold of it */
#define NGX_BOTTLE_JAR_ZONE_SIZE   (8 * 1024 * 1024)
#define NGX_BOTTLE_JAR_BOTTLE_MAX  (256 * 1024)


/*
 * Every refusal names one rule; the rule decides the status, the text the
 * agent reads, and the log line (docs/refusals.md).  The rules and their
 * table are libbottle's (bottle_rule.h), which bottlectl explain reads too.
 */
typedef bottle_rule_e  ngx_bottle_rule_e;

#define NGX_BOTTLE_RULE_NONE            BOTTLE_RULE_NONE
#define NGX_BOTTLE_RULE_BAD_REQUEST     BOTTLE_RULE_BAD_REQUEST
#define NGX_BOTTLE_RULE_IDENTITY        BOTTLE_RULE_IDENTITY
#define NGX_BOTTLE_RULE_NO_ROUTE        BOTTLE_RULE_NO_ROUTE
#define NGX_BOTTLE_RULE_PORT            BOTTLE_RULE_PORT
#define NGX_BOTTLE_RULE_ADDRESS         BOTTLE_RULE_ADDRESS
#define NGX_BOTTLE_RULE_RESOLVE         BOTTLE_RULE_RESOLVE
#define NGX_BOTTLE_RULE_INSPECT         BOTTLE_RULE_INSPECT
#define NGX_BOTTLE_RULE_RAW_TCP         BOTTLE_RULE_RAW_TCP
#define NGX_BOTTLE_RULE_HOST_MISMATCH   BOTTLE_RULE_HOST_MISMATCH
#define NGX_BOTTLE_RULE_GIT             BOTTLE_RULE_GIT
#define NGX_BOTTLE_RULE_METHOD          BOTTLE_RULE_METHOD
#define NGX_BOTTLE_RULE_ALLOW           BOTTLE_RULE_ALLOW
#define NGX_BOTTLE_RULE_TIMEOUT         BOTTLE_RULE_TIMEOUT
#define NGX_BOTTLE_RULE_UPSTREAM        BOTTLE_RULE_UPSTREAM
#define NGX_BOTTLE_RULE_WEBSOCKET       BOTTLE_RULE_WEBSOCKET
#define NGX_BOTTLE_RULE_CANARY          BOTTLE_RULE_CANARY
#define NGX_BOTTLE_RULE_CRLF            BOTTLE_RULE_CRLF
#define NGX_BOTTLE_RULE_DLP             BOTTLE_RULE_DLP
#define NGX_BOTTLE_RULE_TOO_LARGE       BOTTLE_RULE_TOO_LARGE
#define NGX_BOTTLE_RULE_ENCODING        BOTTLE_RULE_ENCODING
#define NGX_BOTTLE_RULE_INTERNAL        BOTTLE_RULE_INTERNAL
#define NGX_BOTTLE_RULE_AUDIT           BOTTLE_RULE_AUDIT
#define NGX_BOTTLE_RULE_REVOKED         BOTTLE_RULE_REVOKED


/* bottle_rule_t, as nginx strings */
typedef struct {
    ngx_uint_t           status;     /* 400, 403, 407, 502 */
    ngx_str_t            name;       /* "no_route" */
    ngx_str_t            advice;     /* what to ask the operator for */
} ngx_bottle_rule_t;


/* a decision: who, where, which rule, why */
typedef struct {
    const bottle_t      *bottle;
    ngx_str_t            host;
    ngx_bottle_rule_e    rule;
    ngx_str_t            reason;     /* short, never a secret */
    ngx_uint_t           status;     /* answered with; 0: the rule's */

    /* for the audit journal, where known */
    ngx_str_t            correlation;    /* $request_id, or the session's */
    ngx_str_t            method;
    in_port_t            port;
} ngx_bottle_verdict_t;


/* one resolved and checked upstream address */
typedef struct {
    ngx_addr_t           addr;       /* sockaddr with the port set */
    u_char               text[NGX_SOCKADDR_STRLEN];
    size_t               text_len;   /* "1.2.3.4:443" / "[::1]:80" */
} ngx_bottle_peer_t;


typedef void (*ngx_bottle_resolved_pt)(void *data, ngx_int_t rc);

typedef struct {
    ngx_resolver_t          *resolver;
    ngx_msec_t               timeout;
    ngx_log_t               *log;
    ngx_pool_t              *pool;
    const bottle_route_t    *route;
    ngx_str_t                host;       /* canonical, lowercase */
    in_port_t                port;
    ngx_bottle_resolved_pt   handler;
    void                    *data;

    /* results */
    ngx_bottle_peer_t        peer;
    time_t                   valid;      /* the answer holds until then */
    ngx_bottle_rule_e        rule;       /* on failure: RESOLVE or ADDRESS */
    ngx_str_t                reason;

    ngx_resolver_ctx_t      *rctx;       /* pending lookup */
} ngx_bottle_resolve_t;


extern ngx_module_t  ngx_bottle_module;


ngx_bottle_store_t *ngx_bottle_cycle_store(ngx_cycle_t *cycle);
bottle_scan_secrets_t *ngx_bottle_inbound_secrets(void);

/*
 * A refusal, reported once to core by ngx_bottle_log_verdict(): what
 * records it (the metrics zone, the front's final record, the audit
 * journal) registers an observer in its init_process; status is the one
 * the agent got.
 */
typedef void (*ngx_bottle_refusal_pt)(ngx_connection_t *c,
    ngx_bottle_verdict_t *v, ngx_uint_t status);

#define NGX_BOTTLE_REFUSAL_OBSERVERS  4

const ngx_bottle_rule_t *ngx_bottle_rule(ngx_bottle_rule_e rule);
ngx_int_t ngx_bottle_refusal_observe(ngx_bottle_refusal_pt handler);
void ngx_bottle_log_verdict(ngx_connection_t *c, ngx_bottle_verdict_t *v);
ngx_int_t ngx_bottle_refusal_body(ngx_pool_t *pool, ngx_bottle_verdict_t *v,
    ngx_str_t *out);
size_t ngx_bottle_safe_copy(u_char *dst, size_t cap, const u_char *src,
    size_t len);

void ngx_cdecl ngx_bottle_log(ngx_uint_t level, ngx_log_t *log,
    const char *fmt, ...);
ngx_int_t ngx_bottle_canonical_host(ngx_pool_t *pool, const u_char *host,
    size_t len, ngx_uint_t bracketed, ngx_str_t *out);
ngx_int_t ngx_bottle_host_matches(ngx_pool_t *pool, ngx_str_t *value,
    ngx_str_t *host, in_port_t port, in_port_t default_port);
ngx_int_t ngx_bottle_sni_matches(ngx_pool_t *pool, ngx_str_t *sni,
    ngx_str_t *host, in_port_t port);
ngx_int_t ngx_bottle_client_ip(ngx_connection_t *c, bottle_ip_t *out);

ngx_int_t ngx_bottle_zone_add(ngx_conf_t *cf, ngx_bottle_conf_t *bcf,
    size_t size);
ngx_int_t ngx_bottle_zone_key(ngx_connection_t *c, u_char *buf, size_t size,
    ngx_str_t *out);
ngx_int_t ngx_bottle_zone_insert(ngx_str_t *key, ngx_bottle_target_t *target);
ngx_int_t ngx_bottle_zone_find(ngx_str_t *key, ngx_pool_t *pool,
    ngx_bottle_target_t *out);
void ngx_bottle_zone_delete(ngx_str_t *key);
ngx_uint_t ngx_bottle_zone_count(void);
ngx_int_t ngx_bottle_zone_held(ngx_str_t *id, ngx_int_t n, off_t bytes,
    ngx_uint_t max, off_t max_bytes);
void ngx_bottle_zone_held_reclaim(ngx_cycle_t *cycle);
ngx_int_t ngx_bottle_zone_pair_key(ngx_pool_t *pool, ngx_str_t *id,
    ngx_str_t *host, const u_char *tail, size_t tail_len, ngx_str_t *out);
ngx_int_t ngx_bottle_zone_safelist(ngx_slab_pool_t **shpool,
    ngx_rbtree_t **tree);
ngx_int_t ngx_bottle_zone_safelist_grow(size_t size);

/* ngx_bottle_heartbeat.c */
char *ngx_bottle_heartbeat_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_bottle_heartbeat_init_process(ngx_cycle_t *cycle,
    ngx_bottle_conf_t *bcf);

ngx_int_t ngx_bottle_jar_zone_add(ngx_conf_t *cf, ngx_bottle_conf_t *bcf);
char *ngx_bottle_jar_init_conf(ngx_cycle_t *cycle, ngx_bottle_conf_t *bcf);
ngx_int_t ngx_bottle_jar_init_process(ngx_cycle_t *cycle);
ngx_int_t ngx_bottle_jar_set(ngx_pool_t *pool, ngx_str_t *id,
    ngx_str_t *host, ngx_str_t *name, ngx_str_t *value, time_t expires,
    ngx_uint_t del);
ngx_int_t ngx_bottle_jar_filter(ngx_pool_t *pool, ngx_str_t *id,
    ngx_str_t *host, bottle_cookie_str_t *in, ngx_uint_t n, ngx_str_t *out);

ngx_int_t ngx_bottle_safelist_add(ngx_pool_t *pool, ngx_str_t *id,
    ngx_str_t *host, const u_char *digest);
ngx_uint_t ngx_bottle_safelist_has(ngx_pool_t *pool, ngx_str_t *id,
    ngx_str_t *host, const u_char *digest);

ngx_int_t ngx_bottle_resolve(ngx_bottle_resolve_t *res);
void ngx_bottle_resolve_cancel(ngx_bottle_resolve_t *res);


/*
 * The audit journal (ngx_bottle_audit.c, docs/control-plane.md): events
 * queue per worker and go to the bottle:audit stream.  A first contact of
 * a bottle with audit.delivery: "required" waits for its acknowledgement:
 * ngx_bottle_audit_contact() returns NGX_AGAIN and calls handler later
 * with NGX_OK or NGX_DECLINED (reason set); NGX_DECLINED at once when the
 * journal is off, unreachable or full.
 */

typedef struct ngx_bottle_contact_s  ngx_bottle_contact_t;

typedef void (*ngx_bottle_contact_pt)(ngx_bottle_contact_t *ct,
    ngx_int_t rc);

struct ngx_bottle_contact_s {
    const bottle_t          *bottle;
    ngx_str_t                host;
    in_port_t                port;
    ngx_str_t                method;
    ngx_str_t                scheme;
    ngx_str_t                correlation;
    ngx_bottle_contact_pt    handler;
    void                    *data;
    const char              *reason;     /* NGX_DECLINED's */

    /* private */
    ngx_queue_t              queue;
    ngx_event_t              ev;         /* the timeout, or the answer */
    uint64_t                 seq;
    ngx_int_t                rc;
    unsigned                 waiting:1;
};


/*
 * The full log as this configuration has it: unknown until an http block
 * is parsed (ngx_http_bottle_record.c sets it), then on or off
 * (bottle_full_log_dir).  Off, a bottle with a route logged "full" is
 * refused (docs/full-log.md).
 */
#define NGX_BOTTLE_FULL_LOG_UNKNOWN  0
#define NGX_BOTTLE_FULL_LOG_ON       1
#define NGX_BOTTLE_FULL_LOG_OFF      2

extern ngx_uint_t  ngx_bottle_full_log;

int ngx_bottle_full_log_check(const bottle_policy_t *p, char *err,
    size_t errlen);

ngx_uint_t ngx_bottle_audit_enabled(void);
int ngx_bottle_audit_check(const bottle_policy_t *p, char *err,
    size_t errlen);
void ngx_bottle_audit_refusal(ngx_connection_t *c, ngx_bottle_verdict_t *v,
    ngx_uint_t status);
void ngx_bottle_audit_finding(const bottle_t *bottle, ngx_str_t *host,
    ngx_str_t *correlation, const char *detector, const char *rule,
    const char *location, const char *digest, const char *action);
void ngx_bottle_audit_reflected(const bottle_t *bottle, ngx_str_t *host,
    ngx_str_t *correlation, const char *const *held, const char *const *kinds,
    size_t nheld, const char *const *where, size_t nwhere,
    const char *const *encodings, size_t nencodings);
ngx_int_t ngx_bottle_audit_contact(ngx_bottle_contact_t *ct);
void ngx_bottle_audit_contact_cancel(ngx_bottle_contact_t *ct);
char *ngx_bottle_audit_proposed(ngx_str_t *bottle, ngx_str_t *host,
    const char *id, const char *kind, const char *summary,
    const char *justification, size_t *len, const char **maxlen);
char *ngx_bottle_audit_expired(ngx_str_t *bottle, ngx_str_t *host,
    const char *id, const char *decision, const char *kind,
    const char *reason, size_t *len, const char **maxlen);


/*
 * The worker's open agent connections (ngx_bottle_conns.c,
 * docs/control-plane.md "Open connections"): each with what admitted it,
 * decided again when the bottles change or the store is lost past its
 * bound; close ends one that is no longer allowed (the log line is
 * written before).  An entry lives in its connection's pool.
 */

typedef struct ngx_bottle_conn_s  ngx_bottle_conn_t;

typedef void (*ngx_bottle_conn_close_pt)(ngx_bottle_conn_t *bc);

struct ngx_bottle_conn_s {
    ngx_queue_t              queue;      /* in the worker's list */
    ngx_connection_t        *connection;
    ngx_bottle_entry_t      *entry;      /* the bottle it was admitted as */
    ngx_str_t                id;         /* its id, a copy */
    u_char                   digest[32]; /* the token it came with */
    ngx_str_t                host;       /* the target; empty: identity */
    in_port_t                port;
    ngx_bottle_conn_close_pt close;
    void                    *data;       /* the close handler's */
    ngx_queue_t              requests;   /* http: requests in flight */
    ngx_uint_t              *alive;      /* zeroed when it is freed */
    u_char                   id_buf[256];
    u_char                   host_buf[256];
    u_char                   reason[BOTTLE_DECIDE_REASON_MAX + 1];
    size_t                   reason_len;
    unsigned                 has_digest:1;
    unsigned                 tunnel:1;   /* a CONNECT's target */
    unsigned                 passthrough:1;
    unsigned                 closed:1;
};


void ngx_bottle_conns_init_process(ngx_cycle_t *cycle);
void ngx_bottle_conns_changed(void);
ngx_bottle_conn_t *ngx_bottle_conn_add(ngx_connection_t *c,
    ngx_bottle_entry_t *e, ngx_uint_t has_digest, ngx_str_t *host,
    in_port_t port);
ngx_int_t ngx_bottle_conn_set(ngx_bottle_conn_t *bc, ngx_bottle_entry_t *e,
    ngx_uint_t has_digest, ngx_str_t *host, in_port_t port);
ngx_bottle_conn_t *ngx_bottle_conn_find(ngx_connection_t *c);
ngx_int_t ngx_bottle_conn_decide(ngx_bottle_conn_t *bc,
    ngx_bottle_verdict_t *v);


/*
 * Held requests (ngx_bottle_supervise.c, docs/dlp.md "Held requests"): a
 * DLP finding under on_match: supervise queues an egress-token-allow
 * proposal and waits for its decision or a timer, without blocking the
 * worker.  ngx_bottle_hold_create() copies the bottle's id and the host;
 * the caller fills the rest and starts it: NGX_AGAIN, and handler is
 * called later (posted, never from inside hiredis) with rc NGX_OK
 * (approved) or NGX_DECLINED (reason: denied, timed out, the store lost);
 * NGX_DECLINED at once (reason) when it cannot be held.  The caller
 * releases it exactly once, whatever happened (a client gone: the wait is
 * cancelled and its bound released at once).
 */

#define NGX_BOTTLE_HOLD_REASON   512

typedef struct ngx_bottle_hold_s  ngx_bottle_hold_t;

typedef void (*ngx_bottle_hold_pt)(ngx_bottle_hold_t *h);

struct ngx_bottle_hold_s {
    ngx_str_t                bottle;     /* the bottle's id, a copy */
    ngx_str_t                host;       /* a copy */
    const char              *detector;
    const char              *rule;
    const char              *location;
    u_char                   digest[32]; /* SHA-256 of the value */
    off_t                    body;       /* bytes held with it */
    ngx_log_t               *log;
    ngx_bottle_hold_pt       handler;
    void                    *data;

    /* results */
    ngx_int_t                rc;
    char                     id[BOTTLE_PROPOSAL_ID_LEN];  /* once queued */
    u_char                   reason[NGX_BOTTLE_HOLD_REASON];
    size_t                   reason_len;

    /* private */
    ngx_str_node_t           sn;         /* by the proposal's id */
    ngx_event_t              timer;
    ngx_event_t              done;
    ngx_uint_t               inflight;   /* Redis replies to come */
    ngx_uint_t               state;
    unsigned                 counted:1;
    unsigned                 gone:1;
    unsigned                 recheck:1;  /* a decision before the reply */
};


ngx_uint_t ngx_bottle_supervise_enabled(void);
ngx_bottle_hold_t *ngx_bottle_hold_create(ngx_str_t *bottle,
    ngx_str_t *host, ngx_log_t *log);
ngx_int_t ngx_bottle_hold_start(ngx_bottle_hold_t *h);
void ngx_bottle_hold_release(ngx_bottle_hold_t *h);
void ngx_bottle_hold_release_as(ngx_bottle_hold_t *h, const char *reason);


/*
 * Metrics (ngx_bottle_metrics.c, docs/metrics.md): counters in a shared
 * zone, atomic adds, no lock but when a bottle is first seen.
 */

enum {
    NGX_BOTTLE_METRIC_FULL_LOG_RECORDS = 0,
    NGX_BOTTLE_METRIC_FULL_LOG_DROPPED,
    NGX_BOTTLE_METRIC_FULL_LOG_ROTATIONS,
    NGX_BOTTLE_METRIC_FIREHOSE_SNAPSHOTS,
    NGX_BOTTLE_METRIC_FIREHOSE_PUBLISHED,
    NGX_BOTTLE_METRIC_FIREHOSE_DROPPED,
    NGX_BOTTLE_METRIC_AUDIT_DROPPED,
    NGX_BOTTLE_METRIC_HELD,                  /* a gauge: +1, -1 */
    NGX_BOTTLE_METRIC_HELD_TOTAL,
    NGX_BOTTLE_METRIC_HELD_APPROVED,         /* released, by outcome */
    NGX_BOTTLE_METRIC_HELD_DENIED,
    NGX_BOTTLE_METRIC_HELD_TIMEOUT,
    NGX_BOTTLE_METRIC_HELD_CLIENT_GONE,
    NGX_BOTTLE_METRIC_HELD_EXPIRED,
    NGX_BOTTLE_METRIC_HELD_FAILED,
    NGX_BOTTLE_METRIC_HELD_FULL,             /* refused: places full */
    NGX_BOTTLE_METRIC_UPSTREAM_KEPT,
    NGX_BOTTLE_METRIC_UPSTREAM_REUSED,
    NGX_BOTTLE_METRIC_UPSTREAM_HANDSHAKES,
    NGX_BOTTLE_METRIC_UPSTREAM_RESUMED,
    NGX_BOTTLE_METRIC_LEAF_HITS,
    NGX_BOTTLE_METRIC_LEAF_MINTS,
    NGX_BOTTLE_METRIC_LEAF_CACHED,           /* a gauge, all workers */
    NGX_BOTTLE_METRIC_N
};

ngx_int_t ngx_bottle_metrics_zone_add(ngx_conf_t *cf);
void ngx_bottle_metrics_init_process(ngx_cycle_t *cycle);
void ngx_bottle_metrics_count(ngx_uint_t metric);
void ngx_bottle_metrics_add(ngx_uint_t metric, ngx_atomic_int_t delta);
ngx_atomic_uint_t ngx_bottle_metrics_value(ngx_uint_t metric);
void ngx_bottle_metrics_request(const bottle_t *b, ngx_bottle_rule_e rule);
void ngx_bottle_metrics_finding(const char *detector);
ngx_atomic_t *ngx_bottle_metrics_fulllog_gen(void);
/* 1 while the full log cannot be written: said once per gateway */
ngx_atomic_t *ngx_bottle_metrics_fulllog_failing(void);
void ngx_bottle_metrics_lock(void);
void ngx_bottle_metrics_unlock(void);
ngx_int_t ngx_bottle_metrics_render(ngx_pool_t *pool, ngx_uint_t tunnels,
    ngx_str_t *extra, ngx_str_t *out);

/*
 * What one worker knows of its own connections and queues: a slot of the
 * zone per live worker, each value set (not added) by its worker, and
 * summed or compared over the live workers at scrape time.
 */

enum {
    NGX_BOTTLE_WORKER_STORE = 0,             /* 1: a Redis policy source */
    NGX_BOTTLE_WORKER_STORE_UP,              /* 1: following the store */
    NGX_BOTTLE_WORKER_STORE_HEARD,           /* epoch s, last heard from */
    NGX_BOTTLE_WORKER_POLICY_VERSION,        /* highest version applied */
    NGX_BOTTLE_WORKER_AUDIT_QUEUED,          /* journal events queued */
    NGX_BOTTLE_WORKER_FIREHOSE_QUEUED,       /* firehose records queued */
    NGX_BOTTLE_WORKER_N
};

void ngx_bottle_metrics_worker_set(ngx_uint_t value, ngx_atomic_uint_t v);
void ngx_bottle_metrics_exit_process(void);

/*
 * A handed-off connection's refusals, for the front's log line
 * (ngx_bottle_final.c): the http side records them by the connection's
 * key (the agent's address and port), the front reads them when it logs
 * and forgets them when the connection ends.  In the metrics zone.
 */

#define NGX_BOTTLE_FINAL_N  1024

typedef struct {
    uint32_t             hash;       /* 0: free */
    u_char               key_len;
    u_char               key[NGX_BOTTLE_ZONE_KEY_LEN];
    u_char               rule;       /* the last refusal's */
    uint16_t             status;
    uint32_t             refused;
} ngx_bottle_final_t;

ngx_bottle_final_t *ngx_bottle_metrics_finals(void);
void ngx_bottle_final_init_process(void);
ngx_int_t ngx_bottle_final_get(ngx_str_t *key, ngx_bottle_final_t *out);
void ngx_bottle_final_forget(ngx_str_t *key);


#endif /* _NGX_BOTTLE_H_INCLUDED_ */
