
/*
 * First contact (docs/control-plane.md): the first request of a bottle to
 * a host is recorded once per (bottle, host) by the contact script, which
 * Redis runs atomically, so however many workers and gateways see the
 * pair the journal holds one event.  A per-worker cache of the pairs
 * already acknowledged runs the script once per pair per worker; each
 * bottle has a budget in it, least recently used pairs out, so an agent
 * cannot grow it without bound (a pair out of the cache is simply sent
 * again, and Redis dedups it).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_bottle_audit.h"


static void ngx_bottle_audit_contact_event(ngx_event_t *ev);


/*
 * A request that passed, to its host: the first of its (bottle, host)
 * goes to the journal.  NGX_OK: go on; NGX_DECLINED: refuse (ct->reason);
 * NGX_AGAIN: audit.delivery is "required" and ct->handler says later.
 */

ngx_int_t
ngx_bottle_audit_contact(ngx_bottle_contact_t *ct)
{
    u_char                    id[128];
    ngx_str_t                 bid;
    ngx_uint_t                required;
    ngx_bottle_audit_t       *a = &ngx_bottle_audit;
    bottle_audit_event_t      e;
    ngx_bottle_audit_host_t  *h;

    required = ct->bottle->audit_required;

    if (!a->on) {
        if (required) {
            ct->reason = "the audit journal could not record the first "
                         "contact: it is off on this gateway";
            return NGX_DECLINED;
        }

        return NGX_OK;
    }

    bid.data = (u_char *) ct->bottle->id.data;
    bid.len = ct->bottle->id.len;

    h = ngx_bottle_audit_cache(&bid, &ct->host, 0);

    if (h && (h->acked || !required)) {
        /* recorded, or on its way: one script per pair at a time */
        return NGX_OK;
    }

    if (required) {
        if (!ngx_bottle_redis_ready(&a->rd)) {
            ct->reason = "the audit journal could not record the first "
                         "contact: the journal is unreachable";
            return NGX_DECLINED;
        }

        if (a->tail - a->head >= a->cap) {
            ct->reason = "the audit journal could not record the first "
                         "contact: the audit queue is full";
            return NGX_DECLINED;
        }
    }

    if (h == NULL) {
        /* a pair the cache cannot hold is simply recorded again */
        (void) ngx_bottle_audit_cache(&bid, &ct->host, 1);
    }

    ngx_bottle_audit_common(&e, BOTTLE_AUDIT_FIRST_CONTACT, ct->bottle,
                            &ct->host, &ct->correlation, id, sizeof(id));

    e.port = ct->port;
    e.method.data = (const char *) ct->method.data;
    e.method.len = ct->method.len;
    e.scheme.data = (const char *) ct->scheme.data;
    e.scheme.len = ct->scheme.len;

    if (ngx_bottle_audit_push(&e, ct, required) != NGX_OK) {
        if (!required) {
            return NGX_OK;
        }

        ct->reason = "the audit journal could not record the first contact";
        return NGX_DECLINED;
    }

    if (!required) {
        return NGX_OK;
    }

    ct->seq = a->tail - 1;
    ct->waiting = 1;
    ct->ev.handler = ngx_bottle_audit_contact_event;
    ct->ev.data = ct;
    ct->ev.log = a->log;
    /* a graceful shutdown waits for the answer too */
    ct->ev.cancelable = 0;
    ngx_queue_insert_tail(&a->waiters, &ct->queue);
    ngx_add_timer(&ct->ev, a->conf->timeout);

    return NGX_AGAIN;
}


void
ngx_bottle_audit_contact_cancel(ngx_bottle_contact_t *ct)
{
    if (ct->waiting) {
        ngx_queue_remove(&ct->queue);
        ct->waiting = 0;
        /* the request went away: no contact */
        ngx_bottle_audit_abandon(ct->seq);
    }

    if (ct->ev.timer_set) {
        ngx_del_timer(&ct->ev);
    }

    if (ct->ev.posted) {
        ngx_delete_posted_event(&ct->ev);
    }
}


/* the answer, posted (never from inside hiredis), or the timeout */

static void
ngx_bottle_audit_contact_event(ngx_event_t *ev)
{
    ngx_bottle_contact_t  *ct = ev->data;

    if (ct->waiting) {
        /* the timer: no acknowledgement in time */
        ngx_queue_remove(&ct->queue);
        ct->waiting = 0;
        ct->rc = NGX_DECLINED;
        ct->reason = "the audit journal could not record the first contact: "
                     "no acknowledgement in time";

        /* refused: the contact did not happen, nor is it recorded */
        ngx_bottle_audit_abandon(ct->seq);
    }

    ct->handler(ct, ct->rc);
}
