
/*
 * A request's end, reported once (ngx_http_bottle_record.h): the record
 * module's log handler asks whether any observer wants the request's
 * record, builds it once, and reports the end to each observer in the
 * order they registered.  The observers register here, below both the
 * record module and themselves: the metrics, the full log, the firehose.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle_record.h"


static const ngx_http_bottle_end_observer_t
    *ngx_http_bottle_end_observers[NGX_HTTP_BOTTLE_END_OBSERVERS];
static ngx_uint_t  ngx_http_bottle_end_nobservers;


/* from an init_process: a second registration of one observer is none */

ngx_int_t
ngx_http_bottle_end_observe(const ngx_http_bottle_end_observer_t *o)
{
    ngx_uint_t  i;

    for (i = 0; i < ngx_http_bottle_end_nobservers; i++) {
        if (ngx_http_bottle_end_observers[i] == o) {
            return NGX_OK;
        }
    }

    if (ngx_http_bottle_end_nobservers == NGX_HTTP_BOTTLE_END_OBSERVERS) {
        return NGX_ERROR;
    }

    ngx_http_bottle_end_observers[ngx_http_bottle_end_nobservers++] = o;

    return NGX_OK;
}


ngx_uint_t
ngx_http_bottle_end_wanted(ngx_http_request_t *r, ngx_http_bottle_ctx_t *ctx)
{
    ngx_uint_t  i;

    for (i = 0; i < ngx_http_bottle_end_nobservers; i++) {
        if (ngx_http_bottle_end_observers[i]->wants
            && ngx_http_bottle_end_observers[i]->wants(r, ctx))
        {
            return 1;
        }
    }

    return 0;
}


void
ngx_http_bottle_end_report(ngx_http_bottle_end_t *e)
{
    ngx_uint_t  i;

    for (i = 0; i < ngx_http_bottle_end_nobservers; i++) {
        ngx_http_bottle_end_observers[i]->end(e);
    }
}
