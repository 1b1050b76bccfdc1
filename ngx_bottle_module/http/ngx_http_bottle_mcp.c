
/*
 * MCP gating, the request side (docs/mcp.md): on a route with "mcp", a
 * POSTed body is read as JSON-RPC (the body DLP already read and scanned,
 * never read again).  A call of a tool, resource or prompt the route does
 * not allow is answered here in the protocol's shape, and nothing reaches
 * the server; a malformed body is refused the same way.  Each gated call
 * is journalled (mcp.call, mcp.refusal).  What was read stays with the
 * request: the response filter (ngx_http_bottle_mcp_filter.c) matches the
 * answers to list calls by their id.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "ngx_http_bottle_dlp.h"
#include "ngx_bottle_audit.h"
#include "bottle_mcp.h"


static ngx_int_t ngx_http_bottle_mcp_answer(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_uint_t status, char *json, size_t len);
static void ngx_http_bottle_mcp_journal(ngx_http_bottle_ctx_t *ctx,
    const bottle_mcp_msg_t *m, const char *rule, const char *reason);
static void ngx_http_bottle_mcp_refused(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, const char *rule, ngx_uint_t status,
    const char *reason);
static void ngx_http_bottle_mcp_cleanup(void *data);


ngx_int_t
ngx_http_bottle_mcp(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    char                    err[256], *json, reason[BOTTLE_MCP_NAME_MAX + 64];
    u_char                  safe[BOTTLE_MCP_NAME_MAX];
    size_t                  i, n, len;
    const char             *rule;
    ngx_pool_cleanup_t     *cln;
    bottle_mcp_body_t      *b;
    bottle_mcp_msg_t       *m;
    ngx_http_bottle_dlp_t  *d;

    if (ctx->route == NULL || ctx->route->mcp == NULL) {
        return NGX_OK;
    }

    if (r->method != NGX_HTTP_POST && r->headers_in.content_length_n <= 0
        && !r->headers_in.chunked)
    {
        /* a GET opens a stream, a DELETE ends a session: no calls; any
         * other body is read as a POSTed one would be */
        return NGX_OK;
    }

    d = ctx->dlp;

    if (r->request_body == NULL || r->request_body->bufs == NULL) {
        ngx_str_null(&d->body);
        d->body.data = (u_char *) "";

    } else if (ngx_http_bottle_dlp_body_load(d) != NGX_OK) {
        return NGX_ERROR;
    }

    b = ngx_pcalloc(r->pool, sizeof(bottle_mcp_body_t));
    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (b == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_bottle_mcp_cleanup;
    cln->data = b;

    if (bottle_mcp_read(b, ctx->route->mcp, (const char *) d->body.data,
                        d->body.len, err, sizeof(err))
        != 0)
    {
        ngx_http_bottle_mcp_refused(r, ctx, "mcp_malformed",
                                    NGX_HTTP_BAD_REQUEST, err);

        json = bottle_mcp_malformed(err, &len);
        if (json == NULL) {
            return NGX_ERROR;
        }

        return ngx_http_bottle_mcp_answer(r, ctx, NGX_HTTP_BAD_REQUEST, json,
                                          len);
    }

    for (i = 0; i < b->n; i++) {
        m = &b->msgs[i];

        if (m->kind < 0) {
            continue;
        }

        if (m->allowed && b->refused == 0) {
            ngx_http_bottle_mcp_journal(ctx, m, NULL, NULL);
            continue;
        }

        if (m->allowed) {
            /* not forwarded, with the rest of its batch: not a call */
            continue;
        }

        /* the name is the agent's: printable ASCII only in the log */

        n = ngx_bottle_safe_copy(safe, sizeof(safe), (u_char *) m->name,
                                 ngx_strlen(m->name));
        ngx_snprintf((u_char *) reason, sizeof(reason) - 1,
                     "%s \"%*s\" is not allowed%Z",
                     bottle_mcp_kind_name(m->kind), n, safe);

        rule = m->kind == BOTTLE_MCP_TOOL ? "mcp_tool_denied"
               : m->kind == BOTTLE_MCP_RESOURCE ? "mcp_resource_denied"
               : "mcp_prompt_denied";

        ngx_http_bottle_mcp_refused(r, ctx, rule, NGX_HTTP_OK, reason);
        ngx_http_bottle_mcp_journal(ctx, m, rule, reason);
    }

    if (b->refused) {
        json = bottle_mcp_refusal(b, &len);
        if (json == NULL) {
            return NGX_ERROR;
        }

        return ngx_http_bottle_mcp_answer(r, ctx, NGX_HTTP_OK, json, len);
    }

    ctx->mcp = b;

    return NGX_OK;
}


/* the answer in place of the server's: NGX_DONE */

static ngx_int_t
ngx_http_bottle_mcp_answer(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_uint_t status, char *json, size_t len)
{
    ngx_int_t  rc;
    ngx_str_t  body, type;

    body.data = ngx_pnalloc(r->pool, len);
    if (body.data == NULL) {
        free(json);
        return NGX_ERROR;
    }

    ngx_memcpy(body.data, json, len);
    body.len = len;
    free(json);

    ngx_str_set(&type, "application/json");

    ctx->state = NGX_HTTP_BOTTLE_REFUSED;

    rc = ngx_http_bottle_send(r, status, &type, &body);
    ngx_http_finalize_request(r, rc);

    return NGX_DONE;
}


/* logged once, as every refusal is (bottle, host, rule, reason) */

static void
ngx_http_bottle_mcp_refused(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    const char *rule, ngx_uint_t status, const char *reason)
{
    size_t              n;
    u_char              buf[256];
    char                why[BOTTLE_MCP_NAME_MAX + 128];
    ngx_str_t           host;
    ngx_bottle_conf_t  *bcf;

    n = ngx_bottle_safe_copy(buf, sizeof(buf), ctx->target.host.data,
                             ctx->target.host.len);
    host.data = buf;
    host.len = n;

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(ngx_cycle->conf_ctx,
                                             ngx_bottle_module);

    /* a method name in a malformed body's reason is the agent's too */

    for (n = 0; reason[n] && n < sizeof(why) - 1; n++) {
        why[n] = ((u_char) reason[n] < 0x20 || (u_char) reason[n] >= 0x7f)
                 ? '?' : reason[n];
    }

    why[n] = '\0';

    ngx_bottle_log(bcf ? bcf->refusal_log_level : NGX_LOG_INFO,
                   r->connection->log,
                   "bottle refused: bottle=\"%s\" host=\"%V\" rule=\"%s\" "
                   "status=%ui reason=\"%s\"",
                   ctx->verdict.bottle->id.data, &host, rule, status, why);
}


static void
ngx_http_bottle_mcp_journal(ngx_http_bottle_ctx_t *ctx,
    const bottle_mcp_msg_t *m, const char *rule, const char *reason)
{
    u_char                id[128];
    const char           *kind;
    bottle_audit_event_t  e;

    if (!ngx_bottle_audit.on) {
        return;
    }

    ngx_bottle_audit_common(&e, rule ? BOTTLE_AUDIT_MCP_REFUSAL
                                     : BOTTLE_AUDIT_MCP_CALL,
                            ctx->verdict.bottle, &ctx->target.host,
                            &ctx->verdict.correlation, id, sizeof(id));

    kind = bottle_mcp_kind_name(m->kind);

    e.method.data = m->method;
    e.method.len = ngx_strlen(m->method);
    e.kind.data = kind;
    e.kind.len = ngx_strlen(kind);
    e.name.data = m->name;
    e.name.len = ngx_strlen(m->name);
    e.digest.data = m->digest;
    e.digest.len = ngx_strlen(m->digest);

    if (rule) {
        e.rule.data = rule;
        e.rule.len = ngx_strlen(rule);
        e.reason.data = reason;
        e.reason.len = ngx_strlen(reason);
    }

    (void) ngx_bottle_audit_push(&e, NULL, 0);
}


static void
ngx_http_bottle_mcp_cleanup(void *data)
{
    bottle_mcp_body_free(data);
}
