
/*
 * Outbound DLP: the request body.  It is read whole before this runs; it
 * is fed to the scan in chunks, from memory or the temporary file, through
 * a decoder when it has a Content-Encoding (gzip, deflate, br; one that
 * cannot be decoded is refused, never forwarded unscanned).  Where it has
 * a finding it is loaded whole (decoded) for the value's hash and for its
 * redaction, and a redacted body is encoded again the way it came.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle_dlp.h"


static ngx_int_t ngx_http_bottle_dlp_coding(ngx_http_bottle_dlp_t *d);
static ngx_int_t ngx_http_bottle_dlp_feed(ngx_http_bottle_dlp_t *d,
    u_char *p, size_t len);
static int ngx_http_bottle_dlp_sink(void *arg, const unsigned char *p,
    size_t len);
static int ngx_http_bottle_dlp_copy(void *arg, const unsigned char *p,
    size_t len);
static ngx_int_t ngx_http_bottle_dlp_raw_body(ngx_http_bottle_dlp_t *d,
    ngx_str_t *raw);
static void *ngx_http_bottle_pool_alloc(void *pool, size_t size);
static void ngx_http_bottle_pool_free(void *pool, void *p);


/*
 * The body, in memory or in the temporary file, fed in chunks; through the
 * decoder when it has a Content-Encoding, so that a compressed body is
 * scanned for what it carries.
 */

ngx_int_t
ngx_http_bottle_dlp_body(ngx_http_bottle_dlp_t *d)
{
    off_t         off;
    ssize_t       n;
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;
    u_char       *chunk;

    if (d->r->request_body == NULL || d->r->request_body->bufs == NULL) {
        return NGX_OK;
    }

    rc = ngx_http_bottle_dlp_coding(d);
    if (rc != NGX_OK) {
        return rc;
    }

    chunk = NULL;
    cl = d->r->request_body->bufs;

    if (d->ncodings == 0 && cl->next == NULL && !cl->buf->in_file) {
        d->body.data = cl->buf->pos;
        d->body.len = cl->buf->last - cl->buf->pos;
    }

    if (bottle_scan_begin(d->scan, NGX_HTTP_BOTTLE_F_BODY) != BOTTLE_SCAN_OK) {
        goto failed;
    }

    for (cl = d->r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (!b->in_file) {
            if (b->last == b->pos) {
                continue;
            }

            rc = ngx_http_bottle_dlp_feed(d, b->pos, b->last - b->pos);
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
                goto failed;
            }

            rc = ngx_http_bottle_dlp_feed(d, chunk, n);
            if (rc != NGX_OK) {
                return rc;
            }
        }
    }

    rc = ngx_http_bottle_dlp_feed(d, NULL, 0);      /* the end */
    if (rc != NGX_OK) {
        return rc;
    }

    if (bottle_scan_end(d->scan) == BOTTLE_SCAN_OK) {
        return NGX_OK;
    }

failed:

    /* a body that was not scanned whole is not forwarded */

    return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_INTERNAL,
                                "the request body could not be scanned");
}


/* the body's Content-Encoding: a decoder for it, or a refusal */

static ngx_int_t
ngx_http_bottle_dlp_coding(ngx_http_bottle_dlp_t *d)
{
    ngx_uint_t                 count;
    ngx_table_elt_t           *h;
    ngx_http_core_loc_conf_t  *clcf;
    bottle_coding_alloc_t      a;

    h = ngx_http_bottle_find_header(d->r, "content-encoding",
                                    sizeof("content-encoding") - 1, &count);
    if (h == NULL) {
        return NGX_OK;
    }

    if (count > 1) {
        return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_DLP,
                                    "more than one Content-Encoding header");
    }

    if (bottle_coding_parse((char *) h->value.data, h->value.len, d->codings,
                            &d->ncodings)
        != BOTTLE_CODING_OK)
    {
        return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_DLP,
                                    "a request body with Content-Encoding "
                                    "\"%V\" cannot be decoded for scanning "
                                    "(gzip, deflate and br can)", &h->value);
    }

    if (d->ncodings == 0) {
        return NGX_OK;
    }

    /* each decoded stage is bounded as the body itself is */

    clcf = ngx_http_get_module_loc_conf(d->r, ngx_http_core_module);
    d->limit = clcf->client_max_body_size ? clcf->client_max_body_size
                                          : NGX_MAX_OFF_T_VALUE;

    ngx_http_bottle_coding_alloc(&a, d->r->pool);

    if (bottle_decoder_create(&d->decoder, d->codings, d->ncodings, d->limit,
                              &a, ngx_http_bottle_dlp_sink, d)
        != BOTTLE_CODING_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* p NULL: the end of the body (an empty buffer is never fed) */

static ngx_int_t
ngx_http_bottle_dlp_feed(ngx_http_bottle_dlp_t *d, u_char *p, size_t len)
{
    int  rc;

    if (d->decoder == NULL) {
        if (len && bottle_scan_feed(d->scan, p, len) != BOTTLE_SCAN_OK) {
            return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                        NGX_BOTTLE_RULE_INTERNAL,
                                        "the request body could not be "
                                        "scanned");
        }

        return NGX_OK;
    }

    rc = p ? bottle_decoder_feed(d->decoder, p, len)
           : bottle_decoder_finish(d->decoder);

    if (rc == BOTTLE_CODING_OK) {
        if (p == NULL) {
            d->decoded = bottle_decoder_total(d->decoder);
            bottle_decoder_destroy(d->decoder);
            d->decoder = NULL;
        }

        return NGX_OK;
    }

    if (rc == BOTTLE_CODING_ESINK) {
        return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                    NGX_BOTTLE_RULE_INTERNAL,
                                    "the request body could not be scanned");
    }

    /* what cannot be decoded cannot be scanned: never forwarded */

    return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_DLP,
                                "the %s request body cannot be decoded for "
                                "scanning: %s",
                                bottle_coding_name(
                                    d->codings[d->ncodings - 1]),
                                bottle_coding_strerror(rc));
}


static int
ngx_http_bottle_dlp_sink(void *arg, const unsigned char *p, size_t len)
{
    ngx_http_bottle_dlp_t  *d = arg;

    return bottle_scan_feed(d->scan, p, len) != BOTTLE_SCAN_OK;
}


/*
 * The (decoded) body whole in memory, for the hash of a finding in it and
 * for its redaction: only when the body has a finding.
 */

ngx_int_t
ngx_http_bottle_dlp_body_load(ngx_http_bottle_dlp_t *d)
{
    ngx_str_t               raw;
    bottle_decoder_t       *dec;
    bottle_coding_alloc_t   a;

    if (d->body.data) {
        return NGX_OK;
    }

    if (ngx_http_bottle_dlp_raw_body(d, &raw) != NGX_OK) {
        return NGX_ERROR;
    }

    if (d->ncodings == 0) {
        d->body = raw;
        return NGX_OK;
    }

    d->body.data = ngx_pnalloc(d->r->pool, d->decoded ? d->decoded : 1);
    if (d->body.data == NULL) {
        return NGX_ERROR;
    }

    ngx_http_bottle_coding_alloc(&a, d->r->pool);

    if (bottle_decoder_create(&dec, d->codings, d->ncodings, d->limit, &a,
                              ngx_http_bottle_dlp_copy, d)
        != BOTTLE_CODING_OK)
    {
        return NGX_ERROR;
    }

    if (bottle_decoder_feed(dec, raw.data, raw.len) != BOTTLE_CODING_OK
        || bottle_decoder_finish(dec) != BOTTLE_CODING_OK
        || d->body.len != d->decoded)
    {
        bottle_decoder_destroy(dec);
        return NGX_ERROR;
    }

    bottle_decoder_destroy(dec);

    return NGX_OK;
}


static int
ngx_http_bottle_dlp_copy(void *arg, const unsigned char *p, size_t len)
{
    ngx_http_bottle_dlp_t  *d = arg;

    /* the same bytes as the scan saw, so no more than it counted */

    if (len > d->decoded - d->body.len) {
        return 1;
    }

    ngx_memcpy(d->body.data + d->body.len, p, len);
    d->body.len += len;

    return 0;
}


/* the body as it came, in one buffer */

static ngx_int_t
ngx_http_bottle_dlp_raw_body(ngx_http_bottle_dlp_t *d, ngx_str_t *raw)
{
    off_t          size;
    ssize_t        got;
    ngx_buf_t     *b;
    ngx_chain_t   *cl;
    u_char        *p;

    size = 0;

    for (cl = d->r->request_body->bufs; cl; cl = cl->next) {
        size += ngx_buf_size(cl->buf);
    }

    raw->data = ngx_pnalloc(d->r->pool, size ? size : 1);
    if (raw->data == NULL) {
        return NGX_ERROR;
    }

    p = raw->data;

    for (cl = d->r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (!b->in_file) {
            if (b->last != b->pos) {
                p = ngx_cpymem(p, b->pos, b->last - b->pos);
            }

            continue;
        }

        got = ngx_read_file(b->file, p, b->file_last - b->file_pos,
                            b->file_pos);
        if (got != b->file_last - b->file_pos) {
            return NGX_ERROR;
        }

        p += got;
    }

    raw->len = p - raw->data;

    return NGX_OK;
}


/* what zlib and brotli allocate for a request comes from its pool */

void
ngx_http_bottle_coding_alloc(bottle_coding_alloc_t *a, ngx_pool_t *pool)
{
    a->alloc = ngx_http_bottle_pool_alloc;
    a->free = ngx_http_bottle_pool_free;
    a->opaque = pool;
}


static void *
ngx_http_bottle_pool_alloc(void *pool, size_t size)
{
    return ngx_palloc(pool, size);
}


static void
ngx_http_bottle_pool_free(void *pool, void *p)
{
    ngx_pfree(pool, p);
}


/*
 * The body redacted into one buffer in memory, encoded again the way it
 * came, and its new length where the proxy takes the Content-Length from.
 */

ngx_int_t
ngx_http_bottle_dlp_redact_body(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, size_t n)
{
    size_t                  len;
    ngx_str_t               body;
    ngx_buf_t              *nb;
    ngx_chain_t            *cl;
    bottle_coding_alloc_t   a;

    if (ngx_http_bottle_dlp_body_load(d) != NGX_OK) {
        return NGX_ERROR;
    }

    body = d->body;

    if (ngx_http_bottle_dlp_redact_str(d, &body, NGX_HTTP_BOTTLE_F_BODY, m, n)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (d->ncodings) {
        ngx_http_bottle_coding_alloc(&a, d->r->pool);

        if (bottle_coding_encode(d->codings, d->ncodings, body.data, body.len,
                                 &a, &body.data, &len)
            != BOTTLE_CODING_OK)
        {
            return NGX_ERROR;
        }

        body.len = len;
    }

    nb = ngx_calloc_buf(d->r->pool);
    cl = ngx_alloc_chain_link(d->r->pool);
    if (nb == NULL || cl == NULL) {
        return NGX_ERROR;
    }

    nb->pos = body.data;
    nb->last = body.data + body.len;
    nb->memory = 1;
    nb->last_buf = 1;

    cl->buf = nb;
    cl->next = NULL;

    d->r->request_body->bufs = cl;
    d->r->request_body->buf = nb;
    d->r->headers_in.content_length_n = body.len;

    return NGX_OK;
}
