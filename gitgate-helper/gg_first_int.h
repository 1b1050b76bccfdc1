/*
 * The first clone's transport and helpers (gg_first.c, gg_first_rh.c):
 * the forge's smart HTTP, protocol v2, through libcurl in this process,
 * pkt-line output, the record of the refs an ls-refs listed.
 */

#ifndef GG_FIRST_INT_H
#define GG_FIRST_INT_H

#include <stddef.h>
#include <sys/types.h>
#include <curl/curl.h>

#include "gg_gate.h"
#include "gg_pkt.h"


#define GG_FIRST_BODY_MAX   (1024 * 1024)   /* an agent request parsed */
#define GG_FIRST_REFS_MAX   100000          /* forge refs held */
#define GG_FIRST_BUF        (4 * GG_PKT_MAX)
#define GG_FIRST_OUT        (64 * 1024)
#define GG_FIRST_CACHE_AGE  60              /* seconds */
#define GG_FIRST_PIPE       (1024 * 1024)   /* pipe-max-size's default */
#define GG_FIRST_READ       (64 * 1024)     /* libcurl's reads */

/*
 * One forge connection (kept alive across its requests): each answer's
 * body is read into buf as the caller asks for pkt-lines, and ends with
 * a 0002 (response end) the transport adds once the answer is whole, as
 * git's stateless-connect does.
 */
typedef struct {
    CURL                *h;
    CURLM               *m;
    struct curl_slist   *hdr;       /* a GET's headers */
    struct curl_slist   *post;      /* a POST's: its own, then hdr */
    const char          *url;       /* the repo's, no trailing '/' */
    char                *req;       /* the request's url */
    int                  added;     /* h is in m */
    int                  checked;   /* the answer's status and type */
    int                  done;      /* the transfer ended */
    int                  ended;     /* its 0002 is in buf */
    int                  paused;
    CURLcode             result;
    const char          *type;      /* the content type expected */
    size_t               pos, len;
    char                 buf[GG_FIRST_BUF];
} gg_rh_t;

typedef struct {
    char        *oids;          /* GG_PKT_OID_HEX each */
    size_t       n, size;
    unsigned     failed:1;
} gg_seen_t;

typedef struct {
    int          fd;
    int          gone;          /* the agent left: keep filling */
    size_t       len;
    char         buf[GG_FIRST_OUT];
} gg_out_t;


int gg_allowed(gg_rh_t *rh, char **oids, size_t *n, char *err,
    size_t errlen);
int gg_first_oid_cmp(const void *a, const void *b);
int gg_forge_refs(gg_ctx_t *ctx, char *out, size_t size, char *err,
    size_t errlen);
int gg_rh_open(gg_ctx_t *ctx, gg_rh_t *rh, char *err, size_t errlen);
void gg_rh_close(gg_rh_t *rh);
int gg_rh_fill(gg_rh_t *rh);
int gg_rh_pkt(gg_rh_t *rh, int *type, const char **d, size_t *dlen,
    const char **raw, size_t *rawlen);
int gg_rh_send(gg_rh_t *rh, const char *req, size_t len);
int gg_pkt_add(char *buf, size_t size, size_t *len, const char *s,
    size_t slen);
void gg_out(gg_out_t *o, const char *p, size_t len);
void gg_out_flush(gg_out_t *o);
int gg_first_write(int fd, const char *p, size_t len);
int gg_first_copy(int from, int to);
void gg_seen_add(gg_seen_t *c, const char *oid);
void gg_seen_write(const gg_ctx_t *ctx, gg_seen_t *c);
int gg_seen_read(const gg_ctx_t *ctx, char **oids, size_t *n);
int gg_wants_in(const gg_v2_request_t *r, const char *oids, size_t n);

#endif /* GG_FIRST_INT_H */
