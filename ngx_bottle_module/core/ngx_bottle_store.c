
/*
 * The bottles of a worker: entries by id and by token digest, with
 * references, so that a change never pulls a policy from under a request
 * that is using it.  Per worker, on its event loop: no locks.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#if defined(__GLIBC__)
#include <malloc.h>
#define NGX_HAVE_MALLOC_TRIM  1
#endif

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "ngx_bottle.h"


static void ngx_bottle_id_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static ngx_uint_t ngx_bottle_token_match(ngx_rbtree_node_t *node,
    ngx_rbtree_node_t *sentinel, ngx_rbtree_key_t key, const u_char *digest,
    ngx_bottle_entry_t **found);
static void ngx_bottle_entry_cleanup(void *data);
static void ngx_bottle_entry_free(ngx_bottle_entry_t *e);
static void ngx_bottle_secrets_ready(ngx_bottle_entry_t *e, ngx_int_t rc);
#if (NGX_THREADS)
static void ngx_bottle_secrets_thread(void *data, ngx_log_t *log);
static void ngx_bottle_secrets_done(ngx_event_t *ev);
#endif


#define ngx_bottle_token_key(digest)                                         \
    ((ngx_rbtree_key_t) ((uint32_t) (digest)[0] << 24                        \
                         | (uint32_t) (digest)[1] << 16                      \
                         | (uint32_t) (digest)[2] << 8 | (digest)[3]))


typedef struct {
    ngx_bottle_entry_t      *entry;
    bottle_scan_secrets_t   *secrets;
    char                     err[256];
} ngx_bottle_secrets_task_t;


/* per process, set from above (ngx_bottle_store.h) */
static void                     (*ngx_bottle_store_change_handler)(void);
static ngx_bottle_store_check_pt  ngx_bottle_store_checks[
                                      NGX_BOTTLE_STORE_CHECKS];
static ngx_uint_t                 ngx_bottle_store_nchecks;


ngx_bottle_store_t *
ngx_bottle_store_create(ngx_pool_t *pool, bottle_scan_db_t *db,
    ngx_log_t *log)
{
    ngx_bottle_store_t  *st;

    st = ngx_pcalloc(pool, sizeof(ngx_bottle_store_t));
    if (st == NULL) {
        return NULL;
    }

    ngx_rbtree_init(&st->ids, &st->ids_sentinel, ngx_bottle_id_insert);
    ngx_rbtree_init(&st->tokens, &st->tokens_sentinel,
                    ngx_rbtree_insert_value);
    ngx_queue_init(&st->compiled);

    st->scan_db = db;
    st->log = log;
    bottle_limits_default(&st->limits);

    return st;
}


ngx_bottle_store_t *
ngx_bottle_store(void)
{
    ngx_bottle_conf_t  *bcf;

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(ngx_cycle->conf_ctx,
                                             ngx_bottle_module);

    return bcf ? bcf->store : NULL;
}


ngx_bottle_entry_t *
ngx_bottle_entry_create(ngx_bottle_store_t *st, bottle_policy_t *policy,
    uint64_t version)
{
    ngx_bottle_entry_t  *e;

    e = ngx_calloc(sizeof(ngx_bottle_entry_t), st->log);
    if (e == NULL) {
        return NULL;
    }

    e->bottle = bottle_policy_at(policy, 0);
    e->policy = policy;
    e->store = st;
    e->version = version;
    e->refs = 1;
    ngx_queue_init(&e->waiters);

    return e;
}


void
ngx_bottle_store_put(ngx_bottle_store_t *st, ngx_bottle_entry_t *e)
{
    ngx_bottle_entry_t  *old;

    old = ngx_bottle_store_get(st, (u_char *) e->bottle->id.data,
                                     e->bottle->id.len);
    if (old) {
        ngx_bottle_store_remove(st, old);
    }

    e->id_node.key = ngx_crc32_short((u_char *) e->bottle->id.data,
                                     e->bottle->id.len);
    ngx_rbtree_insert(&st->ids, &e->id_node);

    e->token_node.key = ngx_bottle_token_key(e->bottle->token_sha256);
    ngx_rbtree_insert(&st->tokens, &e->token_node);

    e->listed = 1;
    st->count++;
    st->bytes += e->size;
    st->json_bytes += e->json_len;

    if (e->version > st->version_max) {
        st->version_max = e->version;

        if (st->redis) {
            ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_POLICY_VERSION,
                                          (ngx_atomic_uint_t) e->version);
        }
    }

    /* open connections are decided again against it */
    ngx_bottle_store_changed();
}


/* unlists e and drops the table's reference */

void
ngx_bottle_store_remove(ngx_bottle_store_t *st, ngx_bottle_entry_t *e)
{
    if (!e->listed) {
        return;
    }

    ngx_rbtree_delete(&st->ids, &e->id_node);
    ngx_rbtree_delete(&st->tokens, &e->token_node);

    e->listed = 0;
    st->count--;
    st->bytes -= e->size;
    st->json_bytes -= e->json_len;

    ngx_bottle_store_changed();

    ngx_bottle_entry_release(e);
}


void
ngx_bottle_entry_release(ngx_bottle_entry_t *e)
{
    if (e->permanent) {
        return;
    }

    if (--e->refs == 0) {
        ngx_bottle_entry_free(e);
    }
}


ngx_int_t
ngx_bottle_entry_hold(ngx_bottle_entry_t *e, ngx_pool_t *pool)
{
    ngx_pool_cleanup_t  *cln;

    if (e->permanent) {
        return NGX_OK;
    }

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_bottle_entry_cleanup;
    cln->data = e;
    e->refs++;

    return NGX_OK;
}


static void
ngx_bottle_entry_cleanup(void *data)
{
    ngx_bottle_entry_release(data);
}


static void
ngx_bottle_entry_free(ngx_bottle_entry_t *e)
{
    /* a scan still running keeps the databases until it ends */

    if (e->secrets) {
        ngx_queue_remove(&e->lru);
        e->store->ncompiled--;
        bottle_scan_secrets_free(e->secrets);
    }

    bottle_policy_free(e->policy);

    /* after the frees: a trim before them would return nothing */

    ngx_bottle_store_freed(e->size);
    ngx_free(e);
}


/*
 * Memory freed goes back to the system: glibc keeps the pages of freed
 * chunks (the parse's, in the thread pool's arena, and the policy's) for
 * the process until malloc_trim() returns them.  Once per
 * NGX_BOTTLE_TRIM_BYTES freed, so that a removed or replaced large bottle
 * leaves the worker's RSS where it was (docs/control-plane.md, "Limits").
 */

#define NGX_BOTTLE_TRIM_BYTES  (1024 * 1024)

void
ngx_bottle_store_freed(size_t size)
{
    static size_t  freed;

    freed += size;

    if (freed < NGX_BOTTLE_TRIM_BYTES) {
        return;
    }

    freed = 0;

#if (NGX_HAVE_MALLOC_TRIM)
    (void) malloc_trim(0);
#endif
}


ngx_int_t
ngx_bottle_store_usable(const char **reason)
{
    ngx_bottle_store_t  *st;

    st = ngx_bottle_store();

    if (st == NULL) {
        *reason = "the gateway has no policy";
        return NGX_DECLINED;
    }

    if (st->usable) {
        return st->usable(st, reason);
    }

    return NGX_OK;
}


ngx_bottle_entry_t *
ngx_bottle_find_id(const u_char *id, size_t len, const char **reason)
{
    ngx_bottle_entry_t  *e;

    if (ngx_bottle_store_usable(reason) != NGX_OK) {
        return NULL;
    }

    e = ngx_bottle_store_get(ngx_bottle_store(), id, len);

    if (e == NULL) {
        *reason = "the bottle is no longer in the policy";
    }

    return e;
}


/*
 * The token is hashed and the digest looked up; digests are compared in
 * constant time.  A digest two bottles share (the store refuses that, a
 * hand-written key might not) identifies neither.
 */

ngx_bottle_entry_t *
ngx_bottle_find_token(const u_char *token, size_t len, const char **reason)
{
    u_char  digest[SHA256_DIGEST_LENGTH];

    SHA256(token, len, digest);

    return ngx_bottle_find_digest(digest, reason);
}


/* the same, by the token's digest (an open connection decided again) */

ngx_bottle_entry_t *
ngx_bottle_find_digest(const u_char *digest, const char **reason)
{
    ngx_bottle_entry_t  *found;
    ngx_bottle_store_t  *st;

    if (ngx_bottle_store_usable(reason) != NGX_OK) {
        return NULL;
    }

    st = ngx_bottle_store();

    found = NULL;

    if (ngx_bottle_token_match(st->tokens.root, st->tokens.sentinel,
                               ngx_bottle_token_key(digest), digest, &found)
        > 1)
    {
        *reason = "two bottles have this token";
        return NULL;
    }

    if (found == NULL) {
        *reason = "no bottle has this token";
    }

    return found;
}


/* how many entries of the subtree have the digest; *found: one of them */

static ngx_uint_t
ngx_bottle_token_match(ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel,
    ngx_rbtree_key_t key, const u_char *digest, ngx_bottle_entry_t **found)
{
    ngx_uint_t           n;
    ngx_bottle_entry_t  *e;

    /* equal keys may sit on both sides of one (rotations): look in both */

    while (node != sentinel && node->key != key) {
        node = key < node->key ? node->left : node->right;
    }

    if (node == sentinel) {
        return 0;
    }

    e = (ngx_bottle_entry_t *) ((u_char *) node
                                - offsetof(ngx_bottle_entry_t, token_node));
    n = 0;

    if (CRYPTO_memcmp(e->bottle->token_sha256, digest, SHA256_DIGEST_LENGTH)
        == 0)
    {
        *found = e;
        n = 1;
    }

    return n + ngx_bottle_token_match(node->left, sentinel, key, digest, found)
             + ngx_bottle_token_match(node->right, sentinel, key, digest,
                                      found);
}


ngx_bottle_entry_t *
ngx_bottle_store_get(ngx_bottle_store_t *st, const u_char *id,
    size_t len)
{
    ngx_int_t            rc;
    ngx_rbtree_key_t     key;
    ngx_rbtree_node_t   *node, *sentinel;
    ngx_bottle_entry_t  *e;

    key = ngx_crc32_short((u_char *) id, len);

    node = st->ids.root;
    sentinel = st->ids.sentinel;

    while (node != sentinel) {

        if (key != node->key) {
            node = key < node->key ? node->left : node->right;
            continue;
        }

        e = (ngx_bottle_entry_t *) node;

        rc = ngx_memn2cmp((u_char *) id, (u_char *) e->bottle->id.data, len,
                          e->bottle->id.len);

        if (rc == 0) {
            return e;
        }

        node = rc < 0 ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_bottle_id_insert(ngx_rbtree_node_t *temp, ngx_rbtree_node_t *node,
    ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t   **p;
    ngx_bottle_entry_t   *n, *t;

    for ( ;; ) {

        if (node->key != temp->key) {
            p = node->key < temp->key ? &temp->left : &temp->right;

        } else {
            n = (ngx_bottle_entry_t *) node;
            t = (ngx_bottle_entry_t *) temp;

            p = ngx_memn2cmp((u_char *) n->bottle->id.data,
                             (u_char *) t->bottle->id.data,
                             n->bottle->id.len, t->bottle->id.len)
                < 0 ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


/*
 * A bottle's scanner databases (its canary and egress tokens in every
 * encoding) take about a millisecond to compile.  The file's are compiled
 * with the configuration; a store's, the first time a request of the
 * bottle needs them (or before a changed bottle that had them is swapped
 * in), in the thread pool.
 */

ngx_int_t
ngx_bottle_entry_secrets(ngx_bottle_entry_t *e, ngx_bottle_waiter_t *w,
    bottle_scan_secrets_t **out)
{
#if (NGX_THREADS)
    ngx_thread_task_t          *task;
    ngx_bottle_secrets_task_t  *t;
#endif
    char                        err[256];

    if (e->secrets) {
        if (!e->permanent) {
            /* the most recently used */
            ngx_queue_remove(&e->lru);
            ngx_queue_insert_tail(&e->store->compiled, &e->lru);
        }

        *out = e->secrets;
        return NGX_OK;
    }

    if (e->failed) {
        return NGX_ERROR;
    }

    if (e->compiling) {
        ngx_queue_insert_tail(&e->waiters, &w->queue);
        return NGX_AGAIN;
    }

#if (NGX_THREADS)

    if (e->store->thread_pool) {
        task = ngx_calloc(sizeof(ngx_thread_task_t)
                          + sizeof(ngx_bottle_secrets_task_t), e->store->log);
        if (task == NULL) {
            return NGX_ERROR;
        }

        t = (ngx_bottle_secrets_task_t *) (task + 1);
        t->entry = e;

        task->ctx = t;
        task->handler = ngx_bottle_secrets_thread;
        task->event.handler = ngx_bottle_secrets_done;
        task->event.data = task;
        task->event.log = e->store->log;

        if (ngx_thread_task_post(e->store->thread_pool, task) != NGX_OK) {
            ngx_free(task);
            return NGX_ERROR;
        }

        e->refs++;
        e->compiling = 1;
        ngx_queue_insert_tail(&e->waiters, &w->queue);

        return NGX_AGAIN;
    }

#endif

    if (bottle_scan_secrets_from_bottle(out, e->store->scan_db, e->bottle,
                                        err, sizeof(err))
        != 0)
    {
        ngx_log_error(NGX_LOG_ALERT, e->store->log, 0,
                      "bottle: bottle \"%s\": the secret scanner: %s",
                      e->bottle->id.data, err);
        e->failed = 1;
        return NGX_ERROR;
    }

    ngx_bottle_entry_compiled(e, *out);

    return NGX_OK;
}


/*
 * A compiled scanner is about 100 KiB in each worker: past
 * bottle_store_scanners of them, the least recently used is freed (a scan
 * still running keeps it until it ends) and compiled again when its bottle
 * next needs it.
 */

void
ngx_bottle_entry_compiled(ngx_bottle_entry_t *e,
    bottle_scan_secrets_t *secrets)
{
    ngx_queue_t         *q;
    ngx_bottle_entry_t  *old;
    ngx_bottle_store_t  *st;

    st = e->store;

    e->secrets = secrets;
    ngx_queue_insert_tail(&st->compiled, &e->lru);
    st->ncompiled++;

    while (st->max_compiled && st->ncompiled > st->max_compiled) {
        q = ngx_queue_head(&st->compiled);
        old = ngx_queue_data(q, ngx_bottle_entry_t, lru);

        if (old == e) {
            break;
        }

        ngx_queue_remove(q);
        st->ncompiled--;

        ngx_log_debug1(NGX_LOG_DEBUG_CORE, st->log, 0,
                       "bottle: the scanner of bottle \"%s\" freed (least "
                       "recently used)", old->bottle->id.data);

        bottle_scan_secrets_free(old->secrets);
        old->secrets = NULL;
    }
}


#if (NGX_THREADS)

static void
ngx_bottle_secrets_thread(void *data, ngx_log_t *log)
{
    ngx_bottle_secrets_task_t  *t = data;

    if (bottle_scan_secrets_from_bottle(&t->secrets, t->entry->store->scan_db,
                                        t->entry->bottle, t->err,
                                        sizeof(t->err))
        != 0)
    {
        t->secrets = NULL;
    }
}


static void
ngx_bottle_secrets_done(ngx_event_t *ev)
{
    ngx_thread_task_t          *task = ev->data;
    ngx_bottle_entry_t         *e;
    ngx_bottle_secrets_task_t  *t;

    t = task->ctx;
    e = t->entry;

    e->compiling = 0;

    if (t->secrets == NULL) {
        ngx_log_error(NGX_LOG_ALERT, e->store->log, 0,
                      "bottle: bottle \"%s\": the secret scanner: %s",
                      e->bottle->id.data, t->err);
        e->failed = 1;

    } else {
        ngx_bottle_entry_compiled(e, t->secrets);
    }

    ngx_free(task);

    ngx_bottle_secrets_ready(e, e->secrets ? NGX_OK : NGX_ERROR);

    ngx_bottle_entry_release(e);
}

#endif


static void
ngx_bottle_secrets_ready(ngx_bottle_entry_t *e, ngx_int_t rc)
{
    ngx_queue_t          *q;
    ngx_bottle_waiter_t  *w;

    while (!ngx_queue_empty(&e->waiters)) {
        q = ngx_queue_head(&e->waiters);
        ngx_queue_remove(q);

        w = ngx_queue_data(q, ngx_bottle_waiter_t, queue);
        w->handler(w, rc);
    }
}


void
ngx_bottle_store_on_change(void (*handler)(void))
{
    ngx_bottle_store_change_handler = handler;
}


void
ngx_bottle_store_changed(void)
{
    if (ngx_bottle_store_change_handler) {
        ngx_bottle_store_change_handler();
    }
}


/* again (a reload in the same master) changes nothing */

ngx_int_t
ngx_bottle_store_check_add(ngx_bottle_store_check_pt check)
{
    ngx_uint_t  i;

    for (i = 0; i < ngx_bottle_store_nchecks; i++) {
        if (ngx_bottle_store_checks[i] == check) {
            return NGX_OK;
        }
    }

    if (ngx_bottle_store_nchecks == NGX_BOTTLE_STORE_CHECKS) {
        return NGX_ERROR;
    }

    ngx_bottle_store_checks[ngx_bottle_store_nchecks++] = check;

    return NGX_OK;
}


/* in a thread: nothing of nginx but the list set before threads run */

int
ngx_bottle_store_check(const bottle_policy_t *p, char *err, size_t errlen)
{
    ngx_uint_t  i;

    for (i = 0; i < ngx_bottle_store_nchecks; i++) {
        if (ngx_bottle_store_checks[i](p, err, errlen) != 0) {
            return -1;
        }
    }

    return 0;
}
