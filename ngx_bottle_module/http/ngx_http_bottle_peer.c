
/*
 * The upstream peer: the address the pipeline resolved and checked, and
 * connections kept alive per target across requests and across agent
 * connections.  proxy_pass with variables gets no keepalive pool, and
 * nginx's keepalive module matches cached connections by address alone: a
 * TLS connection verified for one name would then carry requests for
 * another name at the same address.  Here a cached connection is reused
 * only for the same scheme, host, port and address, and the same SSL
 * context (the proxy_ssl_* settings of the location: a connection whose
 * certificate one location verified never carries a request of a location
 * that trusts other CAs, or verifies another name).
 *
 * TLS sessions are kept per target the same way: a new connection to a
 * target offers the session last saved for that very target and SSL
 * context, so that it resumes instead of doing a full handshake.  A
 * session is never offered to another name or address.
 *
 *     upstream bottle_tls {
 *         bottle_upstream max=256 max_per_target=16 idle_timeout=60s
 *                         sessions=256;
 *     }
 *
 *     proxy_pass https://bottle_tls$bottle_uri;
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


typedef struct {
    ngx_uint_t                   max;
    ngx_uint_t                   max_per_target;
    ngx_uint_t                   sessions;
    ngx_uint_t                   requests;
    ngx_msec_t                   idle_timeout;

    ngx_queue_t                  cache;      /* most recently used first */
    ngx_queue_t                  free;

    ngx_queue_t                  session_cache;  /* most recent first */
    ngx_queue_t                  session_free;
} ngx_http_bottle_peer_conf_t;


/* what a cached connection or session is for */

typedef struct {
    ngx_uint_t                   tls;
    void                        *ssl_ctx;    /* the location's, or NULL */
    size_t                       host_len;
    u_char                       host[256];
    socklen_t                    socklen;
    ngx_sockaddr_t               sockaddr;   /* the address and port */
} ngx_http_bottle_peer_key_t;


typedef struct {
    ngx_http_bottle_peer_conf_t *conf;
    ngx_queue_t                  queue;
    ngx_connection_t            *connection;
    ngx_http_bottle_peer_key_t   key;
} ngx_http_bottle_peer_item_t;


#if (NGX_HTTP_SSL)

typedef struct {
    ngx_queue_t                  queue;
    ngx_ssl_session_t           *session;
    ngx_http_bottle_peer_key_t   key;
} ngx_http_bottle_peer_session_t;

#endif


typedef struct {
    ngx_http_bottle_peer_conf_t *conf;
    ngx_http_upstream_t         *upstream;
    ngx_http_bottle_ctx_t       *ctx;
    ngx_uint_t                   tls;
    void                        *ssl_ctx;
    unsigned                     offered:1;  /* a session, this connection */
    unsigned                     retried:1;
} ngx_http_bottle_peer_data_t;


static ngx_int_t ngx_http_bottle_peer_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_bottle_peer_init(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_bottle_peer_get(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_bottle_peer_free(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state);
static void ngx_http_bottle_peer_set_key(ngx_http_bottle_peer_key_t *key,
    ngx_http_bottle_peer_data_t *bp, ngx_peer_connection_t *pc);
static ngx_uint_t ngx_http_bottle_peer_match(ngx_http_bottle_peer_key_t *key,
    ngx_http_bottle_peer_data_t *bp, struct sockaddr *sa, socklen_t socklen);
static ngx_http_bottle_peer_item_t *ngx_http_bottle_peer_slot(
    ngx_http_bottle_peer_data_t *bp);
static void ngx_http_bottle_peer_idle_handler(ngx_event_t *ev);
static void ngx_http_bottle_peer_dummy_handler(ngx_event_t *ev);
static void ngx_http_bottle_peer_close(ngx_connection_t *c);
#if (NGX_HTTP_SSL)
static ngx_int_t ngx_http_bottle_peer_set_session(ngx_peer_connection_t *pc,
    void *data);
static void ngx_http_bottle_peer_save_session(ngx_peer_connection_t *pc,
    void *data);
static ngx_http_bottle_peer_session_t *ngx_http_bottle_peer_find_session(
    ngx_http_bottle_peer_data_t *bp, ngx_peer_connection_t *pc);
static void ngx_http_bottle_peer_drop_session(ngx_http_bottle_peer_data_t *bp,
    ngx_peer_connection_t *pc);
static void ngx_http_bottle_peer_cleanup(void *data);
#endif


/*
 * bottle_upstream [max=N] [max_per_target=N] [idle_timeout=time]
 *                 [sessions=N]
 */

char *
ngx_http_bottle_upstream(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_str_t                     *value, s;
    ngx_int_t                      n;
    ngx_uint_t                     i;
    ngx_msec_t                     t;
    ngx_http_upstream_server_t    *us;
    ngx_http_bottle_peer_conf_t   *pcf;
    ngx_http_upstream_srv_conf_t  *uscf;

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    if (uscf->peer.init_upstream) {
        return "is duplicate, or the upstream has another balancer";
    }

    pcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_bottle_peer_conf_t));
    if (pcf == NULL) {
        return NGX_CONF_ERROR;
    }

    pcf->max = 256;
    pcf->max_per_target = 16;
    pcf->sessions = 256;
    pcf->requests = 1000;
    pcf->idle_timeout = 60000;

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "idle_timeout=", 13) == 0) {
            s.data = value[i].data + 13;
            s.len = value[i].len - 13;
            t = ngx_parse_time(&s, 0);
            if (t == (ngx_msec_t) NGX_ERROR || t == 0) {
                goto invalid;
            }
            pcf->idle_timeout = t;
            continue;
        }

        if (ngx_strncmp(value[i].data, "max=", 4) == 0) {
            n = ngx_atoi(value[i].data + 4, value[i].len - 4);
            if (n <= 0) {
                goto invalid;
            }
            pcf->max = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "sessions=", 9) == 0) {
            n = ngx_atoi(value[i].data + 9, value[i].len - 9);
            if (n <= 0) {
                goto invalid;
            }
            pcf->sessions = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "max_per_target=", 15) == 0) {
            n = ngx_atoi(value[i].data + 15, value[i].len - 15);
            if (n <= 0) {
                goto invalid;
            }
            pcf->max_per_target = n;
            continue;
        }

        goto invalid;
    }

    /*
     * nginx wants a server in every upstream block; this one stands for
     * "the target the pipeline checked" and is never dialled
     */

    if (uscf->servers == NULL || uscf->servers->nelts) {
        return "must come before any \"server\", and excludes them";
    }

    us = ngx_array_push(uscf->servers);
    if (us == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(us, sizeof(ngx_http_upstream_server_t));
    ngx_str_set(&us->name, "bottle_upstream");

    uscf->peer.init_upstream = ngx_http_bottle_peer_init_upstream;
    uscf->peer.data = pcf;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                       &value[i]);
    return NGX_CONF_ERROR;
}


static ngx_int_t
ngx_http_bottle_peer_init_upstream(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_uint_t                       i;
    ngx_http_bottle_peer_conf_t     *pcf;
    ngx_http_bottle_peer_item_t     *items;
#if (NGX_HTTP_SSL)
    ngx_pool_cleanup_t              *cln;
    ngx_http_bottle_peer_session_t  *sessions;
#endif

    if (us->servers->nelts != 1) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "upstream \"%V\" with \"bottle_upstream\" takes no "
                      "\"server\": its peer is the checked target",
                      &us->host);
        return NGX_ERROR;
    }

    pcf = us->peer.data;
    us->peer.init = ngx_http_bottle_peer_init;

    items = ngx_pcalloc(cf->pool,
                        sizeof(ngx_http_bottle_peer_item_t) * pcf->max);
    if (items == NULL) {
        return NGX_ERROR;
    }

    ngx_queue_init(&pcf->cache);
    ngx_queue_init(&pcf->free);

    for (i = 0; i < pcf->max; i++) {
        items[i].conf = pcf;
        ngx_queue_insert_head(&pcf->free, &items[i].queue);
    }

    ngx_queue_init(&pcf->session_cache);
    ngx_queue_init(&pcf->session_free);

#if (NGX_HTTP_SSL)

    /*
     * the slots are the cycle's, the sessions each worker's own: the cleanup
     * frees whatever a worker holds when its cycle goes
     */

    sessions = ngx_pcalloc(cf->pool,
                           sizeof(ngx_http_bottle_peer_session_t)
                           * pcf->sessions);
    if (sessions == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < pcf->sessions; i++) {
        ngx_queue_insert_head(&pcf->session_free, &sessions[i].queue);
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_bottle_peer_cleanup;
    cln->data = pcf;

#endif

    return NGX_OK;
}


/*
 * postconfiguration: since 1.29.7 nginx's keepalive module caches the
 * connections of every upstream block unless told "keepalive 0", matched
 * by address alone, wrapping the block's peer.init in init_main_conf; in a
 * bottle_upstream block that would carry a request over a connection
 * verified for another name: the block's own peer.init is put back
 */

ngx_int_t
ngx_http_bottle_peer_postconf(ngx_conf_t *cf)
{
    ngx_uint_t                       i;
    ngx_http_upstream_srv_conf_t   **uscfp;
    ngx_http_upstream_main_conf_t   *umcf;

    umcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_upstream_module);
    if (umcf == NULL) {
        return NGX_OK;
    }

    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->peer.init_upstream == ngx_http_bottle_peer_init_upstream
            && uscfp[i]->peer.init != ngx_http_bottle_peer_init)
        {
            uscfp[i]->peer.init = ngx_http_bottle_peer_init;
        }
    }

    return NGX_OK;
}


/* per request: only a request the pipeline passed has a peer at all */

static ngx_int_t
ngx_http_bottle_peer_init(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_upstream_t          *u;
    ngx_http_bottle_ctx_t        *ctx;
    ngx_http_bottle_peer_data_t  *bp;

    ctx = ngx_http_bottle_get_ctx(r);

    if (ctx == NULL || ctx->state != NGX_HTTP_BOTTLE_PASSED
        || ctx->resolve.peer.addr.sockaddr == NULL)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "bottle: upstream \"%V\" used by a request the "
                      "pipeline did not pass", &us->host);
        return NGX_ERROR;
    }

    bp = ngx_palloc(r->pool, sizeof(ngx_http_bottle_peer_data_t));
    if (bp == NULL) {
        return NGX_ERROR;
    }

    u = r->upstream;

    bp->conf = us->peer.data;
    bp->upstream = u;
    bp->ctx = ctx;
    bp->tls = 0;
    bp->ssl_ctx = NULL;
    bp->offered = 0;
    bp->retried = 0;

#if (NGX_HTTP_SSL)
    bp->tls = (u->ssl != 0);

    if (u->ssl && u->conf->ssl) {
        bp->ssl_ctx = u->conf->ssl->ctx;
    }

    u->peer.set_session = ngx_http_bottle_peer_set_session;
    u->peer.save_session = ngx_http_bottle_peer_save_session;
#endif

    u->peer.get = ngx_http_bottle_peer_get;
    u->peer.free = ngx_http_bottle_peer_free;
    u->peer.data = bp;
    u->peer.tries = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_bottle_peer_get(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_bottle_peer_data_t  *bp = data;

    ngx_queue_t                  *q;
    ngx_connection_t             *c;
    ngx_bottle_peer_t            *peer;
    ngx_http_bottle_peer_item_t  *item;

    peer = &bp->ctx->resolve.peer;

    /*
     * a retry after a cached connection failed dials anew: nginx gives a
     * cached connection that failed another try, and would go on doing so
     */

    pc->cached = 0;
    pc->connection = NULL;
    bp->offered = 0;

    pc->sockaddr = peer->addr.sockaddr;
    pc->socklen = peer->addr.socklen;
    pc->name = &peer->addr.name;

    for (q = ngx_queue_head(&bp->conf->cache);
         q != ngx_queue_sentinel(&bp->conf->cache);
         q = ngx_queue_next(q))
    {
        item = ngx_queue_data(q, ngx_http_bottle_peer_item_t, queue);

        if (!ngx_http_bottle_peer_match(&item->key, bp, pc->sockaddr,
                                        pc->socklen))
        {
            continue;
        }

        ngx_queue_remove(q);
        ngx_queue_insert_head(&bp->conf->free, q);

        c = item->connection;
        item->connection = NULL;

        c->idle = 0;
        c->sent = 0;
        c->data = NULL;
        c->log = pc->log;
        c->read->log = pc->log;
        c->write->log = pc->log;
        c->pool->log = pc->log;

        if (c->read->timer_set) {
            ngx_del_timer(c->read);
        }

        pc->connection = c;
        pc->cached = 1;

        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_UPSTREAM_REUSED);

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                       "bottle upstream: reuse connection %p", c);

        return NGX_DONE;
    }

    return NGX_OK;
}


static void
ngx_http_bottle_peer_free(ngx_peer_connection_t *pc, void *data,
    ngx_uint_t state)
{
    ngx_http_bottle_peer_data_t  *bp = data;

    ngx_connection_t             *c;
    ngx_http_upstream_t          *u;
    ngx_http_bottle_peer_item_t  *item;

    u = bp->upstream;
    c = pc->connection;
    pc->tries = 0;

#if (NGX_HTTP_SSL)

    /*
     * A new TLS connection that failed before the request went out failed
     * in the handshake or its verification: its target's session, the one
     * offered or the one the failed handshake saved, goes.  If the server
     * refused the offered session by failing the handshake, one more try
     * dials anew and does a full handshake.
     */

    if ((state & NGX_PEER_FAILED)
        && c != NULL
        && c->ssl != NULL
        && !pc->cached
        && !u->request_sent)
    {
        ngx_http_bottle_peer_drop_session(bp, pc);

        if (bp->offered
            && !bp->retried
            && !c->ssl->handshaked
            && !c->write->timedout
            && !c->read->timedout)
        {
            ngx_log_error(NGX_LOG_INFO, pc->log, 0,
                          "bottle upstream: handshake resuming a session "
                          "with \"%V\" failed, trying a full one",
                          &bp->ctx->target.host);

            bp->retried = 1;
            pc->tries = 1;
        }
    }

    /* a new connection's handshake, counted once, when its first use ends */

    if (c != NULL && c->ssl != NULL && c->ssl->handshaked && !pc->cached) {
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_UPSTREAM_HANDSHAKES);

        if (SSL_session_reused(c->ssl->connection)) {
            ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_UPSTREAM_RESUMED);
        }
    }

#endif

    if (state & NGX_PEER_FAILED
        || c == NULL
        || c->read->eof
        || c->read->error
        || c->read->timedout
        || c->write->error
        || c->write->timedout
        || c->requests >= bp->conf->requests
        || !u->keepalive
        || !u->request_body_sent
        || ngx_terminate
        || ngx_exiting
        || ngx_handle_read_event(c->read, 0) != NGX_OK)
    {
        return;
    }

    item = ngx_http_bottle_peer_slot(bp);

    item->connection = c;
    ngx_http_bottle_peer_set_key(&item->key, bp, pc);

    ngx_queue_insert_head(&bp->conf->cache, &item->queue);

    ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_UPSTREAM_KEPT);

    pc->connection = NULL;

    c->read->delayed = 0;
    ngx_add_timer(c->read, bp->conf->idle_timeout);

    if (c->write->timer_set) {
        ngx_del_timer(c->write);
    }

    c->write->handler = ngx_http_bottle_peer_dummy_handler;
    c->read->handler = ngx_http_bottle_peer_idle_handler;

    c->data = item;
    c->idle = 1;
    c->log = ngx_cycle->log;
    c->read->log = ngx_cycle->log;
    c->write->log = ngx_cycle->log;
    c->pool->log = ngx_cycle->log;

    if (c->read->ready) {
        ngx_http_bottle_peer_idle_handler(c->read);
    }
}


/* a name longer than the key holds never matches: host_len is the whole */

static void
ngx_http_bottle_peer_set_key(ngx_http_bottle_peer_key_t *key,
    ngx_http_bottle_peer_data_t *bp, ngx_peer_connection_t *pc)
{
    key->tls = bp->tls;
    key->ssl_ctx = bp->ssl_ctx;
    key->host_len = bp->ctx->target.host.len;
    ngx_memcpy(key->host, bp->ctx->target.host.data,
               ngx_min(key->host_len, sizeof(key->host)));
    key->socklen = pc->socklen;
    ngx_memcpy(&key->sockaddr, pc->sockaddr, pc->socklen);
}


static ngx_uint_t
ngx_http_bottle_peer_match(ngx_http_bottle_peer_key_t *key,
    ngx_http_bottle_peer_data_t *bp, struct sockaddr *sa, socklen_t socklen)
{
    ngx_str_t  *host;

    host = &bp->ctx->target.host;

    return key->tls == bp->tls
           && key->ssl_ctx == bp->ssl_ctx
           && key->host_len == host->len
           && host->len <= sizeof(key->host)
           && ngx_memcmp(key->host, host->data, host->len) == 0
           && ngx_memn2cmp((u_char *) &key->sockaddr, (u_char *) sa,
                           key->socklen, socklen)
              == 0;
}


/*
 * A slot for a connection to keep: beyond max_per_target for this target,
 * or max in all, the least recently used one goes.
 */

static ngx_http_bottle_peer_item_t *
ngx_http_bottle_peer_slot(ngx_http_bottle_peer_data_t *bp)
{
    ngx_uint_t                    n;
    ngx_queue_t                  *q, *oldest;
    ngx_http_bottle_peer_item_t  *item;

    n = 0;
    oldest = NULL;

    for (q = ngx_queue_head(&bp->conf->cache);
         q != ngx_queue_sentinel(&bp->conf->cache);
         q = ngx_queue_next(q))
    {
        item = ngx_queue_data(q, ngx_http_bottle_peer_item_t, queue);

        if (ngx_http_bottle_peer_match(&item->key, bp,
                                       bp->upstream->peer.sockaddr,
                                       bp->upstream->peer.socklen))
        {
            n++;
            oldest = q;
        }
    }

    if (n < bp->conf->max_per_target && !ngx_queue_empty(&bp->conf->free)) {
        q = ngx_queue_head(&bp->conf->free);

    } else {
        q = (n >= bp->conf->max_per_target) ? oldest
                                            : ngx_queue_last(&bp->conf->cache);

        item = ngx_queue_data(q, ngx_http_bottle_peer_item_t, queue);
        ngx_http_bottle_peer_close(item->connection);
        item->connection = NULL;
    }

    ngx_queue_remove(q);

    return ngx_queue_data(q, ngx_http_bottle_peer_item_t, queue);
}


/* an idle connection: closed when the upstream closes it, or after a while */

static void
ngx_http_bottle_peer_idle_handler(ngx_event_t *ev)
{
    int                           n;
    char                          buf[1];
    ngx_connection_t             *c;
    ngx_http_bottle_peer_item_t  *item;

    c = ev->data;

    if (!c->close && !ev->timedout) {
        n = recv(c->fd, buf, 1, MSG_PEEK);

        if (n == -1 && ngx_socket_errno == NGX_EAGAIN) {
            ev->ready = 0;

            if (ngx_handle_read_event(c->read, 0) == NGX_OK) {
                return;
            }
        }
    }

    item = c->data;

    ngx_http_bottle_peer_close(c);

    item->connection = NULL;
    ngx_queue_remove(&item->queue);
    ngx_queue_insert_head(&item->conf->free, &item->queue);
}


static void
ngx_http_bottle_peer_dummy_handler(ngx_event_t *ev)
{
    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                   "bottle upstream dummy handler");
}


static void
ngx_http_bottle_peer_close(ngx_connection_t *c)
{
#if (NGX_HTTP_SSL)

    if (c->ssl) {
        c->ssl->no_wait_shutdown = 1;
        c->ssl->no_send_shutdown = 1;

        if (ngx_ssl_shutdown(c) == NGX_AGAIN) {
            c->ssl->handler = ngx_http_bottle_peer_close;
            return;
        }
    }

#endif

    ngx_destroy_pool(c->pool);
    ngx_close_connection(c);
}


#if (NGX_HTTP_SSL)

/*
 * A new connection offers the session last saved for its target and SSL
 * context.  nginx calls this only with proxy_ssl_session_reuse on, and
 * calls save_session whenever the connection gets a session: during the
 * handshake with TLS 1.2, with each ticket after it with TLS 1.3.
 */

static ngx_int_t
ngx_http_bottle_peer_set_session(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_bottle_peer_data_t  *bp = data;

    ngx_connection_t                *c;
    ngx_http_bottle_peer_session_t  *s;

    c = pc->connection;

    if (!bp->upstream->conf->ssl_session_reuse
        || c == NULL || c->ssl == NULL || pc->sockaddr == NULL)
    {
        return NGX_OK;
    }

    s = ngx_http_bottle_peer_find_session(bp, pc);

    if (s == NULL) {
        return NGX_OK;
    }

    if (SSL_set_session(c->ssl->connection, s->session) == 0) {
        ngx_ssl_error(NGX_LOG_INFO, pc->log, 0,
                      "bottle upstream: SSL_set_session() failed");
        ngx_http_bottle_peer_drop_session(bp, pc);
        return NGX_OK;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                   "bottle upstream: set session %p for \"%V\"",
                   s->session, &bp->ctx->target.host);

    bp->offered = 1;

    ngx_queue_remove(&s->queue);
    ngx_queue_insert_head(&bp->conf->session_cache, &s->queue);

    return NGX_OK;
}


/*
 * The newest session of a target replaces the one before; beyond
 * "sessions" targets the least recently used one goes.
 */

static void
ngx_http_bottle_peer_save_session(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_bottle_peer_data_t  *bp = data;

    ngx_queue_t                     *q;
    ngx_connection_t                *c;
    ngx_ssl_session_t               *session, *old;
    ngx_http_bottle_peer_conf_t     *pcf;
    ngx_http_bottle_peer_session_t  *s;

    c = pc->connection;
    pcf = bp->conf;

    if (!bp->upstream->conf->ssl_session_reuse
        || c == NULL || c->ssl == NULL || pc->sockaddr == NULL
        || bp->ctx->target.host.len > sizeof(s->key.host))
    {
        return;
    }

    session = ngx_ssl_get_session(c);

    if (session == NULL) {
        return;
    }

#if OPENSSL_VERSION_NUMBER >= 0x10101000L

    if (!SSL_SESSION_is_resumable(session)) {
        ngx_ssl_free_session(session);
        return;
    }

#endif

    s = ngx_http_bottle_peer_find_session(bp, pc);

    if (s == NULL) {
        if (!ngx_queue_empty(&pcf->session_free)) {
            q = ngx_queue_head(&pcf->session_free);

        } else {
            q = ngx_queue_last(&pcf->session_cache);
        }

        s = ngx_queue_data(q, ngx_http_bottle_peer_session_t, queue);

        if (s->session) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                           "bottle upstream: evict session %p", s->session);
            ngx_ssl_free_session(s->session);
            s->session = NULL;
        }

        ngx_http_bottle_peer_set_key(&s->key, bp, pc);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                   "bottle upstream: save session %p for \"%V\"",
                   session, &bp->ctx->target.host);

    old = s->session;
    s->session = session;

    if (old) {
        ngx_ssl_free_session(old);
    }

    ngx_queue_remove(&s->queue);
    ngx_queue_insert_head(&pcf->session_cache, &s->queue);
}


static ngx_http_bottle_peer_session_t *
ngx_http_bottle_peer_find_session(ngx_http_bottle_peer_data_t *bp,
    ngx_peer_connection_t *pc)
{
    ngx_queue_t                     *q;
    ngx_http_bottle_peer_session_t  *s;

    for (q = ngx_queue_head(&bp->conf->session_cache);
         q != ngx_queue_sentinel(&bp->conf->session_cache);
         q = ngx_queue_next(q))
    {
        s = ngx_queue_data(q, ngx_http_bottle_peer_session_t, queue);

        if (ngx_http_bottle_peer_match(&s->key, bp, pc->sockaddr,
                                       pc->socklen))
        {
            return s;
        }
    }

    return NULL;
}


static void
ngx_http_bottle_peer_drop_session(ngx_http_bottle_peer_data_t *bp,
    ngx_peer_connection_t *pc)
{
    ngx_http_bottle_peer_session_t  *s;

    s = ngx_http_bottle_peer_find_session(bp, pc);

    if (s == NULL) {
        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                   "bottle upstream: drop session %p for \"%V\"",
                   s->session, &bp->ctx->target.host);

    ngx_ssl_free_session(s->session);
    s->session = NULL;

    ngx_queue_remove(&s->queue);
    ngx_queue_insert_head(&bp->conf->session_free, &s->queue);
}


/* when the cycle goes: the sessions a worker holds */

static void
ngx_http_bottle_peer_cleanup(void *data)
{
    ngx_http_bottle_peer_conf_t  *pcf = data;

    ngx_queue_t                     *q;
    ngx_http_bottle_peer_session_t  *s;

    for (q = ngx_queue_head(&pcf->session_cache);
         q != ngx_queue_sentinel(&pcf->session_cache);
         q = ngx_queue_next(q))
    {
        s = ngx_queue_data(q, ngx_http_bottle_peer_session_t, queue);

        if (s->session) {
            ngx_ssl_free_session(s->session);
            s->session = NULL;
        }
    }
}

#endif
