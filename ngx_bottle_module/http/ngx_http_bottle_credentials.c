
/*
 * Agent credentials out, the route's credential in (gateway.txt "Agent
 * credentials", "Injected auth").  On a route without preserve_auth the only
 * identity that goes upstream is the one the gateway adds.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_uri.h"


typedef enum {
    NGX_HTTP_BOTTLE_KEEP = 0,
    NGX_HTTP_BOTTLE_DROP
} ngx_http_bottle_fate_e;


static ngx_uint_t ngx_http_bottle_is_cookie(ngx_table_elt_t *h);
static ngx_int_t ngx_http_bottle_cookies(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_table_elt_t **first, ngx_str_t *kept);
static void ngx_http_bottle_set_cookie(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_str_t *value);
static ngx_http_bottle_fate_e ngx_http_bottle_header_fate(
    ngx_http_bottle_ctx_t *ctx, ngx_table_elt_t *h);


/*
 * The gateway's own headers, the one the route injects, and without
 * preserve_auth the credential headers: libbottle's list
 * (bottle_decide_strips), which bottlectl explain reads too.
 */

static ngx_http_bottle_fate_e
ngx_http_bottle_header_fate(ngx_http_bottle_ctx_t *ctx, ngx_table_elt_t *h)
{
    return bottle_decide_strips(ctx->route, (const char *) h->key.data,
                                h->key.len)
           ? NGX_HTTP_BOTTLE_DROP : NGX_HTTP_BOTTLE_KEEP;
}


static ngx_uint_t
ngx_http_bottle_is_cookie(ngx_table_elt_t *h)
{
    return bottle_decide_is_cookie((const char *) h->key.data, h->key.len);
}


/*
 * The agent's Cookie headers, all of them (HTTP/1.1 may send several;
 * nginx has joined HTTP/2's into one), keep only the pairs the host set for
 * this bottle, each name once, as one header: the first, its value
 * rewritten; the others go.  *first == NULL: none is left.
 */

static ngx_int_t
ngx_http_bottle_cookies(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_table_elt_t **first, ngx_str_t *kept)
{
    ngx_str_t             id;
    ngx_uint_t            i, n;
    ngx_list_part_t      *part;
    ngx_table_elt_t      *h;
    bottle_cookie_str_t  *in;

    *first = NULL;
    kept->len = 0;

    n = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (ngx_http_bottle_is_cookie(&h[i])) {
                if (*first == NULL) {
                    *first = &h[i];
                }

                n++;
            }
        }
    }

    if (n == 0) {
        return NGX_OK;
    }

    in = ngx_palloc(r->pool, n * sizeof(bottle_cookie_str_t));
    if (in == NULL) {
        return NGX_ERROR;
    }

    n = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (ngx_http_bottle_is_cookie(&h[i])) {
                in[n].data = h[i].value.data;
                in[n].len = h[i].value.len;
                n++;
            }
        }
    }

    id.data = (u_char *) ctx->verdict.bottle->id.data;
    id.len = ctx->verdict.bottle->id.len;

    if (ngx_bottle_jar_filter(r->pool, &id, &ctx->target.host, in, n, kept)
        != NGX_OK)
    {
        /* no jar to check against drops them all: fail closed */
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "bottle: the cookie jar could not be read, the "
                      "agent's cookies are dropped");
        kept->len = 0;
    }

    if (kept->len == 0) {
        *first = NULL;
    }

    return NGX_OK;
}


/*
 * Responses: every Set-Cookie of an inspected route's host goes into the
 * jar of the bottle that asked.
 */

void
ngx_http_bottle_capture_cookies(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    for (part = &r->headers_out.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].hash != 0
                && h[i].key.len == sizeof("set-cookie") - 1
                && ngx_strncasecmp(h[i].key.data, (u_char *) "set-cookie",
                                   h[i].key.len) == 0)
            {
                ngx_http_bottle_set_cookie(r, ctx, &h[i].value);
            }
        }
    }
}


/*
 * A Max-Age of zero or less, or an Expires in the past, deletes; a later
 * one is when the cookie stops going upstream (Max-Age first, RFC 6265
 * 5.3; both capped at 400 days); without either it lasts while the gateway
 * runs.
 */

static void
ngx_http_bottle_set_cookie(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_str_t *value)
{
    time_t               now, expires, at;
    ngx_int_t            rc;
    ngx_str_t            id, name, val;
    ngx_uint_t           del;
    bottle_cookie_set_t  c;

    if (bottle_cookie_set_parse(&c, value->data, value->len) != 0) {
        return;
    }

    now = ngx_time();
    expires = 0;
    del = 0;

    if (c.has_max_age) {
        del = (c.max_age <= 0);
        expires = now + (time_t) c.max_age;

    } else if (c.expires.len) {
        at = ngx_parse_http_time((u_char *) c.expires.data, c.expires.len);

        if (at != NGX_ERROR) {
            del = (at <= now);
            expires = ngx_min(at, now + (time_t) BOTTLE_COOKIE_MAX_AGE);
        }
    }

    name.data = (u_char *) c.name.data;
    name.len = c.name.len;
    val.data = (u_char *) c.value.data;
    val.len = c.value.len;

    id.data = (u_char *) ctx->verdict.bottle->id.data;
    id.len = ctx->verdict.bottle->id.len;

    rc = ngx_bottle_jar_set(r->pool, &id, &ctx->target.host, &name, &val,
                            del ? 0 : expires, del);

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "bottle: the cookie jar is full");

    } else if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "bottle: a cookie of %uz bytes is not kept: larger "
                      "than a jar or the bottle's budget takes",
                      name.len + val.len);
    }
}


/*
 * Rebuild the request's header list without the dropped headers, and clear
 * the pointers nginx keeps into it, so no later module sees them.
 */

ngx_int_t
ngx_http_bottle_strip(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ngx_str_t         cookies;
    ngx_uint_t        i, dropped;
    ngx_list_t        kept;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *k, *cookie;

    if (ngx_list_init(&kept, r->pool, 20, sizeof(ngx_table_elt_t)) != NGX_OK) {
        return NGX_ERROR;
    }

    /*
     * A Cookie header keeps only the pairs the host set for this bottle;
     * preserve_auth keeps the agent's cookies as they are.
     */

    cookie = NULL;

    if (!ctx->route->preserve_auth
        && ngx_http_bottle_cookies(r, ctx, &cookie, &cookies) != NGX_OK)
    {
        return NGX_ERROR;
    }

    dropped = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (!ctx->route->preserve_auth
                && ngx_http_bottle_is_cookie(&h[i]))
            {
                if (&h[i] == cookie) {
                    h[i].value = cookies;

                } else {
                    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                                   "bottle: strip header \"Cookie\"");
                    dropped++;
                    continue;
                }
            }

            if (ngx_http_bottle_header_fate(ctx, &h[i])
                == NGX_HTTP_BOTTLE_DROP)
            {
                ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                               "bottle: strip header \"%V\"", &h[i].key);
                dropped++;
                continue;
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


/* after stripping: the route's credential, from the bottle's egress tokens */

ngx_int_t
ngx_http_bottle_inject(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    u_char                *p;
    ngx_table_elt_t       *h;
    const bottle_route_t  *route;

    route = ctx->route;

    /* a response to scrub comes in codings decoded here */
    if (ngx_http_bottle_scrub_request(r, ctx) != NGX_OK) {
        return NGX_ERROR;
    }

    if (route->auth_type == BOTTLE_AUTH_NONE) {
        return NGX_OK;
    }

    h = ngx_list_push(&r->headers_in.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;

    if (route->auth_type == BOTTLE_AUTH_HEADER) {
        h->key.data = (u_char *) route->auth_header.data;
        h->key.len = route->auth_header.len;
        h->value.data = (u_char *) route->auth_value.data;
        h->value.len = route->auth_value.len;

    } else {
        ngx_str_set(&h->key, "Authorization");

        p = ngx_pnalloc(r->pool, sizeof("Bearer ") - 1 + route->auth_value.len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        h->value.data = p;
        p = route->auth_type == BOTTLE_AUTH_BEARER
            ? ngx_cpymem(p, "Bearer ", sizeof("Bearer ") - 1)
            : ngx_cpymem(p, "token ", sizeof("token ") - 1);
        p = ngx_cpymem(p, route->auth_value.data, route->auth_value.len);
        h->value.len = p - h->value.data;

        r->headers_in.authorization = h;
    }

    h->lowcase_key = ngx_pnalloc(r->pool, h->key.len);
    if (h->lowcase_key == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(h->lowcase_key, h->key.data, h->key.len);

    return NGX_OK;
}


/*
 * The query without credential parameters (CREDENTIAL_QUERY_PARAMS of the
 * spec): split on '&' and ';', names compared as frameworks normalise them
 * (bottle_query_is_credential).  Kept parameters go out byte for byte as
 * the agent sent them.
 */

ngx_int_t
ngx_http_bottle_strip_args(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_str_t *out)
{
    u_char  *o;
    size_t   stripped;

    *out = ctx->target.args;

    if (ctx->route->preserve_auth || out->len == 0) {
        return NGX_OK;
    }

    o = ngx_pnalloc(r->pool, out->len);
    if (o == NULL) {
        return NGX_ERROR;
    }

    out->len = bottle_query_strip(o, ctx->target.args.data,
                                  ctx->target.args.len, &stripped);
    out->data = o;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "bottle: %uz query parameters stripped", stripped);

    return NGX_OK;
}
