
/*
 * One Redis connection on a worker's event loop: hiredis's async API with
 * nginx events under it.  It connects, authenticates, selects the db,
 * pings, and when it is lost it says so once and connects again by itself
 * (docs/control-plane.md).  Nothing here blocks.
 */

#ifndef _NGX_BOTTLE_REDIS_H_INCLUDED_
#define _NGX_BOTTLE_REDIS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "bottle_store.h"


typedef struct ngx_bottle_redis_s  ngx_bottle_redis_t;

/* up: 1 ready for commands, 0 lost (every pending callback has run) */
typedef void (*ngx_bottle_redis_state_pt)(ngx_bottle_redis_t *rd,
    ngx_uint_t up);


struct ngx_bottle_redis_s {
    /* set by the owner */
    const bottle_store_url_t  *url;
    ngx_str_t                  addr;        /* resolved host, for connect */
    const char                *role;        /* "policy", "changes", ... */
    ngx_log_t                 *log;
    ngx_msec_t                 ping;        /* 0: no pings */
    ngx_bottle_redis_state_pt  handler;
    void                      *data;

    /* private */
    redisAsyncContext         *ac;
    ngx_connection_t          *conn;
    ngx_event_t                timer;       /* connect, ping, reconnect */
    ngx_msec_t                 backoff;
    ngx_uint_t                 state;
    ngx_uint_t                 pings;       /* unanswered */
    ngx_uint_t                 failures;    /* attempts since last up */
    ngx_msec_t                 heard;       /* the last bytes read, an
                                               answer to a PING, or the
                                               connection up */
    char                       errbuf[128];
    unsigned                   was_up:1;
    unsigned                   stopped:1;
    unsigned                   appending:1; /* no write event: _send() */
    unsigned                   progress:1;  /* bytes came since the last
                                               ping tick */

    /* a Sentinel URL: the primary a sentinel named ("": ask one) */
    ngx_uint_t                 sentinel;    /* the one asked next */
    ngx_uint_t                 asked;       /* in this round */
    char                       primary[NGX_SOCKADDR_STRLEN + 1];
    ngx_uint_t                 primary_port;
    unsigned                   asking:1;    /* connected to a sentinel */
    unsigned                   demoted:1;   /* a READONLY or LOADING
                                               reply was read */
};


/*
 * At configuration: the address of url's host ("" for a unix socket or a
 * Sentinel URL), NUL-terminated, for ngx_bottle_redis_t.addr; hiredis
 * would resolve the name with a blocking getaddrinfo() in the worker.  A
 * Sentinel URL's sentinels are resolved in place: each host becomes its
 * first address.  NGX_ERROR if one does not resolve.
 */
ngx_int_t ngx_bottle_redis_resolve(ngx_pool_t *pool,
    bottle_store_url_t *url, ngx_str_t *addr);

ngx_int_t ngx_bottle_redis_start(ngx_bottle_redis_t *rd);
void ngx_bottle_redis_stop(ngx_bottle_redis_t *rd);
ngx_uint_t ngx_bottle_redis_ready(ngx_bottle_redis_t *rd);

/* drops the connection now (a protocol error): lost, then reconnect */
void ngx_bottle_redis_reset(ngx_bottle_redis_t *rd, const char *why);

/*
 * Queues a command; NGX_ERROR if the connection is not ready.  fn gets
 * NULL as the reply when the connection is lost before it answers.
 */
ngx_int_t ngx_bottle_redis_command(ngx_bottle_redis_t *rd,
    redisCallbackFn *fn, void *privdata, int argc, const char **argv,
    const size_t *argvlen);

/*
 * A batch: ngx_bottle_redis_append() queues a command already in the
 * protocol's form (hiredis copies it) without asking for a write event,
 * and ngx_bottle_redis_send() writes every command queued so far at once,
 * now; what the socket does not take goes out on write events.  Neither
 * may be called from inside a reply callback (a posted event may).
 * _append() is NGX_ERROR if the connection is not ready.
 */
ngx_int_t ngx_bottle_redis_append(ngx_bottle_redis_t *rd, redisCallbackFn *fn,
    void *privdata, const char *cmd, size_t len);
void ngx_bottle_redis_send(ngx_bottle_redis_t *rd);

/*
 * A reply on a SUBSCRIBEd connection: NGX_OK, a message, its payload in
 * *payload; NGX_AGAIN, the subscription confirmed; NGX_DECLINED, anything
 * else (ignored).
 */
ngx_int_t ngx_bottle_redis_pubsub(void *reply, ngx_str_t *payload);


#endif /* _NGX_BOTTLE_REDIS_H_INCLUDED_ */
