
/*
 * Upstream addresses.  Names resolve only through the gateway's own
 * resolver; every address is checked before it is dialled, and the address
 * checked is the one dialled (no rebinding window).  Internal addresses
 * (loopback, private, link-local, metadata, ...) are refused unless the
 * route names that address itself or is marked "internal".
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"


static void ngx_bottle_resolve_handler(ngx_resolver_ctx_t *rctx);
static ngx_int_t ngx_bottle_pick(ngx_bottle_resolve_t *res,
    ngx_resolver_addr_t *addrs, ngx_uint_t naddrs);
static ngx_int_t ngx_bottle_set_peer(ngx_bottle_resolve_t *res,
    struct sockaddr *sa, socklen_t socklen);
static ngx_int_t ngx_bottle_literal(ngx_bottle_resolve_t *res,
    bottle_ip_t *ip);


ngx_int_t
ngx_bottle_resolve(ngx_bottle_resolve_t *res)
{
    bottle_ip_t          ip;
    ngx_resolver_ctx_t  *rctx;

    if (bottle_ip_parse(&ip, (const char *) res->host.data, res->host.len)
        == 0)
    {
        return ngx_bottle_literal(res, &ip);
    }

    rctx = ngx_resolve_start(res->resolver, NULL);
    if (rctx == NULL) {
        return NGX_ERROR;
    }

    if (rctx == NGX_NO_RESOLVER) {
        res->rule = NGX_BOTTLE_RULE_RESOLVE;
        ngx_str_set(&res->reason, "the gateway has no resolver configured");
        return NGX_DECLINED;
    }

    rctx->name = res->host;
    rctx->handler = ngx_bottle_resolve_handler;
    rctx->data = res;
    rctx->timeout = res->timeout;

    res->rctx = rctx;

    if (ngx_resolve_name(rctx) != NGX_OK) {
        res->rctx = NULL;
        return NGX_ERROR;
    }

    /* the handler may have run already, from the resolver's cache */

    return NGX_AGAIN;
}


void
ngx_bottle_resolve_cancel(ngx_bottle_resolve_t *res)
{
    if (res->rctx) {
        ngx_resolve_name_done(res->rctx);
        res->rctx = NULL;
    }
}


static void
ngx_bottle_resolve_handler(ngx_resolver_ctx_t *rctx)
{
    ngx_int_t              rc;
    ngx_bottle_resolve_t  *res;

    res = rctx->data;

    if (rctx->state) {
        ngx_log_error(NGX_LOG_INFO, res->log, 0,
                      "bottle: \"%V\" could not be resolved (%i: %s)",
                      &rctx->name, rctx->state,
                      ngx_resolver_strerror(rctx->state));

        res->rule = NGX_BOTTLE_RULE_RESOLVE;
        ngx_str_set(&res->reason, "the host name could not be resolved");
        rc = NGX_DECLINED;

    } else {
        rc = ngx_bottle_pick(res, rctx->addrs, rctx->naddrs);
        res->valid = rctx->valid;
    }

    ngx_resolve_name_done(rctx);
    res->rctx = NULL;

    res->handler(res->data, rc);
}


static ngx_int_t
ngx_bottle_pick(ngx_bottle_resolve_t *res, ngx_resolver_addr_t *addrs,
    ngx_uint_t naddrs)
{
    ngx_uint_t   i;
    bottle_ip_t  ip;

    for (i = 0; i < naddrs; i++) {
        if (bottle_ip_from_sockaddr(&ip, addrs[i].sockaddr) != 0) {
            continue;
        }

        if (!res->route->internal && bottle_ip_is_internal(&ip)) {
            ngx_log_debug1(NGX_LOG_DEBUG_CORE, res->log, 0,
                           "bottle: skip internal address of \"%V\"",
                           &res->host);
            continue;
        }

        return ngx_bottle_set_peer(res, addrs[i].sockaddr, addrs[i].socklen);
    }

    res->rule = NGX_BOTTLE_RULE_ADDRESS;
    ngx_str_set(&res->reason,
                "the host resolves only to internal addresses");

    return NGX_DECLINED;
}


/*
 * An IP-literal target: allowed when the route is that very address (the
 * route names it explicitly), or when the address is public.
 */

static ngx_int_t
ngx_bottle_literal(ngx_bottle_resolve_t *res, bottle_ip_t *ip)
{
    struct sockaddr_in    sin;
#if (NGX_HAVE_INET6)
    struct sockaddr_in6   sin6;
#endif

    if (!res->route->host_is_ip && !res->route->internal
        && bottle_ip_is_internal(ip))
    {
        res->rule = NGX_BOTTLE_RULE_ADDRESS;
        ngx_str_set(&res->reason, "the address is internal");
        return NGX_DECLINED;
    }

    res->valid = NGX_MAX_TIME_T_VALUE;

    if (ip->family == AF_INET) {
        ngx_memzero(&sin, sizeof(sin));
        sin.sin_family = AF_INET;
        ngx_memcpy(&sin.sin_addr, ip->addr, 4);
        return ngx_bottle_set_peer(res, (struct sockaddr *) &sin, sizeof(sin));
    }

#if (NGX_HAVE_INET6)
    ngx_memzero(&sin6, sizeof(sin6));
    sin6.sin6_family = AF_INET6;
    ngx_memcpy(&sin6.sin6_addr, ip->addr, 16);
    return ngx_bottle_set_peer(res, (struct sockaddr *) &sin6, sizeof(sin6));
#else
    res->rule = NGX_BOTTLE_RULE_ADDRESS;
    ngx_str_set(&res->reason, "IPv6 is not supported by this nginx");
    return NGX_DECLINED;
#endif
}


static ngx_int_t
ngx_bottle_set_peer(ngx_bottle_resolve_t *res, struct sockaddr *sa,
    socklen_t socklen)
{
    struct sockaddr  *copy;

    copy = ngx_pcalloc(res->pool, socklen);
    if (copy == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(copy, sa, socklen);
    ngx_inet_set_port(copy, res->port);

    res->peer.addr.sockaddr = copy;
    res->peer.addr.socklen = socklen;
    res->peer.text_len = ngx_sock_ntop(copy, socklen, res->peer.text,
                                       sizeof(res->peer.text), 1);
    res->peer.addr.name.data = res->peer.text;
    res->peer.addr.name.len = res->peer.text_len;

    return NGX_OK;
}
