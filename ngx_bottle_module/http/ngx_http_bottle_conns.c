
/*
 * An http connection of agents (a tunnel's, inspected; or a plain proxy
 * connection kept alive; HTTP/1 or HTTP/2), listed with what admitted it
 * (ngx_bottle_conns.c) once a request of it passed its route, and its
 * requests in flight.  A tunnel's entry keeps its CONNECT's (its token, its
 * target); a plain connection's follows its latest request's bottle, token
 * and target.  A policy change that no longer allows it ends its requests
 * as nginx ends a request whose client went (a held one withdraws its
 * proposal, one waiting for a thread or an acknowledgement is finalized
 * when it comes back, never goes on), then the connection.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


typedef struct {
    ngx_queue_t              queue;      /* in bc->requests */
    ngx_http_request_t      *request;
} ngx_http_bottle_conn_req_t;


static void ngx_http_bottle_conn_close(ngx_bottle_conn_t *bc);
static void ngx_http_bottle_conn_req_cleanup(void *data);


ngx_int_t
ngx_http_bottle_conns_add(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ngx_connection_t            *c;
    ngx_pool_cleanup_t          *cln;
    ngx_bottle_conn_t           *bc;
    ngx_http_bottle_conn_req_t  *rq;

    if (ctx->entry == NULL) {
        return NGX_OK;
    }

    c = r->connection;

#if (NGX_HTTP_V2)
    if (r->stream) {
        c = r->stream->connection->connection;
    }
#endif

    bc = ngx_bottle_conn_find(c);

    if (bc == NULL) {
        /* a plain connection comes with a token; a relayed tunnel's is
           found by its bottle's id (its relay has the token) */

        bc = ngx_bottle_conn_add(c, ctx->entry, ctx->tunnel == NULL,
                                 &ctx->target.host, ctx->target.port);
        if (bc == NULL) {
            return NGX_ERROR;
        }

        bc->tunnel = (ctx->tunnel != NULL);

    } else if (ctx->tunnel == NULL) {
        if (ngx_bottle_conn_set(bc, ctx->entry, 1, &ctx->target.host,
                                ctx->target.port)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    bc->close = ngx_http_bottle_conn_close;

    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_bottle_conn_req_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }

    rq = cln->data;
    rq->request = r;
    ngx_queue_insert_tail(&bc->requests, &rq->queue);

    cln->handler = ngx_http_bottle_conn_req_cleanup;

    return NGX_OK;
}


/* an intercepted tunnel the front handed over: http ends it now */

void
ngx_http_bottle_conns_adopted(ngx_connection_t *c)
{
    ngx_bottle_conn_t  *bc;

    bc = ngx_bottle_conn_find(c);

    if (bc && bc->close) {
        bc->close = ngx_http_bottle_conn_close;
        bc->data = NULL;
    }
}


static void
ngx_http_bottle_conn_req_cleanup(void *data)
{
    ngx_http_bottle_conn_req_t  *rq = data;

    /* self-linked once its connection's entry is gone */
    ngx_queue_remove(&rq->queue);
    ngx_queue_init(&rq->queue);
}


static void
ngx_http_bottle_conn_close(ngx_bottle_conn_t *bc)
{
    ngx_uint_t                   alive, ended;
    ngx_queue_t                 *q;
    ngx_connection_t            *c, *fc;
    ngx_http_request_t          *r;
    ngx_http_bottle_ctx_t       *ctx;
    ngx_http_bottle_conn_req_t  *rq;

    c = bc->connection;
    alive = 1;
    ended = 0;
    bc->alive = &alive;

    /* the requests in flight (an HTTP/2 connection's streams: reset) */

    while (!ngx_queue_empty(&bc->requests)) {
        q = ngx_queue_head(&bc->requests);
        ngx_queue_remove(q);
        ngx_queue_init(q);

        rq = ngx_queue_data(q, ngx_http_bottle_conn_req_t, queue);
        r = rq->request;
        fc = r->connection;

        ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);

        if (ctx) {
            ctx->ended = "the policy no longer allows the request's "
                         "connection (revoked)";
        }

#if (NGX_HTTP_V2)
        ended = (r->stream == NULL);
#else
        ended = 1;
#endif

        /*
         * as nginx terminates a request of a connection it closes: a
         * reference of our own, so that the cleanups (the upstream's)
         * cannot free it under its termination; the posted termination
         * closes it
         */

        r->main->count++;

        ngx_http_finalize_request(r, NGX_HTTP_CLOSE);
        ngx_http_run_posted_requests(fc);

        if (!alive) {
            /* an HTTP/1 request's end closed its connection */
            return;
        }
    }

    bc->alive = NULL;

    if (ended) {
        /* an HTTP/1 request still waits for a thread: it closes then */
        return;
    }

    /*
     * Idle (kept alive, between requests), or HTTP/2: every handler of an
     * http connection closes it on a timeout, HTTP/2's with its streams.
     */

    c->close = 1;
    c->error = 1;
    c->read->timedout = 1;

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }

    c->read->handler(c->read);
}
