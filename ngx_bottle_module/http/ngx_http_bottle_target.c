
/*
 * Who asks, and for what: the tunnel a request came through, its target,
 * its bottle, and the Host and SNI checks.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_head.h"


#define NGX_HTTP_BOTTLE_PASSWORD_MAX  512


static ngx_int_t ngx_http_bottle_absolute(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_uint_t in_tunnel);
static void ngx_http_bottle_conn_cleanup(void *data);
static ngx_int_t ngx_http_bottle_path(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);


/*
 * The target: inside a tunnel, the CONNECT's target; otherwise the absolute
 * URI's host and port.  Policy keys on it, never on the Host header.  The
 * path goes upstream exactly as the agent sent it, so it must be the path
 * the policy saw (ngx_http_bottle_path).
 */

ngx_int_t
ngx_http_bottle_target(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    u_char                  *p, *last, *q;
    ngx_int_t                rc;
    ngx_http_bottle_conn_t  *bc;

    rc = ngx_http_bottle_tunnel(r, &bc);
    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (bc) {
        ctx->tunnel = bc;
        ctx->target.host = bc->target.host;
        ctx->target.port = bc->target.port;
        ctx->verdict.host = bc->target.host;

        rc = ngx_http_bottle_absolute(r, ctx, 1);

    } else if (r->connection->ssl) {
        /* the certificate callback refuses this already; fail closed */
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_INTERNAL,
                                    "no CONNECT record for this connection");

    } else {
        rc = ngx_http_bottle_absolute(r, ctx, 0);
    }

    if (rc != NGX_OK) {
        return rc;
    }

    /* unparsed_uri starts at the path, or at '?' when the path is empty */

    p = r->unparsed_uri.data;
    last = p + r->unparsed_uri.len;
    q = ngx_strlchr(p, last, '?');

    if (q == p || r->unparsed_uri.len == 0) {
        ngx_str_set(&ctx->target.path, "/");

    } else {
        ctx->target.path.data = p;
        ctx->target.path.len = (q ? q : last) - p;
    }

    if (q) {
        ctx->target.args.data = q + 1;
        ctx->target.args.len = last - q - 1;
    }

    return ngx_http_bottle_path(r, ctx);
}


/*
 * Every request, not only a connection's first: a '#' anywhere in the
 * target (servers that drop a fragment serve the path before it, which
 * no allow entry saw), and a "." or ".." segment in any spelling a server
 * may undo (matrix parameters, nested percent-encoding, whitespace,
 * encoded or backslash separators; bottle_uri.h).
 */

static ngx_int_t
ngx_http_bottle_path(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    u_char             *scratch;
    bottle_request_t    req;
    bottle_decision_t   d;

    scratch = ngx_pnalloc(r->pool, ctx->target.path.len);
    if (scratch == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(&req, sizeof(bottle_request_t));
    req.path = (const char *) ctx->target.path.data;
    req.path_len = ctx->target.path.len;
    req.query = (const char *) ctx->target.args.data;
    req.query_len = ctx->target.args.len;

    bottle_decide_target(&d, &req, scratch);

    if (d.rule == BOTTLE_RULE_NONE) {
        return NGX_OK;
    }

    return ngx_http_bottle_deny(ctx, r->pool, d.rule, "%*s", d.reason_len,
                                (u_char *) d.reason);
}


/*
 * An absolute URI: the target of a plain proxy request; inside a tunnel
 * (in_tunnel) it may only name the tunnel's own target.
 */

static ngx_int_t
ngx_http_bottle_absolute(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_uint_t in_tunnel)
{
    u_char      *p, *last, *q, *hend;
    ngx_int_t    rc, port;
    ngx_str_t    host, canon;
    ngx_uint_t   bracketed, tls;

    if (r->schema_start == NULL || r->host_start == NULL
        || r->host_end == NULL)
    {
        if (in_tunnel) {
            return NGX_OK;
        }

        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_BAD_REQUEST,
                                    "not a proxy request: the target must "
                                    "be an absolute http:// URI");
    }

    tls = (r->schema_end - r->schema_start == 5
           && ngx_strncasecmp(r->schema_start, (u_char *) "https", 5) == 0);

    if (!(r->schema_end - r->schema_start == 4
          && ngx_strncasecmp(r->schema_start, (u_char *) "http", 4) == 0)
        && !(tls && in_tunnel))
    {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_BAD_REQUEST,
                                    "only http:// URIs are proxied in the "
                                    "clear; use CONNECT for https");
    }

    /*
     * nginx 1.29 and later end the host after the port (for CONNECT's
     * host:port), earlier versions before the ':': the host is up to the
     * ']' of an IP literal, or up to the first ':'
     */

    if (r->host_start[0] == '[') {
        p = ngx_strlchr(r->host_start, r->host_end, ']');
        hend = (p == NULL) ? r->host_end : p + 1;

    } else {
        p = ngx_strlchr(r->host_start, r->host_end, ':');
        hend = (p == NULL) ? r->host_end : p;
    }

    host.data = r->host_start;
    host.len = hend - r->host_start;
    bracketed = 0;

    if (host.len > 2 && host.data[0] == '[') {
        host.data++;
        host.len -= 2;
        bracketed = 1;
    }

    rc = ngx_bottle_canonical_host(r->pool, host.data, host.len, bracketed,
                                   &canon);
    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (!in_tunnel) {
        ctx->verdict.host = rc == NGX_OK ? canon : host;
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_BAD_REQUEST,
                                    "the target host is not a valid host "
                                    "name or IP address");
    }

    port = tls ? 443 : 80;
    last = r->request_line.data + r->request_line.len;

    if (hend < last && *hend == ':') {
        for (p = hend + 1, q = p; q < last && *q >= '0' && *q <= '9';
             q++) { /* void */ }

        port = ngx_atoi(p, q - p);

        if (port < 1 || port > 65535) {
            return ngx_http_bottle_deny(ctx, r->pool,
                                        NGX_BOTTLE_RULE_BAD_REQUEST,
                                        "invalid port in the target");
        }
    }

    if (!in_tunnel) {
        ctx->target.host = canon;
        ctx->target.port = (in_port_t) port;
        return NGX_OK;
    }

    if ((in_port_t) port != ctx->target.port
        || canon.len != ctx->target.host.len
        || ngx_strncmp(canon.data, ctx->target.host.data, canon.len) != 0)
    {
        return ngx_http_bottle_deny(ctx, r->pool,
                                    NGX_BOTTLE_RULE_HOST_MISMATCH,
                                    "the request names another host or port "
                                    "than the CONNECT target");
    }

    return NGX_OK;
}


/*
 * The CONNECT a connection on an internal listener belongs to: looked up in
 * the zone once, on the connection's first request, and kept with the
 * connection, so the policy is resolved once per tunnel.  *out is NULL for
 * a connection that is no tunnel (a plain proxy connection).
 */

ngx_int_t
ngx_http_bottle_tunnel(ngx_http_request_t *r, ngx_http_bottle_conn_t **out)
{
    ngx_int_t                rc;
    ngx_str_t                key;
    const char              *reason;
    ngx_connection_t        *c;
    ngx_pool_cleanup_t      *cln;
    ngx_http_bottle_conn_t  *bc;
    u_char                   buf[NGX_BOTTLE_ZONE_KEY_LEN];

    *out = NULL;
    c = r->connection;

    for (cln = c->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_bottle_conn_cleanup) {
            bc = cln->data;
            *out = bc->found ? bc : NULL;
            return NGX_OK;
        }
    }

    cln = ngx_pool_cleanup_add(c->pool, sizeof(ngx_http_bottle_conn_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_bottle_conn_cleanup;
    bc = cln->data;
    ngx_memzero(bc, sizeof(ngx_http_bottle_conn_t));

    if (c->proxy_protocol == NULL
        || ngx_bottle_zone_key(c, buf, sizeof(buf), &key) != NGX_OK)
    {
        return NGX_OK;
    }

    rc = ngx_bottle_zone_find(&key, c->pool, &bc->target);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc == NGX_OK) {
        bc->found = 1;
        *out = bc;

        /* the bottle as the store has it now (none while it is unusable:
           every request looks again) */
        bc->entry = ngx_bottle_find_id(bc->target.id.data, bc->target.id.len,
                                       &reason);
        if (bc->entry) {
            ngx_bottle_entry_ref(bc->entry);
        }
    }

    return NGX_OK;
}


/* the marker of the connection's tunnel; its bottle's reference */

static void
ngx_http_bottle_conn_cleanup(void *data)
{
    ngx_http_bottle_conn_t  *bc = data;

    if (bc->entry) {
        ngx_bottle_entry_release(bc->entry);
        bc->entry = NULL;
    }
}


/*
 * The tunnel's bottle, as the store has it now: a tunnel outlives policy
 * changes, so every request of it looks again (a changed bottle's new
 * policy applies, a removed bottle's requests are refused).
 */

static ngx_int_t
ngx_http_bottle_tunnel_bottle(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_http_bottle_conn_t *bc)
{
    const char          *reason;
    ngx_bottle_entry_t  *e;

    if (ngx_bottle_store_usable(&reason) != NGX_OK) {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_IDENTITY,
                                    "%s", reason);
    }

    e = bc->entry;

    if (e == NULL || !e->listed) {
        e = ngx_bottle_find_id(bc->target.id.data, bc->target.id.len,
                               &reason);
        if (e == NULL) {
            return ngx_http_bottle_deny(ctx, r->pool,
                                        NGX_BOTTLE_RULE_IDENTITY,
                                        "the tunnel's bottle is no longer "
                                        "in the policy");
        }

        if (bc->entry) {
            ngx_bottle_entry_release(bc->entry);
        }

        ngx_bottle_entry_ref(e);
        bc->entry = e;

        /* the peer was checked against the old policy's route */
        bc->peer_route = NULL;
    }

    /* a request of an HTTP/2 tunnel may outlive the next one's switch */

    if (ngx_bottle_entry_hold(e, r->pool) != NGX_OK) {
        return NGX_ERROR;
    }

    ctx->entry = e;
    ctx->verdict.bottle = e->bottle;

    return NGX_OK;
}


/*
 * Identity.  Inside a tunnel: the bottle the CONNECT resolved.  Otherwise as
 * on the front: the Proxy-Authorization Basic password is the bottle's
 * token, bound to the bottle's source addresses; the agent's address is the
 * one the front wrote in the PROXY protocol header.
 */

ngx_int_t
ngx_http_bottle_identify(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ssize_t              n;
    ngx_int_t            rc;
    ngx_uint_t           count;
    ngx_table_elt_t     *h;
    u_char               password[NGX_HTTP_BOTTLE_PASSWORD_MAX];

    if (ctx->tunnel) {
        /* the CONNECT identified the bottle; its credentials are gone */
        return ngx_http_bottle_tunnel_bottle(r, ctx, ctx->tunnel);
    }

    h = ngx_http_bottle_find_header(r, "proxy-authorization",
                                    sizeof("proxy-authorization") - 1,
                                    &count);

    if (count > 1) {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_BAD_REQUEST,
                                    "more than one Proxy-Authorization");
    }

    if (h == NULL) {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_IDENTITY,
                                    "no proxy credentials");
    }

    n = bottle_head_basic_password(password, sizeof(password),
                                   h->value.data, h->value.len);

    rc = ngx_http_bottle_bind(r, ctx, password, n,
                              "malformed proxy credentials");

    ngx_explicit_memzero(password, sizeof(password));

    return rc;
}


/*
 * The bottle of an identity token (n bytes; n <= 0: malformed, refused
 * with that reason), held for the request and bound to its source
 * addresses: the pipeline's identity and bottle_attribute's.
 */

ngx_int_t
ngx_http_bottle_bind(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    const u_char *token, ssize_t n, const char *malformed)
{
    const char          *reason;
    bottle_ip_t          ip;
    ngx_bottle_entry_t  *e;

    reason = malformed;
    e = (n > 0) ? ngx_bottle_find_token(token, (size_t) n, &reason) : NULL;

    if (e == NULL) {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_IDENTITY,
                                    "%s", reason);
    }

    if (ngx_bottle_entry_hold(e, r->pool) != NGX_OK) {
        return NGX_ERROR;
    }

    ctx->entry = e;
    ctx->verdict.bottle = e->bottle;

    if (ngx_bottle_client_ip(r->connection, &ip) != NGX_OK
        || !bottle_source_allowed(e->bottle, &ip))
    {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_IDENTITY,
                                    "the token is not valid from this "
                                    "address");
    }

    return NGX_OK;
}


/*
 * The Host header (HTTP/2: :authority, which nginx turns into Host) and the
 * TLS SNI must name the target: same host (case-insensitive, no trailing
 * dot, IP literals canonical) and, for Host, the same port (the scheme's
 * when absent); an SNI names no port, or exactly the target's.
 */

ngx_int_t
ngx_http_bottle_host_check(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
#if (NGX_HTTP_SSL)
    ngx_str_t    sni;
    const char  *name;
#endif

    if (r->headers_in.host
        && ngx_bottle_host_matches(r->pool, &r->headers_in.host->value,
                                   &ctx->target.host, ctx->target.port,
                                   r->connection->ssl ? 443 : 80)
           != NGX_OK)
    {
        return ngx_http_bottle_deny(ctx, r->pool,
                                    NGX_BOTTLE_RULE_HOST_MISMATCH,
                                    "the Host header names another host or "
                                    "port than the %s target",
                                    ctx->tunnel ? "CONNECT" : "request");
    }

    /* HTTP/1.0 may omit Host; nginx refuses HTTP/1.1 without it */

#if (NGX_HTTP_SSL)

    if (r->connection->ssl == NULL) {
        return NGX_OK;
    }

    name = SSL_get_servername(r->connection->ssl->connection,
                              TLSEXT_NAMETYPE_host_name);
    if (name == NULL) {
        return NGX_OK;
    }

    sni.data = (u_char *) name;
    sni.len = ngx_strlen(name);

    if (ngx_bottle_sni_matches(r->pool, &sni, &ctx->target.host,
                               ctx->target.port)
        != NGX_OK)
    {
        return ngx_http_bottle_deny(ctx, r->pool,
                                    NGX_BOTTLE_RULE_HOST_MISMATCH,
                                    "the TLS SNI names another host (or "
                                    "port) than the CONNECT target");
    }

#endif

    return NGX_OK;
}
