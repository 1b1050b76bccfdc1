
/*
 * The supervise safelist (gateway.txt "Under supervise"): values an
 * operator approved for one bottle and one host.  A DLP finding on a
 * supervise route whose value is on the list for that (bottle, host) no
 * longer holds the request; the same value to another host is found
 * again.  Entries are SHA-256 digests of the value, never the value, in
 * the shared zone (every worker sees them; they last as long as the
 * gateway runs, across reloads, not across restarts).
 *
 * The list is filled by an approval: a held request's
 * (ngx_http_bottle_held.c, the operator's egress-token-allow decision), or
 * the `bottle_safelist_approve` handler (ngx_http_bottle_approve.c), which
 * another operator channel calls on an internal listener.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"


typedef struct {
    ngx_str_node_t       sn;             /* key: "bottle\0host\0" digest */
    u_char               data[1];
} ngx_bottle_safe_t;


ngx_int_t
ngx_bottle_safelist_add(ngx_pool_t *pool, ngx_str_t *id, ngx_str_t *host,
    const u_char *digest)
{
    uint32_t            hash;
    ngx_str_t           key;
    ngx_rbtree_t       *tree;
    ngx_slab_pool_t    *shpool;
    ngx_bottle_safe_t  *e;

    if (ngx_bottle_zone_safelist(&shpool, &tree) != NGX_OK
        || ngx_bottle_zone_pair_key(pool, id, host, digest, 32, &key) != NGX_OK)
    {
        return NGX_ERROR;
    }

    hash = ngx_crc32_short(key.data, key.len);

    ngx_shmtx_lock(&shpool->mutex);

    if (ngx_str_rbtree_lookup(tree, &key, hash) == NULL) {
        if (ngx_bottle_zone_safelist_grow(offsetof(ngx_bottle_safe_t, data)
                                          + key.len)
            != NGX_OK)
        {
            ngx_shmtx_unlock(&shpool->mutex);
            return NGX_DECLINED;
        }

        e = ngx_slab_alloc_locked(shpool,
                                  offsetof(ngx_bottle_safe_t, data) + key.len);
        if (e == NULL) {
            ngx_shmtx_unlock(&shpool->mutex);
            return NGX_ERROR;
        }

        ngx_memcpy(e->data, key.data, key.len);
        e->sn.node.key = hash;
        e->sn.str.data = e->data;
        e->sn.str.len = key.len;

        ngx_rbtree_insert(tree, &e->sn.node);
    }

    ngx_shmtx_unlock(&shpool->mutex);

    return NGX_OK;
}


ngx_uint_t
ngx_bottle_safelist_has(ngx_pool_t *pool, ngx_str_t *id, ngx_str_t *host,
    const u_char *digest)
{
    uint32_t          hash;
    ngx_str_t         key;
    ngx_uint_t        found;
    ngx_rbtree_t     *tree;
    ngx_slab_pool_t  *shpool;

    if (ngx_bottle_zone_safelist(&shpool, &tree) != NGX_OK
        || ngx_bottle_zone_pair_key(pool, id, host, digest, 32, &key) != NGX_OK)
    {
        return 0;
    }

    hash = ngx_crc32_short(key.data, key.len);

    ngx_shmtx_lock(&shpool->mutex);
    found = ngx_str_rbtree_lookup(tree, &key, hash) != NULL;
    ngx_shmtx_unlock(&shpool->mutex);

    return found;
}
