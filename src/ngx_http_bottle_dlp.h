
/*
 * Outbound DLP, shared by its two files: ngx_http_bottle_dlp.c (the scan
 * of the request's fields, the decision, redaction) and
 * ngx_http_bottle_dlp_body.c (the body: decoded, scanned, loaded whole,
 * redacted and encoded again).
 */

#ifndef _NGX_HTTP_BOTTLE_DLP_H_INCLUDED_
#define _NGX_HTTP_BOTTLE_DLP_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_bottle.h"
#include "bottle_coding.h"
#include "bottle_scan.h"


#define NGX_HTTP_BOTTLE_DLP_CHUNK   65536

#define NGX_HTTP_BOTTLE_F_HOST      0
#define NGX_HTTP_BOTTLE_F_PATH      1
#define NGX_HTTP_BOTTLE_F_QUERY     2
#define NGX_HTTP_BOTTLE_F_BODY      3
#define NGX_HTTP_BOTTLE_F_METHOD    4
#define NGX_HTTP_BOTTLE_F_HEADER    16

/* each header is two fields: its value, then its name */
#define ngx_http_bottle_f_value(i)  (NGX_HTTP_BOTTLE_F_HEADER + 2 * (int) (i))
#define ngx_http_bottle_f_name(i)   (ngx_http_bottle_f_value(i) + 1)

#define NGX_HTTP_BOTTLE_BLOCKING                                             \
    ((1u << BOTTLE_DETECT_KNOWN_SECRETS) | (1u << BOTTLE_DETECT_TOKEN_PATTERNS))


typedef struct {
    ngx_http_request_t      *r;
    ngx_http_bottle_ctx_t   *ctx;
    bottle_scan_t           *scan;
    ngx_array_t              headers;    /* ngx_table_elt_t *, by field */
    ngx_str_t                body;       /* decoded, in one buffer */
    ngx_uint_t               injected;   /* field of the injected header */
    int                      codings[BOTTLE_CODING_MAX];
    size_t                   ncodings;   /* Content-Encoding, identity: 0 */
    bottle_decoder_t        *decoder;
    uint64_t                 limit;      /* of each decoding stage */
    uint64_t                 decoded;    /* the decoded body's size */
} ngx_http_bottle_dlp_t;


ngx_int_t ngx_http_bottle_dlp_body(ngx_http_bottle_dlp_t *d);
ngx_int_t ngx_http_bottle_dlp_body_load(ngx_http_bottle_dlp_t *d);
ngx_int_t ngx_http_bottle_dlp_redact_body(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, size_t n);
ngx_int_t ngx_http_bottle_dlp_redact_str(ngx_http_bottle_dlp_t *d,
    ngx_str_t *s, int field, const bottle_scan_match_t *m, size_t n);


#endif /* _NGX_HTTP_BOTTLE_DLP_H_INCLUDED_ */
