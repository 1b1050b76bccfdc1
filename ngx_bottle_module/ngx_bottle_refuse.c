
/*
 * Refusals and the small pieces of request identity both sides share: the
 * rule table, the one log line per refusal, the text the agent reads, host
 * canonicalisation and the client address.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"


#define NGX_BOTTLE_LOG_HOST_MAX  255


static ngx_bottle_rule_t  ngx_bottle_rules[] = {
    { 200, ngx_string("none"), ngx_null_string },
    { 400, ngx_string("bad_request"),
      ngx_string("Send a well-formed HTTP/1.1 proxy request.") },
    { 407, ngx_string("identity"),
      ngx_string("Use the proxy URL you were given: its password is this "
                 "bottle's token.") },
    { 403, ngx_string("no_route"),
      ngx_string("This host is not on this bottle's egress allowlist. "
                 "If you need it, ask the operator to allow it "
                 "(supervise: egress-allow).") },
    { 403, ngx_string("port"),
      ngx_string("This port is not allowed for this host. If you need it, "
                 "ask the operator to add it to the route "
                 "(supervise: egress-allow).") },
    { 403, ngx_string("address"),
      ngx_string("This host resolves to an internal address, which routes "
                 "may reach only when the operator allows it explicitly.") },
    { 502, ngx_string("resolve"),
      ngx_string("The gateway could not resolve this host. Check the name; "
                 "retrying later may help.") },
    { 403, ngx_string("inspect"),
      ngx_string("This route is inspected, and TLS interception is not "
                 "available on this gateway. Ask the operator.") },
    { 403, ngx_string("raw_tcp"),
      ngx_string("Only HTTP, or TLS carrying HTTP, may pass the gateway.") },
    { 403, ngx_string("host_mismatch"),
      ngx_string("The Host header must name the host you connect to.") },
    { 403, ngx_string("git"),
      ngx_string("git does not go out through egress: use git-gate with "
                 "the repository's usual URL.") },
    { 403, ngx_string("method"),
      ngx_string("This method is not allowed on this route. If you need it, "
                 "ask the operator to allow it (supervise: egress-allow).") },
    { 403, ngx_string("allow"),
      ngx_string("No allow rule of this route matches this request. If you "
                 "need it, ask the operator (supervise: egress-allow).") },
    { 408, ngx_string("timeout"),
      ngx_string("Send the whole request head promptly.") },
    { 502, ngx_string("upstream"),
      ngx_string("The upstream could not be reached; retrying later may "
                 "help.") },
    { 403, ngx_string("websocket"),
      ngx_string("WebSocket upgrades are refused on this route; its frames "
                 "would not be inspected. Ask the operator if you need "
                 "them.") },
    { 403, ngx_string("canary"),
      ngx_string("The request carries this bottle's canary secret, which "
                 "must never leave the bottle.") },
    { 403, ngx_string("crlf"),
      ngx_string("Header values may not carry line breaks.") },
    { 403, ngx_string("dlp"),
      ngx_string("The request carries what looks like a secret. If it must "
                 "go to this host, ask the operator to approve it "
                 "(supervise: egress-token-allow).") },
    { 413, ngx_string("too_large"),
      ngx_string("Send a smaller request body, or ask the operator to raise "
                 "the gateway's limit.") },
    { 415, ngx_string("encoding"),
      ngx_string("Send the request body uncompressed, or with gzip or "
                 "deflate: the gateway must read it before it goes out.") },
    { 500, ngx_string("internal"),
      ngx_string("The gateway could not check this request, so it refused "
                 "it. Tell the operator.") },
    { 503, ngx_string("audit"),
      ngx_string("This bottle's first request to a host must be recorded in "
                 "the audit journal first, and it could not be. Retrying "
                 "later may help; tell the operator if it persists.") }
};


const ngx_bottle_rule_t *
ngx_bottle_rule(ngx_bottle_rule_e rule)
{
    if ((size_t) rule >= sizeof(ngx_bottle_rules) / sizeof(ngx_bottle_rule_t))
    {
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
 * One line per refusal.  nginx's own context ("request: ...", "host: ...")
 * would print the agent's request line, query credentials included, so the
 * log handler is set aside and the line carries the agent's address itself.
 */

void
ngx_bottle_log_verdict(ngx_connection_t *c, ngx_bottle_verdict_t *v)
{
    size_t                    n;
    ngx_str_t                 id, host, client;
    const ngx_bottle_rule_t  *rule;
    u_char                    buf[NGX_BOTTLE_LOG_HOST_MAX];

    rule = ngx_bottle_rule(v->rule);

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

    ngx_bottle_log(NGX_LOG_ERR, c->log,
                   "bottle refused: bottle=\"%V\" host=\"%V\" rule=\"%V\" "
                   "status=%ui reason=\"%V\" client=%V",
                   &id, &host, &rule->name, rule->status, &v->reason,
                   &client);

    ngx_bottle_audit_refusal(v);
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
    size_t       i;
    u_char      *p;
    bottle_ip_t  ip;

    if (len && host[len - 1] == '.' && !bracketed) {
        len--;
    }

    if (len == 0 || len > 253) {
        return NGX_DECLINED;
    }

    if (bracketed || bottle_ip_looks_numeric((const char *) host, len)
        || ngx_strlchr((u_char *) host, (u_char *) host + len, ':'))
    {
        if (bottle_ip_parse(&ip, (const char *) host, len) != 0) {
            return NGX_DECLINED;
        }

        p = ngx_pnalloc(pool, NGX_INET6_ADDRSTRLEN + 1);
        if (p == NULL) {
            return NGX_ERROR;
        }

        out->data = p;
        out->len = bottle_ip_format((char *) p, NGX_INET6_ADDRSTRLEN + 1, &ip);

        return out->len ? NGX_OK : NGX_DECLINED;
    }

    p = ngx_pnalloc(pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < len; i++) {
        if (!(isalnum(host[i]) || host[i] == '-' || host[i] == '.'
              || host[i] == '_'))
        {
            return NGX_DECLINED;
        }

        p[i] = ngx_tolower(host[i]);
    }

    out->data = p;
    out->len = len;

    return NGX_OK;
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
