/*
 * A forge's hash, and the answers that need the forge
 * (bottle_forge_client.h): a forge-connect connected, a create-repo made.
 * The REST API is bottle_forge_api.c.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "bottle_forge_client.h"
#include "bottle_util.h"


static int bottle_forge_command(redisContext *c, redisReply **out,
    int argc, const char **argv, int *lost, char *err, size_t errlen);
static int bottle_forge_proposal(json_t **out, redisContext *c,
    bottle_decision_result_t *res, const char *id,
    bottle_proposal_kind_e want);


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
        return bottle_decision_fail(res, BOTTLE_DECISION_NOT_FOUND,
                                 "no proposal \"%s\"", id);
    }

    snprintf(key, sizeof(key), "%s%s", BOTTLE_PROPOSAL_PREFIX, id);

    av[0] = "HMGET";
    av[1] = key;
    av[2] = BOTTLE_PROPOSAL_F_JSON;
    av[3] = BOTTLE_PROPOSAL_F_STATE;

    lost = 0;

    if (bottle_forge_command(c, &r, 4, av, &lost, err, sizeof(err)) != 0) {
        return bottle_decision_fail(res, lost ? BOTTLE_DECISION_UNREACHABLE
                                           : BOTTLE_DECISION_INVALID,
                                 "%s", err);
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING
        || r->element[1]->type != REDIS_REPLY_STRING)
    {
        freeReplyObject(r);
        return bottle_decision_fail(res, BOTTLE_DECISION_NOT_FOUND,
                                 "no proposal \"%s\"", id);
    }

    p = bottle_proposal_parse(r->element[0]->str, r->element[0]->len,
                              &kind, err, sizeof(err));

    if (p == NULL) {
        freeReplyObject(r);
        return bottle_decision_fail(res, BOTTLE_DECISION_INVALID,
                                 "proposal \"%s\": %s", id, err);
    }

    snprintf(res->bottle, sizeof(res->bottle), "%s",
             json_string_value(json_object_get(p, "bottle")));

    if (kind != want) {
        freeReplyObject(r);
        json_decref(p);
        return bottle_decision_fail(res, BOTTLE_DECISION_INVALID,
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
        return bottle_decision_fail(out, BOTTLE_DECISION_INVALID,
                                 "out of memory");
    }

    rc = -1;

    if (bottle_forge_kind_valid(req->kind) != 0) {
        bottle_decision_fail(out, BOTTLE_DECISION_INVALID,
                          "kind: \"gitea\" or \"github\"");
        goto cleanup;
    }

    if (bottle_forge_token_check(req->token, err, sizeof(err)) != 0
        || (req->api
            && bottle_forge_url_check("api", req->api, err, sizeof(err))
               != 0))
    {
        bottle_decision_fail(out, BOTTLE_DECISION_INVALID, "%s", err);
        goto cleanup;
    }

    if (req->account
        && (req->account[0] == '\0'
            || strlen(req->account) > BOTTLE_FORGE_ACCOUNT_MAX
            || bottle_forge_printable(req->account) != 0))
    {
        bottle_decision_fail(out, BOTTLE_DECISION_INVALID, "account: 1 to %d "
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
        bottle_decision_fail(out, BOTTLE_DECISION_INVALID, "proposal \"%s\": "
                          "%s", req->proposal, err);
        goto cleanup;
    }

    if (bottle_forge_other_kind(name)) {
        bottle_decision_fail(out, BOTTLE_DECISION_INVALID, "forge %s runs %s: "
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
        bottle_decision_fail(out, BOTTLE_DECISION_INVALID, "url too long");
        goto cleanup;
    }

    /* the token works on that forge, or nothing is connected */

    if (bottle_forge_api_user(login, sizeof(login), f, err, sizeof(err))
        != 0)
    {
        bottle_decision_fail(out, BOTTLE_DECISION_FORGE, "cannot connect forge "
                          "%s (proposal \"%s\" still pending): %s", name,
                          req->proposal, err);
        goto cleanup;
    }

    snprintf(f->account, sizeof(f->account), "%s",
             req->account ? req->account : login);

    if (bottle_forge_save(c, name, f, &lost, err, sizeof(err)) != 0) {
        bottle_decision_fail(out, lost ? BOTTLE_DECISION_UNREACHABLE
                                    : BOTTLE_DECISION_INVALID,
                          "cannot connect forge %s: %s", name, err);
        goto cleanup;
    }

    grant = json_pack("{s:s, s:s}", "forge", name, "account", f->account);
    if (grant == NULL) {
        bottle_decision_fail(out, BOTTLE_DECISION_INVALID, "account: not "
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
bottle_forge_create_repo(char *made, size_t size, redisContext *c,
    const bottle_repo_t *repo, int public_repo, int *lost, char *err,
    size_t errlen)
{
    int                   rc;
    char                  login[BOTTLE_FORGE_ACCOUNT_MAX + 1];
    bottle_forge_conf_t  *f;

    made[0] = '\0';
    *lost = 0;

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    rc = -1;

    if (bottle_forge_load(f, c, repo->forge, lost, err, errlen) != 0) {
        goto cleanup;
    }

    if (bottle_forge_api_user(login, sizeof(login), f, err, errlen) != 0
        || bottle_forge_api_create(made, size, f, login, repo->owner,
                                   repo->repo, !public_repo, err, errlen)
           != 0)
    {
        made[0] = '\0';
        goto cleanup;
    }

    if (made[0] == '\0') {
        snprintf(made, size, "%s%s/%s", f->url, repo->owner, repo->repo);
    }

    rc = 0;

cleanup:

    bottle_forge_conf_clear(f);
    free(f);

    return rc;
}


int
bottle_forge_create_check(redisContext *c, const bottle_repo_t *repo,
    int *lost, char *err, size_t errlen)
{
    int                   rc;
    char                  login[BOTTLE_FORGE_ACCOUNT_MAX + 1];
    bottle_forge_conf_t  *f;

    *lost = 0;

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    rc = -1;

    if (bottle_forge_load(f, c, repo->forge, lost, err, errlen) == 0
        && bottle_forge_api_user(login, sizeof(login), f, err, errlen) == 0)
    {
        rc = bottle_forge_api_can_create(f, login, repo->owner, repo->repo,
                                         err, errlen);
    }

    bottle_forge_conf_clear(f);
    free(f);

    return rc;
}


int
bottle_forge_create_grant(bottle_decision_result_t *out, redisContext *c,
    const bottle_forge_create_req_t *req)
{
    int                    rc;
    char                   note[BOTTLE_FORGE_MADE_MAX + 16],
                           grant_repo[BOTTLE_FORGE_NAME_MAX
                                      + 2 * BOTTLE_REPO_SEGMENT_MAX + 16];
    json_t                *grant;
    bottle_decision_req_t  dr;

    memset(out, 0, sizeof(*out));

    if (req->repo != NULL) {
        snprintf(grant_repo, sizeof(grant_repo), "%s/%s/%s:write",
                 req->repo->forge, req->repo->owner, req->repo->repo);
        grant = json_pack("{s:s}", "repo", grant_repo);

    } else {
        /* answered already: any grant, the late answer says so */
        grant = json_pack("{s:s}", "repo", "");
    }

    if (grant == NULL) {
        return bottle_decision_fail(out, BOTTLE_DECISION_INVALID,
                                    "out of memory");
    }

    snprintf(note, sizeof(note), "created %s", req->made ? req->made : "");

    memset(&dr, 0, sizeof(dr));
    dr.proposal = req->proposal;
    dr.action = "modify";
    dr.notes = req->notes ? req->notes : req->made ? note : NULL;
    dr.grant = grant;
    dr.operator_name = req->operator_name;
    dr.producer = req->producer;
    dr.created = req->made;

    rc = bottle_decision_answer(out, c, &dr);

    json_decref(grant);

    return rc;
}


int
bottle_forge_create_answer(bottle_decision_result_t *out, redisContext *c,
    const char *proposal, const char *notes, const char *operator_name,
    const char *producer)
{
    int                        rc, lost;
    char                       err[1024], made[BOTTLE_FORGE_MADE_MAX];
    json_t                    *p;
    const json_t              *args;
    const char                *s;
    bottle_repo_t              repo;
    bottle_forge_create_req_t  cr;

    memset(out, 0, sizeof(*out));
    memset(&cr, 0, sizeof(cr));
    cr.proposal = proposal;
    cr.notes = notes;
    cr.operator_name = operator_name;
    cr.producer = producer;

    rc = bottle_forge_proposal(&p, c, out, proposal,
                               BOTTLE_PROPOSAL_CREATE_REPO);
    if (rc < 0) {
        return -1;
    }

    if (rc == 1) {
        /* answered already: the late answer, nothing made */
        return bottle_forge_create_grant(out, c, &cr);
    }

    rc = -1;
    args = json_object_get(p, "args");
    s = json_string_value(json_object_get(args, "repo"));

    if (s == NULL || bottle_repo_parse(&repo, s, strlen(s), 0, err,
                                       sizeof(err)) != 0)
    {
        bottle_decision_fail(out, BOTTLE_DECISION_INVALID, "proposal \"%s\": "
                          "repo: %s", proposal, s ? err : "none");
        goto cleanup;
    }

    if (bottle_forge_create_repo(made, sizeof(made), c, &repo,
                                 json_is_true(json_object_get(args,
                                                              "public")),
                                 &lost, err, sizeof(err))
        != 0)
    {
        if (lost) {
            bottle_decision_fail(out, BOTTLE_DECISION_UNREACHABLE,
                                 "cannot create %s: %s", s, err);

        } else {
            bottle_decision_fail(out, BOTTLE_DECISION_FORGE, "cannot create "
                                 "%s (proposal \"%s\" still pending): %s", s,
                                 proposal, err);
        }

        goto cleanup;
    }

    cr.repo = &repo;
    cr.made = made;

    rc = bottle_forge_create_grant(out, c, &cr);

cleanup:

    json_decref(p);

    return rc;
}
