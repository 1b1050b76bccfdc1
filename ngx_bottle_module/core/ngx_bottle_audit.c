
/*
 * The audit journal (docs/control-plane.md, "Audit events"): a core module
 * of its own, with its directives.  Each worker keeps a bounded ring of
 * serialized events and writes them to the bottle:audit stream on its own
 * Redis connection, a few commands in flight; an event leaves the ring
 * only when Redis acknowledged it.  A full ring drops its oldest event;
 * once delivery resumes, one audit.truncation_detected event says how many
 * were lost.  Nothing here blocks the worker.
 *
 * First contacts go through a script that records the (bottle, host) pair
 * in a set and writes the event only if the pair is new, so the journal
 * holds one first contact per pair however many workers and gateways saw
 * it; a per-worker cache of acknowledged pairs runs the script once per
 * pair per worker.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_bottle.h"
#include "ngx_bottle_audit.h"


static void *ngx_bottle_audit_create_conf(ngx_cycle_t *cycle);
static char *ngx_bottle_audit_init_conf(ngx_cycle_t *cycle, void *conf);
static char *ngx_bottle_audit_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static void ngx_bottle_audit_unlist(ngx_cycle_t *cycle,
    ngx_bottle_store_t *st);
static ngx_int_t ngx_bottle_audit_init_process(ngx_cycle_t *cycle);
static void ngx_bottle_audit_exit_process(ngx_cycle_t *cycle);
static void ngx_bottle_audit_state(ngx_bottle_redis_t *rd, ngx_uint_t up);
static void ngx_bottle_audit_drop_head(void);
static void ngx_bottle_audit_flush(void);
static void ngx_bottle_audit_send_truncation(void);
static void ngx_bottle_audit_waited(ngx_bottle_audit_entry_t *e,
    ngx_uint_t replicated);
static void ngx_bottle_audit_reply(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_audit_truncation_reply(redisAsyncContext *ac, void *r,
    void *privdata);
static ngx_uint_t ngx_bottle_audit_late(redisReply *reply);
static void ngx_bottle_audit_take_back(ngx_bottle_audit_entry_t *e,
    redisReply *reply);


ngx_bottle_audit_t  ngx_bottle_audit;


/* at least one event; a stream keeps at least a thousand */
static ngx_conf_num_bounds_t  ngx_bottle_audit_queue_bounds = {
    ngx_conf_check_num_bounds, 1, 10000000
};

static ngx_conf_num_bounds_t  ngx_bottle_audit_stream_bounds = {
    ngx_conf_check_num_bounds, 1000, NGX_MAX_INT_T_VALUE
};


static ngx_command_t  ngx_bottle_audit_commands[] = {

    { ngx_string("bottle_audit"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_bottle_audit_directive,
      0,
      0,
      NULL },

    { ngx_string("bottle_audit_queue"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      0,
      offsetof(ngx_bottle_audit_conf_t, queue),
      &ngx_bottle_audit_queue_bounds },

    { ngx_string("bottle_audit_stream_max"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      0,
      offsetof(ngx_bottle_audit_conf_t, stream_max),
      &ngx_bottle_audit_stream_bounds },

    { ngx_string("bottle_audit_timeout"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      0,
      offsetof(ngx_bottle_audit_conf_t, timeout),
      NULL },

      ngx_null_command
};


static ngx_core_module_t  ngx_bottle_audit_module_ctx = {
    ngx_string("bottle_audit"),
    ngx_bottle_audit_create_conf,          /* create conf */
    ngx_bottle_audit_init_conf             /* init conf */
};


ngx_module_t  ngx_bottle_audit_module = {
    NGX_MODULE_V1,
    &ngx_bottle_audit_module_ctx,          /* module context */
    ngx_bottle_audit_commands,             /* module directives */
    NGX_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_bottle_audit_init_process,         /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_bottle_audit_exit_process,         /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_bottle_audit_create_conf(ngx_cycle_t *cycle)
{
    ngx_bottle_audit_conf_t  *acf;

    /*
     * set by ngx_pcalloc():
     *
     *     acf->url = { 0, NULL };
     *     acf->store_url = NULL;
     *     acf->addr = { 0, NULL };
     */

    acf = ngx_pcalloc(cycle->pool, sizeof(ngx_bottle_audit_conf_t));
    if (acf == NULL) {
        return NULL;
    }

    acf->off = NGX_CONF_UNSET;
    acf->queue = NGX_CONF_UNSET;
    acf->stream_max = NGX_CONF_UNSET;
    acf->timeout = NGX_CONF_UNSET_MSEC;

    return acf;
}


/*
 * bottle_audit's default is the policy store when bottle_policy is a
 * store URL, else off.  A journal that is off cannot honour a bottle's
 * audit.delivery: "required": a file's bottles are checked here, a store's
 * as they are read (ngx_bottle_audit_check).
 */

static char *
ngx_bottle_audit_init_conf(ngx_cycle_t *cycle, void *conf)
{
    ngx_bottle_audit_conf_t *acf = conf;

    char                       err[1024];
    ngx_bottle_conf_t         *bcf;
    const bottle_store_url_t  *u;

    ngx_conf_init_value(acf->queue, NGX_BOTTLE_AUDIT_QUEUE);
    ngx_conf_init_value(acf->stream_max, NGX_BOTTLE_AUDIT_STREAM_MAX);
    ngx_conf_init_msec_value(acf->timeout, NGX_BOTTLE_AUDIT_TIMEOUT);

    bcf = (ngx_bottle_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                             ngx_bottle_module);

    if (acf->off == NGX_CONF_UNSET) {
        acf->off = 1;

        u = (bcf && bcf->store) ? ngx_bottle_store_redis_url(bcf->store,
                                                             &acf->addr)
                                : NULL;
        if (u) {
            acf->store_url = (bottle_store_url_t *) u;
            bottle_store_url_print(u, acf->name, sizeof(acf->name));
            acf->off = 0;
        }
    }

    if (acf->off && bcf && bcf->policy
        && bottle_policy_needs_journal(bcf->policy, err, sizeof(err)) != 0)
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0, "bottle_policy: %s", err);
        return NGX_CONF_ERROR;
    }

    if (acf->off && bcf && bcf->store && bcf->store->redis) {
        ngx_bottle_audit_unlist(cycle, bcf->store);
    }

    return NGX_CONF_OK;
}


/*
 * The store's bottles the master read while the configuration was parsed,
 * before it was known whether the journal is on: those requiring delivery
 * are not served (a worker that fetches one again refuses it the same way,
 * ngx_bottle_audit_check).
 */

static void
ngx_bottle_audit_unlist(ngx_cycle_t *cycle, ngx_bottle_store_t *st)
{
    char                 err[1024];
    bottle_policy_t     *p;
    ngx_rbtree_node_t   *node;
    ngx_bottle_entry_t  *e;

    for ( ;; ) {
        e = NULL;

        if (st->ids.root != st->ids.sentinel) {
            for (node = ngx_rbtree_min(st->ids.root, st->ids.sentinel);
                 node;
                 node = ngx_rbtree_next(&st->ids, node))
            {
                e = (ngx_bottle_entry_t *)
                        ((u_char *) node
                         - offsetof(ngx_bottle_entry_t, id_node));

                if (e->bottle->audit_required) {
                    break;
                }

                e = NULL;
            }
        }

        if (e == NULL) {
            return;
        }

        p = e->policy;

        if (p && bottle_policy_needs_journal(p, err, sizeof(err)) != 0) {
            ngx_log_error(NGX_LOG_ERR, cycle->log, 0, "bottle_policy: %s",
                          err);
        }

        ngx_bottle_store_remove(st, e);
    }
}


static char *
ngx_bottle_audit_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_bottle_audit_conf_t *acf = conf;

    char        err[256];
    ngx_str_t  *value;

    if (acf->off != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strncmp(value[1].data, "off", 3) == 0) {
        acf->off = 1;
        return NGX_CONF_OK;
    }

    acf->store_url = ngx_pcalloc(cf->pool, sizeof(bottle_store_url_t));
    if (acf->store_url == NULL) {
        return NGX_CONF_ERROR;
    }

    if (bottle_store_url_parse(acf->store_url, (char *) value[1].data, err,
                               sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "bottle_audit: store URL: %s", err);
        return NGX_CONF_ERROR;
    }

    acf->url = value[1];
    acf->off = 0;
    bottle_store_url_print(acf->store_url, acf->name, sizeof(acf->name));

    if (ngx_bottle_redis_resolve(cf->pool, acf->store_url, &acf->addr)
        != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "bottle_audit: store host \"%s\" could not be "
                           "resolved", acf->store_url->host);
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_bottle_audit_init_process(ngx_cycle_t *cycle)
{
    ngx_bottle_audit_t       *a = &ngx_bottle_audit;
    ngx_bottle_audit_conf_t  *acf;

    /* refusals reach the journal through core's observers */

    if (ngx_bottle_refusal_observe(ngx_bottle_audit_refusal) != NGX_OK) {
        return NGX_ERROR;
    }

    acf = (ngx_bottle_audit_conf_t *) ngx_get_conf(cycle->conf_ctx,
                                                   ngx_bottle_audit_module);

    ngx_memzero(a, sizeof(ngx_bottle_audit_t));

    a->known = 1;

    /* events of other producers' scripts name the gateway too */

    a->gateway_len = ngx_snprintf(a->gateway, sizeof(a->gateway), "%V:%P",
                                  &cycle->hostname, ngx_pid)
                     - a->gateway;
    *ngx_snprintf((u_char *) a->maxlen, sizeof(a->maxlen) - 1, "%i",
                  acf ? acf->stream_max : NGX_BOTTLE_AUDIT_STREAM_MAX)
        = '\0';

    if (acf == NULL || acf->off || acf->store_url == NULL) {
        return NGX_OK;
    }

    a->ring = ngx_calloc(acf->queue * sizeof(ngx_bottle_audit_entry_t),
                         cycle->log);
    if (a->ring == NULL) {
        return NGX_ERROR;
    }

    a->conf = acf;
    a->log = cycle->log;
    a->cap = acf->queue;
    ngx_queue_init(&a->waiters);
    ngx_rbtree_init(&a->bottles, &a->sentinel, ngx_str_rbtree_insert_value);

    a->rd.url = acf->store_url;
    a->rd.addr = acf->addr;
    a->rd.role = "audit";
    a->rd.log = cycle->log;
    a->rd.ping = NGX_BOTTLE_AUDIT_PING;
    a->rd.handler = ngx_bottle_audit_state;
    a->rd.data = a;

    a->on = 1;

    ngx_log_error(NGX_LOG_INFO, cycle->log, 0, "bottle: audit journal %s",
                  acf->name);

    return ngx_bottle_redis_start(&a->rd);
}


/* what is still queued is lost (docs/control-plane.md) */

static void
ngx_bottle_audit_exit_process(ngx_cycle_t *cycle)
{
    ngx_bottle_audit_t  *a = &ngx_bottle_audit;

    if (!a->on) {
        return;
    }

    ngx_bottle_redis_stop(&a->rd);

    if (a->tail != a->head) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "bottle: audit journal: %uL events not delivered at "
                      "exit", a->tail - a->head);
    }

    while (a->head != a->tail) {
        ngx_bottle_audit_entry_t  *e = &a->ring[a->head % a->cap];

        free(e->json);
        if (e->key) {
            ngx_free(e->key);
        }

        a->head++;
    }

    ngx_free(a->ring);
    a->on = 0;
}


ngx_uint_t
ngx_bottle_audit_enabled(void)
{
    return ngx_bottle_audit.on;
}


/*
 * A bottle read from the store, in a thread: set before the workers'
 * threads run, read only.  In the master (the store read at
 * configuration) nothing is known yet.
 */

int
ngx_bottle_audit_check(const bottle_policy_t *p, char *err, size_t errlen)
{
    /* the master, reading the store while the configuration is parsed,
       does not know yet: ngx_bottle_audit_init_conf() decides for it */

    if (ngx_bottle_audit.on || !ngx_bottle_audit.known) {
        return 0;
    }

    return bottle_policy_needs_journal(p, err, errlen);
}


static void
ngx_bottle_audit_state(ngx_bottle_redis_t *rd, ngx_uint_t up)
{
    if (up) {
        ngx_bottle_audit_flush();
    }

    /* lost: every pending reply comes back NULL, and is sent again */
}


/*
 * Into the ring: a full ring drops its oldest event, but a required first
 * contact is refused instead (NGX_DECLINED).
 */

ngx_int_t
ngx_bottle_audit_push(bottle_audit_event_t *e, ngx_bottle_contact_t *ct,
    ngx_uint_t required)
{
    char                      rnd[BOTTLE_AUDIT_RANDOM_LEN];
    u_char                   *key;
    ngx_bottle_audit_t       *a = &ngx_bottle_audit;
    ngx_bottle_audit_entry_t *entry;

    if (a->tail - a->head >= a->cap) {
        if (required) {
            return NGX_DECLINED;
        }

        ngx_bottle_audit_drop_head();
    }

    if (e->correlation_id.len == 0 && e->type != BOTTLE_AUDIT_TRUNCATION
        && bottle_audit_random_id(rnd) == 0)
    {
        /* no request id known (a front refusal): one of the event's own */
        e->correlation_id.data = rnd;
        e->correlation_id.len = BOTTLE_AUDIT_RANDOM_LEN - 1;
    }

    key = NULL;

    if (ct) {
        key = ngx_alloc(ct->bottle->id.len + ct->host.len, a->log);
        if (key == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(key, ct->bottle->id.data, ct->bottle->id.len);
        ngx_memcpy(key + ct->bottle->id.len, ct->host.data, ct->host.len);
    }

    entry = &a->ring[a->tail % a->cap];

    entry->json = bottle_audit_chained(e, &entry->len);
    if (entry->json == NULL) {
        if (key) {
            ngx_free(key);
        }

        ngx_log_error(NGX_LOG_ALERT, a->log, 0,
                      "bottle: audit event could not be built");
        return NGX_ERROR;
    }

    entry->key = key;
    entry->id_len = ct ? ct->bottle->id.len : 0;
    entry->host_len = ct ? ct->host.len : 0;
    entry->at = e->time_ms;

    /*
     * a first contact its request waits for: written only while the
     * request still waits (the script checks the deadline)
     */
    entry->deadline = (ct && required) ? e->time_ms + a->conf->timeout : 0;
    entry->abandoned = 0;

    a->tail++;
    ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_AUDIT_QUEUED,
                                  a->tail - a->head);

    ngx_bottle_audit_flush();

    return NGX_OK;
}


/* an entry's first contact out of the worker's cache, unless acknowledged */
void
ngx_bottle_audit_contact_forget(ngx_bottle_audit_entry_t *e)
{
    ngx_str_t                 id, host;
    ngx_bottle_audit_host_t  *h;

    id.data = e->key;
    id.len = e->id_len;
    host.data = e->key + e->id_len;
    host.len = e->host_len;

    h = ngx_bottle_audit_cache(&id, &host, 0);
    if (h && !h->acked) {
        ngx_bottle_audit_cache_forget(h);
    }
}


static void
ngx_bottle_audit_drop_head(void)
{
    ngx_bottle_audit_t        *a = &ngx_bottle_audit;
    ngx_bottle_audit_entry_t  *e;

    e = &a->ring[a->head % a->cap];

    ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_AUDIT_DROPPED);

    if (a->dropped++ == 0) {
        a->first_dropped = e->at;
    }

    a->last_dropped = e->at;

    if (e->key) {
        /* a later request of the pair runs the script again */
        ngx_bottle_audit_contact_forget(e);
        ngx_free(e->key);
    }

    ngx_bottle_audit_wake(a->head, NGX_DECLINED,
                          "the audit journal could not record the first "
                          "contact: the audit queue overflowed");

    free(e->json);
    ngx_memzero(e, sizeof(ngx_bottle_audit_entry_t));

    a->head++;
    ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_AUDIT_QUEUED,
                                  a->tail - a->head);

    if (a->sent < a->head) {
        a->sent = a->head;
    }
}


/* send what waits, a few commands in flight, the truncation first */

static void
ngx_bottle_audit_flush(void)
{
    int                        argc;
    u_char                     deadline[NGX_INT64_LEN + 1];
    const char                *argv[9];
    size_t                     argvlen[9];
    ngx_bottle_audit_t        *a = &ngx_bottle_audit;
    ngx_bottle_audit_entry_t  *e;

    if (!ngx_bottle_redis_ready(&a->rd)) {
        return;
    }

    if (a->dropped && !a->trunc_inflight) {
        ngx_bottle_audit_send_truncation();
    }

    while (a->sent < a->tail && a->inflight < NGX_BOTTLE_AUDIT_INFLIGHT) {
        e = &a->ring[a->sent % a->cap];
        argc = 0;

        if (e->key) {
            argv[argc] = "EVAL";
            argvlen[argc++] = 4;
            argv[argc] = bottle_audit_contact_script;
            argvlen[argc++] = ngx_strlen(bottle_audit_contact_script);
            argv[argc] = "0";
            argvlen[argc++] = 1;
            argv[argc] = (const char *) e->key;
            argvlen[argc++] = e->id_len;
            argv[argc] = (const char *) e->key + e->id_len;
            argvlen[argc++] = e->host_len;
            argv[argc] = a->maxlen;
            argvlen[argc++] = ngx_strlen(a->maxlen);
            argv[argc] = e->json;
            argvlen[argc++] = e->len;

            /* a refused request's contact: a deadline long past */
            argv[argc] = (const char *) deadline;
            argvlen[argc++] = ngx_sprintf(deadline, "%L",
                                          e->abandoned ? (int64_t) 1
                                                       : e->deadline)
                              - deadline;

        } else {
            argv[argc] = "EVAL";
            argvlen[argc++] = 4;
            argv[argc] = bottle_audit_append_script;
            argvlen[argc++] = ngx_strlen(bottle_audit_append_script);
            argv[argc] = "0";
            argvlen[argc++] = 1;
            argv[argc] = a->maxlen;
            argvlen[argc++] = ngx_strlen(a->maxlen);
            argv[argc] = e->json;
            argvlen[argc++] = e->len;
        }

        if (ngx_bottle_redis_command(&a->rd, ngx_bottle_audit_reply,
                                     (void *) (uintptr_t) a->sent, argc, argv,
                                     argvlen)
            != NGX_OK)
        {
            ngx_bottle_redis_reset(&a->rd, "a command could not be sent");
            return;
        }

        a->sent++;
        a->inflight++;

        /* through Sentinel, a replica's copy before the acknowledgement */

        e->waiting = 0;
        e->written = 0;

        if (e->key && e->deadline && !e->abandoned
            && a->rd.url->nsentinels
            && ngx_bottle_audit_wait_send(e, a->sent - 1,
                                          ngx_bottle_audit_waited)
               != NGX_OK)
        {
            ngx_bottle_redis_reset(&a->rd, "a command could not be sent");
            return;
        }
    }
}


/* the queue's head's WAIT answered (ngx_bottle_audit_wait.c) */

static void
ngx_bottle_audit_waited(ngx_bottle_audit_entry_t *e, ngx_uint_t replicated)
{
    ngx_bottle_audit_t  *a = &ngx_bottle_audit;

    if (replicated) {
        ngx_bottle_audit_acked(e);

    } else {
        ngx_bottle_audit_contact_forget(e);
        ngx_free(e->key);
        e->key = NULL;

        ngx_bottle_audit_wake(a->head, NGX_DECLINED,
                              "the audit journal could not record the first "
                              "contact: no replica acknowledged it in time");
    }

    ngx_bottle_audit_next();
}


static void
ngx_bottle_audit_send_truncation(void)
{
    u_char                id[128];
    char                 *json;
    size_t                len;
    const char           *argv[5];
    size_t                argvlen[5];
    ngx_bottle_audit_t   *a = &ngx_bottle_audit;
    bottle_audit_event_t  e;

    ngx_bottle_audit_common(&e, BOTTLE_AUDIT_TRUNCATION, NULL, NULL, NULL, id,
                            sizeof(id));

    e.dropped = a->dropped;
    e.first_dropped_ms = a->first_dropped;
    e.last_dropped_ms = a->last_dropped;

    json = bottle_audit_chained(&e, &len);
    if (json == NULL) {
        return;
    }

    argv[0] = "EVAL";
    argv[1] = bottle_audit_append_script;
    argv[2] = "0";
    argv[3] = a->maxlen;
    argv[4] = json;

    argvlen[0] = 4;
    argvlen[1] = ngx_strlen(bottle_audit_append_script);
    argvlen[2] = 1;
    argvlen[3] = ngx_strlen(a->maxlen);
    argvlen[4] = len;

    /* hiredis has copied the command when this returns */

    if (ngx_bottle_redis_command(&a->rd, ngx_bottle_audit_truncation_reply,
                                 NULL, 5, argv, argvlen)
        == NGX_OK)
    {
        a->trunc = a->dropped;
        a->trunc_first = a->first_dropped;
        a->trunc_last = a->last_dropped;
        a->trunc_inflight = 1;
        a->dropped = 0;

        ngx_log_error(NGX_LOG_WARN, a->log, 0,
                      "bottle: audit journal: %uL events were dropped",
                      a->trunc);
    }

    free(json);
}


static void
ngx_bottle_audit_truncation_reply(redisAsyncContext *ac, void *r,
    void *privdata)
{
    redisReply          *reply = r;
    ngx_bottle_audit_t  *a = &ngx_bottle_audit;

    a->trunc_inflight = 0;

    if (reply && reply->type != REDIS_REPLY_ERROR) {
        a->trunc = 0;
        return;
    }

    /* not written: reported again, with what was dropped since */

    if (a->dropped == 0) {
        a->last_dropped = a->trunc_last;
    }

    a->dropped += a->trunc;
    a->first_dropped = a->trunc_first;
    a->trunc = 0;
}


static void
ngx_bottle_audit_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    uint64_t                   seq = (uintptr_t) privdata;
    redisReply                *reply = r;
    ngx_bottle_audit_t        *a = &ngx_bottle_audit;
    ngx_bottle_audit_entry_t  *e;

    a->inflight--;

    if (reply == NULL) {
        /* the connection went: all that was sent goes again */
        a->sent = a->head;
        return;
    }

    if (seq != a->head) {
        /* dropped from a full ring while in flight */
        ngx_bottle_audit_flush();
        return;
    }

    e = &a->ring[a->head % a->cap];

    if (reply->type == REDIS_REPLY_ERROR) {
        /* a store that refuses the event would refuse it again */
        if (!a->error_logged) {
            ngx_log_error(NGX_LOG_ERR, a->log, 0,
                          "bottle: audit journal %s refused an event: %*s",
                          a->conf->name, ngx_min(reply->len, 200),
                          reply->str);
            a->error_logged = 1;
        }

        ngx_bottle_audit_drop_head();
        ngx_bottle_audit_flush();
        return;
    }

    if (e->key && (e->abandoned || ngx_bottle_audit_late(reply))) {
        /*
         * not recorded for a request that was refused (or past its
         * deadline: refused now); written all the same (the clocks of
         * the gateway and Redis disagree), it is taken back
         */
        ngx_bottle_audit_take_back(e, reply);

        ngx_bottle_audit_wake(a->head, NGX_DECLINED,
                              "the audit journal could not record the first "
                              "contact: no acknowledgement in time");

    } else if (e->key && e->waiting) {
        /* ngx_bottle_audit_waited() goes on */
        e->written = 1;
        return;

    } else if (e->key) {
        ngx_bottle_audit_acked(e);

    } else {
        ngx_bottle_audit_wake(a->head, NGX_OK, NULL);
    }

    ngx_bottle_audit_next();
}


void
ngx_bottle_audit_acked(ngx_bottle_audit_entry_t *e)
{
    ngx_str_t                 id, host;
    ngx_bottle_audit_host_t  *h;
    ngx_bottle_audit_t       *a = &ngx_bottle_audit;

    id.data = e->key;
    id.len = e->id_len;
    host.data = e->key + e->id_len;
    host.len = e->host_len;

    h = ngx_bottle_audit_cache(&id, &host, 1);
    if (h) {
        h->acked = 1;
    }

    ngx_free(e->key);
    e->key = NULL;
    ngx_bottle_audit_wake(a->head, NGX_OK, NULL);
}


/* the head is done with: the next one */

void
ngx_bottle_audit_next(void)
{
    ngx_bottle_audit_t        *a = &ngx_bottle_audit;
    ngx_bottle_audit_entry_t  *e;

    e = &a->ring[a->head % a->cap];

    free(e->json);
    ngx_memzero(e, sizeof(ngx_bottle_audit_entry_t));

    a->head++;
    ngx_bottle_metrics_worker_set(NGX_BOTTLE_WORKER_AUDIT_QUEUED,
                                  a->tail - a->head);

    if (a->sent < a->head) {
        a->sent = a->head;
    }

    ngx_bottle_audit_flush();
}


/* the script's -1: past the deadline, nothing written */

static ngx_uint_t
ngx_bottle_audit_late(redisReply *reply)
{
    return reply->type == REDIS_REPLY_INTEGER && reply->integer < 0;
}


/*
 * A first contact that must not stand: the pair out of the worker's
 * cache (a later request runs the script again) and, if the script wrote
 * it after all, its entry and the pair taken out of Redis again.  Frees
 * the key.
 */

static void
ngx_bottle_audit_take_back(ngx_bottle_audit_entry_t *e, redisReply *reply)
{
    u_char                   *set;
    ngx_str_t                 id, host;
    const char               *argv[4];
    size_t                    argvlen[4];
    ngx_bottle_audit_t       *a = &ngx_bottle_audit;

    ngx_bottle_audit_contact_forget(e);

    id.data = e->key;
    id.len = e->id_len;
    host.data = e->key + e->id_len;
    host.len = e->host_len;

    if (reply->type == REDIS_REPLY_STRING) {
        ngx_log_error(NGX_LOG_WARN, a->log, 0,
                      "bottle: audit journal: the first contact of "
                      "bottle \"%V\" with \"%V\" was written after its "
                      "request was refused (the gateway's and Redis's "
                      "clocks differ?); taken back if still the chain's "
                      "newest event", &id, &host);

        /* out of the chain only where that leaves the chain whole */
        argv[0] = "EVAL";
        argvlen[0] = 4;
        argv[1] = bottle_audit_takeback_script;
        argvlen[1] = ngx_strlen(bottle_audit_takeback_script);
        argv[2] = "0";
        argvlen[2] = 1;
        argv[3] = reply->str;
        argvlen[3] = reply->len;

        (void) ngx_bottle_redis_command(&a->rd, NULL, NULL, 4, argv,
                                        argvlen);

        set = ngx_alloc(sizeof(BOTTLE_STORE_CONTACTS_PREFIX) - 1 + id.len,
                        a->log);
        if (set != NULL) {
            ngx_memcpy(ngx_cpymem(set, BOTTLE_STORE_CONTACTS_PREFIX,
                                  sizeof(BOTTLE_STORE_CONTACTS_PREFIX) - 1),
                       id.data, id.len);

            argv[0] = "SREM";
            argvlen[0] = 4;
            argv[1] = (const char *) set;
            argvlen[1] = sizeof(BOTTLE_STORE_CONTACTS_PREFIX) - 1 + id.len;
            argv[2] = (const char *) host.data;
            argvlen[2] = host.len;

            /* hiredis has copied the command when this returns */
            (void) ngx_bottle_redis_command(&a->rd, NULL, NULL, 3, argv,
                                            argvlen);
            ngx_free(set);
        }
    }

    ngx_free(e->key);
    e->key = NULL;
}


/*
 * The request that waited for the first contact seq was refused (no
 * acknowledgement in time) or went away: its contact did not happen, so
 * the event is not to be written (sent already, the script's deadline
 * keeps it out; written all the same, the reply takes it back).
 */

void
ngx_bottle_audit_abandon(uint64_t seq)
{
    ngx_bottle_audit_t  *a = &ngx_bottle_audit;

    if (seq < a->head || seq >= a->tail) {
        return;
    }

    a->ring[seq % a->cap].abandoned = 1;
}
