
/*
 * The cookie jar (gateway.txt "Cookies"): per (bottle, host), the name and
 * value of every cookie the host set through the gateway.  An agent's cookie
 * goes upstream only if that host set the same name and value; any other is
 * dropped, so a cookie the agent was handed never goes out.
 *
 * Limits: exact host; a Max-Age of zero or less or an Expires in the past
 * deletes, a later one is honoured (an expired cookie is no longer sent, and
 * goes at the next sweep); Path and Secure are the client's business; at
 * most 256 cookies per (bottle, host), the oldest dropped beyond; in memory,
 * lost on restart.
 *
 * The jars are agent-controlled data (any host on a route can set cookies,
 * and the agent picks the hosts), so they live in a shared zone of their own,
 * "bottle_jar", away from the CONNECT records a tunnel needs: a full jar
 * zone costs cookies, never a tunnel.  Within it a bottle has a byte budget
 * (bottle_jar_bottle_max): over it, its own least recently used cookies go.
 * All bottles together have one (three quarters of bottle_jar_zone, the
 * rest for the allocator's own overhead): over it, or when the zone cannot
 * allocate, the least recently used cookies of any bottle go.  A cookie is
 * used when the host sets it and when it goes upstream.
 *
 * The policy is per cycle and the zone outlives cycles: a worker of each new
 * cycle sweeps the zone at start and every minute after, freeing the jars of
 * bottles no longer in the policy, expired cookies and whatever a lowered
 * budget no longer allows.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_bottle.h"
#include "bottle_cookie.h"


#define NGX_BOTTLE_JAR_MAX            256
#define NGX_BOTTLE_JAR_COOKIE_MAX     4096   /* bytes of a name, a value */
#define NGX_BOTTLE_JAR_SWEEP_PERIOD   60000


typedef struct {
    ngx_rbtree_t             jars;           /* by "bottle\0host" */
    ngx_rbtree_node_t        jars_sentinel;
    ngx_rbtree_t             owners;         /* by bottle id */
    ngx_rbtree_node_t        owners_sentinel;
    ngx_queue_t              owner_list;     /* every owner */
    ngx_queue_t              lru;            /* every cookie, least
                                                recently used first */
    size_t                   used;           /* bytes charged, all bottles */
    ngx_atomic_uint_t        generation;     /* of the newest cycle that
                                                has workers */
} ngx_bottle_jar_sh_t;


/* this cycle's view of the zone */
typedef struct {
    ngx_bottle_jar_sh_t     *sh;
    ngx_slab_pool_t         *shpool;
    size_t                   max;            /* all bottles */
    size_t                   bottle_max;     /* one bottle */
    ngx_atomic_uint_t        generation;     /* this cycle's */
} ngx_bottle_jar_zone_t;


/* the jars of one bottle */
typedef struct {
    ngx_str_node_t           sn;             /* key: bottle id */
    ngx_queue_t              link;           /* in sh->owner_list */
    ngx_queue_t              jars;
    ngx_queue_t              lru;            /* its cookies, least recently
                                                used first */
    size_t                   used;           /* bytes charged to it, its
                                                own included */
    u_char                   data[1];
} ngx_bottle_jar_owner_t;


typedef struct {
    ngx_str_node_t           sn;             /* key: "bottle\0host" */
    ngx_queue_t              link;           /* in owner->jars */
    ngx_bottle_jar_owner_t  *owner;
    ngx_queue_t              cookies;        /* oldest set first */
    ngx_uint_t               count;          /* never 0: an empty jar goes */
    u_char                   data[1];
} ngx_bottle_jar_t;


typedef struct {
    ngx_queue_t              queue;          /* in jar->cookies */
    ngx_queue_t              lru;            /* in owner->lru */
    ngx_queue_t              glru;           /* in sh->lru */
    ngx_bottle_jar_t        *jar;
    time_t                   expires;        /* 0: while the gateway runs */
    uint32_t                 hash;           /* of the name */
    u_short                  name_len;
    u_short                  value_len;
    u_char                   data[1];        /* name, value */
} ngx_bottle_cookie_t;


/* what the filter's callback needs */
typedef struct {
    ngx_bottle_jar_zone_t   *zone;
    ngx_bottle_jar_t        *jar;
    time_t                   now;
} ngx_bottle_jar_keep_t;


static ngx_int_t ngx_bottle_jar_zone_init(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_bottle_jar_zone_t *ngx_bottle_jar_zone(void);
static size_t ngx_bottle_jar_charge(size_t size);
static ngx_bottle_cookie_t *ngx_bottle_jar_cookie(ngx_bottle_jar_t *jar,
    const u_char *name, size_t len, uint32_t hash);
static int ngx_bottle_jar_keep(void *data, const unsigned char *name,
    size_t name_len, const unsigned char *value, size_t value_len);
static ngx_uint_t ngx_bottle_jar_free_cookie(ngx_bottle_jar_zone_t *zone,
    ngx_bottle_cookie_t *cookie);
static ngx_int_t ngx_bottle_jar_evict(ngx_bottle_jar_zone_t *zone,
    ngx_queue_t *lru, ngx_uint_t global);
static void ngx_bottle_jar_sweep(ngx_bottle_jar_zone_t *zone);
static void ngx_bottle_jar_sweep_handler(ngx_event_t *ev);


static ngx_event_t       ngx_bottle_jar_sweep_event;
static ngx_connection_t  ngx_bottle_jar_dumb;


/* the zone, sized later by ngx_bottle_jar_init_conf() */

ngx_int_t
ngx_bottle_jar_zone_add(ngx_conf_t *cf, ngx_bottle_conf_t *bcf)
{
    ngx_str_t               name;
    ngx_bottle_jar_zone_t  *zone;

    zone = ngx_pcalloc(cf->pool, sizeof(ngx_bottle_jar_zone_t));
    if (zone == NULL) {
        return NGX_ERROR;
    }

    ngx_str_set(&name, "bottle_jar");

    bcf->jar_zone = ngx_shared_memory_add(cf, &name, 0, &ngx_bottle_module);
    if (bcf->jar_zone == NULL) {
        return NGX_ERROR;
    }

    if (bcf->jar_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "the \"bottle_jar\" zone is already defined");
        return NGX_ERROR;
    }

    bcf->jar_zone->init = ngx_bottle_jar_zone_init;
    bcf->jar_zone->data = zone;

    return NGX_OK;
}


/* after the main context: the sizes, whichever order the directives came */

char *
ngx_bottle_jar_init_conf(ngx_cycle_t *cycle, ngx_bottle_conf_t *bcf)
{
    ngx_bottle_jar_zone_t  *zone;

    ngx_conf_init_size_value(bcf->jar_size, NGX_BOTTLE_JAR_ZONE_SIZE);
    ngx_conf_init_size_value(bcf->jar_bottle_max,
                             NGX_BOTTLE_JAR_BOTTLE_MAX);

    if (bcf->jar_zone == NULL) {
        return NGX_CONF_OK;
    }

    zone = bcf->jar_zone->data;

    bcf->jar_zone->shm.size = bcf->jar_size;
    zone->max = bcf->jar_size / 4 * 3;
    zone->bottle_max = ngx_min(bcf->jar_bottle_max, zone->max);

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_bottle_jar_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_bottle_jar_zone_t  *ozone = data;

    ngx_bottle_jar_zone_t  *zone;

    zone = shm_zone->data;

    if (ozone) {
        /* a reload: the jars stay; the new cycle's workers sweep them */
        zone->sh = ozone->sh;
        zone->shpool = ozone->shpool;
        goto done;
    }

    zone->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        zone->sh = zone->shpool->data;
        goto done;
    }

    zone->sh = ngx_slab_alloc(zone->shpool, sizeof(ngx_bottle_jar_sh_t));
    if (zone->sh == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(zone->sh, sizeof(ngx_bottle_jar_sh_t));
    zone->shpool->data = zone->sh;

    ngx_rbtree_init(&zone->sh->jars, &zone->sh->jars_sentinel,
                    ngx_str_rbtree_insert_value);
    ngx_rbtree_init(&zone->sh->owners, &zone->sh->owners_sentinel,
                    ngx_str_rbtree_insert_value);
    ngx_queue_init(&zone->sh->owner_list);
    ngx_queue_init(&zone->sh->lru);

    zone->shpool->log_ctx = (u_char *) " in the bottle_jar zone";

    /* a failed allocation evicts cookies and tries again: no alert */
    zone->shpool->log_nomem = 0;

done:

    /*
     * One more than the running cycle's (a failed reload's number is
     * never seen by a worker); this cycle's workers publish it when they
     * start, and from then on the older workers do not sweep.
     */

    zone->generation = (ozone ? ozone->generation : zone->sh->generation) + 1;

    return NGX_OK;
}


static ngx_bottle_jar_zone_t *
ngx_bottle_jar_zone(void)
{
    ngx_bottle_conf_t  *bcf;

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(ngx_cycle->conf_ctx,
                                             ngx_bottle_module);

    if (bcf == NULL || bcf->jar_zone == NULL) {
        return NULL;
    }

    return bcf->jar_zone->data;
}


/*
 * What an allocation costs the slab pool: a small one its power-of-two
 * slot, a large one whole pages.  Budgets count this, so they measure the
 * zone as it fills.
 */

static size_t
ngx_bottle_jar_charge(size_t size)
{
    size_t  n;

    if (size > ngx_pagesize / 2) {
        return ngx_align(size, ngx_pagesize);
    }

    for (n = 8; n < size; n <<= 1) { /* void */ }

    return n;
}


#define ngx_bottle_jar_cookie_size(nl, vl)                                   \
    ngx_bottle_jar_charge(offsetof(ngx_bottle_cookie_t, data) + (nl) + (vl))
#define ngx_bottle_jar_jar_size(kl)                                          \
    ngx_bottle_jar_charge(offsetof(ngx_bottle_jar_t, data) + (kl))
#define ngx_bottle_jar_owner_size(il)                                        \
    ngx_bottle_jar_charge(offsetof(ngx_bottle_jar_owner_t, data) + (il))


/*
 * Remember (or, del, forget) one cookie a host set for a bottle.
 * NGX_DECLINED: not kept (too large for a jar or a bottle's budget);
 * NGX_ERROR: no zone, or it could not make room.
 */

ngx_int_t
ngx_bottle_jar_set(ngx_pool_t *pool, ngx_str_t *id, ngx_str_t *host,
    ngx_str_t *name, ngx_str_t *value, time_t expires, ngx_uint_t del)
{
    size_t                   need, csize, jsize, osize;
    uint32_t                 hash, ohash, chash;
    ngx_str_t                key;
    ngx_int_t                rc;
    ngx_bottle_jar_t        *jar, *nj;
    ngx_bottle_cookie_t     *cookie, *nc;
    ngx_bottle_jar_zone_t   *zone;
    ngx_bottle_jar_owner_t  *owner, *no;

    if (name->len == 0 || name->len > NGX_BOTTLE_JAR_COOKIE_MAX
        || value->len > NGX_BOTTLE_JAR_COOKIE_MAX)
    {
        return NGX_DECLINED;
    }

    zone = ngx_bottle_jar_zone();

    if (zone == NULL
        || ngx_bottle_zone_pair_key(pool, id, host, NULL, 0, &key) != NGX_OK)
    {
        return NGX_ERROR;
    }

    hash = ngx_crc32_short(key.data, key.len);
    ohash = ngx_crc32_short(id->data, id->len);
    chash = ngx_crc32_short(name->data, name->len);

    csize = offsetof(ngx_bottle_cookie_t, data) + name->len + value->len;
    jsize = offsetof(ngx_bottle_jar_t, data) + key.len;
    osize = offsetof(ngx_bottle_jar_owner_t, data) + id->len;

    rc = NGX_OK;

    ngx_shmtx_lock(&zone->shpool->mutex);

    /*
     * Every pass either makes room (frees one cookie, which may free its
     * jar and its owner too) and starts over, or ends: nothing found before
     * a free is used after it.
     */

    for ( ;; ) {
        owner = (ngx_bottle_jar_owner_t *)
                    ngx_str_rbtree_lookup(&zone->sh->owners, id, ohash);
        jar = owner ? (ngx_bottle_jar_t *)
                          ngx_str_rbtree_lookup(&zone->sh->jars, &key, hash)
                    : NULL;

        cookie = jar ? ngx_bottle_jar_cookie(jar, name->data, name->len,
                                             chash)
                     : NULL;

        if (cookie) {
            ngx_bottle_jar_free_cookie(zone, cookie);
            continue;
        }

        if (del) {
            goto done;
        }

        if (jar && jar->count >= NGX_BOTTLE_JAR_MAX) {
            /* the spec's limit: the oldest set goes */
            ngx_bottle_jar_free_cookie(zone,
                            ngx_queue_data(ngx_queue_head(&jar->cookies),
                                           ngx_bottle_cookie_t, queue));
            continue;
        }

        need = ngx_bottle_jar_charge(csize)
               + (jar ? 0 : ngx_bottle_jar_charge(jsize))
               + (owner ? 0 : ngx_bottle_jar_charge(osize));

        if (need > zone->bottle_max) {
            rc = NGX_DECLINED;
            goto done;
        }

        if (owner && owner->used + need > zone->bottle_max) {
            /* this bottle's own least recently used */
            if (ngx_bottle_jar_evict(zone, &owner->lru, 0) != NGX_OK) {
                rc = NGX_ERROR;
                goto done;
            }

            continue;
        }

        if (zone->sh->used + need > zone->max) {
            if (ngx_bottle_jar_evict(zone, &zone->sh->lru, 1) != NGX_OK) {
                rc = NGX_ERROR;
                goto done;
            }

            continue;
        }

        /* the blocks first, linked only once all of them are there */

        nc = ngx_slab_alloc_locked(zone->shpool, csize);
        nj = (nc && jar == NULL) ? ngx_slab_alloc_locked(zone->shpool, jsize)
                                 : NULL;
        no = (nc && owner == NULL && (jar || nj))
             ? ngx_slab_alloc_locked(zone->shpool, osize) : NULL;

        if (nc && (jar || nj) && (owner || no)) {
            break;
        }

        if (nc) {
            ngx_slab_free_locked(zone->shpool, nc);
        }

        if (nj) {
            ngx_slab_free_locked(zone->shpool, nj);
        }

        if (no) {
            ngx_slab_free_locked(zone->shpool, no);
        }

        /* the zone is fuller than the budgets think: anyone's oldest */

        if (ngx_bottle_jar_evict(zone, &zone->sh->lru, 1) != NGX_OK) {
            rc = NGX_ERROR;
            goto done;
        }
    }

    if (owner == NULL) {
        owner = no;
        ngx_memcpy(owner->data, id->data, id->len);
        owner->sn.node.key = ohash;
        owner->sn.str.data = owner->data;
        owner->sn.str.len = id->len;
        ngx_queue_init(&owner->jars);
        ngx_queue_init(&owner->lru);
        owner->used = ngx_bottle_jar_charge(osize);
        zone->sh->used += owner->used;

        ngx_rbtree_insert(&zone->sh->owners, &owner->sn.node);
        ngx_queue_insert_tail(&zone->sh->owner_list, &owner->link);
    }

    if (jar == NULL) {
        jar = nj;
        ngx_memcpy(jar->data, key.data, key.len);
        jar->sn.node.key = hash;
        jar->sn.str.data = jar->data;
        jar->sn.str.len = key.len;
        jar->owner = owner;
        ngx_queue_init(&jar->cookies);
        jar->count = 0;
        owner->used += ngx_bottle_jar_charge(jsize);
        zone->sh->used += ngx_bottle_jar_charge(jsize);

        ngx_rbtree_insert(&zone->sh->jars, &jar->sn.node);
        ngx_queue_insert_tail(&owner->jars, &jar->link);
    }

    cookie = nc;
    cookie->jar = jar;
    cookie->expires = expires;
    cookie->hash = chash;
    cookie->name_len = (u_short) name->len;
    cookie->value_len = (u_short) value->len;
    ngx_memcpy(ngx_cpymem(cookie->data, name->data, name->len),
               value->data, value->len);

    ngx_queue_insert_tail(&jar->cookies, &cookie->queue);
    ngx_queue_insert_tail(&owner->lru, &cookie->lru);
    ngx_queue_insert_tail(&zone->sh->lru, &cookie->glru);
    jar->count++;
    owner->used += ngx_bottle_jar_charge(csize);
    zone->sh->used += ngx_bottle_jar_charge(csize);

done:

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return rc;
}


/*
 * The agent's Cookie headers (one or several), keeping only the pairs the
 * host set for this bottle with the same value and not yet expired, each
 * name once, as one header value.  out->len == 0: none is left.
 */

ngx_int_t
ngx_bottle_jar_filter(ngx_pool_t *pool, ngx_str_t *id, ngx_str_t *host,
    bottle_cookie_str_t *in, ngx_uint_t n, ngx_str_t *out)
{
    size_t                  len, bound;
    ssize_t                 rc;
    uint32_t                hash;
    ngx_str_t               key;
    ngx_uint_t              i;
    ngx_bottle_jar_keep_t   k;
    ngx_bottle_jar_zone_t  *zone;

    out->len = 0;
    out->data = NULL;

    zone = ngx_bottle_jar_zone();

    if (zone == NULL
        || ngx_bottle_zone_pair_key(pool, id, host, NULL, 0, &key) != NGX_OK)
    {
        return NGX_ERROR;
    }

    len = 0;

    for (i = 0; i < n; i++) {
        len += in[i].len;
    }

    /* every kept pair may grow by "; ": the worst case, never the input */

    bound = bottle_cookie_filter_bound(len);
    if (bound == 0) {
        return NGX_OK;
    }

    out->data = ngx_pnalloc(pool, bound);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    hash = ngx_crc32_short(key.data, key.len);

    k.zone = zone;
    k.now = ngx_time();

    ngx_shmtx_lock(&zone->shpool->mutex);

    k.jar = (ngx_bottle_jar_t *) ngx_str_rbtree_lookup(&zone->sh->jars, &key,
                                                       hash);

    rc = k.jar ? bottle_cookie_filter(out->data, bound, in, n,
                                      ngx_bottle_jar_keep, &k)
               : 0;

    ngx_shmtx_unlock(&zone->shpool->mutex);

    if (rc < 0) {
        return NGX_ERROR;
    }

    out->len = rc;

    return NGX_OK;
}


/* under the lock: the same name and value, not expired; now used */

static int
ngx_bottle_jar_keep(void *data, const unsigned char *name, size_t name_len,
    const unsigned char *value, size_t value_len)
{
    ngx_bottle_jar_keep_t *k = data;

    ngx_bottle_cookie_t  *cookie;

    cookie = ngx_bottle_jar_cookie(k->jar, name, name_len,
                                   ngx_crc32_short((u_char *) name, name_len));

    if (cookie == NULL
        || (cookie->expires && cookie->expires <= k->now)
        || cookie->value_len != value_len
        || ngx_memcmp(cookie->data + cookie->name_len, value, value_len) != 0)
    {
        return 0;
    }

    ngx_queue_remove(&cookie->lru);
    ngx_queue_insert_tail(&k->jar->owner->lru, &cookie->lru);
    ngx_queue_remove(&cookie->glru);
    ngx_queue_insert_tail(&k->zone->sh->lru, &cookie->glru);

    return 1;
}


/*
 * The agent picks the names the filter looks up, thousands a header, under
 * the zone's lock: the names' hashes are compared first.
 */

static ngx_bottle_cookie_t *
ngx_bottle_jar_cookie(ngx_bottle_jar_t *jar, const u_char *name, size_t len,
    uint32_t hash)
{
    ngx_queue_t          *q;
    ngx_bottle_cookie_t  *cookie;

    for (q = ngx_queue_head(&jar->cookies);
         q != ngx_queue_sentinel(&jar->cookies);
         q = ngx_queue_next(q))
    {
        cookie = ngx_queue_data(q, ngx_bottle_cookie_t, queue);

        if (cookie->hash == hash && cookie->name_len == len
            && ngx_memcmp(cookie->data, name, len) == 0)
        {
            return cookie;
        }
    }

    return NULL;
}


/* the least recently used cookie of an owner's or the zone's list */

static ngx_int_t
ngx_bottle_jar_evict(ngx_bottle_jar_zone_t *zone, ngx_queue_t *lru,
    ngx_uint_t global)
{
    ngx_queue_t  *q;

    if (ngx_queue_empty(lru)) {
        return NGX_ERROR;
    }

    q = ngx_queue_head(lru);

    ngx_bottle_jar_free_cookie(zone,
        global ? ngx_queue_data(q, ngx_bottle_cookie_t, glru)
               : ngx_queue_data(q, ngx_bottle_cookie_t, lru));

    return NGX_OK;
}


/*
 * Under the lock.  An emptied jar goes, and an owner without jars: 1 when
 * the owner went too (its lists are gone with it).
 */

static ngx_uint_t
ngx_bottle_jar_free_cookie(ngx_bottle_jar_zone_t *zone,
    ngx_bottle_cookie_t *cookie)
{
    size_t                   n;
    ngx_bottle_jar_t        *jar;
    ngx_bottle_jar_owner_t  *owner;

    jar = cookie->jar;
    owner = jar->owner;

    n = ngx_bottle_jar_cookie_size(cookie->name_len, cookie->value_len);

    ngx_queue_remove(&cookie->queue);
    ngx_queue_remove(&cookie->lru);
    ngx_queue_remove(&cookie->glru);
    ngx_slab_free_locked(zone->shpool, cookie);

    jar->count--;
    owner->used -= n;
    zone->sh->used -= n;

    if (jar->count) {
        return 0;
    }

    n = ngx_bottle_jar_jar_size(jar->sn.str.len);

    ngx_rbtree_delete(&zone->sh->jars, &jar->sn.node);
    ngx_queue_remove(&jar->link);
    ngx_slab_free_locked(zone->shpool, jar);

    owner->used -= n;
    zone->sh->used -= n;

    if (!ngx_queue_empty(&owner->jars)) {
        return 0;
    }

    zone->sh->used -= ngx_bottle_jar_owner_size(owner->sn.str.len);

    ngx_rbtree_delete(&zone->sh->owners, &owner->sn.node);
    ngx_queue_remove(&owner->link);
    ngx_slab_free_locked(zone->shpool, owner);

    return 1;
}


/*
 * The sweep, in one worker of the newest cycle: the jars of bottles this
 * cycle's policy no longer has, expired cookies, and what the budgets no
 * longer allow.
 */

static void
ngx_bottle_jar_sweep(ngx_bottle_jar_zone_t *zone)
{
    time_t                   now;
    ngx_uint_t               gone, freed, expired, over;
    ngx_queue_t             *oq, *onext, *q, *next;
    ngx_bottle_cookie_t     *cookie;
    const char              *reason;
    ngx_bottle_store_t      *store;
    ngx_bottle_jar_owner_t  *owner;

    /* a store not read yet, or lost, does not say which bottles are gone */
    store = ngx_bottle_store_usable(&reason) == NGX_OK ? ngx_bottle_store()
                                                      : NULL;
    now = ngx_time();
    gone = 0;
    expired = 0;
    over = 0;

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (zone->generation != zone->sh->generation) {
        /* a newer cycle's workers sweep, with its policy */
        ngx_shmtx_unlock(&zone->shpool->mutex);
        return;
    }

    for (oq = ngx_queue_head(&zone->sh->owner_list);
         oq != ngx_queue_sentinel(&zone->sh->owner_list);
         oq = onext)
    {
        onext = ngx_queue_next(oq);
        owner = ngx_queue_data(oq, ngx_bottle_jar_owner_t, link);

        if (store
            && ngx_bottle_store_get(store, owner->data, owner->sn.str.len)
               == NULL)
        {
            do {
                freed = ngx_bottle_jar_free_cookie(zone,
                            ngx_queue_data(ngx_queue_head(&owner->lru),
                                           ngx_bottle_cookie_t, lru));
            } while (!freed);

            gone++;
            continue;
        }

        freed = 0;

        for (q = ngx_queue_head(&owner->lru);
             !freed && q != ngx_queue_sentinel(&owner->lru);
             q = next)
        {
            next = ngx_queue_next(q);
            cookie = ngx_queue_data(q, ngx_bottle_cookie_t, lru);

            if (cookie->expires && cookie->expires <= now) {
                freed = ngx_bottle_jar_free_cookie(zone, cookie);
                expired++;
            }
        }

        while (!freed && owner->used > zone->bottle_max) {
            freed = ngx_bottle_jar_free_cookie(zone,
                            ngx_queue_data(ngx_queue_head(&owner->lru),
                                           ngx_bottle_cookie_t, lru));
            over++;
        }
    }

    while (zone->sh->used > zone->max
           && ngx_bottle_jar_evict(zone, &zone->sh->lru, 1) == NGX_OK)
    {
        over++;
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    if (gone || expired || over) {
        ngx_log_error(NGX_LOG_INFO, ngx_cycle->log, 0,
                      "bottle jar sweep: %ui bottles gone, %ui cookies "
                      "expired, %ui over budget", gone, expired, over);
    }
}


/*
 * Every worker of a new cycle publishes its generation before it serves a
 * request, so no jar it makes can be swept by an older worker's policy;
 * the first sweeps at start, and then every minute.
 */

ngx_int_t
ngx_bottle_jar_init_process(ngx_cycle_t *cycle)
{
    ngx_bottle_jar_zone_t  *zone;

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    zone = ngx_bottle_jar_zone();
    if (zone == NULL || zone->sh == NULL) {
        return NGX_OK;
    }

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (zone->sh->generation < zone->generation) {
        zone->sh->generation = zone->generation;
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    if (ngx_worker != 0) {
        return NGX_OK;
    }

    ngx_bottle_jar_sweep(zone);

    ngx_bottle_jar_dumb.fd = (ngx_socket_t) -1;

    ngx_bottle_jar_sweep_event.handler = ngx_bottle_jar_sweep_handler;
    ngx_bottle_jar_sweep_event.data = &ngx_bottle_jar_dumb;
    ngx_bottle_jar_sweep_event.log = cycle->log;
    ngx_bottle_jar_sweep_event.cancelable = 1;

    ngx_add_timer(&ngx_bottle_jar_sweep_event, NGX_BOTTLE_JAR_SWEEP_PERIOD);

    return NGX_OK;
}


static void
ngx_bottle_jar_sweep_handler(ngx_event_t *ev)
{
    ngx_bottle_jar_zone_t  *zone;

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    zone = ngx_bottle_jar_zone();

    if (zone) {
        ngx_bottle_jar_sweep(zone);
    }

    ngx_add_timer(ev, NGX_BOTTLE_JAR_SWEEP_PERIOD);
}
