/*
 * What the operator page's two files share (sv_operator.h): the server's
 * state, a request's body, the JSON answers and the log; the API's
 * handlers are sv_operator_api.c.
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


/* sv_operator_api.c: GET /api/proposals, GET /api/proposals/ID, and
 * POST /api/proposals/ID/ACTION (the CSRF checks passed) */

enum MHD_Result sv_operator_list(sv_operator_t *op, struct MHD_Connection *c);
enum MHD_Result sv_operator_show(sv_operator_t *op, struct MHD_Connection *c,
    const char *id);
enum MHD_Result sv_operator_answer(sv_operator_t *op,
    struct MHD_Connection *c, const char *id, const char *action,
    sv_request_t *req);


#endif /* SV_OPERATOR_INT_H */
