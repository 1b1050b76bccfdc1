/*
 * A forge's REST API (bottle_forge_client.h): who a token is (GET /user)
 * and making a repo (POST /user/repos, /orgs/<owner>/repos), the same
 * paths on Gitea and GitHub.  libcurl (Debian's libcurl4-openssl-dev)
 * does the HTTP: a well-kept client with TLS verification on by default.
 */

#define _POSIX_C_SOURCE  200809L

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>

#include "bottle_forge_client.h"
#include "bottle_util.h"


static int bottle_forge_api_call(long *status, json_t **out,
    const bottle_forge_conf_t *f, const char *method, const char *path,
    const char *body, char *err, size_t errlen);
static int bottle_forge_segment(const char *s);
static void bottle_forge_api_error(char *err, size_t errlen, long status,
    const json_t *answer);


static pthread_once_t  bottle_forge_curl_once = PTHREAD_ONCE_INIT;
static int             bottle_forge_curl_rc;


static void
bottle_forge_curl_init(void)
{
    bottle_forge_curl_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK
                           ? 0 : -1;
}


/* libcurl's body callback (bottle_forge_client.h) */

size_t
bottle_forge_body_write(char *p, size_t size, size_t n, void *data)
{
    char                 *d;
    bottle_forge_body_t  *b = data;

    n *= size;

    if (b->len + n > b->max) {
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
    b.max = BOTTLE_FORGE_API_BODY_MAX;
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
        || curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bottle_forge_body_write)
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

int
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


/* a login or owner as a path segment of the API: [A-Za-z0-9._-] only */

static int
bottle_forge_segment(const char *s)
{
    if (*s == '\0') {
        return -1;
    }

    for ( /* void */ ; *s; s++) {
        if (!isalnum((unsigned char) *s) && *s != '.' && *s != '_'
            && *s != '-')
        {
            return -1;
        }
    }

    return 0;
}


int
bottle_forge_api_can_create(const bottle_forge_conf_t *f, const char *login,
    const char *owner, const char *repo, char *err, size_t errlen)
{
    int          ok, member;
    char         path[2 * BOTTLE_REPO_SEGMENT_MAX + BOTTLE_FORGE_ACCOUNT_MAX
                      + 64];
    long         status;
    json_t      *a;
    const char  *s;

    if (bottle_forge_segment(owner) != 0 || bottle_forge_segment(repo) != 0
        || bottle_forge_segment(login) != 0)
    {
        return bottle_errf(err, errlen, "the forge's login \"%s\" or the "
                           "repo's name cannot be asked about", login);
    }

    /* the repo itself: a 404 is the answer hoped for */

    snprintf(path, sizeof(path), "/repos/%s/%s", owner, repo);

    if (bottle_forge_api_call(&status, &a, f, "GET", path, NULL, err,
                              errlen)
        != 0)
    {
        return -1;
    }

    if (status != 404) {
        if (status == 200) {
            bottle_errf(err, errlen, "%s/%s exists already on the forge",
                        owner, repo);
            json_decref(a);
            return 1;
        }

        bottle_forge_api_error(err, errlen, status, a);
        json_decref(a);
        return -1;
    }

    json_decref(a);

    if (strcasecmp(owner, login) == 0) {
        return 0;
    }

    /*
     * Another owner: an organization the token's user may create repos
     * in.  Gitea says so of the user in the org; GitHub gives the user's
     * membership (an admin may; a member if the org lets members).
     */

    if (strcmp(f->kind, "gitea") == 0) {
        snprintf(path, sizeof(path), "/users/%s/orgs/%s/permissions", login,
                 owner);

    } else {
        snprintf(path, sizeof(path), "/user/memberships/orgs/%s", owner);
    }

    if (bottle_forge_api_call(&status, &a, f, "GET", path, NULL, err,
                              errlen)
        != 0)
    {
        return -1;
    }

    if (status == 403 || status == 404) {
        json_decref(a);
        bottle_errf(err, errlen, "%s is neither the forge token's account "
                    "(%s) nor an organization it belongs to", owner, login);
        return 1;
    }

    if (status != 200) {
        bottle_forge_api_error(err, errlen, status, a);
        json_decref(a);
        return -1;
    }

    if (strcmp(f->kind, "gitea") == 0) {
        ok = json_is_true(json_object_get(a, "can_create_repository"));
        json_decref(a);

    } else {
        s = json_string_value(json_object_get(a, "state"));
        member = s && strcmp(s, "active") == 0;
        s = json_string_value(json_object_get(a, "role"));
        ok = member && s && strcmp(s, "admin") == 0;
        member = member && s && strcmp(s, "member") == 0;
        json_decref(a);

        if (member) {
            /* a member: if the organization lets members create repos */

            snprintf(path, sizeof(path), "/orgs/%s", owner);

            if (bottle_forge_api_call(&status, &a, f, "GET", path, NULL, err,
                                      errlen)
                != 0)
            {
                return -1;
            }

            if (status != 200) {
                bottle_forge_api_error(err, errlen, status, a);
                json_decref(a);
                return -1;
            }

            ok = json_is_true(json_object_get(a,
                                   "members_can_create_repositories"));
            json_decref(a);
        }
    }

    if (!ok) {
        bottle_errf(err, errlen, "the forge token's account (%s) may not "
                    "create repos in %s", login, owner);
        return 1;
    }

    return 0;
}
