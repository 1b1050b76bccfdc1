
/*
 * ngx_bottle stream module: directives, configuration and variables of the
 * CONNECT front.  The front itself is in ngx_stream_bottle_front.c.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_stream.h>

#include "ngx_stream_bottle.h"


static ngx_int_t ngx_stream_bottle_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_stream_bottle_variable(ngx_stream_session_t *s,
    ngx_stream_variable_value_t *v, uintptr_t data);
static void *ngx_stream_bottle_create_main_conf(ngx_conf_t *cf);
static void *ngx_stream_bottle_create_srv_conf(ngx_conf_t *cf);
static char *ngx_stream_bottle_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_stream_bottle_pass(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_stream_bottle_init(ngx_conf_t *cf);


#define NGX_STREAM_BOTTLE_VAR_UPSTREAM  0
#define NGX_STREAM_BOTTLE_VAR_ID        1
#define NGX_STREAM_BOTTLE_VAR_HOST      2
#define NGX_STREAM_BOTTLE_VAR_RULE      3
#define NGX_STREAM_BOTTLE_VAR_VERDICT   4
#define NGX_STREAM_BOTTLE_VAR_REFUSED   5


static ngx_command_t  ngx_stream_bottle_commands[] = {

    { ngx_string("bottle_front"),
      NGX_STREAM_MAIN_CONF|NGX_STREAM_SRV_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_STREAM_SRV_CONF_OFFSET,
      offsetof(ngx_stream_bottle_srv_conf_t, enable),
      NULL },

    { ngx_string("bottle_realm"),
      NGX_STREAM_MAIN_CONF|NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_STREAM_SRV_CONF_OFFSET,
      offsetof(ngx_stream_bottle_srv_conf_t, realm),
      NULL },

    { ngx_string("bottle_head_timeout"),
      NGX_STREAM_MAIN_CONF|NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_STREAM_SRV_CONF_OFFSET,
      offsetof(ngx_stream_bottle_srv_conf_t, head_timeout),
      NULL },

    { ngx_string("bottle_head_buffer_size"),
      NGX_STREAM_MAIN_CONF|NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_STREAM_SRV_CONF_OFFSET,
      offsetof(ngx_stream_bottle_srv_conf_t, limits.max_head),
      NULL },

    { ngx_string("bottle_head_line_size"),
      NGX_STREAM_MAIN_CONF|NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_STREAM_SRV_CONF_OFFSET,
      offsetof(ngx_stream_bottle_srv_conf_t, limits.max_line),
      NULL },

    { ngx_string("bottle_head_max_headers"),
      NGX_STREAM_MAIN_CONF|NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_STREAM_SRV_CONF_OFFSET,
      offsetof(ngx_stream_bottle_srv_conf_t, limits.max_headers),
      NULL },

    { ngx_string("bottle_plain_pass"),
      NGX_STREAM_MAIN_CONF|NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_stream_bottle_pass,
      NGX_STREAM_SRV_CONF_OFFSET,
      offsetof(ngx_stream_bottle_srv_conf_t, plain_pass),
      NULL },

    { ngx_string("bottle_tls_pass"),
      NGX_STREAM_MAIN_CONF|NGX_STREAM_SRV_CONF|NGX_CONF_TAKE1,
      ngx_stream_bottle_pass,
      NGX_STREAM_SRV_CONF_OFFSET,
      offsetof(ngx_stream_bottle_srv_conf_t, tls_pass),
      NULL },

      ngx_null_command
};


static ngx_stream_module_t  ngx_stream_bottle_module_ctx = {
    ngx_stream_bottle_add_variables,       /* preconfiguration */
    ngx_stream_bottle_init,                /* postconfiguration */

    ngx_stream_bottle_create_main_conf,    /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_stream_bottle_create_srv_conf,     /* create server configuration */
    ngx_stream_bottle_merge_srv_conf       /* merge server configuration */
};


ngx_module_t  ngx_stream_bottle_module = {
    NGX_MODULE_V1,
    &ngx_stream_bottle_module_ctx,         /* module context */
    ngx_stream_bottle_commands,            /* module directives */
    NGX_STREAM_MODULE,                     /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_stream_variable_t  ngx_stream_bottle_vars[] = {

    { ngx_string("bottle_upstream"), NULL, ngx_stream_bottle_variable,
      NGX_STREAM_BOTTLE_VAR_UPSTREAM, NGX_STREAM_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_id"), NULL, ngx_stream_bottle_variable,
      NGX_STREAM_BOTTLE_VAR_ID, NGX_STREAM_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_host"), NULL, ngx_stream_bottle_variable,
      NGX_STREAM_BOTTLE_VAR_HOST, NGX_STREAM_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_rule"), NULL, ngx_stream_bottle_variable,
      NGX_STREAM_BOTTLE_VAR_RULE, NGX_STREAM_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_verdict"), NULL, ngx_stream_bottle_variable,
      NGX_STREAM_BOTTLE_VAR_VERDICT, NGX_STREAM_VAR_NOCACHEABLE, 0 },

    { ngx_string("bottle_refused"), NULL, ngx_stream_bottle_variable,
      NGX_STREAM_BOTTLE_VAR_REFUSED, NGX_STREAM_VAR_NOCACHEABLE, 0 },

      ngx_stream_null_variable
};


static ngx_int_t
ngx_stream_bottle_add_variables(ngx_conf_t *cf)
{
    ngx_stream_variable_t  *var, *v;

    for (v = ngx_stream_bottle_vars; v->name.len; v++) {
        var = ngx_stream_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_stream_bottle_variable(ngx_stream_session_t *s,
    ngx_stream_variable_value_t *v, uintptr_t data)
{
    ngx_str_t                 val;
    ngx_stream_bottle_ctx_t  *ctx;

    ctx = ngx_stream_get_module_ctx(s, ngx_stream_bottle_module);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    /*
     * a handed-off connection: what the http side refused on it so far
     * (not cached: proxy_pass reads $bottle_upstream long before the log)
     */

    ctx->final.refused = 0;

    if (ctx->final_key.len
        && (data == NGX_STREAM_BOTTLE_VAR_RULE
            || data == NGX_STREAM_BOTTLE_VAR_VERDICT
            || data == NGX_STREAM_BOTTLE_VAR_REFUSED)
        && ngx_bottle_final_get(&ctx->final_key, &ctx->final) != NGX_OK)
    {
        ctx->final.refused = 0;
    }

    switch (data) {

    case NGX_STREAM_BOTTLE_VAR_UPSTREAM:
        val = ctx->upstream;
        break;

    case NGX_STREAM_BOTTLE_VAR_ID:
        if (ctx->verdict.bottle == NULL) {
            v->not_found = 1;
            return NGX_OK;
        }

        val.data = (u_char *) ctx->verdict.bottle->id.data;
        val.len = ctx->verdict.bottle->id.len;
        break;

    case NGX_STREAM_BOTTLE_VAR_HOST:
        val = ctx->verdict.host;
        break;

    case NGX_STREAM_BOTTLE_VAR_RULE:
        if (ctx->verdict.rule != NGX_BOTTLE_RULE_NONE) {
            val = ngx_bottle_rule(ctx->verdict.rule)->name;

        } else if (ctx->final.refused) {
            /* the http side's last */
            val = ngx_bottle_rule(ctx->final.rule)->name;

        } else {
            val = ngx_bottle_rule(ctx->front_refused ? ctx->front_rule
                                                     : NGX_BOTTLE_RULE_NONE)
                  ->name;
        }

        break;

    case NGX_STREAM_BOTTLE_VAR_REFUSED:
        val.data = ngx_pnalloc(s->connection->pool, NGX_INT_T_LEN);
        if (val.data == NULL) {
            return NGX_ERROR;
        }

        val.len = ngx_sprintf(val.data, "%ui",
                              ctx->front_refused + ctx->final.refused)
                  - val.data;
        break;

    default: /* NGX_STREAM_BOTTLE_VAR_VERDICT */
        if (ctx->verdict.rule != NGX_BOTTLE_RULE_NONE || ctx->final.refused
            || ctx->front_refused)
        {
            ngx_str_set(&val, "refused");

        } else if (ctx->state != NGX_STREAM_BOTTLE_DONE) {
            /* the client left before the front decided */
            ngx_str_set(&val, "closed");

        } else if (ctx->route && ctx->route->passthrough && ctx->connect) {
            ngx_str_set(&val, "passthrough");

        } else if (ctx->adopted) {
            ngx_str_set(&val, "adopted");

        } else {
            ngx_str_set(&val, "handoff");
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


/*
 * The connection's key, under which the http side records its refusals
 * (ngx_bottle_final.c); an earlier connection's of the same address and
 * port is forgotten.
 */

void
ngx_stream_bottle_final_start(ngx_stream_session_t *s,
    ngx_stream_bottle_ctx_t *ctx)
{
    if (ngx_bottle_zone_key(s->connection, ctx->final_buf,
                            sizeof(ctx->final_buf), &ctx->final_key)
        != NGX_OK)
    {
        ctx->final_key.len = 0;
        return;
    }

    ngx_bottle_final_forget(&ctx->final_key);
}


static void *
ngx_stream_bottle_create_main_conf(ngx_conf_t *cf)
{
    /*
     * set by ngx_pcalloc():
     *
     *     bmcf->used = 0;
     */

    return ngx_pcalloc(cf->pool, sizeof(ngx_stream_bottle_main_conf_t));
}


static void *
ngx_stream_bottle_create_srv_conf(ngx_conf_t *cf)
{
    ngx_stream_bottle_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_stream_bottle_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->realm = { 0, NULL };
     *     conf->plain_pass = { 0, NULL };
     *     conf->tls_pass = { 0, NULL };
     */

    conf->enable = NGX_CONF_UNSET;
    conf->head_timeout = NGX_CONF_UNSET_MSEC;
    conf->buffer_size = NGX_CONF_UNSET_SIZE;
    conf->max_heads = NGX_CONF_UNSET_UINT;
    conf->limits.max_head = NGX_CONF_UNSET_SIZE;
    conf->limits.max_line = NGX_CONF_UNSET_SIZE;
    conf->limits.max_headers = NGX_CONF_UNSET_SIZE;

    return conf;
}


static char *
ngx_stream_bottle_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_stream_bottle_srv_conf_t *prev = parent;
    ngx_stream_bottle_srv_conf_t *conf = child;

    ngx_stream_bottle_main_conf_t  *bmcf;

    ngx_conf_merge_value(conf->enable, prev->enable, 0);
    ngx_conf_merge_str_value(conf->realm, prev->realm, "bottle gateway");
    ngx_conf_merge_msec_value(conf->head_timeout, prev->head_timeout, 10000);
    ngx_conf_merge_uint_value(conf->max_heads, prev->max_heads, 8);
    ngx_conf_merge_size_value(conf->limits.max_head, prev->limits.max_head,
                              8192);
    ngx_conf_merge_size_value(conf->limits.max_line, prev->limits.max_line,
                              4096);
    ngx_conf_merge_size_value(conf->limits.max_headers,
                              prev->limits.max_headers, 64);
    ngx_conf_merge_str_value(conf->plain_pass, prev->plain_pass, "");
    ngx_conf_merge_str_value(conf->tls_pass, prev->tls_pass, "");

    /* room for a whole head and the start of what follows it */
    conf->buffer_size = conf->limits.max_head + 1024;

    if (conf->limits.max_line > conf->limits.max_head) {
        conf->limits.max_line = conf->limits.max_head;
    }

    if (!conf->enable) {
        return NGX_CONF_OK;
    }

    if (ngx_bottle_cycle_store(cf->cycle) == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"bottle_front\" needs \"bottle_policy\" at the "
                           "top level, before the \"stream\" block");
        return NGX_CONF_ERROR;
    }

    bmcf = ngx_stream_conf_get_module_main_conf(cf, ngx_stream_bottle_module);
    bmcf->used = 1;

    return NGX_CONF_OK;
}


static char *
ngx_stream_bottle_pass(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_str_t  *value, *field;

    field = (ngx_str_t *) ((char *) conf + cmd->offset);

    if (field->data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len <= sizeof("unix:") - 1
        || ngx_strncmp(value[1].data, "unix:", sizeof("unix:") - 1) != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": the internal listener "
                           "must be a \"unix:\" socket", &value[1]);
        return NGX_CONF_ERROR;
    }

    *field = value[1];

    return NGX_CONF_OK;
}


/* the preread handler is installed only when some server is a front */

static ngx_int_t
ngx_stream_bottle_init(ngx_conf_t *cf)
{
    ngx_stream_handler_pt          *h;
    ngx_stream_core_main_conf_t    *cmcf;
    ngx_stream_bottle_main_conf_t  *bmcf;

    bmcf = ngx_stream_conf_get_module_main_conf(cf, ngx_stream_bottle_module);

    if (!bmcf->used) {
        return NGX_OK;
    }

    cmcf = ngx_stream_conf_get_module_main_conf(cf, ngx_stream_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_STREAM_PREREAD_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_stream_bottle_preread_handler;

    return NGX_OK;
}
