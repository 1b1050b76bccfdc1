
/*
 * The Redis source, read once by the master when the configuration loads
 * (start and reload), so that workers start with the bottles instead of
 * refusing until each has read them (and parse them once, not once per
 * worker).  Blocking calls are fine here: no request is being served by
 * this process.  Each worker then reads the index again and fetches only
 * what changed since (ngx_bottle_store_sync.c).
 *
 * A store that cannot be read now is not an error: the workers read it
 * when it answers, and refuse until then.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle_store_redis.h"


#define NGX_BOTTLE_LOAD_TIMEOUT  2      /* seconds, to connect and per reply */
#define NGX_BOTTLE_LOAD_BATCH    512    /* HMGETs in flight */


static redisContext *ngx_bottle_store_load_connect(ngx_conf_t *cf,
    ngx_bottle_store_redis_t *sr);
static ngx_int_t ngx_bottle_store_load_batch(ngx_conf_t *cf,
    ngx_bottle_store_redis_t *sr, redisContext *c, redisReply *index,
    size_t from, size_t n);
static void ngx_bottle_store_load_failed(ngx_conf_t *cf,
    ngx_bottle_store_redis_t *sr, redisContext *c, const char *what);


void
ngx_bottle_store_redis_preload(ngx_conf_t *cf, ngx_bottle_store_redis_t *sr)
{
    size_t         i, n;
    redisReply    *index;
    redisContext  *c;

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

    for (i = 0; i < n; i += NGX_BOTTLE_LOAD_BATCH) {
        if (ngx_bottle_store_load_batch(cf, sr, c, index, i,
                                        ngx_min(n - i, NGX_BOTTLE_LOAD_BATCH))
            != NGX_OK)
        {
            freeReplyObject(index);
            ngx_bottle_store_load_failed(cf, sr, c, "HMGET");
            return;
        }
    }

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
}


static redisContext *
ngx_bottle_store_load_connect(ngx_conf_t *cf, ngx_bottle_store_redis_t *sr)
{
    struct timeval   tv;
    redisReply      *r;
    redisContext    *c;

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


/* n bottles of the index from "from": pipelined, then parsed in turn */

static ngx_int_t
ngx_bottle_store_load_batch(ngx_conf_t *cf, ngx_bottle_store_redis_t *sr,
    redisContext *c, redisReply *index, size_t from, size_t n)
{
    size_t              i, argvlen[4];
    u_char              key[sizeof(BOTTLE_STORE_POLICY_PREFIX) + 256];
    const char         *argv[4];
    redisReply         *id, *r;
    ngx_bottle_slot_t   slot;

    argv[0] = "HMGET";
    argvlen[0] = 5;
    argv[1] = (char *) key;
    argv[2] = BOTTLE_STORE_F_JSON;
    argvlen[2] = sizeof(BOTTLE_STORE_F_JSON) - 1;
    argv[3] = BOTTLE_STORE_F_VERSION;
    argvlen[3] = sizeof(BOTTLE_STORE_F_VERSION) - 1;

    for (i = from; i < from + n; i++) {
        id = index->element[2 * i];

        if (id->type != REDIS_REPLY_STRING || id->len > 255) {
            return NGX_ERROR;
        }

        argvlen[1] = ngx_sprintf(key, BOTTLE_STORE_POLICY_PREFIX "%*s",
                                 id->len, id->str)
                     - key;

        if (redisAppendCommandArgv(c, 4, argv, argvlen) != REDIS_OK) {
            return NGX_ERROR;
        }
    }

    for (i = from; i < from + n; i++) {
        id = index->element[2 * i];

        if (redisGetReply(c, (void **) &r) != REDIS_OK || r == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(&slot, sizeof(ngx_bottle_slot_t));

        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2
            && r->element[0]->type == REDIS_REPLY_STRING)
        {
            slot.sr = sr;
            slot.id = (u_char *) id->str;
            slot.id_len = id->len;
            slot.json = r->element[0]->str;
            slot.json_len = r->element[0]->len;
            slot.version = r->element[1]->type == REDIS_REPLY_STRING
                           ? (uint64_t) ngx_atoof((u_char *)
                                                  r->element[1]->str,
                                                  r->element[1]->len)
                           : 0;

            /* the reply's strings are NUL-terminated, as the parser wants */
            ngx_bottle_store_redis_load_one(sr, &slot);
        }

        freeReplyObject(r);
    }

    (void) cf;

    return NGX_OK;
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
