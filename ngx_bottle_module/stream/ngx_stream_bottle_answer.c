
/*
 * The front's answers: refusals (one log line, a status and a reason the
 * agent can read, the 407 challenge that keeps the connection) and the few
 * answers the front gives itself.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_stream_bottle.h"


#define NGX_STREAM_BOTTLE_REASON_MAX    256


static ngx_int_t ngx_stream_bottle_respond(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_uint_t keepalive);


/*
 * Log the refusal once, answer it, and close - except a 407 on a kept-alive
 * HTTP/1.1 connection, after which the client may retry on it.
 * NGX_AGAIN: the connection goes on reading; NGX_DONE: finished.
 */

ngx_int_t
ngx_stream_bottle_refuse(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_bottle_rule_e rule, const char *fmt,
    ...)
{
    u_char                        *p;
    va_list                        args;
    ngx_uint_t                     keepalive, status;
    ngx_connection_t              *c;
    ngx_stream_bottle_srv_conf_t  *bscf;

    c = s->connection;
    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);

    p = ngx_pnalloc(c->pool, NGX_STREAM_BOTTLE_REASON_MAX);
    if (p == NULL) {
        ngx_stream_finalize_session(s, NGX_STREAM_INTERNAL_SERVER_ERROR);
        return NGX_DONE;
    }

    va_start(args, fmt);
    ctx->verdict.reason.len = ngx_vslprintf(p, p + NGX_STREAM_BOTTLE_REASON_MAX,
                                            fmt, args) - p;
    va_end(args);

    ctx->verdict.reason.data = p;
    ctx->verdict.rule = rule;
    ctx->verdict.port = ctx->port;

    if (ctx->connect) {
        ngx_str_set(&ctx->verdict.method, "CONNECT");
    }

    ngx_bottle_log_verdict(c, &ctx->verdict);

    ctx->front_refused++;
    ctx->front_rule = rule;

    /* a body would be read as the next head: such a request closes */

    keepalive = (rule == NGX_BOTTLE_RULE_IDENTITY
                 && ctx->state == NGX_STREAM_BOTTLE_HEAD
                 && ctx->http_minor == 1
                 && !ctx->has_body
                 && ctx->heads < bscf->max_heads);

    /* after "200 Connection established" the bytes belong to the tunnel */

    if (ctx->state != NGX_STREAM_BOTTLE_PEEK
        && ngx_stream_bottle_respond(s, ctx, keepalive) != NGX_OK)
    {
        keepalive = 0;
    }

    if (keepalive) {
        c->buffer->pos += ctx->head_len;
        ctx->verdict.bottle = NULL;
        ctx->verdict.rule = NGX_BOTTLE_RULE_NONE;
        ctx->connect = 0;

        ngx_add_timer(&ctx->timer, bscf->head_timeout);

        return NGX_AGAIN;
    }

    switch (ngx_bottle_rule(rule)->status) {
    case 400:
    case 408:
        status = NGX_STREAM_BAD_REQUEST;
        break;
    case 500:
        status = NGX_STREAM_INTERNAL_SERVER_ERROR;
        break;
    case 502:
        status = NGX_STREAM_BAD_GATEWAY;
        break;
    case 503:
        status = NGX_STREAM_SERVICE_UNAVAILABLE;
        break;
    default:
        status = NGX_STREAM_FORBIDDEN;
    }

    ctx->state = NGX_STREAM_BOTTLE_DONE;
    ngx_stream_finalize_session(s, status);

    return NGX_DONE;
}


static ngx_int_t
ngx_stream_bottle_respond(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_uint_t keepalive)
{
    u_char                        *p;
    ngx_str_t                      body, extra, type, *status;
    ngx_connection_t              *c;
    const ngx_bottle_rule_t       *rule;
    ngx_stream_bottle_srv_conf_t  *bscf;

    static ngx_str_t  statuses[] = {
        ngx_string("400 Bad Request"),
        ngx_string("403 Forbidden"),
        ngx_string("407 Proxy Authentication Required"),
        ngx_string("408 Request Timeout"),
        ngx_string("500 Internal Server Error"),
        ngx_string("502 Bad Gateway"),
        ngx_string("503 Service Unavailable")
    };

    c = s->connection;
    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);
    rule = ngx_bottle_rule(ctx->verdict.rule);

    switch (rule->status) {
    case 400: status = &statuses[0]; break;
    case 407: status = &statuses[2]; break;
    case 408: status = &statuses[3]; break;
    case 500: status = &statuses[4]; break;
    case 502: status = &statuses[5]; break;
    case 503: status = &statuses[6]; break;
    default:  status = &statuses[1];
    }

    if (ngx_bottle_refusal_body(c->pool, &ctx->verdict, &body) != NGX_OK) {
        return NGX_ERROR;
    }

    extra.len = sizeof("X-Bottle-Rule: \r\n") - 1 + rule->name.len
                + sizeof("Proxy-Authenticate: Basic realm=\"\"\r\n") - 1
                + bscf->realm.len;

    extra.data = ngx_pnalloc(c->pool, extra.len);
    if (extra.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(extra.data, "X-Bottle-Rule: %V\r\n", &rule->name);

    if (rule->status == 407) {
        p = ngx_sprintf(p, "Proxy-Authenticate: Basic realm=\"%V\"\r\n",
                        &bscf->realm);
    }

    extra.len = p - extra.data;

    ngx_str_set(&type, "text/plain; charset=utf-8");

    return ngx_stream_bottle_answer(c, status, &extra, &type, &body,
                                    keepalive);
}


ngx_int_t
ngx_stream_bottle_answer(ngx_connection_t *c, ngx_str_t *status,
    ngx_str_t *extra, ngx_str_t *type, ngx_str_t *body, ngx_uint_t keepalive)
{
    u_char  *p, *head;
    size_t   len;

    len = sizeof("HTTP/1.1 \r\n") - 1 + status->len
          + sizeof("Content-Type: \r\n") - 1 + type->len
          + sizeof("Content-Length: \r\n") - 1 + NGX_SIZE_T_LEN
          + (extra ? extra->len : 0)
          + sizeof("Connection: keep-alive\r\n\r\n") - 1 + body->len;

    head = ngx_pnalloc(c->pool, len);
    if (head == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(head, "HTTP/1.1 %V\r\n"
                    "Content-Type: %V\r\n"
                    "Content-Length: %uz\r\n",
                    status, type, body->len);

    if (extra) {
        p = ngx_cpymem(p, extra->data, extra->len);
    }

    p = ngx_sprintf(p, "Connection: %s\r\n\r\n",
                    keepalive ? "keep-alive" : "close");
    p = ngx_cpymem(p, body->data, body->len);

    return ngx_stream_bottle_send(c, head, p - head);
}


/*
 * Answers are a few hundred bytes on a fresh connection: they fit the
 * socket buffer, and a client that does not read them loses nothing it was
 * promised, so a short write ends the connection.
 */

ngx_int_t
ngx_stream_bottle_send(ngx_connection_t *c, u_char *data, size_t len)
{
    ssize_t  n;

    n = c->send(c, data, len);

    if (n == (ssize_t) len) {
        return NGX_OK;
    }

    ngx_log_error(NGX_LOG_INFO, c->log, 0,
                  "bottle: could not send %uz bytes to the client", len);

    return NGX_ERROR;
}
