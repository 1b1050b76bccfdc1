
/*
 * The record of what happened (ngx_http_bottle_record.c): the full log
 * (ngx_http_bottle_fulllog.c), the firehose (ngx_http_bottle_firehose.c)
 * and the metrics endpoint (ngx_http_bottle_metrics.c), fed by one log-phase handler and two body
 * filters.  docs/full-log.md, docs/firehose.md, docs/metrics.md.
 */

#ifndef _NGX_HTTP_BOTTLE_RECORD_H_INCLUDED_
#define _NGX_HTTP_BOTTLE_RECORD_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_record.h"


#define NGX_HTTP_BOTTLE_FULLLOG_NAME      "full.jsonl"
#define NGX_HTTP_BOTTLE_FULLLOG_MAX       (16 * 1024 * 1024)
#define NGX_HTTP_BOTTLE_FULLLOG_KEEP      3

#define NGX_HTTP_BOTTLE_FIREHOSE_CHANNEL  BOTTLE_RECORD_FIREHOSE_CHANNEL
#define NGX_HTTP_BOTTLE_FIREHOSE_QUEUE    1024
#define NGX_HTTP_BOTTLE_FIREHOSE_INFLIGHT 16       /* batches */
#define NGX_HTTP_BOTTLE_FIREHOSE_BATCH    (64 * 1024 * 1024)
/* a batch's buffer kept for the next one up to this size */
#define NGX_HTTP_BOTTLE_FIREHOSE_KEEP     (1024 * 1024)
#define NGX_HTTP_BOTTLE_FIREHOSE_POLL     1000     /* ms: PUBSUB NUMSUB */


typedef struct {
    ngx_str_t                full_log_dir;   /* "": off */
    ngx_int_t                firehose_queue;
    size_t                   firehose_body;  /* max_body_bytes */
    ngx_uint_t               metrics_used;   /* a bottle_metrics location */
    ngx_uint_t               watching;       /* the handlers are installed */
} ngx_http_bottle_record_main_conf_t;


/*
 * A request's end, reported once by the record module's log handler
 * (ngx_http_bottle_end.c) to the observers registered in its
 * init_process: the metrics, the full log, the firehose, called in the
 * order they registered.  wants(): the observer needs the request's
 * record; the record is then built once for all of them, and bodies()
 * puts the kept request body (cut at req_cut) and, when resp_cut is not
 * 0, the response body in it.  end(): the request's end, e->rec NULL when
 * no observer wanted a record or it could not be built.
 */
typedef struct ngx_http_bottle_end_s  ngx_http_bottle_end_t;

struct ngx_http_bottle_end_s {
    ngx_http_request_t      *r;
    ngx_http_bottle_ctx_t   *ctx;
    bottle_record_t         *rec;
    void                    *captures;  /* the record module's own */
    ngx_uint_t               full;      /* the bodies kept for the full log */
    void                   (*bodies)(ngx_http_bottle_end_t *e,
                                     size_t req_cut, size_t resp_cut);
};

typedef struct {
    ngx_uint_t             (*wants)(ngx_http_request_t *r,
                                    ngx_http_bottle_ctx_t *ctx);
    void                   (*end)(ngx_http_bottle_end_t *e);
} ngx_http_bottle_end_observer_t;

#define NGX_HTTP_BOTTLE_END_OBSERVERS  4

ngx_int_t ngx_http_bottle_end_observe(const ngx_http_bottle_end_observer_t *o);
ngx_uint_t ngx_http_bottle_end_wanted(ngx_http_request_t *r,
    ngx_http_bottle_ctx_t *ctx);
void ngx_http_bottle_end_report(ngx_http_bottle_end_t *e);

extern const ngx_http_bottle_end_observer_t  ngx_http_bottle_metrics_end;

/* full log */
ngx_int_t ngx_http_bottle_fulllog_init_process(ngx_cycle_t *cycle,
    ngx_str_t *dir);
void ngx_http_bottle_fulllog_exit_process(void);
ngx_uint_t ngx_http_bottle_fulllog_on(void);
void ngx_http_bottle_fulllog_write(ngx_log_t *log, char *req, size_t req_len,
    char *resp, size_t resp_len);

/* firehose */
ngx_int_t ngx_http_bottle_firehose_init_process(ngx_cycle_t *cycle,
    ngx_uint_t queue, size_t body);
void ngx_http_bottle_firehose_exit_process(void);
ngx_uint_t ngx_http_bottle_firehose_attached(void);
void ngx_http_bottle_firehose_publish(const bottle_record_t *rec,
    ngx_uint_t metadata);

ngx_int_t ngx_http_bottle_metrics_handler(ngx_http_request_t *r);


#endif /* _NGX_HTTP_BOTTLE_RECORD_H_INCLUDED_ */
