
/*
 * A handed-off connection's refusals (docs/refusals.md, "The front's log
 * line"): the front passes a connection to an internal listener and logs
 * it when it ends, but the requests on it are decided on the http side.
 * That side records each refusal here, by the connection's key (the
 * agent's address and port, as the PROXY protocol header carries them);
 * the front reads the record when it writes its log line, and forgets it
 * when the connection ends.
 *
 * A table of NGX_BOTTLE_FINAL_N entries in the metrics zone, under its
 * lock (taken on a refusal and at the end of a handed-off connection, not
 * on an allowed request's way): an agent that keeps more connections with
 * refusals open than it holds overwrites the oldest of a slot, whose
 * front line then says "handoff" only.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"


static void ngx_bottle_final_refused(ngx_connection_t *c,
    ngx_bottle_verdict_t *v, ngx_uint_t status);
static ngx_bottle_final_t *ngx_bottle_final_find(ngx_bottle_final_t *t,
    ngx_str_t *key, uint32_t hash, ngx_uint_t take);


static uint32_t
ngx_bottle_final_hash(ngx_str_t *key)
{
    uint32_t  hash;

    hash = ngx_crc32_short(key->data, key->len);

    return hash ? hash : 1;
}


/* the key's entry; or, with take, a free one or the slot's first */

static ngx_bottle_final_t *
ngx_bottle_final_find(ngx_bottle_final_t *t, ngx_str_t *key, uint32_t hash,
    ngx_uint_t take)
{
    ngx_uint_t           i, k;
    ngx_bottle_final_t  *e, *free;

    free = NULL;

    /* eight places from the hash's: a short probe under the lock */

    for (i = 0; i < 8; i++) {
        k = (hash + i) % NGX_BOTTLE_FINAL_N;
        e = &t[k];

        if (e->hash == hash && e->key_len == key->len
            && ngx_memcmp(e->key, key->data, key->len) == 0)
        {
            return e;
        }

        if (e->hash == 0 && free == NULL) {
            free = e;
        }
    }

    if (!take) {
        return NULL;
    }

    return free ? free : &t[hash % NGX_BOTTLE_FINAL_N];
}


/* a refusal's observer (ngx_bottle_log_verdict) */

static void
ngx_bottle_final_refused(ngx_connection_t *c, ngx_bottle_verdict_t *v,
    ngx_uint_t status)
{
    uint32_t             hash;
    ngx_str_t            key;
    ngx_bottle_final_t  *t, *e;
    u_char               buf[NGX_BOTTLE_ZONE_KEY_LEN];

    t = ngx_bottle_metrics_finals();

    /* only what came through the front: the PROXY protocol's address */

    if (t == NULL || c->proxy_protocol == NULL
        || ngx_bottle_zone_key(c, buf, sizeof(buf), &key) != NGX_OK
        || key.len > NGX_BOTTLE_ZONE_KEY_LEN || key.len > 255)
    {
        return;
    }

    hash = ngx_bottle_final_hash(&key);

    ngx_bottle_metrics_lock();

    e = ngx_bottle_final_find(t, &key, hash, 1);

    if (e->hash != hash || e->key_len != key.len
        || ngx_memcmp(e->key, key.data, key.len) != 0)
    {
        e->hash = hash;
        e->key_len = (u_char) key.len;
        ngx_memcpy(e->key, key.data, key.len);
        e->refused = 0;
    }

    e->rule = (u_char) v->rule;
    e->status = (uint16_t) status;
    e->refused++;

    ngx_bottle_metrics_unlock();
}


void
ngx_bottle_final_init_process(void)
{
    (void) ngx_bottle_refusal_observe(ngx_bottle_final_refused);
}


ngx_int_t
ngx_bottle_final_get(ngx_str_t *key, ngx_bottle_final_t *out)
{
    ngx_int_t            rc;
    ngx_bottle_final_t  *t, *e;

    t = ngx_bottle_metrics_finals();

    if (t == NULL || key->len == 0 || key->len > NGX_BOTTLE_ZONE_KEY_LEN) {
        return NGX_DECLINED;
    }

    ngx_bottle_metrics_lock();

    e = ngx_bottle_final_find(t, key, ngx_bottle_final_hash(key), 0);

    if (e) {
        *out = *e;
        rc = NGX_OK;

    } else {
        rc = NGX_DECLINED;
    }

    ngx_bottle_metrics_unlock();

    return rc;
}


void
ngx_bottle_final_forget(ngx_str_t *key)
{
    ngx_bottle_final_t  *t, *e;

    t = ngx_bottle_metrics_finals();

    if (t == NULL || key->len == 0 || key->len > NGX_BOTTLE_ZONE_KEY_LEN) {
        return;
    }

    ngx_bottle_metrics_lock();

    e = ngx_bottle_final_find(t, key, ngx_bottle_final_hash(key), 0);

    if (e) {
        ngx_memzero(e, sizeof(ngx_bottle_final_t));
    }

    ngx_bottle_metrics_unlock();
}
