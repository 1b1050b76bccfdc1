
/*
 * The CONNECT front, in the stream preread phase.  It reads the agent's first
 * request head with a strict parser and takes the session over (NGX_DONE)
 * until it has decided; then it resumes the phases, and `proxy_pass
 * $bottle_upstream` carries the session to where the decision points:
 *
 *   CONNECT, passthrough route -> 200, a whole, well-formed TLS
 *                                 ClientHello, then the checked address of
 *                                 the target
 *   CONNECT, inspected route   -> 200, the same ClientHello, then the
 *                                 internal TLS listener; or an HTTP
 *                                 request, then the plain one
 *   absolute-URI request       -> the internal plain listener, bytes untouched
 *                                 behind a PROXY protocol header
 *
 * Everything else is refused with a status and a reason, or closed.  A 407
 * keeps the connection, so the client's retry with credentials may come on it.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_stream_bottle.h"
#include "bottle_decide.h"
#include "bottle_hello.h"
#include "bottle_introspect.h"


#define NGX_STREAM_BOTTLE_PASSWORD_MAX  512


static void ngx_stream_bottle_read_handler(ngx_event_t *rev);
static void ngx_stream_bottle_timeout_handler(ngx_event_t *ev);
static void ngx_stream_bottle_dummy_handler(ngx_event_t *ev);
static void ngx_stream_bottle_cleanup(void *data);
static ngx_int_t ngx_stream_bottle_process(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);
static ngx_int_t ngx_stream_bottle_head(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);
static ngx_int_t ngx_stream_bottle_plain(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, bottle_head_t *head);
static ngx_int_t ngx_stream_bottle_connect(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, bottle_head_t *head);
static ngx_int_t ngx_stream_bottle_identify(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, bottle_head_t *head);
static ngx_int_t ngx_stream_bottle_introspect(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, bottle_head_t *head);
static ngx_int_t ngx_stream_bottle_passthrough(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);
static void ngx_stream_bottle_resolved(void *data, ngx_int_t rc);
static ngx_int_t ngx_stream_bottle_inspect(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);
static ngx_int_t ngx_stream_bottle_establish(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);
static ngx_int_t ngx_stream_bottle_peek(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);
static ngx_int_t ngx_stream_bottle_sniff(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_uint_t *http);
static ngx_int_t ngx_stream_bottle_more(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_uint_t read, size_t need);
static ngx_int_t ngx_stream_bottle_request_line(u_char *p, size_t n);
static ngx_int_t ngx_stream_bottle_record(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_str_t *pass);
static ngx_int_t ngx_stream_bottle_handoff(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_str_t *pass);
static void ngx_stream_bottle_resume(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);


static u_char  ngx_stream_bottle_established[] =
    "HTTP/1.1 200 Connection established\r\n\r\n";


ngx_int_t
ngx_stream_bottle_preread_handler(ngx_stream_session_t *s)
{
    ngx_buf_t                     *b;
    ngx_connection_t              *c;
    ngx_pool_cleanup_t            *cln;
    ngx_stream_bottle_ctx_t       *ctx;
    ngx_stream_bottle_srv_conf_t  *bscf;

    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);

    if (!bscf->enable) {
        return NGX_DECLINED;
    }

    ctx = ngx_stream_get_module_ctx(s, ngx_stream_bottle_module);

    if (ctx) {
        /* the phases were resumed past us: the decision is made */
        return NGX_DECLINED;
    }

    c = s->connection;

    ctx = ngx_pcalloc(c->pool, sizeof(ngx_stream_bottle_ctx_t));
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(c->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_stream_bottle_cleanup;
    cln->data = ctx;

    ngx_stream_set_ctx(s, ctx, ngx_stream_bottle_module);

    ctx->phase = s->phase_handler;

    b = c->buffer;

    if (b == NULL || (size_t) (b->end - b->start) < bscf->buffer_size) {
        c->buffer = ngx_create_temp_buf(c->pool, bscf->buffer_size);
        if (c->buffer == NULL) {
            return NGX_ERROR;
        }

        if (b) {
            c->buffer->last = ngx_cpymem(c->buffer->last, b->pos,
                                         b->last - b->pos);
        }
    }

    /*
     * The preread phase handles c->read's timer itself and deletes it when
     * a handler returns, so the head timeout is an event of our own.
     */

    ctx->timer.handler = ngx_stream_bottle_timeout_handler;
    ctx->timer.data = s;
    ctx->timer.log = c->log;
    ngx_add_timer(&ctx->timer, bscf->head_timeout);

    c->read->handler = ngx_stream_bottle_read_handler;
    c->write->handler = ngx_stream_bottle_dummy_handler;

    ngx_stream_bottle_read_handler(c->read);

    return NGX_DONE;
}


static void
ngx_stream_bottle_read_handler(ngx_event_t *rev)
{
    ssize_t                   n;
    ngx_buf_t                *b;
    ngx_int_t                 rc;
    ngx_connection_t         *c;
    ngx_stream_session_t     *s;
    ngx_stream_bottle_ctx_t  *ctx;

    c = rev->data;
    s = c->data;
    ctx = ngx_stream_get_module_ctx(s, ngx_stream_bottle_module);

    for ( ;; ) {

        if (ctx->state == NGX_STREAM_BOTTLE_RESOLVING
            || ctx->state == NGX_STREAM_BOTTLE_DONE)
        {
            return;
        }

        rc = ngx_stream_bottle_process(s, ctx);

        if (rc != NGX_AGAIN) {
            /* decided: the session may be gone already */
            return;
        }

        b = c->buffer;

        if (b->last == b->end) {
            if (b->pos == b->start) {
                (void) ngx_stream_bottle_refuse(s, ctx,
                                                NGX_BOTTLE_RULE_BAD_REQUEST,
                                                "request head too large");
                return;
            }

            b->last = ngx_movemem(b->start, b->pos, b->last - b->pos);
            b->pos = b->start;
        }

        n = c->recv(c, b->last, b->end - b->last);

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(rev, 0) != NGX_OK) {
                ngx_stream_finalize_session(s,
                                            NGX_STREAM_INTERNAL_SERVER_ERROR);
            }

            return;
        }

        if (n == NGX_ERROR || n == 0) {
            ngx_log_error(NGX_LOG_INFO, c->log, 0,
                          "bottle: client closed the connection before "
                          "the gateway decided");
            ngx_stream_finalize_session(s, NGX_STREAM_OK);
            return;
        }

        b->last += n;
    }
}


static void
ngx_stream_bottle_timeout_handler(ngx_event_t *ev)
{
    ngx_stream_session_t     *s;
    ngx_stream_bottle_ctx_t  *ctx;

    s = ev->data;
    ctx = ngx_stream_get_module_ctx(s, ngx_stream_bottle_module);

    (void) ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_TIMEOUT,
                                    "no complete request in time");
}


static void
ngx_stream_bottle_dummy_handler(ngx_event_t *ev)
{
    ngx_log_debug0(NGX_LOG_DEBUG_STREAM, ev->log, 0,
                   "bottle front dummy handler");
}


static void
ngx_stream_bottle_cleanup(void *data)
{
    ngx_stream_bottle_ctx_t  *ctx = data;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    ngx_bottle_resolve_cancel(&ctx->resolve);

    if (ctx->key.len) {
        ngx_bottle_zone_delete(&ctx->key);
    }

    if (ctx->final_key.len) {
        ngx_bottle_final_forget(&ctx->final_key);
    }
}


/* NGX_AGAIN: more bytes are needed; anything else: decided */

static ngx_int_t
ngx_stream_bottle_process(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx)
{
    if (ctx->state == NGX_STREAM_BOTTLE_PEEK) {
        return ngx_stream_bottle_peek(s, ctx);
    }

    return ngx_stream_bottle_head(s, ctx);
}


static ngx_int_t
ngx_stream_bottle_head(ngx_stream_session_t *s, ngx_stream_bottle_ctx_t *ctx)
{
    ngx_int_t                      rc;
    ngx_buf_t                     *b;
    bottle_head_t                  head;
    ngx_stream_bottle_srv_conf_t  *bscf;

    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);
    b = s->connection->buffer;

    if (b->pos == b->last) {
        return NGX_AGAIN;
    }

    rc = bottle_head_parse(&head, b->pos, b->last - b->pos, &bscf->limits);

    if (rc == BOTTLE_HEAD_AGAIN) {
        return NGX_AGAIN;
    }

    if (rc != BOTTLE_HEAD_OK) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_BAD_REQUEST,
                                        "%s", bottle_head_strerror(rc));
    }

    ctx->heads++;
    ctx->head_len = head.head_len;
    ctx->http_minor = head.http_minor;
    ctx->has_body = head.has_body;

    /* the host, for the log and the variables, before any check */

    rc = ngx_bottle_canonical_host(s->connection->pool, head.host.data,
                                   head.host.len, head.host_ipv6,
                                   &ctx->verdict.host);
    if (rc == NGX_ERROR) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "out of memory");
    }

    if (rc == NGX_DECLINED && head.form != BOTTLE_HEAD_FORM_ORIGIN) {
        ctx->verdict.host.len = ngx_min(head.host.len, 255);
        ctx->verdict.host.data = (u_char *) head.host.data;

        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_BAD_REQUEST,
                                        "the target host is not a valid "
                                        "host name or IP address");
    }

    if (head.is_connect) {
        return ngx_stream_bottle_connect(s, ctx, &head);
    }

    return ngx_stream_bottle_plain(s, ctx, &head);
}


static ngx_int_t
ngx_stream_bottle_plain(ngx_stream_session_t *s, ngx_stream_bottle_ctx_t *ctx,
    bottle_head_t *head)
{
    ngx_stream_bottle_srv_conf_t  *bscf;

    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);

    if (head->form != BOTTLE_HEAD_FORM_ABSOLUTE) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_BAD_REQUEST,
                                        "not a proxy request: the target "
                                        "must be an absolute http:// URI");
    }

    if (head->scheme.len != 4
        || ngx_strncasecmp((u_char *) head->scheme.data, (u_char *) "http", 4)
           != 0)
    {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_BAD_REQUEST,
                                        "only http:// URIs are proxied in "
                                        "the clear; use CONNECT for https");
    }

    if (ngx_bottle_is_egress_host(&ctx->verdict.host)) {
        return ngx_stream_bottle_introspect(s, ctx, head);
    }

    if (bscf->plain_pass.len == 0) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "no plain listener is configured "
                                        "(bottle_plain_pass)");
    }

    return ngx_stream_bottle_handoff(s, ctx, &bscf->plain_pass);
}


static ngx_int_t
ngx_stream_bottle_connect(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, bottle_head_t *head)
{
    ngx_int_t                     rc;
    bottle_request_t              req;
    bottle_decision_t             d;
    const bottle_route_t         *route;

    ctx->connect = 1;

    if (head->has_body) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_BAD_REQUEST,
                                        "a CONNECT request has no body");
    }

    rc = ngx_stream_bottle_identify(s, ctx, head);
    if (rc != NGX_OK) {
        return rc;
    }

    ctx->port = (in_port_t) head->port;

    if (ngx_bottle_is_egress_host(&ctx->verdict.host)) {
        /* introspection, answered by the http side inside the tunnel */
        return ngx_stream_bottle_inspect(s, ctx);
    }

    /* the route and its port, as the http side decides them (libbottle) */

    ngx_memzero(&req, sizeof(bottle_request_t));
    req.host = (const char *) ctx->verdict.host.data;
    req.host_len = ctx->verdict.host.len;
    req.port = head->port;
    req.tunnel = 1;

    bottle_decide_route(&d, ctx->verdict.bottle, &req);

    route = d.route;
    ctx->route = route;

    if (d.rule != BOTTLE_RULE_NONE) {
        return ngx_stream_bottle_refuse(s, ctx, d.rule, "%*s", d.reason_len,
                                        (u_char *) d.reason);
    }

    if (!route->passthrough) {
        return ngx_stream_bottle_inspect(s, ctx);
    }

    /* the tunnel is the contact: recorded (or waited for) first */

    rc = ngx_stream_bottle_first_contact(s, ctx,
                                         ngx_stream_bottle_passthrough);
    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_stream_bottle_passthrough(s, ctx);
}


/* a passthrough route: the target's address, resolved and checked */

static ngx_int_t
ngx_stream_bottle_passthrough(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx)
{
    ngx_int_t                     rc;
    ngx_bottle_resolve_t         *res;
    ngx_stream_core_srv_conf_t   *cscf;

    cscf = ngx_stream_get_module_srv_conf(s, ngx_stream_core_module);

    res = &ctx->resolve;
    res->resolver = cscf->resolver;
    res->timeout = cscf->resolver_timeout;
    res->log = s->connection->log;
    res->pool = s->connection->pool;
    res->route = ctx->route;
    res->host = ctx->verdict.host;
    res->port = ctx->port;
    res->handler = ngx_stream_bottle_resolved;
    res->data = s;

    ctx->state = NGX_STREAM_BOTTLE_RESOLVING;

    rc = ngx_bottle_resolve(res);

    if (rc != NGX_AGAIN) {
        ngx_stream_bottle_resolved(s, rc);
    }

    return NGX_DONE;
}


/*
 * Identity: the Proxy-Authorization Basic password is the bottle's token
 * (the username is ignored), bound to the bottle's source addresses when the
 * policy lists them.  NGX_OK: ctx->verdict.bottle is set; else the refusal's
 * result (the 407 is sent).
 */

static ngx_int_t
ngx_stream_bottle_identify(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, bottle_head_t *head)
{
    ssize_t              n;
    const char          *reason;
    bottle_ip_t          ip;
    ngx_bottle_entry_t  *e;
    u_char               password[NGX_STREAM_BOTTLE_PASSWORD_MAX];

    if (head->proxy_authorization.len == 0) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_IDENTITY,
                                        "no proxy credentials");
    }

    n = bottle_head_basic_password(password, sizeof(password),
                                   head->proxy_authorization.data,
                                   head->proxy_authorization.len);

    reason = "malformed proxy credentials";
    e = (n > 0) ? ngx_bottle_find_token(password, (size_t) n, &reason) : NULL;

    ngx_explicit_memzero(password, sizeof(password));

    if (e == NULL) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_IDENTITY,
                                        "%s", reason);
    }

    /* the session keeps its bottle's policy, whatever changes meanwhile */

    if (ngx_bottle_entry_hold(e, s->connection->pool) != NGX_OK) {
        return NGX_ERROR;
    }

    ctx->verdict.bottle = e->bottle;
    ctx->entry = e;

    if (ngx_bottle_client_ip(s->connection, &ip) != NGX_OK
        || !bottle_source_allowed(e->bottle, &ip))
    {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_IDENTITY,
                                        "the token is not valid from this "
                                        "address");
    }

    return NGX_OK;
}


/*
 * http://_egress.local/allowlist: nginx's http parser refuses '_' in an
 * absolute URI's host, so the front answers it in the clear itself, after
 * the same identity and Host checks as any request.
 */

static ngx_int_t
ngx_stream_bottle_introspect(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, bottle_head_t *head)
{
    char       *json;
    size_t      len;
    ngx_int_t   rc;
    ngx_str_t   value, body, type, *status;

    static ngx_str_t  ok = ngx_string("200 OK");
    static ngx_str_t  not_found = ngx_string("404 Not Found");
    static ngx_str_t  missing = ngx_string("not found: try /allowlist\n");

    rc = ngx_stream_bottle_identify(s, ctx, head);
    if (rc != NGX_OK) {
        return rc;
    }

    value.data = (u_char *) head->host_header.data;
    value.len = head->host_header.len;

    if (head->host_header.len
        && ngx_bottle_host_matches(s->connection->pool, &value,
                                   &ctx->verdict.host,
                                   head->port ? head->port : 80, 80)
           != NGX_OK)
    {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_HOST_MISMATCH,
                                        "the Host header names another host "
                                        "or port than the request target");
    }

    ngx_str_set(&type, "text/plain; charset=utf-8");
    status = &not_found;
    body = missing;
    json = NULL;

    if (head->path.len == sizeof("/allowlist") - 1
        && ngx_strncmp(head->path.data, "/allowlist",
                       sizeof("/allowlist") - 1) == 0)
    {
        json = bottle_allowlist_json(ctx->verdict.bottle, &len);
        if (json == NULL) {
            return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                            "out of memory");
        }

        body.data = (u_char *) json;
        body.len = len;
        status = &ok;
        ngx_str_set(&type, "application/json");
    }

    (void) ngx_stream_bottle_answer(s->connection, status, NULL, &type, &body,
                                    0);
    free(json);

    ctx->state = NGX_STREAM_BOTTLE_DONE;
    ngx_stream_finalize_session(s, NGX_STREAM_OK);

    return NGX_DONE;
}


static void
ngx_stream_bottle_resolved(void *data, ngx_int_t rc)
{
    ngx_stream_session_t *s = data;

    ngx_stream_bottle_ctx_t  *ctx;

    ctx = ngx_stream_get_module_ctx(s, ngx_stream_bottle_module);

    if (rc == NGX_ERROR) {
        (void) ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "resolver failure");
        return;
    }

    if (rc != NGX_OK) {
        (void) ngx_stream_bottle_refuse(s, ctx, ctx->resolve.rule, "%V",
                                        &ctx->resolve.reason);
        return;
    }

    ctx->upstream.data = ctx->resolve.peer.text;
    ctx->upstream.len = ctx->resolve.peer.text_len;

    (void) ngx_stream_bottle_establish(s, ctx);
}


/*
 * An inspected route: the gateway terminates the tunnel itself, so there is
 * no upstream to resolve here; the http side resolves it per request.
 */

static ngx_int_t
ngx_stream_bottle_inspect(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx)
{
    ngx_stream_bottle_srv_conf_t  *bscf;

    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);

    if (bscf->tls_pass.len == 0 || bscf->plain_pass.len == 0) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INSPECT,
                                        "the route is inspected and TLS "
                                        "interception is not configured "
                                        "(bottle_tls_pass)");
    }

    ctx->inspect = 1;

    return ngx_stream_bottle_establish(s, ctx);
}


/* "200 Connection established"; what follows is the tunnel's */

static ngx_int_t
ngx_stream_bottle_establish(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx)
{
    ngx_connection_t  *c;

    c = s->connection;

    /* open until the policy no longer allows it (ngx_bottle_conns.c) */

    if (ngx_stream_bottle_conns_add(s, ctx) != NGX_OK) {
        return NGX_DONE;
    }

    if (ngx_stream_bottle_send(c, ngx_stream_bottle_established,
                               sizeof(ngx_stream_bottle_established) - 1)
        != NGX_OK)
    {
        ctx->state = NGX_STREAM_BOTTLE_DONE;
        ngx_stream_finalize_session(s, NGX_STREAM_OK);
        return NGX_DONE;
    }

    c->buffer->pos += ctx->head_len;
    ctx->state = NGX_STREAM_BOTTLE_PEEK;

    ngx_stream_bottle_read_handler(c->read);

    return NGX_DONE;
}


/*
 * After "200 Connection established": a TLS ClientHello, or (inspected
 * routes only) an HTTP request; anything else is raw TCP, refused.
 */

static ngx_int_t
ngx_stream_bottle_peek(ngx_stream_session_t *s, ngx_stream_bottle_ctx_t *ctx)
{
    ngx_int_t                      rc;
    ngx_uint_t                     http;
    ngx_stream_bottle_srv_conf_t  *bscf;

    rc = ngx_stream_bottle_sniff(s, ctx, &http);

    if (rc != NGX_OK) {
        return rc;
    }

    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);

    if (http) {
        return ngx_stream_bottle_record(s, ctx, &bscf->plain_pass);
    }

    if (ctx->inspect) {
        return ngx_stream_bottle_record(s, ctx, &bscf->tls_pass);
    }

    ngx_stream_bottle_resume(s, ctx);

    return NGX_DONE;
}


/*
 * What the tunnel carries.  NGX_OK: a whole ClientHello that every length
 * in it agrees with (bottle_hello.c), or, *http set, an HTTP request line;
 * NGX_AGAIN: read more into c->buffer; NGX_DONE: waiting for more bytes in
 * the socket, or refused.  Nothing is relayed before NGX_OK: behind a
 * record header that is not checked to its end, any bytes would pass.
 */

static ngx_int_t
ngx_stream_bottle_sniff(ngx_stream_session_t *s, ngx_stream_bottle_ctx_t *ctx,
    ngx_uint_t *http)
{
    int                rc;
    size_t             n;
    u_char            *p;
    ssize_t            rn;
    ngx_buf_t         *b;
    bottle_hello_t     hello;
    ngx_connection_t  *c;
    u_char             buf[BOTTLE_HELLO_MAX_WIRE];

    c = s->connection;
    b = c->buffer;
    p = b->pos;
    n = b->last - b->pos;

    *http = 0;

    if (n == 0) {

        /*
         * Nothing came with the CONNECT head: look at what follows without
         * reading it, so that the socket can go as it is to whoever takes
         * the tunnel (ngx_stream_bottle_adopt.c).  All of it, up to the
         * largest ClientHello taken: a partial answer means the rest has
         * not arrived, and only its arrival wakes us up again.
         */

        rn = recv(c->fd, (char *) buf, sizeof(buf), MSG_PEEK);

        if (rn == 0 || (rn == -1 && ngx_socket_errno != NGX_EAGAIN
                                 && ngx_socket_errno != NGX_EINTR))
        {
            ngx_log_error(NGX_LOG_INFO, c->log, 0,
                          "bottle: client closed the tunnel before "
                          "its first bytes");
            ctx->state = NGX_STREAM_BOTTLE_DONE;
            ngx_stream_finalize_session(s, NGX_STREAM_OK);
            return NGX_DONE;
        }

        p = buf;
        n = rn > 0 ? (size_t) rn : 0;

        /* unread bytes: whoever reads next must not wait for an event */
        c->read->ready = n ? 1 : 0;
    }

    if (n && p[0] != 0x16 && ctx->inspect) {
        switch (ngx_stream_bottle_request_line(p, n)) {

        case NGX_OK:
            *http = 1;
            return NGX_OK;

        case NGX_AGAIN:
            return ngx_stream_bottle_more(s, ctx, p == b->pos, 0);

        default:
            return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_RAW_TCP,
                                            "the bytes after CONNECT are not "
                                            "TLS or HTTP: raw TCP refused");
        }
    }

    rc = bottle_hello_parse(&hello, p, n);

    if (rc == BOTTLE_HELLO_OK) {
        return NGX_OK;
    }

    if (rc == BOTTLE_HELLO_AGAIN) {
        return ngx_stream_bottle_more(s, ctx, p == b->pos, hello.need);
    }

    if (p[0] != 0x16) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_RAW_TCP,
                                        "the bytes after CONNECT are not "
                                        "a TLS ClientHello: raw TCP refused");
    }

    return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_RAW_TCP,
                                    "the bytes after CONNECT are not a valid "
                                    "TLS ClientHello (%s): raw TCP refused",
                                    bottle_hello_strerror(rc));
}


/*
 * Wait for more of the tunnel's first bytes: in c->buffer, which must hold
 * "need" bytes (a ClientHello may be larger than a request head), or, when
 * they were peeked, in the socket.
 */

static ngx_int_t
ngx_stream_bottle_more(ngx_stream_session_t *s, ngx_stream_bottle_ctx_t *ctx,
    ngx_uint_t read, size_t need)
{
    ngx_buf_t         *b, *nb;
    ngx_connection_t  *c;

    c = s->connection;
    b = c->buffer;

    if (read) {
        if ((size_t) (b->end - b->start) < need) {
            nb = ngx_create_temp_buf(c->pool, need);
            if (nb == NULL) {
                return ngx_stream_bottle_refuse(s, ctx,
                                                NGX_BOTTLE_RULE_INTERNAL,
                                                "out of memory");
            }

            nb->last = ngx_cpymem(nb->last, b->pos, b->last - b->pos);
            c->buffer = nb;
        }

        return NGX_AGAIN;
    }

    c->read->ready = 0;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ctx->state = NGX_STREAM_BOTTLE_DONE;
        ngx_stream_finalize_session(s, NGX_STREAM_INTERNAL_SERVER_ERROR);
    }

    return NGX_DONE;
}


/* an HTTP request line starts with a method: uppercase letters, a space */

static ngx_int_t
ngx_stream_bottle_request_line(u_char *p, size_t n)
{
    size_t  i;

    for (i = 0; i < n && i < 21; i++) {
        if (p[i] == ' ') {
            return i ? NGX_OK : NGX_DECLINED;
        }

        if (p[i] < 'A' || p[i] > 'Z') {
            return NGX_DECLINED;
        }
    }

    return i < 21 ? NGX_AGAIN : NGX_DECLINED;
}


/*
 * The tunnel of an inspected route goes to an internal listener; the
 * CONNECT's decision goes to the zone, keyed by the agent's address:port,
 * for as long as this session lives.
 */

static ngx_int_t
ngx_stream_bottle_record(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_str_t *pass)
{
    ngx_int_t                      rc;
    ngx_bottle_target_t            target;
    ngx_stream_bottle_srv_conf_t  *bscf;

    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);

    if (ngx_bottle_zone_key(s->connection, ctx->key_buf, sizeof(ctx->key_buf),
                            &ctx->key)
        != NGX_OK)
    {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "no client address for the record");
    }

    target.id.data = (u_char *) ctx->verdict.bottle->id.data;
    target.id.len = ctx->verdict.bottle->id.len;
    target.host = ctx->verdict.host;
    target.port = ctx->port;

    rc = ngx_bottle_zone_insert(&ctx->key, &target);

    if (rc != NGX_OK) {
        ctx->key.len = 0;
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        rc == NGX_DECLINED
                                        ? "a record for this address exists"
                                        : "the bottle_connect zone is full");
    }

    if (pass == &bscf->tls_pass && ngx_stream_bottle_adopt(s, ctx) == NGX_DONE)
    {
        return NGX_DONE;
    }

    return ngx_stream_bottle_handoff(s, ctx, pass);
}


/*
 * Hand the bytes as they came to an internal listener, behind a PROXY
 * protocol header that carries the agent's address to the http side.
 */

static ngx_int_t
ngx_stream_bottle_handoff(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_str_t *pass)
{
    size_t             size;
    ngx_buf_t         *b, *nb;
    ngx_connection_t  *c;

    c = s->connection;
    b = c->buffer;
    size = NGX_PROXY_PROTOCOL_MAX_HEADER + (b->last - b->pos);

    nb = ngx_create_temp_buf(c->pool, size);
    if (nb == NULL) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "out of memory");
    }

    nb->last = ngx_proxy_protocol_write(c, nb->last, nb->end);
    if (nb->last == NULL) {
        return ngx_stream_bottle_refuse(s, ctx, NGX_BOTTLE_RULE_INTERNAL,
                                        "cannot write the PROXY header");
    }

    nb->last = ngx_cpymem(nb->last, b->pos, b->last - b->pos);
    c->buffer = nb;

    ctx->upstream = *pass;

    ngx_stream_bottle_final_start(s, ctx);

    ngx_stream_bottle_resume(s, ctx);

    return NGX_DONE;
}


static void
ngx_stream_bottle_resume(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx)
{
    ngx_connection_t  *c;

    c = s->connection;

    ctx->state = NGX_STREAM_BOTTLE_DONE;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    c->read->handler = ngx_stream_session_handler;
    c->write->handler = ngx_stream_session_handler;

    s->phase_handler = ctx->phase + 1;

    ngx_stream_core_run_phases(s);
}
