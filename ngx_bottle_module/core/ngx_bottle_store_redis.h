
/*
 * The Redis source's state, shared by its two files: the connections and
 * staleness (ngx_bottle_store_redis.c) and the replies applied in order
 * (ngx_bottle_store_sync.c).
 */

#ifndef _NGX_BOTTLE_STORE_REDIS_H_INCLUDED_
#define _NGX_BOTTLE_STORE_REDIS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"
#include "ngx_bottle_redis.h"


/* a reply, in the order Redis executed the commands */

typedef enum {
    NGX_BOTTLE_SLOT_WAITING = 0,    /* no reply yet */
    NGX_BOTTLE_SLOT_PARSE,          /* a policy to parse */
    NGX_BOTTLE_SLOT_PARSING,        /* in a thread */
    NGX_BOTTLE_SLOT_READY           /* to apply */
} ngx_bottle_slot_state_e;

typedef struct ngx_bottle_store_redis_s  ngx_bottle_store_redis_t;

typedef struct {
    ngx_queue_t                 queue;
    ngx_queue_t                 batch;      /* in a parse task */
    ngx_bottle_store_redis_t   *sr;
    ngx_bottle_slot_state_e     state;
    ngx_uint_t                  generation;

    /* a fetch: the fetch script of one bottle */
    u_char                     *id;         /* NUL-terminated */
    size_t                      id_len;
    char                       *json;
    size_t                      json_len;
    uint64_t                    version;
    unsigned                    is_sync:1;  /* the index, not a bottle */
    unsigned                    gone:1;     /* removed from the store */
    unsigned                    lost:1;     /* no reply: the connection
                                               went */
    unsigned                    unchanged:1;
    unsigned                    want_secrets:1;
    unsigned                    sync_end:1; /* the sync is done when this
                                               one is applied */
    unsigned                    counted:1;  /* json_len in sr->pending */

    /* the index (is_sync): ids and versions, sorted by id */
    ngx_str_t                  *ids;
    ngx_uint_t                  nids;

    /* the parse */
    bottle_policy_t            *policy;
    bottle_scan_secrets_t      *secrets;
    char                        err[512];
} ngx_bottle_slot_t;


struct ngx_bottle_store_redis_s {
    ngx_bottle_store_t         *store;
    bottle_store_url_t          url;
    ngx_str_t                   addr;
    char                        name[512];  /* the URL, no credentials */
    ngx_msec_t                  stale_max;
    ngx_log_t                  *log;

    ngx_bottle_redis_t          cmd;
    ngx_bottle_redis_t          sub;

    ngx_queue_t                 slots;
    ngx_uint_t                  generation; /* of the connections */
    ngx_uint_t                  parsing;    /* a task is out */
    size_t                      pending;    /* bytes of JSON read and not
                                               applied yet */

    ngx_msec_t                  lost_at;    /* last heard from, before a
                                               loss: served until then
                                               + stale_max */
    ngx_msec_t                  fresh_at;   /* read whole, last */
    ngx_msec_t                  applied_at; /* a change applied, last */
    ngx_event_t                 expire;     /* lost_at + stale_max: open
                                               connections are ended */
    unsigned                    fresh:1;
    unsigned                    loaded:1;   /* read whole once */
    unsigned                    subscribed:1;
    unsigned                    syncing:1;
};


/* ngx_bottle_store_sync.c */
void ngx_bottle_store_redis_index(redisAsyncContext *ac, void *r,
    void *privdata);
ngx_bottle_slot_t *ngx_bottle_store_redis_fetch(ngx_bottle_store_redis_t *sr,
    const u_char *id, size_t len);
void ngx_bottle_store_redis_apply(ngx_bottle_store_redis_t *sr);
/*
 * The fetch script (bottle_store_fetch_script) of one bottle: its json
 * and version, unless the json is over the policy limit.  Into argv (5
 * of them; buf holds the limit).
 */
#define NGX_BOTTLE_FETCH_BUF_LEN  NGX_OFF_T_LEN
void ngx_bottle_store_fetch_argv(ngx_bottle_store_redis_t *sr,
    const u_char *id, size_t len, u_char *buf, const char **argv,
    size_t *argvlen);
/* its reply: NGX_OK (json, json_len, version set; json in the reply),
   NGX_DECLINED (no such bottle), NGX_ABORT (over the limit: json NULL,
   its size in json_len, the reason in slot->err), NGX_ERROR (not a
   bottle's hash) */
ngx_int_t ngx_bottle_store_fetch_reply(ngx_bottle_slot_t *slot,
    redisReply *reply);
/* NGX_OK if the store's total stays within its limit with json_len bytes
   more (held bytes of JSON not counted in the store yet included), else
   NGX_DECLINED with the reason in slot->err */
ngx_int_t ngx_bottle_store_fetch_total(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slot, size_t held);

/* in a thread: nothing of nginx */
void ngx_bottle_store_redis_parse(ngx_bottle_slot_t *slot,
    bottle_scan_db_t *db);
void ngx_bottle_store_redis_apply_one(ngx_bottle_store_redis_t *sr,
    ngx_bottle_slot_t *slot);

/* ngx_bottle_store_load.c */
void ngx_bottle_store_redis_preload(ngx_conf_t *cf,
    ngx_bottle_store_redis_t *sr);


#endif /* _NGX_BOTTLE_STORE_REDIS_H_INCLUDED_ */
