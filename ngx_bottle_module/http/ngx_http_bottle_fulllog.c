
/*
 * The full log (docs/full-log.md): <bottle_full_log_dir>/full.jsonl, mode
 * 0600, one JSON line per request and one per response, appended by every
 * worker with one writev() each (O_APPEND: the lines of two workers never
 * interleave), as access_log writes without a buffer.
 *
 * Rotation at 16 MiB keeps three older files (full.jsonl.1 to .3).  A
 * worker that finds the file over the size takes the metrics zone's lock,
 * and rotates only if no other worker did since it opened its file (the
 * zone's generation); every worker compares the generation before each
 * write and reopens when it moved.  A write that fails (a full disk) drops
 * the record, says so once for the whole gateway (a flag in the zone, the
 * first worker to set it says it), and says so again when writing works
 * again.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/uio.h>

#include "ngx_http_bottle_record.h"


typedef struct {
    ngx_fd_t             fd;
    ngx_atomic_uint_t    gen;        /* the zone's, when fd was opened */
    u_char              *path;       /* .../full.jsonl, NUL-terminated */
    size_t               path_len;
    ngx_log_t           *log;
    unsigned             on:1;
    unsigned             failing:1;  /* without the zone: this worker's */
} ngx_http_bottle_fulllog_t;


static ngx_int_t ngx_http_bottle_fulllog_open(void);
static void ngx_http_bottle_fulllog_rotate(void);
static ngx_uint_t ngx_http_bottle_fulllog_failing(ngx_uint_t failing);


static ngx_http_bottle_fulllog_t  ngx_http_bottle_fulllog;


static ngx_uint_t ngx_http_bottle_fulllog_wants(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
static void ngx_http_bottle_fulllog_end(ngx_http_bottle_end_t *e);

static const ngx_http_bottle_end_observer_t  ngx_http_bottle_fulllog_observer = {
    ngx_http_bottle_fulllog_wants,
    ngx_http_bottle_fulllog_end
};


ngx_int_t
ngx_http_bottle_fulllog_init_process(ngx_cycle_t *cycle, ngx_str_t *dir)
{
    u_char                     *p;
    ngx_http_bottle_fulllog_t  *fl = &ngx_http_bottle_fulllog;

    ngx_memzero(fl, sizeof(ngx_http_bottle_fulllog_t));
    fl->fd = NGX_INVALID_FILE;

    if (ngx_http_bottle_end_observe(&ngx_http_bottle_fulllog_observer)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (dir == NULL || dir->len == 0) {
        return NGX_OK;
    }

    fl->path = ngx_pnalloc(cycle->pool, dir->len + sizeof("/"
                                        NGX_HTTP_BOTTLE_FULLLOG_NAME ".9"));
    if (fl->path == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(fl->path, "%V/" NGX_HTTP_BOTTLE_FULLLOG_NAME, dir);
    fl->path_len = p - fl->path;
    *p = '\0';

    fl->log = cycle->log;
    fl->on = 1;

    /* a file that cannot be opened yet is tried again at each record */
    (void) ngx_http_bottle_fulllog_open();

    return NGX_OK;
}


/* a request's end: its two lines when its route logs in full */

static ngx_uint_t
ngx_http_bottle_fulllog_wants(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx)
{
    return ctx->route && ctx->route->log_full && ngx_http_bottle_fulllog_on();
}


static void
ngx_http_bottle_fulllog_end(ngx_http_bottle_end_t *e)
{
    char    *req, *resp;
    size_t   req_len, resp_len;

    /* e->full: its route logs in full, as wants() asked (the bodies were
     * kept for it) */
    if (e->rec == NULL || !e->full) {
        return;
    }

    e->bodies(e, BOTTLE_RECORD_BODY_MAX, BOTTLE_RECORD_BODY_MAX);

    if (bottle_record_full(&req, &req_len, e->rec, 0) == 0) {
        if (bottle_record_full(&resp, &resp_len, e->rec, 1) == 0) {
            ngx_http_bottle_fulllog_write(e->r->connection->log, req, req_len,
                                          resp, resp_len);
            free(resp);
        }

        free(req);
    }
}


void
ngx_http_bottle_fulllog_exit_process(void)
{
    ngx_http_bottle_fulllog_t  *fl = &ngx_http_bottle_fulllog;

    if (!fl->on) {
        return;
    }

    if (fl->fd != NGX_INVALID_FILE) {
        (void) ngx_close_file(fl->fd);
        fl->fd = NGX_INVALID_FILE;
    }

    fl->on = 0;
}


ngx_uint_t
ngx_http_bottle_fulllog_on(void)
{
    return ngx_http_bottle_fulllog.on;
}


static ngx_int_t
ngx_http_bottle_fulllog_open(void)
{
    ngx_atomic_t               *gen;
    ngx_http_bottle_fulllog_t  *fl = &ngx_http_bottle_fulllog;

    if (fl->fd != NGX_INVALID_FILE) {
        (void) ngx_close_file(fl->fd);
    }

    gen = ngx_bottle_metrics_fulllog_gen();
    fl->gen = gen ? *gen : 0;

    fl->fd = ngx_open_file(fl->path, NGX_FILE_APPEND,
                           NGX_FILE_CREATE_OR_OPEN, 0600);

    if (fl->fd == NGX_INVALID_FILE) {
        if (ngx_http_bottle_fulllog_failing(1)) {
            ngx_log_error(NGX_LOG_ERR, fl->log, ngx_errno,
                          "bottle: full log: cannot open \"%s\", records "
                          "are dropped until it can", fl->path);
        }

        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_http_bottle_fulllog_write(ngx_log_t *log, char *req, size_t req_len,
    char *resp, size_t resp_len)
{
    ssize_t                     n;
    ngx_err_t                   err;
    ngx_file_info_t             fi;
    ngx_atomic_t               *gen;
    struct iovec                iov[4];
    ngx_http_bottle_fulllog_t  *fl = &ngx_http_bottle_fulllog;

    if (!fl->on) {
        return;
    }

    gen = ngx_bottle_metrics_fulllog_gen();

    if (fl->fd == NGX_INVALID_FILE || (gen && *gen != fl->gen)) {
        if (ngx_http_bottle_fulllog_open() != NGX_OK) {
            ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FULL_LOG_DROPPED);
            ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FULL_LOG_DROPPED);
            return;
        }
    }

    iov[0].iov_base = req;
    iov[0].iov_len = req_len;
    iov[1].iov_base = "\n";
    iov[1].iov_len = 1;
    iov[2].iov_base = resp;
    iov[2].iov_len = resp_len;
    iov[3].iov_base = "\n";
    iov[3].iov_len = 1;

    n = writev(fl->fd, iov, 4);
    err = ngx_errno;

    if (n != (ssize_t) (req_len + resp_len + 2)) {
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FULL_LOG_DROPPED);
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FULL_LOG_DROPPED);

        if (ngx_http_bottle_fulllog_failing(1)) {
            ngx_log_error(NGX_LOG_ERR, log, n < 0 ? err : 0,
                          "bottle: full log: cannot write \"%s\" (%z of "
                          "%uz bytes), records are dropped until it can",
                          fl->path, n, req_len + resp_len + 2);
        }

        return;
    }

    ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FULL_LOG_RECORDS);
    ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FULL_LOG_RECORDS);

    if (ngx_http_bottle_fulllog_failing(0)) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "bottle: full log: \"%s\" written again", fl->path);
    }

    if (ngx_fd_info(fl->fd, &fi) != NGX_FILE_ERROR
        && ngx_file_size(&fi) >= NGX_HTTP_BOTTLE_FULLLOG_MAX)
    {
        ngx_http_bottle_fulllog_rotate();
    }
}


/* full.jsonl.2 -> .3, .1 -> .2, full.jsonl -> .1: once, by one worker */

static void
ngx_http_bottle_fulllog_rotate(void)
{
    u_char                     *from, *to;
    ngx_int_t                   i;
    ngx_atomic_t               *gen;
    ngx_http_bottle_fulllog_t  *fl = &ngx_http_bottle_fulllog;

    gen = ngx_bottle_metrics_fulllog_gen();
    if (gen == NULL) {
        return;
    }

    from = ngx_alloc(2 * (fl->path_len + 3), fl->log);
    if (from == NULL) {
        return;
    }

    to = from + fl->path_len + 3;

    ngx_bottle_metrics_lock();

    if (*gen == fl->gen) {
        for (i = NGX_HTTP_BOTTLE_FULLLOG_KEEP - 1; i >= 0; i--) {
            if (i == 0) {
                ngx_sprintf(from, "%s%Z", fl->path);
            } else {
                ngx_sprintf(from, "%s.%i%Z", fl->path, i);
            }

            ngx_sprintf(to, "%s.%i%Z", fl->path, i + 1);

            if (ngx_rename_file(from, to) == NGX_FILE_ERROR
                && ngx_errno != NGX_ENOENT)
            {
                ngx_log_error(NGX_LOG_ERR, fl->log, ngx_errno,
                              "bottle: full log: cannot rename \"%s\" to "
                              "\"%s\"", from, to);
            }
        }

        (*gen)++;
        ngx_bottle_metrics_count(NGX_BOTTLE_METRIC_FULL_LOG_ROTATIONS);
    }

    ngx_bottle_metrics_unlock();

    ngx_free(from);

    (void) ngx_http_bottle_fulllog_open();
}


/*
 * The gateway's "cannot write" state set (failing 1) or cleared (0): 1 if
 * this call changed it, and the caller says so.  In the zone, so that of
 * two workers failing at once one says it; a plain load when nothing
 * changes.
 */

static ngx_uint_t
ngx_http_bottle_fulllog_failing(ngx_uint_t failing)
{
    ngx_atomic_t               *sh;
    ngx_http_bottle_fulllog_t  *fl = &ngx_http_bottle_fulllog;

    sh = ngx_bottle_metrics_fulllog_failing();

    if (sh == NULL) {
        if (fl->failing == failing) {
            return 0;
        }

        fl->failing = failing;
        return 1;
    }

    if (*sh == failing) {
        return 0;
    }

    return ngx_atomic_cmp_set(sh, !failing, failing);
}
