/*
 * git-gate's HTTP side (gitgate-cgi): what the CGI program and its
 * pre-receive hook share.  Configuration comes from the environment nginx
 * (fastcgi_param) gives the CGI program, and the CGI program passes on to
 * git and so to the hook:
 *
 *   BOTTLE_ID          the bottle nginx attributed the request to (never
 *                      taken from the client)
 *   GITGATE_DIR        where the gate keeps its bare repositories
 *   GITGATE_STORE      the control plane (redis://... or unix:...): the
 *                      bottle's policy, the forges, the audit journal
 *   GITGATE_POLICY     or a policy file (the file-source gateway) ...
 *   GITGATE_FORGES     ... and a forges file (docs/gitgate.md)
 *   GITGATE_REFRESH    seconds the gate's copy is served without asking
 *                      the forge (10, at most 60; gg_fresh.h)
 *   GITGATE_GIT        the git program ("git")
 *
 * No secret is in any of them but a store password; the forge token is
 * read from the store (or the forges file) and reaches git through a
 * pipe.
 */

#ifndef GG_GATE_H
#define GG_GATE_H

#include <stddef.h>
#include <sys/types.h>

#include "bottle_policy.h"
#include "gg_scan.h"


#define GG_URL_MAX          1024
#define GG_TOKEN_MAX        4096
#define GG_OUTPUT_MAX       (64 * 1024)  /* of a git child, kept */

#define GG_REFRESH_DEFAULT  10
#define GG_REFRESH_MAX      60
#define GG_PATH_LEN         4096


typedef struct {
    const char         *dir;
    const char         *store;      /* NULL: file source */
    const char         *policy;
    const char         *forges;
    const char         *git;
    unsigned            refresh;
} gg_conf_t;


typedef struct {
    char                kind[16];
    char                url[GG_URL_MAX];        /* no trailing '/' */
    char                token[GG_TOKEN_MAX];    /* "" none */
} gg_forge_t;


typedef struct gg_store_s  gg_store_t;


/* one request, or one push in the hook */
typedef struct {
    gg_conf_t           conf;
    gg_store_t         *store;
    bottle_policy_t    *policy;
    const bottle_t     *bottle;
    const char         *bottle_id;
    char                repo_dir[GG_PATH_LEN];
    char                name[BOTTLE_FORGE_NAME_MAX
                             + 2 * BOTTLE_REPO_SEGMENT_MAX + 8];
    char                url[GG_URL_MAX + 2 * BOTTLE_REPO_SEGMENT_MAX + 8];
    gg_forge_t          forge;
    bottle_repo_t       repo;
} gg_ctx_t;


/* the configuration from the environment; 0, or -1 and err */
int gg_conf_env(gg_conf_t *c, char *err, size_t errlen);

/* connects to c->store (when set); 0, or -1 and err (no password) */
int gg_store_open(gg_store_t **out, const gg_conf_t *c, char *err,
    size_t errlen);
void gg_store_close(gg_store_t *s);

/* the request's heartbeat, sent with the next store command */
void gg_store_heartbeat(gg_store_t *s);

/*
 * The bottle's policy: HGET bottle:policy:<id> json, or the policy file.
 * *out holds the bottle (bottle_policy_find_id); -1 and err if there is
 * no such bottle or it cannot be read.
 */
int gg_policy_load(bottle_policy_t **out, const gg_conf_t *c, gg_store_t *s,
    const char *id, char *err, size_t errlen);

/*
 * A forge the operator connected: bottle:forge:<forge> (or the forges
 * file).  Returns 0; 1 if the forge is not connected; -1 and err if it
 * cannot be read.
 */
int gg_forge_load(gg_forge_t *out, const gg_conf_t *c, gg_store_t *s,
    const char *forge, char *err, size_t errlen);

/* the store's connection (libbottle's clients take it); NULL: none */
struct redisContext *gg_store_redis(gg_store_t *s);

/* SISMEMBER key member into *out (0 or 1); 0, or -1 and err */
int gg_store_sismember(int *out, gg_store_t *s, const char *key,
    const char *member, char *err, size_t errlen);

/* the event appended to the journal's hash chain (bottle_audit_append());
 * 0, or -1 and err */
int gg_journal(gg_store_t *s, const char *json, size_t len, char *err,
    size_t errlen);


/*
 * Runs git (c->git) with args (NULL-terminated, not counting the program)
 * and, when token is not NULL, the token as the password of a credential
 * helper that reads it from a pipe (never argv, never the environment).
 * git_dir: --git-dir, or NULL to inherit.  stdout and stderr together are
 * kept in out (GG_OUTPUT_MAX at most, NUL-terminated; may be NULL).
 * Returns git's exit status (0 success), or -1 and err if it could not
 * run.
 */
int gg_git(const gg_conf_t *c, const char *git_dir, const char *token,
    const char *const *args, char *out, size_t outlen, char *err,
    size_t errlen);


/* the forge's URL of ctx->repo into ctx->url, its token into ctx->forge;
 * 0, 1 if the forge is not connected, -1 and err */
int gg_forge_url(gg_ctx_t *ctx, char *err, size_t errlen);

/* git with its stdin (*in) and stdout (*out) as pipes, stderr inherited,
 * the token as gg_git() hands it; 0 and the caller waits for *pid */
int gg_git_spawn(const gg_conf_t *c, const char *git_dir, const char *token,
    const char *const *args, int *in, int *out, pid_t *pid, char *err,
    size_t errlen);

/* the first clone of a repo (gg_first.c); refresh is gitgate-cgi's */
typedef int (*gg_refresh_pt)(gg_ctx_t *ctx, int fetch, char *err,
    size_t errlen);
int gg_first_empty(const gg_ctx_t *ctx);
int gg_first_v2(void);
int gg_first_rpc(gg_ctx_t *ctx, gg_refresh_pt refresh, char *err,
    size_t errlen);

/* releases what ctx holds, the forge token wiped */
void gg_ctx_free(gg_ctx_t *ctx);

/* the pre-receive hook (gg_push.c): its exit status; loaded, the rule
 * databases the resident scanner read (gg_scand.c), or NULL: read here */
int gg_hook(bottle_scan_db_t *loaded);

/* gitgate-cgi --scand GITGATE_DIR: the resident scanner of the gate's
 * hook, on <dir>/.scand/sock (gg_scand_run.h); its exit status */
int gg_hook_serve(const char *dir);

/*
 * gitleaks-allow (gg_allow.c), for a push whose only findings are marked
 * ones (GG_NEEDS_ALLOW).  gg_allow_check() sets `allowed` on each finding
 * whose (repo, rule, digest) the operator approved
 * (BOTTLE_GITLEAKS_ALLOWED) and returns how many are not, or -1 and err.
 * gg_allow_propose() queues one gitleaks-allow proposal per distinct
 * (rule, digest) of the others, or names the one already pending, and
 * tells the pusher (stderr); 0, 1 when the bottle's pending proposals
 * reached BOTTLE_PROPOSAL_PENDING_MAX before every value was queued (up to
 * the bound are; the pusher is told, rule GG_PENDING_RULE), or -1 and err.
 */
#define GG_PENDING_RULE  "proposals_pending"

int gg_allow_check(gg_ctx_t *ctx, gg_report_t *r, char *err, size_t errlen);
int gg_allow_propose(gg_ctx_t *ctx, const gg_report_t *r, char *err,
    size_t errlen);


#endif /* GG_GATE_H */
