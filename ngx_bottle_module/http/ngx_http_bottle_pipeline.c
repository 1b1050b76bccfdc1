
/*
 * The per-request pipeline, in the order of the spec (gateway.txt "Per
 * request"): resolve the bottle, host check, _egress.local introspection,
 * (outbound DLP: its own issue), git boundary, route policy, credential
 * stripping, auth injection; then the upstream address is resolved and
 * checked.  Nothing is dialled before every step passed; a refusal is one
 * status, one plain-text reason and one log line.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_introspect.h"


static ngx_int_t ngx_http_bottle_run(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static void ngx_http_bottle_body_handler(ngx_http_request_t *r);
static void ngx_http_bottle_checks_resume(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_int_t rc);
static void ngx_http_bottle_contact_resume(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_int_t rc);
static void ngx_http_bottle_checked(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_int_t rc);
static ngx_int_t ngx_http_bottle_checks(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static ngx_int_t ngx_http_bottle_checks_after_dlp(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static ngx_int_t ngx_http_bottle_allowlist(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static ngx_int_t ngx_http_bottle_git(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static ngx_int_t ngx_http_bottle_route(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static ngx_int_t ngx_http_bottle_decided(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, bottle_decision_t *d);
static ngx_int_t ngx_http_bottle_allowed(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static ngx_int_t ngx_http_bottle_resolve_upstream(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static void ngx_http_bottle_resolved(void *data, ngx_int_t rc);
static ngx_int_t ngx_http_bottle_tunnel_peer(ngx_http_bottle_ctx_t *ctx);
static void ngx_http_bottle_tunnel_keep(ngx_http_bottle_ctx_t *ctx);
static ngx_int_t ngx_http_bottle_failed_handler(ngx_http_request_t *r);


ngx_int_t
ngx_http_bottle_handler(ngx_http_request_t *r)
{
    ngx_int_t                    rc;
    ngx_http_bottle_ctx_t       *ctx;
    ngx_http_bottle_loc_conf_t  *blcf;

    blcf = ngx_http_get_module_loc_conf(r, ngx_http_bottle_module);

    if (!blcf->enable) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_bottle_get_ctx(r);

    if (ctx) {
        switch (ctx->state) {
        case NGX_HTTP_BOTTLE_PASSED:
            return NGX_DECLINED;
        case NGX_HTTP_BOTTLE_RESOLVING:
        case NGX_HTTP_BOTTLE_READING:
            return NGX_AGAIN;
        default:
            return NGX_HTTP_FORBIDDEN;
        }
    }

    if (r != r->main) {
        /* a subrequest never carries an agent's request upstream */
        return NGX_HTTP_FORBIDDEN;
    }

    ctx = ngx_http_bottle_create_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->resume = ngx_http_bottle_checks_resume;

    rc = ngx_http_bottle_run(r, ctx);

    if (rc == NGX_DECLINED) {
        ngx_http_finalize_request(r,
                                  ngx_http_bottle_refuse(r, ctx, "Basic", 0));
        return NGX_DONE;
    }

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* NGX_DONE: answered, or the rest runs once the body is read */

    return rc;
}


/* NGX_OK passed, NGX_DECLINED refused (ctx->verdict says why) */

static ngx_int_t
ngx_http_bottle_run(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ngx_int_t  rc;

    if (r->http_version < NGX_HTTP_VERSION_10) {
        /* no headers: no Host to check, no way to answer with a rule */
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_BAD_REQUEST,
                                    "an HTTP/0.9 request");
    }

    rc = ngx_http_bottle_target(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_bottle_identify(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_bottle_host_check(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_bottle_is_egress_host(&ctx->target.host)) {
        return ngx_http_bottle_allowlist(r, ctx);
    }

    rc = ngx_http_bottle_route(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    /* its connection stays open until the policy no longer allows it */

    if (ngx_http_bottle_conns_add(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    /*
     * The body is read whole before anything else is decided, so that DLP
     * sees all of the request before any credential is touched and before
     * any upstream contact.
     */

    ctx->state = NGX_HTTP_BOTTLE_READING;

    rc = ngx_http_read_client_request_body(r, ngx_http_bottle_body_handler);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        ctx->state = NGX_HTTP_BOTTLE_REFUSED;
        return rc;
    }

    ngx_http_finalize_request(r, NGX_DONE);

    return NGX_DONE;
}


/* the request is all here: the rest of the pipeline */

static void
ngx_http_bottle_body_handler(ngx_http_request_t *r)
{
    ngx_http_bottle_ctx_t  *ctx;

    ctx = ngx_http_bottle_get_ctx(r);

    r->write_event_handler = ngx_http_core_run_phases;

    ngx_http_bottle_checked(r, ctx, ngx_http_bottle_checks(r, ctx));
}


/*
 * The DLP's body scan came back from its thread with rc: the rest; or a
 * held request was approved (NGX_HTTP_BOTTLE_RESCAN): the DLP again, then
 * the rest.
 */

static void
ngx_http_bottle_checks_resume(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_int_t rc)
{
    ctx->async = 0;

    if (rc == NGX_HTTP_BOTTLE_RESCAN) {
        rc = ngx_http_bottle_checks(r, ctx);

    } else if (rc == NGX_OK) {
        rc = ngx_http_bottle_checks_after_dlp(r, ctx);
    }

    ngx_http_bottle_checked(r, ctx, rc);
}


static void
ngx_http_bottle_checked(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_int_t rc)
{
    switch (rc) {

    case NGX_OK:
        ngx_http_core_run_phases(r);
        return;

    case NGX_DECLINED:
        ngx_http_finalize_request(r,
                                  ngx_http_bottle_refuse(r, ctx, "Basic", 0));
        return;

    case NGX_AGAIN:
        /* the resolver, or the DLP's thread, goes on */
        ctx->async = 1;
        return;

    case NGX_DONE:
        return;

    default:
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
    }
}


static ngx_int_t
ngx_http_bottle_checks(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ngx_int_t  rc;

    /* NGX_AGAIN: ngx_http_bottle_checks_resume() comes back */

    rc = ngx_http_bottle_dlp(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_http_bottle_checks_after_dlp(r, ctx);
}


static ngx_int_t
ngx_http_bottle_checks_after_dlp(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx)
{
    ngx_int_t  rc;

    rc = ngx_http_bottle_git(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_bottle_strip(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    /* methods, allow entries, a WebSocket upgrade */

    rc = ngx_http_bottle_allowed(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    /* an MCP server's route: the JSON-RPC calls (NGX_DONE: answered) */

    rc = ngx_http_bottle_mcp(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_bottle_inject(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    /* NGX_AGAIN: ngx_http_bottle_contact_resume() comes back */

    ctx->resume = ngx_http_bottle_contact_resume;

    rc = ngx_http_bottle_first_contact(r, ctx);
    if (rc != NGX_OK) {
        return rc;
    }

    return ngx_http_bottle_resolve_upstream(r, ctx);
}


/* the first contact is recorded (or refused): the upstream */

static void
ngx_http_bottle_contact_resume(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_int_t rc)
{
    ctx->async = 0;

    if (rc == NGX_OK) {
        rc = ngx_http_bottle_resolve_upstream(r, ctx);
    }

    ngx_http_bottle_checked(r, ctx, rc);
}


static ngx_int_t
ngx_http_bottle_allowlist(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    char       *json;
    size_t      len;
    ngx_int_t   rc;
    ngx_str_t   body, type;

    static ngx_str_t  missing = ngx_string("not found: try /allowlist\n");

    ngx_str_set(&type, "text/plain; charset=utf-8");

    if (ctx->target.path.len != sizeof("/allowlist") - 1
        || ngx_strncmp(ctx->target.path.data, "/allowlist",
                       sizeof("/allowlist") - 1) != 0)
    {
        rc = ngx_http_bottle_send(r, NGX_HTTP_NOT_FOUND, &type, &missing);
        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    json = bottle_allowlist_json(ctx->verdict.bottle, &len);
    if (json == NULL) {
        return NGX_ERROR;
    }

    body.data = ngx_pnalloc(r->pool, len + 1);
    if (body.data == NULL) {
        free(json);
        return NGX_ERROR;
    }

    body.len = ngx_sprintf(body.data, "%*s\n", len, json) - body.data;
    free(json);

    ngx_str_set(&type, "application/json");

    ctx->state = NGX_HTTP_BOTTLE_PASSED;

    rc = ngx_http_bottle_send(r, NGX_HTTP_OK, &type, &body);
    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/*
 * The route of the target, and its port.  A passthrough route's host is
 * policed here like any other: plain HTTP is never an unscanned channel.
 * The request-level decisions are libbottle's (bottle_decide.h), which
 * bottlectl explain runs too; the request is described for them once.
 */

static ngx_int_t
ngx_http_bottle_route(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    bottle_request_t   *req;
    bottle_decision_t   d;

    req = &ctx->req;

    req->method = (const char *) r->method_name.data;
    req->method_len = r->method_name.len;
    req->host = (const char *) ctx->target.host.data;
    req->host_len = ctx->target.host.len;
    req->port = ctx->target.port;
    req->tunnel = (ctx->tunnel != NULL);
    req->path = (const char *) ctx->target.path.data;
    req->path_len = ctx->target.path.len;
    req->query = (const char *) ctx->target.args.data;
    req->query_len = ctx->target.args.len;

    bottle_decide_route(&d, ctx->verdict.bottle, req);

    ctx->route = d.route;

    return ngx_http_bottle_decided(r, ctx, &d);
}


/* a libbottle decision: NGX_OK, or the refusal it names */

static ngx_int_t
ngx_http_bottle_decided(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    bottle_decision_t *d)
{
    if (d->rule == BOTTLE_RULE_NONE) {
        return NGX_OK;
    }

    return ngx_http_bottle_deny(ctx, r->pool, d->rule, "%*s", d->reason_len,
                                (u_char *) d->reason);
}


/* git smart HTTP, on the decoded path and query */

static ngx_int_t
ngx_http_bottle_git(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    u_char             *scratch;
    bottle_decision_t   d;

    scratch = ngx_pnalloc(r->pool, bottle_decide_git_scratch(&ctx->req));
    if (scratch == NULL) {
        return NGX_ERROR;
    }

    bottle_decide_git(&d, ctx->route, &ctx->req, scratch);

    return ngx_http_bottle_decided(r, ctx, &d);
}


/*
 * Methods, allow entries, a WebSocket upgrade.  The headers are seen
 * without the stripped ones, and only a route whose allow entries filter
 * on headers has them listed for libbottle.
 */

static ngx_int_t
ngx_http_bottle_allowed(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ngx_uint_t               i, n;
    ngx_list_part_t         *part;
    ngx_table_elt_t         *h;
    bottle_request_t        *req;
    bottle_decision_t        d;
    bottle_decide_header_t  *bh;

    req = &ctx->req;

    if (bottle_decide_wants_headers(ctx->route)) {
        n = 0;

        for (part = &r->headers_in.headers.part; part; part = part->next) {
            n += part->nelts;
        }

        bh = ngx_palloc(r->pool, (n ? n : 1) * sizeof(bottle_decide_header_t));
        if (bh == NULL) {
            return NGX_ERROR;
        }

        req->headers = bh;

        for (part = &r->headers_in.headers.part; part; part = part->next) {
            h = part->elts;

            for (i = 0; i < part->nelts; i++) {
                bh->name = (const char *) h[i].key.data;
                bh->name_len = h[i].key.len;
                bh->value = (const char *) h[i].value.data;
                bh->value_len = h[i].value.len;
                bh++;
            }
        }

        req->nheaders = n;
    }

    if (r->headers_in.upgrade) {
        req->upgrade = (const char *) r->headers_in.upgrade->value.data;
        req->upgrade_len = r->headers_in.upgrade->value.len;
    }

    bottle_decide_policy(&d, ctx->route, req);

    if (d.rule == BOTTLE_RULE_NONE && r->headers_in.upgrade) {
        ctx->upgrade = r->headers_in.upgrade->value;
    }

    return ngx_http_bottle_decided(r, ctx, &d);
}


static ngx_int_t
ngx_http_bottle_resolve_upstream(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx)
{
    u_char                    *p;
    ngx_int_t                  rc;
    ngx_str_t                  args;
    ngx_bottle_resolve_t      *res;
    ngx_http_core_loc_conf_t  *clcf;

    /* $bottle_uri: the path as sent, the query without credentials */

    if (ngx_http_bottle_strip_args(r, ctx, &args) != NGX_OK) {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(r->pool, ctx->target.path.len + 1 + args.len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ctx->uri.data = p;
    p = ngx_cpymem(p, ctx->target.path.data, ctx->target.path.len);

    if (args.len) {
        *p++ = '?';
        p = ngx_cpymem(p, args.data, args.len);
    }

    ctx->uri.len = p - ctx->uri.data;

    /*
     * nginx prints the request line in its log lines about this request
     * (an upstream error, $request): from here on it is the one that goes
     * upstream, without the agent's query credentials.
     */

    p = ngx_pnalloc(r->pool, r->method_name.len + 1 + ctx->uri.len + 1
                             + r->http_protocol.len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    r->request_line.data = p;
    p = ngx_sprintf(p, "%V %V", &r->method_name, &ctx->uri);

    if (r->http_protocol.len) {
        p = ngx_sprintf(p, " %V", &r->http_protocol);
    }

    r->request_line.len = p - r->request_line.data;

    /* $bottle_host_header: the target, as the upstream expects it */

    p = ngx_pnalloc(r->pool, ctx->target.host.len + sizeof("[]:65535") - 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ctx->host_header.data = p;

    if (ngx_strlchr(ctx->target.host.data,
                    ctx->target.host.data + ctx->target.host.len, ':'))
    {
        p = ngx_sprintf(p, "[%V]", &ctx->target.host);

    } else {
        p = ngx_cpymem(p, ctx->target.host.data, ctx->target.host.len);
    }

    if (ctx->target.port != 80) {
        p = ngx_sprintf(p, ":%ui", (ngx_uint_t) ctx->target.port);
    }

    ctx->host_header.len = p - ctx->host_header.data;

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    res = &ctx->resolve;
    res->resolver = clcf->resolver;
    res->timeout = clcf->resolver_timeout;
    res->log = r->connection->log;
    res->pool = r->pool;
    res->route = ctx->route;
    res->host = ctx->target.host;
    res->port = ctx->target.port;
    res->handler = ngx_http_bottle_resolved;
    res->data = r;

    ctx->state = NGX_HTTP_BOTTLE_RESOLVING;

    rc = ngx_http_bottle_tunnel_peer(ctx);

    if (rc == NGX_DECLINED) {
        rc = ngx_bottle_resolve(res);
    }

    if (rc != NGX_AGAIN) {
        ngx_http_bottle_resolved(r, rc);
    }

    switch (ctx->state) {
    case NGX_HTTP_BOTTLE_RESOLVING:
        return NGX_AGAIN;
    case NGX_HTTP_BOTTLE_PASSED:
        return NGX_OK;
    default:
        return NGX_DECLINED;
    }
}


static void
ngx_http_bottle_resolved(void *data, ngx_int_t rc)
{
    ngx_http_request_t *r = data;

    ngx_connection_t       *c;
    ngx_http_bottle_ctx_t  *ctx;

    c = r->connection;
    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);

    if (rc == NGX_OK) {
        ngx_http_bottle_tunnel_keep(ctx);
        ctx->upstream.data = ctx->resolve.peer.text;
        ctx->upstream.len = ctx->resolve.peer.text_len;
        ctx->state = NGX_HTTP_BOTTLE_PASSED;

    } else if (rc == NGX_ERROR) {
        (void) ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_INTERNAL,
                                    "resolver failure");

    } else {
        (void) ngx_http_bottle_deny(ctx, r->pool, ctx->resolve.rule, "%V",
                                    &ctx->resolve.reason);
    }

    if (!ctx->async) {
        /* called from ngx_http_bottle_resolve_upstream(): it goes on */
        return;
    }

    if (ctx->state == NGX_HTTP_BOTTLE_PASSED) {
        ngx_http_core_run_phases(r);

    } else {
        ngx_http_finalize_request(r,
                                  ngx_http_bottle_refuse(r, ctx, "Basic", 0));
    }

    ngx_http_run_posted_requests(c);
}


/*
 * Every request of a tunnel goes to its CONNECT target (ctx->target is the
 * tunnel's, and the request must name it): the address the first one
 * resolved and checked for its route serves the next ones for as long as
 * the resolver's answer holds, as its cache would give it, without a
 * lookup per request.  NGX_DECLINED: none kept, resolve.
 */

static ngx_int_t
ngx_http_bottle_tunnel_peer(ngx_http_bottle_ctx_t *ctx)
{
    ngx_http_bottle_conn_t  *bc;

    bc = ctx->tunnel;

    if (bc == NULL
        || bc->peer_route != ctx->route
        || bc->peer_valid < ngx_time())
    {
        return NGX_DECLINED;
    }

    ctx->resolve.peer = bc->peer;
    ctx->resolve.peer.addr.name.data = ctx->resolve.peer.text;

    return NGX_OK;
}


static void
ngx_http_bottle_tunnel_keep(ngx_http_bottle_ctx_t *ctx)
{
    ngx_bottle_peer_t       *peer;
    ngx_http_bottle_conn_t  *bc;

    bc = ctx->tunnel;
    peer = &ctx->resolve.peer;

    if (bc == NULL
        || peer->addr.sockaddr == &bc->peer_sockaddr.sockaddr
        || peer->addr.socklen > sizeof(ngx_sockaddr_t))
    {
        return;
    }

    ngx_memcpy(&bc->peer_sockaddr, peer->addr.sockaddr, peer->addr.socklen);
    bc->peer = *peer;
    bc->peer.addr.sockaddr = &bc->peer_sockaddr.sockaddr;
    bc->peer.addr.name.data = bc->peer.text;
    bc->peer_route = ctx->route;
    bc->peer_valid = ctx->resolve.valid;
}


/*
 * bottle_upstream_failed: the content of the error_page location for 502
 * and 504 from the proxy, so that an unreachable upstream is a refusal like
 * any other: a reason the agent can read and one log line.
 */

char *
ngx_http_bottle_upstream_failed(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_bottle_failed_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_bottle_failed_handler(ngx_http_request_t *r)
{
    ngx_http_bottle_ctx_t  *ctx;

    ctx = ngx_http_bottle_get_ctx(r);

    if (ctx == NULL) {
        ctx = ngx_http_bottle_create_ctx(r);
        if (ctx == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    (void) ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_UPSTREAM,
                                "the upstream %V failed (%ui): unreachable, "
                                "no answer, or a certificate that did not "
                                "verify",
                                &ctx->upstream,
                                r->err_status ? r->err_status
                                              : (ngx_uint_t) 502);

    return ngx_http_bottle_refuse(r, ctx, "Basic", 0);
}
