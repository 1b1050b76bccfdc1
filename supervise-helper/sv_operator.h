/*
 * The operator page (docs/supervise.md, "Operator page"): an HTTP listener for
 * operators only, never on the bottles' network, serving one static page and a
 * JSON API over the proposals queue: the pending proposals, one proposal, the
 * recent decisions, and approve / deny / modify through libbottle's
 * bottle_decision_answer(), exactly as bottlectl answers.
 *
 * Its own libmicrohttpd daemon (a small thread pool); a store connection per
 * request (operators are few).  HTTP Basic, user "operator", the password the
 * first line of a file no one else may read.
 */

#ifndef SV_OPERATOR_H
#define SV_OPERATOR_H

#include <stddef.h>


#define SV_OPERATOR_LISTEN      "127.0.0.1:9101"
#define SV_OPERATOR_USER        "operator"
#define SV_OPERATOR_HEADER      "X-Bottle-Operator"     /* "1" on POST */
#define SV_OPERATOR_BODY_MAX    (64 * 1024)             /* 413 beyond */
#define SV_OPERATOR_PAGE        50      /* pending proposals a page lists
                                           by default */
#define SV_OPERATOR_PAGE_MAX    500     /* ?limit= at most */
#define SV_OPERATOR_RECENT      20      /* decisions, refusals listed */
#define SV_OPERATOR_SCAN        200     /* newest proposals read for them */
#define SV_OPERATOR_BOTTLE_MAX  128     /* a bottle id in a query */
#define SV_OPERATOR_FEED        50      /* refusals in one answer at most */
#define SV_OPERATOR_JOURNAL_SCAN 2000   /* journal entries read for them */


typedef struct sv_operator_s  sv_operator_t;

typedef struct {
    const char  *listen;        /* "127.0.0.1:9101", "[::1]:9101"; NULL:
                                   SV_OPERATOR_LISTEN */
    const char  *store;         /* redis://... or unix:... */
    const char  *credential;    /* file: the password on its first line */
    const char  *log;           /* NULL: stderr */
    void       (*logf)(const char *fmt, ...);  /* the daemon's own log
                                                  (one line each), else
                                                  log above */
} sv_operator_conf_t;


/*
 * Reads the credential (refused if the file is readable by group or
 * others, or empty), parses the store URL and the address, and starts
 * listening.  0 and the running server in *out, or -1 and one line in
 * err.
 */
int sv_operator_start(sv_operator_t **out, const sv_operator_conf_t *conf,
    char *err, size_t errlen);

/* stops listening, waits for the requests in flight, frees op */
void sv_operator_stop(sv_operator_t *op);

/* the port it listens on (the one given, or the kernel's for port 0) */
unsigned sv_operator_port(const sv_operator_t *op);


#endif /* SV_OPERATOR_H */
