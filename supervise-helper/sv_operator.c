/*
 * The operator page (sv_operator.h, docs/supervise.md, "Operator page").
 *
 * Everything a proposal carries came from an agent: the page renders it
 * as text (textContent) under a CSP that allows no inline script, and
 * this file sends it only as JSON strings.  A state-changing request is a
 * POST with a JSON body, the X-Bottle-Operator header (which a form or an
 * image on a page the bottle controls cannot send without a CORS
 * preflight this server never answers) and, when the browser names one,
 * an Origin that is this server's own.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "bottle_decision.h"
#include "bottle_proposal.h"
#include "bottle_store.h"
#include "sv_operator.h"
#include "sv_operator_int.h"


#define SV_OPERATOR_THREADS     4
#define SV_OPERATOR_TIMEOUT     30      /* seconds idle per connection */


/* the page: supervise-helper/operator/, embedded at build time (xxd -i) */
extern const unsigned char  sv_operator_index_html[];
extern const unsigned int   sv_operator_index_html_len;
extern const unsigned char  sv_operator_app_js[];
extern const unsigned int   sv_operator_app_js_len;
extern const unsigned char  sv_operator_style_css[];
extern const unsigned int   sv_operator_style_css_len;


typedef struct {
    const char              *path;
    const char              *type;
    const unsigned char     *data;
    const unsigned int      *len;
} sv_operator_file_t;

static const sv_operator_file_t  sv_operator_files[] = {
    { "/", "text/html; charset=utf-8", sv_operator_index_html,
      &sv_operator_index_html_len },
    { "/index.html", "text/html; charset=utf-8", sv_operator_index_html,
      &sv_operator_index_html_len },
    { "/app.js", "text/javascript; charset=utf-8", sv_operator_app_js,
      &sv_operator_app_js_len },
    { "/style.css", "text/css; charset=utf-8", sv_operator_style_css,
      &sv_operator_style_css_len }
};


static int sv_operator_credential(sv_operator_t *op, const char *file,
    char *err, size_t errlen);
static int sv_operator_addr(struct sockaddr_storage *ss, const char *listen,
    char *err, size_t errlen);
static enum MHD_Result sv_operator_handle(void *cls,
    struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size,
    void **con_cls);
static void sv_operator_done(void *cls, struct MHD_Connection *c,
    void **con_cls, enum MHD_RequestTerminationCode toe);
static int sv_operator_authorized(sv_operator_t *op,
    struct MHD_Connection *c);
static const char *sv_operator_csrf(struct MHD_Connection *c);
static enum MHD_Result sv_operator_unauthorized(struct MHD_Connection *c);
static enum MHD_Result sv_operator_405(struct MHD_Connection *c,
    const char *allow);


int
sv_operator_start(sv_operator_t **out, const sv_operator_conf_t *conf,
    char *err, size_t errlen)
{
    char                     e[512];
    sv_operator_t           *op;
    struct sockaddr_storage  ss;

    *out = NULL;

    op = calloc(1, sizeof(*op));
    if (op == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    op->log = stderr;
    op->logf = conf->logf;

    if (conf->log && conf->logf == NULL) {
        op->log = fopen(conf->log, "a");
        if (op->log == NULL) {
            snprintf(err, errlen, "cannot open '%s': %s", conf->log,
                     strerror(errno));
            free(op);
            return -1;
        }
        op->own_log = 1;
        setvbuf(op->log, NULL, _IOLBF, 0);
    }

    if (conf->credential == NULL) {
        snprintf(err, errlen, "no operator credential file given");
        goto failed;
    }

    if (sv_operator_credential(op, conf->credential, err, errlen) != 0) {
        goto failed;
    }

    if (conf->store == NULL
        || bottle_store_url_parse(&op->url, conf->store, e, sizeof(e)) != 0)
    {
        snprintf(err, errlen, "invalid store URL: %s",
                 conf->store ? e : "none given");
        goto failed;
    }

    if (sv_operator_addr(&ss, conf->listen ? conf->listen
                                           : SV_OPERATOR_LISTEN,
                         err, errlen)
        != 0)
    {
        goto failed;
    }

    op->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD
                                  | MHD_USE_ERROR_LOG
                                  | (ss.ss_family == AF_INET6
                                     ? MHD_USE_IPv6 : 0),
                                  0, NULL, NULL, sv_operator_handle, op,
                                  MHD_OPTION_SOCK_ADDR, &ss,
                                  MHD_OPTION_THREAD_POOL_SIZE,
                                  (unsigned) SV_OPERATOR_THREADS,
                                  MHD_OPTION_CONNECTION_TIMEOUT,
                                  (unsigned) SV_OPERATOR_TIMEOUT,
                                  MHD_OPTION_NOTIFY_COMPLETED,
                                  sv_operator_done, op,
                                  MHD_OPTION_END);
    if (op->daemon == NULL) {
        snprintf(err, errlen, "cannot listen on '%s'",
                 conf->listen ? conf->listen : SV_OPERATOR_LISTEN);
        goto failed;
    }

    sv_operator_logf(op, "operator page on port %u", sv_operator_port(op));

    *out = op;

    return 0;

failed:

    OPENSSL_cleanse(op->secret, sizeof(op->secret));
    if (op->own_log) {
        fclose(op->log);
    }
    free(op);

    return -1;
}


void
sv_operator_stop(sv_operator_t *op)
{
    if (op == NULL) {
        return;
    }

    MHD_stop_daemon(op->daemon);
    OPENSSL_cleanse(op->secret, sizeof(op->secret));
    OPENSSL_cleanse(op->url.password, sizeof(op->url.password));

    if (op->own_log) {
        fclose(op->log);
    }

    free(op);
}


unsigned
sv_operator_port(const sv_operator_t *op)
{
    const union MHD_DaemonInfo  *i;

    i = MHD_get_daemon_info(op->daemon, MHD_DAEMON_INFO_BIND_PORT);

    return i ? i->port : 0;
}


/* the file's first line; nobody but its owner may read it */

static int
sv_operator_credential(sv_operator_t *op, const char *file, char *err,
    size_t errlen)
{
    int          rc;
    char         line[1024], both[sizeof(line) + 16];
    size_t       n;
    FILE        *f;
    struct stat  st;

    f = fopen(file, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open '%s': %s", file, strerror(errno));
        return -1;
    }

    rc = -1;
    line[0] = '\0';

    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "credential '%s': not a regular file", file);
        goto cleanup;
    }

    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(err, errlen, "credential '%s': readable or writable by "
                 "group or others (mode %03o): chmod 600 it", file,
                 (unsigned) (st.st_mode & 0777));
        goto cleanup;
    }

    if (fgets(line, sizeof(line), f) == NULL) {
        line[0] = '\0';
    }

    n = strcspn(line, "\r\n");
    line[n] = '\0';

    if (n == 0) {
        snprintf(err, errlen, "credential '%s': no password on its first "
                 "line", file);
        goto cleanup;
    }

    snprintf(both, sizeof(both), "%s:%s", SV_OPERATOR_USER, line);
    SHA256((const unsigned char *) both, strlen(both), op->secret);
    OPENSSL_cleanse(both, sizeof(both));
    rc = 0;

cleanup:

    OPENSSL_cleanse(line, sizeof(line));
    fclose(f);

    return rc;
}


/* "127.0.0.1:9101", "[::1]:9101": literals only, never a name to resolve */

static int
sv_operator_addr(struct sockaddr_storage *ss, const char *listen, char *err,
    size_t errlen)
{
    char              host[64];
    const char       *port, *end;
    size_t            n;
    struct addrinfo   hints, *ai;

    if (listen[0] == '[') {
        end = strchr(listen, ']');
        port = end && end[1] == ':' ? end + 2 : NULL;
        n = end ? (size_t) (end - listen - 1) : 0;
        listen++;

    } else {
        end = strrchr(listen, ':');
        port = end ? end + 1 : NULL;
        n = end ? (size_t) (end - listen) : 0;
    }

    if (port == NULL || port[0] == '\0' || n == 0 || n >= sizeof(host)) {
        snprintf(err, errlen, "invalid listen address '%s': ADDRESS:PORT",
                 listen);
        return -1;
    }

    memcpy(host, listen, n);
    host[n] = '\0';

    memset(&hints, 0, sizeof(hints));
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    hints.ai_socktype = SOCK_STREAM;

    if (getaddrinfo(host, port, &hints, &ai) != 0) {
        snprintf(err, errlen, "invalid listen address '%s': an IP address "
                 "and a port", listen);
        return -1;
    }

    memset(ss, 0, sizeof(*ss));
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);

    return 0;
}


static enum MHD_Result
sv_operator_handle(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **con_cls)
{
    int                       post, get;
    char                      id[BOTTLE_PROPOSAL_ID_LEN], action[8];
    size_t                    n, i;
    const char               *why, *p, *slash;
    sv_operator_t            *op = cls;
    sv_request_t             *req = *con_cls;
    const sv_operator_file_t *f;

    (void) version;

    if (req == NULL) {
        req = calloc(1, sizeof(*req));
        if (req == NULL) {
            return MHD_NO;
        }
        *con_cls = req;
        return MHD_YES;
    }

    /* the body, bounded, before anything is answered */

    if (*upload_size) {
        if (req->len + *upload_size > SV_OPERATOR_BODY_MAX) {
            req->too_big = 1;

        } else {
            p = realloc(req->body, req->len + *upload_size + 1);
            if (p == NULL) {
                return MHD_NO;
            }
            req->body = (char *) p;
            memcpy(req->body + req->len, upload, *upload_size);
            req->len += *upload_size;
            req->body[req->len] = '\0';
        }

        *upload_size = 0;
        return MHD_YES;
    }

    if (!sv_operator_authorized(op, c)) {
        return sv_operator_unauthorized(c);
    }

    get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    post = strcmp(method, "POST") == 0;

    for (i = 0; i < sizeof(sv_operator_files) / sizeof(sv_operator_files[0]);
         i++)
    {
        f = &sv_operator_files[i];

        if (strcmp(url, f->path) == 0) {
            return get ? sv_operator_send(c, 200, f->type, f->data, *f->len,
                                          0, NULL)
                       : sv_operator_405(c, "GET, HEAD");
        }
    }

    if (strcmp(url, "/api/proposals") == 0) {
        return get ? sv_operator_list(op, c) : sv_operator_405(c, "GET, HEAD");
    }

    /* the bottles view and the refusal feed: read-only */

    if (strcmp(url, "/api/bottles") == 0) {
        return get ? sv_operator_bottles(op, c)
                   : sv_operator_405(c, "GET, HEAD");
    }

    if (strcmp(url, "/api/refusals") == 0) {
        return get ? sv_operator_refusals(op, c)
                   : sv_operator_405(c, "GET, HEAD");
    }

    if (strncmp(url, "/api/bottles/", 13) == 0) {
        p = url + 13;
        n = strlen(p);

        if (n == 0 || n > SV_OPERATOR_BOTTLE_MAX || strchr(p, '/')) {
            return sv_operator_error(c, 404, "no such bottle");
        }

        return get ? sv_operator_bottle(op, c, p)
                   : sv_operator_405(c, "GET, HEAD");
    }

    if (strncmp(url, "/api/proposals/", 15) != 0) {
        return sv_operator_error(c, 404, "not found");
    }

    p = url + 15;
    slash = strchr(p, '/');
    n = slash ? (size_t) (slash - p) : strlen(p);

    if (n == 0 || n >= sizeof(id)) {
        return sv_operator_error(c, 404, "no such proposal");
    }

    memcpy(id, p, n);
    id[n] = '\0';

    if (!bottle_proposal_id_valid(id)) {
        return sv_operator_error(c, 404, "no such proposal");
    }

    if (slash == NULL) {
        return get ? sv_operator_show(op, c, id)
                   : sv_operator_405(c, "GET, HEAD");
    }

    /* approve, deny, modify; connect (a forge-connect), create (a
     * create-repo); preview (what a modify would change, nothing
     * decided: a POST all the same, its body the grant) */

    if (strlen(slash + 1) >= sizeof(action)
        || (bottle_decision_state(slash + 1) == NULL
            && strcmp(slash + 1, "connect") != 0
            && strcmp(slash + 1, "create") != 0
            && strcmp(slash + 1, "preview") != 0))
    {
        return sv_operator_error(c, 404, "not found");
    }

    snprintf(action, sizeof(action), "%s", slash + 1);

    if (!post) {
        return sv_operator_405(c, "POST");
    }

    why = sv_operator_csrf(c);
    if (why) {
        sv_operator_logf(op, "refused %s %s: %s", method, url, why);
        return sv_operator_error(c, 403, "%s", why);
    }

    if (req->too_big) {
        return sv_operator_error(c, 413, "the body is larger than %d bytes",
                                 SV_OPERATOR_BODY_MAX);
    }

    return sv_operator_answer(op, c, id, action, req);
}


static void
sv_operator_done(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
    sv_request_t  *req = *con_cls;

    (void) cls;
    (void) c;
    (void) toe;

    if (req) {
        free(req->body);
        free(req);
        *con_cls = NULL;
    }
}


/* "operator:<password>", compared by digest: in constant time, any length */

static int
sv_operator_authorized(sv_operator_t *op, struct MHD_Connection *c)
{
    int             ok;
    char           *user, *pass, *both;
    size_t          n;
    unsigned char   md[SHA256_DIGEST_LENGTH];

    pass = NULL;
    user = MHD_basic_auth_get_username_password(c, &pass);

    if (user == NULL || pass == NULL) {
        MHD_free(user);
        MHD_free(pass);
        return 0;
    }

    n = strlen(user) + strlen(pass) + 2;
    both = malloc(n);
    ok = 0;

    if (both) {
        snprintf(both, n, "%s:%s", user, pass);
        SHA256((const unsigned char *) both, n - 1, md);
        ok = CRYPTO_memcmp(md, op->secret, sizeof(md)) == 0;
        OPENSSL_cleanse(both, n);
        free(both);
    }

    OPENSSL_cleanse(pass, strlen(pass));
    MHD_free(user);
    MHD_free(pass);

    return ok;
}


/*
 * NULL if a POST may change state: the custom header, a JSON body, and
 * an Origin (when the browser sends one) that is this server's own.
 */

static const char *
sv_operator_csrf(struct MHD_Connection *c)
{
    char         own[300];
    const char  *h, *origin, *type, *site;

    h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, SV_OPERATOR_HEADER);
    if (h == NULL || strcmp(h, "1") != 0) {
        return "a state-changing request needs the header "
               SV_OPERATOR_HEADER ": 1";
    }

    type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (type == NULL || strncasecmp(type, "application/json", 16) != 0
        || (type[16] != '\0' && type[16] != ';'))
    {
        return "a state-changing request has a JSON body "
               "(Content-Type: application/json)";
    }

    site = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-Fetch-Site");
    if (site && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0)
    {
        return "a cross-site request";
    }

    origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (origin == NULL) {
        return NULL;
    }

    h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (h == NULL || strlen(h) > 255) {
        return "an Origin and no Host";
    }

    snprintf(own, sizeof(own), "http://%s", h);

    if (strcmp(origin, own) != 0) {
        return "the Origin is not this page's";
    }

    return NULL;
}


static enum MHD_Result
sv_operator_405(struct MHD_Connection *c, const char *allow)
{
    static const char  body[] = "{\"error\":\"method not allowed\"}";

    return sv_operator_send(c, 405, "application/json", body,
                            sizeof(body) - 1, 0, allow);
}


static enum MHD_Result
sv_operator_unauthorized(struct MHD_Connection *c)
{
    enum MHD_Result       rc;
    struct MHD_Response  *r;
    static const char     body[] = "{\"error\":\"the operator's credential "
                                   "is required\"}";

    r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *) body,
                                        MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        return MHD_NO;
    }

    MHD_add_response_header(r, "Content-Type", "application/json");
    MHD_add_response_header(r, "Content-Security-Policy", SV_OPERATOR_CSP);
    MHD_add_response_header(r, "Cache-Control", "no-store");

    rc = MHD_queue_basic_auth_fail_response(c, "bottle operator", r);
    MHD_destroy_response(r);

    return rc;
}
