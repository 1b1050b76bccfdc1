
/*
 * The request's header list, as the steps read and replace it: below the
 * steps (credentials, DLP, scrub), which all call it.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"


static ngx_uint_t ngx_http_bottle_header_is(ngx_table_elt_t *h,
    const char *lowcase);


ngx_table_elt_t *
ngx_http_bottle_find_header(ngx_http_request_t *r, const char *lowcase,
    size_t len, ngx_uint_t *count)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h, *found;

    found = NULL;
    *count = 0;

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == len
                && ngx_strncasecmp(h[i].key.data, (u_char *) lowcase, len)
                   == 0)
            {
                if (found == NULL) {
                    found = &h[i];
                }

                (*count)++;
            }
        }
    }

    return found;
}


/*
 * The request's header list replaced by kept (a copy without some of its
 * headers), and the pointers nginx keeps into the old one cleared, so no
 * later module sees a dropped header: Authorization, Range and If-Range
 * found again among those kept, the Cookie shortcut left empty.
 */

void
ngx_http_bottle_headers_install(ngx_http_request_t *r, ngx_list_t *kept)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    /* a one-part list points at its own part: move that pointer along */

    r->headers_in.headers = *kept;

    if (kept->last == &kept->part) {
        r->headers_in.headers.last = &r->headers_in.headers.part;
    }

    r->headers_in.authorization = NULL;
    r->headers_in.range = NULL;
    r->headers_in.if_range = NULL;
#if (nginx_version >= 1023000)
    r->headers_in.cookie = NULL;
#else
    r->headers_in.cookies.nelts = 0;
#endif

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        h = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (ngx_http_bottle_header_is(&h[i], "authorization")) {
                r->headers_in.authorization = &h[i];

            } else if (ngx_http_bottle_header_is(&h[i], "range")) {
                r->headers_in.range = &h[i];

            } else if (ngx_http_bottle_header_is(&h[i], "if-range")) {
                r->headers_in.if_range = &h[i];
            }
        }
    }
}


static ngx_uint_t
ngx_http_bottle_header_is(ngx_table_elt_t *h, const char *lowcase)
{
    size_t  len;

    len = ngx_strlen(lowcase);

    return h->key.len == len
           && ngx_strncasecmp(h->key.data, (u_char *) lowcase, len) == 0;
}
