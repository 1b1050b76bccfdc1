
/*
 * The gateway's zone: the CONNECT records and the supervise safelist.  The
 * cookie jars, which the agent fills, have their own zone (ngx_bottle_jar.c),
 * so they never take the room a tunnel needs.
 *
 * The CONNECT records.  The front decides a CONNECT (bottle, target
 * host and port) and hands the tunnel's bytes to an internal listener; the
 * http side, possibly in another worker, finds that decision again by the
 * agent's address:port, which the PROXY protocol header carries (nginx 1.22
 * has no PROXY TLVs).  The record lives exactly as long as the stream
 * session: a connection on an internal listener with no record is refused.
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"


typedef struct {
    ngx_str_node_t       sn;             /* key: "addr:port" */
    in_port_t            port;
    u_char               id_len;
    u_char               host_len;
    u_char               data[1];        /* key, id, host */
} ngx_bottle_record_t;


typedef struct {
    ngx_rbtree_t         rbtree;         /* CONNECT records */
    ngx_rbtree_node_t    sentinel;
    ngx_atomic_t         count;
    ngx_rbtree_t         safelist;       /* ngx_bottle_safelist.c */
    ngx_rbtree_node_t    safelist_sentinel;
    size_t               safelist_used;  /* bytes, as the slab pool counts */
    ngx_rbtree_t         held;           /* ngx_bottle_held_t, by bottle */
    ngx_rbtree_node_t    held_sentinel;
} ngx_bottle_zone_sh_t;


/* one worker's share of a bottle's held requests, so that what a worker
 * that died held can be given back (ngx_bottle_zone_held_reclaim()) */
typedef struct ngx_bottle_held_pid_s  ngx_bottle_held_pid_t;

struct ngx_bottle_held_pid_s {
    ngx_bottle_held_pid_t  *next;
    ngx_pid_t               pid;
    ngx_uint_t              n;
    off_t                   bytes;
};


/* requests held for the operator, one bottle's, across the workers */
typedef struct {
    ngx_str_node_t          sn;          /* key: the bottle's id */
    ngx_uint_t              n;
    off_t                   bytes;       /* their bodies */
    ngx_bottle_held_pid_t  *pids;        /* the shares, n of them at most */
    u_char                  data[1];
} ngx_bottle_held_t;


typedef struct {
    ngx_bottle_zone_sh_t  *sh;
    ngx_slab_pool_t       *shpool;
    size_t                 safelist_max;
} ngx_bottle_zone_t;


static ngx_int_t ngx_bottle_zone_init(ngx_shm_zone_t *shm_zone, void *data);
static ngx_bottle_record_t *ngx_bottle_zone_lookup(ngx_bottle_zone_t *zone,
    ngx_str_t *key, uint32_t hash);
static ngx_uint_t ngx_bottle_zone_held_dead(ngx_bottle_zone_t *zone,
    ngx_bottle_held_t *h);
static void ngx_bottle_zone_held_free(ngx_bottle_zone_t *zone,
    ngx_bottle_held_t *h);
static void ngx_bottle_zone_held_gone(ngx_log_t *log, ngx_uint_t gone);


ngx_int_t
ngx_bottle_zone_add(ngx_conf_t *cf, ngx_bottle_conf_t *bcf, size_t size)
{
    ngx_str_t           name;
    ngx_bottle_zone_t  *zone;

    zone = ngx_pcalloc(cf->pool, sizeof(ngx_bottle_zone_t));
    if (zone == NULL) {
        return NGX_ERROR;
    }

    ngx_str_set(&name, "bottle");

    bcf->zone = ngx_shared_memory_add(cf, &name, size, &ngx_bottle_module);
    if (bcf->zone == NULL) {
        return NGX_ERROR;
    }

    if (bcf->zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "the \"bottle\" zone is already defined");
        return NGX_ERROR;
    }

    bcf->zone->init = ngx_bottle_zone_init;
    bcf->zone->data = zone;

    /*
     * Operators' approvals, not the agent, fill the safelist; still, it may
     * take a quarter of the zone at most, so the tunnels always have the
     * rest.
     */

    zone->safelist_max = size / 4;

    return NGX_OK;
}


static ngx_int_t
ngx_bottle_zone_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_bottle_zone_t  *ozone = data;

    ngx_bottle_zone_t  *zone;

    zone = shm_zone->data;

    if (ozone) {
        /* a reload: the records of running sessions stay valid */
        zone->sh = ozone->sh;
        zone->shpool = ozone->shpool;
        return NGX_OK;
    }

    zone->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        zone->sh = zone->shpool->data;
        return NGX_OK;
    }

    zone->sh = ngx_slab_alloc(zone->shpool, sizeof(ngx_bottle_zone_sh_t));
    if (zone->sh == NULL) {
        return NGX_ERROR;
    }

    zone->shpool->data = zone->sh;

    ngx_memzero(zone->sh, sizeof(ngx_bottle_zone_sh_t));

    ngx_rbtree_init(&zone->sh->rbtree, &zone->sh->sentinel,
                    ngx_str_rbtree_insert_value);
    ngx_rbtree_init(&zone->sh->safelist, &zone->sh->safelist_sentinel,
                    ngx_str_rbtree_insert_value);
    ngx_rbtree_init(&zone->sh->held, &zone->sh->held_sentinel,
                    ngx_str_rbtree_insert_value);

    zone->shpool->log_ctx = (u_char *) " in the bottle zone";
    zone->shpool->log_nomem = 1;

    return NGX_OK;
}


static ngx_bottle_zone_t *
ngx_bottle_zone_get(void)
{
    ngx_bottle_conf_t  *bcf;

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(ngx_cycle->conf_ctx,
                                             ngx_bottle_module);

    if (bcf == NULL || bcf->zone == NULL) {
        return NULL;
    }

    return bcf->zone->data;
}


/*
 * The key of a connection: its peer's address and port as the PROXY
 * protocol header spells them (ngx_proxy_protocol_write() prints the
 * address with ngx_sock_ntop(), as here).
 */

ngx_int_t
ngx_bottle_zone_key(ngx_connection_t *c, u_char *buf, size_t size,
    ngx_str_t *out)
{
    u_char     *p;
    size_t      len;
    in_port_t   port;

    if (c->proxy_protocol) {
        p = ngx_snprintf(buf, size, "%V:%d", &c->proxy_protocol->src_addr,
                         (int) c->proxy_protocol->src_port);

    } else {
        if (c->sockaddr->sa_family == AF_UNIX) {
            return NGX_DECLINED;
        }

        len = ngx_sock_ntop(c->sockaddr, c->socklen, buf, size, 0);
        port = ngx_inet_get_port(c->sockaddr);
        p = ngx_snprintf(buf + len, size - len, ":%d", (int) port);
    }

    out->data = buf;
    out->len = p - buf;

    return NGX_OK;
}


ngx_int_t
ngx_bottle_zone_insert(ngx_str_t *key, ngx_bottle_target_t *target)
{
    size_t                n;
    uint32_t              hash;
    ngx_bottle_zone_t    *zone;
    ngx_bottle_record_t  *rec;

    zone = ngx_bottle_zone_get();
    if (zone == NULL) {
        return NGX_ERROR;
    }

    n = offsetof(ngx_bottle_record_t, data) + key->len + target->id.len
        + target->host.len;

    hash = ngx_crc32_short(key->data, key->len);

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (ngx_bottle_zone_lookup(zone, key, hash)) {
        /* two live connections cannot share an address:port */
        ngx_shmtx_unlock(&zone->shpool->mutex);
        return NGX_DECLINED;
    }

    rec = ngx_slab_alloc_locked(zone->shpool, n);
    if (rec == NULL) {
        ngx_shmtx_unlock(&zone->shpool->mutex);
        return NGX_ERROR;
    }

    rec->sn.node.key = hash;
    rec->sn.str.data = rec->data;
    rec->sn.str.len = key->len;
    rec->port = target->port;
    rec->id_len = (u_char) target->id.len;
    rec->host_len = (u_char) target->host.len;

    ngx_memcpy(ngx_cpymem(ngx_cpymem(rec->data, key->data, key->len),
                          target->id.data, target->id.len),
               target->host.data, target->host.len);

    ngx_rbtree_insert(&zone->sh->rbtree, &rec->sn.node);
    zone->sh->count++;

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return NGX_OK;
}


/* the record's contents, copied into the pool */

ngx_int_t
ngx_bottle_zone_find(ngx_str_t *key, ngx_pool_t *pool,
    ngx_bottle_target_t *out)
{
    u_char               *p;
    uint32_t              hash;
    ngx_bottle_zone_t    *zone;
    ngx_bottle_record_t  *rec;

    zone = ngx_bottle_zone_get();
    if (zone == NULL) {
        return NGX_DECLINED;
    }

    hash = ngx_crc32_short(key->data, key->len);

    ngx_shmtx_lock(&zone->shpool->mutex);

    rec = ngx_bottle_zone_lookup(zone, key, hash);

    if (rec == NULL) {
        ngx_shmtx_unlock(&zone->shpool->mutex);
        return NGX_DECLINED;
    }

    p = ngx_pnalloc(pool, rec->id_len + rec->host_len);
    if (p == NULL) {
        ngx_shmtx_unlock(&zone->shpool->mutex);
        return NGX_ERROR;
    }

    out->id.data = p;
    out->id.len = rec->id_len;
    out->host.data = p + rec->id_len;
    out->host.len = rec->host_len;
    out->port = rec->port;

    ngx_memcpy(p, rec->data + key->len, rec->id_len + rec->host_len);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return NGX_OK;
}


void
ngx_bottle_zone_delete(ngx_str_t *key)
{
    uint32_t              hash;
    ngx_bottle_zone_t    *zone;
    ngx_bottle_record_t  *rec;

    zone = ngx_bottle_zone_get();
    if (zone == NULL) {
        return;
    }

    hash = ngx_crc32_short(key->data, key->len);

    ngx_shmtx_lock(&zone->shpool->mutex);

    rec = ngx_bottle_zone_lookup(zone, key, hash);

    if (rec) {
        ngx_rbtree_delete(&zone->sh->rbtree, &rec->sn.node);
        ngx_slab_free_locked(zone->shpool, rec);
        zone->sh->count--;
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);
}


/*
 * The key of a (bottle, host) entry: "id\0host", and "\0tail" after it
 * when there is one (the cookie jars, the safelist).
 */

ngx_int_t
ngx_bottle_zone_pair_key(ngx_pool_t *pool, ngx_str_t *id, ngx_str_t *host,
    const u_char *tail, size_t tail_len, ngx_str_t *out)
{
    u_char  *p;

    p = ngx_pnalloc(pool, id->len + 1 + host->len + 1 + tail_len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    out->data = p;
    p = ngx_cpymem(p, id->data, id->len);
    *p++ = '\0';
    p = ngx_cpymem(p, host->data, host->len);

    if (tail) {
        *p++ = '\0';
        p = ngx_cpymem(p, tail, tail_len);
    }

    out->len = p - out->data;

    return NGX_OK;
}


/* the zone's slab pool and the supervise safelist's tree */

ngx_int_t
ngx_bottle_zone_safelist(ngx_slab_pool_t **shpool, ngx_rbtree_t **tree)
{
    ngx_bottle_zone_t  *zone;

    zone = ngx_bottle_zone_get();
    if (zone == NULL) {
        return NGX_ERROR;
    }

    *shpool = zone->shpool;
    *tree = &zone->sh->safelist;

    return NGX_OK;
}


/*
 * Under the zone's lock: room for a safelist entry of this size, if the
 * safelist's part of the zone has it.  The size is counted as the slab
 * pool allocates it: a power of two, or whole pages.
 */

ngx_int_t
ngx_bottle_zone_safelist_grow(size_t size)
{
    size_t              n;
    ngx_bottle_zone_t  *zone;

    zone = ngx_bottle_zone_get();
    if (zone == NULL) {
        return NGX_DECLINED;
    }

    if (size > ngx_pagesize / 2) {
        n = ngx_align(size, ngx_pagesize);

    } else {
        for (n = 8; n < size; n <<= 1) { /* void */ }
    }

    if (zone->sh->safelist_used + n > zone->safelist_max) {
        return NGX_DECLINED;
    }

    zone->sh->safelist_used += n;

    return NGX_OK;
}


/*
 * A request of the bottle held for the operator (n 1, with its body's
 * bytes), or one released (n -1, the same bytes).  Holding one more is
 * NGX_BUSY past max requests, NGX_DECLINED past max_bytes: each bottle has
 * its own bound, so one cannot starve the others.  The counts are kept
 * per worker: at the bound, the shares of workers that died (a crash
 * never releases what it held) are given back first.
 */

ngx_int_t
ngx_bottle_zone_held(ngx_str_t *id, ngx_int_t n, off_t bytes, ngx_uint_t max,
    off_t max_bytes)
{
    uint32_t                hash;
    ngx_int_t               rc;
    ngx_uint_t              gone;
    ngx_bottle_zone_t      *zone;
    ngx_bottle_held_t      *h;
    ngx_bottle_held_pid_t  *p, **pp;

    zone = ngx_bottle_zone_get();
    if (zone == NULL) {
        return NGX_ERROR;
    }

    hash = ngx_crc32_short(id->data, id->len);
    rc = NGX_OK;
    gone = 0;

    ngx_shmtx_lock(&zone->shpool->mutex);

    h = (ngx_bottle_held_t *) ngx_str_rbtree_lookup(&zone->sh->held, id,
                                                    hash);

    if (h == NULL) {
        if (n < 0) {
            goto done;
        }

        h = ngx_slab_calloc_locked(zone->shpool,
                                   offsetof(ngx_bottle_held_t, data)
                                   + id->len);
        if (h == NULL) {
            rc = NGX_ERROR;
            goto done;
        }

        ngx_memcpy(h->data, id->data, id->len);
        h->sn.node.key = hash;
        h->sn.str.data = h->data;
        h->sn.str.len = id->len;

        ngx_rbtree_insert(&zone->sh->held, &h->sn.node);
    }

    for (pp = &h->pids; *pp; pp = &(*pp)->next) {
        if ((*pp)->pid == ngx_pid) {
            break;
        }
    }

    p = *pp;

    if (n < 0) {
        if (p) {
            p->n--;
            p->bytes -= ngx_min(bytes, p->bytes);
            h->n--;
            h->bytes -= ngx_min(bytes, h->bytes);
        }

        goto free;
    }

    if (h->n >= max || h->bytes + bytes > max_bytes) {
        gone = ngx_bottle_zone_held_dead(zone, h);
    }

    if (h->n >= max) {
        rc = NGX_BUSY;

    } else if (h->bytes + bytes > max_bytes) {
        rc = NGX_DECLINED;

    } else {
        if (p == NULL) {
            p = ngx_slab_calloc_locked(zone->shpool, sizeof(*p));
            if (p == NULL) {
                rc = NGX_ERROR;
                goto free;
            }

            p->pid = ngx_pid;
            p->next = h->pids;
            h->pids = p;
        }

        p->n++;
        p->bytes += bytes;
        h->n++;
        h->bytes += bytes;
    }

free:

    ngx_bottle_zone_held_free(zone, h);

done:

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ngx_bottle_zone_held_gone(ngx_cycle->log, gone);

    return rc;
}


/*
 * At a worker's start: gives back the held requests of every worker that
 * died, as a crash leaves them (nginx has just reaped it, so kill() knows
 * it is gone).
 */

void
ngx_bottle_zone_held_reclaim(ngx_cycle_t *cycle)
{
    ngx_uint_t          gone;
    ngx_rbtree_node_t  *node, *next, *sentinel;
    ngx_bottle_zone_t  *zone;
    ngx_bottle_held_t  *h;

    zone = ngx_bottle_zone_get();
    if (zone == NULL) {
        return;
    }

    gone = 0;

    ngx_shmtx_lock(&zone->shpool->mutex);

    sentinel = zone->sh->held.sentinel;
    node = zone->sh->held.root;

    if (node != sentinel) {
        for (node = ngx_rbtree_min(node, sentinel); node; node = next) {
            next = ngx_rbtree_next(&zone->sh->held, node);

            h = (ngx_bottle_held_t *) node;
            gone += ngx_bottle_zone_held_dead(zone, h);
            ngx_bottle_zone_held_free(zone, h);
        }
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ngx_bottle_zone_held_gone(cycle->log, gone);
}


/*
 * Dead workers' places given back (at a worker's start, or by a hold at
 * the bound that finds them before the worker started in the dead one's
 * place does): logged and counted wherever it happens
 */

static void
ngx_bottle_zone_held_gone(ngx_log_t *log, ngx_uint_t gone)
{
    if (gone == 0) {
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "bottle: %ui held request%s of a worker that died "
                  "given back", gone, gone == 1 ? "" : "s");
    ngx_bottle_metrics_add(NGX_BOTTLE_METRIC_HELD, -(ngx_int_t) gone);
}


/* the shares of workers that are gone, dropped; how many requests */

static ngx_uint_t
ngx_bottle_zone_held_dead(ngx_bottle_zone_t *zone, ngx_bottle_held_t *h)
{
    ngx_uint_t              gone;
    ngx_bottle_held_pid_t  *p, **pp;

    gone = 0;

    for (pp = &h->pids; *pp; /* void */) {
        p = *pp;

        if (p->pid == ngx_pid || kill(p->pid, 0) == 0 || ngx_errno != ESRCH) {
            pp = &p->next;
            continue;
        }

        gone += p->n;
        h->n -= ngx_min(p->n, h->n);
        h->bytes -= ngx_min(p->bytes, h->bytes);

        *pp = p->next;
        ngx_slab_free_locked(zone->shpool, p);
    }

    return gone;
}


/* empty shares, and the bottle's node once it holds nothing */

static void
ngx_bottle_zone_held_free(ngx_bottle_zone_t *zone, ngx_bottle_held_t *h)
{
    ngx_bottle_held_pid_t  *p, **pp;

    for (pp = &h->pids; *pp; /* void */) {
        p = *pp;

        if (p->n) {
            pp = &p->next;
            continue;
        }

        *pp = p->next;
        ngx_slab_free_locked(zone->shpool, p);
    }

    if (h->n == 0 && h->pids == NULL) {
        ngx_rbtree_delete(&zone->sh->held, &h->sn.node);
        ngx_slab_free_locked(zone->shpool, h);
    }
}


ngx_uint_t
ngx_bottle_zone_count(void)
{
    ngx_bottle_zone_t  *zone;

    zone = ngx_bottle_zone_get();

    return zone ? zone->sh->count : 0;
}


static ngx_bottle_record_t *
ngx_bottle_zone_lookup(ngx_bottle_zone_t *zone, ngx_str_t *key,
    uint32_t hash)
{
    return (ngx_bottle_record_t *) ngx_str_rbtree_lookup(&zone->sh->rbtree,
                                                         key, hash);
}
