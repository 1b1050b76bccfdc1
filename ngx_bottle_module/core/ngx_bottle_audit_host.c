
/*
 * The audit journal's per-worker state that its writers share, below
 * them: the common fields of an event, the first contacts' cache of the
 * pairs already acknowledged, and the requests waiting on a contact's
 * delivery (woken when the queue hears back).  Calls nothing of the
 * journal's other files.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_bottle.h"
#include "ngx_bottle_audit.h"


static int64_t ngx_bottle_audit_now(void);


void
ngx_bottle_audit_common(bottle_audit_event_t *e, bottle_audit_type_e type,
    const bottle_t *bottle, ngx_str_t *host, ngx_str_t *correlation,
    u_char *idbuf, size_t idsize)
{
    ngx_bottle_audit_t  *a = &ngx_bottle_audit;

    ngx_memzero(e, sizeof(bottle_audit_event_t));

    e->type = type;
    e->time_ms = ngx_bottle_audit_now();
    e->id.data = (const char *) idbuf;
    e->id.len = bottle_audit_id((char *) idbuf, idsize,
                                (const char *) a->gateway, a->gateway_len,
                                e->time_ms, a->counter++);
    e->gateway.data = (const char *) a->gateway;
    e->gateway.len = a->gateway_len;

    if (bottle) {
        e->bottle.data = bottle->id.data;
        e->bottle.len = bottle->id.len;
    }

    if (host) {
        e->host.data = (const char *) host->data;
        e->host.len = host->len;
    }

    if (correlation) {
        e->correlation_id.data = (const char *) correlation->data;
        e->correlation_id.len = correlation->len;
    }
}


static int64_t
ngx_bottle_audit_now(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (int64_t) tp->sec * 1000 + tp->msec;
}


void
ngx_bottle_audit_wake(uint64_t seq, ngx_int_t rc, const char *reason)
{
    ngx_queue_t           *q, *next;
    ngx_bottle_contact_t  *ct;

    for (q = ngx_queue_head(&ngx_bottle_audit.waiters);
         q != ngx_queue_sentinel(&ngx_bottle_audit.waiters);
         q = next)
    {
        next = ngx_queue_next(q);
        ct = ngx_queue_data(q, ngx_bottle_contact_t, queue);

        if (ct->seq != seq) {
            continue;
        }

        ngx_queue_remove(q);
        ct->waiting = 0;
        ct->rc = rc;
        ct->reason = reason;

        if (ct->ev.timer_set) {
            ngx_del_timer(&ct->ev);
        }

        ngx_post_event(&ct->ev, &ngx_posted_events);
    }
}


/*
 * The pair's cache entry, most recently used; with create, a new pending
 * one, evicting the bottle's least recently used past its budget.  NULL:
 * none (or no memory).
 */

ngx_bottle_audit_host_t *
ngx_bottle_audit_cache(ngx_str_t *id, ngx_str_t *host, ngx_uint_t create)
{
    uint32_t                    hash;
    ngx_queue_t                *q;
    ngx_bottle_audit_t         *a = &ngx_bottle_audit;
    ngx_bottle_audit_host_t    *h;
    ngx_bottle_audit_bottle_t  *b;

    hash = ngx_crc32_short(id->data, id->len);
    b = (ngx_bottle_audit_bottle_t *) ngx_str_rbtree_lookup(&a->bottles, id,
                                                            hash);

    if (b == NULL) {
        if (!create) {
            return NULL;
        }

        b = ngx_alloc(sizeof(ngx_bottle_audit_bottle_t) + id->len, a->log);
        if (b == NULL) {
            return NULL;
        }

        b->sn.node.key = hash;
        b->sn.str.data = (u_char *) (b + 1);
        b->sn.str.len = id->len;
        ngx_memcpy(b->sn.str.data, id->data, id->len);
        ngx_rbtree_init(&b->hosts, &b->sentinel, ngx_str_rbtree_insert_value);
        ngx_queue_init(&b->lru);
        b->n = 0;
        ngx_rbtree_insert(&a->bottles, &b->sn.node);
    }

    hash = ngx_crc32_short(host->data, host->len);
    h = (ngx_bottle_audit_host_t *) ngx_str_rbtree_lookup(&b->hosts, host,
                                                          hash);

    if (h) {
        ngx_queue_remove(&h->lru);
        ngx_queue_insert_tail(&b->lru, &h->lru);
        return h;
    }

    if (!create) {
        return NULL;
    }

    if (b->n >= NGX_BOTTLE_AUDIT_HOSTS_MAX) {
        q = ngx_queue_head(&b->lru);
        ngx_bottle_audit_cache_forget(ngx_queue_data(q,
                                                     ngx_bottle_audit_host_t,
                                                     lru));
    }

    h = ngx_alloc(sizeof(ngx_bottle_audit_host_t) + host->len, a->log);
    if (h == NULL) {
        return NULL;
    }

    h->sn.node.key = hash;
    h->sn.str.data = (u_char *) (h + 1);
    h->sn.str.len = host->len;
    ngx_memcpy(h->sn.str.data, host->data, host->len);
    h->bottle = b;
    h->acked = 0;
    ngx_rbtree_insert(&b->hosts, &h->sn.node);
    ngx_queue_insert_tail(&b->lru, &h->lru);
    b->n++;

    return h;
}


void
ngx_bottle_audit_cache_forget(ngx_bottle_audit_host_t *h)
{
    ngx_bottle_audit_bottle_t  *b = h->bottle;

    ngx_rbtree_delete(&b->hosts, &h->sn.node);
    ngx_queue_remove(&h->lru);
    b->n--;
    ngx_free(h);
}
