
/*
 * Held requests (gateway.txt "Under supervise", docs/dlp.md "Held
 * requests"): a core module of its own, with its directives.  A DLP finding
 * on a route with on_match: supervise is held here: an egress-token-allow
 * proposal is queued with the propose script (lib/bottle_proposal.h) and
 * the request waits for its decision or a timer.  Each worker keeps two
 * connections to the control plane: one runs the scripts and reads the
 * decisions, the other SUBSCRIBEs to bottle:decisions; a message naming a
 * proposal this worker holds has its decision read.  Once subscribed again
 * after a loss, every held proposal's state is read, so no decision falls
 * between two connections.  Nothing here blocks the worker.
 *
 * The bound is per bottle, across the workers (the shared zone): so many
 * requests held at once, so many bytes of their bodies.  Beyond it a
 * request is refused at once.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include <jansson.h>

#include "bottle_audit.h"
#include "ngx_bottle.h"
#include "ngx_bottle_redis.h"
#include "ngx_bottle_supervise.h"


#define NGX_BOTTLE_SUPERVISE_TIMEOUT   300000  /* ms: gateway.txt's 300 s */
#define NGX_BOTTLE_SUPERVISE_HELD      8
#define NGX_BOTTLE_SUPERVISE_BODY      (8 * 1024 * 1024)
#define NGX_BOTTLE_SUPERVISE_PING      1000

static void *ngx_bottle_supervise_create_conf(ngx_cycle_t *cycle);
static char *ngx_bottle_supervise_init_conf(ngx_cycle_t *cycle, void *conf);
static char *ngx_bottle_supervise_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_bottle_supervise_init_process(ngx_cycle_t *cycle);
static void ngx_bottle_supervise_exit_process(ngx_cycle_t *cycle);
static void ngx_bottle_supervise_state(ngx_bottle_redis_t *rd,
    ngx_uint_t up);
static void ngx_bottle_supervise_message(redisAsyncContext *ac, void *r,
    void *privdata);
static void ngx_bottle_supervise_resync(void);
ngx_bottle_supervise_t  ngx_bottle_supervise;



static ngx_conf_num_bounds_t  ngx_bottle_supervise_held_bounds = {
    ngx_conf_check_num_bounds, 1, 100000
};


static ngx_command_t  ngx_bottle_supervise_commands[] = {

    { ngx_string("bottle_supervise"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_bottle_supervise_directive,
      0,
      0,
      NULL },

    { ngx_string("bottle_supervise_timeout"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      0,
      offsetof(ngx_bottle_supervise_conf_t, timeout),
      NULL },

    { ngx_string("bottle_supervise_held"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      0,
      offsetof(ngx_bottle_supervise_conf_t, held),
      &ngx_bottle_supervise_held_bounds },

    { ngx_string("bottle_supervise_held_body"),
      NGX_MAIN_CONF|NGX_DIRECT_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      0,
      offsetof(ngx_bottle_supervise_conf_t, held_body),
      NULL },

      ngx_null_command
};


static ngx_core_module_t  ngx_bottle_supervise_module_ctx = {
    ngx_string("bottle_supervise"),
    ngx_bottle_supervise_create_conf,      /* create conf */
    ngx_bottle_supervise_init_conf         /* init conf */
};


ngx_module_t  ngx_bottle_supervise_module = {
    NGX_MODULE_V1,
    &ngx_bottle_supervise_module_ctx,      /* module context */
    ngx_bottle_supervise_commands,         /* module directives */
    NGX_CORE_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    ngx_bottle_supervise_init_process,     /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_bottle_supervise_exit_process,     /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_bottle_supervise_create_conf(ngx_cycle_t *cycle)
{
    ngx_bottle_supervise_conf_t  *scf;

    /*
     * set by ngx_pcalloc():
     *
     *     scf->store_url = NULL;
     *     scf->addr = { 0, NULL };
     *     scf->name = "";
     */

    scf = ngx_pcalloc(cycle->pool, sizeof(ngx_bottle_supervise_conf_t));
    if (scf == NULL) {
        return NULL;
    }

    scf->off = NGX_CONF_UNSET;
    scf->timeout = NGX_CONF_UNSET_MSEC;
    scf->held = NGX_CONF_UNSET_UINT;
    scf->held_body = NGX_CONF_UNSET_SIZE;

    return scf;
}


/* off unless set: a supervise route then blocks (gateway.txt) */

static char *
ngx_bottle_supervise_init_conf(ngx_cycle_t *cycle, void *conf)
{
    ngx_bottle_supervise_conf_t *scf = conf;

    ngx_conf_init_value(scf->off, 1);
    ngx_conf_init_msec_value(scf->timeout, NGX_BOTTLE_SUPERVISE_TIMEOUT);
    ngx_conf_init_uint_value(scf->held, NGX_BOTTLE_SUPERVISE_HELD);
    ngx_conf_init_size_value(scf->held_body, NGX_BOTTLE_SUPERVISE_BODY);

    return NGX_CONF_OK;
}


static char *
ngx_bottle_supervise_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_bottle_supervise_conf_t *scf = conf;

    char        err[256];
    ngx_str_t  *value;

    if (scf->off != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strncmp(value[1].data, "off", 3) == 0) {
        scf->off = 1;
        return NGX_CONF_OK;
    }

    scf->store_url = ngx_pcalloc(cf->pool, sizeof(bottle_store_url_t));
    if (scf->store_url == NULL) {
        return NGX_CONF_ERROR;
    }

    if (bottle_store_url_parse(scf->store_url, (char *) value[1].data, err,
                               sizeof(err))
        != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "bottle_supervise: store URL: %s", err);
        return NGX_CONF_ERROR;
    }

    bottle_store_url_print(scf->store_url, scf->name, sizeof(scf->name));

    if (ngx_bottle_redis_resolve(cf->pool, scf->store_url, &scf->addr)
        != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "bottle_supervise: store host \"%s\" could not "
                           "be resolved", scf->store_url->host);
        return NGX_CONF_ERROR;
    }

    scf->off = 0;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_bottle_supervise_init_process(ngx_cycle_t *cycle)
{
    ngx_bottle_supervise_t       *s = &ngx_bottle_supervise;
    ngx_bottle_supervise_conf_t  *scf;

    scf = (ngx_bottle_supervise_conf_t *)
              ngx_get_conf(cycle->conf_ctx, ngx_bottle_supervise_module);

    ngx_memzero(s, sizeof(ngx_bottle_supervise_t));

    if (scf == NULL || scf->off || scf->store_url == NULL) {
        return NGX_OK;
    }

    s->conf = scf;
    s->log = cycle->log;
    ngx_rbtree_init(&s->holds, &s->sentinel, ngx_str_rbtree_insert_value);

    s->cmd.url = scf->store_url;
    s->cmd.addr = scf->addr;
    s->cmd.role = "supervise";
    s->cmd.log = cycle->log;
    s->cmd.ping = NGX_BOTTLE_SUPERVISE_PING;
    s->cmd.handler = ngx_bottle_supervise_state;
    s->cmd.data = s;

    s->sub = s->cmd;
    s->sub.role = "decisions";
    s->sub.ping = 0;

    s->on = 1;

    ngx_log_error(NGX_LOG_INFO, cycle->log, 0,
                  "bottle: held requests go to the operator through %s",
                  scf->name);

    if (ngx_bottle_redis_start(&s->cmd) != NGX_OK
        || ngx_bottle_redis_start(&s->sub) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the held requests' replies come back NULL: they are refused */

static void
ngx_bottle_supervise_exit_process(ngx_cycle_t *cycle)
{
    ngx_bottle_supervise_t  *s = &ngx_bottle_supervise;

    if (!s->on) {
        return;
    }

    ngx_bottle_redis_stop(&s->sub);
    ngx_bottle_redis_stop(&s->cmd);
    s->on = 0;
}


ngx_uint_t
ngx_bottle_supervise_enabled(void)
{
    return ngx_bottle_supervise.on;
}


static void
ngx_bottle_supervise_state(ngx_bottle_redis_t *rd, ngx_uint_t up)
{
    const char              *argv[2];
    ngx_bottle_supervise_t  *s = rd->data;

    if (!up) {
        if (rd == &s->sub) {
            s->subscribed = 0;

        } else {
            ngx_bottle_redis_reset(&s->sub, "the supervise connection was "
                                            "lost");
        }

        /* the held requests wait on: their timers still run */
        return;
    }

    if (rd == &s->sub) {
        argv[0] = "SUBSCRIBE";
        argv[1] = BOTTLE_DECISIONS_CHANNEL;

        if (ngx_bottle_redis_command(rd, ngx_bottle_supervise_message, s, 2,
                                     argv, NULL)
            != NGX_OK)
        {
            ngx_bottle_redis_reset(rd, "SUBSCRIBE could not be sent");
        }

        return;
    }

    if (s->subscribed) {
        ngx_bottle_supervise_resync();
    }
}


/* bottle:decisions: "<id> <state>"; a proposal held here is read again */

static void
ngx_bottle_supervise_message(redisAsyncContext *ac, void *r, void *privdata)
{
    u_char                  *sp;
    uint32_t                 hash;
    ngx_int_t                rc;
    ngx_str_t                id, msg;
    ngx_rbtree_node_t       *node;
    ngx_bottle_hold_t       *h;
    ngx_bottle_supervise_t  *s = privdata;

    rc = ngx_bottle_redis_pubsub(r, &msg);

    if (rc == NGX_AGAIN) {
        s->subscribed = 1;

        if (ngx_bottle_redis_ready(&s->cmd)) {
            ngx_bottle_supervise_resync();
        }

        return;
    }

    if (rc != NGX_OK) {
        return;
    }

    id.data = msg.data;
    sp = ngx_strlchr(msg.data, msg.data + msg.len, ' ');
    id.len = sp ? (size_t) (sp - msg.data) : msg.len;

    ngx_log_debug1(NGX_LOG_DEBUG_CORE, s->log, 0,
                   "bottle supervise: decision \"%V\"", &msg);

    hash = ngx_crc32_short(id.data, id.len);
    node = (ngx_rbtree_node_t *) ngx_str_rbtree_lookup(&s->holds, &id, hash);
    h = node ? ngx_bottle_hold_of(node) : NULL;

    if (h == NULL) {
        /* another worker's, or another gateway's */
        return;
    }

    if (h->state == NGX_BOTTLE_HOLD_PROPOSING) {
        /* the decision came before the script's reply was read */
        h->recheck = 1;
        return;
    }

    if (h->state != NGX_BOTTLE_HOLD_WAITING) {
        return;
    }

    ngx_bottle_hold_check(h);
}


/* every proposal held here: its state, which may have been missed */

static void
ngx_bottle_supervise_resync(void)
{
    ngx_rbtree_node_t       *node;
    ngx_bottle_hold_t       *h;
    ngx_bottle_supervise_t  *s = &ngx_bottle_supervise;

    if (s->holds.root == s->holds.sentinel) {
        return;
    }

    for (node = ngx_rbtree_min(s->holds.root, s->holds.sentinel);
         node;
         node = ngx_rbtree_next(&s->holds, node))
    {
        h = ngx_bottle_hold_of(&((ngx_str_node_t *) node)->node);

        if (h->state == NGX_BOTTLE_HOLD_WAITING) {
            ngx_bottle_hold_check(h);
        }
    }
}
