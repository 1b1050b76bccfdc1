
/*
 * The request's ctx and its verdict, below the pipeline and its steps:
 * every step refuses by filling the verdict (ngx_http_bottle_deny) and
 * returning NGX_DECLINED; the pipeline answers.  Calls run one way:
 * module -> pipeline -> steps -> this file and libbottle.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


#define NGX_HTTP_BOTTLE_REASON_MAX  256


static void ngx_http_bottle_cleanup(void *data);


ngx_http_bottle_ctx_t *
ngx_http_bottle_create_ctx(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t         *cln;
    ngx_http_bottle_ctx_t      *ctx;
    ngx_http_variable_value_t  *vv;

    static ngx_str_t  request_id = ngx_string("request_id");

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_bottle_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NULL;
    }

    cln->handler = ngx_http_bottle_cleanup;
    cln->data = ctx;

    ngx_http_set_ctx(r, ctx, ngx_http_bottle_module);

    /* the audit journal's: every event of the request names its id */

    ctx->verdict.method = r->method_name;

    if (ngx_bottle_audit_enabled()) {
        vv = ngx_http_get_variable(r, &request_id,
                                   ngx_hash_key(request_id.data,
                                                request_id.len));
        if (vv && !vv->not_found) {
            ctx->verdict.correlation.data = vv->data;
            ctx->verdict.correlation.len = vv->len;
        }
    }

    return ctx;
}


static void
ngx_http_bottle_cleanup(void *data)
{
    ngx_http_bottle_ctx_t  *ctx = data;

    ngx_bottle_resolve_cancel(&ctx->resolve);
}


/*
 * The request's ctx, also after an internal redirect (an error_page to a
 * named location), which clears module ctxs: it survives as the data of the
 * pool cleanup ngx_http_bottle_create_ctx() added, as the realip module
 * keeps its state.
 */

ngx_http_bottle_ctx_t *
ngx_http_bottle_get_ctx(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t     *cln;
    ngx_http_bottle_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);

    if (ctx == NULL && (r->internal || r->filter_finalize)) {
        for (cln = r->pool->cleanup; cln; cln = cln->next) {
            if (cln->handler == ngx_http_bottle_cleanup) {
                ctx = cln->data;
                ngx_http_set_ctx(r, ctx, ngx_http_bottle_module);
                break;
            }
        }
    }

    return ctx;
}


ngx_int_t
ngx_http_bottle_deny(ngx_http_bottle_ctx_t *ctx, ngx_pool_t *pool,
    ngx_bottle_rule_e rule, const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    ctx->state = NGX_HTTP_BOTTLE_REFUSED;
    ctx->verdict.rule = rule;
    ctx->verdict.port = ctx->target.port;

    p = ngx_pnalloc(pool, NGX_HTTP_BOTTLE_REASON_MAX);
    if (p == NULL) {
        ngx_str_set(&ctx->verdict.reason, "out of memory");
        return NGX_DECLINED;
    }

    va_start(args, fmt);
    ctx->verdict.reason.len = ngx_vslprintf(p, p + NGX_HTTP_BOTTLE_REASON_MAX,
                                            fmt, args) - p;
    va_end(args);

    ctx->verdict.reason.data = p;

    return NGX_DECLINED;
}


/* an answer of the gateway's own: status, type and a body in memory */

ngx_int_t
ngx_http_bottle_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *type, ngx_str_t *body)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t   out;

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        r->keepalive = 0;
    }

    r->headers_out.status = status;

    /* nginx has no status line for 407 */
    if (status == 407) {
        ngx_str_set(&r->headers_out.status_line,
                    "407 Proxy Authentication Required");
    }
    r->headers_out.content_type = *type;
    r->headers_out.content_type_len = type->len;
    r->headers_out.content_length_n = body->len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = body->data;
    b->last = body->data + body->len;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/*
 * A refusal's answer: logged once (not when quiet: a bare challenge), the
 * status (the verdict's if set, else the rule's) with a reason the agent
 * can read, X-Bottle-Rule, and for 407 and 401 the challenge its client
 * answers (Proxy-Authenticate: Basic; WWW-Authenticate: scheme), with the
 * location's bottle_realm.
 */

ngx_int_t
ngx_http_bottle_refuse(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    const char *scheme, ngx_uint_t quiet)
{
    ngx_str_t                    body, type;
    ngx_uint_t                   status;
    ngx_table_elt_t             *h;
    const ngx_bottle_rule_t     *rule;
    ngx_http_bottle_loc_conf_t  *blcf;

    ctx->state = NGX_HTTP_BOTTLE_REFUSED;
    rule = ngx_bottle_rule(ctx->verdict.rule);
    status = ctx->verdict.status ? ctx->verdict.status : rule->status;

    if (!quiet) {
        ngx_bottle_log_verdict(r->connection, &ctx->verdict);
    }

    if (ngx_bottle_refusal_body(r->pool, &ctx->verdict, &body) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "X-Bottle-Rule");
    h->value = rule->name;

    if (status == 407 || status == NGX_HTTP_UNAUTHORIZED) {
        blcf = ngx_http_get_module_loc_conf(r, ngx_http_bottle_module);

        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        h->hash = 1;

        if (status == 407) {
            ngx_str_set(&h->key, "Proxy-Authenticate");
            scheme = "Basic";

        } else {
            ngx_str_set(&h->key, "WWW-Authenticate");
        }

        h->value.len = ngx_strlen(scheme) + sizeof(" realm=\"\"") - 1
                       + blcf->realm.len;
        h->value.data = ngx_pnalloc(r->pool, h->value.len);
        if (h->value.data == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_sprintf(h->value.data, "%s realm=\"%V\"", scheme, &blcf->realm);
    }

    ngx_str_set(&type, "text/plain; charset=utf-8");

    return ngx_http_bottle_send(r, status, &type, &body);
}
