
/*
 * The record of what happened: an http module of its own, beside the
 * pipeline, that only watches.  A log-phase handler reports the request's
 * end once to the observers registered in init_process
 * (ngx_http_bottle_end_observe()): the metrics count it
 * (ngx_http_bottle_metrics.c), the full log writes its two lines when its
 * route has log: "full" (ngx_http_bottle_fulllog.c), the firehose queues its
 * OCSF record while a consumer is attached (ngx_http_bottle_firehose.c);
 * the record is built once, for those that want it.  A request
 * body filter and a response body filter keep the first bytes of each
 * body and hash the whole, for those requests only; with neither a full
 * log route nor a consumer, nothing is copied or hashed.
 *
 * Directives: bottle_full_log_dir, bottle_firehose_queue,
 * bottle_firehose_max_body, bottle_metrics (docs/directives.md).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <openssl/evp.h>

#include "ngx_http_bottle_record.h"


/*
 * One body as it passes: the first bytes kept, all of it hashed once, for
 * the full log and the firehose both.  Armed when the request is to be
 * recorded; its buffer and hash are made when its first bytes come, so a
 * body-less request costs neither.
 */
typedef struct {
    u_char                  *data;
    size_t                   len;
    size_t                   cap;
    uint64_t                 size;
    EVP_MD_CTX              *sha;
    u_char                   sha256[32];
    unsigned                 armed:1;    /* to be captured */
    unsigned                 done:1;     /* sha256 is final */
    unsigned                 seen:1;
    unsigned                 no_sha:1;   /* a part was in a file */
    unsigned                 failed:1;   /* out of memory: not captured */
} ngx_http_bottle_capture_t;


typedef struct {
    ngx_http_bottle_capture_t  req;
    ngx_http_bottle_capture_t  resp;
    ngx_list_t               sent;       /* headers_in as sent */
    unsigned                 has_sent:1;
    unsigned                 decided:1;
    unsigned                 full:1;     /* the route logs in full */
    unsigned                 firehose:1; /* a consumer, audit.firehose full */
} ngx_http_bottle_record_ctx_t;


static void *ngx_http_bottle_record_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_bottle_record_init_main_conf(ngx_conf_t *cf,
    void *conf);
static char *ngx_http_bottle_metrics(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_bottle_record_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_bottle_record_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_bottle_record_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_bottle_record_init_process(ngx_cycle_t *cycle);
static void ngx_http_bottle_record_exit_process(ngx_cycle_t *cycle);
static ngx_http_bottle_record_ctx_t *ngx_http_bottle_record_get(
    ngx_http_request_t *r, ngx_uint_t create);
static ngx_int_t ngx_http_bottle_record_preaccess(ngx_http_request_t *r);
static ngx_http_bottle_record_ctx_t *ngx_http_bottle_record_ctx(
    ngx_http_request_t *r);
static void ngx_http_bottle_record_cleanup(void *data);
static void ngx_http_bottle_capture(ngx_pool_t *pool,
    ngx_http_bottle_capture_t *cap, ngx_chain_t *in);
static ngx_int_t ngx_http_bottle_record_request_body_filter(
    ngx_http_request_t *r, ngx_chain_t *in);
static ngx_int_t ngx_http_bottle_record_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_int_t ngx_http_bottle_record_log(ngx_http_request_t *r);
static void ngx_http_bottle_record_bodies(ngx_http_bottle_end_t *e,
    size_t req_cut, size_t resp_cut);
static ngx_int_t ngx_http_bottle_record_fill(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx, ngx_http_bottle_record_ctx_t *rc,
    bottle_record_t *rec);


static ngx_http_request_body_filter_pt  ngx_http_next_request_body_filter;
static ngx_http_output_header_filter_pt ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt   ngx_http_next_body_filter;


static ngx_conf_num_bounds_t  ngx_http_bottle_firehose_queue_bounds = {
    ngx_conf_check_num_bounds, 1, 1000000
};


static ngx_command_t  ngx_http_bottle_record_commands[] = {

    { ngx_string("bottle_full_log_dir"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_bottle_record_main_conf_t, full_log_dir),
      NULL },

    { ngx_string("bottle_firehose_queue"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_bottle_record_main_conf_t, firehose_queue),
      &ngx_http_bottle_firehose_queue_bounds },

    { ngx_string("bottle_firehose_max_body"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_bottle_record_main_conf_t, firehose_body),
      NULL },

    { ngx_string("bottle_metrics"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_bottle_metrics,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_bottle_record_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_bottle_record_init,           /* postconfiguration */

    ngx_http_bottle_record_create_main_conf, /* create main configuration */
    ngx_http_bottle_record_init_main_conf, /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_bottle_record_module = {
    NGX_MODULE_V1,
    &ngx_http_bottle_record_module_ctx,    /* module context */
    ngx_http_bottle_record_commands,       /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_bottle_record_init_module,    /* init module */
    ngx_http_bottle_record_init_process,   /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_bottle_record_exit_process,   /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/* the conf of this cycle's http block, for the workers; NULL: none */
static ngx_http_bottle_record_main_conf_t  *ngx_http_bottle_record_conf;


/* SHA-256, looked up once per worker rather than at each body's start */
static EVP_MD  *ngx_http_bottle_record_sha256;

/* the SHA-256 of no bytes: a body-less request's */
static const u_char  ngx_http_bottle_record_sha256_empty[32] = {
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14,
    0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c,
    0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55
};


static void *
ngx_http_bottle_record_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_bottle_record_main_conf_t  *rmcf;

    /*
     * set by ngx_pcalloc():
     *
     *     rmcf->full_log_dir = { 0, NULL };
     */

    rmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_bottle_record_main_conf_t));
    if (rmcf == NULL) {
        return NULL;
    }

    rmcf->firehose_queue = NGX_CONF_UNSET;
    rmcf->firehose_body = NGX_CONF_UNSET_SIZE;

    return rmcf;
}


static char *
ngx_http_bottle_record_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_bottle_record_main_conf_t *rmcf = conf;

    ngx_conf_init_value(rmcf->firehose_queue, NGX_HTTP_BOTTLE_FIREHOSE_QUEUE);
    ngx_conf_init_size_value(rmcf->firehose_body, BOTTLE_RECORD_BODY_MAX);

    if (rmcf->firehose_body > 1024 * 1024) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"bottle_firehose_max_body\" must be at most 1m");
        return NGX_CONF_ERROR;
    }

    if (rmcf->full_log_dir.len > 1
        && rmcf->full_log_dir.data[rmcf->full_log_dir.len - 1] == '/')
    {
        rmcf->full_log_dir.len--;
    }

    if (rmcf->full_log_dir.len
        && ngx_conf_full_name(cf->cycle, &rmcf->full_log_dir, 0) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* without it a route logged "full" is refused (ngx_bottle_module.c) */

    ngx_bottle_full_log = rmcf->full_log_dir.len ? NGX_BOTTLE_FULL_LOG_ON
                                                 : NGX_BOTTLE_FULL_LOG_OFF;

    return NGX_CONF_OK;
}


/* bottle_metrics: the location's content is the metrics */

static char *
ngx_http_bottle_metrics(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t            *clcf;
    ngx_http_bottle_record_main_conf_t  *rmcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_bottle_metrics_handler;

    rmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_bottle_record_module);
    rmcf->metrics_used = 1;

    return NGX_CONF_OK;
}


/*
 * Installed only where the pipeline runs (bottle on, bottle_attribute):
 * the log handler, a preaccess handler and the body filters, which return
 * at once for requests the pipeline never saw.  The metrics zone is made
 * for them or for a bottle_metrics location, and the stream side counts
 * its refusals into it too.  Without any of them, nothing.
 */

static ngx_int_t
ngx_http_bottle_record_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt                 *h;
    ngx_http_core_main_conf_t           *cmcf;
    ngx_http_bottle_main_conf_t         *bmcf;
    ngx_http_bottle_record_main_conf_t  *rmcf;

    bmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_bottle_module);
    rmcf = ngx_http_conf_get_module_main_conf(cf,
                                              ngx_http_bottle_record_module);

    ngx_http_bottle_record_conf = rmcf;

    if (!bmcf->used && !bmcf->attribute_used && !rmcf->metrics_used) {
        return NGX_OK;
    }

    if (ngx_bottle_metrics_zone_add(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (!bmcf->used && !bmcf->attribute_used) {
        return NGX_OK;
    }

    rmcf->watching = 1;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_bottle_record_log;

    /* pushed after the pipeline's: runs before it */

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_bottle_record_preaccess;

    ngx_http_next_request_body_filter = ngx_http_top_request_body_filter;
    ngx_http_top_request_body_filter =
                                     ngx_http_bottle_record_request_body_filter;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_bottle_record_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_bottle_record_body_filter;

    return NGX_OK;
}


/*
 * The full log's directory, as nginx makes its temporary ones: created
 * 0700 if missing and, when the master runs as root, given to the workers'
 * user with the log files in it, so that a worker can create and rotate
 * them.
 */

static ngx_int_t
ngx_http_bottle_record_init_module(ngx_cycle_t *cycle)
{
    u_char                              *name;
    ngx_uint_t                           i;
    ngx_file_info_t                      fi;
    ngx_core_conf_t                     *ccf;
    ngx_http_bottle_record_main_conf_t  *rmcf;

    rmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_bottle_record_module);

    if (rmcf == NULL || !rmcf->watching || rmcf->full_log_dir.len == 0) {
        return NGX_OK;
    }

    name = ngx_pnalloc(cycle->pool, rmcf->full_log_dir.len
                       + sizeof("/" NGX_HTTP_BOTTLE_FULLLOG_NAME ".9"));
    if (name == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(name, "%V%Z", &rmcf->full_log_dir);

    if (ngx_create_dir(name, 0700) == NGX_FILE_ERROR
        && ngx_errno != NGX_EEXIST)
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      ngx_create_dir_n " \"%s\" failed", name);
        return NGX_ERROR;
    }

    if (geteuid() != 0) {
        return NGX_OK;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    for (i = 0; i <= NGX_HTTP_BOTTLE_FULLLOG_KEEP; i++) {
        if (i == 0) {
            ngx_sprintf(name, "%V%Z", &rmcf->full_log_dir);

        } else if (i == 1) {
            ngx_sprintf(name, "%V/" NGX_HTTP_BOTTLE_FULLLOG_NAME "%Z",
                        &rmcf->full_log_dir);
        } else {
            ngx_sprintf(name, "%V/" NGX_HTTP_BOTTLE_FULLLOG_NAME ".%ui%Z",
                        &rmcf->full_log_dir, i - 1);
        }

        /* a symbolic link is left as it is */

        if (lstat((char *) name, &fi) == -1
            || !(S_ISDIR(fi.st_mode) || S_ISREG(fi.st_mode))
            || fi.st_uid == ccf->user)
        {
            continue;
        }

        if (chown((char *) name, ccf->user, -1) == -1) {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                          "chown(\"%s\", %d) failed", name, ccf->user);
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_bottle_record_init_process(ngx_cycle_t *cycle)
{
    ngx_http_bottle_record_main_conf_t  *rmcf;

    ngx_bottle_metrics_init_process(cycle);
    ngx_bottle_final_init_process();

    /* NULL: EVP_sha256() at each body, as before */
    ngx_http_bottle_record_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);

    rmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_bottle_record_module);

    if (rmcf == NULL) {
        /* no http block in this cycle */
        ngx_http_bottle_record_conf = NULL;
        return NGX_OK;
    }

    ngx_http_bottle_record_conf = rmcf;

    if (!rmcf->watching) {
        /* no bottle here: no file, no Redis connection */
        return NGX_OK;
    }

    /* a request's end: counted, then the full log, then the firehose */
    if (ngx_http_bottle_end_observe(&ngx_http_bottle_metrics_end) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_bottle_fulllog_init_process(cycle, &rmcf->full_log_dir)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_bottle_firehose_init_process(cycle, rmcf->firehose_queue,
                                                 rmcf->firehose_body);
}


static void
ngx_http_bottle_record_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_bottle_fulllog_exit_process();
    ngx_http_bottle_firehose_exit_process();
    ngx_bottle_metrics_exit_process();

    EVP_MD_free(ngx_http_bottle_record_sha256);
    ngx_http_bottle_record_sha256 = NULL;
}


/*
 * The request's record ctx: made before the pipeline runs when anything
 * may be recorded (its headers as the agent sent them, before credentials
 * are stripped), or else the first time a filter or the log handler asks;
 * what is recorded is decided once, when the pipeline has found the
 * bottle and the route.  It survives an internal redirect as the bottle
 * ctx does, as its pool cleanup's data.
 */

static ngx_http_bottle_record_ctx_t *
ngx_http_bottle_record_get(ngx_http_request_t *r, ngx_uint_t create)
{
    ngx_pool_cleanup_t            *cln;
    ngx_http_bottle_record_ctx_t  *rc;

    rc = ngx_http_get_module_ctx(r, ngx_http_bottle_record_module);
    if (rc) {
        return rc;
    }

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_bottle_record_cleanup) {
            rc = cln->data;
            ngx_http_set_ctx(r, rc, ngx_http_bottle_record_module);
            return rc;
        }
    }

    if (!create || r != r->main) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_bottle_record_ctx_t));
    if (cln == NULL) {
        return NULL;
    }

    rc = cln->data;
    ngx_memzero(rc, sizeof(ngx_http_bottle_record_ctx_t));
    cln->handler = ngx_http_bottle_record_cleanup;

    ngx_http_set_ctx(r, rc, ngx_http_bottle_record_module);

    return rc;
}


/* the headers as sent: the pipeline strips from a new list, not this one */

static ngx_int_t
ngx_http_bottle_record_preaccess(ngx_http_request_t *r)
{
    ngx_http_bottle_record_ctx_t  *rc;

    if (r != r->main
        || (!ngx_http_bottle_fulllog_on()
            && !ngx_http_bottle_firehose_attached()))
    {
        return NGX_DECLINED;
    }

    rc = ngx_http_bottle_record_get(r, 0);

    if (rc == NULL) {
        rc = ngx_http_bottle_record_get(r, 1);

        if (rc) {
            rc->sent = r->headers_in.headers;
            rc->has_sent = 1;
        }
    }

    return NGX_DECLINED;
}


static ngx_http_bottle_record_ctx_t *
ngx_http_bottle_record_ctx(ngx_http_request_t *r)
{
    const bottle_t                *b;
    ngx_http_bottle_ctx_t         *ctx;
    ngx_http_bottle_record_ctx_t  *rc;

    ctx = ngx_http_bottle_get_ctx(r);
    if (ctx == NULL) {
        return NULL;
    }

    rc = ngx_http_bottle_record_get(r, 1);
    if (rc == NULL || rc->decided) {
        return rc;
    }

    rc->decided = 1;

    b = ctx->verdict.bottle;

    rc->full = ctx->route && ctx->route->log_full
               && ngx_http_bottle_fulllog_on();
    rc->firehose = b && b->firehose == BOTTLE_FIREHOSE_FULL
                   && ngx_http_bottle_firehose_attached();

    if (rc->full) {
        rc->req.cap = BOTTLE_RECORD_BODY_MAX;
        rc->resp.cap = BOTTLE_RECORD_BODY_MAX;
    }

    if (rc->firehose && ngx_http_bottle_record_conf
        && ngx_http_bottle_record_conf->firehose_body > rc->req.cap)
    {
        rc->req.cap = ngx_http_bottle_record_conf->firehose_body;
    }

    rc->req.armed = rc->full || rc->firehose;
    rc->resp.armed = rc->full;

    return rc;
}


static void
ngx_http_bottle_record_cleanup(void *data)
{
    ngx_http_bottle_record_ctx_t  *rc = data;

    EVP_MD_CTX_free(rc->req.sha);
    EVP_MD_CTX_free(rc->resp.sha);
}


static void
ngx_http_bottle_capture(ngx_pool_t *pool, ngx_http_bottle_capture_t *cap,
    ngx_chain_t *in)
{
    size_t      n;
    ngx_buf_t  *b;

    for ( /* void */ ; in; in = in->next) {
        b = in->buf;
        cap->seen = 1;

        if (b->in_file && !b->memory && !b->temporary && !b->mmap) {
            /* read from a file: counted, never read again here */
            cap->size += b->file_last - b->file_pos;
            cap->no_sha = 1;
            continue;
        }

        if (ngx_buf_special(b) || b->last == b->pos) {
            continue;
        }

        if (cap->data == NULL) {
            cap->data = ngx_pnalloc(pool, cap->cap + 1);
            cap->sha = EVP_MD_CTX_new();

            if (cap->data == NULL || cap->sha == NULL
                || EVP_DigestInit_ex(cap->sha,
                                     ngx_http_bottle_record_sha256
                                     ? ngx_http_bottle_record_sha256
                                     : EVP_sha256(), NULL)
                   != 1)
            {
                cap->failed = 1;
                cap->armed = 0;
                return;
            }
        }

        n = b->last - b->pos;
        cap->size += n;

        if (cap->len < cap->cap) {
            ngx_memcpy(cap->data + cap->len, b->pos,
                       ngx_min(n, cap->cap - cap->len));
            cap->len += ngx_min(n, cap->cap - cap->len);
        }

        /* the hash over the buffers where they are: no copy */

        if (EVP_DigestUpdate(cap->sha, b->pos, n) != 1) {
            cap->no_sha = 1;
        }
    }
}


static ngx_int_t
ngx_http_bottle_record_request_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in)
{
    ngx_http_bottle_record_ctx_t  *rc;

    rc = ngx_http_bottle_record_ctx(r);

    if (rc && rc->req.armed) {
        ngx_http_bottle_capture(r->pool, &rc->req, in);
    }

    return ngx_http_next_request_body_filter(r, in);
}


/*
 * A response the full log keeps comes to the capture in memory: nginx's
 * copy filter, which runs before ours (config's ngx_module_order), reads
 * a buffered response's temporary file into buffers when a filter asks.
 */

static ngx_int_t
ngx_http_bottle_record_header_filter(ngx_http_request_t *r)
{
    ngx_http_bottle_record_ctx_t  *rc;

    if (r == r->main && ngx_http_bottle_fulllog_on()) {
        rc = ngx_http_bottle_record_ctx(r);

        if (rc && rc->resp.armed) {
            r->filter_need_in_memory = 1;
        }
    }

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_bottle_record_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_http_bottle_record_ctx_t  *rc;

    if (r == r->main && in) {
        rc = ngx_http_bottle_record_ctx(r);

        if (rc && rc->resp.armed) {
            ngx_http_bottle_capture(r->pool, &rc->resp, in);
        }
    }

    return ngx_http_next_body_filter(r, in);
}


/* a body's record: the first cut bytes, the hash of the whole */

static void
ngx_http_bottle_record_body(ngx_http_bottle_capture_t *cap, size_t cut,
    bottle_record_body_t *out)
{
    ngx_memzero(out, sizeof(bottle_record_body_t));

    if (!cap->armed) {
        return;
    }

    if (!cap->done) {
        cap->done = 1;

        if (cap->sha == NULL) {
            /* no bytes came (or only from a file, no_sha) */
            ngx_memcpy(cap->sha256, ngx_http_bottle_record_sha256_empty, 32);

        } else if (EVP_DigestFinal_ex(cap->sha, cap->sha256, NULL) != 1) {
            cap->no_sha = 1;
        }
    }

    out->seen = 1;
    out->data = cap->data;
    out->len = ngx_min(cap->len, cut);
    out->size = cap->size;

    if (!cap->no_sha) {
        ngx_memcpy(out->sha256, cap->sha256, 32);
        out->has_sha256 = 1;
    }
}


/* e->bodies(): the kept bodies into the record */

static void
ngx_http_bottle_record_bodies(ngx_http_bottle_end_t *e, size_t req_cut,
    size_t resp_cut)
{
    ngx_http_bottle_record_ctx_t  *rc;

    rc = e->captures;

    ngx_http_bottle_record_body(&rc->req, req_cut, &e->rec->body);

    if (resp_cut) {
        ngx_http_bottle_record_body(&rc->resp, resp_cut, &e->rec->resp_body);
    }
}


/* the request's end, reported once to its observers */

static ngx_int_t
ngx_http_bottle_record_log(ngx_http_request_t *r)
{
    bottle_record_t                rec;
    ngx_http_bottle_end_t          e;
    ngx_http_bottle_ctx_t         *ctx;
    ngx_http_bottle_record_ctx_t  *rc;

    ctx = ngx_http_bottle_get_ctx(r);
    if (ctx == NULL) {
        return NGX_DECLINED;
    }

    ngx_memzero(&e, sizeof(ngx_http_bottle_end_t));
    e.r = r;
    e.ctx = ctx;
    e.bodies = ngx_http_bottle_record_bodies;

    if (ngx_http_bottle_end_wanted(r, ctx)) {
        rc = ngx_http_bottle_record_ctx(r);

        if (rc && ngx_http_bottle_record_fill(r, ctx, rc, &rec) == NGX_OK) {
            e.rec = &rec;
            e.captures = rc;
            e.full = rc->full;
        }
    }

    ngx_http_bottle_end_report(&e);

    return NGX_DECLINED;
}


static bottle_record_header_t *
ngx_http_bottle_record_headers(ngx_pool_t *pool, ngx_list_part_t *part,
    ngx_str_t *content_type, size_t *out)
{
    size_t                   n;
    ngx_uint_t               i;
    ngx_list_part_t         *p;
    ngx_table_elt_t         *h;
    bottle_record_header_t  *rh;

    n = 1;

    for (p = part; p; p = p->next) {
        n += p->nelts;
    }

    rh = ngx_palloc(pool, n * sizeof(bottle_record_header_t));
    if (rh == NULL) {
        return NULL;
    }

    n = 0;

    if (content_type && content_type->len) {
        rh[n].name = "Content-Type";
        rh[n].name_len = sizeof("Content-Type") - 1;
        rh[n].value = (const char *) content_type->data;
        rh[n].value_len = content_type->len;
        n++;
    }

    for (p = part; p; p = p->next) {
        h = p->elts;

        for (i = 0; i < p->nelts; i++) {
            if (h[i].hash == 0 || h[i].key.len == 0) {
                continue;
            }

            rh[n].name = (const char *) h[i].key.data;
            rh[n].name_len = h[i].key.len;
            rh[n].value = (const char *) h[i].value.data;
            rh[n].value_len = h[i].value.len;
            n++;
        }
    }

    *out = n;

    return rh;
}


#define ngx_http_bottle_record_str(dst, src)                                 \
    (dst).data = (const char *) (src).data; (dst).len = (src).len


static ngx_int_t
ngx_http_bottle_record_fill(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx,
    ngx_http_bottle_record_ctx_t *rc, bottle_record_t *rec)
{
    ngx_str_t                 args, rid;
    ngx_time_t               *tp;
    ngx_connection_t         *c;
    ngx_http_variable_value_t  *vv;

    static ngx_str_t  request_id = ngx_string("request_id");

    c = r->connection;
    ngx_memzero(rec, sizeof(bottle_record_t));

    tp = ngx_timeofday();
    rec->start_ms = (int64_t) r->start_sec * 1000 + r->start_msec;
    rec->end_ms = (int64_t) tp->sec * 1000 + tp->msec;

    rid = ctx->verdict.correlation;

    if (rid.len == 0) {
        vv = ngx_http_get_variable(r, &request_id,
                                   ngx_hash_key(request_id.data,
                                                request_id.len));
        if (vv && !vv->not_found) {
            rid.data = vv->data;
            rid.len = vv->len;
        }
    }

    ngx_http_bottle_record_str(rec->request_id, rid);

    rec->bottle = ctx->verdict.bottle;
    rec->route = ctx->route;

    ngx_http_bottle_record_str(rec->method, r->method_name);

#if (NGX_HTTP_SSL)
    if (c->ssl) {
        rec->scheme.data = "https";
        rec->scheme.len = 5;
    } else
#endif
    {
        rec->scheme.data = "http";
        rec->scheme.len = 4;
    }

    if (ctx->target.host.len) {
        ngx_http_bottle_record_str(rec->host, ctx->target.host);
    } else {
        ngx_http_bottle_record_str(rec->host, ctx->verdict.host);
    }

    rec->port = ctx->target.port;

    if (ctx->target.path.len) {
        ngx_http_bottle_record_str(rec->path, ctx->target.path);

        if (ctx->route
            && ngx_http_bottle_strip_args(r, ctx, &args) == NGX_OK
            && args.len)
        {
            ngx_http_bottle_record_str(rec->query, args);
        }
    }

    if (r->headers_in.user_agent) {
        ngx_http_bottle_record_str(rec->user_agent,
                                   r->headers_in.user_agent->value);
    }

    if (c->proxy_protocol) {
        ngx_http_bottle_record_str(rec->src_ip, c->proxy_protocol->src_addr);
        rec->src_port = c->proxy_protocol->src_port;

    } else {
        ngx_http_bottle_record_str(rec->src_ip, c->addr_text);
        rec->src_port = ngx_inet_get_port(c->sockaddr);
    }

    if (ctx->upstream.len) {
        ngx_http_bottle_record_str(rec->dst_addr, ctx->upstream);
    }

    rec->headers = ngx_http_bottle_record_headers(r->pool,
                                                  rc->has_sent
                                                  ? &rc->sent.part
                                                  : &r->headers_in.headers.part,
                                                  NULL, &rec->nheaders);
    rec->resp_headers = ngx_http_bottle_record_headers(r->pool,
                                             &r->headers_out.headers.part,
                                             &r->headers_out.content_type,
                                             &rec->nresp_headers);

    if (rec->headers == NULL || rec->resp_headers == NULL) {
        return NGX_ERROR;
    }

    rec->request_length = r->request_length;
    rec->allowed = (ctx->state == NGX_HTTP_BOTTLE_PASSED);

    if (ctx->state == NGX_HTTP_BOTTLE_REFUSED) {
        ngx_http_bottle_record_str(rec->rule,
                                   ngx_bottle_rule(ctx->verdict.rule)->name);
        ngx_http_bottle_record_str(rec->reason, ctx->verdict.reason);
    }

    rec->status = r->headers_out.status ? r->headers_out.status
                                        : r->err_status;

    rec->response_length = (c->sent > (off_t) r->header_size)
                           ? (uint64_t) (c->sent - r->header_size) : 0;

    if (rc->resp.seen) {
        rec->response_length = rc->resp.size;
    }

    return NGX_OK;
}
