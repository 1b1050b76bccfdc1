
/*
 * What nginx itself says inside a bottle server.
 *
 * Refusals: nginx answers some requests before the pipeline runs (a
 * malformed or oversized head, a duplicate Authorization, obs-fold, a body
 * over client_max_body_size, ...) with its stock HTML page.  Those answers
 * become refusals like the module's own: a rule, a reason the agent can
 * read, X-Bottle-Rule, and one log line (docs/refusals.md).  They are told
 * apart by r->err_status (a special response), with no upstream.  (nginx
 * sends 494 and 495-497 as 400: they arrive here as that.)
 *
 * Error log context: nginx appends the request line, the upstream URI and
 * the Referer to every line it logs for a request, before the pipeline has
 * stripped anything; a query credential would land in the log on a 413.
 * The logs of bottle locations and the connections of bottle servers get
 * a log writer that blanks those parts of each line.  (A writer, not a
 * log handler: nginx sets the handler again for every kept-alive request;
 * the writer comes with the location's log.)
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


typedef struct {
    ngx_uint_t               status;
    ngx_bottle_rule_e        rule;
    const char              *reason;
} ngx_http_bottle_nginx_refusal_t;


static ngx_int_t ngx_http_bottle_errors_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_bottle_errors_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static const ngx_http_bottle_nginx_refusal_t *ngx_http_bottle_nginx_refusal(
    ngx_uint_t status);
static ngx_int_t ngx_http_bottle_errors_listeners(ngx_cycle_t *cycle);
static ngx_uint_t ngx_http_bottle_server_enabled(
    ngx_http_core_srv_conf_t *cscf);
static void ngx_http_bottle_log_writer(ngx_log_t *log, ngx_uint_t level,
    u_char *buf, size_t len);
static void ngx_http_bottle_log_scrub(u_char *p, u_char *last,
    const char *label, ngx_uint_t skip, u_char from, u_char end);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/* nginx's own answers, as refusals; the stock text would name no rule */

static ngx_http_bottle_nginx_refusal_t  ngx_http_bottle_nginx_refusals[] = {
    { NGX_HTTP_BAD_REQUEST, NGX_BOTTLE_RULE_BAD_REQUEST,
      "nginx's HTTP parser refused the request: a malformed, duplicate, "
      "conflicting or oversized header (Host, :authority, Authorization, "
      "Content-Length), a bare CR or NUL, a folded header line, or a "
      "malformed chunked body" },
    { NGX_HTTP_NOT_ALLOWED, NGX_BOTTLE_RULE_BAD_REQUEST,
      "nginx does not pass this method (TRACE, or CONNECT inside a tunnel)" },
    { NGX_HTTP_LENGTH_REQUIRED, NGX_BOTTLE_RULE_BAD_REQUEST,
      "a request body needs Content-Length or chunked encoding" },
    { NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, NGX_BOTTLE_RULE_TOO_LARGE,
      "the request body is larger than the gateway accepts" },
    { NGX_HTTP_REQUEST_URI_TOO_LARGE, NGX_BOTTLE_RULE_BAD_REQUEST,
      "the request line is longer than the gateway accepts" },
    { NGX_HTTP_INTERNAL_SERVER_ERROR, NGX_BOTTLE_RULE_INTERNAL,
      "the gateway failed while handling this request" },
    { NGX_HTTP_NOT_IMPLEMENTED, NGX_BOTTLE_RULE_BAD_REQUEST,
      "a Transfer-Encoding the gateway does not take" },
    { NGX_HTTP_VERSION_NOT_SUPPORTED, NGX_BOTTLE_RULE_BAD_REQUEST,
      "an HTTP version the gateway does not take" },
    { 0, 0, NULL }
};


ngx_int_t
ngx_http_bottle_errors_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_bottle_errors_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_bottle_errors_body_filter;

    return NGX_OK;
}


static ngx_int_t
ngx_http_bottle_errors_header_filter(ngx_http_request_t *r)
{
    ngx_str_t                               *host;
    ngx_table_elt_t                         *h;
    ngx_http_bottle_ctx_t                   *ctx;
    ngx_http_bottle_conn_t                  *bc;
    const ngx_bottle_rule_t                 *rule;
    ngx_http_bottle_loc_conf_t              *blcf;
    const ngx_http_bottle_nginx_refusal_t   *nr;

    blcf = ngx_http_get_module_loc_conf(r, ngx_http_bottle_module);

    if (!blcf->enable || r != r->main || r->upstream || r->err_status == 0) {
        return ngx_http_next_header_filter(r);
    }

    ctx = ngx_http_bottle_get_ctx(r);

    if (ctx && ctx->state == NGX_HTTP_BOTTLE_REFUSED && ctx->verdict.reason.len)
    {
        /* the module's own refusal, logged and answered already */
        return ngx_http_next_header_filter(r);
    }

    nr = ngx_http_bottle_nginx_refusal(r->headers_out.status);
    if (nr == NULL) {
        return ngx_http_next_header_filter(r);
    }

    if (ctx == NULL) {
        ctx = ngx_http_bottle_create_ctx(r);
        if (ctx == NULL) {
            return NGX_ERROR;
        }
    }

    /* who, as far as it is known this early: a tunnel knows its bottle */

    if (ctx->verdict.bottle == NULL
        && ngx_http_bottle_tunnel(r, &bc) == NGX_OK && bc)
    {
        /* held: another request of the tunnel may switch its entry */
        if (bc->entry && ngx_bottle_entry_hold(bc->entry, r->pool) == NGX_OK)
        {
            ctx->verdict.bottle = bc->entry->bottle;
        }

        ctx->verdict.host = bc->target.host;
    }

    if (ctx->verdict.host.len == 0) {
        host = r->headers_in.server.len ? &r->headers_in.server : NULL;
        if (host) {
            ctx->verdict.host = *host;
        }
    }

    ctx->state = NGX_HTTP_BOTTLE_REFUSED;
    ctx->verdict.rule = nr->rule;
    ctx->verdict.reason.data = (u_char *) nr->reason;
    ctx->verdict.reason.len = ngx_strlen(nr->reason);

    ngx_bottle_log_verdict(r->connection, &ctx->verdict);

    if (ngx_bottle_refusal_body(r->pool, &ctx->verdict, &ctx->refusal)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    rule = ngx_bottle_rule(nr->rule);

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "X-Bottle-Rule");
    h->value = rule->name;

    r->headers_out.status = rule->status;
    r->err_status = rule->status;
    ngx_str_set(&r->headers_out.content_type, "text/plain; charset=utf-8");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.content_length_n = ctx->refusal.len;

    if (r->headers_out.content_length) {
        r->headers_out.content_length->hash = 0;
        r->headers_out.content_length = NULL;
    }

    return ngx_http_next_header_filter(r);
}


/* nginx's page is dropped; the refusal goes out once, at its end */

static ngx_int_t
ngx_http_bottle_errors_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_buf_t              *b;
    ngx_uint_t              last;
    ngx_chain_t            *cl, out;
    ngx_http_bottle_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);

    if (ctx == NULL || ctx->refusal.data == NULL || r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    last = 0;

    for (cl = in; cl; cl = cl->next) {
        if (cl->buf->last_buf || cl->buf->last_in_chain) {
            last = 1;
        }

        cl->buf->pos = cl->buf->last;
        cl->buf->file_pos = cl->buf->file_last;
    }

    if (!last) {
        return NGX_OK;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = ctx->refusal.data;
    b->last = ctx->refusal.data + ctx->refusal.len;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    ngx_str_null(&ctx->refusal);

    out.buf = b;
    out.next = NULL;

    return ngx_http_next_body_filter(r, &out);
}


static const ngx_http_bottle_nginx_refusal_t *
ngx_http_bottle_nginx_refusal(ngx_uint_t status)
{
    ngx_http_bottle_nginx_refusal_t  *nr;

    for (nr = ngx_http_bottle_nginx_refusals; nr->status; nr++) {
        if (nr->status == status) {
            return nr;
        }
    }

    return NULL;
}


/*
 * The error_log of a bottle location: its address is kept, and at
 * init_module, when every error_log of the configuration is final, the log
 * there is replaced by a copy whose writer scrubs the line and hands it to
 * the original (nginx copies a location's log to the connection for each
 * request, writer included).
 */

ngx_int_t
ngx_http_bottle_errors_location(ngx_conf_t *cf,
    ngx_http_bottle_main_conf_t *bmcf)
{
    ngx_log_t                 ***logp;
    ngx_http_core_loc_conf_t   *clcf;
    ngx_http_core_srv_conf_t   *cscf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    logp = ngx_array_push(&bmcf->error_logs);
    if (logp == NULL) {
        return NGX_ERROR;
    }

    *logp = &clcf->error_log;

    /*
     * and the server's own: a connection logs with it until the request
     * has a location (nginx's lines on a bad head)
     */

    cscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);
    clcf = cscf->ctx->loc_conf[ngx_http_core_module.ctx_index];

    logp = ngx_array_push(&bmcf->error_logs);
    if (logp == NULL) {
        return NGX_ERROR;
    }

    *logp = &clcf->error_log;

    return NGX_OK;
}


ngx_int_t
ngx_http_bottle_errors_init_module(ngx_cycle_t *cycle)
{
    ngx_uint_t                    i, j;
    ngx_log_t                  ***logp, *log;
    ngx_http_bottle_main_conf_t  *bmcf;

    bmcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_bottle_module);

    if (bmcf == NULL || (!bmcf->used && !bmcf->attribute_used)) {
        return NGX_OK;
    }

    logp = bmcf->error_logs.elts;

    for (i = 0; i < bmcf->error_logs.nelts; i++) {
        if ((*logp[i])->writer == ngx_http_bottle_log_writer) {
            continue;
        }

        /* locations share logs: one copy for each */

        for (j = 0; j < i; j++) {
            if ((*logp[j])->wdata == *logp[i]) {
                break;
            }
        }

        if (j < i) {
            *logp[i] = *logp[j];
            continue;
        }

        log = ngx_palloc(cycle->pool, sizeof(ngx_log_t));
        if (log == NULL) {
            return NGX_ERROR;
        }

        *log = **logp[i];
        log->writer = ngx_http_bottle_log_writer;
        log->wdata = *logp[i];
        *logp[i] = log;
    }

    return ngx_http_bottle_errors_listeners(cycle);
}


/*
 * The listeners of bottle servers get ngx_http_bottle_init_connection
 * instead of ngx_http_init_connection, for the lines logged before the
 * first request has a location.
 */

static ngx_int_t
ngx_http_bottle_errors_listeners(ngx_cycle_t *cycle)
{
    ngx_uint_t            i, j, bottle;
    ngx_listening_t      *ls;
    ngx_http_port_t      *port;
    ngx_http_in_addr_t   *addr;
#if (NGX_HAVE_INET6)
    ngx_http_in6_addr_t  *addr6;
#endif

    ls = cycle->listening.elts;

    for (i = 0; i < cycle->listening.nelts; i++) {

        if (ls[i].handler != ngx_http_init_connection || ls[i].servers == NULL)
        {
            continue;
        }

        port = ls[i].servers;
        bottle = 0;

        for (j = 0; j < port->naddrs; j++) {
#if (NGX_HAVE_INET6)
            if (ls[i].sockaddr->sa_family == AF_INET6) {
                addr6 = port->addrs;
                bottle |= ngx_http_bottle_server_enabled(
                              addr6[j].conf.default_server);
                continue;
            }
#endif
            addr = port->addrs;
            bottle |= ngx_http_bottle_server_enabled(
                          addr[j].conf.default_server);
        }

        if (bottle) {
            ls[i].handler = ngx_http_bottle_init_connection;
        }
    }

    return NGX_OK;
}


/* a bottle server, or a sidecar's */

static ngx_uint_t
ngx_http_bottle_server_enabled(ngx_http_core_srv_conf_t *cscf)
{
    ngx_http_bottle_srv_conf_t  *bscf;
    ngx_http_bottle_loc_conf_t  *blcf;

    if (cscf == NULL || cscf->ctx == NULL) {
        return 0;
    }

    blcf = cscf->ctx->loc_conf[ngx_http_bottle_module.ctx_index];
    bscf = cscf->ctx->srv_conf[ngx_http_bottle_module.ctx_index];

    return blcf->enable == 1 || bscf->sidecar;
}


void
ngx_http_bottle_init_connection(ngx_connection_t *c)
{
    ngx_http_init_connection(c);

    /* closed already: the connection slot is still there, its log not */

    if (c->fd != (ngx_socket_t) -1 && c->log->writer == NULL) {
        c->log->writer = ngx_http_bottle_log_writer;
        c->log->wdata = NULL;
    }
}


/*
 * nginx's context for a request's log line (ngx_http_log_error) ends
 *   , request: "METHOD URI PROTOCOL"[, upstream: "URL"], host: "H"
 *   [, referrer: "R"]
 * The query of the URI (it holds no space: nginx refuses one there), the
 * query of the upstream URL, the Referer, and the value of a header nginx
 * quotes are overwritten in place, so every error_log the line goes to
 * gets it without them.
 */

static void
ngx_http_bottle_log_writer(ngx_log_t *log, ngx_uint_t level, u_char *buf,
    size_t len)
{
    u_char  *last;

    last = buf + len;

    ngx_http_bottle_log_scrub(buf, last, ", request: \"", 1, '?', ' ');
    ngx_http_bottle_log_scrub(buf, last, ", upstream: \"", 0, '?', '"');
    ngx_http_bottle_log_scrub(buf, last, ", referrer: \"", 0, 0, '\0');

    /* nginx's info lines on a bad header quote it, and the rest */
    ngx_http_bottle_log_scrub(buf, last, "header line: \"", 0, 0, '\0');
    ngx_http_bottle_log_scrub(buf, last, "host header: \"", 0, 0, '\0');

    /* a copy of a location's log passes the line on to the original */

    if (log->wdata) {
        log = log->wdata;

        if (log->writer) {
            log->writer(log, level, buf, len);
            return;
        }
    }

    if (ngx_time() == log->disk_full_time) {
        return;
    }

    if (ngx_write_fd(log->file->fd, buf, len) == -1
        && ngx_errno == NGX_ENOSPC)
    {
        log->disk_full_time = ngx_time();
    }
}


/*
 * After the first label (with skip, after the first space there too: the
 * method), past the first "from" character (none: at once), up to the end
 * character or the line's end (end '\0'): 'x'.
 */

static void
ngx_http_bottle_log_scrub(u_char *p, u_char *last, const char *label,
    ngx_uint_t skip, u_char from, u_char end)
{
    size_t  n;

    n = ngx_strlen(label);
    p = ngx_strlcasestrn(p, last, (u_char *) label, n - 1);

    if (p == NULL) {
        return;
    }

    p += n;

    if (skip) {
        p = ngx_strlchr(p, last, ' ');
        if (p == NULL) {
            return;
        }

        p++;
    }

    if (from) {
        for ( /* void */ ; p < last && *p != from; p++) {
            if (*p == end || *p == CR || *p == LF) {
                return;
            }
        }

        p++;
    }

    for ( /* void */ ; p < last && *p != end && *p != CR && *p != LF; p++) {
        *p = 'x';
    }
}
