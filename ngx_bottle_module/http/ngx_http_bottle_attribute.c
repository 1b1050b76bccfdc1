
/*
 * bottle_attribute git | mcp: the bottle behind a call to a sidecar
 * (DESIGN.md "The sidecars and the control plane").  :9420 (git-gate) and
 * :9100 (supervise) are nginx listeners; here the caller is attributed
 * exactly as egress attributes it, from its identity token and its source
 * address, the credential is taken out of the request, and $bottle_id
 * names the bottle for the helper behind proxy_pass or fastcgi_pass.  A
 * call that resolves to no bottle never reaches the helper.
 *
 * The token comes as "Authorization: Basic" (its password; git sends it
 * after a 401 challenge) or, for mcp, also "Authorization: Bearer".
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_head.h"


#define NGX_HTTP_BOTTLE_TOKEN_MAX  512


static ngx_int_t ngx_http_bottle_attribute_token(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_uint_t mode);
static ngx_int_t ngx_http_bottle_attribute_strip(ngx_http_request_t *r);
static ngx_int_t ngx_http_bottle_attribute_refuse(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_uint_t mode, ngx_uint_t challenge);


static ngx_str_t  ngx_http_bottle_sidecars[] = {
    ngx_null_string,
    ngx_string("git-gate"),
    ngx_string("supervise")
};


char *
ngx_http_bottle_attribute(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_bottle_loc_conf_t *blcf = conf;

    ngx_str_t                    *value;
    ngx_http_bottle_srv_conf_t   *bscf;
    ngx_http_bottle_main_conf_t  *bmcf;

    if (blcf->attribute != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "git") == 0) {
        blcf->attribute = NGX_HTTP_BOTTLE_ATTRIBUTE_GIT;

    } else if (ngx_strcmp(value[1].data, "mcp") == 0) {
        blcf->attribute = NGX_HTTP_BOTTLE_ATTRIBUTE_MCP;

    } else if (ngx_strcmp(value[1].data, "off") == 0) {
        blcf->attribute = NGX_HTTP_BOTTLE_ATTRIBUTE_OFF;
        return NGX_CONF_OK;

    } else {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\": "
                           "\"git\", \"mcp\" or \"off\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    if (ngx_bottle_cycle_store(cf->cycle) == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"bottle_attribute\" needs \"bottle_policy\" at "
                           "the top level, before the \"http\" block");
        return NGX_CONF_ERROR;
    }

    bmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_bottle_module);
    bmcf->attribute_used = 1;

    /*
     * nginx's own lines quote what the agent sent (a duplicate
     * Authorization, with both tokens): the server's connections and this
     * location's log get the writer that blanks them, as bottle servers do
     */

    bscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_bottle_module);
    bscf->sidecar = 1;

    if (ngx_http_bottle_errors_location(cf, bmcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * In the preaccess phase, as the pipeline's handler and for the same
 * reason: no standard module ends that phase early.
 */

ngx_int_t
ngx_http_bottle_attribute_handler(ngx_http_request_t *r)
{
    ngx_int_t                    rc;
    ngx_http_bottle_ctx_t       *ctx;
    ngx_http_bottle_loc_conf_t  *blcf;

    blcf = ngx_http_get_module_loc_conf(r, ngx_http_bottle_module);

    if (blcf->attribute == NGX_HTTP_BOTTLE_ATTRIBUTE_OFF) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_bottle_get_ctx(r);

    if (ctx) {
        /* an internal redirect after the attribution */
        return ctx->state == NGX_HTTP_BOTTLE_PASSED ? NGX_DECLINED
                                                    : NGX_HTTP_FORBIDDEN;
    }

    if (r != r->main) {
        return NGX_HTTP_FORBIDDEN;
    }

    ctx = ngx_http_bottle_create_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->verdict.host = ngx_http_bottle_sidecars[blcf->attribute];

    rc = ngx_http_bottle_attribute_token(r, ctx, blcf->attribute);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc != NGX_OK) {
        ngx_http_finalize_request(r,
            ngx_http_bottle_attribute_refuse(r, ctx, blcf->attribute,
                                             rc == NGX_AGAIN));
        return NGX_DONE;
    }

    if (ngx_http_bottle_attribute_strip(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = NGX_HTTP_BOTTLE_PASSED;

    return NGX_DECLINED;
}


/*
 * NGX_OK: ctx names the bottle; NGX_AGAIN: no credentials at all (the
 * challenge that makes git send them); NGX_DECLINED: refused, the verdict
 * says why.
 */

static ngx_int_t
ngx_http_bottle_attribute_token(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_uint_t mode)
{
    ssize_t              n;
    ngx_str_t            v;
    ngx_int_t            rc;
    ngx_uint_t           count;
    ngx_table_elt_t     *h;
    u_char               token[NGX_HTTP_BOTTLE_TOKEN_MAX];

    h = ngx_http_bottle_find_header(r, "authorization",
                                    sizeof("authorization") - 1, &count);

    if (count > 1) {
        return ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_BAD_REQUEST,
                                    "more than one Authorization");
    }

    if (h == NULL) {
        ngx_http_bottle_deny(ctx, r->pool, NGX_BOTTLE_RULE_IDENTITY,
                             "no credentials");
        return NGX_AGAIN;
    }

    v = h->value;
    n = -1;

    if (mode == NGX_HTTP_BOTTLE_ATTRIBUTE_MCP
        && v.len > sizeof("Bearer ") - 1
        && ngx_strncasecmp(v.data, (u_char *) "Bearer ",
                           sizeof("Bearer ") - 1) == 0)
    {
        v.data += sizeof("Bearer ") - 1;
        v.len -= sizeof("Bearer ") - 1;

        while (v.len && v.data[0] == ' ') {
            v.data++;
            v.len--;
        }

        while (v.len && v.data[v.len - 1] == ' ') {
            v.len--;
        }

        if (v.len && v.len <= sizeof(token)) {
            ngx_memcpy(token, v.data, v.len);
            n = (ssize_t) v.len;
        }

    } else {
        n = bottle_head_basic_password(token, sizeof(token), v.data, v.len);
    }

    rc = ngx_http_bottle_bind(r, ctx, token, n, "malformed credentials");

    ngx_explicit_memzero(token, sizeof(token));

    return rc;
}


/*
 * The helper gets neither the bottle's credential nor a header that could
 * pass for one the gateway sets: Authorization, Proxy-Authorization and
 * every X-Bottle-* go.
 */

static ngx_int_t
ngx_http_bottle_attribute_strip(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_t        kept;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *k;

    if (ngx_list_init(&kept, r->pool, 20, sizeof(ngx_table_elt_t)) != NGX_OK) {
        return NGX_ERROR;
    }

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if ((h[i].key.len == sizeof("authorization") - 1
                 && ngx_strncasecmp(h[i].key.data, (u_char *) "authorization",
                                    h[i].key.len) == 0)
                || (h[i].key.len == sizeof("proxy-authorization") - 1
                    && ngx_strncasecmp(h[i].key.data,
                                       (u_char *) "proxy-authorization",
                                       h[i].key.len) == 0)
                || (h[i].key.len >= sizeof("x-bottle-") - 1
                    && ngx_strncasecmp(h[i].key.data, (u_char *) "x-bottle-",
                                       sizeof("x-bottle-") - 1) == 0))
            {
                continue;
            }

            k = ngx_list_push(&kept);
            if (k == NULL) {
                return NGX_ERROR;
            }

            *k = h[i];
        }
    }

    /* a one-part list points at its own part: move that pointer along */

    r->headers_in.headers = kept;

    if (kept.last == &kept.part) {
        r->headers_in.headers.last = &r->headers_in.headers.part;
    }

    r->headers_in.authorization = NULL;

    return NGX_OK;
}


/*
 * 401 with a challenge the client answers with its token: git asks its
 * credential helper and sends Basic; an MCP client sends its Bearer.  The
 * bare challenge (no credentials yet) is a step of the protocol, not a
 * refusal: it is neither logged nor journalled.
 */

static ngx_int_t
ngx_http_bottle_attribute_refuse(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_uint_t mode, ngx_uint_t challenge)
{
    if (ctx->verdict.rule == NGX_BOTTLE_RULE_IDENTITY) {
        ctx->verdict.status = NGX_HTTP_UNAUTHORIZED;
    }

    return ngx_http_bottle_refuse(r, ctx,
                                  mode == NGX_HTTP_BOTTLE_ATTRIBUTE_MCP
                                  ? "Bearer" : "Basic", challenge);
}
