
/*
 * hiredis on nginx's event loop.  hiredis owns the socket and the protocol;
 * nginx owns the events: level-triggered read and write events on an
 * ngx_connection_t that wraps hiredis's descriptor, added and removed as
 * hiredis asks (ev.addRead, ...).  Timeouts are nginx timers: hiredis
 * 0.14's async API has none.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_bottle_redis.h"


enum {
    NGX_BOTTLE_REDIS_IDLE = 0,
    NGX_BOTTLE_REDIS_CONNECTING,
    NGX_BOTTLE_REDIS_HELLO,         /* AUTH / SELECT (/ ROLE) sent */
    NGX_BOTTLE_REDIS_READY
};

#define NGX_BOTTLE_REDIS_CONNECT_TIMEOUT  2000
#define NGX_BOTTLE_REDIS_BACKOFF_MIN      100
#define NGX_BOTTLE_REDIS_BACKOFF_MAX      2000
/* through sentinels: a failover is found by asking again soon */
#define NGX_BOTTLE_REDIS_BACKOFF_SENTINEL  500


/* hiredis's reply functions, and the same noting READONLY and LOADING */
static redisReplyObjectFunctions  *ngx_bottle_redis_fns;
static redisReplyObjectFunctions   ngx_bottle_redis_watch_fns;


static ngx_int_t ngx_bottle_redis_resolve_one(ngx_pool_t *pool,
    const char *host, ngx_uint_t port, ngx_str_t *addr);
static void ngx_bottle_redis_connect(ngx_bottle_redis_t *rd);
static void ngx_bottle_redis_ask(redisAsyncContext *ac);
static void ngx_bottle_redis_told(redisAsyncContext *ac, void *r,
    void *privdata);
static ngx_int_t ngx_bottle_redis_role(ngx_bottle_redis_t *rd,
    redisReply *reply);
static void *ngx_bottle_redis_string(const redisReadTask *task, char *str,
    size_t len);
static void ngx_bottle_redis_connected(const redisAsyncContext *ac,
    int status);
static void ngx_bottle_redis_disconnected(const redisAsyncContext *ac,
    int status);
static void ngx_bottle_redis_hello(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_redis_pong(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_redis_detach(ngx_bottle_redis_t *rd,
    redisAsyncContext *ac);
static void ngx_bottle_redis_lost(ngx_bottle_redis_t *rd, const char *why);
static void ngx_bottle_redis_timer(ngx_event_t *ev);
static void ngx_bottle_redis_read(ngx_event_t *ev);
static void ngx_bottle_redis_write(ngx_event_t *ev);
static void ngx_bottle_redis_add_read(void *privdata);
static void ngx_bottle_redis_del_read(void *privdata);
static void ngx_bottle_redis_add_write(void *privdata);
static void ngx_bottle_redis_del_write(void *privdata);
static void ngx_bottle_redis_cleanup(void *privdata);


ngx_int_t
ngx_bottle_redis_resolve(ngx_pool_t *pool, bottle_store_url_t *url,
    ngx_str_t *addr)
{
    u_char      *p;
    ngx_str_t    a;
    ngx_uint_t   i;

    ngx_str_set(addr, "");

    if (url->is_unix) {
        return NGX_OK;
    }

    if (url->nsentinels == 0) {
        return ngx_bottle_redis_resolve_one(pool, url->host, url->port, addr);
    }

    for (i = 0; i < url->nsentinels; i++) {
        if (ngx_bottle_redis_resolve_one(pool, url->sentinel[i].host,
                                         url->sentinel[i].port, &a)
            != NGX_OK)
        {
            /* the callers' messages name url->host */
            ngx_cpystrn((u_char *) url->host,
                        (u_char *) url->sentinel[i].host,
                        sizeof(url->host));
            return NGX_ERROR;
        }

        p = ngx_cpymem(url->sentinel[i].host, a.data,
                       ngx_min(a.len, BOTTLE_STORE_HOST_MAX));
        *p = '\0';
    }

    return NGX_OK;
}


static ngx_int_t
ngx_bottle_redis_resolve_one(ngx_pool_t *pool, const char *host,
    ngx_uint_t port, ngx_str_t *addr)
{
    u_char     *p;
    ngx_url_t   u;

    ngx_memzero(&u, sizeof(ngx_url_t));

    p = ngx_pnalloc(pool, BOTTLE_STORE_HOST_MAX + sizeof("[]:65535"));
    if (p == NULL) {
        return NGX_ERROR;
    }

    u.url.data = p;
    u.url.len = ngx_sprintf(p, ngx_strchr(host, ':') ? "[%s]:%ui" : "%s:%ui",
                            host, port)
                - p;

    if (ngx_parse_url(pool, &u) != NGX_OK || u.naddrs == 0) {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(pool, NGX_SOCKADDR_STRLEN + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    addr->data = p;
    addr->len = ngx_sock_ntop(u.addrs[0].sockaddr, u.addrs[0].socklen, p,
                              NGX_SOCKADDR_STRLEN, 0);
    p[addr->len] = '\0';

    return NGX_OK;
}


ngx_int_t
ngx_bottle_redis_start(ngx_bottle_redis_t *rd)
{
    rd->timer.handler = ngx_bottle_redis_timer;
    rd->timer.data = rd;
    rd->timer.log = rd->log;
    rd->timer.cancelable = 1;
    rd->backoff = NGX_BOTTLE_REDIS_BACKOFF_MIN;
    rd->stopped = 0;

    ngx_bottle_redis_connect(rd);

    return NGX_OK;
}


void
ngx_bottle_redis_stop(ngx_bottle_redis_t *rd)
{
    redisAsyncContext  *ac;

    rd->stopped = 1;

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    ac = rd->ac;

    rd->state = NGX_BOTTLE_REDIS_IDLE;

    if (ac) {
        /* pending callbacks run with a NULL reply; no reconnect */
        rd->ac = NULL;
        ngx_bottle_redis_detach(rd, ac);
        redisAsyncFree(ac);
    }
}


ngx_uint_t
ngx_bottle_redis_ready(ngx_bottle_redis_t *rd)
{
    return rd->state == NGX_BOTTLE_REDIS_READY;
}


ngx_int_t
ngx_bottle_redis_command(ngx_bottle_redis_t *rd, redisCallbackFn *fn,
    void *privdata, int argc, const char **argv, const size_t *argvlen)
{
    if (rd->state != NGX_BOTTLE_REDIS_READY || rd->ac == NULL) {
        return NGX_ERROR;
    }

    if (redisAsyncCommandArgv(rd->ac, fn, privdata, argc, argv, argvlen)
        != REDIS_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


ngx_int_t
ngx_bottle_redis_append(ngx_bottle_redis_t *rd, redisCallbackFn *fn,
    void *privdata, const char *cmd, size_t len)
{
    int  rc;

    if (rd->state != NGX_BOTTLE_REDIS_READY || rd->ac == NULL) {
        return NGX_ERROR;
    }

    /* hiredis asks for a write event per command: _send() writes instead */

    rd->appending = 1;
    rc = redisAsyncFormattedCommand(rd->ac, fn, privdata, cmd, len);
    rd->appending = 0;

    return (rc == REDIS_OK) ? NGX_OK : NGX_ERROR;
}


void
ngx_bottle_redis_send(ngx_bottle_redis_t *rd)
{
    if (rd->state == NGX_BOTTLE_REDIS_READY && rd->ac) {
        /* one write(); asks for a write event if the socket took less */
        redisAsyncHandleWrite(rd->ac);
    }
}


void
ngx_bottle_redis_reset(ngx_bottle_redis_t *rd, const char *why)
{
    if (rd->ac) {
        ngx_bottle_redis_lost(rd, why);
    }
}


static void
ngx_bottle_redis_connect(ngx_bottle_redis_t *rd)
{
    int                  fd;
    redisAsyncContext   *ac;
    ngx_connection_t    *c;

    /*
     * addr is an address, resolved when the configuration was read: hiredis
     * would resolve a name with getaddrinfo(), which blocks
     */

    rd->asking = 0;

    if (rd->url->is_unix) {
        ac = redisAsyncConnectUnix(rd->url->path);

    } else if (rd->url->nsentinels == 0) {
        ac = redisAsyncConnect((const char *) rd->addr.data,
                               (int) rd->url->port);

    } else if (rd->primary[0] == '\0') {
        /* a sentinel's host was resolved to an address in place */
        rd->asking = 1;
        ac = redisAsyncConnect(rd->url->sentinel[rd->sentinel].host,
                               (int) rd->url->sentinel[rd->sentinel].port);

    } else {
        /* an address: ngx_bottle_redis_told() took no name */
        ac = redisAsyncConnect(rd->primary, (int) rd->primary_port);
    }

    if (ac == NULL || ac->err) {
        ngx_cpystrn((u_char *) rd->errbuf,
                    (u_char *) (ac ? ac->errstr : "out of memory"),
                    sizeof(rd->errbuf));

        if (ac) {
            ac->ev.cleanup = NULL;
            redisAsyncFree(ac);
        }

        ngx_bottle_redis_lost(rd, rd->errbuf);
        return;
    }

    fd = ac->c.fd;

    c = ngx_get_connection(fd, rd->log);
    if (c == NULL) {
        /* hiredis closes fd */
        ac->ev.cleanup = NULL;
        redisAsyncFree(ac);
        ngx_bottle_redis_lost(rd, "no free connection (worker_connections)");
        return;
    }

    c->data = rd;
    c->read->handler = ngx_bottle_redis_read;
    c->write->handler = ngx_bottle_redis_write;
    c->read->log = rd->log;
    c->write->log = rd->log;
    c->log = rd->log;

    rd->conn = c;
    rd->ac = ac;
    rd->state = NGX_BOTTLE_REDIS_CONNECTING;
    rd->pings = 0;

    ac->data = rd;
    ac->ev.data = rd;
    ac->ev.addRead = ngx_bottle_redis_add_read;
    ac->ev.delRead = ngx_bottle_redis_del_read;
    ac->ev.addWrite = ngx_bottle_redis_add_write;
    ac->ev.delWrite = ngx_bottle_redis_del_write;
    ac->ev.cleanup = ngx_bottle_redis_cleanup;

    if (rd->url->nsentinels && !rd->asking) {
        /* a primary demoted answers READONLY to a write: note it */

        if (ngx_bottle_redis_fns == NULL) {
            ngx_bottle_redis_fns = ac->c.reader->fn;
            ngx_bottle_redis_watch_fns = *ngx_bottle_redis_fns;
            ngx_bottle_redis_watch_fns.createString = ngx_bottle_redis_string;
        }

        ac->c.reader->fn = &ngx_bottle_redis_watch_fns;
        ac->c.reader->privdata = rd;
        rd->demoted = 0;
    }

    redisAsyncSetConnectCallback(ac, ngx_bottle_redis_connected);
    redisAsyncSetDisconnectCallback(ac, ngx_bottle_redis_disconnected);

    /* hiredis learns of the connect on the first write event */
    ngx_bottle_redis_add_write(rd);

    ngx_add_timer(&rd->timer, NGX_BOTTLE_REDIS_CONNECT_TIMEOUT);
}


static void
ngx_bottle_redis_connected(const redisAsyncContext *cac, int status)
{
    int                  argc;
    const char          *argv[3];
    redisAsyncContext   *ac = (redisAsyncContext *) cac;
    ngx_bottle_redis_t  *rd = ac->data;

    if (rd == NULL) {
        return;
    }

    if (status != REDIS_OK) {
        /* hiredis frees the context after this callback */
        ngx_cpystrn((u_char *) rd->errbuf, (u_char *) ac->errstr,
                    sizeof(rd->errbuf));
        rd->ac = NULL;
        ngx_bottle_redis_detach(rd, ac);
        ngx_bottle_redis_lost(rd, rd->errbuf);
        return;
    }

    rd->state = NGX_BOTTLE_REDIS_HELLO;

    if (rd->asking) {
        ngx_bottle_redis_ask(ac);
        return;
    }

    if (rd->url->has_password) {
        argc = 0;
        argv[argc++] = "AUTH";

        if (rd->url->user[0]) {
            argv[argc++] = rd->url->user;
        }

        argv[argc++] = rd->url->password;

        redisAsyncCommandArgv(ac, ngx_bottle_redis_hello, (void *) "AUTH",
                              argc, argv, NULL);
    }

    /* SELECT always: it also tells a server that answers from one that
       does not; its reply completes the hello */

    redisAsyncCommand(ac, ngx_bottle_redis_hello, (void *) "SELECT",
                      "SELECT %u", rd->url->db);
}


static void
ngx_bottle_redis_hello(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply          *reply = r;
    ngx_bottle_redis_t  *rd = ac->data;

    if (rd == NULL || reply == NULL) {
        return;
    }

    if (reply->type == REDIS_REPLY_ERROR) {
        ngx_snprintf((u_char *) rd->errbuf, sizeof(rd->errbuf) - 1,
                     "%s: %*s%Z", (char *) privdata,
                     ngx_min(reply->len, 80), reply->str);
        ngx_bottle_redis_lost(rd, rd->errbuf);
        return;
    }

    if (rd->state != NGX_BOTTLE_REDIS_HELLO) {
        return;
    }

    if (rd->url->nsentinels && ngx_strcmp(privdata, "SELECT") == 0) {
        /* the one a sentinel named may have been demoted since */
        redisAsyncCommand(ac, ngx_bottle_redis_hello, (void *) "ROLE",
                          "ROLE");
        return;
    }

    if (ngx_strcmp(privdata, (rd->url->nsentinels ? "ROLE" : "SELECT")) != 0)
    {
        return;
    }

    if (rd->url->nsentinels && ngx_bottle_redis_role(rd, reply) != NGX_OK) {
        return;
    }

    rd->state = NGX_BOTTLE_REDIS_READY;
    rd->backoff = NGX_BOTTLE_REDIS_BACKOFF_MIN;

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (rd->ping) {
        ngx_add_timer(&rd->timer, rd->ping);
    }

    /* through Sentinel, every connection names its primary: it may move */

    if (!rd->was_up || rd->failures || rd->url->nsentinels) {
        if (rd->url->nsentinels) {
            ngx_log_error(NGX_LOG_NOTICE, rd->log, 0,
                          "bottle: store %s connection up%s, primary "
                          "\"%s\" at %s:%ui", rd->role,
                          rd->was_up ? " again" : "", rd->url->master,
                          rd->primary, rd->primary_port);

        } else {
            ngx_log_error(NGX_LOG_NOTICE, rd->log, 0,
                          "bottle: store %s connection up%s",
                          rd->role, rd->was_up ? " again" : "");
        }
    }

    rd->was_up = 1;
    rd->failures = 0;
    rd->heard = ngx_current_msec;

    rd->handler(rd, 1);
}


static void
ngx_bottle_redis_pong(redisAsyncContext *ac, void *r, void *privdata)
{
    ngx_bottle_redis_t  *rd = ac->data;

    if (rd && r) {
        rd->pings = 0;
        rd->heard = ngx_current_msec;
    }
}


static void
ngx_bottle_redis_timer(ngx_event_t *ev)
{
    ngx_bottle_redis_t  *rd = ev->data;

    switch (rd->state) {

    case NGX_BOTTLE_REDIS_IDLE:
        ngx_bottle_redis_connect(rd);
        return;

    case NGX_BOTTLE_REDIS_READY:

        /*
         * A store is alive while its bytes keep coming: a PONG queued
         * behind a large reply is late, not lost.  Two pings unanswered
         * with nothing read since the last tick is a store that stopped.
         */

        if (rd->pings >= 2 && !rd->progress) {
            ngx_bottle_redis_lost(rd, "no answer to PING");
            return;
        }

        rd->progress = 0;

        if (rd->pings < 2) {
            rd->pings++;
            redisAsyncCommand(rd->ac, ngx_bottle_redis_pong, NULL, "PING");
        }

        ngx_add_timer(&rd->timer, rd->ping);
        return;

    default:
        ngx_bottle_redis_lost(rd, "connect timed out");
    }
}


static void
ngx_bottle_redis_disconnected(const redisAsyncContext *cac, int status)
{
    redisAsyncContext   *ac = (redisAsyncContext *) cac;
    ngx_bottle_redis_t  *rd = ac->data;

    if (rd == NULL) {
        return;
    }

    /* hiredis frees the context after this callback */

    ngx_cpystrn((u_char *) rd->errbuf,
                (u_char *) (status == REDIS_OK ? "closed"
                            : ac->errstr[0] ? ac->errstr : "closed by the "
                                                           "server"),
                sizeof(rd->errbuf));

    rd->ac = NULL;
    ngx_bottle_redis_detach(rd, ac);
    ngx_bottle_redis_lost(rd, rd->errbuf);
}


/*
 * The context is about to be freed (now, or by hiredis once its callback
 * returns): the nginx connection goes now, and nothing hiredis still calls
 * reaches rd.
 */

static void
ngx_bottle_redis_detach(ngx_bottle_redis_t *rd, redisAsyncContext *ac)
{
    ngx_bottle_redis_cleanup(rd);

    ac->data = NULL;
    ac->ev.data = NULL;
    ac->ev.addRead = NULL;
    ac->ev.delRead = NULL;
    ac->ev.addWrite = NULL;
    ac->ev.delWrite = NULL;
    ac->ev.cleanup = NULL;
}


/*
 * The connection is gone or must go: pending callbacks run (with NULL
 * replies), the owner hears of it once, and a timer connects again.
 */

static void
ngx_bottle_redis_lost(ngx_bottle_redis_t *rd, const char *why)
{
    ngx_msec_t          max;
    ngx_uint_t          was_ready;
    redisAsyncContext  *ac;

    was_ready = (rd->state == NGX_BOTTLE_REDIS_READY);

    rd->state = NGX_BOTTLE_REDIS_IDLE;

    ac = rd->ac;
    rd->ac = NULL;

    if (ac) {
        /* inside a hiredis callback this defers the free; either way the
           callbacks see no owner any more */
        ngx_bottle_redis_detach(rd, ac);
        redisAsyncFree(ac);
    }

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    if (was_ready) {
        ngx_log_error(NGX_LOG_ERR, rd->log, 0,
                      "bottle: store %s connection lost (%s), reconnecting",
                      rd->role, why);
        rd->handler(rd, 0);

    } else if (rd->failures++ == 0) {
        ngx_log_error(NGX_LOG_ERR, rd->log, 0,
                      "bottle: store %s connection failed (%s), "
                      "retrying", rd->role, why);

    } else {
        ngx_log_debug2(NGX_LOG_DEBUG_CORE, rd->log, 0,
                       "bottle: store %s connection failed (%s)",
                       rd->role, why);
    }

    if (rd->url->nsentinels) {
        /*
         * whatever went, a sentinel says where the primary is now: the
         * one that named a primary that served asked first, the next one
         * when this one failed or named a primary that did not (it may
         * not have heard of a failover yet)
         */

        if (!was_ready) {
            rd->sentinel = (rd->sentinel + 1) % rd->url->nsentinels;
        }

        rd->primary[0] = '\0';
        rd->asking = 0;
    }

    if (rd->stopped || ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    ngx_add_timer(&rd->timer, rd->backoff);

    max = rd->url->nsentinels ? NGX_BOTTLE_REDIS_BACKOFF_SENTINEL
                              : NGX_BOTTLE_REDIS_BACKOFF_MAX;
    rd->backoff = ngx_min(rd->backoff * 2, max);
}


static void
ngx_bottle_redis_read(ngx_event_t *ev)
{
    ngx_connection_t    *c = ev->data;
    ngx_bottle_redis_t  *rd = c->data;

    if (rd->ac) {
        /* level-triggered: there is something to read */
        rd->progress = 1;
        /* bytes from the store (or its end): heard from now */
        rd->heard = ngx_current_msec;
        redisAsyncHandleRead(rd->ac);

        if (rd->demoted && rd->ac) {
            ngx_bottle_redis_lost(rd, "the primary is not writable "
                                      "(READONLY or LOADING)");
        }
    }
}


static void
ngx_bottle_redis_write(ngx_event_t *ev)
{
    ngx_connection_t    *c = ev->data;
    ngx_bottle_redis_t  *rd = c->data;

    if (rd->ac) {
        redisAsyncHandleWrite(rd->ac);
    }
}


/* level-triggered: hiredis reads once per call, and says when to stop */

static void
ngx_bottle_redis_add_read(void *privdata)
{
    ngx_bottle_redis_t  *rd = privdata;

    if (rd->conn && !rd->conn->read->active) {
        (void) ngx_add_event(rd->conn->read, NGX_READ_EVENT,
                             NGX_LEVEL_EVENT);
    }
}


static void
ngx_bottle_redis_del_read(void *privdata)
{
    ngx_bottle_redis_t  *rd = privdata;

    if (rd->conn && rd->conn->read->active) {
        (void) ngx_del_event(rd->conn->read, NGX_READ_EVENT, 0);
    }
}


static void
ngx_bottle_redis_add_write(void *privdata)
{
    ngx_bottle_redis_t  *rd = privdata;

    if (rd->appending) {
        return;
    }

    if (rd->conn && !rd->conn->write->active) {
        (void) ngx_add_event(rd->conn->write, NGX_WRITE_EVENT,
                             NGX_LEVEL_EVENT);
    }
}


static void
ngx_bottle_redis_del_write(void *privdata)
{
    ngx_bottle_redis_t  *rd = privdata;

    if (rd->conn && rd->conn->write->active) {
        (void) ngx_del_event(rd->conn->write, NGX_WRITE_EVENT, 0);
    }
}


/* hiredis frees the context and closes the descriptor right after this */

static void
ngx_bottle_redis_cleanup(void *privdata)
{
    ngx_bottle_redis_t  *rd = privdata;
    ngx_connection_t    *c;

    c = rd ? rd->conn : NULL;

    if (c == NULL) {
        return;
    }

    rd->conn = NULL;

    ngx_bottle_redis_del_read(rd);
    ngx_bottle_redis_del_write(rd);

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    c->fd = (ngx_socket_t) -1;
    ngx_free_connection(c);
}


/* on a sentinel: its AUTH, then where the primary is */

static void
ngx_bottle_redis_ask(redisAsyncContext *ac)
{
    int                  argc;
    const char          *argv[3];
    ngx_bottle_redis_t  *rd = ac->data;

    if (rd->url->has_sentinel_password) {
        argc = 0;
        argv[argc++] = "AUTH";

        if (rd->url->sentinel_user[0]) {
            argv[argc++] = rd->url->sentinel_user;
        }

        argv[argc++] = rd->url->sentinel_password;

        redisAsyncCommandArgv(ac, ngx_bottle_redis_hello,
                              (void *) "sentinel AUTH", argc, argv, NULL);
    }

    redisAsyncCommand(ac, ngx_bottle_redis_told, NULL,
                      "SENTINEL get-master-addr-by-name %s", rd->url->master);
}


/*
 * The sentinel's answer: an address and a port, taken only as an address
 * (a name would be resolved by a blocking getaddrinfo()).  The sentinel's
 * connection goes, the primary's is made.
 */

static void
ngx_bottle_redis_told(redisAsyncContext *ac, void *r, void *privdata)
{
    u_char               buf[sizeof(struct in6_addr)];
    ngx_int_t            port;
    redisReply          *reply = r, *host;
    ngx_bottle_redis_t  *rd = ac->data;

    if (rd == NULL || reply == NULL) {
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2
        || reply->element[0]->type != REDIS_REPLY_STRING
        || reply->element[1]->type != REDIS_REPLY_STRING)
    {
        ngx_snprintf((u_char *) rd->errbuf, sizeof(rd->errbuf) - 1,
                     "sentinel %s:%ui knows no primary \"%s\"%Z",
                     rd->url->sentinel[rd->sentinel].host,
                     (ngx_uint_t) rd->url->sentinel[rd->sentinel].port,
                     rd->url->master);
        ngx_bottle_redis_lost(rd, rd->errbuf);
        return;
    }

    host = reply->element[0];
    port = ngx_atoi((u_char *) reply->element[1]->str,
                    reply->element[1]->len);

    if (host->len == 0 || host->len >= sizeof(rd->primary)
        || port <= 0 || port > 65535
        || (inet_pton(AF_INET, host->str, buf) != 1
            && inet_pton(AF_INET6, host->str, buf) != 1))
    {
        ngx_snprintf((u_char *) rd->errbuf, sizeof(rd->errbuf) - 1,
                     "sentinel %s:%ui gave no address for \"%s\"%Z",
                     rd->url->sentinel[rd->sentinel].host,
                     (ngx_uint_t) rd->url->sentinel[rd->sentinel].port,
                     rd->url->master);
        ngx_bottle_redis_lost(rd, rd->errbuf);
        return;
    }

    ngx_memcpy(rd->primary, host->str, host->len);
    rd->primary[host->len] = '\0';
    rd->primary_port = (ngx_uint_t) port;

    /* the sentinel's context is freed once this callback returns */

    rd->ac = NULL;
    rd->asking = 0;
    rd->state = NGX_BOTTLE_REDIS_IDLE;
    ngx_bottle_redis_detach(rd, ac);
    redisAsyncFree(ac);

    if (rd->timer.timer_set) {
        ngx_del_timer(&rd->timer);
    }

    ngx_bottle_redis_connect(rd);
}


static ngx_int_t
ngx_bottle_redis_role(ngx_bottle_redis_t *rd, redisReply *reply)
{
    redisReply  *role;

    if (reply->type == REDIS_REPLY_ARRAY && reply->elements > 0) {
        role = reply->element[0];

        if (role->type == REDIS_REPLY_STRING && role->len == 6
            && ngx_strncmp(role->str, "master", 6) == 0)
        {
            return NGX_OK;
        }
    }

    ngx_snprintf((u_char *) rd->errbuf, sizeof(rd->errbuf) - 1,
                 "%s:%ui is not the primary any more%Z", rd->primary,
                 rd->primary_port);
    ngx_bottle_redis_lost(rd, rd->errbuf);

    return NGX_ERROR;
}


/* hiredis's string reply, an error reply of a demoted primary noted */

static void *
ngx_bottle_redis_string(const redisReadTask *task, char *str, size_t len)
{
    ngx_bottle_redis_t  *rd = task->privdata;

    if (rd && task->type == REDIS_REPLY_ERROR
        && bottle_store_reply_demoted(str, len))
    {
        rd->demoted = 1;
    }

    return ngx_bottle_redis_fns->createString(task, str, len);
}


ngx_int_t
ngx_bottle_redis_pubsub(void *r, ngx_str_t *payload)
{
    redisReply  *reply = r, *kind, *p;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != 3)
    {
        return NGX_DECLINED;
    }

    kind = reply->element[0];
    p = reply->element[2];

    if (kind->type != REDIS_REPLY_STRING) {
        return NGX_DECLINED;
    }

    if (kind->len == 9 && ngx_strncmp(kind->str, "subscribe", 9) == 0) {
        return NGX_AGAIN;
    }

    if (kind->len != 7 || ngx_strncmp(kind->str, "message", 7) != 0
        || p->type != REDIS_REPLY_STRING)
    {
        return NGX_DECLINED;
    }

    payload->data = (u_char *) p->str;
    payload->len = p->len;

    return NGX_OK;
}
