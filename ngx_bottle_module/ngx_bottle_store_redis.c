
/*
 * The Redis source (docs/control-plane.md).  Each worker keeps its own
 * snapshot of the bottles and keeps it current:
 *
 *   - one connection SUBSCRIBEs to the changes channel; a message names a
 *     bottle, which is fetched again (HMGET) on the other connection;
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

#include "ngx_bottle.h"
#include "ngx_bottle_redis.h"


/* a reply, in the order Redis executed the commands */

typedef enum {
    NGX_BOTTLE_SLOT_WAITING = 0,    /* no reply yet */
    NGX_BOTTLE_SLOT_PARSE,          /* a policy to parse */
    NGX_BOTTLE_SLOT_PARSING,        /* in a thread */
    NGX_BOTTLE_SLOT_READY           /* to apply */
} ngx_bottle_slot_state_e;

typedef struct ngx_bottle_store_redis_s  ngx_bottle_store_redis_t;

typedef struct {
    ngx_queue_t                 queue;
    ngx_queue_t                 batch;      /* in a parse task */
    ngx_bottle_store_redis_t   *sr;
    ngx_bottle_slot_state_e     state;
    ngx_uint_t                  generation;

    /* a fetch: HMGET of one bottle */
    u_char                     *id;         /* NUL-terminated */
    size_t                      id_len;
    char                       *json;
    size_t                      json_len;
    uint64_t                    version;
    unsigned                    is_sync:1;  /* the index, not a bottle */
    unsigned                    gone:1;     /* removed from the store */
    unsigned                    lost:1;     /* no reply: the connection
                                               went */
    unsigned                    unchanged:1;
    unsigned                    want_secrets:1;
    unsigned                    sync_end:1; /* the sync is done when this
                                               one is applied */

    /* the index (is_sync): ids and versions, sorted by id */
    ngx_str_t                  *ids;
    ngx_uint_t                  nids;

    /* the parse */
    bottle_policy_t            *policy;
    bottle_scan_secrets_t      *secrets;
    char                        err[512];
} ngx_bottle_slot_t;


struct ngx_bottle_store_redis_s {
    ngx_bottle_store_t         *store;
    bottle_store_url_t          url;
    ngx_str_t                   addr;
    char                        name[512];  /* the URL, no credentials */
    ngx_msec_t                  stale_max;
    ngx_log_t                  *log;

    ngx_bottle_redis_t          cmd;
    ngx_bottle_redis_t          sub;

    ngx_queue_t                 slots;
    ngx_uint_t                  generation; /* of the connections */
    ngx_uint_t                  parsing;    /* a task is out */

    ngx_msec_t                  lost_at;    /* not fresh since then */
    unsigned                    fresh:1;
    unsigned                    loaded:1;   /* read whole once */
    unsigned                    subscribed:1;
    unsigned                    syncing:1;
};


static ngx_int_t ngx_bottle_store_redis_start(ngx_bottle_store_redis_t *sr);
static ngx_int_t ngx_bottle_store_redis_usable(ngx_bottle_store_t *st,
    const char **reason);
static void ngx_bottle_store_redis_state(ngx_bottle_redis_t *rd,
    ngx_uint_t up);
static void ngx_bottle_store_redis_stale(ngx_bottle_store_redis_t *sr);
static void ngx_bottle_store_redis_sync(ngx_bottle_store_redis_t *sr);
static void ngx_bottle_store_redis_index(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_store_redis_message(redisAsyncContext *ac, void *r,
    void *privdata);
static ngx_bottle_slot_t *ngx_bottle_store_redis_fetch(
    ngx_bottle_store_redis_t *sr, const u_char *id, size_t len);
static void ngx_bottle_store_redis_fetched(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_store_redis_dispatch(ngx_bottle_store_redis_t *sr);
static void ngx_bottle_store_redis_parse(ngx_bottle_slot_t *slot,
    bottle_scan_db_t *db);
#if (NGX_THREADS)
static void ngx_bottle_store_redis_thread(void *data, ngx_log_t *log);
static void ngx_bottle_store_redis_parsed(ngx_event_t *ev);
#endif
static void ngx_bottle_store_redis_apply(ngx_bottle_store_redis_t *sr);
static void ngx_bottle_store_redis_apply_sync(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slot);
static void ngx_bottle_store_redis_apply_one(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slot);
static void ngx_bottle_slot_free(ngx_bottle_slot_t *slot);
static int ngx_libc_cdecl ngx_bottle_str_cmp(const void *a, const void *b);


/* a batch of policies parsed in one thread task */

typedef struct {
    ngx_bottle_store_redis_t   *sr;
    ngx_queue_t                 batch;
    bottle_scan_db_t           *db;
} ngx_bottle_parse_task_t;

#define NGX_BOTTLE_PARSE_BATCH  256


/*
 * At configuration: the URL, and the store's host resolved now, because
 * hiredis would resolve it with a blocking getaddrinfo() in the worker.
 */

char *
ngx_bottle_store_redis_conf(ngx_conf_t *cf, ngx_bottle_store_t *st,
    ngx_str_t *value)
{
    char                       err[256];
    u_char                    *p;
    ngx_url_t                  u;
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

    if (!sr->url.is_unix) {
        ngx_memzero(&u, sizeof(ngx_url_t));

        p = ngx_pnalloc(cf->pool, BOTTLE_STORE_HOST_MAX + sizeof("[]:65535"));
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        u.url.data = p;
        u.url.len = ngx_sprintf(p, ngx_strchr(sr->url.host, ':') ? "[%s]:%ui"
                                                                  : "%s:%ui",
                                sr->url.host, (ngx_uint_t) sr->url.port)
                    - p;

        if (ngx_parse_url(cf->pool, &u) != NGX_OK || u.naddrs == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "bottle_policy: store host \"%s\" could not "
                               "be resolved%s%s", sr->url.host,
                               u.err ? ": " : "", u.err ? u.err : "");
            return NGX_CONF_ERROR;
        }

        /* the address alone, as hiredis wants it */

        p = ngx_pnalloc(cf->pool, NGX_SOCKADDR_STRLEN + 1);
        if (p == NULL) {
            return NGX_CONF_ERROR;
        }

        sr->addr.data = p;
        sr->addr.len = ngx_sock_ntop(u.addrs[0].sockaddr, u.addrs[0].socklen,
                                     p, NGX_SOCKADDR_STRLEN, 0);
        p[sr->addr.len] = '\0';
    }

    sr->store = st;
    ngx_queue_init(&sr->slots);

    st->redis = sr;
    st->usable = ngx_bottle_store_redis_usable;

    /* jansson seeds its hash function once: before any thread parses */
    json_object_seed(0);

    return NGX_CONF_OK;
}


const char *
ngx_bottle_store_redis_name(ngx_bottle_store_t *st)
{
    ngx_bottle_store_redis_t  *sr = st->redis;

    return sr ? sr->name : NULL;
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
    ngx_bottle_store_redis_t  *sr = st->redis;

    sr->log = cycle->log;
    sr->stale_max = st->stale_max;
    st->log = cycle->log;
    sr->lost_at = ngx_current_msec;

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

    if (ngx_bottle_store_redis_start(sr) != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_bottle_store_redis_start(ngx_bottle_store_redis_t *sr)
{
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
    ngx_bottle_store_redis_t  *sr = st->redis;

    if (sr->fresh) {
        return NGX_OK;
    }

    if (!sr->loaded) {
        *reason = "the gateway has not read its policy from the store yet";
        return NGX_DECLINED;
    }

    if ((ngx_msec_int_t) (ngx_current_msec - sr->lost_at)
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
    if (sr->fresh) {
        sr->fresh = 0;
        sr->lost_at = ngx_current_msec;

        ngx_log_error(NGX_LOG_WARN, sr->log, 0,
                      "bottle: policy store %s lost: serving the bottles "
                      "read so far for at most %M ms", sr->name,
                      sr->stale_max);
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


static void
ngx_bottle_store_redis_index(redisAsyncContext *ac, void *r, void *privdata)
{
    size_t                     i, n;
    redisReply                *reply = r, *k, *v;
    ngx_bottle_slot_t         *slot = privdata, *last;
    ngx_bottle_entry_t        *e;
    ngx_bottle_store_redis_t  *sr;

    sr = slot->sr;

    slot->state = NGX_BOTTLE_SLOT_READY;

    if (reply == NULL || slot->generation != sr->generation) {
        slot->lost = 1;
        ngx_bottle_store_redis_apply(sr);
        return;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements % 2) {
        ngx_log_error(NGX_LOG_ERR, sr->log, 0,
                      "bottle: policy store %s: \"%s\" is not a hash",
                      sr->name, BOTTLE_STORE_BOTTLES);
        slot->lost = 1;
        ngx_bottle_store_redis_apply(sr);
        ngx_bottle_redis_reset(&sr->cmd, "a bad index");
        return;
    }

    n = reply->elements / 2;

    slot->ids = ngx_alloc((n ? n : 1) * sizeof(ngx_str_t), sr->log);
    if (slot->ids == NULL) {
        slot->lost = 1;
        ngx_bottle_store_redis_apply(sr);
        return;
    }

    last = slot;

    for (i = 0; i < n; i++) {
        k = reply->element[2 * i];
        v = reply->element[2 * i + 1];

        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            continue;
        }

        slot->ids[slot->nids].data = ngx_alloc(k->len + 1, sr->log);
        if (slot->ids[slot->nids].data == NULL) {
            break;
        }

        ngx_memcpy(slot->ids[slot->nids].data, k->str, k->len);
        slot->ids[slot->nids].data[k->len] = '\0';
        slot->ids[slot->nids].len = k->len;
        slot->nids++;

        /* a bottle of another version than the snapshot's: fetch it */

        e = ngx_bottle_store_get(sr->store, (u_char *) k->str, k->len);

        if (e && e->version == (uint64_t) ngx_atoof((u_char *) v->str,
                                                     v->len))
        {
            continue;
        }

        last = ngx_bottle_store_redis_fetch(sr, (u_char *) k->str, k->len);
        if (last == NULL) {
            break;
        }
    }

    if (i < n) {
        slot->lost = 1;
        ngx_bottle_store_redis_apply(sr);
        ngx_bottle_redis_reset(&sr->cmd, "out of memory");
        return;
    }

    ngx_qsort(slot->ids, slot->nids, sizeof(ngx_str_t), ngx_bottle_str_cmp);

    last->sync_end = 1;

    ngx_bottle_store_redis_apply(sr);
}


/* the changes channel: "<id> <version>"; the bottle is read again */

static void
ngx_bottle_store_redis_message(redisAsyncContext *ac, void *r, void *privdata)
{
    size_t                     id_len;
    redisReply                *reply = r, *kind, *payload;
    const char                *id;
    unsigned long long         version;
    ngx_bottle_store_redis_t  *sr = privdata;

    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY
        || reply->elements != 3)
    {
        return;
    }

    kind = reply->element[0];
    payload = reply->element[2];

    if (kind->type != REDIS_REPLY_STRING) {
        return;
    }

    if (kind->len == 9 && ngx_strncmp(kind->str, "subscribe", 9) == 0) {
        sr->subscribed = 1;

        if (ngx_bottle_redis_ready(&sr->cmd)) {
            ngx_bottle_store_redis_sync(sr);
        }

        return;
    }

    if (kind->len != 7 || ngx_strncmp(kind->str, "message", 7) != 0
        || payload->type != REDIS_REPLY_STRING)
    {
        return;
    }

    if (bottle_store_change_parse(payload->str, payload->len, &id, &id_len,
                                  &version)
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


static ngx_bottle_slot_t *
ngx_bottle_store_redis_fetch(ngx_bottle_store_redis_t *sr, const u_char *id,
    size_t len)
{
    size_t              argvlen[4];
    const char         *argv[4];
    ngx_bottle_slot_t  *slot;
    u_char              key[sizeof(BOTTLE_STORE_POLICY_PREFIX) + 256];

    if (len > 255) {
        return NULL;
    }

    slot = ngx_calloc(sizeof(ngx_bottle_slot_t) + len + 1, sr->log);
    if (slot == NULL) {
        return NULL;
    }

    slot->sr = sr;
    slot->generation = sr->generation;
    slot->id = (u_char *) (slot + 1);
    slot->id_len = len;
    ngx_memcpy(slot->id, id, len);

    argv[0] = "HMGET";
    argvlen[0] = 5;
    argv[1] = (char *) key;
    argvlen[1] = ngx_sprintf(key, BOTTLE_STORE_POLICY_PREFIX "%*s", len, id)
                 - key;
    argv[2] = BOTTLE_STORE_F_JSON;
    argvlen[2] = sizeof(BOTTLE_STORE_F_JSON) - 1;
    argv[3] = BOTTLE_STORE_F_VERSION;
    argvlen[3] = sizeof(BOTTLE_STORE_F_VERSION) - 1;

    if (ngx_bottle_redis_command(&sr->cmd, ngx_bottle_store_redis_fetched,
                                 slot, 4, argv, argvlen)
        != NGX_OK)
    {
        ngx_free(slot);
        return NULL;
    }

    ngx_queue_insert_tail(&sr->slots, &slot->queue);

    return slot;
}


static void
ngx_bottle_store_redis_fetched(redisAsyncContext *ac, void *r,
    void *privdata)
{
    redisReply                *reply = r, *json, *version;
    ngx_bottle_slot_t         *slot = privdata;
    ngx_bottle_entry_t        *e;
    ngx_bottle_store_redis_t  *sr;

    sr = slot->sr;
    slot->state = NGX_BOTTLE_SLOT_READY;

    if (reply == NULL || slot->generation != sr->generation) {
        slot->lost = 1;
        goto done;
    }

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        ngx_log_error(NGX_LOG_ERR, sr->log, 0,
                      "bottle: policy store %s: \"" BOTTLE_STORE_POLICY_PREFIX
                      "%s\" is not a hash", sr->name, slot->id);
        slot->gone = 1;
        goto done;
    }

    json = reply->element[0];
    version = reply->element[1];

    if (json->type != REDIS_REPLY_STRING) {
        slot->gone = 1;
        goto done;
    }

    slot->version = (version->type == REDIS_REPLY_STRING)
                    ? (uint64_t) ngx_atoof((u_char *) version->str,
                                           version->len)
                    : 0;

    e = ngx_bottle_store_get(sr->store, slot->id, slot->id_len);

    if (e && e->version == slot->version && slot->version != 0) {
        slot->unchanged = 1;
        goto done;
    }

    slot->json = ngx_alloc(json->len + 1, sr->log);
    if (slot->json == NULL) {
        slot->lost = 1;
        goto done;
    }

    ngx_memcpy(slot->json, json->str, json->len);
    slot->json[json->len] = '\0';
    slot->json_len = json->len;

    /* a bottle in use gets its scanner before it is swapped in */
    slot->want_secrets = (e && e->secrets) ? 1 : 0;

    slot->state = NGX_BOTTLE_SLOT_PARSE;

done:

    ngx_bottle_store_redis_dispatch(sr);
    ngx_bottle_store_redis_apply(sr);
}


/* the policies waiting for a parse, in one task (one at a time) */

static void
ngx_bottle_store_redis_dispatch(ngx_bottle_store_redis_t *sr)
{
    ngx_uint_t                n;
    ngx_queue_t              *q;
    ngx_bottle_slot_t        *slot;
#if (NGX_THREADS)
    ngx_thread_task_t        *task;
    ngx_bottle_parse_task_t  *t;
#endif

    if (sr->parsing) {
        return;
    }

#if (NGX_THREADS)

    if (sr->store->thread_pool) {
        task = ngx_calloc(sizeof(ngx_thread_task_t)
                          + sizeof(ngx_bottle_parse_task_t), sr->log);
        if (task == NULL) {
            return;
        }

        t = (ngx_bottle_parse_task_t *) (task + 1);
        t->sr = sr;
        t->db = sr->store->scan_db;
        ngx_queue_init(&t->batch);

        n = 0;

        for (q = ngx_queue_head(&sr->slots);
             q != ngx_queue_sentinel(&sr->slots) && n < NGX_BOTTLE_PARSE_BATCH;
             q = ngx_queue_next(q))
        {
            slot = ngx_queue_data(q, ngx_bottle_slot_t, queue);

            if (slot->state == NGX_BOTTLE_SLOT_PARSE) {
                slot->state = NGX_BOTTLE_SLOT_PARSING;
                ngx_queue_insert_tail(&t->batch, &slot->batch);
                n++;
            }
        }

        if (n == 0) {
            ngx_free(task);
            return;
        }

        task->ctx = t;
        task->handler = ngx_bottle_store_redis_thread;
        task->event.handler = ngx_bottle_store_redis_parsed;
        task->event.data = task;
        task->event.log = sr->log;

        if (ngx_thread_task_post(sr->store->thread_pool, task) == NGX_OK) {
            sr->parsing = 1;
            return;
        }

        /* the pool's queue is full: parse here */

        while (!ngx_queue_empty(&t->batch)) {
            q = ngx_queue_head(&t->batch);
            ngx_queue_remove(q);
            slot = ngx_queue_data(q, ngx_bottle_slot_t, batch);
            slot->state = NGX_BOTTLE_SLOT_PARSE;
        }

        ngx_free(task);
    }

#endif

    for (q = ngx_queue_head(&sr->slots);
         q != ngx_queue_sentinel(&sr->slots);
         q = ngx_queue_next(q))
    {
        slot = ngx_queue_data(q, ngx_bottle_slot_t, queue);

        if (slot->state == NGX_BOTTLE_SLOT_PARSE) {
            ngx_bottle_store_redis_parse(slot, sr->store->scan_db);
            slot->state = NGX_BOTTLE_SLOT_READY;
        }
    }

    (void) n;
}


/*
 * One bottle's policy, as the file source would take it: the same parser,
 * the same refusal of what this build does not act on, errors that name
 * the key, the bottle and the field.  In a thread: nothing of nginx.
 */

static void
ngx_bottle_store_redis_parse(ngx_bottle_slot_t *slot, bottle_scan_db_t *db)
{
    char             source[sizeof(BOTTLE_STORE_POLICY_PREFIX) + 256];
    bottle_policy_t *p;
    const bottle_t  *b;

    snprintf(source, sizeof(source), BOTTLE_STORE_POLICY_PREFIX "%s",
             (char *) slot->id);

    if (bottle_policy_parse(&p, slot->json, slot->json_len, source, slot->err,
                            sizeof(slot->err))
        != 0)
    {
        return;
    }

    b = bottle_policy_at(p, 0);

    if (bottle_policy_count(p) != 1) {
        snprintf(slot->err, sizeof(slot->err),
                 "%s: holds %zu bottles, not one", source,
                 bottle_policy_count(p));
        bottle_policy_free(p);
        return;
    }

    if (b->id.len != slot->id_len
        || memcmp(b->id.data, slot->id, slot->id_len) != 0)
    {
        snprintf(slot->err, sizeof(slot->err),
                 "%s: bottle \"%s\": id: not the key's id", source,
                 b->id.data);
        bottle_policy_free(p);
        return;
    }

    if (bottle_policy_unsupported(p, slot->err, sizeof(slot->err)) != 0
        || ngx_bottle_audit_check(p, slot->err, sizeof(slot->err)) != 0)
    {
        bottle_policy_free(p);
        return;
    }

    if (slot->want_secrets
        && bottle_scan_secrets_from_bottle(&slot->secrets, db, b, slot->err,
                                           sizeof(slot->err))
           != 0)
    {
        slot->secrets = NULL;
    }

    slot->policy = p;
    slot->err[0] = '\0';
}


#if (NGX_THREADS)

static void
ngx_bottle_store_redis_thread(void *data, ngx_log_t *log)
{
    ngx_queue_t              *q;
    ngx_bottle_slot_t        *slot;
    ngx_bottle_parse_task_t  *t = data;

    for (q = ngx_queue_head(&t->batch);
         q != ngx_queue_sentinel(&t->batch);
         q = ngx_queue_next(q))
    {
        slot = ngx_queue_data(q, ngx_bottle_slot_t, batch);
        ngx_bottle_store_redis_parse(slot, t->db);
    }
}


static void
ngx_bottle_store_redis_parsed(ngx_event_t *ev)
{
    ngx_queue_t               *q;
    ngx_thread_task_t         *task = ev->data;
    ngx_bottle_slot_t         *slot;
    ngx_bottle_parse_task_t   *t;
    ngx_bottle_store_redis_t  *sr;

    t = task->ctx;
    sr = t->sr;

    for (q = ngx_queue_head(&t->batch);
         q != ngx_queue_sentinel(&t->batch);
         q = ngx_queue_next(q))
    {
        slot = ngx_queue_data(q, ngx_bottle_slot_t, batch);
        slot->state = NGX_BOTTLE_SLOT_READY;
    }

    ngx_free(task);
    sr->parsing = 0;

    ngx_bottle_store_redis_dispatch(sr);
    ngx_bottle_store_redis_apply(sr);
}

#endif


/* the replies that are complete, in order, from the head */

static void
ngx_bottle_store_redis_apply(ngx_bottle_store_redis_t *sr)
{
    ngx_uint_t          sync_end;
    ngx_queue_t        *q;
    ngx_bottle_slot_t  *slot;

    while (!ngx_queue_empty(&sr->slots)) {
        q = ngx_queue_head(&sr->slots);
        slot = ngx_queue_data(q, ngx_bottle_slot_t, queue);

        if (slot->state != NGX_BOTTLE_SLOT_READY) {
            return;
        }

        ngx_queue_remove(q);

        sync_end = slot->sync_end && !slot->lost
                   && slot->generation == sr->generation;

        if (slot->lost || slot->generation != sr->generation) {
            /* the next sync reads it again */

        } else if (slot->is_sync) {
            ngx_bottle_store_redis_apply_sync(sr, slot);

        } else {
            ngx_bottle_store_redis_apply_one(sr, slot);
        }

        ngx_bottle_slot_free(slot);

        if (sync_end) {
            sr->syncing = 0;

            if (ngx_bottle_redis_ready(&sr->cmd) && sr->subscribed) {
                if (!sr->loaded || !sr->fresh) {
                    ngx_log_error(NGX_LOG_NOTICE, sr->log, 0,
                                  "bottle: policy store %s read: %ui "
                                  "bottles", sr->name, sr->store->count);
                }

                sr->loaded = 1;
                sr->fresh = 1;
            }
        }
    }
}


/* the index: bottles of the snapshot that the store no longer has go */

static void
ngx_bottle_store_redis_apply_sync(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slot)
{
    ngx_str_t            id;
    ngx_uint_t           n;
    ngx_rbtree_node_t   *node, *next;
    ngx_bottle_entry_t  *e;
    ngx_bottle_store_t  *st;

    st = sr->store;

    if (st->ids.root == st->ids.sentinel) {
        return;
    }

    n = 0;

    for (node = ngx_rbtree_min(st->ids.root, st->ids.sentinel);
         node;
         node = next)
    {
        next = ngx_rbtree_next(&st->ids, node);
        e = (ngx_bottle_entry_t *) node;

        id.data = (u_char *) e->bottle->id.data;
        id.len = e->bottle->id.len;

        if (bsearch(&id, slot->ids, slot->nids, sizeof(ngx_str_t),
                    ngx_bottle_str_cmp)
            == NULL)
        {
            ngx_bottle_store_remove(st, e);
            n++;
        }
    }

    if (n) {
        ngx_log_error(NGX_LOG_NOTICE, sr->log, 0,
                      "bottle: policy store %s: %ui bottles removed while "
                      "it was away", sr->name, n);
    }
}


static void
ngx_bottle_store_redis_apply_one(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slot)
{
    ngx_bottle_entry_t  *e, *old;
    ngx_bottle_store_t  *st;

    st = sr->store;

    old = ngx_bottle_store_get(st, slot->id, slot->id_len);

    if (slot->unchanged) {
        return;
    }

    if (slot->gone) {
        if (old) {
            ngx_bottle_store_remove(st, old);
            ngx_log_error(NGX_LOG_NOTICE, sr->log, 0,
                          "bottle: bottle \"%s\" removed", slot->id);
        }
        return;
    }

    if (slot->policy == NULL) {
        /* fail closed: the bottle of a policy that does not parse goes */

        ngx_log_error(NGX_LOG_ERR, sr->log, 0, "bottle_policy: %s", slot->err);

        if (old) {
            ngx_bottle_store_remove(st, old);
        }
        return;
    }

    e = ngx_bottle_entry_create(st, slot->policy, slot->version);
    if (e == NULL) {
        return;
    }

    slot->policy = NULL;
    e->secrets = slot->secrets;
    slot->secrets = NULL;
    e->size = bottle_policy_bytes(e->policy) + sizeof(ngx_bottle_entry_t);

    ngx_bottle_store_put(st, e);

    ngx_log_debug2(NGX_LOG_DEBUG_CORE, sr->log, 0,
                   "bottle: bottle \"%s\" version %uL", slot->id,
                   slot->version);
}


static void
ngx_bottle_slot_free(ngx_bottle_slot_t *slot)
{
    ngx_uint_t  i;

    if (slot->ids) {
        for (i = 0; i < slot->nids; i++) {
            ngx_free(slot->ids[i].data);
        }
        ngx_free(slot->ids);
    }

    if (slot->json) {
        ngx_explicit_memzero(slot->json, slot->json_len);
        ngx_free(slot->json);
    }

    if (slot->secrets) {
        bottle_scan_secrets_free(slot->secrets);
    }

    bottle_policy_free(slot->policy);
    ngx_free(slot);
}


static int ngx_libc_cdecl
ngx_bottle_str_cmp(const void *a, const void *b)
{
    const ngx_str_t  *x = a, *y = b;

    return ngx_memn2cmp(x->data, y->data, x->len, y->len);
}
