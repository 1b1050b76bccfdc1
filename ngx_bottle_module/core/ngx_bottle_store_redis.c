
/*
 * The Redis source (docs/control-plane.md).  Each worker keeps its own
 * snapshot of the bottles and keeps it current:
 *
 *   - one connection SUBSCRIBEs to the changes channel; a message names a
 *     bottle, which is fetched again (the fetch script: Redis measures it
 *     first, and a bottle over bottle_store_limits is never sent) on the
 *     other connection;
 *   - when either connection (re)connects, the index (HGETALL of the
 *     bottles hash) is compared with the snapshot: bottles gone are
 *     removed, bottles with another version fetched;
 *   - fetched policies are parsed (and, for a bottle whose scanner
 *     databases were in use, compiled) in the thread pool, and applied in
 *     the order Redis answered, so the snapshot never goes back in time.
 *
 * Requests never wait on Redis: they read the snapshot.  While the store
 * is unreachable the snapshot is served for bottle_store_stale_max, then
 * nothing is: no bottle resolves until the store is back and read again.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include <jansson.h>

#include "ngx_bottle_store_redis.h"


static ngx_int_t ngx_bottle_store_redis_usable(ngx_bottle_store_t *st,
    const char **reason);
static void ngx_bottle_store_redis_state(ngx_bottle_redis_t *rd,
    ngx_uint_t up);
static void ngx_bottle_store_redis_stale(ngx_bottle_store_redis_t *sr);
static void ngx_bottle_store_redis_sync(ngx_bottle_store_redis_t *sr);
static void ngx_bottle_store_redis_message(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_store_redis_cleanup(void *data);
static ngx_msec_t ngx_bottle_store_redis_heard(ngx_bottle_store_redis_t *sr);
static void ngx_bottle_store_redis_expire(ngx_event_t *ev);


/*
 * At configuration: the URL, and the store's host resolved now, because
 * hiredis would resolve it with a blocking getaddrinfo() in the worker.
 */

char *
ngx_bottle_store_redis_conf(ngx_conf_t *cf, ngx_bottle_store_t *st,
    ngx_str_t *value)
{
    char                       err[256];
    ngx_pool_cleanup_t        *cln;
    ngx_bottle_store_redis_t  *sr;

    sr = ngx_pcalloc(cf->pool, sizeof(ngx_bottle_store_redis_t));
    if (sr == NULL) {
        return NGX_CONF_ERROR;
    }

    if (bottle_store_url_parse(&sr->url, (char *) value->data, err,
                               sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "bottle_policy: store URL: %s", err);
        return NGX_CONF_ERROR;
    }

    bottle_store_url_print(&sr->url, sr->name, sizeof(sr->name));

    if (ngx_bottle_redis_resolve(cf->pool, &sr->url, &sr->addr) != NGX_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "bottle_policy: store host \"%s\" could not be "
                           "resolved", sr->url.host);
        return NGX_CONF_ERROR;
    }

    sr->store = st;
    sr->log = cf->log;
    ngx_queue_init(&sr->slots);

    st->redis = sr;
    st->usable = ngx_bottle_store_redis_usable;

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_bottle_store_redis_cleanup;
    cln->data = st;

    /* jansson seeds its hash function once: before any thread parses */
    json_object_seed(0);

    ngx_bottle_store_redis_preload(cf, sr);

    return NGX_CONF_OK;
}


/* the bottles of a configuration that is over (the master, on reload) */

static void
ngx_bottle_store_redis_cleanup(void *data)
{
    ngx_bottle_store_t *st = data;

    ngx_rbtree_node_t  *node;

    while (st->ids.root != st->ids.sentinel) {
        node = ngx_rbtree_min(st->ids.root, st->ids.sentinel);
        ngx_bottle_store_remove(st, (ngx_bottle_entry_t *) node);
    }
}


/* the URL and resolved address, for another connection (the journal) */

const bottle_store_url_t *
ngx_bottle_store_redis_url(ngx_bottle_store_t *st, ngx_str_t *addr)
{
    ngx_bottle_store_redis_t  *sr = st->redis;

    if (sr == NULL) {
        return NULL;
    }

    *addr = sr->addr;
    return &sr->url;
}


ngx_int_t
ngx_bottle_store_redis_init_process(ngx_cycle_t *cycle, ngx_bottle_store_t *st)
{
    ngx_msec_t                 ping;
    ngx_msec_int_t             left;
    ngx_bottle_store_redis_t  *sr = st->redis;

    sr->log = cycle->log;
    sr->stale_max = st->stale_max;
    st->log = cycle->log;

    if (!sr->loaded) {
        sr->lost_at = ngx_current_msec;
    }

    sr->expire.handler = ngx_bottle_store_redis_expire;
    sr->expire.data = sr;
    sr->expire.log = cycle->log;
    sr->expire.cancelable = 1;

    if (sr->loaded) {
        /* read by the master: served until the bound unless read again */
        left = (ngx_msec_int_t) (sr->lost_at + sr->stale_max
                                 - ngx_current_msec);
        ngx_add_timer(&sr->expire, (ngx_msec_t) ngx_max(left + 1, 1));
    }

    /* a hung store is noticed within two pings */
    ping = sr->stale_max / 4;
    ping = ngx_max(ping, 100);
    ping = ngx_min(ping, 1000);

    sr->cmd.url = &sr->url;
    sr->cmd.addr = sr->addr;
    sr->cmd.role = "policy";
    sr->cmd.log = cycle->log;
    sr->cmd.ping = ping;
    sr->cmd.handler = ngx_bottle_store_redis_state;
    sr->cmd.data = sr;

    sr->sub = sr->cmd;
    sr->sub.role = "changes";
    sr->sub.ping = 0;

    ngx_log_error(NGX_LOG_INFO, cycle->log, 0,
                  "bottle: policy store %s", sr->name);

    if (ngx_bottle_redis_start(&sr->cmd) != NGX_OK
        || ngx_bottle_redis_start(&sr->sub) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_bottle_store_redis_exit_process(ngx_bottle_store_t *st)
{
    ngx_bottle_store_redis_t  *sr = st->redis;

    ngx_bottle_redis_stop(&sr->sub);
    ngx_bottle_redis_stop(&sr->cmd);
}


static ngx_int_t
ngx_bottle_store_redis_usable(ngx_bottle_store_t *st, const char **reason)
{
    ngx_msec_t                 since;
    ngx_bottle_store_redis_t  *sr = st->redis;

    if (!sr->loaded) {
        *reason = "the gateway has not read its policy from the store yet";
        return NGX_DECLINED;
    }

    /*
     * the bound counts from the last time the store was heard from, not
     * from when its loss was noticed (two unanswered pings later)
     */

    since = sr->fresh ? ngx_bottle_store_redis_heard(sr) : sr->lost_at;

    if ((ngx_msec_int_t) (ngx_current_msec - since)
        <= (ngx_msec_int_t) sr->stale_max)
    {
        return NGX_OK;
    }

    *reason = "the gateway has lost its policy store";

    return NGX_DECLINED;
}


/* a connection is up (ready for commands) or lost */

static void
ngx_bottle_store_redis_state(ngx_bottle_redis_t *rd, ngx_uint_t up)
{
    const char                *argv[2];
    ngx_bottle_store_redis_t  *sr = rd->data;

    if (!up) {
        ngx_bottle_store_redis_stale(sr);

        if (rd == &sr->sub) {
            sr->subscribed = 0;

        } else {
            /*
             * a store that stopped answering may also hold the other
             * connection open: start both afresh
             */
            ngx_bottle_redis_reset(&sr->sub, "the policy connection was "
                                             "lost");
        }

        return;
    }

    if (rd == &sr->sub) {
        argv[0] = "SUBSCRIBE";
        argv[1] = BOTTLE_STORE_CHANGES;

        if (ngx_bottle_redis_command(rd, ngx_bottle_store_redis_message, sr,
                                     2, argv, NULL)
            != NGX_OK)
        {
            ngx_bottle_redis_reset(rd, "SUBSCRIBE could not be sent");
        }

        return;
    }

    if (sr->subscribed) {
        ngx_bottle_store_redis_sync(sr);
    }
}


static void
ngx_bottle_store_redis_stale(ngx_bottle_store_redis_t *sr)
{
    ngx_msec_int_t  left;

    if (sr->fresh) {
        sr->fresh = 0;
        sr->lost_at = ngx_bottle_store_redis_heard(sr);

        left = (ngx_msec_int_t) (sr->lost_at + sr->stale_max
                                 - ngx_current_msec);

        ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_STORE_UP, 0);
        ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_STORE_HEARD,
            (ngx_atomic_uint_t) (ngx_time()
                                 - (ngx_current_msec - sr->lost_at) / 1000));

        ngx_log_error(NGX_LOG_WARN, sr->log, 0,
                      "bottle: policy store %s lost: serving the bottles "
                      "read so far for at most %M ms (last heard from "
                      "%M ms ago)", sr->name,
                      (ngx_msec_t) ngx_max(left, 0),
                      (ngx_msec_t) (ngx_current_msec - sr->lost_at));

        /* past the bound, open connections are decided again (and end) */

        ngx_add_timer(&sr->expire, (ngx_msec_t) ngx_max(left + 1, 1));
    }

    /* what was asked on the old connections is answered by no one */
    sr->generation++;
    sr->syncing = 0;
}


/* read the index and compare: the slot applies it in order */

static void
ngx_bottle_store_redis_sync(ngx_bottle_store_redis_t *sr)
{
    const char         *argv[2];
    ngx_bottle_slot_t  *slot;

    if (sr->syncing) {
        return;
    }

    slot = ngx_calloc(sizeof(ngx_bottle_slot_t), sr->log);
    if (slot == NULL) {
        return;
    }

    slot->sr = sr;
    slot->is_sync = 1;
    slot->generation = sr->generation;

    argv[0] = "HGETALL";
    argv[1] = BOTTLE_STORE_BOTTLES;

    if (ngx_bottle_redis_command(&sr->cmd, ngx_bottle_store_redis_index, slot,
                                 2, argv, NULL)
        != NGX_OK)
    {
        ngx_free(slot);
        ngx_bottle_redis_reset(&sr->cmd, "HGETALL could not be sent");
        return;
    }

    sr->syncing = 1;
    ngx_queue_insert_tail(&sr->slots, &slot->queue);
}


/* the changes channel: "<id> <version>"; the bottle is read again */

static void
ngx_bottle_store_redis_message(redisAsyncContext *ac, void *r, void *privdata)
{
    size_t                     id_len;
    ngx_int_t                  rc;
    ngx_str_t                  msg;
    const char                *id;
    unsigned long long         version;
    ngx_bottle_store_redis_t  *sr = privdata;

    rc = ngx_bottle_redis_pubsub(r, &msg);

    if (rc == NGX_AGAIN) {
        sr->subscribed = 1;

        if (ngx_bottle_redis_ready(&sr->cmd)) {
            ngx_bottle_store_redis_sync(sr);
        }

        return;
    }

    if (rc != NGX_OK) {
        return;
    }

    if (bottle_store_change_parse((const char *) msg.data, msg.len, &id,
                                  &id_len, &version)
        != 0)
    {
        ngx_log_error(NGX_LOG_WARN, sr->log, 0,
                      "bottle: policy store %s: a change message that is "
                      "not \"<id> <version>\" ignored", sr->name);
        return;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_CORE, sr->log, 0,
                   "bottle: change of \"%*s\" %uL", id_len, id, version);

    if (!sr->subscribed || !ngx_bottle_redis_ready(&sr->cmd)) {
        /* the sync that follows the reconnection reads it */
        return;
    }

    if (ngx_bottle_store_redis_fetch(sr, (u_char *) id, id_len) == NULL) {
        ngx_bottle_redis_reset(&sr->cmd, "a fetch could not be sent");
        return;
    }
}


/* the last time the store answered: a PING's answer, or a whole read */

static ngx_msec_t
ngx_bottle_store_redis_heard(ngx_bottle_store_redis_t *sr)
{
    ngx_msec_t  heard;

    heard = sr->cmd.heard;

    if ((ngx_msec_int_t) (sr->fresh_at - heard) > 0) {
        heard = sr->fresh_at;
    }

    return heard;
}


static void
ngx_bottle_store_redis_expire(ngx_event_t *ev)
{
    ngx_bottle_store_redis_t  *sr = ev->data;

    if (sr->fresh) {
        return;
    }

    ngx_log_error(NGX_LOG_WARN, sr->log, 0,
                  "bottle: policy store %s not heard from for %M ms: "
                  "nothing is served, open connections are closed",
                  sr->name, (ngx_msec_t) (ngx_current_msec - sr->lost_at));

    ngx_bottle_store_changed();
}
