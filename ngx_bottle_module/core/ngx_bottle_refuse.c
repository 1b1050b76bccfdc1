
/*
 * Refusals and the small pieces of request identity both sides share: the
 * rule table, the one log line per refusal, the text the agent reads, host
 * canonicalisation and the client address.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"
#include "bottle_decide.h"


#define NGX_BOTTLE_LOG_HOST_MAX  255


/*
 * The rule table is libbottle's (bottle_rule.c); this is it as nginx
 * strings, made once per process on first use.
 */

static ngx_bottle_rule_t  ngx_bottle_rules[BOTTLE_RULE_COUNT];
static ngx_uint_t         ngx_bottle_rules_made;

/* per process: registered by the recorders' init_process, once each */
static ngx_bottle_refusal_pt  ngx_bottle_refusal_observers[
                                  NGX_BOTTLE_REFUSAL_OBSERVERS];
static ngx_uint_t             ngx_bottle_refusal_nobservers;


const ngx_bottle_rule_t *
ngx_bottle_rule(ngx_bottle_rule_e rule)
{
    ngx_uint_t            i;
    const bottle_rule_t  *br;

    if (!ngx_bottle_rules_made) {
        for (i = 0; i < BOTTLE_RULE_COUNT; i++) {
            br = bottle_rule((bottle_rule_e) i);
            ngx_bottle_rules[i].status = br->status;
            ngx_bottle_rules[i].name.data = (u_char *) br->name;
            ngx_bottle_rules[i].name.len = ngx_strlen(br->name);
            ngx_bottle_rules[i].advice.data = (u_char *) br->advice;
            ngx_bottle_rules[i].advice.len = ngx_strlen(br->advice);
        }

        ngx_bottle_rules_made = 1;
    }

    if ((ngx_uint_t) rule >= BOTTLE_RULE_COUNT) {
        rule = NGX_BOTTLE_RULE_INTERNAL;
    }

    return &ngx_bottle_rules[rule];
}


/*
 * Hosts and reasons come from the agent: only printable ASCII reaches the
 * log or the agent's screen, everything else becomes '?'.
 */

size_t
ngx_bottle_safe_copy(u_char *dst, size_t cap, const u_char *src, size_t len)
{
    size_t  i;

    if (len > cap) {
        len = cap;
    }

    for (i = 0; i < len; i++) {
        dst[i] = (src[i] > 0x20 && src[i] < 0x7f && src[i] != '"'
                  && src[i] != '\\') ? src[i] : '?';
    }

    return len;
}


/*
 * A recorder of refusals subscribes: again (a reload's init_process in a
 * single process) changes nothing.
 */

ngx_int_t
ngx_bottle_refusal_observe(ngx_bottle_refusal_pt handler)
{
    ngx_uint_t  i;

    for (i = 0; i < ngx_bottle_refusal_nobservers; i++) {
        if (ngx_bottle_refusal_observers[i] == handler) {
            return NGX_OK;
        }
    }

    if (ngx_bottle_refusal_nobservers == NGX_BOTTLE_REFUSAL_OBSERVERS) {
        return NGX_ERROR;
    }

    ngx_bottle_refusal_observers[ngx_bottle_refusal_nobservers++] = handler;

    return NGX_OK;
}


/*
 * One line per refusal.  nginx's own context ("request: ...", "host: ...")
 * would print the agent's request line, query credentials included, so the
 * log handler is set aside and the line carries the agent's address itself.
 */

void
ngx_bottle_log_verdict(ngx_connection_t *c, ngx_bottle_verdict_t *v)
{
    size_t                    n;
    ngx_str_t                 id, host, client;
    ngx_uint_t                i, status;
    ngx_bottle_conf_t        *bcf;
    const ngx_bottle_rule_t  *rule;
    u_char                    buf[NGX_BOTTLE_LOG_HOST_MAX];

    rule = ngx_bottle_rule(v->rule);
    status = v->status ? v->status : rule->status;

    if (v->bottle) {
        id.data = (u_char *) v->bottle->id.data;
        id.len = v->bottle->id.len;

    } else {
        ngx_str_set(&id, "-");
    }

    n = ngx_bottle_safe_copy(buf, sizeof(buf), v->host.data, v->host.len);
    host.data = buf;
    host.len = n;

    if (host.len == 0) {
        ngx_str_set(&host, "-");
    }

    client = c->proxy_protocol ? c->proxy_protocol->src_addr : c->addr_text;

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(ngx_cycle->conf_ctx,
                                             ngx_bottle_module);

    /* expected, the agent's doing: not an error (bottle_refusal_log_level) */

    ngx_bottle_log(bcf ? bcf->refusal_log_level : NGX_LOG_INFO, c->log,
                   "bottle refused: bottle=\"%V\" host=\"%V\" rule=\"%V\" "
                   "status=%ui reason=\"%V\" client=%V",
                   &id, &host, &rule->name, status, &v->reason, &client);

    /* then recorded: the metrics zone, the front's final, the journal */

    for (i = 0; i < ngx_bottle_refusal_nobservers; i++) {
        ngx_bottle_refusal_observers[i](c, v, status);
    }
}


/*
 * One line with no request context: nginx would append the request line,
 * whose query may hold a credential, and a bottle line says all it needs.
 */

void ngx_cdecl
ngx_bottle_log(ngx_uint_t level, ngx_log_t *log, const char *fmt, ...)
{
    u_char              buf[NGX_MAX_ERROR_STR], *p;
    va_list             args;
    ngx_log_handler_pt  handler;

    if (log->log_level < level) {
        return;
    }

    va_start(args, fmt);
    p = ngx_vslprintf(buf, buf + sizeof(buf), fmt, args);
    va_end(args);

    handler = log->handler;
    log->handler = NULL;

    ngx_log_error(level, log, 0, "%*s", (size_t) (p - buf), buf);

    log->handler = handler;
}


ngx_int_t
ngx_bottle_refusal_body(ngx_pool_t *pool, ngx_bottle_verdict_t *v,
    ngx_str_t *out)
{
    size_t                    len;
    u_char                   *p;
    const ngx_bottle_rule_t  *rule;

    rule = ngx_bottle_rule(v->rule);

    len = sizeof("bottle gateway refused this request (rule: )\n") - 1
          + rule->name.len + sizeof("host: \n") - 1 + NGX_BOTTLE_LOG_HOST_MAX
          + v->reason.len + 1 + rule->advice.len + 1;

    p = ngx_pnalloc(pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    out->data = p;

    p = ngx_sprintf(p, "bottle gateway refused this request (rule: %V)\n",
                    &rule->name);

    if (v->host.len) {
        p = ngx_cpymem(p, "host: ", sizeof("host: ") - 1);
        p += ngx_bottle_safe_copy(p, NGX_BOTTLE_LOG_HOST_MAX, v->host.data,
                                  v->host.len);
        *p++ = '\n';
    }

    p = ngx_sprintf(p, "%V\n%V\n", &v->reason, &rule->advice);

    out->len = p - out->data;

    return NGX_OK;
}


/*
 * The host a policy is keyed on: lowercase, no trailing dot, IP literals
 * (every spelling inet_aton() or a browser accepts) in canonical form.
 * NGX_DECLINED: not a valid host.
 */

ngx_int_t
ngx_bottle_canonical_host(ngx_pool_t *pool, const u_char *host, size_t len,
    ngx_uint_t bracketed, ngx_str_t *out)
{
    u_char  *p;

    /* libbottle's, as bottlectl explain reads a host (bottle_decide.h) */

    p = ngx_pnalloc(pool, bottle_decide_host_size(len));
    if (p == NULL) {
        return NGX_ERROR;
    }

    out->data = p;
    out->len = bottle_decide_canonical_host((char *) p, (const char *) host,
                                            len, bracketed);

    return out->len ? NGX_OK : NGX_DECLINED;
}


/*
 * The agent's address: on the internal listeners it arrives in the PROXY
 * protocol header the front wrote; on the front it is the peer address.
 */

ngx_int_t
ngx_bottle_client_ip(ngx_connection_t *c, bottle_ip_t *out)
{
    if (c->proxy_protocol) {
        if (bottle_ip_parse(out, (const char *) c->proxy_protocol->src_addr.data,
                            c->proxy_protocol->src_addr.len)
            != 0)
        {
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    if (c->sockaddr->sa_family == AF_UNIX) {
        return NGX_ERROR;
    }

    return bottle_ip_from_sockaddr(out, c->sockaddr) == 0 ? NGX_OK : NGX_ERROR;
}


/*
 * Does a Host header (or :authority) value name this host and port?  The
 * same comparison as the policy's: case-insensitive, no trailing dot, IP
 * literals canonical, the scheme's default port when none is given.
 * NGX_OK: it does; NGX_DECLINED: it does not.
 */

ngx_int_t
ngx_bottle_host_matches(ngx_pool_t *pool, ngx_str_t *value, ngx_str_t *host,
    in_port_t port, in_port_t default_port)
{
    u_char      *p, *last, *colon;
    ngx_int_t    n;
    ngx_str_t    name, canon;
    ngx_uint_t   bracketed;

    p = value->data;
    last = p + value->len;
    bracketed = 0;
    colon = NULL;

    if (p < last && *p == '[') {
        name.data = p + 1;
        p = ngx_strlchr(p, last, ']');
        if (p == NULL) {
            return NGX_DECLINED;
        }

        name.len = p - name.data;
        bracketed = 1;
        p++;

        if (p < last) {
            if (*p != ':') {
                return NGX_DECLINED;
            }

            colon = p;
        }

    } else {
        name.data = p;
        colon = ngx_strlchr(p, last, ':');
        name.len = (colon ? colon : last) - p;
    }

    n = default_port;

    if (colon) {
        n = ngx_atoi(colon + 1, last - colon - 1);
        if (n < 1 || n > 65535) {
            return NGX_DECLINED;
        }
    }

    if ((in_port_t) n != port
        || ngx_bottle_canonical_host(pool, name.data, name.len, bracketed,
                                     &canon)
           != NGX_OK
        || canon.len != host->len
        || ngx_strncmp(canon.data, host->data, canon.len) != 0)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * Does a TLS SNI name this host and port?  A bare name names the host on
 * any port (the SNI carries no port).  Some clients (Go's net/http when a
 * caller sets ServerName from Host, as `hey` does) send "host:port": that
 * is accepted only as exactly the target's host and port, the port in
 * plain decimal, so "host:", "host:0443" or another port never pass.
 * NGX_OK: it does; NGX_DECLINED: it does not.
 */

ngx_int_t
ngx_bottle_sni_matches(ngx_pool_t *pool, ngx_str_t *sni, ngx_str_t *host,
    in_port_t port)
{
    u_char     *colon;
    ngx_str_t   canon;

    colon = ngx_strlchr(sni->data, sni->data + sni->len, ':');

    if (colon == NULL) {
        if (ngx_bottle_canonical_host(pool, sni->data, sni->len, 0, &canon)
            != NGX_OK
            || canon.len != host->len
            || ngx_strncmp(canon.data, host->data, canon.len) != 0)
        {
            return NGX_DECLINED;
        }

        return NGX_OK;
    }

    /* no port 0, so a leading '0' is a spelling the target never had */

    if (colon + 1 == sni->data + sni->len || colon[1] == '0') {
        return NGX_DECLINED;
    }

    return ngx_bottle_host_matches(pool, sni, host, port, 0);
}
