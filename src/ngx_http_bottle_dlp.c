
/*
 * Outbound DLP: what the request carries, before any credential is touched
 * and before any upstream contact.  Every part of the request is a field:
 * the hostname, the path, the query, each header and the body.  The canary
 * is looked for everywhere, also in the agent's value of the header the
 * route injects (it would be replaced, but carrying it is the attempt).
 *
 * Always on, whatever the route says: the bottle's canary anywhere (also
 * percent-encoded, once or twice), and line breaks in header values.  The
 * secret scanner (token patterns, known secrets, redact / supervise / block)
 * plugs in at ngx_http_bottle_dlp_field().
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


#define NGX_HTTP_BOTTLE_DLP_CHUNK  65536


typedef struct {
    ngx_http_request_t      *r;
    ngx_http_bottle_ctx_t   *ctx;
    ngx_str_t                canary;
    u_char                  *tail;       /* carried across body chunks */
    size_t                   tail_len;
} ngx_http_bottle_dlp_t;


static ngx_int_t ngx_http_bottle_dlp_headers(ngx_http_bottle_dlp_t *d);
static ngx_int_t ngx_http_bottle_dlp_body(ngx_http_bottle_dlp_t *d);
static ngx_int_t ngx_http_bottle_dlp_chunk(ngx_http_bottle_dlp_t *d,
    u_char *p, size_t len);
static ngx_int_t ngx_http_bottle_dlp_field(ngx_http_bottle_dlp_t *d,
    const char *where, ngx_str_t *name, u_char *p, size_t len);
static ngx_uint_t ngx_http_bottle_dlp_has(ngx_str_t *needle, u_char *p,
    size_t len);
static ngx_uint_t ngx_http_bottle_crlf(u_char *p, size_t len);


ngx_int_t
ngx_http_bottle_dlp(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ngx_int_t               rc;
    ngx_http_bottle_dlp_t   d;

    ngx_memzero(&d, sizeof(ngx_http_bottle_dlp_t));

    d.r = r;
    d.ctx = ctx;
    d.canary.data = (u_char *) ctx->verdict.bottle->canary.data;
    d.canary.len = ctx->verdict.bottle->canary.len;

    rc = ngx_http_bottle_dlp_field(&d, "hostname", NULL, ctx->target.host.data,
                                   ctx->target.host.len);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_bottle_dlp_field(&d, "path", NULL, ctx->target.path.data,
                                   ctx->target.path.len);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_bottle_dlp_field(&d, "query", NULL, ctx->target.args.data,
                                   ctx->target.args.len);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_bottle_dlp_headers(&d);
    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_http_bottle_dlp_body(&d);
}


static ngx_int_t
ngx_http_bottle_dlp_headers(ngx_http_bottle_dlp_t *d)
{
    ngx_int_t              rc;
    ngx_uint_t             i;
    ngx_list_part_t       *part;
    ngx_table_elt_t       *h;

    for (part = &d->r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {

            if (ngx_http_bottle_crlf(h[i].key.data, h[i].key.len)
                || ngx_http_bottle_crlf(h[i].value.data, h[i].value.len))
            {
                return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                            NGX_BOTTLE_RULE_CRLF,
                                            "a line break in the header "
                                            "\"%V\"", &h[i].key);
            }

            rc = ngx_http_bottle_dlp_field(d, "header", &h[i].key,
                                           h[i].value.data, h[i].value.len);
            if (rc != NGX_OK) {
                return rc;
            }
        }
    }

    return NGX_OK;
}


/* the body, in memory or in the temporary file, in chunks */

static ngx_int_t
ngx_http_bottle_dlp_body(ngx_http_bottle_dlp_t *d)
{
    off_t         off;
    ssize_t       n;
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;
    u_char       *chunk;

    if (d->r->request_body == NULL) {
        return NGX_OK;
    }

    chunk = NULL;

    if (d->canary.len > 1) {
        d->tail = ngx_pnalloc(d->r->pool, 2 * d->canary.len);
        if (d->tail == NULL) {
            return NGX_ERROR;
        }
    }

    for (cl = d->r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (!b->in_file) {
            rc = ngx_http_bottle_dlp_chunk(d, b->pos, b->last - b->pos);
            if (rc != NGX_OK) {
                return rc;
            }

            continue;
        }

        if (chunk == NULL) {
            chunk = ngx_pnalloc(d->r->pool, NGX_HTTP_BOTTLE_DLP_CHUNK);
            if (chunk == NULL) {
                return NGX_ERROR;
            }
        }

        for (off = b->file_pos; off < b->file_last; off += n) {
            n = ngx_read_file(b->file, chunk,
                              ngx_min(NGX_HTTP_BOTTLE_DLP_CHUNK,
                                      b->file_last - off),
                              off);
            if (n <= 0) {
                /* a body that cannot be read is not forwarded */
                return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                            NGX_BOTTLE_RULE_INTERNAL,
                                            "the request body could not be "
                                            "scanned");
            }

            rc = ngx_http_bottle_dlp_chunk(d, chunk, n);
            if (rc != NGX_OK) {
                return rc;
            }
        }
    }

    return NGX_OK;
}


/*
 * A chunk of the body; the last canary-length bytes of the previous chunk
 * go in front of this one's first, so a canary split across chunks is seen.
 */

static ngx_int_t
ngx_http_bottle_dlp_chunk(ngx_http_bottle_dlp_t *d, u_char *p, size_t len)
{
    size_t     keep, head;
    ngx_int_t  rc;

    if (d->tail && d->tail_len) {
        head = ngx_min(len, d->canary.len - 1);
        ngx_memcpy(d->tail + d->tail_len, p, head);

        rc = ngx_http_bottle_dlp_field(d, "body", NULL, d->tail,
                                       d->tail_len + head);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    rc = ngx_http_bottle_dlp_field(d, "body", NULL, p, len);
    if (rc != NGX_OK) {
        return rc;
    }

    if (d->tail) {
        keep = ngx_min(len, d->canary.len - 1);
        ngx_memcpy(d->tail, p + len - keep, keep);
        d->tail_len = keep;
    }

    return NGX_OK;
}


/*
 * One field: the canary as the upstream would see it, raw or decoded once
 * or twice (an encoded canary is the same canary).
 */

static ngx_int_t
ngx_http_bottle_dlp_field(ngx_http_bottle_dlp_t *d, const char *where,
    ngx_str_t *name, u_char *p, size_t len)
{
    u_char      *buf, *dst, *src;
    ngx_uint_t   round;
    ngx_str_t    none;

    if (d->canary.len == 0 || len < d->canary.len) {
        return NGX_OK;
    }

    if (ngx_http_bottle_dlp_has(&d->canary, p, len)) {
        goto found;
    }

    buf = NULL;

    for (round = 0;
         round < 2 && ngx_strlchr(p, p + len, '%') != NULL;
         round++)
    {
        if (buf == NULL) {
            buf = ngx_pnalloc(d->r->pool, len);
            if (buf == NULL) {
                return NGX_ERROR;
            }
        }

        dst = buf;
        src = p;
        ngx_unescape_uri(&dst, &src, len, 0);

        p = buf;
        len = dst - buf;

        if (ngx_http_bottle_dlp_has(&d->canary, p, len)) {
            goto found;
        }
    }

    return NGX_OK;

found:

    ngx_str_set(&none, "");

    return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_CANARY,
                                "the bottle's canary in the %s%s%V", where,
                                name ? " " : "", name ? name : &none);
}


static ngx_uint_t
ngx_http_bottle_dlp_has(ngx_str_t *needle, u_char *p, size_t len)
{
    return memmem(p, len, needle->data, needle->len) != NULL;
}


static ngx_uint_t
ngx_http_bottle_crlf(u_char *p, size_t len)
{
    u_char  *last;

    last = p + len;

    for ( /* void */ ; p < last; p++) {
        if (*p == CR || *p == LF) {
            return 1;
        }

        if (*p == '%' && last - p >= 6
            && ngx_strncasecmp(p, (u_char *) "%0d%0a", 6) == 0)
        {
            return 1;
        }
    }

    return 0;
}
