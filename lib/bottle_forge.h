/*
 * Forges and repo grants (docs/gitgate.md, docs/supervise.md): what
 * git-gate, supervise and bottlectl agree on.
 *
 * A repo grant is "<forge>/<owner>/<repo>[:write]", as in a bottle's
 * `repos` and in add-repo / create-repo: forge is the name the agent's
 * URLs use (a host name, lowercase, maybe ":port"), owner and repo are
 * the forge's path segments.  A forge the gateway has connected is a hash
 * in the control plane, written by the operator (bottlectl forge connect):
 * its kind, where it really is, the token git-gate uses on it.  The token
 * never leaves the gateway's side.
 */

#ifndef BOTTLE_FORGE_H
#define BOTTLE_FORGE_H

#include <stddef.h>


/* the control plane: "bottle:forge:<forge>" hash, "bottle:forges" set */
#define BOTTLE_FORGE_PREFIX      "bottle:forge:"
#define BOTTLE_FORGES            "bottle:forges"

/* the fields of a forge's hash */
#define BOTTLE_FORGE_F_KIND      "kind"     /* "gitea" or "github" */
#define BOTTLE_FORGE_F_URL       "url"      /* git's base: https://host/ */
#define BOTTLE_FORGE_F_API       "api"      /* the REST API's base */
#define BOTTLE_FORGE_F_TOKEN     "token"    /* the forge token (secret) */
#define BOTTLE_FORGE_F_ACCOUNT   "account"  /* whose token it is */

#define BOTTLE_FORGE_NAME_MAX    253
#define BOTTLE_REPO_SEGMENT_MAX  100        /* GitHub's owner/repo bound */
#define BOTTLE_FORGE_ACCOUNT_MAX 255        /* an account's name, at most */


typedef struct {
    char    forge[BOTTLE_FORGE_NAME_MAX + 1];   /* lowercase */
    char    owner[BOTTLE_REPO_SEGMENT_MAX + 1];
    char    repo[BOTTLE_REPO_SEGMENT_MAX + 1];  /* without ".git" */
    int     write;                              /* ":write" */
} bottle_repo_t;


/*
 * Parses "<forge>/<owner>/<repo>[:write]" (len bytes, no NUL needed).
 * forge: a host name ([a-z0-9.-], labels not starting or ending with '-')
 * with an optional ":port"; owner and repo: [A-Za-z0-9._-], not starting
 * with '.', not "." or ".."; one trailing ".git" of repo is dropped.
 * with_mode 0 refuses any ":suffix".  0, or -1 and one line in err.
 */
int bottle_repo_parse(bottle_repo_t *out, const char *s, size_t len,
    int with_mode, char *err, size_t errlen);

/*
 * A forge's name alone, as in a grant: out (BOTTLE_FORGE_NAME_MAX + 1
 * bytes) gets it lowercase.  0, or -1 if it is not one.
 */
int bottle_forge_name_parse(char *out, const char *s, size_t len);

/*
 * The forge a forge-connect's URL names: "http(s)://host[:port]/..." (no
 * user or token in it) gives host[:port], lowercase, as a grant names the
 * forge (out: BOTTLE_FORGE_NAME_MAX + 1 bytes).  0, or -1 and one line in
 * err.
 */
int bottle_forge_url_name(char *out, const char *url, char *err,
    size_t errlen);

/*
 * A pattern of repos a bottle may create without asking
 * (git_gate.actions.create, docs/policy.md): "<forge>/<owner>/<name>"
 * with an optional ":public".  forge and owner are literal, as in a grant
 * (an owner is never a wildcard: an agent must not create under any
 * account or org); name is a repo's name, "*" (any), or a prefix and a
 * final '*'.  Without ":public" only private repos match.
 */
typedef struct {
    char    forge[BOTTLE_FORGE_NAME_MAX + 1];   /* lowercase */
    char    owner[BOTTLE_REPO_SEGMENT_MAX + 1];
    char    name[BOTTLE_REPO_SEGMENT_MAX + 1];  /* the prefix, if prefix;
                                                   "" for "*" */
    int     prefix;                             /* name ended in '*' */
    int     public_ok;                          /* ":public" */
} bottle_repo_pattern_t;

/* len bytes, no NUL needed; 0, or -1 and one line in err */
int bottle_repo_pattern_parse(bottle_repo_pattern_t *out, const char *s,
    size_t len, char *err, size_t errlen);

/*
 * 1 if the pattern allows creating repo (public or not): forge equal,
 * owner and name compared case-insensitively as bottle_repo_same() does,
 * a prefix on the name's first bytes
 */
int bottle_repo_pattern_match(const bottle_repo_pattern_t *p,
    const bottle_repo_t *repo, int public_repo);

/* 1 if a and b name the same repo (forge and owner case-insensitively,
 * as the forges compare them; repo too) */
int bottle_repo_same(const bottle_repo_t *a, const bottle_repo_t *b);

/*
 * The kind of forge a well-known public host runs, if it is neither
 * Gitea nor GitHub ("GitLab" for gitlab.com, ...): a forge the gateway
 * cannot serve, refused before anyone is asked.  NULL otherwise.
 */
const char *bottle_forge_other_kind(const char *forge);

/* "gitea" or "github": 0; else -1 */
int bottle_forge_kind_valid(const char *kind);


#endif /* BOTTLE_FORGE_H */
