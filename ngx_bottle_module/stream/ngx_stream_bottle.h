
/*
 * ngx_bottle stream module: the CONNECT front.
 */

#ifndef _NGX_STREAM_BOTTLE_H_INCLUDED_
#define _NGX_STREAM_BOTTLE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_bottle.h"
#include "bottle_head.h"


typedef struct {
    ngx_uint_t               used;       /* some server is a front */
} ngx_stream_bottle_main_conf_t;


typedef struct ngx_stream_bottle_adopt_s  ngx_stream_bottle_adopt_t;


typedef struct {
    ngx_flag_t               enable;
    ngx_str_t                realm;
    ngx_msec_t               head_timeout;
    size_t                   buffer_size;
    ngx_uint_t               max_heads;
    bottle_head_limits_t     limits;
    ngx_str_t                plain_pass;     /* "unix:/path" */
    ngx_str_t                tls_pass;       /* "unix:/path", or empty */
    ngx_stream_bottle_adopt_t  *adopt;       /* its http listener, per worker */
} ngx_stream_bottle_srv_conf_t;


typedef enum {
    NGX_STREAM_BOTTLE_HEAD = 0,
    NGX_STREAM_BOTTLE_RESOLVING,
    NGX_STREAM_BOTTLE_PEEK,
    NGX_STREAM_BOTTLE_DONE
} ngx_stream_bottle_state_e;


typedef struct {
    ngx_stream_bottle_state_e    state;
    ngx_uint_t                   phase;      /* our phase handler index */
    ngx_uint_t                   heads;      /* request heads on this conn */
    ngx_uint_t                   connect:1;
    ngx_uint_t                   inspect:1;
    ngx_uint_t                   adopted:1;  /* the http side has it */
    ngx_uint_t                   http_minor;
    ngx_uint_t                   has_body;
    size_t                       head_len;
    ngx_event_t                  timer;

    ngx_bottle_verdict_t         verdict;
    ngx_bottle_entry_t          *entry;      /* verdict.bottle's, held */
    const bottle_route_t        *route;
    in_port_t                    port;

    ngx_str_t                    upstream;   /* $bottle_upstream */
    ngx_bottle_resolve_t         resolve;

    ngx_str_t                    key;        /* the zone record's, if any */
    u_char                       key_buf[NGX_BOTTLE_ZONE_KEY_LEN];

    /* the front's refusals on this connection (a 407 keeps it open) */
    ngx_uint_t                   front_refused;
    ngx_bottle_rule_e            front_rule;

    /* the http side's refusals on a handed-off connection */
    ngx_bottle_final_t           final;
    ngx_str_t                    final_key;
    u_char                       final_buf[NGX_BOTTLE_ZONE_KEY_LEN];
} ngx_stream_bottle_ctx_t;


/* where the front goes on after a step that waited */
typedef ngx_int_t (*ngx_stream_bottle_next_pt)(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);


extern ngx_module_t  ngx_stream_bottle_module;


ngx_int_t ngx_stream_bottle_preread_handler(ngx_stream_session_t *s);

ngx_int_t ngx_stream_bottle_refuse(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_bottle_rule_e rule, const char *fmt,
    ...);
ngx_int_t ngx_stream_bottle_answer(ngx_connection_t *c, ngx_str_t *status,
    ngx_str_t *extra, ngx_str_t *type, ngx_str_t *body, ngx_uint_t keepalive);
ngx_int_t ngx_stream_bottle_send(ngx_connection_t *c, u_char *data,
    size_t len);
ngx_int_t ngx_stream_bottle_adopt(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);
ngx_int_t ngx_stream_bottle_conns_add(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);
ngx_int_t ngx_stream_bottle_first_contact(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx, ngx_stream_bottle_next_pt next);


void ngx_stream_bottle_final_start(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx);


#endif /* _NGX_STREAM_BOTTLE_H_INCLUDED_ */
