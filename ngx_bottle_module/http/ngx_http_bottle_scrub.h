
/*
 * The held-secret scrubber's databases, shared by the responses of one
 * worker (ngx_http_bottle_scrub_cache.c): a database is built once per set
 * of held values and kept while responses use it, the least recently used
 * of the unused ones going when the cache is full.  Entries are found by
 * the values themselves (compared whole), never by a pointer a policy
 * reload could reuse.
 */

#ifndef _NGX_HTTP_BOTTLE_SCRUB_H_INCLUDED_
#define _NGX_HTTP_BOTTLE_SCRUB_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include "bottle_scrub.h"


/* the databases one worker keeps */
#define NGX_HTTP_BOTTLE_SCRUB_CACHE  32


/*
 * *db for v[0..n-1] (NULL when nothing is held) and *handle to give back
 * with ngx_http_bottle_scrub_cache_put(); NGX_ERROR with err set.
 */
ngx_int_t ngx_http_bottle_scrub_cache_get(ngx_pool_t *pool,
    const bottle_scrub_value_t *v, size_t n, bottle_scrub_db_t **db,
    void **handle, char *err, size_t errlen);
void ngx_http_bottle_scrub_cache_put(bottle_scrub_db_t *db, void *handle);


#endif /* _NGX_HTTP_BOTTLE_SCRUB_H_INCLUDED_ */
