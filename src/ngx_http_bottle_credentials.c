
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


/* the gateway's own headers: gone whatever the route says */
static ngx_str_t  ngx_http_bottle_gateway_headers[] = {
    ngx_string("proxy-authorization"),
    ngx_string("proxy-connection"),
    ngx_null_string
};

/* CREDENTIAL_HEADERS of the spec; cookies go through the jar */
static ngx_str_t  ngx_http_bottle_credential_headers[] = {
    ngx_string("authorization"),
    ngx_string("x-api-key"),
    ngx_string("api-key"),
    ngx_string("x-goog-api-key"),
    ngx_string("private-token"),
    ngx_string("x-auth-token"),
    ngx_string("x-access-token"),
    ngx_string("x-gitea-token"),
    ngx_string("x-vault-token"),
    ngx_string("x-amz-security-token"),
    ngx_string("ocp-apim-subscription-key"),
    ngx_null_string
};

static ngx_uint_t ngx_http_bottle_in(ngx_str_t *list, u_char *name,
    size_t len);
static ngx_http_bottle_fate_e ngx_http_bottle_cookie_fate(
    ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx, ngx_table_elt_t *h);
static void ngx_http_bottle_set_cookie(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_str_t *value);
static ngx_http_bottle_fate_e ngx_http_bottle_header_fate(
    ngx_http_bottle_ctx_t *ctx, ngx_table_elt_t *h);


ngx_table_elt_t *
ngx_http_bottle_find_header(ngx_http_request_t *r, const char *lowcase,
    size_t len, ngx_uint_t *count)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *found;

    found = NULL;
    *count = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == len
                && ngx_strncasecmp(h[i].key.data, (u_char *) lowcase, len)
                   == 0)
            {
                if (found == NULL) {
                    found = &h[i];
                }

                (*count)++;
            }
        }
    }

    return found;
}


static ngx_uint_t
ngx_http_bottle_in(ngx_str_t *list, u_char *name, size_t len)
{
    for ( /* void */ ; list->len; list++) {
        if (list->len == len && ngx_strncasecmp(list->data, name, len) == 0) {
            return 1;
        }
    }

    return 0;
}


static ngx_http_bottle_fate_e
ngx_http_bottle_header_fate(ngx_http_bottle_ctx_t *ctx, ngx_table_elt_t *h)
{
    const bottle_route_t  *route;

    route = ctx->route;

    if (ngx_http_bottle_in(ngx_http_bottle_gateway_headers, h->key.data,
                           h->key.len))
    {
        return NGX_HTTP_BOTTLE_DROP;
    }

    /* the injected header is the gateway's, even with preserve_auth */

    if (route->auth_type != BOTTLE_AUTH_NONE
        && h->key.len == route->auth_header.len
        && ngx_strncasecmp(h->key.data, (u_char *) route->auth_header.data,
                           h->key.len) == 0)
    {
        return NGX_HTTP_BOTTLE_DROP;
    }

    if (!route->preserve_auth
        && ngx_http_bottle_in(ngx_http_bottle_credential_headers, h->key.data,
                              h->key.len))
    {
        return NGX_HTTP_BOTTLE_DROP;
    }

    return NGX_HTTP_BOTTLE_KEEP;
}


/*
 * A Cookie header keeps only the pairs the host set for this bottle (the
 * value is rewritten in place); with none left, it goes.  preserve_auth
 * keeps the agent's cookies as they are.
 */

static ngx_http_bottle_fate_e
ngx_http_bottle_cookie_fate(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_table_elt_t *h)
{
    ngx_str_t  id, kept;

    if (ctx->route->preserve_auth
        || h->key.len != sizeof("cookie") - 1
        || ngx_strncasecmp(h->key.data, (u_char *) "cookie", h->key.len) != 0)
    {
        return NGX_HTTP_BOTTLE_KEEP;
    }

    id.data = (u_char *) ctx->verdict.bottle->id.data;
    id.len = ctx->verdict.bottle->id.len;

    if (ngx_bottle_jar_filter(r->pool, &id, &ctx->target.host, &h->value,
                              &kept)
        != NGX_OK
        || kept.len == 0)
    {
        /* no jar to check against drops them all: fail closed */
        return NGX_HTTP_BOTTLE_DROP;
    }

    h->value = kept;

    return NGX_HTTP_BOTTLE_KEEP;
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


static void
ngx_http_bottle_set_cookie(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_str_t *value)
{
    u_char      *p, *last, *semi, *eq, *a, *ae;
    time_t       expires;
    ngx_int_t    age;
    ngx_str_t    id, name, val;
    ngx_uint_t   del;

    p = value->data;
    last = p + value->len;

    semi = ngx_strlchr(p, last, ';');
    if (semi == NULL) {
        semi = last;
    }

    eq = ngx_strlchr(p, semi, '=');
    if (eq == NULL) {
        return;
    }

    for (name.data = p; name.data < eq && *name.data == ' '; name.data++) {
        /* void */
    }

    for (p = eq; p > name.data && p[-1] == ' '; p--) { /* void */ }
    name.len = p - name.data;

    for (val.data = eq + 1; val.data < semi && *val.data == ' '; val.data++) {
        /* void */
    }

    for (p = semi; p > val.data && p[-1] == ' '; p--) { /* void */ }
    val.len = p - val.data;

    /* a Max-Age of zero or less, or an Expires in the past, deletes */

    del = 0;

    for (a = semi; a < last; a = ae) {
        for (a++; a < last && *a == ' '; a++) { /* void */ }

        ae = ngx_strlchr(a, last, ';');
        if (ae == NULL) {
            ae = last;
        }

        if (ae - a > 8 && ngx_strncasecmp(a, (u_char *) "max-age=", 8) == 0) {
            p = a + 8;
            age = (*p == '-') ? -1 : ngx_atoi(p, ae - p);
            del = (age <= 0);

        } else if (ae - a > 8
                   && ngx_strncasecmp(a, (u_char *) "expires=", 8) == 0)
        {
            expires = ngx_parse_http_time(a + 8, ae - a - 8);
            if (expires != NGX_ERROR && expires <= ngx_time()) {
                del = 1;
            }
        }
    }

    id.data = (u_char *) ctx->verdict.bottle->id.data;
    id.len = ctx->verdict.bottle->id.len;

    if (ngx_bottle_jar_set(r->pool, &id, &ctx->target.host, &name, &val, del)
        == NGX_ERROR)
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "bottle: the cookie jar is full");
    }
}


/*
 * Rebuild the request's header list without the dropped headers, and clear
 * the pointers nginx keeps into it, so no later module sees them.
 */

ngx_int_t
ngx_http_bottle_strip(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ngx_uint_t        i, dropped;
    ngx_list_t        kept;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *k;

    if (ngx_list_init(&kept, r->pool, 20, sizeof(ngx_table_elt_t)) != NGX_OK) {
        return NGX_ERROR;
    }

    dropped = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (ngx_http_bottle_header_fate(ctx, &h[i])
                    == NGX_HTTP_BOTTLE_DROP
                || ngx_http_bottle_cookie_fate(r, ctx, &h[i])
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

    /* a one-part list points at its own part: move that pointer along */

    r->headers_in.headers = kept;

    if (kept.last == &kept.part) {
        r->headers_in.headers.last = &r->headers_in.headers.part;
    }

    /* nginx's shortcuts into the old list may point at dropped headers */

    r->headers_in.authorization = NULL;
#if (nginx_version >= 1023000)
    r->headers_in.cookie = NULL;
#else
    r->headers_in.cookies.nelts = 0;
#endif

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == sizeof("authorization") - 1
                && ngx_strncasecmp(h[i].key.data, (u_char *) "authorization",
                                   h[i].key.len) == 0)
            {
                r->headers_in.authorization = &h[i];
            }
        }
    }

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
