
/*
 * The audit journal's insides, shared by its three files: the queue
 * (ngx_bottle_audit.c), the events built (ngx_bottle_audit_event.c) and
 * first contacts (ngx_bottle_audit_contact.c).
 * The rest of the module sees only what ngx_bottle.h declares.
 */

#ifndef _NGX_BOTTLE_AUDIT_H_INCLUDED_
#define _NGX_BOTTLE_AUDIT_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_bottle.h"
#include "ngx_bottle_redis.h"
#include "bottle_audit.h"
#include "bottle_audit_chain.h"


#define NGX_BOTTLE_AUDIT_QUEUE       10000
#define NGX_BOTTLE_AUDIT_STREAM_MAX  1000000
#define NGX_BOTTLE_AUDIT_TIMEOUT     5000
#define NGX_BOTTLE_AUDIT_INFLIGHT    64      /* commands pipelined */
#define NGX_BOTTLE_AUDIT_HOSTS_MAX   4096    /* cached pairs per bottle */
#define NGX_BOTTLE_AUDIT_PING        1000


typedef struct {
    ngx_str_t                  url;        /* bottle_audit, NULL data: unset */
    ngx_flag_t                 off;
    ngx_int_t                  queue;
    ngx_int_t                  stream_max;
    ngx_msec_t                 timeout;

    bottle_store_url_t        *store_url;  /* the journal's, if on */
    ngx_str_t                  addr;       /* resolved at configuration */
    char                       name[512];  /* the URL, no credentials */
} ngx_bottle_audit_conf_t;


/* one event in the ring; key: for a first contact, the bottle and host */
typedef struct {
    char                      *json;       /* chained argument, malloc()ed */
    size_t                     len;
    u_char                    *key;        /* id, then host; NULL: XADD */
    size_t                     id_len;
    size_t                     host_len;
    int64_t                    at;         /* ms, when queued */
    int64_t                    deadline;   /* ms; 0: none (best effort) */
    unsigned                   abandoned:1; /* its request was refused */
    unsigned                   waiting:1;  /* a WAIT follows its EVAL */
    unsigned                   written:1;  /* the EVAL said so; the WAIT
                                              is awaited */
} ngx_bottle_audit_entry_t;


/* the per-worker cache of first contacts, per bottle, LRU */
typedef struct {
    ngx_str_node_t             sn;         /* the bottle's id */
    ngx_rbtree_t               hosts;
    ngx_rbtree_node_t          sentinel;
    ngx_queue_t                lru;        /* least recently used first */
    ngx_uint_t                 n;
} ngx_bottle_audit_bottle_t;

typedef struct {
    ngx_str_node_t             sn;         /* the host */
    ngx_queue_t                lru;
    ngx_bottle_audit_bottle_t *bottle;
    ngx_uint_t                 acked;      /* else a script is pending */
} ngx_bottle_audit_host_t;


typedef struct {
    ngx_bottle_audit_conf_t   *conf;
    ngx_bottle_redis_t         rd;
    ngx_log_t                 *log;

    ngx_bottle_audit_entry_t  *ring;
    ngx_uint_t                 cap;
    uint64_t                   head;       /* oldest held */
    uint64_t                   sent;       /* next to send */
    uint64_t                   tail;       /* next to queue */
    ngx_uint_t                 inflight;

    uint64_t                   dropped;    /* not reported yet */
    int64_t                    first_dropped;
    int64_t                    last_dropped;
    uint64_t                   trunc;      /* reported, not acknowledged */
    int64_t                    trunc_first;
    int64_t                    trunc_last;
    unsigned                   trunc_inflight:1;
    unsigned                   error_logged:1;

    ngx_queue_t                waiters;    /* required first contacts */
    ngx_rbtree_t               bottles;
    ngx_rbtree_node_t          sentinel;

    u_char                     gateway[NGX_MAXHOSTNAMELEN + NGX_INT_T_LEN
                                       + 2];
    size_t                     gateway_len;
    uint64_t                   counter;
    char                       maxlen[NGX_INT_T_LEN + 1];
    unsigned                   on:1;
    unsigned                   known:1;    /* on is decided (a worker) */
} ngx_bottle_audit_t;


extern ngx_bottle_audit_t  ngx_bottle_audit;


void ngx_bottle_audit_common(bottle_audit_event_t *e,
    bottle_audit_type_e type, const bottle_t *bottle, ngx_str_t *host,
    ngx_str_t *correlation, u_char *idbuf, size_t idsize);
ngx_int_t ngx_bottle_audit_push(bottle_audit_event_t *e,
    ngx_bottle_contact_t *ct, ngx_uint_t required);
void ngx_bottle_audit_wake(uint64_t seq, ngx_int_t rc, const char *reason);
void ngx_bottle_audit_abandon(uint64_t seq);
ngx_bottle_audit_host_t *ngx_bottle_audit_cache(ngx_str_t *id,
    ngx_str_t *host, ngx_uint_t create);
void ngx_bottle_audit_cache_forget(ngx_bottle_audit_host_t *h);

/* the head's first contact acknowledged, or written: the next one */
void ngx_bottle_audit_acked(ngx_bottle_audit_entry_t *e);
void ngx_bottle_audit_next(void);
void ngx_bottle_audit_contact_forget(ngx_bottle_audit_entry_t *e);

/*
 * A Sentinel store (ngx_bottle_audit_wait.c): a required first contact is
 * acknowledged once a replica has it, "WAIT 1 <ms left>" after its EVAL;
 * the answer for the queue's head goes to done (the queue's, which calls
 * the wait: the wait calls nothing of the queue), replicated 1 or 0
 */
typedef void (*ngx_bottle_audit_waited_pt)(ngx_bottle_audit_entry_t *e,
    ngx_uint_t replicated);

ngx_int_t ngx_bottle_audit_wait_send(ngx_bottle_audit_entry_t *e,
    uint64_t seq, ngx_bottle_audit_waited_pt done);


#endif /* _NGX_BOTTLE_AUDIT_H_INCLUDED_ */
