
/*
 * A required first contact through Sentinel (docs/policy.md, delivery):
 * its EVAL is followed by "WAIT 1 <ms>", the time its request has left,
 * and the request goes on only once a replica has the record.  A primary
 * lost after that leaves the record on the replica Sentinel promotes.
 * Without a replica's acknowledgement in time the request is refused;
 * its record stays on the primary (the journal may say a contact was
 * attempted that was refused, never the reverse).
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"
#include "ngx_bottle_audit.h"


static void ngx_bottle_audit_waited(redisAsyncContext *ac, void *r,
    void *privdata);


/* one queue per worker, one handler for its answers */
static ngx_bottle_audit_waited_pt  ngx_bottle_audit_wait_done;


ngx_int_t
ngx_bottle_audit_wait_send(ngx_bottle_audit_entry_t *e, uint64_t seq,
    ngx_bottle_audit_waited_pt done)
{
    u_char               ms[NGX_INT64_LEN];
    size_t               argvlen[3];
    int64_t              left;
    ngx_time_t          *tp;
    const char          *argv[3];
    ngx_bottle_audit_t  *a = &ngx_bottle_audit;

    tp = ngx_timeofday();
    left = e->deadline - ((int64_t) tp->sec * 1000 + (int64_t) tp->msec);

    /*
     * a margin before the request's own deadline, so that the refusal
     * names the missing replica; WAIT 0 would wait for ever
     */
    left = (left > 200) ? left - 100 : ngx_max(left, 1);

    argv[0] = "WAIT";
    argvlen[0] = 4;
    argv[1] = "1";
    argvlen[1] = 1;
    argv[2] = (const char *) ms;
    argvlen[2] = ngx_sprintf(ms, "%L", left) - ms;

    if (ngx_bottle_redis_command(&a->rd, ngx_bottle_audit_waited,
                                 (void *) (uintptr_t) seq, 3, argv, argvlen)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    e->waiting = 1;
    ngx_bottle_audit_wait_done = done;

    return NGX_OK;
}


static void
ngx_bottle_audit_waited(redisAsyncContext *ac, void *r, void *privdata)
{
    uint64_t                   seq = (uintptr_t) privdata;
    redisReply                *reply = r;
    ngx_bottle_audit_t        *a = &ngx_bottle_audit;
    ngx_bottle_audit_entry_t  *e;

    if (seq != a->head || a->head == a->tail) {
        /* its EVAL's reply took another way: refused, or late */
        return;
    }

    e = &a->ring[a->head % a->cap];

    if (reply == NULL) {
        /* the connection went: the EVAL and its WAIT go again */
        e->written = 0;
        a->sent = a->head;
        return;
    }

    if (!e->written || e->key == NULL) {
        return;
    }

    ngx_bottle_audit_wait_done(e, reply->type == REDIS_REPLY_INTEGER
                                  && reply->integer >= 1);
}
