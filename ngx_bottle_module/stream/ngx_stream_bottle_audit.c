
/*
 * First contact at the front, for passthrough routes: their tunnels never
 * reach the http side, so the CONNECT itself is the contact.  A bottle with
 * audit.delivery: "required" waits here, before "200 Connection
 * established", and is refused (rule audit) if the journal cannot record
 * it (ngx_bottle_audit.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_stream_bottle.h"
#include "bottle_audit.h"


typedef struct {
    ngx_bottle_contact_t         contact;
    ngx_stream_session_t        *s;
    ngx_stream_bottle_ctx_t     *ctx;
    ngx_stream_bottle_next_pt    next;
} ngx_stream_bottle_contact_t;


static void ngx_stream_bottle_contact_done(ngx_bottle_contact_t *ct,
    ngx_int_t rc);
static void ngx_stream_bottle_contact_cleanup(void *data);


/*
 * NGX_OK: go on; NGX_DONE: refused, or waiting (next runs once the
 * contact is recorded).
 */

ngx_int_t
ngx_stream_bottle_first_contact(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_stream_bottle_next_pt next)
{
    u_char                       *p;
    ngx_int_t                     rc;
    ngx_connection_t             *c;
    ngx_pool_cleanup_t           *cln;
    ngx_stream_bottle_contact_t  *sc;

    if (!ngx_bottle_audit_enabled() && !ctx->verdict.bottle->audit_required)
    {
        return NGX_OK;
    }

    c = s->connection;

    /* the session's correlation id: a later refusal in it names it too */

    if (ctx->verdict.correlation.len == 0) {
        p = ngx_pnalloc(c->pool, BOTTLE_AUDIT_RANDOM_LEN);
        if (p == NULL || bottle_audit_random_id((char *) p) != 0) {
            return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                            "no correlation id");
        }

        ctx->verdict.correlation.data = p;
        ctx->verdict.correlation.len = BOTTLE_AUDIT_RANDOM_LEN - 1;
    }

    sc = ngx_pcalloc(c->pool, sizeof(ngx_stream_bottle_contact_t));
    if (sc == NULL) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "out of memory");
    }

    cln = ngx_pool_cleanup_add(c->pool, 0);
    if (cln == NULL) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "out of memory");
    }

    sc->s = s;
    sc->ctx = ctx;
    sc->next = next;
    sc->contact.bottle = ctx->verdict.bottle;
    sc->contact.host = ctx->verdict.host;
    sc->contact.port = ctx->port;
    ngx_str_set(&sc->contact.method, "CONNECT");
    ngx_str_set(&sc->contact.scheme, "tls");
    sc->contact.correlation = ctx->verdict.correlation;
    sc->contact.handler = ngx_stream_bottle_contact_done;
    sc->contact.data = sc;

    cln->handler = ngx_stream_bottle_contact_cleanup;
    cln->data = sc;

    rc = ngx_bottle_audit_contact(&sc->contact);

    if (rc == NGX_OK) {
        return NGX_OK;
    }

    if (rc == NGX_AGAIN) {
        /* the read handler leaves the socket alone meanwhile */
        ctx->state = NGX_STREAM_BOTTLE_RESOLVING;
        return NGX_DONE;
    }

    return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_AUDIT, "%s",
                                    sc->contact.reason);
}


static void
ngx_stream_bottle_contact_done(ngx_bottle_contact_t *ct, ngx_int_t rc)
{
    ngx_stream_bottle_contact_t  *sc = ct->data;

    if (rc != NGX_OK) {
        (void) ngx_stream_bottle_refuse(sc->s, sc->ctx, NGX_BOTTLE_RULE_AUDIT,
                                        "%s", ct->reason);
        return;
    }

    (void) sc->next(sc->s, sc->ctx);
}


static void
ngx_stream_bottle_contact_cleanup(void *data)
{
    ngx_stream_bottle_contact_t  *sc = data;

    ngx_bottle_audit_contact_cancel(&sc->contact);
}
