
/*
 * A CONNECT the front answered with 200, listed with what admitted it
 * (ngx_bottle_conns.c): its bottle, its token, its target and route.  A
 * policy change that no longer allows it ends it: while the front still
 * has it (the tunnel's first bytes not read yet) the session is finalized;
 * once proxy_pass relays it, the proxy ends it as it ends a connection
 * marked to close (its upstream connection too).  An intercepted tunnel
 * adopted by the http side becomes an http connection's entry
 * (ngx_stream_bottle_adopt.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_stream_bottle.h"


static void ngx_stream_bottle_conn_close(ngx_bottle_conn_t *bc);


/*
 * Listed before the 200: a change while the target was resolved or the
 * first contact recorded is decided here.  NGX_OK, or NGX_DONE: refused
 * (answered and logged).
 */

ngx_int_t
ngx_stream_bottle_conns_add(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx)
{
    ngx_str_t              *host;
    ngx_bottle_conn_t      *bc;
    ngx_bottle_verdict_t    v;

    if (ctx->entry == NULL) {
        return NGX_OK;
    }

    host = ctx->route ? &ctx->verdict.host : NULL;

    bc = ngx_bottle_conn_add(s->connection, ctx->entry, 1, host, ctx->port);
    if (bc == NULL) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "out of memory");
    }

    bc->tunnel = 1;
    bc->passthrough = (ctx->route && ctx->route->passthrough) ? 1 : 0;
    bc->data = s;

    if (ngx_bottle_conn_decide(bc, &v) != NGX_OK) {
        bc->closed = 1;
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_REVOKED,
                                        "%V", &v.reason);
    }

    bc->close = ngx_stream_bottle_conn_close;

    return NGX_OK;
}


static void
ngx_stream_bottle_conn_close(ngx_bottle_conn_t *bc)
{
    ngx_connection_t         *c;
    ngx_stream_session_t     *s;
    ngx_stream_bottle_ctx_t  *ctx;

    s = bc->data;
    c = s->connection;
    ctx = ngx_stream_get_module_ctx(s, ngx_stream_bottle_module);

    if (ctx->state != NGX_STREAM_BOTTLE_DONE
        || c->read->handler == ngx_stream_session_handler)
    {
        /* the front's still: nothing relayed yet */
        ctx->state = NGX_STREAM_BOTTLE_DONE;
        ngx_stream_finalize_session(s, NGX_STREAM_FORBIDDEN);
        return;
    }

    /* the proxy's handlers end a connection marked to close, at once */

    c->close = 1;
    c->read->handler(c->read);
}
