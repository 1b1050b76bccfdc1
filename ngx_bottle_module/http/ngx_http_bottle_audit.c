
/*
 * First contact, the pipeline's last step before the upstream (the spec's
 * "Per request" 7): a request that passed every check is recorded in the
 * audit journal as its bottle's first contact with the host, once per
 * (bottle, host) (ngx_bottle_audit.c).  A bottle with audit.delivery:
 * "required" waits here for the acknowledgement, and is refused (rule
 * audit) without it.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


typedef struct {
    ngx_bottle_contact_t     contact;
    ngx_http_request_t      *r;
    ngx_int_t                rc;
    unsigned                 done:1;
} ngx_http_bottle_contact_t;


static void ngx_http_bottle_contact_done(ngx_bottle_contact_t *ct,
    ngx_int_t rc);
static void ngx_http_bottle_contact_wake(ngx_http_request_t *r);
static void ngx_http_bottle_contact_cleanup(void *data);


ngx_int_t
ngx_http_bottle_first_contact(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx)
{
    ngx_int_t                   rc;
    ngx_pool_cleanup_t         *cln;
    ngx_http_bottle_contact_t  *hc;

    if (!ngx_bottle_audit_enabled() && !ctx->verdict.bottle->audit_required)
    {
        return NGX_OK;
    }

    hc = ngx_pcalloc(r->pool, sizeof(ngx_http_bottle_contact_t));
    if (hc == NULL) {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    hc->r = r;
    hc->contact.bottle = ctx->verdict.bottle;
    hc->contact.host = ctx->target.host;
    hc->contact.port = ctx->target.port;
    hc->contact.method = r->method_name;
    hc->contact.correlation = ctx->verdict.correlation;
    hc->contact.handler = ngx_http_bottle_contact_done;
    hc->contact.data = hc;

    if (r->connection->ssl) {
        ngx_str_set(&hc->contact.scheme, "https");

    } else {
        ngx_str_set(&hc->contact.scheme, "http");
    }

    cln->handler = ngx_http_bottle_contact_cleanup;
    cln->data = hc;

    rc = ngx_bottle_audit_contact(&hc->contact);

    switch (rc) {

    case NGX_OK:
        return NGX_OK;

    case NGX_AGAIN:
        /* nginx does not free a blocked request */
        ctx->contact = hc;
        r->main->blocked++;
        r->write_event_handler = ngx_http_bottle_contact_wake;
        return NGX_AGAIN;

    default:
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_AUDIT, "%s",
                                    hc->contact.reason);
    }
}


/* the acknowledgement, or none: the resume handler, or a finalizer */

static void
ngx_http_bottle_contact_done(ngx_bottle_contact_t *ct, ngx_int_t rc)
{
    ngx_connection_t           *c;
    ngx_http_request_t         *r;
    ngx_http_bottle_contact_t  *hc;

    hc = ct->data;
    r = hc->r;
    c = r->connection;

    hc->rc = rc;
    hc->done = 1;

    r->main->blocked--;

    ngx_http_set_log_request(c->log, r);

    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}


static void
ngx_http_bottle_contact_wake(ngx_http_request_t *r)
{
    ngx_int_t                   rc;
    ngx_http_bottle_ctx_t      *ctx;
    ngx_http_bottle_contact_t  *hc;

    ctx = ngx_http_bottle_get_ctx(r);
    hc = ctx->contact;

    if (!hc->done) {
        /* a write event before the answer */
        return;
    }

    r->write_event_handler = ngx_http_core_run_phases;

    rc = NGX_OK;

    if (hc->rc != NGX_OK) {
        rc = ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_AUDIT, "%s",
                                  hc->contact.reason);
    }

    ctx->resume(r, ctx, rc);
}


static void
ngx_http_bottle_contact_cleanup(void *data)
{
    ngx_http_bottle_contact_t  *hc = data;

    ngx_bottle_audit_contact_cancel(&hc->contact);
}
