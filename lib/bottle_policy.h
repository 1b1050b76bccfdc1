/*
 * The bottle policy model: parsed once from JSON (docs/policy.md), then
 * immutable and shared read-only by every worker and helper.
 *
 * All strings and arrays of one policy live in one arena owned by it and
 * are released together by bottle_policy_free().  Strings are never NULL:
 * an absent string is "" with len 0, and every string is NUL-terminated.
 *
 * No nginx types: shared by the nginx module and the helper daemons.
 */

#ifndef BOTTLE_POLICY_H
#define BOTTLE_POLICY_H

#include <stddef.h>

#include "bottle_ip.h"
#include "bottle_forge.h"


typedef struct {
    const char         *data;       /* NUL-terminated too */
    size_t              len;
} bottle_str_t;


/* request methods; BOTTLE_M_ANY is ["*"] and admits any method */
#define BOTTLE_M_GET        0x00000001
#define BOTTLE_M_HEAD       0x00000002
#define BOTTLE_M_POST       0x00000004
#define BOTTLE_M_PUT        0x00000008
#define BOTTLE_M_PATCH      0x00000010
#define BOTTLE_M_DELETE     0x00000020
#define BOTTLE_M_OPTIONS    0x00000040
#define BOTTLE_M_TRACE      0x00000080
#define BOTTLE_M_PROPFIND   0x00000100
#define BOTTLE_M_PROPPATCH  0x00000200
#define BOTTLE_M_MKCOL      0x00000400
#define BOTTLE_M_COPY       0x00000800
#define BOTTLE_M_MOVE       0x00001000
#define BOTTLE_M_LOCK       0x00002000
#define BOTTLE_M_UNLOCK     0x00004000
#define BOTTLE_M_REPORT     0x00008000
#define BOTTLE_M_ANY        0x80000000

/* what an inspected route admits when no methods are listed anywhere */
#define BOTTLE_M_READ_ONLY  (BOTTLE_M_GET | BOTTLE_M_HEAD)

/*
 * Bit of a request method, case-sensitive as HTTP methods are; 0 if the
 * method is not one of the above (CONNECT included: it opens the tunnel
 * and is never a route method).  Only BOTTLE_M_ANY admits such a method.
 */
unsigned bottle_method_bit(const char *name, size_t len);


typedef struct {
    bottle_str_t        name;       /* lowercase header name */
    bottle_str_t        value;      /* glob, '*' any run */
} bottle_header_filter_t;


typedef struct {
    bottle_str_t        path;       /* glob, or "" for any path */
    unsigned            methods;    /* 0: inherit the route's */
    bottle_header_filter_t  *headers;   /* all must match */
    size_t              nheaders;
} bottle_allow_t;


enum {
    BOTTLE_AUTH_NONE = 0,
    BOTTLE_AUTH_BEARER,             /* Authorization: Bearer <value> */
    BOTTLE_AUTH_TOKEN,              /* Authorization: token <value> */
    BOTTLE_AUTH_HEADER              /* <auth_header>: <value> */
};

enum {
    BOTTLE_ON_MATCH_DEFAULT = 0,    /* never left in a parsed route */
    BOTTLE_ON_MATCH_REDACT,
    BOTTLE_ON_MATCH_SUPERVISE,
    BOTTLE_ON_MATCH_BLOCK
};

/* DLP detectors */
#define BOTTLE_DLP_TOKEN_PATTERNS   0x01    /* outbound, default on */
#define BOTTLE_DLP_KNOWN_SECRETS    0x02    /* outbound, default on */
#define BOTTLE_DLP_ENTROPY          0x04    /* outbound, opt-in */
#define BOTTLE_DLP_NAIVE_INJECTION  0x08    /* inbound, opt-in */

#define BOTTLE_DLP_OUTBOUND_DEFAULT                                          \
    (BOTTLE_DLP_TOKEN_PATTERNS | BOTTLE_DLP_KNOWN_SECRETS)
#define BOTTLE_DLP_INBOUND_DEFAULT  0

/* dlp.scrub: the held values scrubbed from responses (docs/dlp.md) */
#define BOTTLE_HELD_CREDENTIAL      0x01    /* default on */
#define BOTTLE_HELD_EGRESS_TOKENS   0x02
#define BOTTLE_HELD_CANARY          0x04


/* a route's "mcp" field (bottle_mcp.h) */
typedef struct bottle_mcp_s  bottle_mcp_t;


typedef struct {
    bottle_str_t        host;       /* lowercase, no trailing dot; IP
                                       literals canonical, v6 unbracketed */
    int                 host_is_ip;
    bottle_ip_t         ip;         /* if host_is_ip */

    unsigned short     *ports;      /* none: 443 for CONNECT, 80 for HTTP */
    size_t              nports;

    unsigned            passthrough:1;
    unsigned            preserve_auth:1;
    unsigned            git_fetch:1;
    unsigned            internal:1;     /* may dial internal addresses; set
                                           implicitly for IP-literal hosts */
    unsigned            websocket:1;
    unsigned            agent_provider:1;

    unsigned            methods;    /* 0: not listed */
    bottle_allow_t     *allow;      /* none: any path */
    size_t              nallow;

    int                 auth_type;      /* BOTTLE_AUTH_* */
    bottle_str_t        auth_header;    /* lowercase; "authorization" for
                                           bearer and token */
    bottle_str_t        auth_secret;    /* NAME in egress_tokens */
    bottle_str_t        auth_value;     /* the token value itself */

    int                 dlp_off;        /* dlp: false */
    unsigned            dlp_outbound;   /* BOTTLE_DLP_*, if _set */
    unsigned            dlp_inbound;
    int                 dlp_outbound_set;
    int                 dlp_inbound_set;
    unsigned            scrub;          /* BOTTLE_HELD_*: held values
                                           scrubbed from responses,
                                           resolved (default: credential) */
    int                 on_match;       /* BOTTLE_ON_MATCH_*, resolved:
                                           redact for agent_provider
                                           routes, else supervise */

    int                 log_full;       /* log: "full" */

    bottle_mcp_t       *mcp;            /* NULL: not an MCP server route */
} bottle_route_t;


typedef struct {
    bottle_str_t        name;
    bottle_str_t        value;
} bottle_secret_t;


enum {
    BOTTLE_FIREHOSE_OFF = 0,
    BOTTLE_FIREHOSE_METADATA,
    BOTTLE_FIREHOSE_FULL
};


typedef struct bottle_s {
    bottle_str_t        id;
    bottle_str_t        slug;           /* defaults to id */
    bottle_str_t        source;         /* file or source name it came from */
    unsigned char       token_sha256[32];
    unsigned            token_given:1;  /* the token itself was in the
                                           policy, not only its digest */

    bottle_net_t       *sources;        /* none: any source address */
    size_t              nsources;

    bottle_str_t        canary;         /* "" if none */
    bottle_secret_t    *egress_tokens;
    size_t              negress_tokens;
    bottle_secret_t    *held_secrets;
    size_t              nheld_secrets;

    int                 audit_required; /* audit.delivery: "required" */
    int                 firehose;       /* BOTTLE_FIREHOSE_* */
    bottle_repo_t      *repos;          /* repo grants, for git-gate */
    size_t              nrepos;
    bottle_repo_pattern_t  *create;     /* git_gate.actions.create: repos
                                           supervise's create-repo makes
                                           without asking */
    size_t              ncreate;
    bottle_repo_t      *trailer_required;   /* git_gate.trailer_required:
                                           repos whose pushed commits must
                                           carry Bottle-Id: <id> */
    size_t              ntrailer_required;

    bottle_str_t        parent;         /* "parent": the bottle it is a
                                           child of (depth 1), "" if none */
    unsigned            children_max;   /* children.max: launch-bottle's
                                           bound; 0 for a child */
    bottle_str_t       *child_agents;   /* children.agents: the agents a
                                           child may run; none: no launch */
    size_t              nchild_agents;

    bottle_route_t     *routes;
    size_t              nroutes;

    /* private: host hash table for bottle_find_route() */
    size_t             *host_slots;     /* route index + 1, 0 if empty */
    size_t              host_mask;
} bottle_t;


typedef struct bottle_policy_s  bottle_policy_t;


/* children.max: the default, and the most a policy may give */
#define BOTTLE_CHILDREN_DEFAULT  3
#define BOTTLE_CHILDREN_MAX      64
#define BOTTLE_CHILD_AGENTS_MAX  64     /* children.agents entries */


/*
 * The files bottle_policy_load() reads for path, in its order: path
 * itself, or a directory's "*.json" files sorted by name, dot files
 * skipped.  0 with malloc()ed paths (bottle_policy_files_free()), or -1
 * and one line in err.
 */
int bottle_policy_files(char ***out, size_t *n, const char *path, char *err,
    size_t errlen);
void bottle_policy_files_free(char **files, size_t n);

/*
 * Loads a JSON file, or every "*.json" file in a directory (sorted by
 * name, dot files skipped).  On failure returns -1 and writes one line to
 * err: "<file>: bottle \"<id>\": <field path>: <reason>".  Secret values
 * never appear in it.
 */
int bottle_policy_load(bottle_policy_t **out, const char *path, char *err,
    size_t errlen);

/*
 * The fields this build parses but does not act on yet (a field that
 * promises something and does nothing fails open): -1 and one line in err,
 * in bottle_policy_load's form, for the first bottle that sets one.
 */
int bottle_policy_unsupported(const bottle_policy_t *p, char *err,
    size_t errlen);

/*
 * For a gateway whose audit journal is off (bottle_audit off): a bottle
 * with audit.delivery: "required" cannot be served.  -1 and one line in
 * err, in bottle_policy_load's form, for the first such bottle.
 */
int bottle_policy_needs_journal(const bottle_policy_t *p, char *err,
    size_t errlen);

/*
 * For an http block without bottle_full_log_dir: a bottle with a route
 * whose log is "full" cannot be served (docs/full-log.md).  -1 and one
 * line in err, in bottle_policy_load's form, for the first such route.
 */
int bottle_policy_needs_full_log(const bottle_policy_t *p, char *err,
    size_t errlen);

/* as bottle_policy_load, from memory; source_name prefixes errors */
int bottle_policy_parse(bottle_policy_t **out, const char *json, size_t len,
    const char *source_name, char *err, size_t errlen);

void bottle_policy_free(bottle_policy_t *p);

size_t bottle_policy_count(const bottle_policy_t *p);

/* the memory the policy holds, in bytes (its arena) */
size_t bottle_policy_bytes(const bottle_policy_t *p);
const bottle_t *bottle_policy_at(const bottle_policy_t *p, size_t i);

/*
 * The bottle whose identity token this is, or NULL.  The token is hashed
 * with SHA-256 and looked up by digest; digests are compared in constant
 * time.
 */
const bottle_t *bottle_policy_find_token(const bottle_policy_t *p,
    const unsigned char *token, size_t len);

/* 1 if the bottle lists no source addresses, or src is in one of them */
/* the bottle with this id, or NULL */
const bottle_t *bottle_policy_find_id(const bottle_policy_t *p,
    const char *id, size_t len);

int bottle_source_allowed(const bottle_t *b, const bottle_ip_t *src);

/*
 * The route for a host: exact, case-insensitive, one trailing dot ignored;
 * "[v6]" accepted; IP literals in any spelling ("0x7f.1") are canonicalised
 * first, and a numeric-looking name that is not an address matches
 * nothing.  NULL if there is no route.
 */
const bottle_route_t *bottle_find_route(const bottle_t *b, const char *host,
    size_t len);

/*
 * The bottle's grant of a repo (forge, owner and repo as
 * bottle_repo_same() compares them): a write grant if any grant of it
 * writes, else a read grant; NULL if none.
 */
/* 1 if git_gate.trailer_required lists repo (as bottle_repo_same()) */
int bottle_trailer_required(const bottle_t *b, const bottle_repo_t *repo);

const bottle_repo_t *bottle_find_repo(const bottle_t *b,
    const bottle_repo_t *want);

/*
 * The first of the bottle's git_gate.actions.create patterns that allows
 * creating repo (public only with ":public"), or NULL: then an operator
 * is asked.
 */
const bottle_repo_pattern_t *bottle_create_allowed(const bottle_t *b,
    const bottle_repo_t *repo, int public_repo);

/*
 * A child's access beyond its parent's (docs/policy.md#parent-and-children):
 * what launch-bottle lists as removed, and what a policy with a child in
 * it is refused for.  Compared: route hosts (a host the parent has no
 * route to), repos (a repo the parent is not granted, or :write where the
 * parent only reads), egress_tokens names, git_gate.actions.create
 * patterns (one no pattern of the parent covers).  For each element
 * beyond the parent's, fn is called with its field ("routes", "repos",
 * "egress_tokens", "git_gate.actions.create"), its index in the child's
 * array (or -1 for a name), the element as text (a host, a grant
 * "<forge>/<owner>/<repo>[:write]", a NAME, a pattern) and why it is
 * beyond.  Returns how many elements are beyond, or -1 if out of memory.
 * O((n + m) log m).
 */
typedef void (*bottle_beyond_pt)(void *data, const char *field,
    long index, const char *what, const char *why);

long bottle_child_beyond(const bottle_t *child, const bottle_t *parent,
    bottle_beyond_pt fn, void *data);

/*
 * Every child whose parent is in p checked: the parent is no child
 * itself, and the child is within it (bottle_child_beyond()).  -1 and one
 * line in err, in bottle_policy_load's form, naming the child and the
 * first element beyond.  A child whose parent is not in p: an error if
 * need_parent, else left to the caller (a store holds one bottle per
 * key: the caller compares it with the stored parent).
 */
int bottle_policy_check_family(const bottle_policy_t *p, int need_parent,
    char *err, size_t errlen);

/* as above, for one child and its parent from elsewhere (the store) */
int bottle_child_check(const bottle_t *child, const bottle_t *parent,
    char *err, size_t errlen);

/* 1 if the port is allowed: the listed ports, else 443 or 80 */
int bottle_route_port_ok(const bottle_route_t *r, unsigned port,
    int is_connect);

/*
 * 1 if s matches pat, where '*' matches any run of characters, '/'
 * included, and every other character is literal.  Iterative, at worst
 * O(plen * slen), no recursion.
 */
int bottle_glob_match(const char *pat, size_t plen, const char *s,
    size_t slen);


#endif /* BOTTLE_POLICY_H */
