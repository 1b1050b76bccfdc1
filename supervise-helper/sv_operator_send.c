/*
 * The operator page's answers (sv_operator_int.h), below its three files
 * (sv_operator.c, sv_operator_api.c, sv_operator_view.c), calling none of
 * them: every response with the page's security headers
 * (sv_operator_send()), a JSON body or {"error": ...}, and the page's log
 * line.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <microhttpd.h>

#include "bottle_decision.h"
#include "sv_operator.h"
#include "sv_operator_int.h"


enum MHD_Result
sv_operator_send(struct MHD_Connection *c, unsigned status, const char *type,
    const void *data, size_t len, int copy, const char *allow)
{
    enum MHD_Result       rc;
    struct MHD_Response  *r;

    r = MHD_create_response_from_buffer(len, (void *) data,
                                        copy ? MHD_RESPMEM_MUST_COPY
                                             : MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        return MHD_NO;
    }

    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Content-Security-Policy", SV_OPERATOR_CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cross-Origin-Resource-Policy", "same-origin");
    MHD_add_response_header(r, "Cache-Control", "no-store");

    if (allow) {
        MHD_add_response_header(r, "Allow", allow);
    }

    rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);

    return rc;
}


enum MHD_Result
sv_operator_json(struct MHD_Connection *c, unsigned status, json_t *o)
{
    char             *s;
    enum MHD_Result   rc;

    s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);

    if (s == NULL) {
        return sv_operator_send(c, 500, "application/json",
                                "{\"error\":\"out of memory\"}", 25, 0,
                                NULL);
    }

    rc = sv_operator_send(c, status, "application/json", s, strlen(s), 1,
                          NULL);
    free(s);

    return rc;
}


enum MHD_Result
sv_operator_error(struct MHD_Connection *c, unsigned status,
    const char *fmt, ...)
{
    char     msg[BOTTLE_DECISION_ERR_LEN + 64];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);

    return sv_operator_json(c, status, json_pack("{s:s}", "error", msg));
}


void
sv_operator_logf(sv_operator_t *op, const char *fmt, ...)
{
    char     line[2048];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);

    if (op->logf) {
        op->logf("operator page: %s", line);
        return;
    }

    fprintf(op->log, "operator page: %s\n", line);
    fflush(op->log);
}
