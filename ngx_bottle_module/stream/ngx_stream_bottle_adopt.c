
/*
 * The intercepted tunnel, handed over in process.  After the front has
 * answered a CONNECT of an inspected route with 200 and seen the start of
 * a TLS ClientHello (peeked, not read), the connection itself is given to
 * the http listener `bottle_tls_pass` names, in this same worker: the http
 * module takes the socket as if it had accepted it from that listener,
 * with the agent's address where the PROXY protocol header would have put
 * it.  The stream log gets the session's line then (verdict "adopted"); the
 * requests in the tunnel are in the http access log.  So a request in the tunnel costs no relay through the unix socket
 * (a read and a write each way, and a wakeup) and a new tunnel no connect,
 * accept and PROXY header.
 *
 * The listener must be an http listener of this nginx; the connection then
 * belongs to http, which closes it (and so drops the CONNECT record, a
 * cleanup of the connection's pool).  Where it cannot be adopted (bytes
 * already read past the CONNECT head, or no such listener) the front
 * relays to the socket as before.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>
#include <ngx_http.h>

#include "ngx_stream_bottle.h"
#include "ngx_http_bottle.h"


struct ngx_stream_bottle_adopt_s {
    ngx_cycle_t              *cycle;     /* what it was found in */
    ngx_listening_t          *ls4;       /* for agents on AF_INET, AF_UNIX */
    ngx_listening_t          *ls6;       /* for agents on AF_INET6 */
};


static ngx_stream_bottle_adopt_t *ngx_stream_bottle_adopt_find(
    ngx_stream_bottle_srv_conf_t *bscf);


ngx_int_t
ngx_stream_bottle_adopt(ngx_stream_session_t *s, ngx_stream_bottle_ctx_t *ctx)
{
    u_char                        *text;
    ngx_uint_t                     i;
    ngx_buf_t                     *b;
    ngx_stream_handler_pt         *log;
    ngx_stream_core_main_conf_t   *cmcf;
    ngx_connection_t              *c;
    ngx_proxy_protocol_t          *pp;
    ngx_stream_bottle_adopt_t     *adopt;
    ngx_stream_bottle_srv_conf_t  *bscf;

    c = s->connection;
    b = c->buffer;

    if (b && b->pos != b->last) {
        return NGX_DECLINED;
    }

    bscf = ngx_stream_get_module_srv_conf(s, ngx_stream_bottle_module);

    adopt = ngx_stream_bottle_adopt_find(bscf);
    if (adopt == NULL) {
        return NGX_DECLINED;
    }

    if (ngx_connection_local_sockaddr(c, NULL, 0) != NGX_OK) {
        return NGX_DECLINED;
    }

    /* the agent's address, as the PROXY protocol header would carry it */

    pp = ngx_pcalloc(c->pool, sizeof(ngx_proxy_protocol_t));
    text = ngx_pnalloc(c->pool, 2 * NGX_SOCKADDR_STRLEN);
    if (pp == NULL || text == NULL) {
        return NGX_DECLINED;
    }

    pp->src_addr.data = text;
    pp->src_addr.len = ngx_sock_ntop(c->sockaddr, c->socklen, text,
                                     NGX_SOCKADDR_STRLEN, 0);
    pp->src_port = ngx_inet_get_port(c->sockaddr);

    pp->dst_addr.data = text + NGX_SOCKADDR_STRLEN;
    pp->dst_addr.len = ngx_sock_ntop(c->local_sockaddr, c->local_socklen,
                                     pp->dst_addr.data, NGX_SOCKADDR_STRLEN,
                                     0);
    pp->dst_port = ngx_inet_get_port(c->local_sockaddr);

    ngx_log_debug2(NGX_LOG_DEBUG_STREAM, c->log, 0,
                   "bottle front: tunnel of %V:%d adopted by http",
                   &pp->src_addr, (int) pp->src_port);

    /* nothing of the stream session may run any more */

    ctx->state = NGX_STREAM_BOTTLE_DONE;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }

    if (c->write->timer_set) {
        ngx_del_timer(c->write);
    }

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    /* the session's stream log line, now: the session never ends here */

    ctx->adopted = 1;
    ngx_stream_bottle_final_start(s, ctx);
    s->status = NGX_STREAM_OK;

    cmcf = ngx_stream_get_module_main_conf(s, ngx_stream_core_module);
    log = cmcf->phases[NGX_STREAM_LOG_PHASE].handlers.elts;

    for (i = 0; i < cmcf->phases[NGX_STREAM_LOG_PHASE].handlers.nelts; i++) {
        log[i](s);
    }

    c->proxy_protocol = pp;
    c->buffer = NULL;
    c->listening = c->local_sockaddr->sa_family == AF_INET6 ? adopt->ls6
                                                            : adopt->ls4;

    /* the ClientHello waits in the socket: peeked, not read */
    c->read->ready = 1;

    /* its entry in the worker's open connections is http's now */
    ngx_http_bottle_conns_adopted(c);

    ngx_http_bottle_init_connection(c);

    return NGX_DONE;
}


/*
 * The http listener of bottle_tls_pass in this cycle, and two copies of it
 * that take a TCP connection: its server configuration, its TLS and HTTP/2
 * settings, no PROXY protocol to read.  Found once per worker and cycle.
 */

static ngx_stream_bottle_adopt_t *
ngx_stream_bottle_adopt_find(ngx_stream_bottle_srv_conf_t *bscf)
{
    ngx_uint_t                  i;
    ngx_listening_t            *ls;
    ngx_http_port_t            *port, *port4, *port6;
    ngx_http_in_addr_t         *addr, *addr4;
    ngx_stream_bottle_adopt_t  *adopt;
#if (NGX_HAVE_INET6)
    ngx_http_in6_addr_t        *addr6;
#endif

    adopt = bscf->adopt;

    if (adopt && adopt->cycle == ngx_cycle) {
        return adopt->ls4 ? adopt : NULL;
    }

    adopt = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_stream_bottle_adopt_t));
    if (adopt == NULL) {
        return NULL;
    }

    adopt->cycle = (ngx_cycle_t *) ngx_cycle;
    bscf->adopt = adopt;

    ls = ngx_cycle->listening.elts;

    for (i = 0; i < ngx_cycle->listening.nelts; i++) {
        if ((ls[i].handler == ngx_http_init_connection
             || ls[i].handler == ngx_http_bottle_init_connection)
            && ls[i].addr_text.len == bscf->tls_pass.len
            && ngx_strncmp(ls[i].addr_text.data, bscf->tls_pass.data,
                           bscf->tls_pass.len) == 0)
        {
            break;
        }
    }

    if (i == ngx_cycle->listening.nelts) {
        return NULL;
    }

    port = ls[i].servers;

    if (port == NULL || port->naddrs != 1) {
        return NULL;
    }

    addr = port->addrs;

    port4 = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_port_t));
    port6 = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_port_t));
    addr4 = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_in_addr_t));
    adopt->ls4 = ngx_palloc(ngx_cycle->pool, sizeof(ngx_listening_t));
    adopt->ls6 = ngx_palloc(ngx_cycle->pool, sizeof(ngx_listening_t));

    if (port4 == NULL || port6 == NULL || addr4 == NULL
        || adopt->ls4 == NULL || adopt->ls6 == NULL)
    {
        adopt->ls4 = NULL;
        return NULL;
    }

    addr4->conf = addr[0].conf;
    addr4->conf.proxy_protocol = 0;

    port4->addrs = addr4;
    port4->naddrs = 1;

    *adopt->ls4 = ls[i];
    adopt->ls4->servers = port4;

    *port6 = *port4;

#if (NGX_HAVE_INET6)
    addr6 = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_in6_addr_t));
    if (addr6 == NULL) {
        adopt->ls4 = NULL;
        return NULL;
    }

    addr6->conf = addr4->conf;
    port6->addrs = addr6;
#endif

    *adopt->ls6 = ls[i];
    adopt->ls6->servers = port6;

    return adopt;
}
