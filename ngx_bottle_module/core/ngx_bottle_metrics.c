
/*
 * Metrics (docs/metrics.md): counters in a shared zone, updated with
 * atomic adds and no lock on the hot path, read by the Prometheus text
 * handler (bottle_metrics, ngx_http_bottle_record.c).
 *
 * Requests are counted per bottle, verdict and rule.  The bottles a zone
 * tracks are bounded (NGX_BOTTLE_METRICS_BOTTLES): the first ones seen
 * take a slot each, under the zone's lock, once; any later bottle is
 * counted as bottle="_other", so a policy of thousands of bottles cannot
 * grow the label sets without bound.  The zone also holds the full log's
 * rotation generation, which its writers share (ngx_http_bottle_fulllog.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"


#define NGX_BOTTLE_METRICS_BOTTLES    256
#define NGX_BOTTLE_METRICS_ID_MAX     128
#define NGX_BOTTLE_METRICS_DETECTORS  8
#define NGX_BOTTLE_METRICS_ZONE       (1024 * 1024)
#define NGX_BOTTLE_METRICS_ZONES      8     /* the render's room; it cuts */
#define NGX_BOTTLE_METRICS_WORKERS    256   /* live workers, old and new */


typedef struct {
    ngx_atomic_t         used;       /* 1: id is set, for good */
    size_t               id_len;
    u_char               id[NGX_BOTTLE_METRICS_ID_MAX];
    ngx_atomic_t         requests[BOTTLE_RULE_COUNT];  /* [0]: allowed */
} ngx_bottle_metrics_bottle_t;


typedef struct {
    ngx_atomic_t         used;
    size_t               name_len;
    u_char               name[32];
    ngx_atomic_t         findings;
} ngx_bottle_metrics_detector_t;


/* one worker's own: its pid while it lives, values only it sets */
typedef struct {
    ngx_atomic_t         pid;
    ngx_atomic_t         value[NGX_BOTTLE_WORKER_N];
} ngx_bottle_metrics_worker_t;


typedef struct {
    ngx_atomic_t                   nbottles;
    ngx_bottle_metrics_bottle_t    bottles[NGX_BOTTLE_METRICS_BOTTLES];
    ngx_bottle_metrics_bottle_t    other;    /* "_other" */
    ngx_bottle_metrics_bottle_t    none;     /* "_none": not identified */
    ngx_bottle_metrics_detector_t  detectors[NGX_BOTTLE_METRICS_DETECTORS];
    ngx_atomic_t                   counters[NGX_BOTTLE_METRIC_N];
    ngx_atomic_t                   fulllog_gen;
    ngx_atomic_t                   fulllog_failing;  /* said, by a worker */
    ngx_bottle_metrics_worker_t    workers[NGX_BOTTLE_METRICS_WORKERS];
    ngx_bottle_final_t             finals[NGX_BOTTLE_FINAL_N];
} ngx_bottle_metrics_sh_t;


static ngx_int_t ngx_bottle_metrics_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_bottle_metrics_bottle_t *ngx_bottle_metrics_slot(
    const bottle_t *b);


static ngx_bottle_metrics_worker_t *ngx_bottle_metrics_worker(void);
static u_char *ngx_bottle_metrics_workers(u_char *p, u_char *end);
static void ngx_bottle_metrics_refused(ngx_connection_t *c,
    ngx_bottle_verdict_t *v, ngx_uint_t status);


static ngx_bottle_metrics_sh_t      *ngx_bottle_metrics_sh;
static ngx_slab_pool_t              *ngx_bottle_metrics_shpool;
static ngx_bottle_metrics_worker_t  *ngx_bottle_metrics_me;
static ngx_uint_t                    ngx_bottle_metrics_exited;


/*
 * Entries of one metric with a label follow each other: its HELP and TYPE
 * go out once, before the first.
 */

static const struct {
    const char  *name;
    const char  *labels;
    const char  *type;
    const char  *help;
} ngx_bottle_metrics_info[NGX_BOTTLE_METRIC_N] = {
    { "bottle_full_log_records_total", NULL, "counter",
      "Lines written to the full log." },
    { "bottle_full_log_dropped_total", NULL, "counter",
      "Full log lines dropped: the file could not be written." },
    { "bottle_full_log_rotations_total", NULL, "counter",
      "Rotations of full.jsonl." },
    { "bottle_firehose_snapshots_total", NULL, "counter",
      "Requests snapshotted for the firehose (only with a consumer)." },
    { "bottle_firehose_published_total", NULL, "counter",
      "Firehose records Redis accepted." },
    { "bottle_firehose_dropped_total", NULL, "counter",
      "Firehose records dropped: queue full or Redis not ready." },
    { "bottle_audit_dropped_total", NULL, "counter",
      "Audit events dropped from a full per-worker queue." },
    { "bottle_held", NULL, "gauge",
      "Requests held for the operator now, in all workers." },
    { "bottle_held_total", NULL, "counter",
      "Requests held for the operator." },
    { "bottle_held_released_total", "outcome=\"approved\"", "counter",
      "Held requests released, by outcome." },
    { "bottle_held_released_total", "outcome=\"denied\"", NULL, NULL },
    { "bottle_held_released_total", "outcome=\"timeout\"", NULL, NULL },
    { "bottle_held_released_total", "outcome=\"client_gone\"", NULL,
      NULL },
    { "bottle_held_released_total", "outcome=\"expired\"", NULL, NULL },
    { "bottle_held_released_total", "outcome=\"failed\"", NULL, NULL },
    { "bottle_held_full_total", NULL, "counter",
      "Requests refused at once: their bottle's held places or bytes were "
      "full." },
    { "bottle_upstream_kept_total", NULL, "counter",
      "Upstream connections put in the bottle_upstream keepalive pool." },
    { "bottle_upstream_reused_total", NULL, "counter",
      "Requests sent on a connection from the keepalive pool." },
    { "bottle_upstream_tls_handshakes_total", NULL, "counter",
      "TLS handshakes with upstreams, on new connections." },
    { "bottle_upstream_tls_resumed_total", NULL, "counter",
      "Upstream TLS handshakes that resumed a kept session." },
    { "bottle_leaf_cache_hits_total", NULL, "counter",
      "Intercepted handshakes served a leaf from the minted-leaf cache." },
    { "bottle_leaf_mints_total", NULL, "counter",
      "Leaves minted (cache misses and renewals)." },
    { "bottle_leaf_cache_entries", NULL, "gauge",
      "Leaves in the minted-leaf caches, all workers." },
};


ngx_int_t
ngx_bottle_metrics_zone_add(ngx_conf_t *cf)
{
    ngx_shm_zone_t  *shm_zone;

    static ngx_str_t  name = ngx_string("bottle_metrics");

    shm_zone = ngx_shared_memory_add(cf, &name, NGX_BOTTLE_METRICS_ZONE,
                                     &ngx_bottle_module);
    if (shm_zone == NULL) {
        return NGX_ERROR;
    }

    shm_zone->init = ngx_bottle_metrics_init_zone;

    return NGX_OK;
}


/* counters survive a reload: the old zone's are kept */

static ngx_int_t
ngx_bottle_metrics_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_slab_pool_t          *shpool;
    ngx_bottle_metrics_sh_t  *sh;

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (data) {
        shm_zone->data = data;
        return NGX_OK;
    }

    sh = ngx_slab_calloc(shpool, sizeof(ngx_bottle_metrics_sh_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    shm_zone->data = sh;

    return NGX_OK;
}


/*
 * A worker finds the zone of its own cycle: a configuration without one
 * (no http block) leaves every counter a no-op, never a pointer into a
 * zone an earlier cycle freed.
 */

void
ngx_bottle_metrics_init_process(ngx_cycle_t *cycle)
{
    ngx_uint_t           i;
    ngx_list_part_t     *part;
    ngx_shm_zone_t      *zone;
    ngx_bottle_conf_t   *bcf;
    ngx_bottle_store_t  *st;

    (void) ngx_bottle_refusal_observe(ngx_bottle_metrics_refused);

    ngx_bottle_metrics_sh = NULL;
    ngx_bottle_metrics_shpool = NULL;
    ngx_bottle_metrics_me = NULL;

    for (part = &cycle->shared_memory.part; part; part = part->next) {
        zone = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (zone[i].tag == &ngx_bottle_module
                && zone[i].shm.name.len == sizeof("bottle_metrics") - 1
                && ngx_strncmp(zone[i].shm.name.data, "bottle_metrics",
                               sizeof("bottle_metrics") - 1) == 0
                && zone[i].data)
            {
                ngx_bottle_metrics_sh = zone[i].data;
                ngx_bottle_metrics_shpool =
                                    (ngx_slab_pool_t *) zone[i].shm.addr;
                goto found;
            }
        }
    }

    return;

found:

    /* the store's state until its connection says otherwise */

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                             ngx_bottle_module);
    st = bcf ? bcf->store : NULL;

    if (st && st->redis) {
        ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_STORE, 1);
        ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_STORE_UP, 0);
        ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_STORE_HEARD,
                                      (ngx_atomic_uint_t) ngx_time());
        ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_POLICY_VERSION,
                                      (ngx_atomic_uint_t) st->version_max);
    }
}


/*
 * The worker's slot, taken on its first value: a free one, or one of a
 * worker that is gone (it exited without giving it back).
 */

static ngx_bottle_metrics_worker_t *
ngx_bottle_metrics_worker(void)
{
    ngx_uint_t                    i, k;
    ngx_atomic_uint_t             pid;
    ngx_bottle_metrics_worker_t  *w;

    if (ngx_bottle_metrics_me || ngx_bottle_metrics_sh == NULL
        || ngx_bottle_metrics_exited
        || (ngx_process != NGX_PROCESS_WORKER
            && ngx_process != NGX_PROCESS_SINGLE))
    {
        return ngx_bottle_metrics_me;
    }

    ngx_shmtx_lock(&ngx_bottle_metrics_shpool->mutex);

    for (i = 0; i < NGX_BOTTLE_METRICS_WORKERS; i++) {
        w = &ngx_bottle_metrics_sh->workers[i];
        pid = w->pid;

        if (pid == 0 || (pid != (ngx_atomic_uint_t) ngx_pid
                         && kill((ngx_pid_t) pid, 0) == -1
                         && ngx_errno == NGX_ESRCH))
        {
            for (k = 0; k < NGX_BOTTLE_WORKER_N; k++) {
                w->value[k] = 0;
            }

            w->pid = (ngx_atomic_uint_t) ngx_pid;
            ngx_bottle_metrics_me = w;
            break;
        }
    }

    ngx_shmtx_unlock(&ngx_bottle_metrics_shpool->mutex);

    return ngx_bottle_metrics_me;
}


void
ngx_bottle_metrics_worker_set(ngx_uint_t value, ngx_atomic_uint_t v)
{
    ngx_bottle_metrics_worker_t  *w;

    w = ngx_bottle_metrics_worker();

    if (w && value < NGX_BOTTLE_WORKER_N) {
        w->value[value] = v;
    }
}


/* the slot given back: an exiting worker's queues are gone with it */

void
ngx_bottle_metrics_exit_process(void)
{
    ngx_uint_t  k;

    if (ngx_bottle_metrics_me) {
        for (k = 0; k < NGX_BOTTLE_WORKER_N; k++) {
            ngx_bottle_metrics_me->value[k] = 0;
        }

        ngx_memory_barrier();
        ngx_bottle_metrics_me->pid = 0;
        ngx_bottle_metrics_me = NULL;
    }

    ngx_bottle_metrics_exited = 1;
}


void
ngx_bottle_metrics_count(ngx_uint_t metric)
{
    if (ngx_bottle_metrics_sh && metric < NGX_BOTTLE_METRIC_N) {
        (void) ngx_atomic_fetch_add(&ngx_bottle_metrics_sh->counters[metric],
                                    1);
    }
}


/* a gauge moves both ways: a negative delta wraps, as it should */

void
ngx_bottle_metrics_add(ngx_uint_t metric, ngx_atomic_int_t delta)
{
    if (ngx_bottle_metrics_sh && metric < NGX_BOTTLE_METRIC_N && delta) {
        (void) ngx_atomic_fetch_add(&ngx_bottle_metrics_sh->counters[metric],
                                    (ngx_atomic_uint_t) delta);
    }
}


ngx_atomic_uint_t
ngx_bottle_metrics_value(ngx_uint_t metric)
{
    if (ngx_bottle_metrics_sh == NULL || metric >= NGX_BOTTLE_METRIC_N) {
        return 0;
    }

    return ngx_bottle_metrics_sh->counters[metric];
}


/* the bottle's slot: found without a lock, taken under it */

static ngx_bottle_metrics_bottle_t *
ngx_bottle_metrics_slot(const bottle_t *b)
{
    ngx_uint_t                    i, k, start;
    ngx_bottle_metrics_sh_t      *sh = ngx_bottle_metrics_sh;
    ngx_bottle_metrics_bottle_t  *s;

    if (b == NULL) {
        return &sh->none;
    }

    if (b->id.len > NGX_BOTTLE_METRICS_ID_MAX) {
        return &sh->other;
    }

    start = ngx_hash_key((u_char *) b->id.data, b->id.len);

    for (i = 0; i < NGX_BOTTLE_METRICS_BOTTLES; i++) {
        k = (start + i) % NGX_BOTTLE_METRICS_BOTTLES;
        s = &sh->bottles[k];

        if (!s->used) {
            break;
        }

        if (s->id_len == b->id.len
            && ngx_memcmp(s->id, b->id.data, b->id.len) == 0)
        {
            return s;
        }
    }

    if (i == NGX_BOTTLE_METRICS_BOTTLES) {
        return &sh->other;
    }

    /* a new bottle: claim the free slot, unless another worker did */

    ngx_shmtx_lock(&ngx_bottle_metrics_shpool->mutex);

    for ( /* void */ ; i < NGX_BOTTLE_METRICS_BOTTLES; i++) {
        k = (start + i) % NGX_BOTTLE_METRICS_BOTTLES;
        s = &sh->bottles[k];

        if (s->used) {
            if (s->id_len == b->id.len
                && ngx_memcmp(s->id, b->id.data, b->id.len) == 0)
            {
                break;
            }

            continue;
        }

        s->id_len = b->id.len;
        ngx_memcpy(s->id, b->id.data, b->id.len);
        ngx_memory_barrier();
        s->used = 1;
        sh->nbottles++;
        break;
    }

    ngx_shmtx_unlock(&ngx_bottle_metrics_shpool->mutex);

    return (i == NGX_BOTTLE_METRICS_BOTTLES) ? &sh->other : s;
}


void
ngx_bottle_metrics_request(const bottle_t *b, ngx_bottle_rule_e rule)
{
    ngx_bottle_metrics_bottle_t  *s;

    if (ngx_bottle_metrics_sh == NULL) {
        return;
    }

    if ((ngx_uint_t) rule >= BOTTLE_RULE_COUNT) {
        rule = NGX_BOTTLE_RULE_INTERNAL;
    }

    s = ngx_bottle_metrics_slot(b);

    (void) ngx_atomic_fetch_add(&s->requests[rule], 1);
}


/* a refusal's observer (ngx_bottle_log_verdict) */

static void
ngx_bottle_metrics_refused(ngx_connection_t *c, ngx_bottle_verdict_t *v,
    ngx_uint_t status)
{
    ngx_bottle_metrics_request(v->bottle, v->rule);
}


void
ngx_bottle_metrics_finding(const char *detector)
{
    size_t                          len;
    ngx_uint_t                      i;
    ngx_bottle_metrics_detector_t  *d;

    if (ngx_bottle_metrics_sh == NULL || detector == NULL) {
        return;
    }

    len = ngx_strlen(detector);

    for (i = 0; i < NGX_BOTTLE_METRICS_DETECTORS; i++) {
        d = &ngx_bottle_metrics_sh->detectors[i];

        if (!d->used) {
            ngx_shmtx_lock(&ngx_bottle_metrics_shpool->mutex);

            if (!d->used && len <= sizeof(d->name)) {
                d->name_len = len;
                ngx_memcpy(d->name, detector, len);
                ngx_memory_barrier();
                d->used = 1;
            }

            ngx_shmtx_unlock(&ngx_bottle_metrics_shpool->mutex);

            if (!d->used) {
                return;
            }
        }

        if (d->name_len == len && ngx_memcmp(d->name, detector, len) == 0) {
            (void) ngx_atomic_fetch_add(&d->findings, 1);
            return;
        }
    }
}


ngx_atomic_t *
ngx_bottle_metrics_fulllog_gen(void)
{
    return ngx_bottle_metrics_sh ? &ngx_bottle_metrics_sh->fulllog_gen
                                 : NULL;
}


ngx_atomic_t *
ngx_bottle_metrics_fulllog_failing(void)
{
    return ngx_bottle_metrics_sh ? &ngx_bottle_metrics_sh->fulllog_failing
                                 : NULL;
}


ngx_bottle_final_t *
ngx_bottle_metrics_finals(void)
{
    return ngx_bottle_metrics_sh ? ngx_bottle_metrics_sh->finals : NULL;
}


void
ngx_bottle_metrics_lock(void)
{
    ngx_shmtx_lock(&ngx_bottle_metrics_shpool->mutex);
}


void
ngx_bottle_metrics_unlock(void)
{
    ngx_shmtx_unlock(&ngx_bottle_metrics_shpool->mutex);
}


static u_char *
ngx_bottle_metrics_bottle_lines(u_char *p, u_char *end, u_char *id,
    size_t len, ngx_bottle_metrics_bottle_t *s)
{
    ngx_uint_t                rule;
    ngx_atomic_uint_t         n;
    const ngx_bottle_rule_t  *r;

    for (rule = 0; rule < BOTTLE_RULE_COUNT; rule++) {
        n = s->requests[rule];

        if (n == 0) {
            continue;
        }

        r = ngx_bottle_rule(rule);

        p = ngx_slprintf(p, end,
                         "bottle_requests_total{bottle=\"%*s\","
                         "verdict=\"%s\",rule=\"%V\"} %uA\n",
                         len, id, rule ? "refused" : "allowed", &r->name, n);
    }

    return p;
}


/*
 * The module's zones (bottle: tunnels, held counts, safelist; bottle_jar;
 * bottle_metrics), read at scrape time from their slab pools without the
 * lock: a gauge may be a page off, never a torn pointer.  Used is in
 * whole pages, what the allocator can no longer give a large record.
 */

static u_char *
ngx_bottle_metrics_zones(u_char *p, u_char *end)
{
    ngx_uint_t        i, k, pass, npages, nslots;
    ngx_list_part_t  *part;
    ngx_shm_zone_t   *zone;
    ngx_slab_pool_t  *pool;
    ngx_atomic_int_t  v;

    static const char  *names[] = {
        "bottle_zone_size_bytes", "bottle_zone_used_bytes",
        "bottle_zone_alloc_failures_total"
    };
    static const char  *types[] = { "gauge", "gauge", "counter" };
    static const char  *helps[] = {
        "Capacity of the module's shared zones, in their slab pages.",
        "Bytes of the module's shared zones in pages taken.",
        "Allocations the module's shared zones could not satisfy."
    };

    for (pass = 0; pass < 3; pass++) {
        p = ngx_slprintf(p, end, "# HELP %s %s\n# TYPE %s %s\n",
                         names[pass], helps[pass], names[pass], types[pass]);

        for (part = &((ngx_cycle_t *) ngx_cycle)->shared_memory.part;
             part;
             part = part->next)
        {
            zone = part->elts;

            for (i = 0; i < part->nelts; i++) {
                if (zone[i].tag != &ngx_bottle_module
                    || zone[i].shm.addr == NULL
                    || zone[i].shm.name.len > 64)
                {
                    continue;
                }

                pool = (ngx_slab_pool_t *) zone[i].shm.addr;
                npages = pool->last - pool->pages;

                if (pass == 0) {
                    v = (ngx_atomic_int_t) (npages << ngx_pagesize_shift);

                } else if (pass == 1) {
                    v = (ngx_atomic_int_t)
                        ((npages - ngx_min(pool->pfree, npages))
                         << ngx_pagesize_shift);

                } else {
                    nslots = ngx_pagesize_shift - pool->min_shift;
                    v = 0;

                    for (k = 0; k < nslots; k++) {
                        v += pool->stats[k].fails;
                    }
                }

                p = ngx_slprintf(p, end, "%s{zone=\"%V\"} %A\n",
                                 names[pass], &zone[i].shm.name, v);
            }
        }
    }

    return p;
}


/*
 * The workers' own values, over the live ones: the queues summed; the
 * store up only if every worker follows it, its age the oldest loss, the
 * policy version the one every worker has reached.  Only with a store.
 */

static u_char *
ngx_bottle_metrics_workers(u_char *p, u_char *end)
{
    time_t                        now, age;
    ngx_uint_t                    i, nstore, up;
    ngx_atomic_uint_t             pid, audit, firehose, version, heard;
    ngx_bottle_metrics_worker_t  *w;

    now = ngx_time();
    nstore = 0;
    up = 1;
    age = 0;
    audit = 0;
    firehose = 0;
    version = 0;

    for (i = 0; i < NGX_BOTTLE_METRICS_WORKERS; i++) {
        w = &ngx_bottle_metrics_sh->workers[i];
        pid = w->pid;

        if (pid == 0
            || (pid != (ngx_atomic_uint_t) ngx_pid
                && kill((ngx_pid_t) pid, 0) == -1 && ngx_errno == NGX_ESRCH))
        {
            continue;
        }

        audit += w->value[NGX_BOTTLE_WORKER_AUDIT_QUEUED];
        firehose += w->value[NGX_BOTTLE_WORKER_FIREHOSE_QUEUED];

        if (!w->value[NGX_BOTTLE_WORKER_STORE]) {
            continue;
        }

        if (nstore++ == 0
            || w->value[NGX_BOTTLE_WORKER_POLICY_VERSION] < version)
        {
            version = w->value[NGX_BOTTLE_WORKER_POLICY_VERSION];
        }

        if (w->value[NGX_BOTTLE_WORKER_STORE_UP]) {
            continue;
        }

        up = 0;
        heard = w->value[NGX_BOTTLE_WORKER_STORE_HEARD];

        if ((time_t) heard < now && now - (time_t) heard > age) {
            age = now - (time_t) heard;
        }
    }

    p = ngx_slprintf(p, end,
                     "# HELP bottle_audit_queue Audit events queued in the "
                     "workers, not written to the journal yet.\n"
                     "# TYPE bottle_audit_queue gauge\n"
                     "bottle_audit_queue %uA\n"
                     "# HELP bottle_firehose_queue Firehose records queued "
                     "in the workers, not published yet.\n"
                     "# TYPE bottle_firehose_queue gauge\n"
                     "bottle_firehose_queue %uA\n", audit, firehose);

    if (nstore == 0) {
        return p;
    }

    return ngx_slprintf(p, end,
                        "# HELP bottle_store_up 1 if every worker follows "
                        "the policy store.\n"
                        "# TYPE bottle_store_up gauge\n"
                        "bottle_store_up %ui\n"
                        "# HELP bottle_store_sync_age_seconds Seconds since "
                        "a worker that lost the store last heard from it "
                        "(the longest); 0 while all follow it.\n"
                        "# TYPE bottle_store_sync_age_seconds gauge\n"
                        "bottle_store_sync_age_seconds %T\n"
                        "# HELP bottle_policy_version Highest bottle version "
                        "(the store's change counter) every worker has "
                        "applied.\n"
                        "# TYPE bottle_policy_version gauge\n"
                        "bottle_policy_version %uA\n",
                        up, age, version);
}


/* the Prometheus text format, version 0.0.4 */

ngx_int_t
ngx_bottle_metrics_render(ngx_pool_t *pool, ngx_uint_t tunnels,
    ngx_str_t *extra, ngx_str_t *out)
{
    size_t                          size;
    u_char                         *p, *end;
    ngx_uint_t                      i;
    ngx_bottle_metrics_sh_t        *sh = ngx_bottle_metrics_sh;
    ngx_bottle_metrics_bottle_t    *s;
    ngx_bottle_metrics_detector_t  *d;

    if (sh == NULL) {
        ngx_str_null(out);
        return NGX_OK;
    }

    size = (NGX_BOTTLE_METRICS_BOTTLES + 2) * BOTTLE_RULE_COUNT
           * (NGX_BOTTLE_METRICS_ID_MAX + 128)
           + NGX_BOTTLE_METRICS_DETECTORS * 128 + NGX_BOTTLE_METRIC_N * 256
           + NGX_BOTTLE_METRICS_ZONES * 3 * 160 + 4096 + 1024 + extra->len;

    p = ngx_pnalloc(pool, size);
    if (p == NULL) {
        return NGX_ERROR;
    }

    out->data = p;
    end = p + size;

    p = ngx_slprintf(p, end,
                     "# HELP bottle_requests_total Requests the gateway "
                     "decided, by bottle, verdict and rule.\n"
                     "# TYPE bottle_requests_total counter\n");

    for (i = 0; i < NGX_BOTTLE_METRICS_BOTTLES; i++) {
        s = &sh->bottles[i];

        if (s->used) {
            p = ngx_bottle_metrics_bottle_lines(p, end, s->id, s->id_len, s);
        }
    }

    p = ngx_bottle_metrics_bottle_lines(p, end, (u_char *) "_other", 6,
                                        &sh->other);
    p = ngx_bottle_metrics_bottle_lines(p, end, (u_char *) "_none", 5,
                                        &sh->none);

    p = ngx_slprintf(p, end,
                     "# HELP bottle_metrics_bottles Bottles with labels "
                     "of their own (at most %d; the rest are _other).\n"
                     "# TYPE bottle_metrics_bottles gauge\n"
                     "bottle_metrics_bottles %uA\n"
                     "# HELP bottle_dlp_findings_total Outbound DLP "
                     "findings, by detector.\n"
                     "# TYPE bottle_dlp_findings_total counter\n",
                     NGX_BOTTLE_METRICS_BOTTLES, sh->nbottles);

    for (i = 0; i < NGX_BOTTLE_METRICS_DETECTORS; i++) {
        d = &sh->detectors[i];

        if (d->used) {
            p = ngx_slprintf(p, end,
                             "bottle_dlp_findings_total{detector=\"%*s\"} "
                             "%uA\n", d->name_len, d->name, d->findings);
        }
    }

    for (i = 0; i < NGX_BOTTLE_METRIC_N; i++) {
        if (ngx_bottle_metrics_info[i].type) {
            p = ngx_slprintf(p, end, "# HELP %s %s\n# TYPE %s %s\n",
                             ngx_bottle_metrics_info[i].name,
                             ngx_bottle_metrics_info[i].help,
                             ngx_bottle_metrics_info[i].name,
                             ngx_bottle_metrics_info[i].type);
        }

        if (ngx_bottle_metrics_info[i].labels) {
            p = ngx_slprintf(p, end, "%s{%s} %A\n",
                             ngx_bottle_metrics_info[i].name,
                             ngx_bottle_metrics_info[i].labels,
                             (ngx_atomic_int_t) sh->counters[i]);

        } else {
            p = ngx_slprintf(p, end, "%s %A\n",
                             ngx_bottle_metrics_info[i].name,
                             (ngx_atomic_int_t) sh->counters[i]);
        }
    }

    p = ngx_bottle_metrics_zones(p, end);
    p = ngx_bottle_metrics_workers(p, end);

    p = ngx_slprintf(p, end,
                     "# HELP bottle_tunnels Open CONNECT tunnels of "
                     "inspected routes, in all workers.\n"
                     "# TYPE bottle_tunnels gauge\n"
                     "bottle_tunnels %ui\n%V",
                     tunnels, extra);

    out->len = p - out->data;

    return NGX_OK;
}
