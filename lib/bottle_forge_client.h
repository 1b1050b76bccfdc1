/*
 * A forge as the operator's actions use it (docs/gitgate.md, "Forges";
 * docs/supervise.md, "What an approval means"): its hash in the control
 * plane read and written over a synchronous hiredis connection the caller
 * brings, its REST API (Gitea's or GitHub's: GET {api}/user, POST
 * {api}/user/repos or {api}/orgs/{owner}/repos) over libcurl, and the two
 * answers that need the forge: a forge-connect connected with the
 * operator's token, a create-repo made on the forge; both then answered
 * through bottle_decision_answer().  bottlectl and the operator page
 * (supervise-helper) share it.
 *
 * The token is in bottle:forge:<forge> only: never in an error line, a
 * decision, an audit event or a log line.
 */

#ifndef BOTTLE_FORGE_CLIENT_H
#define BOTTLE_FORGE_CLIENT_H

#include <stddef.h>

#include "bottle_decision.h"
#include "bottle_forge.h"


struct redisContext;


#define BOTTLE_FORGE_TOKEN_MAX     4096
#define BOTTLE_FORGE_URL_MAX       2048
#define BOTTLE_FORGE_API_TIMEOUT   30       /* s, a whole API call */
#define BOTTLE_FORGE_API_BODY_MAX  (1024 * 1024)   /* an answer, at most */

/*
 * An HTTP answer's body kept by libcurl's write callback
 * bottle_forge_body_write(): at most max bytes, NUL-terminated; over set
 * (and the transfer stopped) when more came.  Zero it, set max.
 */
typedef struct {
    char    *data;          /* malloc()ed, free() it */
    size_t   len;
    size_t   max;
    int      over;
} bottle_forge_body_t;

size_t bottle_forge_body_write(char *p, size_t size, size_t n, void *data);


/* a made repo's URL: the forge's URL, owner and repo */
#define BOTTLE_FORGE_MADE_MAX                                                 \
    (BOTTLE_FORGE_URL_MAX + 2 * BOTTLE_REPO_SEGMENT_MAX + 8)


typedef struct {
    char    kind[8];                            /* "gitea", "github" */
    char    url[BOTTLE_FORGE_URL_MAX + 1];      /* git's base */
    char    api[BOTTLE_FORGE_URL_MAX + 1];      /* the REST API's base */
    char    account[BOTTLE_FORGE_ACCOUNT_MAX + 1];
    char    token[BOTTLE_FORGE_TOKEN_MAX + 1];  /* secret */
} bottle_forge_conf_t;


/* a token: 1 to BOTTLE_FORGE_TOKEN_MAX printable bytes, no spaces */
int bottle_forge_token_check(const char *token, char *err, size_t errlen);

/* an http:// or https:// URL, no spaces, control bytes or credentials;
 * what names it in err */
int bottle_forge_url_check(const char *what, const char *url, char *err,
    size_t errlen);

/*
 * The REST API's base when the operator gives none: Gitea's
 * "<url>/api/v1", GitHub's "https://api.github.com" for github.com,
 * "<url>/api/v3" (GitHub Enterprise) for another host.
 */
int bottle_forge_api_default(char *out, size_t size, const char *kind,
    const char *forge, const char *url);

/*
 * Writes bottle:forge:<forge> (the whole hash replaced) and adds forge to
 * bottle:forges, at once (MULTI); empty api and account are left out.
 * 0, or -1 and one line in err (*lost 1 if the store was lost).
 */
int bottle_forge_save(struct redisContext *c, const char *forge,
    const bottle_forge_conf_t *f, int *lost, char *err, size_t errlen);

/* Reads bottle:forge:<forge>; its api defaulted if empty.  0, or -1 and
 * one line in err (*lost 1 if the store was lost) */
int bottle_forge_load(bottle_forge_conf_t *out, struct redisContext *c,
    const char *forge, int *lost, char *err, size_t errlen);

/* the token wiped */
void bottle_forge_conf_clear(bottle_forge_conf_t *f);

/* 0 if s has no control bytes (an account, a login), else -1 */
int bottle_forge_printable(const char *s);

/*
 * GET {api}/user with the token: the login of its user in out.  0, or -1
 * and one line in err ("the forge answered 401: Bad credentials", a
 * connection failure).
 */
int bottle_forge_api_user(char *out, size_t size,
    const bottle_forge_conf_t *f, char *err, size_t errlen);

/*
 * Creates owner/repo: POST {api}/user/repos when owner is the token's
 * user (login), else {api}/orgs/{owner}/repos, {"name", "private"}.  The
 * repo's web URL (html_url, else clone_url) in out.  0, or -1 and one
 * line in err (the forge's status and message: 409 if it exists).
 */
int bottle_forge_api_create(char *out, size_t size,
    const bottle_forge_conf_t *f, const char *login, const char *owner,
    const char *repo, int private_repo, char *err, size_t errlen);


/*
 * Asked before a create-repo is queued for the operator (docs/supervise.md):
 * GET {api}/repos/{owner}/{repo} (a 200: it exists); then, when owner is
 * not the token's login, the token's right to create in that organization:
 * Gitea's GET {api}/users/{login}/orgs/{owner}/permissions
 * (can_create_repository), GitHub's GET {api}/user/memberships/orgs/{owner}
 * (an active admin; a member if GET {api}/orgs/{owner} says
 * members_can_create_repositories).  0 when the forge sees nothing against
 * it, 1 when it cannot be made (err says why), -1 when the forge could not
 * be asked (err).
 */
int bottle_forge_api_can_create(const bottle_forge_conf_t *f,
    const char *login, const char *owner, const char *repo, char *err,
    size_t errlen);

/*
 * The same for repo on its connected forge (bottle_forge_load(),
 * bottle_forge_api_user()): 0, 1 or -1 as above (*lost 1 if the store was
 * lost).
 */
int bottle_forge_create_check(struct redisContext *c,
    const bottle_repo_t *repo, int *lost, char *err, size_t errlen);


typedef struct {
    const char  *proposal;          /* a pending forge-connect's id */
    const char  *kind;              /* "gitea" or "github" */
    const char  *token;             /* the operator's, borrowed */
    const char  *api;               /* NULL: bottle_forge_api_default() */
    const char  *account;           /* NULL: the token's login */
    const char  *notes;             /* NULL: "connected <forge> as <acct>" */
    const char  *operator_name;
    const char  *producer;
} bottle_forge_connect_req_t;

/*
 * Answers a forge-connect: the forge is the proposal's url's (its name
 * and git base: scheme://host[:port]/), never one the operator gives;
 * the token is checked with GET {api}/user (the account defaults to its
 * login); the forge is written (bottle_forge_save()); then the proposal
 * is modified with {"forge", "account"} through bottle_decision_answer().
 * A forge that fails leaves the proposal pending: -1 with
 * BOTTLE_DECISION_FORGE.  out as bottle_decision_answer()'s; free it
 * with bottle_decision_result_free().
 */
int bottle_forge_connect_answer(bottle_decision_result_t *out,
    struct redisContext *c, const bottle_forge_connect_req_t *req);

/*
 * Answers a create-repo: the repo made on its (connected) forge with the
 * forge's token, private unless the proposal says public
 * (bottle_forge_create_repo()), then the proposal modified with
 * {"repo": "<forge>/<owner>/<repo>:write"} (added to the bottle's repos
 * as an add-repo's grant) and "created": the repo's URL
 * (bottle_forge_create_grant()).  A forge error leaves the proposal pending: -1 with
 * BOTTLE_DECISION_FORGE and the forge's message.
 */
int bottle_forge_create_answer(bottle_decision_result_t *out,
    struct redisContext *c, const char *proposal, const char *notes,
    const char *operator_name, const char *producer);


/*
 * The two halves of a create-repo's answer, shared by the operator's
 * Create (bottle_forge_create_answer()) and supervise's create-repo when
 * the bottle's git_gate.actions.create allows the repo (no card).
 *
 * bottle_forge_create_repo(): makes repo on its connected forge with the
 * forge's token (bottle_forge_load(), bottle_forge_api_user(),
 * bottle_forge_api_create()), private unless public_repo; the repo's URL
 * in made (BOTTLE_FORGE_MADE_MAX bytes hold any).  0, or -1 and one line
 * in err (the forge's status and message; *lost 1 if the store was
 * lost).
 */
int bottle_forge_create_repo(char *made, size_t size,
    struct redisContext *c, const bottle_repo_t *repo, int public_repo,
    int *lost, char *err, size_t errlen);

typedef struct {
    const char              *proposal;      /* a create-repo's id */
    const bottle_repo_t     *repo;          /* made; NULL: none (the
                                               proposal was answered
                                               already: the late answer) */
    const char              *made;          /* its URL, or NULL */
    const char              *notes;         /* NULL: "created <made>" */
    const char              *operator_name;
    const char              *producer;
} bottle_forge_create_req_t;

/*
 * bottle_forge_create_grant(): the made repo granted: the proposal
 * modified with {"repo": "<forge>/<owner>/<repo>:write"} (added to the
 * bottle's repos, a new policy version) and "created", through
 * bottle_decision_answer() (its out, its statuses).
 */
int bottle_forge_create_grant(bottle_decision_result_t *out,
    struct redisContext *c, const bottle_forge_create_req_t *req);


#endif /* BOTTLE_FORGE_CLIENT_H */
