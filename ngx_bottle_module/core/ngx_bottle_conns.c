
/*
 * The worker's open agent connections (docs/control-plane.md, "Open
 * connections"): a passthrough tunnel, the relay of an inspected tunnel, an
 * http connection (a tunnel's, or a plain proxy connection kept alive,
 * HTTP/1 or HTTP/2) is listed here with what admitted it: its bottle, the
 * digest of the token it came with, its target and route.  When the
 * worker's bottles change (a put, a removal, a rotated token) or the store
 * is lost past its bound, a posted event (the same turn of the event loop)
 * decides every one of them again with the functions the front and the
 * pipeline decide with, and ends what the change no longer allows, logged
 * once (rule "revoked").  No timer polls.
 *
 * Each entry is allocated from its connection's pool, with a cleanup that
 * unlinks it: the list never holds a connection that is gone.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_bottle.h"
#include "bottle_decide.h"


static void ngx_bottle_conns_walk(ngx_event_t *ev);
static ngx_int_t ngx_bottle_conn_decide_why(ngx_bottle_conn_t *bc,
    ngx_bottle_verdict_t *v);
static void ngx_bottle_conn_cleanup(void *data);


static ngx_queue_t   ngx_bottle_conns;
static ngx_event_t   ngx_bottle_conns_event;
static ngx_uint_t    ngx_bottle_conns_ready;
static ngx_log_t    *ngx_bottle_conns_log;


void
ngx_bottle_conns_init_process(ngx_cycle_t *cycle)
{
    ngx_queue_init(&ngx_bottle_conns);

    ngx_bottle_conns_log = cycle->log;

    ngx_bottle_conns_event.handler = ngx_bottle_conns_walk;
    ngx_bottle_conns_event.log = cycle->log;
    ngx_bottle_conns_event.data = &ngx_bottle_conns;

    ngx_bottle_conns_ready = 1;

    /* the store says when its bottles change */
    ngx_bottle_store_on_change(ngx_bottle_conns_changed);
}


/*
 * The bottles changed (or the store may no longer be served from): every
 * connection is decided again once this turn's events are handled.  In a
 * process without an event loop (the master, the configuration) nothing
 * is open.
 */

void
ngx_bottle_conns_changed(void)
{
    if (!ngx_bottle_conns_ready || ngx_queue_empty(&ngx_bottle_conns)) {
        return;
    }

    if (!ngx_bottle_conns_event.posted) {
        ngx_post_event(&ngx_bottle_conns_event, &ngx_posted_events);
    }
}


/*
 * A connection admitted by the entry e (its bottle as it was found), for
 * the target host:port (none: identity alone).  NULL on an allocation
 * failure.
 */

ngx_bottle_conn_t *
ngx_bottle_conn_add(ngx_connection_t *c, ngx_bottle_entry_t *e,
    ngx_uint_t has_digest, ngx_str_t *host, in_port_t port)
{
    ngx_pool_cleanup_t  *cln;
    ngx_bottle_conn_t   *bc;

    if (!ngx_bottle_conns_ready) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(c->pool, sizeof(ngx_bottle_conn_t));
    if (cln == NULL) {
        return NULL;
    }

    bc = cln->data;
    ngx_memzero(bc, sizeof(ngx_bottle_conn_t));

    bc->connection = c;
    ngx_queue_init(&bc->requests);

    if (ngx_bottle_conn_set(bc, e, has_digest, host, port) != NGX_OK) {
        return NULL;
    }

    cln->handler = ngx_bottle_conn_cleanup;

    ngx_queue_insert_tail(&ngx_bottle_conns, &bc->queue);

    return bc;
}


/* what admits it now: a plain connection's latest request */

ngx_int_t
ngx_bottle_conn_set(ngx_bottle_conn_t *bc, ngx_bottle_entry_t *e,
    ngx_uint_t has_digest, ngx_str_t *host, in_port_t port)
{
    /*
     * copies in the entry's own buffers: a plain connection's requests
     * may name other hosts as often as the agent likes; an id or a host
     * longer than any a route has (ids are shorter, hosts are DNS names)
     * is kept cut, and decides nothing
     */

    bc->id.data = bc->id_buf;
    bc->id.len = ngx_min(e->bottle->id.len, sizeof(bc->id_buf));
    ngx_memcpy(bc->id_buf, e->bottle->id.data, bc->id.len);

    bc->host.data = bc->host_buf;
    bc->host.len = host ? ngx_min(host->len, sizeof(bc->host_buf)) : 0;

    if (bc->host.len) {
        ngx_memcpy(bc->host_buf, host->data, bc->host.len);
    }

    bc->port = port;

    /* the token it came with: the bottle's digest when it was found */
    bc->has_digest = has_digest ? 1 : 0;
    ngx_memcpy(bc->digest, e->bottle->token_sha256, 32);

    /* the bottle it was admitted as, for the log line of its end */
    if (bc->entry != e) {
        ngx_bottle_entry_ref(e);

        if (bc->entry) {
            ngx_bottle_entry_release(bc->entry);
        }

        bc->entry = e;
    }

    return NGX_OK;
}


/* the entry of a connection, if it has one */

ngx_bottle_conn_t *
ngx_bottle_conn_find(ngx_connection_t *c)
{
    ngx_pool_cleanup_t  *cln;

    for (cln = c->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_bottle_conn_cleanup) {
            return cln->data;
        }
    }

    return NULL;
}


static void
ngx_bottle_conn_cleanup(void *data)
{
    ngx_bottle_conn_t  *bc = data;

    ngx_queue_t  *q;

    ngx_queue_remove(&bc->queue);

    /* requests that outlive it (their pools go later) forget it */

    while (!ngx_queue_empty(&bc->requests)) {
        q = ngx_queue_head(&bc->requests);
        ngx_queue_remove(q);
        ngx_queue_init(q);
    }

    if (bc->alive) {
        *bc->alive = 0;
    }

    if (bc->entry) {
        ngx_bottle_entry_release(bc->entry);
        bc->entry = NULL;
    }
}


/*
 * The decision again, as at CONNECT and at each request: the store may be
 * served from (ngx_bottle_store_usable), the token (by its digest, as
 * ngx_bottle_find_token finds it) or the id finds the bottle, the address
 * is one the bottle lists, the bottle routes the target (the route a
 * passthrough tunnel was spliced for is still passthrough).  NGX_OK: still
 * allowed; NGX_DECLINED: v says why.
 */

ngx_int_t
ngx_bottle_conn_decide(ngx_bottle_conn_t *bc, ngx_bottle_verdict_t *v)
{
    ngx_memzero(v, sizeof(ngx_bottle_verdict_t));

    v->bottle = bc->entry ? bc->entry->bottle : NULL;
    v->host = bc->host;
    v->port = bc->port;
    v->rule = NGX_BOTTLE_RULE_REVOKED;
    v->reason.data = bc->reason;

    return ngx_bottle_conn_decide_why(bc, v);
}


static ngx_int_t
ngx_bottle_conn_decide_why(ngx_bottle_conn_t *bc, ngx_bottle_verdict_t *v)
{
    u_char              *p, *last;
    const char          *reason;
    bottle_ip_t          ip;
    bottle_request_t     req;
    bottle_decision_t    d;
    ngx_bottle_entry_t  *e;

    p = bc->reason;
    last = bc->reason + sizeof(bc->reason);

    if (ngx_bottle_store_usable(&reason) != NGX_OK) {
        goto refused;
    }

    if (bc->has_digest) {
        e = ngx_bottle_find_digest(bc->digest, &reason);

        if (e == NULL) {
            if (ngx_bottle_find_id(bc->id.data, bc->id.len, &reason)) {
                reason = "the bottle's token was rotated";

            } else {
                reason = "the bottle was removed from the policy";
            }

            goto refused;
        }

        if (e->bottle->id.len != bc->id.len
            || ngx_strncmp(e->bottle->id.data, bc->id.data, bc->id.len) != 0)
        {
            reason = "the token is another bottle's now";
            goto refused;
        }

    } else {
        e = ngx_bottle_find_id(bc->id.data, bc->id.len, &reason);

        if (e == NULL) {
            reason = "the bottle was removed from the policy";
            goto refused;
        }
    }

    if (ngx_bottle_client_ip(bc->connection, &ip) != NGX_OK
        || !bottle_source_allowed(e->bottle, &ip))
    {
        reason = "the token is not valid from this address any more";
        goto refused;
    }

    if (bc->host.len == 0) {
        return NGX_OK;
    }

    ngx_memzero(&req, sizeof(bottle_request_t));
    req.host = (const char *) bc->host.data;
    req.host_len = bc->host.len;
    req.port = bc->port;
    req.tunnel = bc->tunnel;

    bottle_decide_route(&d, e->bottle, &req);

    if (d.rule != BOTTLE_RULE_NONE) {
        p = ngx_slprintf(p, last, "%*s", d.reason_len, (u_char *) d.reason);
        v->reason.len = p - bc->reason;
        return NGX_DECLINED;
    }

    if (bc->passthrough && !d.route->passthrough) {
        reason = "the route is no longer passthrough";
        goto refused;
    }

    return NGX_OK;

refused:

    p = ngx_slprintf(p, last, "%s", reason);
    v->reason.len = p - bc->reason;

    return NGX_DECLINED;
}


/*
 * Every connection decided again; those no longer allowed are taken off
 * the list first and ended after, one at a time: ending one may end
 * others (their cleanups unlink them from whichever list they are on).
 */

static void
ngx_bottle_conns_walk(ngx_event_t *ev)
{
    ngx_uint_t             n;
    ngx_queue_t            closing, *q, *next;
    ngx_bottle_conn_t     *bc;
    ngx_bottle_verdict_t   v;

    ngx_queue_init(&closing);

    for (q = ngx_queue_head(&ngx_bottle_conns);
         q != ngx_queue_sentinel(&ngx_bottle_conns);
         q = next)
    {
        next = ngx_queue_next(q);
        bc = ngx_queue_data(q, ngx_bottle_conn_t, queue);

        if (bc->closed || bc->close == NULL) {
            continue;
        }

        if (ngx_bottle_conn_decide(bc, &v) == NGX_OK) {
            continue;
        }

        bc->reason_len = v.reason.len;

        ngx_queue_remove(q);
        ngx_queue_insert_tail(&closing, q);
    }

    n = 0;

    while (!ngx_queue_empty(&closing)) {
        q = ngx_queue_head(&closing);
        ngx_queue_remove(q);

        bc = ngx_queue_data(q, ngx_bottle_conn_t, queue);

        /* back on the list, never decided again: its cleanup unlinks it */
        ngx_queue_insert_tail(&ngx_bottle_conns, q);
        bc->closed = 1;

        ngx_memzero(&v, sizeof(ngx_bottle_verdict_t));
        v.bottle = bc->entry ? bc->entry->bottle : NULL;
        v.host = bc->host;
        v.port = bc->port;
        v.rule = NGX_BOTTLE_RULE_REVOKED;
        v.reason.data = bc->reason;
        v.reason.len = bc->reason_len;

        ngx_bottle_log_verdict(bc->connection, &v);

        n++;

        bc->close(bc);
    }

    if (n) {
        ngx_log_error(NGX_LOG_NOTICE, ngx_bottle_conns_log, 0,
                      "bottle: %ui open connections closed by a policy "
                      "change", n);
    }
}
