
/*
 * A request held for the operator (on_match: supervise, docs/dlp.md "Held
 * requests"), the DLP step's side: its body is read, so the request is
 * kept alive (r->main->blocked) while ngx_bottle_supervise.c queues the
 * proposal and waits.  Approved: the value goes on the (bottle, host)
 * safelist and the request is scanned again (another finding holds it
 * again); then the pipeline goes on and the request reaches the upstream
 * as it was.  Denied, timed out, or not held at all: refused, rule dlp.
 * A client that goes away while held finalizes the request at once and
 * releases its place in the bound.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle_dlp.h"
#include "bottle_record.h"


typedef struct {
    ngx_http_request_t      *r;
    ngx_bottle_hold_t       *hold;
    const char              *detector;
    const char              *rule;
    u_char                   where[64];
    u_char                   digest[32];
    unsigned                 waiting:1;
} ngx_http_bottle_held_t;


static off_t ngx_http_bottle_held_body(ngx_http_request_t *r);
static ngx_int_t ngx_http_bottle_held_refuse(ngx_http_bottle_ctx_t *ctx,
    ngx_http_bottle_held_t *hd);
static void ngx_http_bottle_held_done(ngx_bottle_hold_t *h);
static void ngx_http_bottle_held_wake(ngx_http_request_t *r);
static void ngx_http_bottle_held_terminate(void *data);
static void ngx_http_bottle_held_cleanup(void *data);


ngx_int_t
ngx_http_bottle_dlp_hold(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, const u_char *where, const u_char *digest)
{
    ngx_int_t                rc;
    ngx_str_t                id;
    ngx_pool_cleanup_t      *cln;
    ngx_http_cleanup_t      *hcln;
    ngx_http_request_t      *r;
    ngx_http_bottle_ctx_t   *ctx;
    ngx_http_bottle_held_t  *hd;

    r = d->r;
    ctx = d->ctx;

    hd = ngx_pcalloc(r->pool, sizeof(ngx_http_bottle_held_t));
    if (hd == NULL) {
        return NGX_ERROR;
    }

    hd->r = r;
    hd->detector = bottle_scan_detector_name(m->detector);
    hd->rule = m->rule;
    ngx_cpystrn(hd->where, (u_char *) where, sizeof(hd->where));
    ngx_memcpy(hd->digest, digest, 32);

    cln = ngx_pool_cleanup_add(r->pool, 0);
    hcln = ngx_http_cleanup_add(r, 0);

    if (cln == NULL || hcln == NULL) {
        return NGX_ERROR;
    }

    id.data = (u_char *) ctx->verdict.bottle->id.data;
    id.len = ctx->verdict.bottle->id.len;

    hd->hold = ngx_bottle_hold_create(&id, &ctx->target.host,
                                      r->connection->log);
    if (hd->hold == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_bottle_held_cleanup;
    cln->data = hd;
    hcln->handler = ngx_http_bottle_held_terminate;
    hcln->data = hd;

    hd->hold->detector = hd->detector;
    hd->hold->rule = hd->rule;
    hd->hold->location = (char *) hd->where;
    ngx_memcpy(hd->hold->digest, digest, 32);
    hd->hold->body = ngx_http_bottle_held_body(r);
    hd->hold->handler = ngx_http_bottle_held_done;
    hd->hold->data = hd;
    d->held = hd;

    rc = ngx_bottle_hold_start(hd->hold);

    if (rc != NGX_AGAIN) {
        return ngx_http_bottle_held_refuse(ctx, hd);
    }

    /* nginx does not free a blocked request; a client that goes is seen */

    hd->waiting = 1;
    r->main->blocked++;
    r->write_event_handler = ngx_http_bottle_held_wake;
    r->read_event_handler = ngx_http_test_reading;

    return NGX_AGAIN;
}


/* the body's bytes, in memory or in a file: what a held request keeps */

static off_t
ngx_http_bottle_held_body(ngx_http_request_t *r)
{
    off_t         n;
    ngx_chain_t  *cl;

    if (r->request_body == NULL) {
        return 0;
    }

    n = 0;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        n += ngx_buf_size(cl->buf);
    }

    return n;
}


static ngx_int_t
ngx_http_bottle_held_refuse(ngx_http_bottle_ctx_t *ctx,
    ngx_http_bottle_held_t *hd)
{
    char                digest[BOTTLE_RECORD_DIGEST_SIZE];
    ngx_bottle_hold_t  *h = hd->hold;

    (void) bottle_record_digest(digest, hd->digest);

    if (h->id[0]) {
        return ngx_http_bottle_deny(ctx, hd->r->pool, NGX_BOTTLE_RULE_DLP,
                                    "%s (%s) in the %s, value %s: "
                                    "held for the operator (proposal %s): "
                                    "%*s",
                                    hd->detector, hd->rule, hd->where,
                                    digest, h->id, h->reason_len, h->reason);
    }

    return ngx_http_bottle_deny(ctx, hd->r->pool, NGX_BOTTLE_RULE_DLP,
                                "%s (%s) in the %s, value %s: "
                                "not held for the operator: %*s",
                                hd->detector, hd->rule, hd->where,
                                digest, h->reason_len, h->reason);
}


/* the answer (posted): the request goes on from its write handler */

static void
ngx_http_bottle_held_done(ngx_bottle_hold_t *h)
{
    ngx_connection_t        *c;
    ngx_http_request_t      *r;
    ngx_http_bottle_held_t  *hd;

    hd = h->data;
    r = hd->r;
    c = r->connection;

    hd->waiting = 0;
    r->main->blocked--;
    r->read_event_handler = ngx_http_block_reading;

    ngx_http_set_log_request(c->log, r);

    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}


static void
ngx_http_bottle_held_wake(ngx_http_request_t *r)
{
    ngx_int_t                rc;
    ngx_str_t                id;
    ngx_http_bottle_ctx_t   *ctx;
    ngx_http_bottle_held_t  *hd;

    ctx = ngx_http_bottle_get_ctx(r);
    hd = ((ngx_http_bottle_dlp_t *) ctx->dlp)->held;

    if (hd->waiting) {
        /* a write event before the answer */
        return;
    }

    r->write_event_handler = ngx_http_core_run_phases;

    if (hd->hold->rc != NGX_OK) {
        ctx->resume(r, ctx, ngx_http_bottle_held_refuse(ctx, hd));
        return;
    }

    id.data = (u_char *) ctx->verdict.bottle->id.data;
    id.len = ctx->verdict.bottle->id.len;

    rc = ngx_bottle_safelist_add(r->pool, &id, &ctx->target.host,
                                 hd->digest);

    if (rc != NGX_OK) {
        ctx->resume(r, ctx,
                    ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_DLP,
                                         "%s (%s) in the %s: approved by the "
                                         "operator (proposal %s), but the "
                                         "safelist is full",
                                         hd->detector, hd->rule, hd->where,
                                         hd->hold->id));
        return;
    }

    ngx_bottle_log(NGX_LOG_NOTICE, r->connection->log,
                   "bottle safelist: bottle=\"%V\" host=\"%V\" "
                   "value=sha256:%*xs approved (proposal %s)", &id,
                   &ctx->target.host, (size_t) 8, hd->digest, hd->hold->id);

    /* scanned again, by the pipeline: another finding is held again */

    ctx->resume(r, ctx, NGX_HTTP_BOTTLE_RESCAN);
}


/* the request is terminated (the client went): no longer blocked by us */

static void
ngx_http_bottle_held_terminate(void *data)
{
    ngx_http_bottle_held_t  *hd = data;

    ngx_http_bottle_ctx_t  *ctx;

    if (!hd->waiting) {
        return;
    }

    hd->waiting = 0;
    hd->r->main->blocked--;

    /* a revocation says so in the withdrawal, else the client went */

    ctx = ngx_http_get_module_ctx(hd->r, ngx_http_bottle_module);

    if (ctx && ctx->ended) {
        ngx_bottle_hold_release_as(hd->hold, ctx->ended);

    } else {
        ngx_bottle_hold_release(hd->hold);
    }

    hd->hold = NULL;
}


static void
ngx_http_bottle_held_cleanup(void *data)
{
    ngx_http_bottle_held_t  *hd = data;

    if (hd->hold) {
        ngx_bottle_hold_release(hd->hold);
        hd->hold = NULL;
    }
}
