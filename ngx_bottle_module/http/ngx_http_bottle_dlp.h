
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
#define NGX_HTTP_BOTTLE_DLP_INLINE  1048576 /* plain, scanned in the loop */
#define NGX_HTTP_BOTTLE_DLP_WRAPPER 16384   /* all gzip header fields */
#define NGX_HTTP_BOTTLE_DLP_FIXED   6144    /* 6 bytes: 1024 gzip members */
#define NGX_HTTP_BOTTLE_DLP_GUARD   1000    /* ms: ngx_http_bottle_dlp_post() */

/* which bound a decoded body met */
#define NGX_HTTP_BOTTLE_LIMIT_BODY  0       /* client_max_body_size */
#define NGX_HTTP_BOTTLE_LIMIT_MAX   1       /* bottle_dlp_decoded_max */
#define NGX_HTTP_BOTTLE_LIMIT_RATIO 2       /* bottle_dlp_decoded_ratio */

#define NGX_HTTP_BOTTLE_F_HOST      0
#define NGX_HTTP_BOTTLE_F_PATH      1
#define NGX_HTTP_BOTTLE_F_QUERY     2
#define NGX_HTTP_BOTTLE_F_BODY      3
#define NGX_HTTP_BOTTLE_F_WRAPPER   4       /* the body's gzip headers */
#define NGX_HTTP_BOTTLE_F_FIXED     5       /* their MTIME, XFL, OS bytes */
#define NGX_HTTP_BOTTLE_F_METHOD    6
#define NGX_HTTP_BOTTLE_F_HEADER    16

/* each header is two fields: its value, then its name */
#define ngx_http_bottle_f_value(i)  (NGX_HTTP_BOTTLE_F_HEADER + 2 * (int) (i))
#define ngx_http_bottle_f_name(i)   (ngx_http_bottle_f_value(i) + 1)

#define NGX_HTTP_BOTTLE_BLOCKING                                             \
    ((1u << BOTTLE_DETECT_KNOWN_SECRETS) | (1u << BOTTLE_DETECT_TOKEN_PATTERNS))


typedef struct ngx_http_bottle_dlp_s  ngx_http_bottle_dlp_t;

typedef void (*ngx_http_bottle_dlp_work_pt)(ngx_http_bottle_dlp_t *d);

struct ngx_http_bottle_dlp_s {
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
    ngx_uint_t               limit_by;   /* NGX_HTTP_BOTTLE_LIMIT_* */
    ngx_int_t                ratio;      /* bottle_dlp_decoded_ratio */
    uint64_t                 decoded;    /* the decoded body's size */
    off_t                    raw;        /* the body's size as sent */

    /* the work, in a thread or not: no pool there */
    ngx_str_t                wrapper;    /* gzip header fields, scanned */
    ngx_str_t                fixed;      /* MTIME, XFL, OS of each member */
    u_char                  *chunk;      /* of the temporary file */
    u_char                  *copy;       /* the decoded body, malloc() */
    size_t                   copy_len;
    size_t                   copy_cap;
    int                      status;     /* BOTTLE_CODING_* */
    ngx_http_bottle_dlp_work_pt  work;   /* what the thread runs */
    ngx_event_t              guard;      /* a timer while it runs */
    ngx_str_t                redacted;   /* the decoded body, redacted */
    u_char                  *enc;        /* it encoded again, malloc() */
    size_t                   enc_len;
    void                    *held;       /* ngx_http_bottle_held.c's */
    unsigned                 wrapper_over:1;
    unsigned                 running:1;  /* in a thread */
};


ngx_int_t ngx_http_bottle_dlp_body(ngx_http_bottle_dlp_t *d);
ngx_int_t ngx_http_bottle_dlp_body_done(ngx_http_bottle_dlp_t *d);
void ngx_http_bottle_dlp_resume(ngx_http_request_t *r);
ngx_int_t ngx_http_bottle_dlp_body_load(ngx_http_bottle_dlp_t *d);
ngx_int_t ngx_http_bottle_dlp_redact_body(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, size_t n);
ngx_int_t ngx_http_bottle_dlp_hold(ngx_http_bottle_dlp_t *d,
    const bottle_scan_match_t *m, const u_char *where, const u_char *digest);
ngx_int_t ngx_http_bottle_dlp_redact_str(ngx_http_bottle_dlp_t *d,
    ngx_str_t *s, int field, const bottle_scan_match_t *m, size_t n);


#endif /* _NGX_HTTP_BOTTLE_DLP_H_INCLUDED_ */
