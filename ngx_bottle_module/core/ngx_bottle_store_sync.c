
/*
 * The Redis source's replies, applied in the order Redis executed the
 * commands (docs/control-plane.md): the index read after a (re)connection,
 * and each bottle fetched after a change.  A fetched policy is parsed (and,
 * for a bottle whose scanner was in use, its scanner compiled) in the
 * thread pool; the replies wait for one another at the head of the queue,
 * so the snapshot never goes back in time.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include "ngx_bottle_store_redis.h"


static void ngx_bottle_store_redis_fetched(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_store_redis_dispatch(ngx_bottle_store_redis_t *sr);
#if (NGX_THREADS)
static void ngx_bottle_store_redis_thread(void *data, ngx_log_t *log);
static void ngx_bottle_store_redis_parsed(ngx_event_t *ev);
#endif
static void ngx_bottle_store_redis_apply_sync(ngx_bottle_store_redis_t *sr,
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


/* the index: what to fetch, and (applied in turn) what is gone */

void
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


ngx_bottle_slot_t *
ngx_bottle_store_redis_fetch(ngx_bottle_store_redis_t *sr, const u_char *id,
    size_t len)
{
    size_t              argvlen[5];
    const char         *argv[5];
    ngx_bottle_slot_t  *slot;
    u_char              buf[NGX_BOTTLE_FETCH_BUF_LEN];

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

    ngx_bottle_store_fetch_argv(sr, id, len, buf, argv, argvlen);

    if (ngx_bottle_redis_command(&sr->cmd, ngx_bottle_store_redis_fetched,
                                 slot, 5, argv, argvlen)
        != NGX_OK)
    {
        ngx_free(slot);
        return NULL;
    }

    ngx_queue_insert_tail(&sr->slots, &slot->queue);

    return slot;
}


/*
 * Redis measures the JSON before it sends it: a policy over the limit is
 * never read, so neither its transfer nor its parse can delay the others
 * or take a worker's memory.
 */

void
ngx_bottle_store_fetch_argv(ngx_bottle_store_redis_t *sr, const u_char *id,
    size_t len, u_char *buf, const char **argv, size_t *argvlen)
{
    argv[0] = "EVAL";
    argvlen[0] = 4;
    argv[1] = bottle_store_fetch_script;
    argvlen[1] = ngx_strlen(bottle_store_fetch_script);
    argv[2] = "0";
    argvlen[2] = 1;
    argv[3] = (char *) id;
    argvlen[3] = len;
    argv[4] = (char *) buf;
    argvlen[4] = ngx_sprintf(buf, "%uz", sr->store->limits.policy) - buf;
}


ngx_int_t
ngx_bottle_store_fetch_reply(ngx_bottle_slot_t *slot, redisReply *reply)
{
    char                       source[sizeof(BOTTLE_STORE_POLICY_PREFIX)
                                      + 256];
    redisReply                *json, *version;
    ngx_bottle_store_redis_t  *sr;

    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        return NGX_ERROR;
    }

    json = reply->element[0];
    version = reply->element[1];

    slot->version = (version->type == REDIS_REPLY_STRING)
                    ? (uint64_t) ngx_atoof((u_char *) version->str,
                                           version->len)
                    : 0;

    if (json->type == REDIS_REPLY_INTEGER && json->integer >= 0) {
        sr = slot->sr;
        slot->json = NULL;
        slot->json_len = (size_t) json->integer;

        ngx_sprintf((u_char *) source, BOTTLE_STORE_POLICY_PREFIX "%s%Z",
                    slot->id);
        (void) bottle_limits_check_policy(&sr->store->limits, source,
                                          (char *) slot->id, slot->json_len,
                                          slot->err, sizeof(slot->err));
        return NGX_ABORT;
    }

    if (json->type != REDIS_REPLY_STRING) {
        return NGX_DECLINED;
    }

    /* hiredis's strings are NUL-terminated, as the parser wants */

    slot->json = json->str;
    slot->json_len = json->len;

    return NGX_OK;
}


ngx_int_t
ngx_bottle_store_fetch_total(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slot, size_t held)
{
    char                 source[sizeof(BOTTLE_STORE_POLICY_PREFIX) + 256];
    size_t               total;
    ngx_bottle_entry_t  *old;
    ngx_bottle_store_t  *st;

    st = sr->store;
    old = ngx_bottle_store_get(st, slot->id, slot->id_len);

    total = st->json_bytes - (old ? old->json_len : 0) + held
            + slot->json_len;

    if (total <= st->limits.store) {
        return NGX_OK;
    }

    ngx_sprintf((u_char *) source, BOTTLE_STORE_POLICY_PREFIX "%s%Z",
                slot->id);
    (void) bottle_limits_check_store(&st->limits, source, (char *) slot->id,
                                     total, slot->err, sizeof(slot->err));

    return NGX_DECLINED;
}


static void
ngx_bottle_store_redis_fetched(redisAsyncContext *ac, void *r,
    void *privdata)
{
    char                      *json;
    ngx_int_t                  rc;
    redisReply                *reply = r;
    ngx_bottle_slot_t         *slot = privdata;
    ngx_bottle_entry_t        *e;
    ngx_bottle_store_redis_t  *sr;

    sr = slot->sr;
    slot->state = NGX_BOTTLE_SLOT_READY;

    if (reply == NULL || slot->generation != sr->generation) {
        slot->lost = 1;
        goto done;
    }

    rc = ngx_bottle_store_fetch_reply(slot, reply);

    if (rc == NGX_ABORT) {
        /* over the limit: refused as an invalid policy is */
        goto done;
    }

    if (rc != NGX_OK) {
        if (rc == NGX_ERROR && reply->type == REDIS_REPLY_ERROR) {
            /* e.g. NOPERM: an ACL user without +hstrlen */
            ngx_log_error(NGX_LOG_ERR, sr->log, 0,
                          "bottle: policy store %s: the fetch of \""
                          BOTTLE_STORE_POLICY_PREFIX "%s\" failed: %*s",
                          sr->name, slot->id,
                          (size_t) ngx_min(reply->len, 200), reply->str);

        } else if (rc == NGX_ERROR) {
            ngx_log_error(NGX_LOG_ERR, sr->log, 0,
                          "bottle: policy store %s: \""
                          BOTTLE_STORE_POLICY_PREFIX "%s\" is not a hash",
                          sr->name, slot->id);
        }

        slot->json = NULL;
        slot->gone = 1;
        goto done;
    }

    e = ngx_bottle_store_get(sr->store, slot->id, slot->id_len);

    if (e && e->version == slot->version && slot->version != 0) {
        slot->json = NULL;
        slot->unchanged = 1;
        goto done;
    }

    /* what is held until applied counts in the store's total already */

    if (ngx_bottle_store_fetch_total(sr, slot, sr->pending) != NGX_OK) {
        slot->json = NULL;
        goto done;
    }

    /* the reply goes when this callback returns: the parse needs a copy */

    json = ngx_alloc(slot->json_len + 1, sr->log);
    if (json == NULL) {
        slot->json = NULL;
        slot->lost = 1;
        goto done;
    }

    ngx_memcpy(json, slot->json, slot->json_len + 1);
    slot->json = json;
    slot->counted = 1;
    sr->pending += slot->json_len;

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

void
ngx_bottle_store_redis_parse(ngx_bottle_slot_t *slot, bottle_scan_db_t *db)
{
    char             source[sizeof(BOTTLE_STORE_POLICY_PREFIX) + 256];
    bottle_policy_t *p;
    const bottle_t  *b;

    if (slot->json == NULL) {
        /* refused before it was read: the reason is in slot->err */
        return;
    }

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

    if (b->token_given) {
        /* a store keeps digests only: bottlectl never writes a token */
        snprintf(slot->err, sizeof(slot->err),
                 "%s: bottle \"%s\": token: the store holds token_sha256 "
                 "only (bottlectl policy put hashes the token)", source,
                 b->id.data);
        bottle_policy_free(p);
        return;
    }

    if (bottle_policy_unsupported(p, slot->err, sizeof(slot->err)) != 0
        || ngx_bottle_store_check(p, slot->err, sizeof(slot->err)) != 0
        || bottle_limits_check_bottle(&slot->sr->store->limits, source, b,
                                      slot->err, sizeof(slot->err))
           != 0)
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

void
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
            sr->applied_at = ngx_current_msec;
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
                sr->fresh_at = ngx_current_msec;
                ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_STORE_UP, 1);

                if (sr->expire.timer_set) {
                    ngx_del_timer(&sr->expire);
                }
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


void
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

    if (slot->policy != NULL
        && ngx_bottle_store_fetch_total(sr, slot, 0) != NGX_OK)
    {
        bottle_policy_free(slot->policy);
        slot->policy = NULL;
    }

    if (slot->policy == NULL) {
        /*
         * fail closed: the bottle of a policy that does not parse, or is
         * over a limit, goes; the others are served on
         */

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
    if (slot->secrets) {
        ngx_bottle_entry_compiled(e, slot->secrets);
        slot->secrets = NULL;
    }
    e->size = bottle_policy_bytes(e->policy) + sizeof(ngx_bottle_entry_t);
    e->json_len = slot->json_len;

    ngx_bottle_store_put(st, e);

    ngx_log_debug2(NGX_LOG_DEBUG_CORE, sr->log, 0,
                   "bottle: bottle \"%s\" version %uL", slot->id,
                   slot->version);
}


static void
ngx_bottle_slot_free(ngx_bottle_slot_t *slot)
{
    size_t      freed;
    ngx_uint_t  i;

    freed = slot->json ? slot->json_len : 0;

    if (slot->ids) {
        for (i = 0; i < slot->nids; i++) {
            ngx_free(slot->ids[i].data);
        }
        ngx_free(slot->ids);
    }

    if (slot->counted) {
        slot->sr->pending -= slot->json_len;
    }

    if (slot->json) {
        ngx_explicit_memzero(slot->json, slot->json_len);
        ngx_free(slot->json);
    }

    if (slot->secrets) {
        bottle_scan_secrets_free(slot->secrets);
    }

    bottle_policy_free(slot->policy);

    /* after the frees: a trim before them would return nothing */

    ngx_bottle_store_freed(freed);
    ngx_free(slot);
}


static int ngx_libc_cdecl
ngx_bottle_str_cmp(const void *a, const void *b)
{
    const ngx_str_t  *x = a, *y = b;

    return ngx_memn2cmp(x->data, y->data, x->len, y->len);
}
