
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
 * In batches: the records a turn of the event loop makes are written one
 * after another, a newline between them, into one buffer with room for
 * the PUBLISH command's framing before them; once per turn (a posted
 * event) the batch goes out as ONE PUBLISH, one message to each consumer
 * and one answer: Redis, the consumers and this worker handle a batch as
 * they would one record.  While NGX_HTTP_BOTTLE_FIREHOSE_INFLIGHT batches
 * wait for their answers, records gather in the next.  The records of the
 * batch and of those in flight together are at most
 * bottle_firehose_queue: a worker's memory for the firehose is bounded
 * whatever Redis does; and a batch stops taking records past
 * NGX_HTTP_BOTTLE_FIREHOSE_BATCH bytes, far below what Redis takes in one
 * command (proto-max-bulk-len, 512 MB).
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
    ngx_bottle_redis_t                 rd;
    ngx_event_t                        poll;
    ngx_event_t                        flush;     /* posted */
    bottle_record_batch_t              batch;     /* malloc()ed */
    ngx_uint_t                         cap;       /* n + sent, at most */
    ngx_uint_t                         n;         /* records in the batch */
    ngx_uint_t                         sent;      /* records in flight */
    ngx_uint_t                         inflight;  /* batches in flight */
    long long                          consumers;
    size_t                             body;      /* max_body_bytes */
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


static ngx_uint_t ngx_http_bottle_firehose_wants(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static void ngx_http_bottle_firehose_end(ngx_http_bottle_end_t *e);

static const ngx_http_bottle_end_observer_t  ngx_http_bottle_firehose_observer = {
    ngx_http_bottle_firehose_wants,
    ngx_http_bottle_firehose_end
};


ngx_int_t
ngx_http_bottle_firehose_init_process(ngx_cycle_t *cycle, ngx_uint_t queue,
    size_t body)
{
    ngx_bottle_audit_conf_t     *acf;
    ngx_http_bottle_firehose_t  *fh = &ngx_http_bottle_firehose;

    ngx_memzero(fh, sizeof(ngx_http_bottle_firehose_t));
    fh->body = body;

    if (ngx_http_bottle_end_observe(&ngx_http_bottle_firehose_observer)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    acf = (ngx_bottle_audit_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                                   ngx_bottle_audit_module);

    /* the control plane's Redis: the journal's; none, no consumer */

    if (acf == NULL || acf->off || acf->store_url == NULL || queue == 0) {
        return NGX_OK;
    }

    fh->cap = queue;
    fh->batch.len = NGX_HTTP_BOTTLE_FIREHOSE_HEAD;

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


/* a request's end: its record queued while a consumer is attached */

static ngx_uint_t
ngx_http_bottle_firehose_wants(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx)
{
    return ngx_http_bottle_firehose_attached()
           && (ctx->verdict.bottle == NULL
               || ctx->verdict.bottle->firehose != BOTTLE_FIREHOSE_OFF);
}


static void
ngx_http_bottle_firehose_end(ngx_http_bottle_end_t *e)
{
    if (e->rec == NULL || !ngx_http_bottle_firehose_wants(e->r, e->ctx)) {
        return;
    }

    ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FIREHOSE_SNAPSHOTS);

    e->bodies(e, ngx_http_bottle_firehose.body, 0);

    ngx_http_bottle_firehose_publish(e->rec,
                                     e->ctx->verdict.bottle == NULL
                                     || e->ctx->verdict.bottle->firehose
                                        == BOTTLE_FIREHOSE_METADATA);
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

    free(fh->batch.buf);
    fh->batch.buf = NULL;
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
 * The record's OCSF JSON, appended to the batch; or dropped and counted
 * (the queue full, out of memory).
 */

void
ngx_http_bottle_firehose_publish(const bottle_record_t *rec,
    ngx_uint_t metadata)
{
    ngx_http_bottle_firehose_t  *fh = &ngx_http_bottle_firehose;

    if (!fh->on || fh->n + fh->sent >= fh->cap
        || fh->batch.len > NGX_HTTP_BOTTLE_FIREHOSE_BATCH)
    {
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FIREHOSE_DROPPED);
        return;
    }

    /* the last record left room for the newline and the command's tail */

    if (fh->n) {
        fh->batch.buf[fh->batch.len++] = '\n';
    }

    if (bottle_record_ocsf_append(&fh->batch, rec, metadata, 2) != 0) {
        if (fh->n) {
            fh->batch.len--;
        }

        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FIREHOSE_DROPPED);
        return;
    }

    fh->n++;
    ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_FIREHOSE_QUEUED,
                                  fh->n + fh->sent);

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


/* the batch's records, one PUBLISH */

static void
ngx_http_bottle_firehose_flush(ngx_event_t *ev)
{
    u_char                      *cmd;
    size_t                       n, len;
    ngx_http_bottle_firehose_t  *fh = ev->data;
    u_char                       head[NGX_HTTP_BOTTLE_FIREHOSE_HEAD];

    if (fh->n == 0 || fh->inflight >= NGX_HTTP_BOTTLE_FIREHOSE_INFLIGHT
        || !ngx_bottle_redis_ready(&fh->rd))
    {
        /* kept (the batch is bounded) until an answer or the connection */
        return;
    }

    /* the command's head right before the records, its tail after them */

    len = fh->batch.len - NGX_HTTP_BOTTLE_FIREHOSE_HEAD;

    n = ngx_sprintf(head, "*3\r\n$7\r\nPUBLISH\r\n$%uz\r\n"
                    NGX_HTTP_BOTTLE_FIREHOSE_CHANNEL "\r\n$%uz\r\n",
                    sizeof(NGX_HTTP_BOTTLE_FIREHOSE_CHANNEL) - 1, len)
        - head;

    cmd = (u_char *) fh->batch.buf + NGX_HTTP_BOTTLE_FIREHOSE_HEAD - n;
    ngx_memcpy(cmd, head, n);
    ngx_memcpy(fh->batch.buf + fh->batch.len, "\r\n", 2);

    /* hiredis copies the command: the batch is free again */

    if (ngx_bottle_redis_append(&fh->rd, ngx_http_bottle_firehose_reply,
                                (void *) (uintptr_t) fh->n, (char *) cmd,
                                n + len + 2)
        != NGX_OK)
    {
        return;
    }

    ngx_bottle_redis_send(&fh->rd);

    fh->inflight++;
    fh->sent += fh->n;
    fh->n = 0;
    fh->batch.len = NGX_HTTP_BOTTLE_FIREHOSE_HEAD;

    /* a batch of long bodies gives its memory back */

    if (fh->batch.cap > NGX_HTTP_BOTTLE_FIREHOSE_KEEP) {
        free(fh->batch.buf);
        fh->batch.buf = NULL;
        fh->batch.cap = 0;
    }
}


/* a batch's answer: its records published, or dropped */

static void
ngx_http_bottle_firehose_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply                  *reply = r;
    ngx_http_bottle_firehose_t  *fh = &ngx_http_bottle_firehose;
    ngx_atomic_int_t             n = (ngx_atomic_int_t) (uintptr_t) privdata;

    fh->inflight--;
    fh->sent -= n;
    ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_FIREHOSE_QUEUED,
                                  fh->n + fh->sent);

    if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
        ngx_bottle_metrics_add(NGX_BOTTLE_METRIC_FIREHOSE_DROPPED, n);
        return;
    }

    ngx_bottle_metrics_add(NGX_BOTTLE_METRIC_FIREHOSE_PUBLISHED, n);

    /* room in flight again: what waited goes at the loop's turn */
    ngx_http_bottle_firehose_post();
}
