
/*
 * Held requests, what the module's two files share: ngx_bottle_supervise.c
 * (the core module: directives, the control plane's two connections, the
 * decisions channel) and ngx_bottle_hold.c (one held request: its
 * proposal, its decision or timer, its end).
 */

#ifndef _NGX_BOTTLE_SUPERVISE_H_INCLUDED_
#define _NGX_BOTTLE_SUPERVISE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "ngx_bottle.h"
#include "ngx_bottle_redis.h"


/* a hold's state */
#define NGX_BOTTLE_HOLD_NEW            0
#define NGX_BOTTLE_HOLD_PROPOSING      1       /* the propose script runs */
#define NGX_BOTTLE_HOLD_WAITING        2
#define NGX_BOTTLE_HOLD_DONE           3


typedef struct {
    ngx_flag_t                 off;
    bottle_store_url_t        *store_url;
    ngx_str_t                  addr;       /* resolved at configuration */
    char                       name[512];  /* the URL, no credentials */
    ngx_msec_t                 timeout;
    ngx_uint_t                 held;
    size_t                     held_body;
} ngx_bottle_supervise_conf_t;


typedef struct {
    ngx_bottle_supervise_conf_t  *conf;
    ngx_bottle_redis_t         cmd;
    ngx_bottle_redis_t         sub;
    ngx_log_t                 *log;
    ngx_rbtree_t               holds;      /* waiting, by proposal id */
    ngx_rbtree_node_t          sentinel;
    unsigned                   on:1;
    unsigned                   subscribed:1;
} ngx_bottle_supervise_t;


extern ngx_bottle_supervise_t  ngx_bottle_supervise;


#define ngx_bottle_hold_of(node)                                              \
    ((ngx_bottle_hold_t *) ((u_char *) (node)                                 \
                            - offsetof(ngx_bottle_hold_t, sn)))


/* the hold's state read again (a decision message, a resync) */
void ngx_bottle_hold_check(ngx_bottle_hold_t *h);


#endif /* _NGX_BOTTLE_SUPERVISE_H_INCLUDED_ */
