
/*
 * The cookie jar (gateway.txt "Cookies"): per (bottle, host), the name and
 * value of every cookie the host set through the gateway.  An agent's cookie
 * goes upstream only if that host set the same name and value; any other is
 * dropped, so a cookie the agent was handed never goes out.
 *
 * Limits: exact host; a Max-Age of zero or less or an Expires in the past
 * deletes; Path and Secure are the client's business; at most 256 cookies
 * per (bottle, host), the oldest dropped beyond; in memory (a shared zone,
 * so every worker sees the same jar), lost on restart.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"


#define NGX_BOTTLE_JAR_MAX  256


typedef struct {
    ngx_str_node_t       sn;             /* key: "bottle\0host" */
    ngx_queue_t          cookies;        /* oldest first */
    ngx_uint_t           count;
    u_char               data[1];
} ngx_bottle_jar_t;


typedef struct {
    ngx_queue_t          queue;
    u_short              name_len;
    u_short              value_len;
    u_char               data[1];        /* name, value */
} ngx_bottle_cookie_t;


static ngx_bottle_jar_t *ngx_bottle_jar_find(ngx_slab_pool_t *shpool,
    ngx_rbtree_t *tree, ngx_str_t *key, uint32_t hash);
static ngx_bottle_cookie_t *ngx_bottle_jar_cookie(ngx_bottle_jar_t *jar,
    u_char *name, size_t len);


/* remember (or, delete) one cookie a host set for a bottle */

ngx_int_t
ngx_bottle_jar_set(ngx_pool_t *pool, ngx_str_t *id, ngx_str_t *host,
    ngx_str_t *name, ngx_str_t *value, ngx_uint_t del)
{
    size_t                n;
    uint32_t              hash;
    ngx_str_t             key;
    ngx_queue_t          *q;
    ngx_rbtree_t         *tree;
    ngx_slab_pool_t      *shpool;
    ngx_bottle_jar_t     *jar;
    ngx_bottle_cookie_t  *cookie;

    if (name->len == 0 || name->len > 4096 || value->len > 4096) {
        return NGX_DECLINED;
    }

    if (ngx_bottle_zone_tree(&shpool, &tree, 1) != NGX_OK
        || ngx_bottle_zone_pair_key(pool, id, host, NULL, 0, &key) != NGX_OK)
    {
        return NGX_ERROR;
    }

    hash = ngx_crc32_short(key.data, key.len);

    ngx_shmtx_lock(&shpool->mutex);

    jar = ngx_bottle_jar_find(shpool, tree, &key, hash);

    if (jar == NULL) {
        if (del) {
            goto done;
        }

        jar = ngx_slab_alloc_locked(shpool,
                                    offsetof(ngx_bottle_jar_t, data) + key.len);
        if (jar == NULL) {
            goto failed;
        }

        jar->sn.node.key = hash;
        jar->sn.str.data = jar->data;
        jar->sn.str.len = key.len;
        ngx_memcpy(jar->data, key.data, key.len);
        ngx_queue_init(&jar->cookies);
        jar->count = 0;

        ngx_rbtree_insert(tree, &jar->sn.node);
    }

    cookie = ngx_bottle_jar_cookie(jar, name->data, name->len);

    if (cookie) {
        ngx_queue_remove(&cookie->queue);
        ngx_slab_free_locked(shpool, cookie);
        jar->count--;
    }

    if (del) {
        goto done;
    }

    if (jar->count == NGX_BOTTLE_JAR_MAX) {
        q = ngx_queue_head(&jar->cookies);
        ngx_queue_remove(q);
        ngx_slab_free_locked(shpool,
                             ngx_queue_data(q, ngx_bottle_cookie_t, queue));
        jar->count--;
    }

    n = offsetof(ngx_bottle_cookie_t, data) + name->len + value->len;

    cookie = ngx_slab_alloc_locked(shpool, n);
    if (cookie == NULL) {
        goto failed;
    }

    cookie->name_len = (u_short) name->len;
    cookie->value_len = (u_short) value->len;
    ngx_memcpy(ngx_cpymem(cookie->data, name->data, name->len),
               value->data, value->len);

    ngx_queue_insert_tail(&jar->cookies, &cookie->queue);
    jar->count++;

done:

    ngx_shmtx_unlock(&shpool->mutex);
    return NGX_OK;

failed:

    ngx_shmtx_unlock(&shpool->mutex);
    return NGX_ERROR;
}


/*
 * The agent's Cookie header, keeping only the pairs the host set for this
 * bottle with the same value.  out->len == 0: none is left.
 */

ngx_int_t
ngx_bottle_jar_filter(ngx_pool_t *pool, ngx_str_t *id, ngx_str_t *host,
    ngx_str_t *header, ngx_str_t *out)
{
    u_char               *p, *last, *semi, *eq, *o, *nb, *ne, *vb, *ve;
    uint32_t              hash;
    ngx_str_t             key;
    ngx_rbtree_t         *tree;
    ngx_slab_pool_t      *shpool;
    ngx_bottle_jar_t     *jar;
    ngx_bottle_cookie_t  *cookie;

    out->len = 0;

    if (ngx_bottle_zone_tree(&shpool, &tree, 1) != NGX_OK
        || ngx_bottle_zone_pair_key(pool, id, host, NULL, 0, &key) != NGX_OK)
    {
        return NGX_ERROR;
    }

    out->data = ngx_pnalloc(pool, header->len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    o = out->data;
    hash = ngx_crc32_short(key.data, key.len);

    ngx_shmtx_lock(&shpool->mutex);

    jar = ngx_bottle_jar_find(shpool, tree, &key, hash);

    for (p = header->data, last = p + header->len;
         jar && p < last;
         p = semi + 1)
    {
        semi = ngx_strlchr(p, last, ';');
        if (semi == NULL) {
            semi = last;
        }

        for (nb = p; nb < semi && *nb == ' '; nb++) { /* void */ }

        eq = ngx_strlchr(nb, semi, '=');
        if (eq == NULL) {
            continue;
        }

        for (ne = eq; ne > nb && ne[-1] == ' '; ne--) { /* void */ }
        for (vb = eq + 1; vb < semi && *vb == ' '; vb++) { /* void */ }
        for (ve = semi; ve > vb && ve[-1] == ' '; ve--) { /* void */ }

        cookie = ngx_bottle_jar_cookie(jar, nb, ne - nb);

        if (cookie == NULL
            || cookie->value_len != (size_t) (ve - vb)
            || ngx_memcmp(cookie->data + cookie->name_len, vb, ve - vb) != 0)
        {
            continue;
        }

        if (o != out->data) {
            *o++ = ';';
            *o++ = ' ';
        }

        o = ngx_cpymem(o, nb, ve - nb);
    }

    ngx_shmtx_unlock(&shpool->mutex);

    out->len = o - out->data;

    return NGX_OK;
}


static ngx_bottle_jar_t *
ngx_bottle_jar_find(ngx_slab_pool_t *shpool, ngx_rbtree_t *tree,
    ngx_str_t *key, uint32_t hash)
{
    return (ngx_bottle_jar_t *) ngx_str_rbtree_lookup(tree, key, hash);
}


static ngx_bottle_cookie_t *
ngx_bottle_jar_cookie(ngx_bottle_jar_t *jar, u_char *name, size_t len)
{
    ngx_queue_t          *q;
    ngx_bottle_cookie_t  *cookie;

    for (q = ngx_queue_head(&jar->cookies);
         q != ngx_queue_sentinel(&jar->cookies);
         q = ngx_queue_next(q))
    {
        cookie = ngx_queue_data(q, ngx_bottle_cookie_t, queue);

        if (cookie->name_len == len
            && ngx_memcmp(cookie->data, name, len) == 0)
        {
            return cookie;
        }
    }

    return NULL;
}
