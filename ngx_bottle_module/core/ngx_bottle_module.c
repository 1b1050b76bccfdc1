
/*
 * ngx_bottle core module: the `bottle_policy` directive.  A file policy is
 * parsed once per configuration cycle into an immutable compiled form that
 * the stream front and the http pipeline both read; `nginx -s reload` builds
 * a new one, and a broken file fails the reload and keeps the running one.
 * A store URL instead makes each worker read the bottles from Redis and
 * follow their changes (ngx_bottle_store_redis.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#if (NGX_THREADS)
#include <ngx_thread_pool.h>
#endif

#include "bottle_heartbeat.h"

#include "ngx_bottle.h"

#if (NGX_LINUX && defined __GLIBC__)
#include <malloc.h>
#endif


static void *ngx_bottle_create_conf(ngx_cycle_t *cycle);
static char *ngx_bottle_init_conf(ngx_cycle_t *cycle, void *conf);
static char *ngx_bottle_policy_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void ngx_bottle_policy_cleanup(void *data);
static char *ngx_bottle_limits_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_bottle_scan_compile(ngx_conf_t *cf, ngx_bottle_conf_t *bcf);
static void ngx_bottle_scan_db_cleanup(void *data);
static void ngx_bottle_secrets_cleanup(void *data);
static char *ngx_bottle_full_log_init_conf(ngx_cycle_t *cycle,
    ngx_bottle_conf_t *bcf);
static ngx_int_t ngx_bottle_init_process(ngx_cycle_t *cycle);
static void ngx_bottle_exit_process(ngx_cycle_t *cycle);


/* one, or a bottle could never keep the scanner it is using */
static ngx_conf_num_bounds_t  ngx_bottle_scanners_bounds = {
    ngx_conf_check_num_bounds, 1, NGX_MAX_INT_T_VALUE
};

/* at least one ping period and a reconnection */
static ngx_conf_num_bounds_t  ngx_bottle_stale_bounds = {
    ngx_conf_check_num_bounds, 1000, 24 * 3600 * 1000
};


/* the smallest jar zone nginx's slab allocator is useful in */
static ngx_conf_num_bounds_t  ngx_bottle_jar_size_bounds = {
    ngx_conf_check_num_bounds, 64 * 1024, NGX_MAX_INT_T_VALUE
};

/* one cookie of 4 KB name and 4 KB value */
static ngx_conf_num_bounds_t  ngx_bottle_jar_bottle_bounds = {
    ngx_conf_check_num_bounds, 16 * 1024, NGX_MAX_INT_T_VALUE
};


/* a refusal is the agent's doing: nginx logs a client's errors at info */
static ngx_conf_enum_t  ngx_bottle_refusal_log_levels[] = {
    { ngx_string("error"), NGX_LOG_ERR },
    { ngx_string("warn"), NGX_LOG_WARN },
    { ngx_string("notice"), NGX_LOG_NOTICE },
    { ngx_string("info"), NGX_LOG_INFO },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_bottle_commands[] = {

    { ngx_string("bottle_policy"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE12,
      ngx_bottle_policy_directive,
      0,
      0,
      NULL },

    { ngx_string("bottle_store_stale_max"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      0,
      offsetof(ngx_bottle_conf_t, stale_max),
      &ngx_bottle_stale_bounds },

    { ngx_string("bottle_store_limits"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_1MORE,
      ngx_bottle_limits_directive,
      0,
      0,
      NULL },

    { ngx_string("bottle_store_scanners"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      0,
      offsetof(ngx_bottle_conf_t, scanners),
      &ngx_bottle_scanners_bounds },

    { ngx_string("bottle_heartbeat"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE12,
      ngx_bottle_heartbeat_directive,
      0,
      0,
      NULL },

    { ngx_string("bottle_jar_zone"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      0,
      offsetof(ngx_bottle_conf_t, jar_size),
      &ngx_bottle_jar_size_bounds },

    { ngx_string("bottle_jar_bottle_max"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      0,
      offsetof(ngx_bottle_conf_t, jar_bottle_max),
      &ngx_bottle_jar_bottle_bounds },

    { ngx_string("bottle_refusal_log_level"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      0,
      offsetof(ngx_bottle_conf_t, refusal_log_level),
      &ngx_bottle_refusal_log_levels },

      ngx_null_command
};


static ngx_core_module_t  ngx_bottle_module_ctx = {
    ngx_string("bottle"),
    ngx_bottle_create_conf,                /* create conf */
    ngx_bottle_init_conf                   /* init conf */
};


ngx_uint_t  ngx_bottle_full_log;


ngx_module_t  ngx_bottle_module = {
    NGX_MODULE_V1,
    &ngx_bottle_module_ctx,                /* module context */
    ngx_bottle_commands,                   /* module directives */
    NGX_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_bottle_init_process,               /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_bottle_exit_process,               /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/*
 * A request body the size of an LLM prompt is read into one buffer of up to
 * client_body_buffer_size (the shipped configuration keeps bodies of up to
 * 512 KiB in memory, to be scanned there rather than from a temporary
 * file).  glibc maps an allocation that large afresh each time and unmaps
 * it when the request ends, or trims the heap top it came from: a page
 * fault per 4 KiB of every body.  Above the thresholds set here it still
 * does; below them freed buffers are reused.
 *
 * One arena: the thread pool's tasks (a policy's parse, a body's scan)
 * would otherwise allocate in arenas of their own, whose top glibc's
 * malloc_trim() never returns, so a removed large bottle would keep its
 * parse's pages in the worker for good (docs/control-plane.md, "Limits").
 */

#define NGX_BOTTLE_MMAP_THRESHOLD  (4 * 1024 * 1024)
#define NGX_BOTTLE_TRIM_THRESHOLD  (32 * 1024 * 1024)


static ngx_int_t
ngx_bottle_init_process(ngx_cycle_t *cycle)
{
    ngx_bottle_conf_t  *bcf;

#if (NGX_LINUX && defined __GLIBC__)

    if (mallopt(M_MMAP_THRESHOLD, NGX_BOTTLE_MMAP_THRESHOLD) != 1
        || mallopt(M_TRIM_THRESHOLD, NGX_BOTTLE_TRIM_THRESHOLD) != 1
        || mallopt(M_ARENA_MAX, 1) != 1)
    {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "bottle: mallopt() failed, large request bodies "
                      "will be allocated afresh each time");
    }

#endif

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                             ngx_bottle_module);

    ngx_bottle_zone_held_reclaim(cycle);

    ngx_bottle_conns_init_process(cycle);

    if (bcf->store && bcf->store->redis
        && ngx_bottle_store_redis_init_process(cycle, bcf->store) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_bottle_heartbeat_init_process(cycle, bcf) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_bottle_jar_init_process(cycle);
}


static void
ngx_bottle_exit_process(ngx_cycle_t *cycle)
{
    ngx_bottle_conf_t  *bcf;

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                             ngx_bottle_module);

    ngx_bottle_zone_held_reclaim(cycle);

    if (bcf->store && bcf->store->redis) {
        ngx_bottle_store_redis_exit_process(bcf->store);
    }
}


static void *
ngx_bottle_create_conf(ngx_cycle_t *cycle)
{
    ngx_bottle_conf_t  *bcf;

    /*
     * set by ngx_pcalloc():
     *
     *     bcf->path = { 0, NULL };
     *     bcf->policy = NULL;
     *     bcf->zone = NULL;
     *     bcf->jar_zone = NULL;
     */

    bcf = ngx_pcalloc(cycle->pool, sizeof(ngx_bottle_conf_t));
    if (bcf == NULL) {
        return NULL;
    }

    /* each configuration says again whether it has a full log */
    ngx_bottle_full_log = NGX_BOTTLE_FULL_LOG_UNKNOWN;

    bcf->jar_size = NGX_CONF_UNSET_SIZE;
    bcf->jar_bottle_max = NGX_CONF_UNSET_SIZE;
    bcf->stale_max = NGX_CONF_UNSET_MSEC;
    bcf->scanners = NGX_CONF_UNSET_UINT;
    bcf->heartbeat = NGX_CONF_UNSET_MSEC;
    bcf->refusal_log_level = NGX_CONF_UNSET_UINT;
    bottle_limits_default(&bcf->limits);

    return bcf;
}


#define NGX_BOTTLE_STALE_MAX  30000
#define NGX_BOTTLE_SCANNERS   1024


static char *
ngx_bottle_init_conf(ngx_cycle_t *cycle, void *conf)
{
    ngx_bottle_conf_t *bcf = conf;

    ngx_conf_init_msec_value(bcf->stale_max, NGX_BOTTLE_STALE_MAX);
    ngx_conf_init_uint_value(bcf->scanners, NGX_BOTTLE_SCANNERS);
    ngx_conf_init_msec_value(bcf->heartbeat, BOTTLE_HEARTBEAT_PERIOD_MS);
    ngx_conf_init_uint_value(bcf->refusal_log_level, NGX_LOG_INFO);

    if (bcf->store) {
        bcf->store->stale_max = bcf->stale_max;
        bcf->store->max_compiled = bcf->scanners;
    }

    if (ngx_bottle_full_log_init_conf(cycle, bcf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    return ngx_bottle_jar_init_conf(cycle, bcf);
}


/*
 * A route logged "full" on an http block without bottle_full_log_dir:
 * its records would go nowhere.  The policy file is refused (nginx does
 * not start, nginx -t fails); a bottle of the store the master read
 * before the http block was parsed is not served, with one line naming
 * it, as a worker that fetches it again refuses it
 * (ngx_bottle_full_log_check()).  The other bottles are served.
 */

static char *
ngx_bottle_full_log_init_conf(ngx_cycle_t *cycle, ngx_bottle_conf_t *bcf)
{
    char                 err[1024];
    ngx_rbtree_node_t   *node;
    ngx_bottle_entry_t  *e;

    if (ngx_bottle_full_log != NGX_BOTTLE_FULL_LOG_OFF) {
        return NGX_CONF_OK;
    }

    if (bcf->policy
        && bottle_policy_needs_full_log(bcf->policy, err, sizeof(err)) != 0)
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "bottle_policy: %s", err);
        return NGX_CONF_ERROR;
    }

    if (bcf->store == NULL || bcf->store->redis == NULL) {
        return NGX_CONF_OK;
    }

    for ( ;; ) {
        e = NULL;

        if (bcf->store->ids.root != bcf->store->ids.sentinel) {
            for (node = ngx_rbtree_min(bcf->store->ids.root,
                                       bcf->store->ids.sentinel);
                 node;
                 node = ngx_rbtree_next(&bcf->store->ids, node))
            {
                e = (ngx_bottle_entry_t *)
                        ((u_char *) node
                         - offsetof(ngx_bottle_entry_t, id_node));

                if (e->policy
                    && bottle_policy_needs_full_log(e->policy, err,
                                                    sizeof(err))
                       != 0)
                {
                    break;
                }

                e = NULL;
            }
        }

        if (e == NULL) {
            return NGX_CONF_OK;
        }

        ngx_log_error(NGX_LOG_ERR, cycle->log, 0, "bottle_policy: %s", err);

        ngx_bottle_store_remove(bcf->store, e);
    }
}


/* a bottle read from the store (a worker's thread): set before they run */

int
ngx_bottle_full_log_check(const bottle_policy_t *p, char *err, size_t errlen)
{
    if (ngx_bottle_full_log != NGX_BOTTLE_FULL_LOG_OFF) {
        return 0;
    }

    return bottle_policy_needs_full_log(p, err, errlen);
}


/*
 * bottle_store_limits policy=1m routes=4096 secret=16k store=256m: the
 * words of bottlectl --limits (lib/bottle_limits.c).  Before
 * bottle_policy, whose store the master reads at once.
 */

static char *
ngx_bottle_limits_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_bottle_conf_t *bcf = conf;

    char         err[256];
    ngx_str_t   *value;
    ngx_uint_t   i;

    if (bcf->path.data) {
        return "must come before bottle_policy";
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        if (bottle_limits_parse(&bcf->limits, (char *) value[i].data,
                                value[i].len, err, sizeof(err))
            != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "%V: %s", &cmd->name,
                               err);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


static char *
ngx_bottle_policy_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_bottle_conf_t *bcf = conf;

    char                 err[1024];
    size_t               size;
    ngx_str_t           *value, s;
    bottle_policy_t     *policy;
    ngx_pool_cleanup_t  *cln;

    if (bcf->path.data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    bcf->path = value[1];
    size = NGX_BOTTLE_ZONE_SIZE;

    if (cf->args->nelts == 3) {
        if (ngx_strncmp(value[2].data, "zone=", 5) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\"", &value[2]);
            return NGX_CONF_ERROR;
        }

        s.data = value[2].data + 5;
        s.len = value[2].len - 5;
        size = ngx_parse_size(&s);

        if (size == (size_t) NGX_ERROR || size < 8 * ngx_pagesize) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid zone size \"%V\"", &value[2]);
            return NGX_CONF_ERROR;
        }
    }

    if (bottle_store_url_is((char *) bcf->path.data)) {
        /* the bottles come from the store, in each worker */
        policy = NULL;

    } else {
        if (ngx_conf_full_name(cf->cycle, &bcf->path, 1) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        /* the lib wants a C string; ngx_conf_full_name() keeps it
           terminated */
        if (bottle_policy_load(&policy, (char *) bcf->path.data, err,
                               sizeof(err))
            != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "bottle_policy: %s",
                               err);
            return NGX_CONF_ERROR;
        }

        cln = ngx_pool_cleanup_add(cf->pool, 0);
        if (cln == NULL) {
            bottle_policy_free(policy);
            return NGX_CONF_ERROR;
        }

        cln->handler = ngx_bottle_policy_cleanup;
        cln->data = policy;

        bcf->policy = policy;

        if (bottle_policy_unsupported(policy, err, sizeof(err)) != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "bottle_policy: %s",
                               err);
            return NGX_CONF_ERROR;
        }
    }

    if (ngx_bottle_zone_add(cf, bcf, size) != NGX_OK
        || ngx_bottle_jar_zone_add(cf, bcf) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (ngx_bottle_scan_compile(cf, bcf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (policy == NULL) {
        /* a bottle read from the store is checked as a file's is */
        if (ngx_bottle_store_check_add(ngx_bottle_audit_check) != NGX_OK
            || ngx_bottle_store_check_add(ngx_bottle_full_log_check)
               != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }

        /* the master reads the store now (ngx_bottle_store_load.c) */
        bcf->store->limits = bcf->limits;

        if (ngx_bottle_store_redis_conf(cf, bcf->store, &bcf->path)
            != NGX_CONF_OK)
        {
            return NGX_CONF_ERROR;
        }

#if (NGX_THREADS)
        /* policies parsed and scanners compiled off the event loop */
        bcf->store->thread_pool = ngx_thread_pool_add(cf, NULL);
        if (bcf->store->thread_pool == NULL) {
            return NGX_CONF_ERROR;
        }
#endif

        return NGX_CONF_OK;
    }

    ngx_conf_log_error(NGX_LOG_DEBUG, cf, 0,
                       "bottle_policy \"%V\": %uz bottles", &bcf->path,
                       bottle_policy_count(policy));

    return NGX_CONF_OK;
}


static void
ngx_bottle_policy_cleanup(void *data)
{
    bottle_policy_free(data);
}


/*
 * The secret scanner's databases, compiled once per configuration: the
 * vendor rules, shared by all bottles, and each bottle's literals (its
 * canary and egress tokens in every encoding).  Workers share them after
 * fork; no request compiles anything.
 */

static char *
ngx_bottle_scan_compile(ngx_conf_t *cf, ngx_bottle_conf_t *bcf)
{
    char                 err[1024];
    size_t               i, n;
    const bottle_t      *b;
    ngx_pool_cleanup_t  *cln;
    ngx_bottle_entry_t  *e, *entries;

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    if (bottle_scan_db_create(&bcf->scan_db, err, sizeof(err)) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "bottle_policy: the secret scanner: %s", err);
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_bottle_scan_db_cleanup;
    cln->data = bcf->scan_db;

    /* response scans look for no secret, so they get a state without */

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    if (bottle_scan_secrets_create(&bcf->inbound, bcf->scan_db, NULL, NULL, 0,
                                   err, sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "bottle_policy: the secret scanner: %s", err);
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_bottle_secrets_cleanup;
    cln->data = bcf->inbound;

    bcf->store = ngx_bottle_store_create(cf->pool, bcf->scan_db, cf->log);
    if (bcf->store == NULL) {
        return NGX_CONF_ERROR;
    }

    if (bcf->policy == NULL) {
        return NGX_CONF_OK;
    }

    /* the file's bottles: entries of the cycle, compiled now */

    n = bottle_policy_count(bcf->policy);

    entries = ngx_pcalloc(cf->pool, (n ? n : 1) * sizeof(ngx_bottle_entry_t));
    if (entries == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 0; i < n; i++) {
        b = bottle_policy_at(bcf->policy, i);
        e = &entries[i];

        cln = ngx_pool_cleanup_add(cf->pool, 0);
        if (cln == NULL) {
            return NGX_CONF_ERROR;
        }

        if (bottle_scan_secrets_from_bottle(&e->secrets, bcf->scan_db, b,
                                            err, sizeof(err))
            != 0)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "bottle_policy: bottle \"%s\": the secret "
                               "scanner: %s", b->id.data, err);
            return NGX_CONF_ERROR;
        }

        cln->handler = ngx_bottle_secrets_cleanup;
        cln->data = e->secrets;

        e->bottle = b;
        e->store = bcf->store;
        e->permanent = 1;
        e->refs = 1;
        ngx_queue_init(&e->waiters);

        ngx_bottle_store_put(bcf->store, e);
    }

    return NGX_CONF_OK;
}


static void
ngx_bottle_scan_db_cleanup(void *data)
{
    bottle_scan_db_free(data);
}


static void
ngx_bottle_secrets_cleanup(void *data)
{
    bottle_scan_secrets_free(data);
}


bottle_scan_secrets_t *
ngx_bottle_inbound_secrets(void)
{
    ngx_bottle_conf_t  *bcf;

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(ngx_cycle->conf_ctx,
                                             ngx_bottle_module);

    return bcf ? bcf->inbound : NULL;
}


/* the bottles of a cycle being configured; at run time, of ngx_cycle */

ngx_bottle_store_t *
ngx_bottle_cycle_store(ngx_cycle_t *cycle)
{
    ngx_bottle_conf_t  *bcf;

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                             ngx_bottle_module);

    return bcf ? bcf->store : NULL;
}
