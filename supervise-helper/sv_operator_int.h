/*
 * What the operator page's files share (sv_operator.h): the server's
 * state, a request's body, the answers and the log (sv_operator_send.c,
 * below the others); the API's handlers are sv_operator_api.c and
 * sv_operator_view.c, which sv_operator.c routes to.
 */

#ifndef SV_OPERATOR_INT_H
#define SV_OPERATOR_INT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>
#include <microhttpd.h>
#include <openssl/sha.h>

#include "bottle_store.h"
#include "sv_operator.h"


struct sv_operator_s {
    struct MHD_Daemon       *daemon;
    bottle_store_url_t       url;
    unsigned char            secret[SHA256_DIGEST_LENGTH];  /* of
                                                  "operator:<password>" */
    void                   (*logf)(const char *fmt, ...);
    FILE                    *log;
    int                      own_log;
};


/* one request: its body as it arrives */
typedef struct {
    char                    *body;
    size_t                   len;
    int                      too_big;
} sv_request_t;


/* the page's Content-Security-Policy, on every response */
#define SV_OPERATOR_CSP                                                      \
    "default-src 'none'; script-src 'self'; style-src 'self'; "              \
    "connect-src 'self'; img-src 'none'; base-uri 'none'; "                  \
    "form-action 'none'; frame-ancestors 'none'"

/* a response with the page's security headers (and Allow, if given);
 * data copied if copy, else kept (static) */
enum MHD_Result sv_operator_send(struct MHD_Connection *c, unsigned status,
    const char *type, const void *data, size_t len, int copy,
    const char *allow);

/* o as the JSON body (steals o) */
enum MHD_Result sv_operator_json(struct MHD_Connection *c, unsigned status,
    json_t *o);

/* {"error": <the message>} */
enum MHD_Result sv_operator_error(struct MHD_Connection *c, unsigned status,
    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* one line "operator page: ...", through conf.logf if given */
void sv_operator_logf(sv_operator_t *op, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;


/* a listing's filter: ?bottle= and ?kind= (NULL: any) */
typedef struct {
    const char              *bottle;
    const char              *kind;
} sv_filter_t;

struct redisContext;
struct redisReply;


/* sv_operator_api.c: GET /api/proposals, GET /api/proposals/ID, and
 * POST /api/proposals/ID/ACTION (the CSRF checks passed) */

/* a store connection of its own, or NULL and why (logged) */
struct redisContext *sv_operator_connect(sv_operator_t *op, char *err,
    size_t errlen);

/* ?bottle= and ?kind=: 0, or -1 and why */
int sv_operator_filter(struct MHD_Connection *c, sv_filter_t *f, char *err,
    size_t errlen);

/* the proposals of ids as the page lists them, pending or answered ones,
 * max at most, those f keeps (NULL: all); NULL if the store failed */
json_t *sv_operator_entries(struct redisContext *rc, const char *const *ids,
    size_t n, size_t max, int decided, const sv_filter_t *f);

/* the pending (decided 0) or answered ones among a ZRANGE's ids */
json_t *sv_operator_recent(struct redisContext *rc, struct redisReply *ids,
    size_t max, int decided, const sv_filter_t *f);

enum MHD_Result sv_operator_list(sv_operator_t *op, struct MHD_Connection *c);
enum MHD_Result sv_operator_show(sv_operator_t *op, struct MHD_Connection *c,
    const char *id);
enum MHD_Result sv_operator_answer(sv_operator_t *op,
    struct MHD_Connection *c, const char *id, const char *action,
    sv_request_t *req);


/* sv_operator_view.c: GET /api/bottles, /api/bottles/ID, /api/refusals */

enum MHD_Result sv_operator_bottles(sv_operator_t *op,
    struct MHD_Connection *c);
enum MHD_Result sv_operator_bottle(sv_operator_t *op,
    struct MHD_Connection *c, const char *id);
enum MHD_Result sv_operator_refusals(sv_operator_t *op,
    struct MHD_Connection *c);


#endif /* SV_OPERATOR_INT_H */
