/*
 * MCP's Streamable HTTP transport on libmicrohttpd (docs/supervise.md):
 * POST / (or /mcp) carries one JSON-RPC message and is answered with
 * application/json; GET is 405 (no server-initiated stream); DELETE ends
 * a session.  The calling bottle is X-Bottle-Id, set by nginx's
 * `bottle_attribute mcp` and nothing else; a request without it is 401
 * and queues nothing.
 *
 * MHD runs its own polling thread (epoll) and a small pool.  A tools/call
 * that waits for the operator suspends its connection; sv_wait.c resumes
 * it, and the handler is called once more to answer.
 */

#define _POSIX_C_SOURCE  200809L

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <microhttpd.h>

#include "bottle_audit.h"
#include "supervise.h"


#define SV_SESSION_HEADER   "Mcp-Session-Id"
#define SV_VERSION_HEADER   "MCP-Protocol-Version"
#define SV_BOTTLE_HEADER    "X-Bottle-Id"
#define SV_REQUEST_HEADER   "X-Bottle-Request-Id"

enum {
    SV_READING = 0,
    SV_WAITING              /* suspended for a decision */
};

typedef struct {
    int                     phase;
    char                   *body;
    size_t                  len;
    size_t                  cap;
    int                     too_large;
    json_t                 *rpc_id;         /* the request's id */
    sv_call_t               call;
} sv_req_t;

typedef struct {
    char                    id[BOTTLE_AUDIT_RANDOM_LEN];
    char                    bottle[SV_BOTTLE_ID_MAX + 1];
    int64_t                 used_ms;
} sv_session_t;


static enum MHD_Result sv_http_handler(void *cls,
    struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload_data, size_t *upload_data_size,
    void **con_cls);
static void sv_http_completed(void *cls, struct MHD_Connection *c,
    void **con_cls, enum MHD_RequestTerminationCode toe);
static enum MHD_Result sv_http_post(struct MHD_Connection *c, sv_req_t *r);
static enum MHD_Result sv_http_delete(struct MHD_Connection *c);
static enum MHD_Result sv_http_rpc(struct MHD_Connection *c, sv_req_t *r,
    sv_msg_t *m);
static enum MHD_Result sv_http_tools_call(struct MHD_Connection *c,
    sv_req_t *r, sv_msg_t *m);
static enum MHD_Result sv_respond(struct MHD_Connection *c,
    unsigned status, json_t *o, const char *session);
static enum MHD_Result sv_respond_error(struct MHD_Connection *c,
    unsigned status, json_t *id, int code, const char *message);
static int sv_bottle_id(struct MHD_Connection *c, char *out, size_t size);
static int sv_accepts(const char *accept);
static int sv_bottle_exists(const char *id, char *err, size_t errlen);
static int sv_session_new(char *out, const char *bottle);
static int sv_session_find(const char *id, const char *bottle, int drop);


static pthread_mutex_t  sv_session_lock = PTHREAD_MUTEX_INITIALIZER;
static sv_session_t     sv_sessions[SV_SESSIONS_MAX];


int
sv_http_start(struct MHD_Daemon **out, const char *listen_on)
{
    int                  fd, one;
    const char          *colon;
    mode_t               old;
    struct stat          st;
    struct sockaddr_un   su;
    struct sockaddr_in   sin;

    *out = NULL;

    if (strncmp(listen_on, "unix:", 5) == 0) {
        if (strlen(listen_on + 5) == 0
            || strlen(listen_on + 5) >= sizeof(su.sun_path))
        {
            sv_log("failure '%s': a unix socket path of at most %zu bytes",
                   listen_on, sizeof(su.sun_path) - 1);
            return -1;
        }

        memset(&su, 0, sizeof(su));
        su.sun_family = AF_UNIX;
        strcpy(su.sun_path, listen_on + 5);

        /* a socket left by a previous run; never another kind of file */

        if (lstat(su.sun_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
            unlink(su.sun_path);
        }

        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd < 0) {
            sv_log("failure '%s': socket: %s", listen_on, strerror(errno));
            return -1;
        }

        /* created 0660 at once: never a moment open to others */

        old = umask(0117);

        if (bind(fd, (struct sockaddr *) &su, sizeof(su)) != 0) {
            umask(old);
            sv_log("failure '%s': bind: %s", listen_on, strerror(errno));
            close(fd);
            return -1;
        }

        umask(old);
        (void) chmod(su.sun_path, 0660);

    } else {
        colon = strrchr(listen_on, ':');
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;

        if (colon == NULL || colon - listen_on >= 64 || atoi(colon + 1) <= 0
            || atoi(colon + 1) > 65535)
        {
            sv_log("failure '%s': --listen is unix:/path or ADDRESS:PORT",
                   listen_on);
            return -1;
        }

        {
            char  addr[64];

            memcpy(addr, listen_on, colon - listen_on);
            addr[colon - listen_on] = '\0';

            if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
                sv_log("failure '%s': not an IPv4 address", listen_on);
                return -1;
            }
        }

        sin.sin_port = htons((unsigned short) atoi(colon + 1));

        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) {
            sv_log("failure '%s': socket: %s", listen_on, strerror(errno));
            return -1;
        }

        one = 1;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));

        if (bind(fd, (struct sockaddr *) &sin, sizeof(sin)) != 0) {
            sv_log("failure '%s': bind: %s", listen_on, strerror(errno));
            close(fd);
            return -1;
        }
    }

    if (listen(fd, 128) != 0) {
        sv_log("failure '%s': listen: %s", listen_on, strerror(errno));
        close(fd);
        return -1;
    }

    *out = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL
                            | MHD_ALLOW_SUSPEND_RESUME,
                            0, NULL, NULL, sv_http_handler, NULL,
                            MHD_OPTION_LISTEN_SOCKET, fd,
                            MHD_OPTION_THREAD_POOL_SIZE,
                            (unsigned int) SV_THREADS,
                            MHD_OPTION_NOTIFY_COMPLETED, sv_http_completed,
                            NULL,
                            MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned int) 120,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned int) 512,
                            MHD_OPTION_END);

    if (*out == NULL) {
        sv_log("failure '%s': cannot start the HTTP server", listen_on);
        close(fd);
        return -1;
    }

    return 0;
}


void
sv_http_stop(struct MHD_Daemon *d, const char *listen_on)
{
    int      fd;

    fd = MHD_quiesce_daemon(d);
    MHD_stop_daemon(d);

    if (fd >= 0) {
        close(fd);
    }

    if (strncmp(listen_on, "unix:", 5) == 0) {
        unlink(listen_on + 5);
    }
}


static enum MHD_Result
sv_http_handler(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
    int           pending;
    sv_req_t     *r;
    const char   *cl;
    json_t       *answer;

    (void) cls;
    (void) version;

    r = *con_cls;

    if (r == NULL) {
        r = calloc(1, sizeof(sv_req_t));
        if (r == NULL) {
            return MHD_NO;
        }

        *con_cls = r;

        if (strcmp(url, "/") != 0 && strcmp(url, "/mcp") != 0) {
            return sv_respond_error(c, MHD_HTTP_NOT_FOUND, NULL,
                                    SV_RPC_SERVER_ERROR,
                                    "not found: MCP is served on / and "
                                    "/mcp");
        }

        /* a declared body over the cap: refused before it is read */

        cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                         MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (strcmp(method, MHD_HTTP_METHOD_POST) == 0 && cl
            && strtoull(cl, NULL, 10) > SV_BODY_MAX)
        {
            r->too_large = 1;
            return sv_respond_error(c, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                                    SV_RPC_INVALID_REQUEST,
                                    "payload too large: at most 1048576 "
                                    "bytes (SV_BODY_MAX)");
        }

        return MHD_YES;
    }

    if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
        if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0) {
            return sv_http_delete(c);
        }

        return sv_respond_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, NULL,
                                SV_RPC_SERVER_ERROR,
                                "method not allowed: POST a JSON-RPC "
                                "message (no server-initiated stream)");
    }

    if (*upload_data_size) {
        if (!r->too_large && r->len + *upload_data_size <= SV_BODY_MAX) {
            if (r->len + *upload_data_size > r->cap) {
                size_t  cap = r->cap ? r->cap : 4096;
                char   *p;

                while (cap < r->len + *upload_data_size) {
                    cap *= 2;
                }

                p = realloc(r->body, cap);
                if (p == NULL) {
                    return MHD_NO;
                }

                r->body = p;
                r->cap = cap;
            }

            memcpy(r->body + r->len, upload_data, *upload_data_size);
            r->len += *upload_data_size;

        } else {
            r->too_large = 1;
        }

        *upload_data_size = 0;
        return MHD_YES;
    }

    if (r->phase == SV_WAITING) {

        /* resumed: a decision, the time is up, the subscriber came back
         * (it may have missed the decision), or shutdown; the store says
         * which, and a call with time left waits again */

        sv_wait_remove(&r->call.waiter);
        answer = sv_tools_answer(&r->call, &pending);

        if (pending && sv_now() < r->call.waiter.deadline_ms) {
            json_decref(answer);
            sv_wait_add(&r->call.waiter, r->call.proposal,
                        r->call.waiter.deadline_ms);

            if (sv_wait_suspend(&r->call.waiter, c)) {
                return MHD_YES;
            }

            answer = sv_tools_answer(&r->call, &pending);
        }

        if (answer == NULL) {
            return sv_respond_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                                    r->rpc_id, SV_RPC_INTERNAL,
                                    "internal error");
        }

        return sv_respond(c, MHD_HTTP_OK, sv_rpc_result(r->rpc_id, answer),
                          NULL);
    }

    return sv_http_post(c, r);
}


static enum MHD_Result
sv_http_post(struct MHD_Connection *c, sv_req_t *r)
{
    int               code;
    char              err[512];
    json_t           *id;
    sv_msg_t          m;
    enum MHD_Result   rc;
    const char       *v;

    if (sv_bottle_id(c, r->call.bottle, sizeof(r->call.bottle)) != 0) {
        sv_log("refused: a request without a valid %s (not through the "
               "gateway?)", SV_BOTTLE_HEADER);
        return sv_respond_error(c, MHD_HTTP_UNAUTHORIZED, NULL,
                                SV_RPC_SERVER_ERROR,
                                "unauthorized: no bottle: supervise is "
                                "reached through the gateway only");
    }

    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, SV_REQUEST_HEADER);
    if (v) {
        snprintf(r->call.request_id, sizeof(r->call.request_id), "%.100s",
                 v);
    }

    if (r->too_large) {
        return sv_respond_error(c, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                                SV_RPC_INVALID_REQUEST,
                                "payload too large: at most 1048576 bytes");
    }

    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_ACCEPT);
    if (v == NULL || !sv_accepts(v)) {
        return sv_respond_error(c, MHD_HTTP_NOT_ACCEPTABLE, NULL,
                                SV_RPC_SERVER_ERROR,
                                "not acceptable: the client must accept "
                                "both application/json and "
                                "text/event-stream");
    }

    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                    MHD_HTTP_HEADER_CONTENT_TYPE);
    if (v == NULL || strncasecmp(v, "application/json", 16) != 0
        || (v[16] != '\0' && v[16] != ';' && v[16] != ' '))
    {
        return sv_respond_error(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL,
                                SV_RPC_SERVER_ERROR,
                                "unsupported media type: Content-Type must "
                                "be application/json");
    }

    code = sv_rpc_parse(&m, r->body ? r->body : "", r->len, &id, err,
                        sizeof(err));
    if (code != 0) {
        rc = sv_respond_error(c, MHD_HTTP_BAD_REQUEST, id, code, err);
        json_decref(id);
        return rc;
    }

    json_decref(id);

    rc = sv_http_rpc(c, r, &m);
    sv_msg_free(&m);

    return rc;
}


/* one message of a bottle: the session's rules, then the method */

static enum MHD_Result
sv_http_rpc(struct MHD_Connection *c, sv_req_t *r, sv_msg_t *m)
{
    int          found, rc;
    char         session[BOTTLE_AUDIT_RANDOM_LEN], err[512];
    json_t      *res;
    const char  *sid, *pv, *version;

    r->rpc_id = m->id ? json_incref(m->id) : NULL;

    if (m->kind == SV_MSG_REQUEST && strcmp(m->method, "initialize") == 0) {
        found = sv_bottle_exists(r->call.bottle, err, sizeof(err));
        if (found != 1) {
            sv_log("refused bottle=%s: initialize: %s", r->call.bottle,
                   found == 0 ? "not in the store" : err);
            return sv_respond_error(c,
                                    found == 0
                                    ? MHD_HTTP_FORBIDDEN
                                    : MHD_HTTP_SERVICE_UNAVAILABLE,
                                    m->id, SV_RPC_SERVER_ERROR,
                                    found == 0
                                    ? "refused: this bottle is not known "
                                      "to the control plane"
                                    : "the control plane cannot be reached");
        }

        res = sv_rpc_initialize(m->params, &version);

        rc = (res == NULL) ? -1 : sv_session_new(session, r->call.bottle);

        if (rc == -2) {
            json_decref(res);
            return sv_respond_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, m->id,
                                    SV_RPC_SERVER_ERROR,
                                    "the helper holds as many sessions as "
                                    "it keeps: end one (DELETE) or try "
                                    "later");
        }

        if (rc != 0) {
            json_decref(res);
            return sv_respond_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, m->id,
                                    SV_RPC_INTERNAL, "internal error");
        }

        return sv_respond(c, MHD_HTTP_OK, sv_rpc_result(m->id, res),
                          session);
    }

    /* every other message belongs to a session of this bottle */

    sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, SV_SESSION_HEADER);
    if (sid == NULL) {
        return sv_respond_error(c, MHD_HTTP_BAD_REQUEST, m->id,
                                SV_RPC_SERVER_ERROR,
                                "bad request: no Mcp-Session-Id: initialize "
                                "first");
    }

    if (!sv_session_find(sid, r->call.bottle, 0)) {
        return sv_respond_error(c, MHD_HTTP_NOT_FOUND, m->id,
                                SV_RPC_SERVER_ERROR,
                                "session not found: initialize again");
    }

    pv = MHD_lookup_connection_value(c, MHD_HEADER_KIND, SV_VERSION_HEADER);
    if (pv && !sv_rpc_version_ok(pv)) {
        return sv_respond_error(c, MHD_HTTP_BAD_REQUEST, m->id,
                                SV_RPC_SERVER_ERROR,
                                "bad request: unsupported "
                                "MCP-Protocol-Version");
    }

    if (m->kind != SV_MSG_REQUEST) {
        return sv_respond(c, MHD_HTTP_ACCEPTED, NULL, NULL);
    }

    if (strcmp(m->method, "ping") == 0) {
        return sv_respond(c, MHD_HTTP_OK,
                          sv_rpc_result(m->id, json_object()), NULL);
    }

    if (strcmp(m->method, "tools/list") == 0) {
        res = sv_rpc_tools_list();
        if (res == NULL) {
            return sv_respond_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, m->id,
                                    SV_RPC_INTERNAL, "internal error");
        }

        return sv_respond(c, MHD_HTTP_OK, sv_rpc_result(m->id, res), NULL);
    }

    if (strcmp(m->method, "tools/call") == 0) {
        return sv_http_tools_call(c, r, m);
    }

    return sv_respond_error(c, MHD_HTTP_OK, m->id, SV_RPC_NO_METHOD,
                            "method not found");
}


static enum MHD_Result
sv_http_tools_call(struct MHD_Connection *c, sv_req_t *r, sv_msg_t *m)
{
    int      code, pending;
    char     err[512];
    json_t  *res;

    if (m->params == NULL) {
        return sv_respond_error(c, MHD_HTTP_OK, m->id, SV_RPC_INVALID_PARAMS,
                                "invalid params: tools/call needs params");
    }

    code = sv_tools_call(&res, &r->call, m->params, err, sizeof(err));

    if (code != 0) {
        return sv_respond_error(c, code == SV_RPC_SERVER_ERROR
                                   ? MHD_HTTP_FORBIDDEN : MHD_HTTP_OK,
                                m->id, code, err);
    }

    if (res) {
        return sv_respond(c, MHD_HTTP_OK, sv_rpc_result(m->id, res), NULL);
    }

    /* queued: wait for the operator, without a thread */

    r->phase = SV_WAITING;

    if (sv_wait_suspend(&r->call.waiter, c)) {
        return MHD_YES;
    }

    res = sv_tools_answer(&r->call, &pending);
    if (res == NULL) {
        return sv_respond_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, m->id,
                                SV_RPC_INTERNAL, "internal error");
    }

    return sv_respond(c, MHD_HTTP_OK, sv_rpc_result(m->id, res), NULL);
}


static enum MHD_Result
sv_http_delete(struct MHD_Connection *c)
{
    char         bottle[SV_BOTTLE_ID_MAX + 1];
    const char  *sid;

    if (sv_bottle_id(c, bottle, sizeof(bottle)) != 0) {
        return sv_respond_error(c, MHD_HTTP_UNAUTHORIZED, NULL,
                                SV_RPC_SERVER_ERROR,
                                "unauthorized: no bottle");
    }

    sid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, SV_SESSION_HEADER);
    if (sid == NULL) {
        return sv_respond_error(c, MHD_HTTP_BAD_REQUEST, NULL,
                                SV_RPC_SERVER_ERROR,
                                "bad request: no Mcp-Session-Id");
    }

    if (!sv_session_find(sid, bottle, 1)) {
        return sv_respond_error(c, MHD_HTTP_NOT_FOUND, NULL,
                                SV_RPC_SERVER_ERROR, "session not found");
    }

    return sv_respond(c, MHD_HTTP_OK, NULL, NULL);
}


static void
sv_http_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
    sv_req_t  *r;

    (void) cls;
    (void) c;
    (void) toe;

    r = *con_cls;
    if (r == NULL) {
        return;
    }

    sv_wait_remove(&r->call.waiter);
    json_decref(r->rpc_id);
    free(r->body);
    free(r);
    *con_cls = NULL;
}


/* o (stolen) as application/json; NULL: no body */

static enum MHD_Result
sv_respond(struct MHD_Connection *c, unsigned status, json_t *o,
    const char *session)
{
    char                 *text;
    size_t                len;
    enum MHD_Result       rc;
    struct MHD_Response  *resp;

    text = NULL;
    len = 0;

    if (o) {
        text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);

        if (text == NULL) {
            return MHD_NO;
        }

        len = strlen(text);
    }

    resp = MHD_create_response_from_buffer(len, text ? text : (char *) "",
                                           text ? MHD_RESPMEM_MUST_FREE
                                                : MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        free(text);
        return MHD_NO;
    }

    if (text) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                "application/json");
    }

    if (session) {
        MHD_add_response_header(resp, SV_SESSION_HEADER, session);
    }

    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) {
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "POST, DELETE");
    }

    rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);

    return rc;
}


static enum MHD_Result
sv_respond_error(struct MHD_Connection *c, unsigned status, json_t *id,
    int code, const char *message)
{
    return sv_respond(c, status, sv_rpc_error(id, code, message), NULL);
}


/* X-Bottle-Id: [A-Za-z0-9._:@-], 1 to 128 bytes */

static int
sv_bottle_id(struct MHD_Connection *c, char *out, size_t size)
{
    size_t       i, n;
    const char  *v;

    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, SV_BOTTLE_HEADER);
    if (v == NULL) {
        return -1;
    }

    n = strlen(v);
    if (n == 0 || n > SV_BOTTLE_ID_MAX || n >= size) {
        return -1;
    }

    for (i = 0; i < n; i++) {
        if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z')
              || (v[i] >= '0' && v[i] <= '9') || strchr("._:@-", v[i])))
        {
            return -1;
        }
    }

    memcpy(out, v, n + 1);

    return 0;
}


/*
 * Accept lists both application/json and text/event-stream (the spec's
 * MUST for a POST), or wildcards that cover them.
 */

static int
sv_accepts(const char *accept)
{
    int          json, sse;
    size_t       n;
    const char  *p;

    json = 0;
    sse = 0;

    for (p = accept; *p; p += n + (p[n] == ',')) {
        while (*p == ' ' || *p == '\t') {
            p++;
        }

        n = strcspn(p, ",");

        if (strncasecmp(p, "*/*", 3) == 0) {
            json = sse = 1;

        } else if (strncasecmp(p, "application/json", 16) == 0
                   || strncasecmp(p, "application/*", 13) == 0)
        {
            json = 1;

        } else if (strncasecmp(p, "text/event-stream", 17) == 0
                   || strncasecmp(p, "text/*", 6) == 0)
        {
            sse = 1;
        }

        if (p[n] == '\0') {
            break;
        }
    }

    return json && sse;
}


/* HEXISTS bottle:bottles <id>: 1, 0, or -1 and err */

static int
sv_bottle_exists(const char *id, char *err, size_t errlen)
{
    int           rc;
    redisReply   *r;

    r = sv_store_read(err, errlen, "HEXISTS %s %s", BOTTLE_STORE_BOTTLES,
                      id);
    if (r == NULL) {
        return -1;
    }

    if (r->type != REDIS_REPLY_INTEGER) {
        snprintf(err, errlen, "cannot read the store %.400s",
                 sv_conf.store_text);
        freeReplyObject(r);
        return -1;
    }

    rc = r->integer ? 1 : 0;
    freeReplyObject(r);

    return rc;
}


/*
 * Sessions: a random id bound to the bottle that made it, so another
 * bottle's id is "not found".  A bottle holds at most
 * SV_SESSIONS_BOTTLE_MAX: past that its own least recently used goes.
 * Another bottle's session never goes for it: with the table full (and
 * the bottle under its cap) the new one is refused, -2 (-1: no random
 * id).
 */

static int
sv_session_new(char *out, const char *bottle)
{
    size_t         i, mine;
    sv_session_t  *s, *free_slot, *oldest;

    if (bottle_audit_random_id(out) != 0) {
        return -1;
    }

    pthread_mutex_lock(&sv_session_lock);

    free_slot = NULL;
    oldest = NULL;
    mine = 0;

    for (i = 0; i < SV_SESSIONS_MAX; i++) {
        s = &sv_sessions[i];

        if (s->id[0] == '\0') {
            if (free_slot == NULL) {
                free_slot = s;
            }

            continue;
        }

        if (strcmp(s->bottle, bottle) != 0) {
            continue;
        }

        mine++;

        if (oldest == NULL || s->used_ms < oldest->used_ms) {
            oldest = s;
        }
    }

    s = (mine >= SV_SESSIONS_BOTTLE_MAX) ? oldest : free_slot;

    if (s == NULL) {
        pthread_mutex_unlock(&sv_session_lock);
        return -2;
    }

    snprintf(s->id, sizeof(s->id), "%s", out);
    snprintf(s->bottle, sizeof(s->bottle), "%s", bottle);
    s->used_ms = sv_now();

    pthread_mutex_unlock(&sv_session_lock);

    return 0;
}


static int
sv_session_find(const char *id, const char *bottle, int drop)
{
    int     found;
    size_t  i;

    found = 0;

    if (strlen(id) != BOTTLE_AUDIT_RANDOM_LEN - 1) {
        return 0;
    }

    pthread_mutex_lock(&sv_session_lock);

    for (i = 0; i < SV_SESSIONS_MAX; i++) {
        if (sv_sessions[i].id[0] && strcmp(sv_sessions[i].id, id) == 0
            && strcmp(sv_sessions[i].bottle, bottle) == 0)
        {
            found = 1;

            if (drop) {
                memset(&sv_sessions[i], 0, sizeof(sv_session_t));
            } else {
                sv_sessions[i].used_ms = sv_now();
            }

            break;
        }
    }

    pthread_mutex_unlock(&sv_session_lock);

    return found;
}
