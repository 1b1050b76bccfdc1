
/*
 * ngx_bottle http module: the per-request pipeline.
 */

#ifndef _NGX_HTTP_BOTTLE_H_INCLUDED_
#define _NGX_HTTP_BOTTLE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_bottle.h"
#include "bottle_mint.h"
#include "bottle_coding.h"
#include "bottle_decide.h"


typedef struct {
    ngx_uint_t               used;       /* some location enables bottle */
    ngx_uint_t               attribute_used; /* some bottle_attribute */
    ngx_array_t              error_logs; /* ngx_log_t **: of bottle locations */
} ngx_http_bottle_main_conf_t;


typedef struct {
    bottle_ca_t             *ca;         /* bottle_ca */
    bottle_mint_t           *mint;       /* per worker, made on first use */
    ngx_uint_t               leaf_cache;
    time_t                   leaf_validity;
    ngx_uint_t               sidecar;    /* a location has bottle_attribute */
} ngx_http_bottle_srv_conf_t;


typedef struct {
    ngx_flag_t               enable;
    ngx_str_t                realm;
    size_t                   dlp_decoded_max;
    ngx_int_t                dlp_decoded_ratio;
    void                    *dlp_thread_pool;  /* ngx_thread_pool_t */
    ngx_uint_t               attribute;  /* NGX_HTTP_BOTTLE_ATTRIBUTE_* */
} ngx_http_bottle_loc_conf_t;


/* bottle_attribute: whose caller a location attributes */
#define NGX_HTTP_BOTTLE_ATTRIBUTE_OFF  0
#define NGX_HTTP_BOTTLE_ATTRIBUTE_GIT  1
#define NGX_HTTP_BOTTLE_ATTRIBUTE_MCP  2


typedef enum {
    NGX_HTTP_BOTTLE_START = 0,
    NGX_HTTP_BOTTLE_READING,
    NGX_HTTP_BOTTLE_RESOLVING,
    NGX_HTTP_BOTTLE_PASSED,
    NGX_HTTP_BOTTLE_REFUSED
} ngx_http_bottle_state_e;


/* what the request asks for, as the policy sees it */
typedef struct {
    ngx_str_t                host;       /* canonical target host */
    in_port_t                port;
    ngx_str_t                path;       /* raw path as sent, never empty */
    ngx_str_t                args;       /* raw query, without '?' */
} ngx_http_bottle_target_t;


/* a tunnel: the CONNECT an internal connection belongs to */
typedef struct {
    ngx_uint_t               found;
    ngx_bottle_target_t      target;
    ngx_bottle_entry_t      *entry;      /* the tunnel's bottle, held */

    /* the target's address, as a request of the tunnel resolved and
     * checked it for its route, until the resolver's answer expires */
    const bottle_route_t    *peer_route;
    time_t                   peer_valid;
    ngx_sockaddr_t           peer_sockaddr;
    ngx_bottle_peer_t        peer;
} ngx_http_bottle_conn_t;


typedef struct ngx_http_bottle_inbound_s  ngx_http_bottle_inbound_t;
typedef struct ngx_http_bottle_ctx_s  ngx_http_bottle_ctx_t;

/*
 * Where the pipeline goes on when a step that went asynchronous is done;
 * rc NGX_HTTP_BOTTLE_RESCAN: the checks again from the DLP (a held request
 * the operator approved), so a step never calls back into the DLP.
 */
typedef void (*ngx_http_bottle_resume_pt)(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_int_t rc);

#define NGX_HTTP_BOTTLE_RESCAN  NGX_BUSY


struct ngx_http_bottle_ctx_s {
    ngx_http_bottle_state_e  state;
    ngx_uint_t               async;      /* the resolver answers later */
    ngx_bottle_verdict_t     verdict;
    ngx_bottle_entry_t      *entry;      /* verdict.bottle's, held */
    ngx_bottle_waiter_t      secrets;    /* its scanner is compiled */
    const bottle_route_t    *route;
    ngx_http_bottle_conn_t  *tunnel;     /* NULL: a plain proxy request */
    ngx_http_bottle_target_t target;
    bottle_request_t         req;        /* the target, for libbottle's
                                            decisions (bottle_decide.h) */

    ngx_str_t                uri;        /* $bottle_uri: path?stripped args */
    ngx_str_t                host_header; /* $bottle_host_header */
    ngx_str_t                upstream;   /* $bottle_upstream */
    ngx_str_t                upgrade;    /* $bottle_upgrade */

    ngx_bottle_resolve_t     resolve;

    ngx_http_bottle_inbound_t  *inbound; /* the response's inbound scan */
    void                    *scrub;      /* ngx_http_bottle_scrub_t */
    ngx_str_t                refusal;    /* in place of nginx's own page */
    void                    *dlp;        /* ngx_http_bottle_dlp_t */
    void                    *contact;    /* the first contact's */
    void                    *mcp;        /* bottle_mcp_body_t: the calls */
    void                    *mcp_resp;   /* the response filter's */
    ngx_http_bottle_resume_pt  resume;   /* after an asynchronous step */
    const char              *ended;      /* why it was ended from outside
                                            (a revocation), for a held
                                            request's withdrawal */
};


extern ngx_module_t  ngx_http_bottle_module;


ngx_int_t ngx_http_bottle_handler(ngx_http_request_t *r);
char *ngx_http_bottle_ca(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_bottle_upstream(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_bottle_tls_init(ngx_conf_t *cf);
ngx_int_t ngx_http_bottle_peer_postconf(ngx_conf_t *cf);
ngx_http_bottle_ctx_t *ngx_http_bottle_get_ctx(ngx_http_request_t *r);
char *ngx_http_bottle_upstream_failed(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

ngx_int_t ngx_http_bottle_target(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_tunnel(ngx_http_request_t *r,
    ngx_http_bottle_conn_t **out);
ngx_int_t ngx_http_bottle_errors_init(ngx_conf_t *cf);
ngx_int_t ngx_http_bottle_errors_init_module(ngx_cycle_t *cycle);
ngx_int_t ngx_http_bottle_errors_location(ngx_conf_t *cf,
    ngx_http_bottle_main_conf_t *bmcf);
void ngx_http_bottle_init_connection(ngx_connection_t *c);
ngx_int_t ngx_http_bottle_bind(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, const u_char *token, ssize_t n,
    const char *malformed);
ngx_int_t ngx_http_bottle_identify(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_host_check(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
char *ngx_http_bottle_safelist_approve(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
void ngx_http_bottle_coding_alloc(bottle_coding_alloc_t *a, ngx_pool_t *pool);
ngx_int_t ngx_http_bottle_inbound_init(ngx_conf_t *cf);
ngx_int_t ngx_http_bottle_inbound_start(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_inbound_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
ngx_int_t ngx_http_bottle_scrub_init(ngx_conf_t *cf);
ngx_int_t ngx_http_bottle_scrub_request(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_scrub_start(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_dlp(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_first_contact(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_http_bottle_ctx_t *ngx_http_bottle_create_ctx(ngx_http_request_t *r);
char *ngx_http_bottle_attribute(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_bottle_attribute_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_bottle_refuse(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, const char *scheme, ngx_uint_t quiet);
ngx_int_t ngx_http_bottle_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *type, ngx_str_t *body);
ngx_int_t ngx_http_bottle_deny(ngx_http_bottle_ctx_t *ctx, ngx_pool_t *pool,
    ngx_bottle_rule_e rule, const char *fmt, ...);
ngx_table_elt_t *ngx_http_bottle_find_header(ngx_http_request_t *r,
    const char *lowcase, size_t len, ngx_uint_t *count);
ngx_int_t ngx_http_bottle_strip(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
void ngx_http_bottle_headers_install(ngx_http_request_t *r,
    ngx_list_t *kept);
void ngx_http_bottle_capture_cookies(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_inject(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_conns_add(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
void ngx_http_bottle_conns_adopted(ngx_connection_t *c);
ngx_int_t ngx_http_bottle_mcp(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
ngx_int_t ngx_http_bottle_mcp_init(ngx_conf_t *cf);
ngx_int_t ngx_http_bottle_strip_args(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_str_t *out);


#endif /* _NGX_HTTP_BOTTLE_H_INCLUDED_ */
