
/*
 * A bottle_metrics location's content (docs/metrics.md): the counters in
 * Prometheus' text format, version 0.0.4, and whether this worker sees a
 * firehose consumer attached.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_bottle.h"
#include "ngx_http_bottle_record.h"


ngx_int_t
ngx_http_bottle_metrics_handler(ngx_http_request_t *r)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_str_t     text, extra;
    ngx_chain_t   out;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    extra.data = ngx_pnalloc(r->pool, 256);
    if (extra.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    extra.len = ngx_sprintf(extra.data,
                            "# HELP bottle_firehose_attached A firehose "
                            "consumer is attached (as this worker saw it).\n"
                            "# TYPE bottle_firehose_attached gauge\n"
                            "bottle_firehose_attached %ui\n",
                            ngx_http_bottle_firehose_attached())
                - extra.data;

    /* the open tunnels, as the bottle zone counts them */

    if (ngx_bottle_metrics_render(r->pool, ngx_bottle_zone_count(), &extra,
                                  &text)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = text.len;
    ngx_str_set(&r->headers_out.content_type,
                "text/plain; version=0.0.4; charset=utf-8");
    r->headers_out.content_type_len = sizeof("text/plain") - 1;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only || text.len == 0) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->pos = text.data;
    b->last = text.data + text.len;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/* a request's end (ngx_http_bottle_record.h): a request let through is
 * counted here; refusals are counted as they are logged, on either side */

static void
ngx_http_bottle_metrics_end_handler(ngx_http_bottle_end_t *e)
{
    if (e->ctx->state == NGX_HTTP_BOTTLE_PASSED) {
        ngx_bottle_metrics_request(e->ctx->verdict.bottle,
                                   NGX_BOTTLE_RULE_NONE);
    }
}


const ngx_http_bottle_end_observer_t  ngx_http_bottle_metrics_end = {
    NULL,
    ngx_http_bottle_metrics_end_handler
};
