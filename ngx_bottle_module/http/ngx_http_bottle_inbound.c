
/*
 * Inbound detectors: response bodies on inspected routes that name them in
 * dlp.inbound (gateway.txt: "None run by default").  The one detector,
 * naive_injection_detection, flags prompt-injection phrasing: it only
 * logs, the response goes to the agent as it came and as it comes, buffer
 * by buffer (an SSE stream is not held back).  A compressed response is
 * scanned decoded (lib/bottle_coding.c); the bytes sent on are the
 * upstream's.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_coding.h"
#include "bottle_scan.h"


/* the most of one decoded response the scan looks at */
#define NGX_HTTP_BOTTLE_INBOUND_MAX  (64 * 1024 * 1024)

#define NGX_HTTP_BOTTLE_F_RESPONSE   0


struct ngx_http_bottle_inbound_s {
    bottle_scan_t           *scan;
    bottle_decoder_t        *decoder;
    off_t                    scanned;
    ngx_uint_t               done;
};


static ngx_int_t ngx_http_bottle_inbound_feed(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, u_char *p, size_t len);
static void ngx_http_bottle_inbound_end(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static void ngx_http_bottle_inbound_stop(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, const char *why, const char *detail);
static int ngx_http_bottle_inbound_sink(void *arg, const unsigned char *p,
    size_t len);
static void ngx_http_bottle_inbound_cleanup(void *data);


static ngx_http_output_body_filter_pt  ngx_http_next_body_filter;


ngx_int_t
ngx_http_bottle_inbound_init(ngx_conf_t *cf)
{
    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_bottle_inbound_body_filter;

    return NGX_OK;
}


/* from the header filter: does this response get the inbound scan */

ngx_int_t
ngx_http_bottle_inbound_start(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx)
{
    int                          codings[BOTTLE_CODING_MAX];
    size_t                       ncodings;
    unsigned                     detectors;
    ngx_table_elt_t             *h;
    ngx_pool_cleanup_t          *cln;
    bottle_coding_alloc_t        a;
    const bottle_route_t        *route;
    bottle_scan_secrets_t       *sec;
    ngx_http_bottle_inbound_t   *in;

    route = ctx->route;

    if (route->dlp_off) {
        return NGX_OK;
    }

    detectors = route->dlp_inbound_set ? route->dlp_inbound
                                       : BOTTLE_DLP_INBOUND_DEFAULT;

    if (!(detectors & BOTTLE_DLP_NAIVE_INJECTION)
        || r->header_only
        || r->headers_out.status == NGX_HTTP_NO_CONTENT
        || r->headers_out.status == NGX_HTTP_NOT_MODIFIED)
    {
        return NGX_OK;
    }

    in = ngx_pcalloc(r->pool, sizeof(ngx_http_bottle_inbound_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (in == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    ctx->inbound = in;

    sec = ngx_bottle_inbound_secrets();

    if (sec == NULL
        || bottle_scan_acquire(&in->scan, sec, BOTTLE_DLP_NAIVE_INJECTION)
           != BOTTLE_SCAN_OK)
    {
        in->scan = NULL;
        ngx_http_bottle_inbound_stop(r, ctx, "no scan state", NULL);
        return NGX_OK;
    }

    cln->handler = ngx_http_bottle_inbound_cleanup;
    cln->data = in;

    if (bottle_scan_begin(in->scan, NGX_HTTP_BOTTLE_F_RESPONSE)
        != BOTTLE_SCAN_OK)
    {
        ngx_http_bottle_inbound_stop(r, ctx, "the scan failed", NULL);
        return NGX_OK;
    }

    h = r->headers_out.content_encoding;

    if (h && h->hash) {
        if (bottle_coding_parse((char *) h->value.data, h->value.len,
                                codings, &ncodings)
            != BOTTLE_CODING_OK)
        {
            ngx_http_bottle_inbound_stop(r, ctx, "a Content-Encoding that is "
                                         "not decoded here", NULL);
            return NGX_OK;
        }

        if (ncodings) {
            ngx_http_bottle_coding_alloc(&a, r->pool);

            if (bottle_decoder_create(&in->decoder, codings, ncodings,
                                      NGX_HTTP_BOTTLE_INBOUND_MAX, &a,
                                      ngx_http_bottle_inbound_sink, in)
                != BOTTLE_CODING_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    /* the scan reads buffers, not files */

    r->filter_need_in_memory = 1;

    return NGX_OK;
}


ngx_int_t
ngx_http_bottle_inbound_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_buf_t              *b;
    ngx_chain_t            *cl;
    ngx_http_bottle_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);

    if (ctx == NULL || ctx->inbound == NULL || ctx->inbound->done
        || r != r->main)
    {
        return ngx_http_next_body_filter(r, in);
    }

    for (cl = in; cl && !ctx->inbound->done; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_in_memory(b) && b->last > b->pos) {
            if (ngx_http_bottle_inbound_feed(r, ctx, b->pos, b->last - b->pos)
                != NGX_OK)
            {
                break;
            }
        }

        if (b->last_buf) {
            ngx_http_bottle_inbound_end(r, ctx);
        }
    }

    return ngx_http_next_body_filter(r, in);
}


static ngx_int_t
ngx_http_bottle_inbound_feed(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    u_char *p, size_t len)
{
    int                         rc;
    ngx_http_bottle_inbound_t  *in;

    in = ctx->inbound;

    if (in->decoder) {
        rc = bottle_decoder_feed(in->decoder, p, len);

        if (rc != BOTTLE_CODING_OK && rc != BOTTLE_CODING_ESINK) {
            ngx_http_bottle_inbound_stop(r, ctx, "the body cannot be decoded",
                                         bottle_coding_strerror(rc));
            return NGX_DONE;
        }

    } else {
        rc = ngx_http_bottle_inbound_sink(in, p, len);
    }

    if (rc != 0) {
        ngx_http_bottle_inbound_stop(r, ctx,
                                     in->scanned >= NGX_HTTP_BOTTLE_INBOUND_MAX
                                     ? "the scan stops at 64 MiB"
                                     : "the scan failed", NULL);
        return NGX_DONE;
    }

    return NGX_OK;
}


static int
ngx_http_bottle_inbound_sink(void *arg, const unsigned char *p, size_t len)
{
    ngx_http_bottle_inbound_t  *in = arg;

    if ((off_t) len > NGX_HTTP_BOTTLE_INBOUND_MAX - in->scanned) {
        len = NGX_HTTP_BOTTLE_INBOUND_MAX - in->scanned;
    }

    in->scanned += len;

    if (bottle_scan_feed(in->scan, p, len) != BOTTLE_SCAN_OK) {
        return 1;
    }

    return in->scanned >= NGX_HTTP_BOTTLE_INBOUND_MAX;
}


/* the whole response seen: one line per finding */

static void
ngx_http_bottle_inbound_end(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    size_t                      i, n;
    const bottle_scan_match_t  *m;
    ngx_http_bottle_inbound_t  *in;

    in = ctx->inbound;
    in->done = 1;

    if (in->decoder && bottle_decoder_finish(in->decoder) != BOTTLE_CODING_OK)
    {
        ngx_http_bottle_inbound_stop(r, ctx, "the body cannot be decoded",
                                     "it ends before its end");
        /* what was decoded was scanned: report it still */
    }

    if (bottle_scan_end(in->scan) != BOTTLE_SCAN_OK) {
        ngx_http_bottle_inbound_stop(r, ctx, "the scan failed", NULL);
        return;
    }

    m = bottle_scan_matches(in->scan, &n);

    for (i = 0; i < n; i++) {
        if (m[i].detector != BOTTLE_DETECT_INJECTION) {
            continue;
        }

        ngx_bottle_log(NGX_LOG_WARN, r->connection->log,
                       "bottle dlp: bottle=\"%s\" host=\"%V\" "
                       "detector=naive_injection_detection rule=%s "
                       "location=\"response body\" at=%uz-%uz action=flag",
                       ctx->verdict.bottle->id.data, &ctx->target.host,
                       m[i].rule, m[i].start, m[i].end);
    }
}


/* the scan gives up on this response (it is passed on all the same) */

static void
ngx_http_bottle_inbound_stop(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    const char *why, const char *detail)
{
    ctx->inbound->done = 1;

    ngx_bottle_log(NGX_LOG_NOTICE, r->connection->log,
                   "bottle dlp: bottle=\"%s\" host=\"%V\" "
                   "detector=naive_injection_detection location=\"response "
                   "body\" not scanned further: %s%s%s",
                   ctx->verdict.bottle->id.data, &ctx->target.host, why,
                   detail ? ": " : "", detail ? detail : "");
}


static void
ngx_http_bottle_inbound_cleanup(void *data)
{
    ngx_http_bottle_inbound_t  *in = data;

    if (in->decoder) {
        bottle_decoder_destroy(in->decoder);
    }

    if (in->scan) {
        bottle_scan_release(in->scan);
    }
}

