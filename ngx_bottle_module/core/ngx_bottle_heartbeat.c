
/*
 * The gateway's heartbeat (docs/control-plane.md, "Heartbeats"): every
 * worker of a gateway whose policy is a Redis store writes its record,
 * "bottle:heartbeat:gateway:<instance>/<worker>", every bottle_heartbeat
 * period on the policy connection it already has (one SET ... PX, no
 * reply waited for), from a timer.  Requests never touch it.  A worker
 * that cannot reach the store writes nothing: its record ages, and
 * `bottlectl status` reports it stale.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "bottle_heartbeat.h"

#include "ngx_bottle.h"
#include "ngx_bottle_store_redis.h"


typedef struct {
    ngx_event_t                 timer;
    ngx_bottle_store_redis_t   *sr;
    ngx_msec_t                  period;
    time_t                      started;
    ngx_uint_t                  workers;
    unsigned                    warned:1;
    char                        instance[BOTTLE_HEARTBEAT_ID_MAX / 2];
    char                        id[BOTTLE_HEARTBEAT_ID_MAX];
    char                        host[BOTTLE_HEARTBEAT_ID_MAX / 2];
    char                        key[BOTTLE_HEARTBEAT_KEY_LEN];
} ngx_bottle_heartbeat_t;


static void ngx_bottle_heartbeat_tick(ngx_event_t *ev);
static void ngx_bottle_heartbeat_write(ngx_bottle_heartbeat_t *hb);
static void ngx_bottle_heartbeat_reply(redisAsyncContext *ac, void *r,
    void *privdata);


/* one per worker */
static ngx_bottle_heartbeat_t  ngx_bottle_heartbeat;


/* bottle_heartbeat PERIOD|off [id=NAME] */

char *
ngx_bottle_heartbeat_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_bottle_conf_t *bcf = conf;

    ngx_str_t   *value;
    ngx_uint_t   i;
    ngx_msec_t   period;

    if (bcf->heartbeat != NGX_CONF_UNSET_MSEC) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        period = 0;

    } else {
        period = ngx_parse_time(&value[1], 0);

        if (period == (ngx_msec_t) NGX_ERROR || period < 1000
            || period > 3600 * 1000)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid period \"%V\": 1s to 1h, or off",
                               &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    for (i = 2; i < cf->args->nelts; i++) {
        if (ngx_strncmp(value[i].data, "id=", 3) != 0
            || value[i].len == 3
            || value[i].len - 3 >= sizeof(ngx_bottle_heartbeat.instance))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" (id=NAME, at most "
                               "%uz bytes)", &value[i],
                               sizeof(ngx_bottle_heartbeat.instance) - 1);
            return NGX_CONF_ERROR;
        }

        bcf->heartbeat_id.data = value[i].data + 3;
        bcf->heartbeat_id.len = value[i].len - 3;
    }

    bcf->heartbeat = period;

    return NGX_CONF_OK;
}


ngx_int_t
ngx_bottle_heartbeat_init_process(ngx_cycle_t *cycle, ngx_bottle_conf_t *bcf)
{
    size_t                   len;
    ngx_str_t                name;
    ngx_core_conf_t         *ccf;
    ngx_bottle_heartbeat_t  *hb;

    hb = &ngx_bottle_heartbeat;

    if (bcf->heartbeat == 0 || bcf->store == NULL
        || bcf->store->redis == NULL)
    {
        return NGX_OK;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    ngx_memzero(hb, sizeof(ngx_bottle_heartbeat_t));

    hb->sr = bcf->store->redis;
    hb->period = bcf->heartbeat;
    hb->started = ngx_time();
    hb->workers = ccf->master ? (ngx_uint_t) ccf->worker_processes : 1;

    len = ngx_min(cycle->hostname.len, sizeof(hb->host) - 1);
    ngx_memcpy(hb->host, cycle->hostname.data, len);
    hb->host[len] = '\0';

    name = bcf->heartbeat_id;
    if (name.len == 0) {
        name = cycle->hostname;
    }

    len = ngx_min(name.len, sizeof(hb->instance) - 1);
    ngx_memcpy(hb->instance, name.data, len);
    hb->instance[len] = '\0';

    ngx_snprintf((u_char *) hb->id, sizeof(hb->id) - 1, "%s/%ui%Z",
                 hb->instance, ccf->master ? ngx_worker : 0);
    hb->id[sizeof(hb->id) - 1] = '\0';

    (void) bottle_heartbeat_key(hb->key, BOTTLE_HEARTBEAT_GATEWAY, hb->id);

    hb->timer.handler = ngx_bottle_heartbeat_tick;
    hb->timer.data = hb;
    hb->timer.log = cycle->log;
    hb->timer.cancelable = 1;

    /* the first once the store had a moment to answer */
    ngx_add_timer(&hb->timer, ngx_min(hb->period, 1000));

    return NGX_OK;
}


static void
ngx_bottle_heartbeat_tick(ngx_event_t *ev)
{
    ngx_bottle_heartbeat_t  *hb = ev->data;

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    if (ngx_bottle_redis_ready(&hb->sr->cmd)) {
        ngx_bottle_heartbeat_write(hb);
    }

    ngx_add_timer(ev, hb->period);
}


static void
ngx_bottle_heartbeat_write(ngx_bottle_heartbeat_t *hb)
{
    char                      *json, ttl[NGX_INT64_LEN + 1];
    size_t                     argvlen[5];
    uint64_t                   max;
    ngx_msec_t                 synced;
    ngx_time_t                *tp;
    const char                *argv[5];
    ngx_rbtree_node_t         *node;
    ngx_bottle_entry_t        *e;
    ngx_bottle_store_t        *st;
    bottle_heartbeat_t         rec;
    ngx_bottle_store_redis_t  *sr;

    sr = hb->sr;
    st = sr->store;

    /* the highest version served: every bottle applied up to it */

    max = 0;

    if (st->ids.root != st->ids.sentinel) {
        for (node = ngx_rbtree_min(st->ids.root, st->ids.sentinel);
             node;
             node = ngx_rbtree_next(&st->ids, node))
        {
            e = (ngx_bottle_entry_t *) node;
            max = ngx_max(max, e->version);
        }
    }

    bottle_heartbeat_init(&rec);

    rec.kind = BOTTLE_HEARTBEAT_GATEWAY;
    rec.id = hb->id;
    rec.host = hb->host;
    rec.instance = hb->instance;
    rec.store = sr->fresh ? "up" : "syncing";
    rec.pid = ngx_pid;
    rec.master_pid = ngx_parent;
    tp = ngx_timeofday();
    rec.time_ms = (int64_t) tp->sec * 1000 + tp->msec;
    rec.period_ms = hb->period;
    rec.ttl_ms = bottle_heartbeat_ttl(hb->period);
    rec.uptime_s = ngx_time() - hb->started;
    rec.worker = ngx_worker;
    rec.workers = hb->workers;

    if (sr->loaded) {
        synced = sr->fresh_at;
        if ((ngx_msec_int_t) (sr->applied_at - synced) > 0) {
            synced = sr->applied_at;
        }

        rec.policy_version = (int64_t) max;
        rec.bottles = st->count;
        rec.since_sync_s = (ngx_current_msec - synced) / 1000;
    }

    json = bottle_heartbeat_json(&rec);
    if (json == NULL) {
        return;
    }

    ngx_snprintf((u_char *) ttl, sizeof(ttl), "%L%Z", rec.ttl_ms);

    argv[0] = "SET";
    argv[1] = hb->key;
    argv[2] = json;
    argv[3] = "PX";
    argv[4] = ttl;

    argvlen[0] = 3;
    argvlen[1] = ngx_strlen(hb->key);
    argvlen[2] = ngx_strlen(json);
    argvlen[3] = 2;
    argvlen[4] = ngx_strlen(ttl);

    (void) ngx_bottle_redis_command(&sr->cmd, ngx_bottle_heartbeat_reply, hb,
                                    5, argv, argvlen);

    free(json);
}


/* a refusal (an ACL without +set) is said once */

static void
ngx_bottle_heartbeat_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    redisReply              *reply = r;
    ngx_bottle_heartbeat_t  *hb = privdata;

    if (reply == NULL || reply->type != REDIS_REPLY_ERROR || hb->warned) {
        return;
    }

    hb->warned = 1;

    ngx_log_error(NGX_LOG_WARN, hb->timer.log, 0,
                  "bottle: policy store %s refused the heartbeat \"%s\": "
                  "%*s", hb->sr->name, hb->key, (size_t) reply->len,
                  reply->str);
}
