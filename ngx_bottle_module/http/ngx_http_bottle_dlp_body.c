
/*
 * Outbound DLP: the request body.  It is read whole before this runs; it
 * is fed to the scan in chunks, from memory or the temporary file, through
 * a decoder when it has a Content-Encoding (gzip, deflate; one that cannot
 * be decoded, or scanned whole, is refused, never forwarded unscanned).
 *
 * A compressed body is decoded once: the decoded bytes are kept for the
 * hash and the redaction of a finding, and its gzip header fields (file
 * name, comment, extra field) are scanned as a field of their own.  Its
 * decoded size is bounded by bottle_dlp_decoded_max and by
 * bottle_dlp_decoded_ratio times its size as sent.  A compressed or large
 * body is decoded and scanned in a thread of bottle_dlp_thread_pool, so
 * that one agent's body does not hold up the worker's other requests; a
 * redacted one is encoded again there too.  The thread touches no pool
 * and logs nothing itself (only ngx_read_file() on a failed read), only
 * the body, the decoder, the scan and buffers allocated for it; nginx
 * keeps the request (r->main->blocked) until the thread is done.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle_dlp.h"


static ngx_int_t ngx_http_bottle_dlp_coding(ngx_http_bottle_dlp_t *d);
static void ngx_http_bottle_dlp_limit(ngx_http_bottle_dlp_t *d);
static ngx_int_t ngx_http_bottle_dlp_prepare(ngx_http_bottle_dlp_t *d);
static void ngx_http_bottle_dlp_work(ngx_http_bottle_dlp_t *d);
static int ngx_http_bottle_dlp_bufs(ngx_http_bottle_dlp_t *d);
static int ngx_http_bottle_dlp_feed(ngx_http_bottle_dlp_t *d, u_char *p,
    size_t len);
static int ngx_http_bottle_dlp_sink(void *arg, const unsigned char *p,
    size_t len);
static int ngx_http_bottle_dlp_meta(void *arg, int part,
    const unsigned char *p, size_t len);
static void ngx_http_bottle_dlp_free_copy(void *data);
static void ngx_http_bottle_dlp_encode(ngx_http_bottle_dlp_t *d);
static ngx_int_t ngx_http_bottle_dlp_encoded(ngx_http_bottle_dlp_t *d);
static void ngx_http_bottle_dlp_encode_resume(ngx_http_request_t *r);
#if (NGX_THREADS)
static ngx_int_t ngx_http_bottle_dlp_post(ngx_http_bottle_dlp_t *d,
    ngx_thread_pool_t *tp, ngx_http_bottle_dlp_work_pt work,
    ngx_http_event_handler_pt resume);
static void ngx_http_bottle_dlp_thread(void *data, ngx_log_t *log);
static void ngx_http_bottle_dlp_thread_done(ngx_event_t *ev);
static void ngx_http_bottle_dlp_guard(ngx_event_t *ev);
#endif
static ngx_int_t ngx_http_bottle_dlp_raw_body(ngx_http_bottle_dlp_t *d,
    ngx_str_t *raw);
static void *ngx_http_bottle_pool_alloc(void *pool, size_t size);
static void ngx_http_bottle_pool_free(void *pool, void *p);


/*
 * The body scanned: NGX_OK, NGX_DECLINED (refused), NGX_AGAIN (in a
 * thread: ngx_http_bottle_dlp_resume() goes on), NGX_ERROR.
 */

ngx_int_t
ngx_http_bottle_dlp_body(ngx_http_bottle_dlp_t *d)
{
    ngx_int_t                    rc;
    ngx_chain_t                 *cl;
    ngx_http_bottle_loc_conf_t  *blcf;

    if (d->r->request_body == NULL || d->r->request_body->bufs == NULL) {
        return NGX_OK;
    }

    for (cl = d->r->request_body->bufs; cl; cl = cl->next) {
        d->raw += ngx_buf_size(cl->buf);
    }

    rc = ngx_http_bottle_dlp_coding(d);
    if (rc != NGX_OK) {
        return rc;
    }

    cl = d->r->request_body->bufs;

    if (d->ncodings == 0 && cl->next == NULL && !cl->buf->in_file) {
        d->body.data = cl->buf->pos;
        d->body.len = cl->buf->last - cl->buf->pos;
    }

    rc = ngx_http_bottle_dlp_prepare(d);
    if (rc != NGX_OK) {
        bottle_decoder_destroy(d->decoder);
        d->decoder = NULL;
        return rc;
    }

    blcf = ngx_http_get_module_loc_conf(d->r, ngx_http_bottle_module);

#if (NGX_THREADS)

    /*
     * A plain body up to NGX_HTTP_BOTTLE_DLP_INLINE scans in a millisecond
     * or two (docs/dlp.md, Performance): here, without the handover.  A
     * compressed one always goes: what it decodes to is not known before.
     */

    if (blcf->dlp_thread_pool
        && (d->ncodings || d->raw > NGX_HTTP_BOTTLE_DLP_INLINE))
    {
        return ngx_http_bottle_dlp_post(d, blcf->dlp_thread_pool,
                                        ngx_http_bottle_dlp_work,
                                        ngx_http_bottle_dlp_resume);
    }

#else
    (void) blcf;
#endif

    ngx_http_bottle_dlp_work(d);

    return ngx_http_bottle_dlp_body_done(d);
}


/* the body's Content-Encoding: a decoder for it, or a refusal */

static ngx_int_t
ngx_http_bottle_dlp_coding(ngx_http_bottle_dlp_t *d)
{
    int               rc;
    ngx_uint_t        count;
    ngx_table_elt_t  *h;

    h = ngx_http_bottle_find_header(d->r, "content-encoding",
                                    sizeof("content-encoding") - 1, &count);
    if (h == NULL) {
        return NGX_OK;
    }

    if (count > 1) {
        return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                    NGX_BOTTLE_RULE_ENCODING,
                                    "more than one Content-Encoding header");
    }

    if (bottle_coding_parse((char *) h->value.data, h->value.len, d->codings,
                            &d->ncodings)
        != BOTTLE_CODING_OK)
    {
        return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                    NGX_BOTTLE_RULE_ENCODING,
                                    "a request body with Content-Encoding "
                                    "\"%V\" cannot be decoded for scanning "
                                    "(gzip and deflate can)", &h->value);
    }

    if (d->ncodings == 0) {
        return NGX_OK;
    }

    ngx_http_bottle_dlp_limit(d);

    /* malloc(): the decoder may run in a thread, where no pool is used */

    if (bottle_decoder_create(&d->decoder, d->codings, d->ncodings, d->limit,
                              NULL, ngx_http_bottle_dlp_sink, d)
        != BOTTLE_CODING_OK)
    {
        return NGX_ERROR;
    }

    rc = bottle_decoder_meta(d->decoder, ngx_http_bottle_dlp_meta);

    if (rc != BOTTLE_CODING_OK) {
        bottle_decoder_destroy(d->decoder);
        d->decoder = NULL;

        if (rc == BOTTLE_CODING_ENOMEM) {
            return NGX_ERROR;
        }

        return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                    NGX_BOTTLE_RULE_ENCODING,
                                    "the request body with Content-Encoding "
                                    "\"%V\" is refused: %s", &h->value,
                                    bottle_coding_strerror(rc));
    }

    return NGX_OK;
}


/*
 * Each decoding stage's output: at most bottle_dlp_decoded_max, at most
 * bottle_dlp_decoded_ratio times the body as sent, and at most
 * client_max_body_size, whichever is least (d->limit_by says which).
 */

static void
ngx_http_bottle_dlp_limit(ngx_http_bottle_dlp_t *d)
{
    uint64_t                     raw;
    ngx_http_core_loc_conf_t    *clcf;
    ngx_http_bottle_loc_conf_t  *blcf;

    clcf = ngx_http_get_module_loc_conf(d->r, ngx_http_core_module);
    blcf = ngx_http_get_module_loc_conf(d->r, ngx_http_bottle_module);

    d->limit = clcf->client_max_body_size ? clcf->client_max_body_size
                                          : NGX_MAX_OFF_T_VALUE;
    d->limit_by = NGX_HTTP_BOTTLE_LIMIT_BODY;

    if (blcf->dlp_decoded_max && blcf->dlp_decoded_max < d->limit) {
        d->limit = blcf->dlp_decoded_max;
        d->limit_by = NGX_HTTP_BOTTLE_LIMIT_MAX;
    }

    raw = d->raw;

    if (blcf->dlp_decoded_ratio > 0
        && raw <= UINT64_MAX / (uint64_t) blcf->dlp_decoded_ratio
        && raw * blcf->dlp_decoded_ratio < d->limit)
    {
        d->limit = raw * blcf->dlp_decoded_ratio;
        d->limit_by = NGX_HTTP_BOTTLE_LIMIT_RATIO;
        d->ratio = blcf->dlp_decoded_ratio;
    }
}


/*
 * What the work needs that comes from a pool, allocated here, before it
 * may go to a thread: the file chunk, the gzip header fields' buffer, and
 * the cleanup that frees the decoded copy.
 */

static ngx_int_t
ngx_http_bottle_dlp_prepare(ngx_http_bottle_dlp_t *d)
{
    ngx_chain_t         *cl;
    ngx_pool_cleanup_t  *cln;

    for (cl = d->r->request_body->bufs; cl; cl = cl->next) {
        if (cl->buf->in_file) {
            d->chunk = ngx_pnalloc(d->r->pool, NGX_HTTP_BOTTLE_DLP_CHUNK);
            if (d->chunk == NULL) {
                return NGX_ERROR;
            }

            break;
        }
    }

    if (d->ncodings == 0) {
        return NGX_OK;
    }

    d->wrapper.data = ngx_pnalloc(d->r->pool, NGX_HTTP_BOTTLE_DLP_WRAPPER);
    d->fixed.data = ngx_pnalloc(d->r->pool, NGX_HTTP_BOTTLE_DLP_FIXED);
    if (d->wrapper.data == NULL || d->fixed.data == NULL) {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(d->r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_bottle_dlp_free_copy;
    cln->data = d;

    return NGX_OK;
}


static void
ngx_http_bottle_dlp_free_copy(void *data)
{
    ngx_http_bottle_dlp_t  *d = data;

    if (d->copy) {
        ngx_free(d->copy);
        d->copy = NULL;
    }

    if (d->enc) {
        ngx_free(d->enc);
        d->enc = NULL;
    }
}


/*
 * Decode and scan the whole body; the outcome in d->status (a
 * BOTTLE_CODING_* code; ESINK for a scan or read failure).  No pool: this
 * may run in a thread.
 */

static void
ngx_http_bottle_dlp_work(ngx_http_bottle_dlp_t *d)
{
    int  rc;

    rc = bottle_scan_begin(d->scan, NGX_HTTP_BOTTLE_F_BODY) == BOTTLE_SCAN_OK
         ? ngx_http_bottle_dlp_bufs(d) : BOTTLE_CODING_ESINK;

    if (rc == BOTTLE_CODING_OK && d->decoder) {
        rc = bottle_decoder_finish(d->decoder);
        d->decoded = bottle_decoder_total(d->decoder);
    }

    if (d->decoder) {
        bottle_decoder_destroy(d->decoder);
        d->decoder = NULL;
    }

    if (rc == BOTTLE_CODING_OK && bottle_scan_end(d->scan) != BOTTLE_SCAN_OK) {
        rc = BOTTLE_CODING_ESINK;
    }

    /* what the decoded view leaves out, as fields of their own */

    if (rc == BOTTLE_CODING_OK
        && ((d->wrapper.len
             && bottle_scan_field(d->scan, NGX_HTTP_BOTTLE_F_WRAPPER,
                                  d->wrapper.data, d->wrapper.len)
                != BOTTLE_SCAN_OK)
            || (d->fixed.len
                && bottle_scan_field(d->scan, NGX_HTTP_BOTTLE_F_FIXED,
                                     d->fixed.data, d->fixed.len)
                   != BOTTLE_SCAN_OK)))
    {
        rc = BOTTLE_CODING_ESINK;
    }

    d->status = rc;
}


static int
ngx_http_bottle_dlp_bufs(ngx_http_bottle_dlp_t *d)
{
    int           rc;
    off_t         off;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    for (cl = d->r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (!b->in_file) {
            if (b->last == b->pos) {
                continue;
            }

            rc = ngx_http_bottle_dlp_feed(d, b->pos, b->last - b->pos);
            if (rc != BOTTLE_CODING_OK) {
                return rc;
            }

            continue;
        }

        for (off = b->file_pos; off < b->file_last; off += n) {
            n = ngx_read_file(b->file, d->chunk,
                              ngx_min(NGX_HTTP_BOTTLE_DLP_CHUNK,
                                      b->file_last - off),
                              off);
            if (n <= 0) {
                return BOTTLE_CODING_ESINK;
            }

            rc = ngx_http_bottle_dlp_feed(d, d->chunk, n);
            if (rc != BOTTLE_CODING_OK) {
                return rc;
            }
        }
    }

    return BOTTLE_CODING_OK;
}


static int
ngx_http_bottle_dlp_feed(ngx_http_bottle_dlp_t *d, u_char *p, size_t len)
{
    if (d->decoder) {
        return bottle_decoder_feed(d->decoder, p, len);
    }

    return bottle_scan_feed(d->scan, p, len) == BOTTLE_SCAN_OK
           ? BOTTLE_CODING_OK : BOTTLE_CODING_ESINK;
}


/* decoded bytes: scanned, and kept for a finding's hash and redaction */

static int
ngx_http_bottle_dlp_sink(void *arg, const unsigned char *p, size_t len)
{
    ngx_http_bottle_dlp_t *d = arg;

    size_t   cap;
    u_char  *copy;

    if (bottle_scan_feed(d->scan, p, len) != BOTTLE_SCAN_OK) {
        return 1;
    }

    if (len > d->copy_cap - d->copy_len) {

        /* the decoder's limit bounds the copy: it doubles up to it */

        cap = d->copy_cap ? d->copy_cap : NGX_HTTP_BOTTLE_DLP_CHUNK;

        while (cap - d->copy_len < len) {
            cap *= 2;
        }

        if (cap > d->limit && d->copy_len + len <= d->limit) {
            cap = d->limit;
        }

        copy = realloc(d->copy, cap);
        if (copy == NULL) {
            return 1;
        }

        d->copy = copy;
        d->copy_cap = cap;
    }

    ngx_memcpy(d->copy + d->copy_len, p, len);
    d->copy_len += len;

    return 0;
}


/*
 * A gzip header's part: the fixed bytes of every member one after another
 * (a secret cut into 6-byte pieces over members comes whole), the fields
 * into the wrapper buffer, apart.
 */

static int
ngx_http_bottle_dlp_meta(void *arg, int part, const unsigned char *p,
    size_t len)
{
    ngx_http_bottle_dlp_t *d = arg;

    if (part == BOTTLE_CODING_META_FIXED) {
        if (len > NGX_HTTP_BOTTLE_DLP_FIXED - d->fixed.len) {
            d->wrapper_over = 1;
            return 1;
        }

        ngx_memcpy(d->fixed.data + d->fixed.len, p, len);
        d->fixed.len += len;

        return 0;
    }

    if (len >= NGX_HTTP_BOTTLE_DLP_WRAPPER - d->wrapper.len) {
        d->wrapper_over = 1;
        return 1;
    }

    ngx_memcpy(d->wrapper.data + d->wrapper.len, p, len);
    d->wrapper.len += len;
    d->wrapper.data[d->wrapper.len++] = '\n';

    return 0;
}


/* the work's outcome, back in the event loop: NGX_OK or a refusal */

ngx_int_t
ngx_http_bottle_dlp_body_done(ngx_http_bottle_dlp_t *d)
{
    const char  *name, *by;

    if (d->status == BOTTLE_CODING_OK) {
        if (d->ncodings) {
            d->body.data = d->copy ? d->copy : (u_char *) "";
            d->body.len = d->copy_len;
        }

        return NGX_OK;
    }

    name = d->ncodings ? bottle_coding_name(d->codings[d->ncodings - 1])
                       : "identity";

    if (d->status == BOTTLE_CODING_ESINK && d->wrapper_over) {
        return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                    NGX_BOTTLE_RULE_ENCODING,
                                    "the %s request body's gzip headers "
                                    "are longer than the scanner reads "
                                    "(%uz bytes of fields, %uz members)",
                                    name,
                                    (size_t) NGX_HTTP_BOTTLE_DLP_WRAPPER,
                                    (size_t) NGX_HTTP_BOTTLE_DLP_FIXED / 6);
    }

    if (d->status == BOTTLE_CODING_ESINK
        || d->status == BOTTLE_CODING_ENOMEM)
    {
        /* a body that was not scanned whole is not forwarded */

        return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                    NGX_BOTTLE_RULE_INTERNAL,
                                    "the request body could not be scanned");
    }

    if (d->status == BOTTLE_CODING_ELIMIT) {

        if (d->limit_by == NGX_HTTP_BOTTLE_LIMIT_RATIO) {
            return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                        NGX_BOTTLE_RULE_TOO_LARGE,
                                        "the %s request body decodes to "
                                        "more than the size limit of %uL "
                                        "bytes, %i times its %O bytes "
                                        "(bottle_dlp_decoded_ratio)", name,
                                        d->limit, d->ratio, d->raw);
        }

        by = d->limit_by == NGX_HTTP_BOTTLE_LIMIT_MAX
             ? "bottle_dlp_decoded_max" : "client_max_body_size";

        return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                    NGX_BOTTLE_RULE_TOO_LARGE,
                                    "the %s request body decodes to more "
                                    "than the size limit of %uL bytes (%s)",
                                    name, d->limit, by);
    }

    /* what cannot be decoded cannot be scanned: never forwarded */

    return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                NGX_BOTTLE_RULE_ENCODING,
                                "the %s request body cannot be decoded for "
                                "scanning: %s", name,
                                bottle_coding_strerror(d->status));
}


#if (NGX_THREADS)

static ngx_int_t
ngx_http_bottle_dlp_post(ngx_http_bottle_dlp_t *d, ngx_thread_pool_t *tp,
    ngx_http_bottle_dlp_work_pt work, ngx_http_event_handler_pt resume)
{
    ngx_thread_task_t  *task;

    task = ngx_thread_task_alloc(d->r->pool, sizeof(ngx_http_bottle_dlp_t *));
    if (task == NULL) {
        bottle_decoder_destroy(d->decoder);
        d->decoder = NULL;
        return NGX_ERROR;
    }

    *(ngx_http_bottle_dlp_t **) task->ctx = d;
    task->handler = ngx_http_bottle_dlp_thread;
    task->event.handler = ngx_http_bottle_dlp_thread_done;
    task->event.data = d;
    d->work = work;

    if (ngx_thread_task_post(tp, task) != NGX_OK) {

        /* the pool's queue is full: refused, not scanned in the loop */

        bottle_decoder_destroy(d->decoder);
        d->decoder = NULL;

        return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                    NGX_BOTTLE_RULE_INTERNAL,
                                    "the request body could not be scanned: "
                                    "the DLP thread pool is overloaded");
    }

    /* the request waits: nginx does not free it while it is blocked */

    d->running = 1;
    d->r->main->blocked++;
    d->r->aio = 1;
    d->r->write_event_handler = resume;

    /*
     * A worker shutting down gracefully leaves once no timer is left: one
     * that comes round while the thread works keeps it for the request.
     */

    d->guard.handler = ngx_http_bottle_dlp_guard;
    d->guard.data = d;
    d->guard.log = d->r->connection->log;
    ngx_add_timer(&d->guard, NGX_HTTP_BOTTLE_DLP_GUARD);

    return NGX_AGAIN;
}


static void
ngx_http_bottle_dlp_guard(ngx_event_t *ev)
{
    ngx_http_bottle_dlp_t *d = ev->data;

    if (d->running) {
        ngx_add_timer(&d->guard, NGX_HTTP_BOTTLE_DLP_GUARD);
    }
}


static void
ngx_http_bottle_dlp_thread(void *data, ngx_log_t *log)
{
    ngx_http_bottle_dlp_t *d = *(ngx_http_bottle_dlp_t **) data;

    d->work(d);
}


static void
ngx_http_bottle_dlp_thread_done(ngx_event_t *ev)
{
    ngx_http_bottle_dlp_t *d = ev->data;

    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = d->r;
    c = r->connection;

    ngx_http_set_log_request(c->log, r);

    d->running = 0;
    r->main->blocked--;
    r->aio = 0;

    if (d->guard.timer_set) {
        ngx_del_timer(&d->guard);
    }

    /* the resume handler, or a finalizer if it was terminated meanwhile */

    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}

#endif


/*
 * The body whole in memory, for the hash of a finding in it and for its
 * redaction: a decoded body is already (ngx_http_bottle_dlp_body_done()), a
 * plain one in several buffers or a file is loaded once, here.
 */

ngx_int_t
ngx_http_bottle_dlp_body_load(ngx_http_bottle_dlp_t *d)
{
    if (d->body.data) {
        return NGX_OK;
    }

    if (d->ncodings) {
        return NGX_ERROR;
    }

    return ngx_http_bottle_dlp_raw_body(d, &d->body);
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
 * came (in a thread, as it was decoded: NGX_AGAIN), and its new length
 * where the proxy takes the Content-Length from.
 */

ngx_int_t
ngx_http_bottle_dlp_redact_body(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, size_t n)
{
    ngx_http_bottle_loc_conf_t  *blcf;

    if (ngx_http_bottle_dlp_body_load(d) != NGX_OK) {
        return NGX_ERROR;
    }

    d->redacted = d->body;

    if (ngx_http_bottle_dlp_redact_str(d, &d->redacted,
                                       NGX_HTTP_BOTTLE_F_BODY, m, n)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (d->ncodings == 0) {
        d->status = BOTTLE_CODING_OK;
        return ngx_http_bottle_dlp_encoded(d);
    }

    blcf = ngx_http_get_module_loc_conf(d->r, ngx_http_bottle_module);

#if (NGX_THREADS)

    if (blcf->dlp_thread_pool) {
        return ngx_http_bottle_dlp_post(d, blcf->dlp_thread_pool,
                                        ngx_http_bottle_dlp_encode,
                                        ngx_http_bottle_dlp_encode_resume);
    }

#else
    (void) blcf;
#endif

    ngx_http_bottle_dlp_encode(d);

    return ngx_http_bottle_dlp_encoded(d);
}


/* malloc(), no pool: this may run in a thread (freed with the request) */

static void
ngx_http_bottle_dlp_encode(ngx_http_bottle_dlp_t *d)
{
    d->status = bottle_coding_encode(d->codings, d->ncodings,
                                     d->redacted.data, d->redacted.len, NULL,
                                     &d->enc, &d->enc_len);
}


static void
ngx_http_bottle_dlp_encode_resume(ngx_http_request_t *r)
{
    ngx_http_bottle_ctx_t  *ctx;
    ngx_http_bottle_dlp_t  *d;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);
    d = ctx->dlp;

    if (d->running) {
        return;
    }

    r->write_event_handler = ngx_http_core_run_phases;

    ctx->resume(r, ctx, ngx_http_bottle_dlp_encoded(d));
}


/* the redacted body, encoded or not, becomes the request's */

static ngx_int_t
ngx_http_bottle_dlp_encoded(ngx_http_bottle_dlp_t *d)
{
    ngx_str_t     body;
    ngx_buf_t    *nb;
    ngx_chain_t  *cl;

    if (d->status != BOTTLE_CODING_OK) {
        return NGX_ERROR;
    }

    body = d->redacted;

    if (d->ncodings) {
        body.data = d->enc;
        body.len = d->enc_len;
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


/* a field's value with the findings m[0..n) redacted, in the pool */

ngx_int_t
ngx_http_bottle_dlp_redact_str(ngx_http_bottle_dlp_t *d, ngx_str_t *s,
    int field, const bottle_scan_match_t *m, size_t n)
{
    u_char   *p;
    ssize_t   len;

    len = bottle_scan_redact_len(s->len, 0, m, n, field,
                                 NGX_HTTP_BOTTLE_BLOCKING, 0);
    if (len < 0) {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(d->r->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    len = bottle_scan_redact(p, len, s->data, s->len, 0, m, n, field,
                             NGX_HTTP_BOTTLE_BLOCKING, 0);
    if (len < 0) {
        return NGX_ERROR;
    }

    s->data = p;
    s->len = len;

    return NGX_OK;
}
