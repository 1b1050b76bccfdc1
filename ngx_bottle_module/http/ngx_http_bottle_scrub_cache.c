
/*
 * The worker's held-secret databases (ngx_http_bottle_scrub.h): building
 * one costs about 0.2 ms (bench/README.md, "Scrubbing"), so responses with
 * the same held values share it.  The key is the values, names and kinds
 * serialized; a hit compares it whole.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_http_bottle_scrub.h"


typedef struct {
    bottle_scrub_db_t  *db;
    u_char             *key;        /* malloc()ed: it outlives pools */
    size_t              keylen;
    uint32_t            hash;
    ngx_uint_t          refs;       /* responses using db */
    ngx_uint_t          used;       /* the last use, a counter */
} ngx_http_bottle_scrub_cached_t;


static ngx_http_bottle_scrub_cached_t
    ngx_http_bottle_scrub_cache[NGX_HTTP_BOTTLE_SCRUB_CACHE];
static ngx_uint_t  ngx_http_bottle_scrub_clock;


static void
ngx_http_bottle_scrub_cache_drop(ngx_http_bottle_scrub_cached_t *c)
{
    bottle_scrub_db_free(c->db);
    ngx_explicit_memzero(c->key, c->keylen);
    ngx_free(c->key);
    ngx_memzero(c, sizeof(ngx_http_bottle_scrub_cached_t));
}


ngx_int_t
ngx_http_bottle_scrub_cache_get(ngx_pool_t *pool,
    const bottle_scrub_value_t *v, size_t n, bottle_scrub_db_t **db,
    void **handle, char *err, size_t errlen)
{
    size_t                           i, len, nl, kl;
    u_char                          *key, *p;
    uint32_t                         hash;
    ngx_http_bottle_scrub_cached_t  *c, *slot;

    *db = NULL;
    *handle = NULL;

    len = 0;
    for (i = 0; i < n; i++) {
        len += ngx_strlen(v[i].name) + ngx_strlen(v[i].kind) + 2
               + sizeof(size_t) + v[i].len;
    }

    key = ngx_pnalloc(pool, len ? len : 1);
    if (key == NULL) {
        ngx_cpystrn((u_char *) err, (u_char *) "out of memory", errlen);
        return NGX_ERROR;
    }

    p = key;
    for (i = 0; i < n; i++) {
        nl = ngx_strlen(v[i].name) + 1;
        kl = ngx_strlen(v[i].kind) + 1;
        p = ngx_cpymem(p, v[i].name, nl);
        p = ngx_cpymem(p, v[i].kind, kl);
        p = ngx_cpymem(p, &v[i].len, sizeof(size_t));
        p = ngx_cpymem(p, v[i].value, v[i].len);
    }

    hash = ngx_crc32_long(key, len);
    slot = NULL;
    ngx_http_bottle_scrub_clock++;

    for (i = 0; i < NGX_HTTP_BOTTLE_SCRUB_CACHE; i++) {
        c = &ngx_http_bottle_scrub_cache[i];

        if (c->db && c->hash == hash && c->keylen == len
            && ngx_memcmp(c->key, key, len) == 0)
        {
            c->refs++;
            c->used = ngx_http_bottle_scrub_clock;
            *db = c->db;
            *handle = c;
            ngx_explicit_memzero(key, len);
            return NGX_OK;
        }

        if (c->refs == 0 && (slot == NULL || c->db == NULL
                             || (slot->db && c->used < slot->used)))
        {
            slot = c;
        }
    }

    if (bottle_scrub_db_create(db, v, n, err, errlen) != 0) {
        ngx_explicit_memzero(key, len);
        return NGX_ERROR;
    }

    if (*db == NULL || slot == NULL) {
        /* nothing held, or every entry in use: this response's own */
        ngx_explicit_memzero(key, len);
        return NGX_OK;
    }

    if (slot->db) {
        ngx_http_bottle_scrub_cache_drop(slot);
    }

    slot->key = ngx_alloc(len ? len : 1, ngx_cycle->log);
    if (slot->key == NULL) {
        ngx_explicit_memzero(key, len);
        return NGX_OK;
    }

    ngx_memcpy(slot->key, key, len);
    ngx_explicit_memzero(key, len);
    slot->keylen = len;
    slot->hash = hash;
    slot->db = *db;
    slot->refs = 1;
    slot->used = ngx_http_bottle_scrub_clock;
    *handle = slot;

    return NGX_OK;
}


void
ngx_http_bottle_scrub_cache_put(bottle_scrub_db_t *db, void *handle)
{
    ngx_http_bottle_scrub_cached_t  *c = handle;

    if (c == NULL) {
        bottle_scrub_db_free(db);
        return;
    }

    c->refs--;
}
