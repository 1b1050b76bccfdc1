
/*
 * The Redis source, read once by the master when the configuration loads
 * (start and reload), so that workers start with the bottles instead of
 * refusing until each has read them (and parse them once, not once per
 * worker, on every core).  Blocking calls are fine here: no request is being served by
 * this process.  Each worker then reads the index again and fetches only
 * what changed since (ngx_bottle_store_sync.c).
 *
 * A store that cannot be read now is not an error: the workers read it
 * when it answers, and refuse until then.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include <pthread.h>

#include "ngx_bottle_store_redis.h"


#define NGX_BOTTLE_LOAD_TIMEOUT  2      /* seconds, to connect and per reply */
#define NGX_BOTTLE_LOAD_BATCH    512    /* fetches in flight */
#define NGX_BOTTLE_LOAD_THREADS  8


typedef struct {
    ngx_bottle_slot_t         *slots;
    ngx_uint_t                 n;
    ngx_uint_t                 first;      /* every step-th from first */
    ngx_uint_t                 step;
    bottle_scan_db_t          *db;
} ngx_bottle_load_part_t;


static redisContext *ngx_bottle_store_load_connect(ngx_conf_t *cf,
    ngx_bottle_store_redis_t *sr);
static ngx_int_t ngx_bottle_store_load_batch(ngx_bottle_store_redis_t *sr,
    redisContext *c, redisReply *index, size_t from, size_t n,
    ngx_bottle_slot_t *slots, redisReply **replies);
static void ngx_bottle_store_load_parse(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slots, ngx_uint_t n);
static void *ngx_bottle_store_load_thread(void *data);
static redisContext *ngx_bottle_store_load_sentinel(ngx_conf_t *cf,
    ngx_bottle_store_redis_t *sr);
static void ngx_bottle_store_load_failed(ngx_conf_t *cf,
    ngx_bottle_store_redis_t *sr, redisContext *c, const char *what);


void
ngx_bottle_store_redis_preload(ngx_conf_t *cf, ngx_bottle_store_redis_t *sr)
{
    size_t              i, n;
    redisReply         *index, **replies;
    redisContext       *c;
    ngx_bottle_slot_t  *slots;

    /* nginx -t and nginx -s only read the configuration */

    if (ngx_test_config || ngx_process == NGX_PROCESS_SIGNALLER) {
        return;
    }

    c = ngx_bottle_store_load_connect(cf, sr);
    if (c == NULL) {
        return;
    }

    index = redisCommand(c, "HGETALL %s", BOTTLE_STORE_BOTTLES);

    if (index == NULL || index->type != REDIS_REPLY_ARRAY
        || index->elements % 2)
    {
        if (index) {
            freeReplyObject(index);
        }
        ngx_bottle_store_load_failed(cf, sr, c, "HGETALL");
        return;
    }

    n = index->elements / 2;

    slots = ngx_calloc((n ? n : 1) * sizeof(ngx_bottle_slot_t), cf->log);
    replies = ngx_calloc((n ? n : 1) * sizeof(redisReply *), cf->log);

    if (slots == NULL || replies == NULL) {
        goto failed;
    }

    /* all of them read first, then parsed on every core */

    for (i = 0; i < n; i += NGX_BOTTLE_LOAD_BATCH) {
        if (ngx_bottle_store_load_batch(sr, c, index, i,
                                        ngx_min(n - i, NGX_BOTTLE_LOAD_BATCH),
                                        slots, replies)
            != NGX_OK)
        {
            goto failed;
        }
    }

    ngx_bottle_store_load_parse(sr, slots, n);

    for (i = 0; i < n; i++) {
        if (slots[i].sr) {
            ngx_bottle_store_redis_apply_one(sr, &slots[i]);
            bottle_policy_free(slots[i].policy);
        }

        if (replies[i]) {
            freeReplyObject(replies[i]);
        }
    }

    sr->pending = 0;

    ngx_free(slots);
    ngx_free(replies);
    freeReplyObject(index);
    redisFree(c);

    /* served for bottle_store_stale_max from now, until a worker has read
       the store itself */

    ngx_time_update();
    sr->lost_at = ngx_current_msec;
    sr->loaded = 1;

    ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0,
                       "bottle_policy: store %s read: %ui bottles",
                       sr->name, sr->store->count);
    return;

failed:

    sr->pending = 0;

    for (i = 0; replies && i < n; i++) {
        if (replies[i]) {
            freeReplyObject(replies[i]);
        }
    }

    if (slots) {
        ngx_free(slots);
    }

    if (replies) {
        ngx_free(replies);
    }

    freeReplyObject(index);
    ngx_bottle_store_load_failed(cf, sr, c, "fetch");
}


static redisContext *
ngx_bottle_store_load_connect(ngx_conf_t *cf, ngx_bottle_store_redis_t *sr)
{
    struct timeval   tv;
    redisReply      *r;
    redisContext    *c;

    if (sr->url.nsentinels) {
        return ngx_bottle_store_load_sentinel(cf, sr);
    }

    tv.tv_sec = NGX_BOTTLE_LOAD_TIMEOUT;
    tv.tv_usec = 0;

    c = sr->url.is_unix
        ? redisConnectUnixWithTimeout(sr->url.path, tv)
        : redisConnectWithTimeout((char *) sr->addr.data, (int) sr->url.port,
                                  tv);

    if (c == NULL || c->err) {
        ngx_bottle_store_load_failed(cf, sr, c, "connect");
        return NULL;
    }

    (void) redisSetTimeout(c, tv);

    if (sr->url.has_password) {
        r = sr->url.user[0]
            ? redisCommand(c, "AUTH %s %s", sr->url.user, sr->url.password)
            : redisCommand(c, "AUTH %s", sr->url.password);

        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            if (r) {
                freeReplyObject(r);
            }
            ngx_bottle_store_load_failed(cf, sr, c, "AUTH");
            return NULL;
        }

        freeReplyObject(r);
    }

    r = redisCommand(c, "SELECT %u", sr->url.db);

    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        if (r) {
            freeReplyObject(r);
        }
        ngx_bottle_store_load_failed(cf, sr, c, "SELECT");
        return NULL;
    }

    freeReplyObject(r);

    return c;
}


/* through the sentinels, as bottlectl does: here blocking is allowed */

static redisContext *
ngx_bottle_store_load_sentinel(ngx_conf_t *cf, ngx_bottle_store_redis_t *sr)
{
    char           err[512];
    redisContext  *c;

    if (bottle_store_connect(&c, &sr->url, NGX_BOTTLE_LOAD_TIMEOUT,
                             NGX_BOTTLE_LOAD_TIMEOUT, err, sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "bottle_policy: store %s could not be read now "
                           "(connect: %s): the workers read it when it "
                           "answers, and resolve no bottle until then",
                           sr->name, err);
        return NULL;
    }

    return c;
}


/* n bottles of the index from "from", pipelined; their replies kept */

static ngx_int_t
ngx_bottle_store_load_batch(ngx_bottle_store_redis_t *sr, redisContext *c,
    redisReply *index, size_t from, size_t n, ngx_bottle_slot_t *slots,
    redisReply **replies)
{
    size_t              i, argvlen[5];
    u_char              buf[NGX_BOTTLE_FETCH_BUF_LEN];
    ngx_int_t           rc;
    const char         *argv[5];
    redisReply         *id, *r;
    ngx_bottle_slot_t  *slot;

    for (i = from; i < from + n; i++) {
        id = index->element[2 * i];

        if (id->type != REDIS_REPLY_STRING || id->len > 255) {
            return NGX_ERROR;
        }

        ngx_bottle_store_fetch_argv(sr, (u_char *) id->str, id->len, buf,
                                    argv, argvlen);

        if (redisAppendCommandArgv(c, 5, argv, argvlen) != REDIS_OK) {
            return NGX_ERROR;
        }
    }

    for (i = from; i < from + n; i++) {
        if (redisGetReply(c, (void **) &r) != REDIS_OK || r == NULL) {
            return NGX_ERROR;
        }

        replies[i] = r;
        slot = &slots[i];

        /* kept with the reply until it is parsed */

        id = index->element[2 * i];
        slot->sr = sr;
        slot->id = (u_char *) id->str;
        slot->id_len = id->len;

        rc = ngx_bottle_store_fetch_reply(slot, r);

        if (rc == NGX_OK
            && ngx_bottle_store_fetch_total(sr, slot, sr->pending) != NGX_OK)
        {
            /* past the store's limit: not kept, refused when applied */
            rc = NGX_ABORT;
        }

        if (rc == NGX_ABORT) {
            /* over a limit: refused when applied, slot->err says why */
            slot->json = NULL;
            freeReplyObject(r);
            replies[i] = NULL;
            continue;
        }

        if (rc != NGX_OK) {
            if (r->type == REDIS_REPLY_ERROR) {
                /* e.g. NOPERM: an ACL user without +hstrlen */
                ngx_log_error(NGX_LOG_ERR, sr->log, 0,
                              "bottle_policy: store %s: the fetch of \""
                              BOTTLE_STORE_POLICY_PREFIX "%s\" failed: %*s",
                              sr->name, slot->id,
                              (size_t) ngx_min(r->len, 200), r->str);
            }

            /* gone since the index was read, or unreadable */
            slot->sr = NULL;
            continue;
        }

        sr->pending += slot->json_len;
    }

    return NGX_OK;
}


/* the parser is thread-safe (jansson is seeded): one part per core */

static void
ngx_bottle_store_load_parse(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slots, ngx_uint_t n)
{
    ngx_uint_t               i, nthreads, started;
    pthread_t                tid[NGX_BOTTLE_LOAD_THREADS];
    ngx_bottle_load_part_t   part[NGX_BOTTLE_LOAD_THREADS];

    nthreads = ngx_min(ngx_max(ngx_ncpu, 1), NGX_BOTTLE_LOAD_THREADS);
    nthreads = ngx_min(nthreads, ngx_max(n / 64, 1));

    for (i = 0; i < nthreads; i++) {
        part[i].slots = slots;
        part[i].n = n;
        part[i].first = i;
        part[i].step = nthreads;
        part[i].db = sr->store->scan_db;
    }

    /* part 0 here; a thread that cannot start leaves its part to us */

    started = 0;

    for (i = 1; i < nthreads; i++) {
        if (pthread_create(&tid[i], NULL, ngx_bottle_store_load_thread,
                           &part[i])
            != 0)
        {
            break;
        }

        started = i;
    }

    ngx_bottle_store_load_thread(&part[0]);

    for (i = started + 1; i < nthreads; i++) {
        ngx_bottle_store_load_thread(&part[i]);
    }

    for (i = 1; i <= started; i++) {
        (void) pthread_join(tid[i], NULL);
    }
}


static void *
ngx_bottle_store_load_thread(void *data)
{
    ngx_bottle_load_part_t  *part = data;

    ngx_uint_t  i;

    for (i = part->first; i < part->n; i += part->step) {
        if (part->slots[i].sr) {
            ngx_bottle_store_redis_parse(&part->slots[i], part->db);
        }
    }

    return NULL;
}


static void
ngx_bottle_store_load_failed(ngx_conf_t *cf, ngx_bottle_store_redis_t *sr,
    redisContext *c, const char *what)
{
    ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                       "bottle_policy: store %s could not be read now "
                       "(%s: %s): the workers read it when it answers, and "
                       "resolve no bottle until then", sr->name, what,
                       c && c->errstr[0] ? c->errstr : "an error reply");

    if (c) {
        redisFree(c);
    }
}
