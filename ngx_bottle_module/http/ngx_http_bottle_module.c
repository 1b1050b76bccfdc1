
/*
 * ngx_bottle http module: directives, configuration and variables of the
 * per-request pipeline.  The pipeline itself is in ngx_http_bottle_pipeline.c,
 * credential stripping and injection in ngx_http_bottle_credentials.c.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_record.h"


static ngx_int_t ngx_http_bottle_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_bottle_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_bottle_variable_path(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static void *ngx_http_bottle_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_bottle_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_bottle_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child);
static void *ngx_http_bottle_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_bottle_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_bottle_dlp_thread_pool(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_http_bottle_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_bottle_header_filter(ngx_http_request_t *r);


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;


#define NGX_HTTP_BOTTLE_VAR_UPSTREAM     0
#define NGX_HTTP_BOTTLE_VAR_URI          1
#define NGX_HTTP_BOTTLE_VAR_HOST_HEADER  2
#define NGX_HTTP_BOTTLE_VAR_ID           3
#define NGX_HTTP_BOTTLE_VAR_HOST         4
#define NGX_HTTP_BOTTLE_VAR_RULE         5
#define NGX_HTTP_BOTTLE_VAR_VERDICT      6
#define NGX_HTTP_BOTTLE_VAR_TUNNELS      7
#define NGX_HTTP_BOTTLE_VAR_UPGRADE      8
#define NGX_HTTP_BOTTLE_VAR_CONNECTION   9
#define NGX_HTTP_BOTTLE_VAR_PATH        10


static ngx_command_t  ngx_http_bottle_commands[] = {

    { ngx_string("bottle"),
      NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_bottle_loc_conf_t, enable),
      NULL },

    { ngx_string("bottle_realm"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_bottle_loc_conf_t, realm),
      NULL },

    { ngx_string("bottle_dlp_decoded_max"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_bottle_loc_conf_t, dlp_decoded_max),
      NULL },

    { ngx_string("bottle_dlp_decoded_ratio"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_bottle_loc_conf_t, dlp_decoded_ratio),
      NULL },

    { ngx_string("bottle_dlp_thread_pool"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_bottle_dlp_thread_pool,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("bottle_ca"),
      NGX_HTTP_SRV_CONF|NGX_CONF_TAKE23,
      ngx_http_bottle_ca,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("bottle_leaf_cache"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_bottle_srv_conf_t, leaf_cache),
      NULL },

    { ngx_string("bottle_leaf_validity"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_bottle_srv_conf_t, leaf_validity),
      NULL },

    { ngx_string("bottle_upstream"),
      NGX_HTTP_UPS_CONF|NGX_CONF_ANY,
      ngx_http_bottle_upstream,
      0,
      0,
      NULL },

    { ngx_string("bottle_upstream_failed"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_bottle_upstream_failed,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("bottle_attribute"),
      NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_bottle_attribute,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("bottle_safelist_approve"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_bottle_safelist_approve,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_bottle_module_ctx = {
    ngx_http_bottle_add_variables,         /* preconfiguration */
    ngx_http_bottle_init,                  /* postconfiguration */

    ngx_http_bottle_create_main_conf,      /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_http_bottle_create_srv_conf,       /* create server configuration */
    ngx_http_bottle_merge_srv_conf,        /* merge server configuration */

    ngx_http_bottle_create_loc_conf,       /* create location configuration */
    ngx_http_bottle_merge_loc_conf         /* merge location configuration */
};


ngx_module_t  ngx_http_bottle_module = {
    NGX_MODULE_V1,
    &ngx_http_bottle_module_ctx,           /* module context */
    ngx_http_bottle_commands,              /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_bottle_errors_init_module,    /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_http_variable_t  ngx_http_bottle_vars[] = {

    { ngx_string("bottle_upstream"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_UPSTREAM, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_uri"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_URI, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_host_header"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_HOST_HEADER, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_id"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_ID, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_host"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_HOST, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_rule"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_RULE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_verdict"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_VERDICT, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_upgrade"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_UPGRADE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_connection"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_CONNECTION, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_tunnels"), NULL, ngx_http_bottle_variable,
      NGX_HTTP_BOTTLE_VAR_TUNNELS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_path"), NULL, ngx_http_bottle_variable_path,
      NGX_HTTP_BOTTLE_VAR_PATH, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


static ngx_int_t
ngx_http_bottle_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_bottle_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


/*
 * $bottle_path: the request's path as the agent sent it (no query), with
 * the bottle's secrets masked as the full log masks them
 * (bottle_record_scrub: the canary, egress tokens and held secrets, as
 * they are and in the encodings the DLP decodes).  For the access log,
 * which would otherwise write a refused path verbatim.
 */

static ngx_int_t
ngx_http_bottle_variable_path(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                 *p, *q, *last;
    ngx_str_t               path;
    ngx_http_bottle_ctx_t  *ctx;

    ctx = ngx_http_bottle_get_ctx(r);

    if (ctx != NULL && ctx->target.path.len) {
        path = ctx->target.path;

    } else {
        /* unparsed_uri starts at the path, or at '?' when it is empty */
        p = r->unparsed_uri.data;
        last = p + r->unparsed_uri.len;
        q = (p == NULL) ? NULL : ngx_strlchr(p, last, '?');

        path.data = p;
        path.len = (q ? q : last) - p;
    }

    if (path.len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    /* a copy: the request's own bytes stay as they are */

    p = ngx_pnalloc(r->pool, path.len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(p, path.data, path.len);

    if (ctx != NULL && ctx->verdict.bottle != NULL) {
        (void) bottle_record_scrub(ctx->verdict.bottle, p, path.len, 0);
    }

    v->len = path.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = p;

    return NGX_OK;
}


/*
 * $bottle_upstream, $bottle_uri and $bottle_host_header are empty until the
 * pipeline has passed the request: a proxy_pass built of them cannot reach
 * anything the pipeline did not check.
 */

static ngx_int_t
ngx_http_bottle_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    u_char                 *p;
    ngx_str_t               val;
    ngx_http_bottle_ctx_t  *ctx;

    if (data == NGX_HTTP_BOTTLE_VAR_TUNNELS) {
        /* open CONNECT tunnels of inspected routes, in all workers */

        p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "%ui", ngx_bottle_zone_count()) - p;
        v->valid = 1;
        v->no_cacheable = 1;
        v->not_found = 0;
        v->data = p;

        return NGX_OK;
    }

    ctx = ngx_http_bottle_get_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_str_null(&val);

    switch (data) {

    case NGX_HTTP_BOTTLE_VAR_UPSTREAM:
        if (ctx->state == NGX_HTTP_BOTTLE_PASSED) {
            val = ctx->upstream;
        }
        break;

    case NGX_HTTP_BOTTLE_VAR_URI:
        if (ctx->state == NGX_HTTP_BOTTLE_PASSED) {
            val = ctx->uri;
        }
        break;

    case NGX_HTTP_BOTTLE_VAR_HOST_HEADER:
        if (ctx->state == NGX_HTTP_BOTTLE_PASSED) {
            val = ctx->host_header;
        }
        break;

    case NGX_HTTP_BOTTLE_VAR_UPGRADE:
        if (ctx->state == NGX_HTTP_BOTTLE_PASSED) {
            val = ctx->upgrade;
        }
        break;

    case NGX_HTTP_BOTTLE_VAR_CONNECTION:
        if (ctx->state == NGX_HTTP_BOTTLE_PASSED && ctx->upgrade.len) {
            ngx_str_set(&val, "upgrade");
        }
        break;

    case NGX_HTTP_BOTTLE_VAR_ID:
        if (ctx->verdict.bottle) {
            val.data = (u_char *) ctx->verdict.bottle->id.data;
            val.len = ctx->verdict.bottle->id.len;
        }
        break;

    case NGX_HTTP_BOTTLE_VAR_HOST:
        val = ctx->verdict.host;
        break;

    case NGX_HTTP_BOTTLE_VAR_RULE:
        val = ngx_bottle_rule(ctx->verdict.rule)->name;
        break;

    default: /* NGX_HTTP_BOTTLE_VAR_VERDICT */
        if (ctx->state == NGX_HTTP_BOTTLE_PASSED) {
            ngx_str_set(&val, "allowed");

        } else if (ctx->state == NGX_HTTP_BOTTLE_REFUSED) {
            ngx_str_set(&val, "refused");
        }
        break;
    }

    if (val.len == 0) {
        v->not_found = 1;
        return NGX_OK;
    }

    v->len = val.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    v->data = val.data;

    return NGX_OK;
}


static void *
ngx_http_bottle_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_bottle_main_conf_t  *bmcf;

    /*
     * set by ngx_pcalloc():
     *
     *     bmcf->used = 0;
     */

    bmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_bottle_main_conf_t));
    if (bmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&bmcf->error_logs, cf->pool, 8, sizeof(ngx_log_t **))
        != NGX_OK)
    {
        return NULL;
    }

    return bmcf;
}


static void *
ngx_http_bottle_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_bottle_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_bottle_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->ca = NULL;
     *     conf->mint = NULL;
     */

    conf->leaf_cache = NGX_CONF_UNSET_UINT;
    conf->leaf_validity = NGX_CONF_UNSET;

    return conf;
}


static char *
ngx_http_bottle_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_bottle_srv_conf_t *prev = parent;
    ngx_http_bottle_srv_conf_t *conf = child;

    ngx_conf_merge_uint_value(conf->leaf_cache, prev->leaf_cache, 1024);
    ngx_conf_merge_sec_value(conf->leaf_validity, prev->leaf_validity,
                             7 * 86400);

    if (conf->leaf_cache == 0 || conf->leaf_cache > BOTTLE_MINT_MAX_ENTRIES) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"bottle_leaf_cache\" must be 1 to %d",
                           BOTTLE_MINT_MAX_ENTRIES);
        return NGX_CONF_ERROR;
    }

    if (conf->leaf_validity < 3600) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"bottle_leaf_validity\" must be at least 1h");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_bottle_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_bottle_loc_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_bottle_loc_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->realm = { 0, NULL };
     */

    conf->enable = NGX_CONF_UNSET;
    conf->dlp_decoded_max = NGX_CONF_UNSET_SIZE;
    conf->dlp_decoded_ratio = NGX_CONF_UNSET;
    conf->dlp_thread_pool = NGX_CONF_UNSET_PTR;
    conf->attribute = NGX_CONF_UNSET_UINT;

    return conf;
}


static char *
ngx_http_bottle_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_bottle_loc_conf_t *prev = parent;
    ngx_http_bottle_loc_conf_t *conf = child;

    ngx_http_bottle_main_conf_t  *bmcf;
#if (nginx_version >= 1031000)
    ngx_http_core_srv_conf_t     *cscf;
#endif

    ngx_conf_merge_value(conf->enable, prev->enable, 0);
    ngx_conf_merge_str_value(conf->realm, prev->realm, "bottle gateway");
    ngx_conf_merge_size_value(conf->dlp_decoded_max, prev->dlp_decoded_max,
                              8 * 1024 * 1024);
    ngx_conf_merge_value(conf->dlp_decoded_ratio, prev->dlp_decoded_ratio,
                         100);
    ngx_conf_merge_ptr_value(conf->dlp_thread_pool, prev->dlp_thread_pool,
                             NGX_CONF_UNSET_PTR);
    ngx_conf_merge_uint_value(conf->attribute, prev->attribute,
                              NGX_HTTP_BOTTLE_ATTRIBUTE_OFF);

    if (conf->enable && conf->attribute != NGX_HTTP_BOTTLE_ATTRIBUTE_OFF) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"bottle on\" and \"bottle_attribute\" in one "
                           "location: a sidecar's location attributes its "
                           "caller, an egress location runs the pipeline");
        return NGX_CONF_ERROR;
    }

    if (!conf->enable) {
        return NGX_CONF_OK;
    }

#if (nginx_version >= 1031000)

    /*
     * nginx 1.31's "tunnel_pass" (ngx_http_tunnel_module) lets CONNECT into
     * its server, and its tunnel goes where the request line says, past
     * the pipeline: not in a server of the module's, whose CONNECT is the
     * stream front's ("bottle_front")
     */

    cscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);

    if (cscf->allow_connect) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tunnel_pass\" in a server where \"bottle\" is "
                           "on: the gateway's CONNECT is the stream "
                           "front's (\"bottle_front\")");
        return NGX_CONF_ERROR;
    }

#endif

    if (conf->dlp_thread_pool == NGX_CONF_UNSET_PTR) {

        /* as "aio threads": the pool "default", made if not declared */

#if (NGX_THREADS)
        conf->dlp_thread_pool = ngx_thread_pool_add(cf, NULL);
        if (conf->dlp_thread_pool == NULL) {
            return NGX_CONF_ERROR;
        }
#else
        conf->dlp_thread_pool = NULL;
#endif
    }

    if (ngx_bottle_cycle_store(cf->cycle) == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"bottle\" needs \"bottle_policy\" at the top "
                           "level, before the \"http\" block");
        return NGX_CONF_ERROR;
    }

    bmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_bottle_module);
    bmcf->used = 1;

    if (ngx_http_bottle_errors_location(cf, bmcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* bottle_dlp_thread_pool name | off */

static char *
ngx_http_bottle_dlp_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_bottle_loc_conf_t *blcf = conf;

    ngx_str_t  *value;

    if (blcf->dlp_thread_pool != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_strcmp(value[1].data, "off") == 0) {
        blcf->dlp_thread_pool = NULL;
        return NGX_CONF_OK;
    }

#if (NGX_THREADS)

    blcf->dlp_thread_pool = ngx_thread_pool_add(cf, &value[1]);
    if (blcf->dlp_thread_pool == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

#else

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "\"bottle_dlp_thread_pool %V\" needs nginx built "
                       "with threads; only \"off\" works without them",
                       &value[1]);
    return NGX_CONF_ERROR;

#endif
}


/*
 * The handler is installed only when some location enables "bottle", in the
 * preaccess phase, where no standard module ends the phase early (in the
 * access phase, "satisfy any" would let another module's OK skip it).  It
 * declines at once where "bottle" is off.
 */

static ngx_int_t
ngx_http_bottle_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt          *h;
    ngx_http_core_main_conf_t    *cmcf;
    ngx_http_bottle_main_conf_t  *bmcf;

    if (ngx_http_bottle_tls_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_bottle_peer_postconf(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    bmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_bottle_module);
    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    if (bmcf->attribute_used) {
        h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        *h = ngx_http_bottle_attribute_handler;
    }

    if (!bmcf->used) {
        return NGX_OK;
    }

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_bottle_handler;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_bottle_header_filter;

    if (ngx_http_bottle_errors_init(cf) != NGX_OK
        || ngx_http_bottle_mcp_init(cf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_bottle_inbound_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    /* first in the chain: the inbound scan reads the scrubbed body */
    return ngx_http_bottle_scrub_init(cf);
}


/*
 * The responses of requests the pipeline passed: the cookie jar, and the
 * inbound detectors the route names.
 */

static ngx_int_t
ngx_http_bottle_header_filter(ngx_http_request_t *r)
{
    ngx_http_bottle_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_bottle_module);

    if (ctx && ctx->state == NGX_HTTP_BOTTLE_PASSED && ctx->route
        && r->upstream)
    {
        ngx_http_bottle_capture_cookies(r, ctx);

        if (ngx_http_bottle_scrub_start(r, ctx) != NGX_OK
            || ngx_http_bottle_inbound_start(r, ctx) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return ngx_http_next_header_filter(r);
}
