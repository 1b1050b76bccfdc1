
/*
 * MCP gating, the response side (docs/mcp.md): on a route with "mcp",
 * the answers to tools/list, resources/list, resources/templates/list and
 * prompts/list lose what the route does not allow.  A JSON response is
 * held whole (at most NGX_HTTP_BOTTLE_MCP_JSON_MAX); an event stream one
 * event at a time (at most NGX_HTTP_BOTTLE_MCP_EVENT_MAX).  A response
 * that cannot be read (too large, not JSON, compressed) never passes
 * unfiltered.  Registered apart from the inbound scan's filter.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_mcp.h"


#define NGX_HTTP_BOTTLE_MCP_JSON_MAX   (4 * 1024 * 1024)
#define NGX_HTTP_BOTTLE_MCP_EVENT_MAX  (1024 * 1024)

#define NGX_HTTP_BOTTLE_MCP_JSON       1
#define NGX_HTTP_BOTTLE_MCP_SSE        2
#define NGX_HTTP_BOTTLE_MCP_REFUSE     3    /* answered with an error */


typedef struct {
    ngx_uint_t               mode;
    u_char                  *buf;        /* held: the body, or one event */
    size_t                   len;
    size_t                   cap;
    size_t                   max;
    const char              *why;        /* REFUSE's reason */
    ngx_chain_t             *free;       /* sent buffers, reused: a long */
    ngx_chain_t             *busy;       /* stream's memory stays bounded */
    unsigned                 done:1;
} ngx_http_bottle_mcp_resp_t;


static ngx_int_t ngx_http_bottle_mcp_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_bottle_mcp_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_bottle_mcp_hold(ngx_http_request_t *r,
    ngx_http_bottle_mcp_resp_t *rs, u_char *p, size_t n);
static ngx_int_t ngx_http_bottle_mcp_events(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_http_bottle_mcp_resp_t *rs,
    ngx_chain_t ***ll);
static ngx_int_t ngx_http_bottle_mcp_json(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_http_bottle_mcp_resp_t *rs,
    ngx_chain_t ***ll);
static ngx_int_t ngx_http_bottle_mcp_out(ngx_http_request_t *r,
    ngx_chain_t ***ll, const u_char *p, size_t n, ngx_uint_t last);
static ngx_int_t ngx_http_bottle_mcp_error(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_http_bottle_mcp_resp_t *rs,
    ngx_chain_t ***ll);
static void ngx_http_bottle_mcp_log(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, const char *why);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


ngx_int_t
ngx_http_bottle_mcp_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_bottle_mcp_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_bottle_mcp_body_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_bottle_mcp_header_filter(ngx_http_request_t *r)
{
    ngx_str_t                   *ct;
    ngx_uint_t                   mode;
    ngx_table_elt_t             *ce;
    ngx_http_bottle_ctx_t       *ctx;
    ngx_http_bottle_mcp_resp_t  *rs;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);

    if (ctx == NULL || ctx->state != NGX_HTTP_BOTTLE_PASSED
        || ctx->route == NULL || ctx->route->mcp == NULL || r->upstream == NULL
        || r != r->main || r->header_only)
    {
        return ngx_http_next_header_filter(r);
    }

    ct = &r->headers_out.content_type;

    if (ct->len >= sizeof("application/json") - 1
        && ngx_strncasecmp(ct->data, (u_char *) "application/json",
                           sizeof("application/json") - 1) == 0)
    {
        mode = NGX_HTTP_BOTTLE_MCP_JSON;

    } else if (ct->len >= sizeof("text/event-stream") - 1
               && ngx_strncasecmp(ct->data, (u_char *) "text/event-stream",
                                  sizeof("text/event-stream") - 1) == 0)
    {
        mode = NGX_HTTP_BOTTLE_MCP_SSE;

    } else {
        /* 202 Accepted, an HTML error page: no JSON-RPC a client reads */
        return ngx_http_next_header_filter(r);
    }

    rs = ngx_pcalloc(r->pool, sizeof(ngx_http_bottle_mcp_resp_t));
    if (rs == NULL) {
        return NGX_ERROR;
    }

    rs->mode = mode;
    rs->max = mode == NGX_HTTP_BOTTLE_MCP_JSON ? NGX_HTTP_BOTTLE_MCP_JSON_MAX
                                               : NGX_HTTP_BOTTLE_MCP_EVENT_MAX;
    ctx->mcp_resp = rs;

    /* the upstream was asked for identity; what is still coded is not read */

    ce = r->headers_out.content_encoding;

    if (ce && ce->hash && !(ce->value.len == 8
                            && ngx_strncasecmp(ce->value.data,
                                               (u_char *) "identity", 8) == 0))
    {
        rs->mode = NGX_HTTP_BOTTLE_MCP_REFUSE;
        rs->why = "the MCP server's response is content-coded";
        ce->hash = 0;
        r->headers_out.content_encoding = NULL;
        r->headers_out.status = NGX_HTTP_BAD_GATEWAY;
        r->headers_out.status_line.len = 0;
        ngx_str_set(&r->headers_out.content_type, "application/json");
        r->headers_out.content_type_len = r->headers_out.content_type.len;
        ngx_http_bottle_mcp_log(r, ctx, rs->why);
    }

    ngx_http_clear_content_length(r);
    ngx_http_clear_accept_ranges(r);
    ngx_http_weak_etag(r);

    r->filter_need_in_memory = 1;

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_bottle_mcp_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_int_t                    rc;
    ngx_uint_t                   last;
    ngx_chain_t                 *cl, *out, **ll;
    ngx_http_bottle_ctx_t       *ctx;
    ngx_http_bottle_mcp_resp_t  *rs;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);
    rs = ctx ? ctx->mcp_resp : NULL;

    if (rs == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    out = NULL;
    ll = &out;
    last = 0;

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf || cl->buf->last_in_chain) {
            last = cl->buf->last_buf || r != r->main;
        }

        if (rs->done || rs->mode == NGX_HTTP_BOTTLE_MCP_REFUSE) {
            /* what comes after an answer in its place goes nowhere */
            cl->buf->pos = cl->buf->last;
            continue;
        }

        if (ngx_buf_in_memory(cl->buf) && cl->buf->last > cl->buf->pos) {
            rc = ngx_http_bottle_mcp_hold(r, rs, cl->buf->pos,
                                          cl->buf->last - cl->buf->pos);
            cl->buf->pos = cl->buf->last;

            if (rc != NGX_OK) {
                return NGX_ERROR;
            }
        }

        if (rs->len > rs->max) {
            if (rs->mode == NGX_HTTP_BOTTLE_MCP_SSE) {
                ngx_http_bottle_mcp_log(r, ctx, "an event of the MCP "
                                        "server's stream is larger than "
                                        "1 MiB: the stream is closed");
                return NGX_ERROR;
            }

            rs->mode = NGX_HTTP_BOTTLE_MCP_REFUSE;
            rs->why = "the MCP server's response is larger than 4 MiB";
            ngx_http_bottle_mcp_log(r, ctx, rs->why);
            continue;
        }

        if (rs->mode == NGX_HTTP_BOTTLE_MCP_SSE) {
            if (ngx_http_bottle_mcp_events(r, ctx, rs, &ll) != NGX_OK) {
                return NGX_ERROR;
            }
        }
    }

    if (last && !rs->done) {
        rs->done = 1;

        if (rs->mode == NGX_HTTP_BOTTLE_MCP_REFUSE) {
            rc = ngx_http_bottle_mcp_error(r, ctx, rs, &ll);

        } else if (rs->mode == NGX_HTTP_BOTTLE_MCP_JSON) {
            rc = ngx_http_bottle_mcp_json(r, ctx, rs, &ll);

        } else {
            /* an unfinished last event never passes unfiltered */
            if (rs->len) {
                ngx_http_bottle_mcp_log(r, ctx, "the MCP server's stream "
                                        "ended inside an event: dropped");
            }

            rc = ngx_http_bottle_mcp_out(r, &ll, NULL, 0, 1);
        }

        if (rc != NGX_OK) {
            return NGX_ERROR;
        }

    } else if (last) {
        if (ngx_http_bottle_mcp_out(r, &ll, NULL, 0, 1) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (out == NULL && rs->busy == NULL && in != NULL) {
        return NGX_OK;
    }

    rc = ngx_http_next_body_filter(r, out);

    ngx_chain_update_chains(r->pool, &rs->free, &rs->busy, &out,
                            (ngx_buf_tag_t) &ngx_http_bottle_mcp_init);

    return rc;
}


/* appended to what is held; len may pass max by one buffer, no more */

static ngx_int_t
ngx_http_bottle_mcp_hold(ngx_http_request_t *r,
    ngx_http_bottle_mcp_resp_t *rs, u_char *p, size_t n)
{
    size_t   cap;
    u_char  *nb;

    if (rs->len > rs->max) {
        return NGX_OK;
    }

    if (rs->len + n > rs->cap) {
        cap = rs->cap ? rs->cap : 4096;

        while (cap < rs->len + n) {
            cap *= 2;
        }

        nb = ngx_palloc(r->pool, cap);
        if (nb == NULL) {
            return NGX_ERROR;
        }

        if (rs->len) {
            ngx_memcpy(nb, rs->buf, rs->len);
        }

        if (rs->buf) {
            ngx_pfree(r->pool, rs->buf);
        }

        rs->buf = nb;
        rs->cap = cap;
    }

    ngx_memcpy(rs->buf + rs->len, p, n);
    rs->len += n;

    return NGX_OK;
}


/* every whole event held: filtered, sent on; the rest stays held */

static ngx_int_t
ngx_http_bottle_mcp_events(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_http_bottle_mcp_resp_t *rs, ngx_chain_t ***ll)
{
    int      rc;
    char    *msg;
    size_t   ev, mlen;

    for ( ;; ) {
        ev = bottle_mcp_sse_event((const char *) rs->buf, rs->len);
        if (ev == 0) {
            return NGX_OK;
        }

        rc = bottle_mcp_sse_filter(&msg, &mlen, ctx->route->mcp, ctx->mcp,
                                   (const char *) rs->buf, ev);

        if (rc < 0) {
            return NGX_ERROR;
        }

        if (rc == 2) {
            ngx_http_bottle_mcp_log(r, ctx, "an event of the MCP server's "
                                    "stream is not JSON: dropped");

        } else if (ngx_http_bottle_mcp_out(r, ll,
                                           rc ? (u_char *) msg : rs->buf,
                                           rc ? mlen : ev, 0)
                   != NGX_OK)
        {
            free(msg);
            return NGX_ERROR;
        }

        free(msg);

        rs->len -= ev;
        ngx_memmove(rs->buf, rs->buf + ev, rs->len);
    }
}


static ngx_int_t
ngx_http_bottle_mcp_json(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_http_bottle_mcp_resp_t *rs, ngx_chain_t ***ll)
{
    int        rc;
    char      *msg;
    size_t     mlen;
    ngx_int_t  n;

    if (rs->len == 0) {
        return ngx_http_bottle_mcp_out(r, ll, NULL, 0, 1);
    }

    rc = bottle_mcp_filter(&msg, &mlen, ctx->route->mcp, ctx->mcp,
                           (const char *) rs->buf, rs->len);

    if (rc < 0) {
        rs->why = "the MCP server's response is not JSON";
        ngx_http_bottle_mcp_log(r, ctx, rs->why);
        return ngx_http_bottle_mcp_error(r, ctx, rs, ll);
    }

    n = ngx_http_bottle_mcp_out(r, ll, rc ? (u_char *) msg : rs->buf,
                                rc ? mlen : rs->len, 1);
    free(msg);

    return n;
}


/* a JSON-RPC error in place of a response that could not be read */

static ngx_int_t
ngx_http_bottle_mcp_error(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_http_bottle_mcp_resp_t *rs, ngx_chain_t ***ll)
{
    u_char  *p, buf[512];

    (void) ctx;

    p = ngx_snprintf(buf, sizeof(buf),
                     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
                     "{\"code\":-32603,\"message\":\"%s, so it was not "
                     "passed on (rule: mcp_response)\"}}",
                     rs->why ? rs->why : "unreadable");

    return ngx_http_bottle_mcp_out(r, ll, buf, p - buf, 1);
}


static ngx_int_t
ngx_http_bottle_mcp_out(ngx_http_request_t *r, ngx_chain_t ***ll,
    const u_char *p, size_t n, ngx_uint_t last)
{
    size_t                       size;
    ngx_buf_t                   *b;
    ngx_chain_t                 *cl;
    ngx_http_bottle_ctx_t       *ctx;
    ngx_http_bottle_mcp_resp_t  *rs;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);
    rs = ctx->mcp_resp;

    cl = ngx_chain_get_free_buf(r->pool, &rs->free);
    if (cl == NULL) {
        return NGX_ERROR;
    }

    b = cl->buf;

    if (n && (b->start == NULL || (size_t) (b->end - b->start) < n)) {
        if (b->start) {
            /* a large allocation goes back at once */
            ngx_pfree(r->pool, b->start);
        }

        size = ngx_max(n, 4096);

        b->start = ngx_palloc(r->pool, size);
        if (b->start == NULL) {
            return NGX_ERROR;
        }

        b->end = b->start + size;
    }

    b->pos = b->start;
    b->last = n ? ngx_cpymem(b->start, p, n) : b->start;
    b->temporary = n ? 1 : 0;
    b->tag = (ngx_buf_tag_t) &ngx_http_bottle_mcp_init;
    b->flush = 1;

    if (last) {
        b->last_buf = (r == r->main) ? 1 : 0;
        b->last_in_chain = 1;
    }

    cl->next = NULL;
    **ll = cl;
    *ll = &cl->next;

    return NGX_OK;
}


static void
ngx_http_bottle_mcp_log(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    const char *why)
{
    /* not nginx's context: it would print the request line */

    ngx_bottle_log(NGX_LOG_WARN, r->connection->log,
                   "bottle mcp: bottle=\"%s\" host=\"%V\" %s",
                   ctx->verdict.bottle->id.data, &ctx->target.host, why);
}
