
/*
 * Outbound DLP: what the request carries, before any credential is touched
 * and before any upstream contact (gateway.txt "Outbound DLP").  Every part
 * of the request is a field of one scan (lib/bottle_scan.c): the
 * hostname, the path, the query, each header and the body, so a secret
 * spread over several fields is seen too.
 *
 * Always, whatever the route says: the bottle's canary (403) and line
 * breaks in headers (403).  The route's detectors (token_patterns and
 * known_secrets by default, entropy when listed, warning only) then meet
 * its on_match: block (403), supervise (held for the operator,
 * ngx_http_bottle_held.c, unless the value is on the (bottle, host)
 * safelist an approval fills; with no operator channel wired it blocks, as
 * the spec says for such a bottle), or redact (each
 * match replaced by a marker, Content-Length fixed; a match that cannot be
 * removed, as in the hostname, is refused).  The agent's value of the
 * header the route injects is only looked at for the canary: it is
 * replaced anyway.  A body with a Content-Encoding (gzip, deflate) is
 * scanned decoded, with its gzip header fields, and encoded again after a
 * redaction; one that cannot be decoded, or not within its limits, is
 * refused (ngx_http_bottle_dlp_body.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle_dlp.h"
#include "bottle_record.h"


static ngx_int_t ngx_http_bottle_dlp_scan(ngx_http_bottle_dlp_t *d);
static ngx_int_t ngx_http_bottle_dlp_headers(ngx_http_bottle_dlp_t *d);
static ngx_int_t ngx_http_bottle_dlp_decide(ngx_http_bottle_dlp_t *d);
static ngx_int_t ngx_http_bottle_dlp_redact(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, size_t n);
static ngx_str_t *ngx_http_bottle_dlp_field_value(ngx_http_bottle_dlp_t *d,
    int field);
static u_char *ngx_http_bottle_dlp_where(ngx_http_bottle_dlp_t *d,
    int field, u_char *buf, size_t size);
static void ngx_http_bottle_dlp_audit(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, const char *action);
static void ngx_http_bottle_dlp_log(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, const char *action);
static char *ngx_http_bottle_dlp_hash(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, char *buf);
static ngx_int_t ngx_http_bottle_dlp_digest(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, u_char *md);
static ngx_uint_t ngx_http_bottle_dlp_safelisted(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m);
static ngx_uint_t ngx_http_bottle_dlp_redactable(int field);
static ngx_uint_t ngx_http_bottle_url_valued(ngx_str_t *name);
static ngx_uint_t ngx_http_bottle_crlf(u_char *p, size_t len,
    ngx_uint_t encoded);
static void ngx_http_bottle_dlp_cleanup(void *data);
static void ngx_http_bottle_dlp_secrets(ngx_bottle_waiter_t *w, ngx_int_t rc);
static void ngx_http_bottle_dlp_secrets_resume(ngx_http_request_t *r);


ngx_int_t
ngx_http_bottle_dlp(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    unsigned                 detectors;
    ngx_int_t                rc;
    ngx_pool_cleanup_t      *cln;
    const bottle_route_t    *route;
    bottle_scan_secrets_t   *sec;
    ngx_http_bottle_dlp_t   *d;

    route = ctx->route;

    /* a store's bottle gets its scanner when a request first needs it */

    ctx->secrets.handler = ngx_http_bottle_dlp_secrets;
    ctx->secrets.data = r;

    rc = ngx_bottle_entry_secrets(ctx->entry, &ctx->secrets, &sec);

    if (rc == NGX_AGAIN) {
        /* nginx does not free a blocked request */
        r->main->blocked++;
        r->write_event_handler = ngx_http_bottle_dlp_secrets_resume;
        return NGX_AGAIN;
    }

    if (rc != NGX_OK) {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_INTERNAL,
                                    "the secret scanner is not available");
    }

    if (route->dlp_off) {
        detectors = 0;

    } else {
        detectors = route->dlp_outbound_set ? route->dlp_outbound
                                            : BOTTLE_DLP_OUTBOUND_DEFAULT;
    }

    /* in the pool: the body's scan may finish in a thread, later */

    d = ngx_pcalloc(r->pool, sizeof(ngx_http_bottle_dlp_t));
    if (d == NULL) {
        return NGX_ERROR;
    }

    d->r = r;
    d->ctx = ctx;
    d->injected = (ngx_uint_t) -1;
    ctx->dlp = d;

    if (ngx_array_init(&d->headers, r->pool, 16, sizeof(ngx_table_elt_t *))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    if (bottle_scan_acquire(&d->scan, sec, detectors) != 0) {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_INTERNAL,
                                    "no scan state could be allocated");
    }

    cln->handler = ngx_http_bottle_dlp_cleanup;
    cln->data = d;

    /* NGX_AGAIN: the body is scanned in a thread, the rest after it */

    rc = ngx_http_bottle_dlp_scan(d);
    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_http_bottle_dlp_decide(d);
}


/* the body's scan came back from its thread: the decision, then the rest */

void
ngx_http_bottle_dlp_resume(ngx_http_request_t *r)
{
    ngx_int_t                rc;
    ngx_http_bottle_ctx_t   *ctx;
    ngx_http_bottle_dlp_t   *d;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);
    d = ctx->dlp;

    if (d->running) {
        /* a write event before the thread is done */
        return;
    }

    r->write_event_handler = ngx_http_core_run_phases;

    rc = ngx_http_bottle_dlp_body_done(d);

    if (rc == NGX_OK) {
        rc = ngx_http_bottle_dlp_decide(d);
    }

    ctx->resume(r, ctx, rc);
}


/* the bottle's scanner is compiled: the step again, then the rest */

static void
ngx_http_bottle_dlp_secrets(ngx_bottle_waiter_t *w, ngx_int_t rc)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = w->data;
    c = r->connection;

    r->main->blocked--;

    ngx_http_set_log_request(c->log, r);

    /* the resume handler, or a finalizer if it was terminated meanwhile */

    r->write_event_handler(r);
    ngx_http_run_posted_requests(c);
}


static void
ngx_http_bottle_dlp_secrets_resume(ngx_http_request_t *r)
{
    ngx_int_t               rc;
    ngx_http_bottle_ctx_t  *ctx;

    ctx = ngx_http_bottle_get_ctx(r);

    r->write_event_handler = ngx_http_core_run_phases;

    rc = ngx_http_bottle_dlp(r, ctx);

    if (rc != NGX_AGAIN) {
        ctx->resume(r, ctx, rc);
    }
}


static void
ngx_http_bottle_dlp_cleanup(void *data)
{
    ngx_http_bottle_dlp_t  *d = data;

    if (d->scan) {
        bottle_scan_release(d->scan);
    }
}


/*
 * The order of the fields is the order of the skeleton view, which runs
 * across fields: the method and the header names first, then the hostname,
 * the path, the query, the header values and the body in a row, so that a
 * secret cut over adjacent parts of the request is still seen whole.
 */

static ngx_int_t
ngx_http_bottle_dlp_scan(ngx_http_bottle_dlp_t *d)
{
    ngx_int_t               rc;
    ngx_uint_t              i;
    ngx_table_elt_t       **hp;
    ngx_http_bottle_ctx_t  *ctx;

    ctx = d->ctx;

    rc = ngx_http_bottle_dlp_headers(d);
    if (rc != NGX_OK) {
        return rc;
    }

    if (bottle_scan_field(d->scan, NGX_HTTP_BOTTLE_F_HOST,
                          ctx->target.host.data, ctx->target.host.len)
        != BOTTLE_SCAN_OK
        || bottle_scan_field(d->scan, NGX_HTTP_BOTTLE_F_PATH,
                             ctx->target.path.data, ctx->target.path.len)
           != BOTTLE_SCAN_OK
        || bottle_scan_field(d->scan, NGX_HTTP_BOTTLE_F_QUERY,
                             ctx->target.args.data, ctx->target.args.len)
           != BOTTLE_SCAN_OK)
    {
        goto failed;
    }

    hp = d->headers.elts;

    for (i = 0; i < d->headers.nelts; i++) {
        if (bottle_scan_field(d->scan, ngx_http_bottle_f_value(i),
                              hp[i]->value.data, hp[i]->value.len)
            != BOTTLE_SCAN_OK)
        {
            goto failed;
        }
    }

    return ngx_http_bottle_dlp_body(d);

failed:

    return ngx_http_bottle_deny(ctx, d->r->pool, NGX_BOTTLE_RULE_INTERNAL,
                                "the secret scan failed");
}


/* line breaks, the array of headers by field, the method and the names */

static ngx_int_t
ngx_http_bottle_dlp_headers(ngx_http_bottle_dlp_t *d)
{
    ngx_uint_t             i;
    ngx_list_part_t       *part;
    ngx_table_elt_t       *h, **hp;
    const bottle_route_t  *route;

    route = d->ctx->route;

    /* the method and a header's name are agent data too: "<canary>: x" */

    if (bottle_scan_field(d->scan, NGX_HTTP_BOTTLE_F_METHOD,
                          d->r->method_name.data, d->r->method_name.len)
        != BOTTLE_SCAN_OK)
    {
        goto failed;
    }

    for (part = &d->r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {

            if (ngx_http_bottle_crlf(h[i].key.data, h[i].key.len, 1)) {
                return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                            NGX_BOTTLE_RULE_CRLF,
                                            "a line break in the name of "
                                            "header %ui",
                                            d->headers.nelts + 1);
            }

            if (ngx_http_bottle_crlf(h[i].value.data, h[i].value.len,
                                     !ngx_http_bottle_url_valued(&h[i].key)))
            {
                return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                            NGX_BOTTLE_RULE_CRLF,
                                            "a line break in the header "
                                            "\"%V\"", &h[i].key);
            }

            hp = ngx_array_push(&d->headers);
            if (hp == NULL) {
                return NGX_ERROR;
            }

            *hp = &h[i];

            if (route->auth_type != BOTTLE_AUTH_NONE
                && h[i].key.len == route->auth_header.len
                && ngx_strncasecmp(h[i].key.data,
                                   (u_char *) route->auth_header.data,
                                   h[i].key.len) == 0)
            {
                d->injected = d->headers.nelts - 1;
            }

            if (bottle_scan_field(d->scan,
                                  ngx_http_bottle_f_name(d->headers.nelts - 1),
                                  h[i].key.data, h[i].key.len)
                != BOTTLE_SCAN_OK)
            {
                goto failed;
            }
        }
    }

    return NGX_OK;

failed:

    return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_INTERNAL,
                                "the secret scan failed");
}


static ngx_int_t
ngx_http_bottle_dlp_decide(ngx_http_bottle_dlp_t *d)
{
    size_t                       i, n, blocking;
    ngx_int_t                    rc;
    u_char                       where[64];
    char                         hash[BOTTLE_RECORD_DIGEST_SIZE];
    u_char                       digest[32];
    const bottle_scan_match_t   *m, *first;
    const bottle_route_t        *route;

    route = d->ctx->route;
    m = bottle_scan_matches(d->scan, &n);
    first = NULL;
    blocking = 0;

    /* a finding in the body: the body whole, for its hash and redaction */

    for (i = 0; i < n; i++) {
        if (m[i].field == NGX_HTTP_BOTTLE_F_BODY) {
            if (ngx_http_bottle_dlp_body_load(d) != NGX_OK) {
                return NGX_ERROR;
            }

            break;
        }
    }

    for (i = 0; i < n; i++) {

        if (m[i].detector == BOTTLE_DETECT_CANARY) {
            ngx_http_bottle_dlp_audit(d, &m[i], "blocked");

            *ngx_http_bottle_dlp_where(d, m[i].field, where,
                                       sizeof(where) - 1) = '\0';

            return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                        NGX_BOTTLE_RULE_CANARY,
                                        "the bottle's canary in the %s",
                                        where);
        }

        if (m[i].detector == BOTTLE_DETECT_ENTROPY) {
            ngx_http_bottle_dlp_log(d, &m[i], "warn");
            continue;
        }

        if (!(NGX_HTTP_BOTTLE_BLOCKING & (1u << m[i].detector))
            || m[i].field == ngx_http_bottle_f_value(d->injected))
        {
            continue;
        }

        if (route->on_match == BOTTLE_ON_MATCH_SUPERVISE
            && ngx_http_bottle_dlp_safelisted(d, &m[i]))
        {
            ngx_http_bottle_dlp_log(d, &m[i], "safelisted");
            continue;
        }

        if (first == NULL) {
            first = &m[i];
        }

        blocking++;
    }

    if (bottle_scan_overflow(d->scan)) {
        return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_DLP,
                                    "more secrets than the scanner keeps");
    }

    if (first == NULL) {
        return NGX_OK;
    }

    *ngx_http_bottle_dlp_where(d, first->field, where, sizeof(where) - 1)
        = '\0';

    if (route->on_match == BOTTLE_ON_MATCH_REDACT) {
        return ngx_http_bottle_dlp_redact(d, m, n);
    }

    ngx_http_bottle_dlp_audit(d, first, "blocked");

    if (route->on_match == BOTTLE_ON_MATCH_SUPERVISE) {

        /*
         * Held for the operator (ngx_http_bottle_held.c), who approves the
         * value for this host: it goes on the safelist and the request is
         * scanned again.  A value the safelist cannot name (cut across
         * fields, or where it cannot be told apart) is refused at once,
         * and so is everything when no operator channel is wired
         * (bottle_supervise off): the spec's "it blocks".
         */

        if (ngx_bottle_supervise_enabled() && first->removable
            && !first->cross_field
            && ngx_http_bottle_dlp_digest(d, first, digest) == NGX_OK)
        {
            rc = ngx_http_bottle_dlp_hold(d, first, where, digest);

            if (rc == NGX_AGAIN) {
                /*
                 * the hold copied what it names: the scan state (~100 KiB
                 * of streams and views) goes back to the bottle's free
                 * list for the wait, which may be minutes; an approval
                 * scans again with a state of its own
                 */
                bottle_scan_release(d->scan);
                d->scan = NULL;
            }

            return rc;
        }

        return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_DLP,
                                    "%s (%s) in the %s, value %s: "
                                    "held for the operator, who is not "
                                    "reachable for this %s, so it is "
                                    "refused",
                                    bottle_scan_detector_name(first->detector),
                                    first->rule, where,
                                    ngx_http_bottle_dlp_hash(d, first, hash),
                                    ngx_bottle_supervise_enabled()
                                    ? "value" : "bottle");
    }

    ngx_http_bottle_dlp_hash(d, first, hash);

    return ngx_http_bottle_deny(d->ctx, d->r->pool, NGX_BOTTLE_RULE_DLP,
                                "%s (%s) in the %s, value %s "
                                "(%uz finding%s)",
                                bottle_scan_detector_name(first->detector),
                                first->rule, where, hash, blocking,
                                blocking == 1 ? "" : "s");
}


/*
 * Redact: every blocking match replaced by a marker where it is; one that
 * cannot be removed (in the hostname, across fields, beyond the scanner's
 * reach) refuses the request instead.
 */

static ngx_int_t
ngx_http_bottle_dlp_redact(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, size_t n)
{
    size_t      i;
    ngx_int_t   rc;
    ngx_str_t  *value;
    int         field;
    ngx_uint_t  body;

    for (i = 0; i < n; i++) {
        if (!(NGX_HTTP_BOTTLE_BLOCKING & (1u << m[i].detector))
            || m[i].field == ngx_http_bottle_f_value(d->injected))
        {
            continue;
        }

        if (!m[i].removable
            || !ngx_http_bottle_dlp_redactable(m[i].field))
        {
            char  hash[BOTTLE_RECORD_DIGEST_SIZE];

            ngx_http_bottle_dlp_audit(d, &m[i], "blocked");

            return ngx_http_bottle_deny(d->ctx, d->r->pool,
                                        NGX_BOTTLE_RULE_DLP,
                                        "%s (%s), value %s, where it "
                                        "cannot be removed",
                                        bottle_scan_detector_name(
                                            m[i].detector),
                                        m[i].rule,
                                        ngx_http_bottle_dlp_hash(d, &m[i],
                                                                 hash));
        }

        ngx_http_bottle_dlp_log(d, &m[i], "redact");
    }

    field = -1;
    body = 0;

    for (i = 0; i < n; i++) {
        if (!(NGX_HTTP_BOTTLE_BLOCKING & (1u << m[i].detector))
            || m[i].field == field
            || m[i].field == ngx_http_bottle_f_value(d->injected))
        {
            continue;
        }

        field = m[i].field;

        if (field == NGX_HTTP_BOTTLE_F_BODY) {
            body = 1;
            continue;
        }

        value = ngx_http_bottle_dlp_field_value(d, field);
        rc = value ? ngx_http_bottle_dlp_redact_str(d, value, field, m, n)
                   : NGX_ERROR;

        if (rc != NGX_OK) {
            return rc;
        }
    }

    /* the body last: encoding it again may go on in a thread (NGX_AGAIN) */

    return body ? ngx_http_bottle_dlp_redact_body(d, m, n) : NGX_OK;
}


static ngx_str_t *
ngx_http_bottle_dlp_field_value(ngx_http_bottle_dlp_t *d, int field)
{
    int                i;
    ngx_table_elt_t  **hp;

    switch (field) {
    case NGX_HTTP_BOTTLE_F_HOST:
        return &d->ctx->target.host;
    case NGX_HTTP_BOTTLE_F_PATH:
        return &d->ctx->target.path;
    case NGX_HTTP_BOTTLE_F_QUERY:
        return &d->ctx->target.args;
    case NGX_HTTP_BOTTLE_F_BODY:
        return d->body.data ? &d->body : NULL;
    case NGX_HTTP_BOTTLE_F_METHOD:
        return &d->r->method_name;
    case NGX_HTTP_BOTTLE_F_WRAPPER:
        return &d->wrapper;
    case NGX_HTTP_BOTTLE_F_FIXED:
        return &d->fixed;
    }

    i = (field - NGX_HTTP_BOTTLE_F_HEADER) / 2;

    if (field >= NGX_HTTP_BOTTLE_F_HEADER && (ngx_uint_t) i < d->headers.nelts)
    {
        hp = d->headers.elts;
        return (field & 1) ? &hp[i]->key : &hp[i]->value;
    }

    return NULL;
}


static u_char *
ngx_http_bottle_dlp_where(ngx_http_bottle_dlp_t *d, int field, u_char *buf,
    size_t size)
{
    int                i;
    ngx_table_elt_t  **hp;

    switch (field) {
    case NGX_HTTP_BOTTLE_F_HOST:
        return ngx_snprintf(buf, size, "hostname");
    case NGX_HTTP_BOTTLE_F_PATH:
        return ngx_snprintf(buf, size, "path");
    case NGX_HTTP_BOTTLE_F_QUERY:
        return ngx_snprintf(buf, size, "query");
    case NGX_HTTP_BOTTLE_F_BODY:
        return ngx_snprintf(buf, size, "body");
    case NGX_HTTP_BOTTLE_F_METHOD:
        return ngx_snprintf(buf, size, "method");
    case NGX_HTTP_BOTTLE_F_WRAPPER:
    case NGX_HTTP_BOTTLE_F_FIXED:
        return ngx_snprintf(buf, size, "body's gzip header");
    }

    hp = d->headers.elts;
    i = (field - NGX_HTTP_BOTTLE_F_HEADER) / 2;

    if (field >= NGX_HTTP_BOTTLE_F_HEADER && (ngx_uint_t) i < d->headers.nelts)
    {
        /* the name that carries a finding is not repeated */

        return (field & 1)
               ? ngx_snprintf(buf, size, "name of header %d", i + 1)
               : ngx_snprintf(buf, size, "header %V", &hp[i]->key);
    }

    return ngx_snprintf(buf, size, "request");
}


/*
 * One line per finding: detector, rule, location and a short hash of the
 * value (the value itself never: the hash lets an operator match it).
 */

static void
ngx_http_bottle_dlp_log(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, const char *action)
{
    u_char  where[64];
    char    hash[BOTTLE_RECORD_DIGEST_SIZE];

    *ngx_http_bottle_dlp_where(d, m->field, where, sizeof(where) - 1) = '\0';

    ngx_bottle_log(NGX_LOG_WARN, d->r->connection->log,
                   "bottle dlp: bottle=\"%s\" host=\"%V\" detector=%s "
                   "rule=%s location=\"%s\" value=%s action=%s",
                   d->ctx->verdict.bottle->id.data, &d->ctx->target.host,
                   bottle_scan_detector_name(m->detector), m->rule, where,
                   ngx_http_bottle_dlp_hash(d, m, hash), action);

    ngx_http_bottle_dlp_audit(d, m, action[0] == 'w' ? "warned"
                                    : action[0] == 'r' ? "redacted"
                                    : action);
}


/* the finding in the audit journal, as the log names it: never the value */

static void
ngx_http_bottle_dlp_audit(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, const char *action)
{
    u_char  where[64];
    char    hash[BOTTLE_RECORD_DIGEST_SIZE];

    ngx_bottle_metrics_finding(bottle_scan_detector_name(m->detector));

    if (!ngx_bottle_audit_enabled()) {
        return;
    }

    *ngx_http_bottle_dlp_where(d, m->field, where, sizeof(where) - 1) = '\0';
    (void) ngx_http_bottle_dlp_hash(d, m, hash);

    ngx_bottle_audit_finding(d->ctx->verdict.bottle, &d->ctx->target.host,
                             &d->ctx->verdict.correlation,
                             bottle_scan_detector_name(m->detector), m->rule,
                             (char *) where, hash, action);
}


/*
 * the value's short digest, as every record names it: an operator can
 * match it, nobody can read it (bottle_record_digest)
 */

static char *
ngx_http_bottle_dlp_hash(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, char *buf)
{
    u_char  md[32];

    if (ngx_http_bottle_dlp_digest(d, m, md) != NGX_OK) {
        ngx_cpystrn((u_char *) buf, (u_char *) "sha256:-", 9);
        return buf;
    }

    return bottle_record_digest(buf, md);
}


static ngx_int_t
ngx_http_bottle_dlp_digest(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, u_char *md)
{
    ngx_str_t  *value;

    value = ngx_http_bottle_dlp_field_value(d, m->field);

    if (value == NULL || m->end > value->len || m->start >= m->end) {
        return NGX_DECLINED;
    }

    SHA256(value->data + m->start, m->end - m->start, md);

    return NGX_OK;
}


/* approved by the operator for this bottle and this host (supervise) */

static ngx_uint_t
ngx_http_bottle_dlp_safelisted(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m)
{
    u_char     md[32];
    ngx_str_t  id;

    if (!m->removable || m->cross_field
        || ngx_http_bottle_dlp_digest(d, m, md) != NGX_OK)
    {
        return 0;
    }

    id.data = (u_char *) d->ctx->verdict.bottle->id.data;
    id.len = d->ctx->verdict.bottle->id.len;

    return ngx_bottle_safelist_has(d->r->pool, &id, &d->ctx->target.host, md);
}


/*
 * A header's value, the path, the query, the body: not a header's name,
 * the method or the host, nor the body's gzip header, which is not
 * encoded again.
 */

static ngx_uint_t
ngx_http_bottle_dlp_redactable(int field)
{
    if (field >= NGX_HTTP_BOTTLE_F_HEADER) {
        return !(field & 1);
    }

    return field == NGX_HTTP_BOTTLE_F_PATH || field == NGX_HTTP_BOTTLE_F_QUERY
           || field == NGX_HTTP_BOTTLE_F_BODY;
}


/*
 * A URL is percent-encoded: "%0D%0A" in a Referer, Origin or Location is
 * the URL's data (a link to a page about CRLF injection), not a line break
 * of the request.  Any other header decoded by an application could become
 * one, so there it is refused.
 */
static ngx_uint_t
ngx_http_bottle_url_valued(ngx_str_t *name)
{
    ngx_uint_t        i;
    static ngx_str_t  urls[] = {
        ngx_string("Referer"),
        ngx_string("Origin"),
        ngx_string("Location"),
        ngx_string("Content-Location"),
        ngx_string("Link"),
    };

    for (i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
        if (name->len == urls[i].len
            && ngx_strncasecmp(name->data, urls[i].data, name->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* a raw CR, LF or NUL always; "%0D%0A" when encoded is set */
static ngx_uint_t
ngx_http_bottle_crlf(u_char *p, size_t len, ngx_uint_t encoded)
{
    u_char  *last;

    last = p + len;

    for ( /* void */ ; p < last; p++) {
        if (*p == CR || *p == LF || *p == '\0') {
            return 1;
        }

        if (encoded && *p == '%' && last - p >= 6
            && ngx_strncasecmp(p, (u_char *) "%0d%0a", 6) == 0)
        {
            return 1;
        }
    }

    return 0;
}
