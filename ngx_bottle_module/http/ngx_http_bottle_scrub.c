
/*
 * Held secrets scrubbed from responses (docs/dlp.md, "Held secrets in
 * responses"): the values the gateway holds for the bottle that the route
 * names in dlp.scrub (by default the credential the route injects) are
 * replaced by "[held:NAME]***" (as long as the value's form) in the
 * response's header values and body, in
 * the forms lib/bottle_scrub.c knows, before the agent sees them.
 *
 * A compressed body is decoded (lib/bottle_coding.c, as the inbound scan
 * does) and goes to the agent without its Content-Encoding; the request
 * asks the upstream only for codings decoded here.  The body goes on as it
 * comes, held back by at most the longest literal (the carry-over window),
 * through a small set of reused buffers.  One dlp.reflected journal event
 * and one log line per response that carried any.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "ngx_http_bottle_scrub.h"
#include "bottle_coding.h"


/* the most of one response decoded (each coding stage) */
#define NGX_HTTP_BOTTLE_SCRUB_DECODED  ((uint64_t) 4 << 30)
/* the buffers the scrubbed body goes out in */
#define NGX_HTTP_BOTTLE_SCRUB_BUF      16384

#define NGX_HTTP_BOTTLE_SCRUB_HEADER   0x01
#define NGX_HTTP_BOTTLE_SCRUB_BODY     0x02


typedef struct {
    ngx_http_request_t      *r;
    ngx_http_bottle_ctx_t   *ctx;
    bottle_scrub_db_t       *db;
    void                    *cached;    /* the worker's cache entry */
    bottle_scrub_t          *scrub;
    bottle_decoder_t        *decoder;

    /* the header sink: the value scrubbed */
    u_char                  *hbuf;
    size_t                   hlen;
    size_t                   hcap;
    ngx_uint_t               hfailed;

    /* the body sink: buffers out */
    ngx_chain_t             *out;
    ngx_chain_t            **last_out;
    ngx_chain_t             *free;
    ngx_chain_t             *busy;
    ngx_buf_t               *cur;

    unsigned                 where[BOTTLE_SCRUB_VALUES];
    unsigned                 forms[BOTTLE_SCRUB_VALUES];
    ngx_uint_t               body:1;
    ngx_uint_t               done:1;
    ngx_uint_t               reported:1;
} ngx_http_bottle_scrub_t;


static ngx_int_t ngx_http_bottle_scrub_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_bottle_scrub_db(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_http_bottle_scrub_t *s);
static ngx_int_t ngx_http_bottle_scrub_value(ngx_http_bottle_scrub_t *s,
    ngx_str_t *value);
static ngx_int_t ngx_http_bottle_scrub_headers(ngx_http_bottle_scrub_t *s);
static void ngx_http_bottle_scrub_collect(ngx_http_bottle_scrub_t *s,
    unsigned where);
static int ngx_http_bottle_scrub_hsink(void *arg, const unsigned char *p,
    size_t len);
static int ngx_http_bottle_scrub_bsink(void *arg, const unsigned char *p,
    size_t len);
static int ngx_http_bottle_scrub_feed(void *arg, const unsigned char *p,
    size_t len);
static void ngx_http_bottle_scrub_report(ngx_http_bottle_scrub_t *s);
static void ngx_http_bottle_scrub_cleanup(void *data);


static ngx_http_output_body_filter_pt  ngx_http_next_body_filter;


ngx_int_t
ngx_http_bottle_scrub_init(ngx_conf_t *cf)
{
    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_bottle_scrub_body_filter;

    return NGX_OK;
}


/* 1 if the route has held values to scrub for this bottle */

static ngx_uint_t
ngx_http_bottle_scrub_wanted(ngx_http_bottle_ctx_t *ctx)
{
    const bottle_t        *b;
    const bottle_route_t  *route;

    route = ctx->route;
    b = ctx->verdict.bottle;

    if (route == NULL || b == NULL) {
        return 0;
    }

    return ((route->scrub & BOTTLE_HELD_CREDENTIAL)
            && route->auth_type != BOTTLE_AUTH_NONE)
           || ((route->scrub & BOTTLE_HELD_EGRESS_TOKENS)
               && b->negress_tokens)
           || ((route->scrub & BOTTLE_HELD_CANARY) && b->canary.len);
}


/*
 * The request side: an Accept-Encoding the agent sent becomes the codings
 * decoded here, so the response can be scrubbed (it reaches the agent
 * decoded); Range and If-Range are dropped, so a held value cannot be
 * read a few bytes per response, each piece too short to be found.
 */

ngx_int_t
ngx_http_bottle_scrub_request(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx)
{
    ngx_uint_t        i, dropped;
    ngx_list_t        kept;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *k;

    if (!ngx_http_bottle_scrub_wanted(ctx)) {
        return NGX_OK;
    }

    if (ngx_list_init(&kept, r->pool, 20, sizeof(ngx_table_elt_t)) != NGX_OK) {
        return NGX_ERROR;
    }

    dropped = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if ((h[i].key.len == sizeof("Range") - 1
                 && ngx_strncasecmp(h[i].key.data, (u_char *) "range",
                                    h[i].key.len) == 0)
                || (h[i].key.len == sizeof("If-Range") - 1
                    && ngx_strncasecmp(h[i].key.data, (u_char *) "if-range",
                                       h[i].key.len) == 0))
            {
                dropped++;
                continue;
            }

            if (h[i].key.len == sizeof("Accept-Encoding") - 1
                && ngx_strncasecmp(h[i].key.data, (u_char *) "accept-encoding",
                                   h[i].key.len) == 0)
            {
                ngx_str_set(&h[i].value, "gzip, deflate, br");
            }

            k = ngx_list_push(&kept);
            if (k == NULL) {
                return NGX_ERROR;
            }

            *k = h[i];
        }
    }

    if (dropped == 0) {
        return NGX_OK;
    }

    ngx_http_bottle_headers_install(r, &kept);

    return NGX_OK;
}


/* from the header filter, before the inbound scan: the headers scrubbed
 * now, the body set up */

ngx_int_t
ngx_http_bottle_scrub_start(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    int                       codings[BOTTLE_CODING_MAX];
    size_t                    ncodings;
    ngx_table_elt_t          *h;
    ngx_pool_cleanup_t       *cln;
    bottle_coding_alloc_t     a;
    ngx_http_bottle_scrub_t  *s;

    if (r != r->main || !ngx_http_bottle_scrub_wanted(ctx)) {
        return NGX_OK;
    }

    s = ngx_pcalloc(r->pool, sizeof(ngx_http_bottle_scrub_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (s == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    s->r = r;
    s->ctx = ctx;
    cln->handler = ngx_http_bottle_scrub_cleanup;
    cln->data = s;

    if (ngx_http_bottle_scrub_db(r, ctx, s) != NGX_OK) {
        return NGX_ERROR;
    }

    if (s->db == NULL) {
        return NGX_OK;
    }

    if (bottle_scrub_create(&s->scrub, s->db, ngx_http_bottle_scrub_hsink, s)
        != BOTTLE_SCRUB_OK)
    {
        return NGX_ERROR;
    }

    ctx->scrub = s;

    if (ngx_http_bottle_scrub_headers(s) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_bottle_scrub_collect(s, NGX_HTTP_BOTTLE_SCRUB_HEADER);

    if (r->header_only
        || r->headers_out.status == NGX_HTTP_NO_CONTENT
        || r->headers_out.status == NGX_HTTP_NOT_MODIFIED)
    {
        ngx_http_bottle_scrub_report(s);
        return NGX_OK;
    }

    h = r->headers_out.content_encoding;

    if (h && h->hash) {
        if (bottle_coding_parse((char *) h->value.data, h->value.len,
                                codings, &ncodings)
            != BOTTLE_CODING_OK)
        {
            /* not asked for (ngx_http_bottle_scrub_request): not passed */
            ngx_bottle_log(NGX_LOG_ERR, r->connection->log,
                           "bottle dlp: bottle=\"%s\" host=\"%V\" "
                           "rule=held_scrub refused: the response has a "
                           "Content-Encoding that is not decoded here: "
                           "\"%V\"", ctx->verdict.bottle->id.data,
                           &ctx->target.host, &h->value);
            return NGX_ERROR;
        }

        if (ncodings) {
            ngx_http_bottle_coding_alloc(&a, r->pool);

            if (bottle_decoder_create(&s->decoder, codings, ncodings,
                                      NGX_HTTP_BOTTLE_SCRUB_DECODED, &a,
                                      ngx_http_bottle_scrub_feed, s)
                != BOTTLE_CODING_OK)
            {
                return NGX_ERROR;
            }
        }

        /* the agent gets the body decoded */
        h->hash = 0;
        r->headers_out.content_encoding = NULL;
    }

    s->body = 1;
    s->last_out = &s->out;
    bottle_scrub_sink(s->scrub, ngx_http_bottle_scrub_bsink, s);

    /* placeholders are as long as what they replace: only a decoded body
     * changes length */
    if (s->decoder) {
        ngx_http_clear_content_length(r);
    }

    ngx_http_clear_accept_ranges(r);
    ngx_http_weak_etag(r);

    r->filter_need_in_memory = 1;

    return NGX_OK;
}


/* the held values of this response: the route's credential first */

static ngx_int_t
ngx_http_bottle_scrub_db(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_http_bottle_scrub_t *s)
{
    char                   err[256];
    size_t                 n, i;
    u_char                *p;
    const bottle_t        *b;
    const bottle_route_t  *route;
    bottle_scrub_value_t  *v;

    route = ctx->route;
    b = ctx->verdict.bottle;

    v = ngx_palloc(r->pool, (b->negress_tokens + 2)
                            * sizeof(bottle_scrub_value_t));
    if (v == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    if ((route->scrub & BOTTLE_HELD_CREDENTIAL)
        && route->auth_type != BOTTLE_AUTH_NONE)
    {
        p = ngx_pnalloc(r->pool, sizeof("credential:") + route->auth_secret.len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        *ngx_sprintf(p, "credential:%*s", route->auth_secret.len,
                     route->auth_secret.data) = '\0';

        v[n].name = (char *) p;
        v[n].kind = "credential";
        v[n].value = (const unsigned char *) route->auth_value.data;
        v[n].len = route->auth_value.len;
        n++;
    }

    if (route->scrub & BOTTLE_HELD_EGRESS_TOKENS) {
        for (i = 0; i < b->negress_tokens; i++) {
            p = ngx_pnalloc(r->pool, sizeof("egress_token:")
                                     + b->egress_tokens[i].name.len);
            if (p == NULL) {
                return NGX_ERROR;
            }

            *ngx_sprintf(p, "egress_token:%*s", b->egress_tokens[i].name.len,
                         b->egress_tokens[i].name.data) = '\0';

            v[n].name = (char *) p;
            v[n].kind = "egress_token";
            v[n].value = (const unsigned char *)
                         b->egress_tokens[i].value.data;
            v[n].len = b->egress_tokens[i].value.len;
            n++;
        }
    }

    if ((route->scrub & BOTTLE_HELD_CANARY) && b->canary.len) {
        v[n].name = "canary";
        v[n].kind = "canary";
        v[n].value = (const unsigned char *) b->canary.data;
        v[n].len = b->canary.len;
        n++;
    }

    if (ngx_http_bottle_scrub_cache_get(r->pool, v, n, &s->db, &s->cached,
                                        err, sizeof(err))
        != NGX_OK)
    {
        ngx_bottle_log(NGX_LOG_ERR, r->connection->log,
                       "bottle dlp: bottle=\"%s\" host=\"%V\" "
                       "rule=held_scrub refused: %s",
                       b->id.data, &ctx->target.host, err);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* every response header value, and the Content-Type nginx keeps apart */

static ngx_int_t
ngx_http_bottle_scrub_headers(ngx_http_bottle_scrub_t *s)
{
    u_char              *type;
    ngx_uint_t           i;
    ngx_list_part_t     *part;
    ngx_table_elt_t     *h;
    ngx_http_request_t  *r;

    r = s->r;

    for (part = &r->headers_out.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash == 0) {
                continue;
            }

            if (ngx_http_bottle_scrub_value(s, &h[i].value) != NGX_OK) {
                return NGX_ERROR;
            }
        }
    }

    if (r->headers_out.content_type.len) {
        type = r->headers_out.content_type.data;

        if (ngx_http_bottle_scrub_value(s, &r->headers_out.content_type)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (r->headers_out.content_type.data != type) {
            /* changed: nginx's view of the type (before any ';') goes */
            r->headers_out.content_type_lowcase = NULL;
            r->headers_out.content_type_len = r->headers_out.content_type.len;
            r->headers_out.content_type_hash = 0;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_bottle_scrub_value(ngx_http_bottle_scrub_t *s, ngx_str_t *value)
{
    s->hlen = 0;

    if (bottle_scrub_feed(s->scrub, value->data, value->len)
        != BOTTLE_SCRUB_OK
        || bottle_scrub_finish(s->scrub) != BOTTLE_SCRUB_OK
        || s->hfailed)
    {
        return NGX_ERROR;
    }

    if (s->hlen != value->len
        || ngx_memcmp(s->hbuf, value->data, s->hlen) != 0)
    {
        value->data = ngx_pnalloc(s->r->pool, s->hlen);
        if (value->data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(value->data, s->hbuf, s->hlen);
        value->len = s->hlen;
    }

    return NGX_OK;
}


static int
ngx_http_bottle_scrub_hsink(void *arg, const unsigned char *p, size_t len)
{
    u_char                   *nb;
    size_t                    cap;
    ngx_http_bottle_scrub_t  *s = arg;

    if (s->hlen + len > s->hcap) {
        cap = ngx_max(2 * s->hcap, s->hlen + len + 256);
        nb = ngx_pnalloc(s->r->pool, cap);
        if (nb == NULL) {
            s->hfailed = 1;
            return 1;
        }

        if (s->hlen) {
            ngx_memcpy(nb, s->hbuf, s->hlen);
        }

        s->hbuf = nb;
        s->hcap = cap;
    }

    ngx_memcpy(s->hbuf + s->hlen, p, len);
    s->hlen += len;

    return 0;
}


/* what was found since the last collect, as found where */

static void
ngx_http_bottle_scrub_collect(ngx_http_bottle_scrub_t *s, unsigned where)
{
    size_t    i;
    unsigned  f;

    for (i = 0; i < bottle_scrub_count(s->db); i++) {
        f = bottle_scrub_found(s->scrub, i);
        if (f) {
            s->forms[i] |= f;
            s->where[i] |= where;
        }
    }

    bottle_scrub_clear(s->scrub);
}


static ngx_int_t
ngx_http_bottle_scrub_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    int                       rc;
    ngx_int_t                 nrc;
    ngx_buf_t                *b, *last;
    ngx_chain_t              *cl;
    ngx_uint_t                flush, last_buf;
    ngx_http_bottle_ctx_t    *ctx;
    ngx_http_bottle_scrub_t  *s;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);

    if (ctx == NULL || ctx->scrub == NULL || r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    s = ctx->scrub;

    if (!s->body || s->done) {
        return ngx_http_next_body_filter(r, in);
    }

    flush = 0;
    last_buf = 0;

    for (cl = in; cl; cl = cl->next) {
        b = cl->buf;

        if (ngx_buf_in_memory(b) && b->last > b->pos) {
            if (s->decoder) {
                rc = bottle_decoder_feed(s->decoder, b->pos, b->last - b->pos);

            } else {
                rc = ngx_http_bottle_scrub_feed(s, b->pos, b->last - b->pos);
            }

            if (rc != 0) {
                ngx_bottle_log(NGX_LOG_ERR, r->connection->log,
                               "bottle dlp: bottle=\"%s\" host=\"%V\" "
                               "rule=held_scrub the response is cut: %s",
                               ctx->verdict.bottle->id.data,
                               &ctx->target.host,
                               s->decoder ? bottle_coding_strerror(rc)
                                          : "the scrub failed");
                s->done = 1;
                return NGX_ERROR;
            }

        } else if (!ngx_buf_special(b) && ngx_buf_size(b)) {
            /* filter_need_in_memory: not expected */
            s->done = 1;
            return NGX_ERROR;
        }

        b->pos = b->last;

        if (b->file) {
            b->file_pos = b->file_last;
        }

        flush |= b->flush;

        if (b->last_buf) {
            last_buf = 1;
        }
    }

    if (last_buf) {
        if (s->decoder
            && bottle_decoder_finish(s->decoder) != BOTTLE_CODING_OK)
        {
            ngx_bottle_log(NGX_LOG_ERR, r->connection->log,
                           "bottle dlp: bottle=\"%s\" host=\"%V\" "
                           "rule=held_scrub the response is cut: it ends "
                           "before its end", ctx->verdict.bottle->id.data,
                           &ctx->target.host);
            s->done = 1;
            return NGX_ERROR;
        }

        s->done = 1;

        if (bottle_scrub_finish(s->scrub) != BOTTLE_SCRUB_OK) {
            return NGX_ERROR;
        }

        ngx_http_bottle_scrub_collect(s, NGX_HTTP_BOTTLE_SCRUB_BODY);
        ngx_http_bottle_scrub_report(s);
    }

    if (flush || last_buf) {
        cl = ngx_chain_get_free_buf(r->pool, &s->free);
        if (cl == NULL) {
            return NGX_ERROR;
        }

        last = cl->buf;
        ngx_memzero(last, sizeof(ngx_buf_t));
        last->tag = (ngx_buf_tag_t) &ngx_http_bottle_scrub_body_filter;
        last->flush = flush;
        last->last_buf = last_buf;

        *s->last_out = cl;
        s->last_out = &cl->next;
    }

    s->cur = NULL;

    if (s->out == NULL && in != NULL && s->busy == NULL) {
        /* all held back: nothing to send yet */
        return NGX_OK;
    }

    nrc = ngx_http_next_body_filter(r, s->out);

    ngx_chain_update_chains(r->pool, &s->free, &s->busy, &s->out,
                            (ngx_buf_tag_t) &ngx_http_bottle_scrub_body_filter);
    s->last_out = &s->out;

    return nrc;
}


/* decoded body bytes: into the scrub (which sends on to bsink) */

static int
ngx_http_bottle_scrub_feed(void *arg, const unsigned char *p, size_t len)
{
    ngx_http_bottle_scrub_t  *s = arg;

    return bottle_scrub_feed(s->scrub, p, len) != BOTTLE_SCRUB_OK;
}


/* scrubbed body bytes: into buffers out, reused once sent */

static int
ngx_http_bottle_scrub_bsink(void *arg, const unsigned char *p, size_t len)
{
    size_t                    n;
    ngx_buf_t                *b;
    ngx_chain_t              *cl;
    ngx_http_bottle_scrub_t  *s = arg;

    while (len) {
        b = s->cur;

        if (b == NULL || b->last == b->end) {
            cl = ngx_chain_get_free_buf(s->r->pool, &s->free);
            if (cl == NULL) {
                return 1;
            }

            b = cl->buf;

            if (b->start == NULL
                || b->tag != (ngx_buf_tag_t) &ngx_http_bottle_scrub_body_filter
                || (size_t) (b->end - b->start) < NGX_HTTP_BOTTLE_SCRUB_BUF)
            {
                ngx_memzero(b, sizeof(ngx_buf_t));
                b->start = ngx_palloc(s->r->pool, NGX_HTTP_BOTTLE_SCRUB_BUF);
                if (b->start == NULL) {
                    return 1;
                }
                b->end = b->start + NGX_HTTP_BOTTLE_SCRUB_BUF;

            } else {
                b->flush = 0;
                b->last_buf = 0;
            }

            b->pos = b->start;
            b->last = b->start;
            b->temporary = 1;
            b->tag = (ngx_buf_tag_t) &ngx_http_bottle_scrub_body_filter;

            *s->last_out = cl;
            s->last_out = &cl->next;
            s->cur = b;
        }

        n = ngx_min(len, (size_t) (b->end - b->last));
        b->last = ngx_cpymem(b->last, p, n);
        p += n;
        len -= n;
    }

    return 0;
}


/* the log line and the journal event, once per response that had any */

static void
ngx_http_bottle_scrub_report(ngx_http_bottle_scrub_t *s)
{
    size_t                  i, n, nw, nf;
    u_char                 *p, *last;
    unsigned                where, forms, f;
    const char             *held[BOTTLE_SCRUB_VALUES];
    const char             *kinds[BOTTLE_SCRUB_VALUES];
    const char             *wl[2], *fl[8];
    u_char                  line[1024];
    ngx_http_bottle_ctx_t  *ctx;

    if (s->reported) {
        return;
    }

    s->reported = 1;
    ctx = s->ctx;
    where = 0;
    forms = 0;
    n = 0;

    for (i = 0; i < bottle_scrub_count(s->db); i++) {
        if (s->forms[i] == 0) {
            continue;
        }

        held[n] = bottle_scrub_name(s->db, i);
        kinds[n] = bottle_scrub_kind(s->db, i);
        n++;
        where |= s->where[i];
        forms |= s->forms[i];
    }

    if (n == 0) {
        return;
    }

    nw = 0;
    if (where & NGX_HTTP_BOTTLE_SCRUB_HEADER) {
        wl[nw++] = "header";
    }
    if (where & NGX_HTTP_BOTTLE_SCRUB_BODY) {
        wl[nw++] = "body";
    }

    nf = 0;
    for (f = BOTTLE_SCRUB_F_PLAIN; f <= BOTTLE_SCRUB_F_URL; f <<= 1) {
        if (forms & f) {
            fl[nf++] = bottle_scrub_form_name(f);
        }
    }

    p = line;
    last = line + sizeof(line) - 1;

    for (i = 0; i < n; i++) {
        p = ngx_slprintf(p, last, "%s%s", i ? "," : "", held[i]);
    }
    p = ngx_slprintf(p, last, "\" location=\"");
    for (i = 0; i < nw; i++) {
        p = ngx_slprintf(p, last, "%s%s", i ? "," : "", wl[i]);
    }
    p = ngx_slprintf(p, last, "\" encoding=\"");
    for (i = 0; i < nf; i++) {
        p = ngx_slprintf(p, last, "%s%s", i ? "," : "", fl[i]);
    }
    *p = '\0';

    ngx_bottle_log(NGX_LOG_WARN, s->r->connection->log,
                   "bottle dlp: bottle=\"%s\" host=\"%V\" "
                   "detector=held_scrub held=\"%s\" action=scrubbed",
                   ctx->verdict.bottle->id.data, &ctx->target.host, line);

    ngx_bottle_audit_reflected(ctx->verdict.bottle, &ctx->target.host,
                               &ctx->verdict.correlation, held, kinds, n,
                               wl, nw, fl, nf);
}


static void
ngx_http_bottle_scrub_cleanup(void *data)
{
    ngx_http_bottle_scrub_t  *s = data;

    /* a response cut short: what was scrubbed is still reported */
    if (s->scrub && s->db && !s->reported) {
        ngx_http_bottle_scrub_collect(s, NGX_HTTP_BOTTLE_SCRUB_BODY);
        ngx_http_bottle_scrub_report(s);
    }

    if (s->decoder) {
        bottle_decoder_destroy(s->decoder);
    }

    bottle_scrub_destroy(s->scrub);

    if (s->db) {
        ngx_http_bottle_scrub_cache_put(s->db, s->cached);
    }
}
