
/*
 * The firehose's transport (docs/firehose.md): each worker publishes its
 * OCSF records to the bottle:firehose channel of the control plane's
 * Redis (the audit journal's), on a connection of its own.
 *
 * Only while a consumer is attached: once a second the worker asks Redis
 * how many clients subscribe to the channel (PUBSUB NUMSUB); with none, or
 * with the connection down, nothing is snapshotted at all.  Lossy by
 * design: a bounded queue per worker and a few commands in flight; a
 * record that finds the queue full is dropped and counted
 * (bottle_firehose_dropped_total), never waited for.  A slow consumer is
 * Redis's to cut off (client-output-buffer-limit pubsub); the gateway
 * never waits for one.
 *
 * In batches: a record is built with room for its PUBLISH command's
 * framing around it, so it is queued as the command itself; the queue is
 * flushed once per turn of the event loop (a posted event), every queued
 * command appended and then written with one write(), and the replies
 * read as they come, many a read.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#include <ngx_http.h>

#include "ngx_http_bottle_record.h"
#include "ngx_bottle_audit.h"
#include "ngx_bottle_redis.h"


/* "*3\r\n$7\r\nPUBLISH\r\n$15\r\nbottle:firehose\r\n$<len>\r\n", at most */
#define NGX_HTTP_BOTTLE_FIREHOSE_HEAD                                         \
    (sizeof("*3\r\n$7\r\nPUBLISH\r\n$\r\n"                                  \
            NGX_HTTP_BOTTLE_FIREHOSE_CHANNEL "\r\n$\r\n") + 3 + NGX_SIZE_T_LEN)


typedef struct {
    char                *buf;        /* malloc()ed */
    char                *cmd;        /* the PUBLISH command, in buf */
    size_t               len;
} ngx_http_bottle_firehose_entry_t;


typedef struct {
    ngx_bottle_redis_t                 rd;
    ngx_event_t                        poll;
    ngx_event_t                        flush;     /* posted */
    ngx_http_bottle_firehose_entry_t  *ring;
    ngx_uint_t                         cap;
    ngx_uint_t                         head;
    ngx_uint_t                         n;
    ngx_uint_t                         inflight;
    long long                          consumers;
    unsigned                           on:1;
    unsigned                           asking:1;
} ngx_http_bottle_firehose_t;


static void ngx_http_bottle_firehose_state(ngx_bottle_redis_t *rd,
    ngx_uint_t up);
static void ngx_http_bottle_firehose_poll(ngx_event_t *ev);
static void ngx_http_bottle_firehose_numsub(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_http_bottle_firehose_post(void);
static void ngx_http_bottle_firehose_flush(ngx_event_t *ev);
static void ngx_http_bottle_firehose_reply(redisAsyncContext *ac, void *r,
    void *privdata);


extern ngx_module_t  ngx_bottle_audit_module;

static ngx_http_bottle_firehose_t  ngx_http_bottle_firehose;


ngx_int_t
ngx_http_bottle_firehose_init_process(ngx_cycle_t *cycle, ngx_uint_t queue)
{
    ngx_bottle_audit_conf_t     *acf;
    ngx_http_bottle_firehose_t  *fh = &ngx_http_bottle_firehose;

    ngx_memzero(fh, sizeof(ngx_http_bottle_firehose_t));

    acf = (ngx_bottle_audit_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                                   ngx_bottle_audit_module);

    /* the control plane's Redis: the journal's; none, no consumer */

    if (acf == NULL || acf->off || acf->store_url == NULL || queue == 0) {
        return NGX_OK;
    }

    fh->ring = ngx_calloc(queue * sizeof(ngx_http_bottle_firehose_entry_t),
                          cycle->log);
    if (fh->ring == NULL) {
        return NGX_ERROR;
    }

    fh->cap = queue;

    fh->rd.url = acf->store_url;
    fh->rd.addr = acf->addr;
    fh->rd.role = "firehose";
    fh->rd.log = cycle->log;
    fh->rd.ping = 0;
    fh->rd.handler = ngx_http_bottle_firehose_state;
    fh->rd.data = fh;

    fh->poll.handler = ngx_http_bottle_firehose_poll;
    fh->poll.data = fh;
    fh->poll.log = cycle->log;
    fh->poll.cancelable = 1;

    fh->flush.handler = ngx_http_bottle_firehose_flush;
    fh->flush.data = fh;
    fh->flush.log = cycle->log;

    fh->on = 1;

    return ngx_bottle_redis_start(&fh->rd);
}


void
ngx_http_bottle_firehose_exit_process(void)
{
    ngx_http_bottle_firehose_t  *fh = &ngx_http_bottle_firehose;

    if (!fh->on) {
        return;
    }

    if (fh->poll.timer_set) {
        ngx_del_timer(&fh->poll);
    }

    if (fh->flush.posted) {
        ngx_delete_posted_event(&fh->flush);
    }

    ngx_bottle_redis_stop(&fh->rd);

    while (fh->n) {
        free(fh->ring[fh->head].buf);
        fh->head = (fh->head + 1) % fh->cap;
        fh->n--;
    }

    ngx_free(fh->ring);
    fh->on = 0;
}


ngx_uint_t
ngx_http_bottle_firehose_attached(void)
{
    return ngx_http_bottle_firehose.consumers > 0;
}


static void
ngx_http_bottle_firehose_state(ngx_bottle_redis_t *rd, ngx_uint_t up)
{
    ngx_http_bottle_firehose_t  *fh = rd->data;

    if (!up) {
        /* no one can be listening through a connection that is down */
        fh->consumers = 0;
        fh->asking = 0;
        return;
    }

    /* inside a reply callback: the queue goes out at the loop's turn */
    ngx_http_bottle_firehose_post();
    ngx_http_bottle_firehose_poll(&fh->poll);
}


static void
ngx_http_bottle_firehose_poll(ngx_event_t *ev)
{
    const char                  *argv[3];
    size_t                       argvlen[3];
    ngx_http_bottle_firehose_t  *fh = ev->data;

    if (!fh->on || ngx_exiting) {
        return;
    }

    if (ngx_bottle_redis_ready(&fh->rd) && !fh->asking) {
        argv[0] = "PUBSUB";
        argvlen[0] = 6;
        argv[1] = "NUMSUB";
        argvlen[1] = 6;
        argv[2] = NGX_HTTP_BOTTLE_FIREHOSE_CHANNEL;
        argvlen[2] = sizeof(NGX_HTTP_BOTTLE_FIREHOSE_CHANNEL) - 1;

        if (ngx_bottle_redis_command(&fh->rd, ngx_http_bottle_firehose_numsub,
                                     fh, 3, argv, argvlen)
            == NGX_OK)
        {
            fh->asking = 1;
        }
    }

    if (!fh->poll.timer_set) {
        ngx_add_timer(&fh->poll, NGX_HTTP_BOTTLE_FIREHOSE_POLL);
    }
}


static void
ngx_http_bottle_firehose_numsub(redisAsyncContext *ac, void *r,
    void *privdata)
{
    redisReply                  *reply = r;
    ngx_http_bottle_firehose_t  *fh = privdata;

    fh->asking = 0;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != 2
        || reply->element[1]->type != REDIS_REPLY_INTEGER)
    {
        fh->consumers = 0;
        return;
    }

    fh->consumers = reply->element[1]->integer;
}


/*
 * The record's OCSF JSON, built with room for its PUBLISH command around
 * it, queued; or dropped and counted (queue full, out of memory).
 */

void
ngx_http_bottle_firehose_publish(const bottle_record_t *rec,
    ngx_uint_t metadata)
{
    char                              *buf;
    u_char                             prefix[NGX_HTTP_BOTTLE_FIREHOSE_HEAD];
    size_t                             len, n;
    ngx_http_bottle_firehose_t        *fh = &ngx_http_bottle_firehose;
    ngx_http_bottle_firehose_entry_t  *e;

    if (!fh->on || fh->n == fh->cap) {
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FIREHOSE_DROPPED);
        return;
    }

    if (bottle_record_ocsf_framed(&buf, &len, rec, metadata,
                                  NGX_HTTP_BOTTLE_FIREHOSE_HEAD, 2)
        != 0)
    {
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FIREHOSE_DROPPED);
        return;
    }

    /* the command's head, right before the record, and its tail */

    n = ngx_sprintf(prefix, "*3\r\n$7\r\nPUBLISH\r\n$%uz\r\n"
                    NGX_HTTP_BOTTLE_FIREHOSE_CHANNEL "\r\n$%uz\r\n",
                    sizeof(NGX_HTTP_BOTTLE_FIREHOSE_CHANNEL) - 1, len)
        - prefix;

    e = &fh->ring[(fh->head + fh->n) % fh->cap];
    e->buf = buf;
    e->cmd = buf + NGX_HTTP_BOTTLE_FIREHOSE_HEAD - n;
    e->len = n + len + 2;

    ngx_memcpy(e->cmd, prefix, n);
    buf[NGX_HTTP_BOTTLE_FIREHOSE_HEAD + len] = '\r';
    buf[NGX_HTTP_BOTTLE_FIREHOSE_HEAD + len + 1] = '\n';

    fh->n++;

    ngx_http_bottle_firehose_post();
}


static void
ngx_http_bottle_firehose_post(void)
{
    ngx_http_bottle_firehose_t  *fh = &ngx_http_bottle_firehose;

    /* also while exiting: the last requests' records go out too */

    if (fh->on && fh->n && !fh->flush.posted) {
        ngx_post_event(&fh->flush, &ngx_posted_events);
    }
}


/* the queue's commands appended, then written at once */

static void
ngx_http_bottle_firehose_flush(ngx_event_t *ev)
{
    ngx_uint_t                         appended;
    ngx_http_bottle_firehose_t        *fh = ev->data;
    ngx_http_bottle_firehose_entry_t  *e;

    if (!ngx_bottle_redis_ready(&fh->rd)) {
        /* kept (the queue is bounded) until the connection is up */
        return;
    }

    appended = 0;

    while (fh->n && fh->inflight < NGX_HTTP_BOTTLE_FIREHOSE_INFLIGHT) {
        e = &fh->ring[fh->head];

        /* hiredis copies the command: the record is done with */

        if (ngx_bottle_redis_append(&fh->rd, ngx_http_bottle_firehose_reply,
                                    fh, e->cmd, e->len)
            != NGX_OK)
        {
            break;
        }

        free(e->buf);
        e->buf = NULL;
        fh->head = (fh->head + 1) % fh->cap;
        fh->n--;
        fh->inflight++;
        appended++;
    }

    if (appended) {
        ngx_bottle_redis_send(&fh->rd);
    }
}


static void
ngx_http_bottle_firehose_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply                  *reply = r;
    ngx_http_bottle_firehose_t  *fh = privdata;

    fh->inflight--;

    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FIREHOSE_DROPPED);
        return;
    }

    ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FIREHOSE_PUBLISHED);

    /* room in flight again: what waited goes at the loop's turn */
    ngx_http_bottle_firehose_post();
}
