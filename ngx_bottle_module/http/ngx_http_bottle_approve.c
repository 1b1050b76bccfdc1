
/*
 * bottle_safelist_approve: the http handler by which an operator channel
 * puts a value on the supervise safelist (ngx_bottle_safelist.c, in core:
 * the list itself) from an internal listener.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


#define NGX_BOTTLE_SAFELIST_MAX_BODY  1024


static void ngx_http_bottle_approve_body(ngx_http_request_t *r);
static ngx_int_t ngx_http_bottle_approve_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_bottle_approve_arg(ngx_str_t *body,
    const char *name, ngx_str_t *out);


/*
 * bottle_safelist_approve: POST "bottle=ID&host=HOST&sha256=HEX" (64 hex
 * digits, the digest of the approved value) -> 204.  For the supervise
 * channel only: put it on a listener the bottles cannot reach.
 */

char *
ngx_http_bottle_safelist_approve(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_bottle_approve_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_bottle_approve_handler(ngx_http_request_t *r)
{
    ngx_int_t  rc;

    if (r->method != NGX_HTTP_POST) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    r->request_body_in_single_buf = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_bottle_approve_body);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


static void
ngx_http_bottle_approve_body(ngx_http_request_t *r)
{
    u_char      digest[32];
    ngx_int_t   n, rc;
    ngx_str_t   body, id, host, hex, canon;
    ngx_uint_t  i;
    ngx_buf_t  *b;

    if (r->request_body == NULL || r->request_body->bufs == NULL
        || r->request_body->bufs->next || r->request_body->bufs->buf->in_file)
    {
        ngx_http_finalize_request(r, NGX_HTTP_BAD_REQUEST);
        return;
    }

    b = r->request_body->bufs->buf;
    body.data = b->pos;
    body.len = b->last - b->pos;

    if (body.len > NGX_BOTTLE_SAFELIST_MAX_BODY
        || ngx_http_bottle_approve_arg(&body, "bottle", &id) != NGX_OK
        || ngx_http_bottle_approve_arg(&body, "host", &host) != NGX_OK
        || ngx_http_bottle_approve_arg(&body, "sha256", &hex) != NGX_OK
        || hex.len != 64
        || ngx_bottle_canonical_host(r->pool, host.data, host.len, 0, &canon)
           != NGX_OK)
    {
        ngx_http_finalize_request(r, NGX_HTTP_BAD_REQUEST);
        return;
    }

    for (i = 0; i < 32; i++) {
        n = ngx_hextoi(hex.data + 2 * i, 2);
        if (n == NGX_ERROR) {
            ngx_http_finalize_request(r, NGX_HTTP_BAD_REQUEST);
            return;
        }

        digest[i] = (u_char) n;
    }

    rc = ngx_bottle_safelist_add(r->pool, &id, &canon, digest);

    if (rc == NGX_DECLINED) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "bottle safelist: full (a quarter of the bottle "
                      "zone), bottle=\"%V\" host=\"%V\" not approved",
                      &id, &canon);
        ngx_http_finalize_request(r, NGX_HTTP_INSUFFICIENT_STORAGE);
        return;
    }

    if (rc != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "bottle safelist: bottle=\"%V\" host=\"%V\" "
                  "value=sha256:%*s approved", &id, &canon, (size_t) 16,
                  hex.data);

    r->headers_out.status = NGX_HTTP_NO_CONTENT;
    r->header_only = 1;
    r->headers_out.content_length_n = 0;

    ngx_http_finalize_request(r, ngx_http_send_header(r));
}


/* name=value in an application/x-www-form-urlencoded body, not decoded */

static ngx_int_t
ngx_http_bottle_approve_arg(ngx_str_t *body, const char *name, ngx_str_t *out)
{
    size_t   len;
    u_char  *p, *last, *end;

    len = ngx_strlen(name);
    p = body->data;
    last = body->data + body->len;

    while (p < last) {
        end = ngx_strlchr(p, last, '&');
        if (end == NULL) {
            end = last;
        }

        if ((size_t) (end - p) > len && p[len] == '='
            && ngx_strncmp(p, name, len) == 0)
        {
            out->data = p + len + 1;
            out->len = end - out->data;
            return out->len ? NGX_OK : NGX_ERROR;
        }

        p = end + 1;
    }

    return NGX_ERROR;
}
