/*
 * A forge's hash, its REST API, and the answers that need them
 * (bottle_forge_client.h).  libcurl (Debian's libcurl4-openssl-dev) does
 * the HTTP: a well-kept client with TLS verification on by default.
 */

#define _POSIX_C_SOURCE  200809L

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

#include "bottle_forge_client.h"
#include "bottle_util.h"


/* a made repo's URL: the forge's URL, owner and repo */
#define BOTTLE_FORGE_MADE_MAX                                                 \
    (BOTTLE_FORGE_URL_MAX + 2 * BOTTLE_REPO_SEGMENT_MAX + 8)


typedef struct {
    char    *data;
    size_t   len;
    int      over;          /* more than BOTTLE_FORGE_API_BODY_MAX */
} bottle_forge_body_t;


static int bottle_forge_command(redisContext *c, redisReply **out,
    int argc, const char **argv, int *lost, char *err, size_t errlen);
static int bottle_forge_api_call(long *status, json_t **out,
    const bottle_forge_conf_t *f, const char *method, const char *path,
    const char *body, char *err, size_t errlen);
static size_t bottle_forge_write(char *p, size_t size, size_t n,
    void *data);
static void bottle_forge_api_error(char *err, size_t errlen, long status,
    const json_t *answer);
static int bottle_forge_proposal(json_t **out, redisContext *c,
    bottle_decision_result_t *res, const char *id,
    bottle_proposal_kind_e want);
static int bottle_forge_fail(bottle_decision_result_t *out,
    bottle_decision_status_e status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;


static pthread_once_t  bottle_forge_curl_once = PTHREAD_ONCE_INIT;
static int             bottle_forge_curl_rc;


static void
bottle_forge_curl_init(void)
{
    bottle_forge_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK
                           ? 0 : -1;
}


int
bottle_forge_token_check(const char *token, char *err, size_t errlen)
{
    size_t  i, len;

    len = strlen(token);

    if (len == 0 || len > BOTTLE_FORGE_TOKEN_MAX) {
        return bottle_errf(err, errlen, "token: empty, or longer than %d "
                           "bytes", BOTTLE_FORGE_TOKEN_MAX);
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) token[i] < 0x21 || token[i] == 0x7f) {
            return bottle_errf(err, errlen, "token: one line, no spaces or "
                               "control bytes");
        }
    }

    return 0;
}


int
bottle_forge_url_check(const char *what, const char *url, char *err,
    size_t errlen)
{
    size_t  i;

    if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0) {
        return bottle_errf(err, errlen, "%s: an http:// or https:// URL",
                           what);
    }

    if (strlen(url) > BOTTLE_FORGE_URL_MAX) {
        return bottle_errf(err, errlen, "%s: longer than %d bytes", what,
                           BOTTLE_FORGE_URL_MAX);
    }

    for (i = 0; url[i]; i++) {
        if ((unsigned char) url[i] <= 0x20 || url[i] == 0x7f
            || url[i] == '@')
        {
            return bottle_errf(err, errlen, "%s: no spaces, control bytes or "
                               "credentials (the token goes in its own "
                               "field)", what);
        }
    }

    return 0;
}


int
bottle_forge_api_default(char *out, size_t size, const char *kind,
    const char *forge, const char *url)
{
    int     n;
    size_t  len;

    len = strlen(url);
    while (len && url[len - 1] == '/') {
        len--;
    }

    if (strcmp(kind, "github") == 0 && strcmp(forge, "github.com") == 0) {
        n = snprintf(out, size, "https://api.github.com");

    } else {
        n = snprintf(out, size, "%.*s%s", (int) len, url,
                     strcmp(kind, "github") == 0 ? "/api/v3" : "/api/v1");
    }

    return n < 0 || (size_t) n >= size ? -1 : 0;
}


void
bottle_forge_conf_clear(bottle_forge_conf_t *f)
{
    /* volatile: the wipe is not optimized away */
    volatile char  *p = f->token;
    size_t          i;

    for (i = 0; i < sizeof(f->token); i++) {
        p[i] = 0;
    }
}


static int
bottle_forge_command(redisContext *c, redisReply **out, int argc,
    const char **argv, int *lost, char *err, size_t errlen)
{
    *out = redisCommandArgv(c, argc, argv, NULL);

    if (*out == NULL) {
        *lost = 1;
        return bottle_errf(err, errlen, "the store was lost: %s",
                           c->err ? c->errstr : "no answer");
    }

    if ((*out)->type == REDIS_REPLY_ERROR) {
        bottle_errf(err, errlen, "the store answered: %.200s", (*out)->str);
        *lost = strncmp((*out)->str, "NOAUTH", 6) == 0;
        freeReplyObject(*out);
        *out = NULL;
        return -1;
    }

    return 0;
}


int
bottle_forge_save(redisContext *c, const char *forge,
    const bottle_forge_conf_t *f, int *lost, char *err, size_t errlen)
{
    int          i, n, rc;
    char         key[sizeof(BOTTLE_FORGE_PREFIX) + BOTTLE_FORGE_NAME_MAX];
    size_t       j;
    const char  *av[2 + 12];    /* DEL key, then HSET's 12 words */
    redisReply  *r;

    *lost = 0;
    snprintf(key, sizeof(key), "%s%s", BOTTLE_FORGE_PREFIX, forge);

    /* the whole hash replaced, and the set, at once */

    av[0] = "MULTI";
    if (bottle_forge_command(c, &r, 1, av, lost, err, errlen) != 0) {
        return -1;
    }
    freeReplyObject(r);

    av[0] = "DEL";
    av[1] = key;

    n = 0;
    av[2 + n++] = "HSET";
    av[2 + n++] = key;
    av[2 + n++] = BOTTLE_FORGE_F_KIND;
    av[2 + n++] = f->kind;
    av[2 + n++] = BOTTLE_FORGE_F_URL;
    av[2 + n++] = f->url;
    av[2 + n++] = BOTTLE_FORGE_F_TOKEN;
    av[2 + n++] = f->token;
    if (f->api[0]) {
        av[2 + n++] = BOTTLE_FORGE_F_API;
        av[2 + n++] = f->api;
    }
    if (f->account[0]) {
        av[2 + n++] = BOTTLE_FORGE_F_ACCOUNT;
        av[2 + n++] = f->account;
    }

    rc = 0;

    for (i = 0; rc == 0 && i < 3; i++) {
        if (i == 0) {
            rc = bottle_forge_command(c, &r, 2, av, lost, err, errlen);

        } else if (i == 1) {
            rc = bottle_forge_command(c, &r, n, av + 2, lost, err, errlen);

        } else {
            av[0] = "SADD";
            av[1] = BOTTLE_FORGES;
            av[2] = forge;
            rc = bottle_forge_command(c, &r, 3, av, lost, err, errlen);
        }

        if (rc == 0) {
            freeReplyObject(r);
        }
    }

    av[0] = rc == 0 ? "EXEC" : "DISCARD";

    if (bottle_forge_command(c, &r, 1, av, lost, rc == 0 ? err : NULL,
                             rc == 0 ? errlen : 0)
        != 0)
    {
        return -1;
    }

    if (rc == 0 && r->type != REDIS_REPLY_ARRAY) {
        rc = bottle_errf(err, errlen, "the store did not write the forge");
    }

    for (j = 0; rc == 0 && j < r->elements; j++) {
        if (r->element[j]->type == REDIS_REPLY_ERROR) {
            rc = bottle_errf(err, errlen, "the store answered: %.200s",
                             r->element[j]->str);
        }
    }

    freeReplyObject(r);

    return rc;
}


int
bottle_forge_load(bottle_forge_conf_t *out, redisContext *c,
    const char *forge, int *lost, char *err, size_t errlen)
{
    int          rc;
    char         key[sizeof(BOTTLE_FORGE_PREFIX) + BOTTLE_FORGE_NAME_MAX];
    size_t       i;
    const char  *av[7];
    redisReply  *r, *e;

    struct {
        char    *dst;
        size_t   size;
    } f[5];

    memset(out, 0, sizeof(*out));
    *lost = 0;
    snprintf(key, sizeof(key), "%s%s", BOTTLE_FORGE_PREFIX, forge);

    av[0] = "HMGET";
    av[1] = key;
    av[2] = BOTTLE_FORGE_F_KIND;
    av[3] = BOTTLE_FORGE_F_URL;
    av[4] = BOTTLE_FORGE_F_API;
    av[5] = BOTTLE_FORGE_F_ACCOUNT;
    av[6] = BOTTLE_FORGE_F_TOKEN;

    if (bottle_forge_command(c, &r, 7, av, lost, err, errlen) != 0) {
        return -1;
    }

    f[0].dst = out->kind;
    f[0].size = sizeof(out->kind);
    f[1].dst = out->url;
    f[1].size = sizeof(out->url);
    f[2].dst = out->api;
    f[2].size = sizeof(out->api);
    f[3].dst = out->account;
    f[3].size = sizeof(out->account);
    f[4].dst = out->token;
    f[4].size = sizeof(out->token);

    rc = -1;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 5
        || r->element[0]->type != REDIS_REPLY_STRING
        || r->element[1]->type != REDIS_REPLY_STRING
        || r->element[4]->type != REDIS_REPLY_STRING)
    {
        bottle_errf(err, errlen, "forge %s is not connected", forge);
        goto cleanup;
    }

    for (i = 0; i < 5; i++) {
        e = r->element[i];

        if (e->type != REDIS_REPLY_STRING) {
            continue;
        }

        if (e->len >= f[i].size || memchr(e->str, '\0', e->len)) {
            bottle_errf(err, errlen, "%s: field %zu is too long", key, i);
            goto cleanup;
        }

        memcpy(f[i].dst, e->str, e->len);
        f[i].dst[e->len] = '\0';
    }

    if (bottle_forge_kind_valid(out->kind) != 0) {
        bottle_errf(err, errlen, "%s: kind \"%s\" is neither gitea nor "
                    "github", key, out->kind);
        goto cleanup;
    }

    if (out->api[0] == '\0'
        && bottle_forge_api_default(out->api, sizeof(out->api), out->kind,
                                    forge, out->url) != 0)
    {
        bottle_errf(err, errlen, "%s: url too long", key);
        goto cleanup;
    }

    rc = 0;

cleanup:

    if (r->type == REDIS_REPLY_ARRAY && r->elements == 5
        && r->element[4]->type == REDIS_REPLY_STRING)
    {
        memset(r->element[4]->str, 0, r->element[4]->len);
    }

    freeReplyObject(r);

    if (rc != 0) {
        bottle_forge_conf_clear(out);
    }

    return rc;
}


/* libcurl's body callback: kept up to BOTTLE_FORGE_API_BODY_MAX */

static size_t
bottle_forge_write(char *p, size_t size, size_t n, void *data)
{
    char                 *d;
    bottle_forge_body_t  *b = data;

    n *= size;

    if (b->len + n > BOTTLE_FORGE_API_BODY_MAX) {
        b->over = 1;
        return 0;
    }

    d = realloc(b->data, b->len + n + 1);
    if (d == NULL) {
        return 0;
    }

    memcpy(d + b->len, p, n);
    b->data = d;
    b->len += n;
    b->data[b->len] = '\0';

    return n;
}


/*
 * One call of the API: method on {api}{path} with the token, body (JSON)
 * or none.  The status in *status and the answer's JSON in *out (a new
 * reference, maybe NULL).  0 when the forge answered at all (any status),
 * -1 and one line in err when not.
 */

static int
bottle_forge_api_call(long *status, json_t **out,
    const bottle_forge_conf_t *f, const char *method, const char *path,
    const char *body, char *err, size_t errlen)
{
    int                   rc;
    char                  ebuf[CURL_ERROR_SIZE], *url, *auth;
    size_t                len;
    CURL                 *h;
    CURLcode              cc;
    struct curl_slist    *hdr, *l;
    bottle_forge_body_t   b;

    *status = 0;
    *out = NULL;

    pthread_once(&bottle_forge_curl_once, bottle_forge_curl_init);

    if (bottle_forge_curl_rc != 0) {
        return bottle_errf(err, errlen, "cannot start libcurl");
    }

    len = strlen(f->api) + strlen(path) + 1;
    url = malloc(len);
    len = strlen(f->token) + 32;
    auth = malloc(len);
    h = curl_easy_init();
    hdr = NULL;
    memset(&b, 0, sizeof(b));
    rc = -1;

    if (url == NULL || auth == NULL || h == NULL) {
        bottle_errf(err, errlen, "out of memory");
        goto cleanup;
    }

    sprintf(url, "%s%s", f->api, path);

    /* Gitea and GitHub both take "token <token>" */
    snprintf(auth, len, "Authorization: token %s", f->token);

    l = curl_slist_append(hdr, auth);
    hdr = l ? l : hdr;
    l = l ? curl_slist_append(hdr, "Accept: application/json") : NULL;
    hdr = l ? l : hdr;
    l = l ? curl_slist_append(hdr, "Content-Type: application/json") : NULL;
    hdr = l ? l : hdr;

    if (l == NULL) {
        bottle_errf(err, errlen, "out of memory");
        goto cleanup;
    }

    ebuf[0] = '\0';

    if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https")
           != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_USERAGENT, "ngx-bottle") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_NOPROXY, "*") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)
                            BOTTLE_FORGE_API_TIMEOUT) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bottle_forge_write)
           != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_WRITEDATA, &b) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method) != CURLE_OK
        || (body
            && curl_easy_setopt(h, CURLOPT_POSTFIELDS, body) != CURLE_OK))
    {
        bottle_errf(err, errlen, "cannot set up libcurl");
        goto cleanup;
    }

    cc = curl_easy_perform(h);

    if (cc != CURLE_OK) {
        bottle_errf(err, errlen, "%s %s%s: %s", method, f->api, path,
                    b.over ? "the answer is too long"
                           : ebuf[0] ? ebuf : curl_easy_strerror(cc));
        goto cleanup;
    }

    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);

    if (b.data) {
        *out = json_loadb(b.data, b.len, 0, NULL);
    }

    rc = 0;

cleanup:

    if (auth) {
        memset(auth, 0, strlen(auth));
    }

    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    free(url);
    free(auth);
    free(b.data);

    return rc;
}


/* "the forge answered 401: Bad credentials": its message, printable,
 * cut short */

static void
bottle_forge_api_error(char *err, size_t errlen, long status,
    const json_t *answer)
{
    char         msg[201];
    size_t       i;
    const char  *m;

    m = json_string_value(json_object_get(answer, "message"));
    if (m == NULL) {
        m = "";
    }

    for (i = 0; m[i] && i < sizeof(msg) - 1; i++) {
        msg[i] = (unsigned char) m[i] < 0x20 || m[i] == 0x7f ? ' ' : m[i];
    }

    msg[i] = '\0';

    bottle_errf(err, errlen, "the forge answered %ld%s%s", status,
                msg[0] ? ": " : "", msg);
}


/* 0 if s has no control bytes */

static int
bottle_forge_printable(const char *s)
{
    for ( /* void */ ; *s; s++) {
        if ((unsigned char) *s < 0x20 || *s == 0x7f) {
            return -1;
        }
    }

    return 0;
}


int
bottle_forge_api_user(char *out, size_t size, const bottle_forge_conf_t *f,
    char *err, size_t errlen)
{
    long         status;
    json_t      *a;
    const char  *login;

    if (bottle_forge_api_call(&status, &a, f, "GET", "/user", NULL, err,
                              errlen)
        != 0)
    {
        return -1;
    }

    login = json_string_value(json_object_get(a, "login"));

    if (status != 200 || login == NULL || login[0] == '\0'
        || strlen(login) >= size || bottle_forge_printable(login) != 0)
    {
        if (status == 200) {
            bottle_errf(err, errlen, "GET %s/user: no login (printable, "
                        "at most %zu bytes) in the forge's answer", f->api,
                        size - 1);
        } else {
            bottle_forge_api_error(err, errlen, status, a);
        }

        json_decref(a);
        return -1;
    }

    strcpy(out, login);
    json_decref(a);

    return 0;
}


int
bottle_forge_api_create(char *out, size_t size, const bottle_forge_conf_t *f,
    const char *login, const char *owner, const char *repo,
    int private_repo, char *err, size_t errlen)
{
    int          rc;
    char         path[BOTTLE_REPO_SEGMENT_MAX + 32], *body;
    long         status;
    json_t      *a, *req;
    const char  *u;

    /* owner is a segment ([A-Za-z0-9._-]): nothing to escape */

    if (strcasecmp(owner, login) == 0) {
        snprintf(path, sizeof(path), "/user/repos");

    } else {
        snprintf(path, sizeof(path), "/orgs/%s/repos", owner);
    }

    req = json_pack("{s:s, s:b}", "name", repo, "private", private_repo);
    body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);

    if (body == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    rc = bottle_forge_api_call(&status, &a, f, "POST", path, body, err,
                               errlen);
    free(body);

    if (rc != 0) {
        return -1;
    }

    if (status != 201 && status != 200) {
        bottle_forge_api_error(err, errlen, status, a);
        json_decref(a);
        return -1;
    }

    u = json_string_value(json_object_get(a, "html_url"));
    if (u == NULL) {
        u = json_string_value(json_object_get(a, "clone_url"));
    }

    snprintf(out, size, "%s", u ? u : "");
    json_decref(a);

    return 0;
}


static int
bottle_forge_fail(bottle_decision_result_t *out,
    bottle_decision_status_e status, const char *fmt, ...)
{
    va_list  ap;

    out->status = status;

    va_start(ap, fmt);
    vsnprintf(out->err, sizeof(out->err), fmt, ap);
    va_end(ap);

    return -1;
}


/* a pending proposal of kind want (a new reference in *out) */

static int
bottle_forge_proposal(json_t **out, redisContext *c,
    bottle_decision_result_t *res, const char *id,
    bottle_proposal_kind_e want)
{
    int                     lost;
    char                    key[sizeof(BOTTLE_PROPOSAL_PREFIX)
                                + BOTTLE_PROPOSAL_ID_LEN];
    char                    err[512];
    const char             *av[4];
    json_t                 *p;
    redisReply             *r;
    bottle_proposal_kind_e  kind;

    *out = NULL;

    if (!bottle_proposal_id_valid(id)) {
        return bottle_forge_fail(res, BOTTLE_DECISION_NOT_FOUND,
                                 "no proposal \"%s\"", id);
    }

    snprintf(key, sizeof(key), "%s%s", BOTTLE_PROPOSAL_PREFIX, id);

    av[0] = "HMGET";
    av[1] = key;
    av[2] = BOTTLE_PROPOSAL_F_JSON;
    av[3] = BOTTLE_PROPOSAL_F_STATE;

    lost = 0;

    if (bottle_forge_command(c, &r, 4, av, &lost, err, sizeof(err)) != 0) {
        return bottle_forge_fail(res, lost ? BOTTLE_DECISION_UNREACHABLE
                                           : BOTTLE_DECISION_INVALID,
                                 "%s", err);
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING
        || r->element[1]->type != REDIS_REPLY_STRING)
    {
        freeReplyObject(r);
        return bottle_forge_fail(res, BOTTLE_DECISION_NOT_FOUND,
                                 "no proposal \"%s\"", id);
    }

    p = bottle_proposal_parse(r->element[0]->str, r->element[0]->len,
                              &kind, err, sizeof(err));

    if (p == NULL) {
        freeReplyObject(r);
        return bottle_forge_fail(res, BOTTLE_DECISION_INVALID,
                                 "proposal \"%s\": %s", id, err);
    }

    snprintf(res->bottle, sizeof(res->bottle), "%s",
             json_string_value(json_object_get(p, "bottle")));

    if (kind != want) {
        freeReplyObject(r);
        json_decref(p);
        return bottle_forge_fail(res, BOTTLE_DECISION_INVALID,
                                 "proposal \"%s\" is a %s, not a %s", id,
                                 bottle_proposal_kind_name(kind),
                                 bottle_proposal_kind_name(want));
    }

    /* answered: bottle_decision_answer() says by whom, and journals it */

    if (strcmp(r->element[1]->str, "pending") != 0) {
        freeReplyObject(r);
        json_decref(p);
        return 1;
    }

    freeReplyObject(r);
    *out = p;

    return 0;
}


int
bottle_forge_connect_answer(bottle_decision_result_t *out, redisContext *c,
    const bottle_forge_connect_req_t *req)
{
    int                    rc, lost;
    char                   name[BOTTLE_FORGE_NAME_MAX + 1], notes[600],
                           login[BOTTLE_FORGE_ACCOUNT_MAX + 1], err[1024];
    json_t                *p, *grant;
    const char            *url, *scheme;
    bottle_forge_conf_t   *f;
    bottle_decision_req_t  dr;

    memset(out, 0, sizeof(*out));
    p = NULL;
    grant = NULL;

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return bottle_forge_fail(out, BOTTLE_DECISION_INVALID,
                                 "out of memory");
    }

    rc = -1;

    if (bottle_forge_kind_valid(req->kind) != 0) {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID,
                          "kind: \"gitea\" or \"github\"");
        goto cleanup;
    }

    if (bottle_forge_token_check(req->token, err, sizeof(err)) != 0
        || (req->api
            && bottle_forge_url_check("api", req->api, err, sizeof(err))
               != 0))
    {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID, "%s", err);
        goto cleanup;
    }

    if (req->account
        && (req->account[0] == '\0'
            || strlen(req->account) > BOTTLE_FORGE_ACCOUNT_MAX
            || bottle_forge_printable(req->account) != 0))
    {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID, "account: 1 to %d "
                          "bytes, no control bytes", BOTTLE_FORGE_ACCOUNT_MAX);
        goto cleanup;
    }

    rc = bottle_forge_proposal(&p, c, out, req->proposal,
                               BOTTLE_PROPOSAL_FORGE_CONNECT);
    if (rc < 0) {
        goto cleanup;
    }

    if (rc == 1) {
        goto answer;        /* answered already: the late answer */
    }

    rc = -1;

    /* the forge of the agent's URL, never one the operator gives */

    url = json_string_value(json_object_get(json_object_get(p, "args"),
                                            "url"));

    if (bottle_forge_url_name(name, url, err, sizeof(err)) != 0) {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID, "proposal \"%s\": "
                          "%s", req->proposal, err);
        goto cleanup;
    }

    if (bottle_forge_other_kind(name)) {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID, "forge %s runs %s: "
                          "git-gate serves gitea and github forges only",
                          name, bottle_forge_other_kind(name));
        goto cleanup;
    }

    scheme = strncasecmp(url, "https://", 8) == 0 ? "https" : "http";

    snprintf(f->kind, sizeof(f->kind), "%s", req->kind);
    snprintf(f->url, sizeof(f->url), "%s://%s/", scheme, name);
    snprintf(f->token, sizeof(f->token), "%s", req->token);

    if (req->api) {
        snprintf(f->api, sizeof(f->api), "%s", req->api);

        /* "{api}/user": no trailing slash */
        while (f->api[0] && f->api[strlen(f->api) - 1] == '/') {
            f->api[strlen(f->api) - 1] = '\0';
        }

    } else if (bottle_forge_api_default(f->api, sizeof(f->api), f->kind,
                                        name, f->url)
               != 0)
    {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID, "url too long");
        goto cleanup;
    }

    /* the token works on that forge, or nothing is connected */

    if (bottle_forge_api_user(login, sizeof(login), f, err, sizeof(err))
        != 0)
    {
        bottle_forge_fail(out, BOTTLE_DECISION_FORGE, "cannot connect forge "
                          "%s (proposal \"%s\" still pending): %s", name,
                          req->proposal, err);
        goto cleanup;
    }

    snprintf(f->account, sizeof(f->account), "%s",
             req->account ? req->account : login);

    if (bottle_forge_save(c, name, f, &lost, err, sizeof(err)) != 0) {
        bottle_forge_fail(out, lost ? BOTTLE_DECISION_UNREACHABLE
                                    : BOTTLE_DECISION_INVALID,
                          "cannot connect forge %s: %s", name, err);
        goto cleanup;
    }

    grant = json_pack("{s:s, s:s}", "forge", name, "account", f->account);
    if (grant == NULL) {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID, "account: not "
                          "UTF-8");
        goto cleanup;
    }

answer:

    if (req->notes == NULL && grant) {
        snprintf(notes, sizeof(notes), "connected %s as %s", name,
                 f->account);
    }

    memset(&dr, 0, sizeof(dr));
    dr.proposal = req->proposal;
    dr.action = "modify";
    dr.notes = req->notes ? req->notes : grant ? notes : NULL;
    dr.grant = grant;
    dr.operator_name = req->operator_name;
    dr.producer = req->producer;

    if (grant == NULL) {
        /* any grant: the proposal is answered, the late answer says so */
        grant = json_pack("{s:s, s:s}", "forge", "", "account", "");
        dr.grant = grant;
    }

    rc = bottle_decision_answer(out, c, &dr);

cleanup:

    json_decref(grant);
    json_decref(p);
    bottle_forge_conf_clear(f);
    free(f);

    return rc;
}


int
bottle_forge_create_answer(bottle_decision_result_t *out, redisContext *c,
    const char *proposal, const char *notes, const char *operator_name,
    const char *producer)
{
    int                    rc, lost;
    char                   login[BOTTLE_FORGE_ACCOUNT_MAX + 1], err[1024],
                           made[BOTTLE_FORGE_MADE_MAX],
                           note[BOTTLE_FORGE_MADE_MAX + 16],
                           grant_repo[BOTTLE_FORGE_NAME_MAX
                                      + 2 * BOTTLE_REPO_SEGMENT_MAX + 16];
    json_t                *p, *grant;
    const json_t          *args;
    const char            *s;
    bottle_repo_t          repo;
    bottle_forge_conf_t   *f;
    bottle_decision_req_t  dr;

    memset(out, 0, sizeof(*out));
    p = NULL;
    grant = NULL;
    made[0] = '\0';

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return bottle_forge_fail(out, BOTTLE_DECISION_INVALID,
                                 "out of memory");
    }

    rc = bottle_forge_proposal(&p, c, out, proposal,
                               BOTTLE_PROPOSAL_CREATE_REPO);
    if (rc < 0) {
        goto cleanup;
    }

    if (rc == 1) {
        /* answered already: the late answer, nothing made */
        grant = json_pack("{s:s}", "repo", "");
        goto answer;
    }

    rc = -1;
    args = json_object_get(p, "args");
    s = json_string_value(json_object_get(args, "repo"));

    if (s == NULL || bottle_repo_parse(&repo, s, strlen(s), 0, err,
                                       sizeof(err)) != 0)
    {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID, "proposal \"%s\": "
                          "repo: %s", proposal, s ? err : "none");
        goto cleanup;
    }

    if (bottle_forge_load(f, c, repo.forge, &lost, err, sizeof(err)) != 0) {
        bottle_forge_fail(out, lost ? BOTTLE_DECISION_UNREACHABLE
                                    : BOTTLE_DECISION_FORGE,
                          "cannot create %s: %s", s, err);
        goto cleanup;
    }

    if (bottle_forge_api_user(login, sizeof(login), f, err, sizeof(err)) != 0
        || bottle_forge_api_create(made, sizeof(made), f, login, repo.owner,
                                   repo.repo,
                                   !json_is_true(json_object_get(args,
                                                                 "public")),
                                   err, sizeof(err))
           != 0)
    {
        bottle_forge_fail(out, BOTTLE_DECISION_FORGE, "cannot create %s "
                          "(proposal \"%s\" still pending): %s", s, proposal,
                          err);
        goto cleanup;
    }

    if (made[0] == '\0') {
        snprintf(made, sizeof(made), "%s%s/%s", f->url, repo.owner,
                 repo.repo);
    }

    snprintf(grant_repo, sizeof(grant_repo), "%s/%s/%s:write", repo.forge,
             repo.owner, repo.repo);

    grant = json_pack("{s:s}", "repo", grant_repo);
    if (grant == NULL) {
        bottle_forge_fail(out, BOTTLE_DECISION_INVALID, "out of memory");
        goto cleanup;
    }

answer:

    snprintf(note, sizeof(note), "created %s", made);

    memset(&dr, 0, sizeof(dr));
    dr.proposal = proposal;
    dr.action = "modify";
    dr.notes = notes ? notes : made[0] ? note : NULL;
    dr.grant = grant;
    dr.operator_name = operator_name;
    dr.producer = producer;
    dr.created = made[0] ? made : NULL;

    rc = bottle_decision_answer(out, c, &dr);

cleanup:

    json_decref(grant);
    json_decref(p);
    bottle_forge_conf_clear(f);
    free(f);

    return rc;
}
