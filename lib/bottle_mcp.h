/*
 * MCP gating (docs/mcp.md): a route's "mcp" field, its one matcher, and
 * the JSON-RPC reader and rewriter the gateway runs on such a route's
 * bodies.  Used by the nginx module, supervise and bottlectl.
 *
 * The bodies are the agent's (requests) and the MCP server's (responses):
 * hostile input, read with jansson under fixed bounds.
 *
 * No nginx types.
 */

#ifndef BOTTLE_MCP_H
#define BOTTLE_MCP_H

#include <stddef.h>

#include "bottle_policy.h"


/* the three kinds of things a server offers */
#define BOTTLE_MCP_TOOL       0
#define BOTTLE_MCP_RESOURCE   1
#define BOTTLE_MCP_PROMPT     2
#define BOTTLE_MCP_NKINDS     3

#define BOTTLE_MCP_NAME_MAX   512     /* bytes of a name or glob in policy */
#define BOTTLE_MCP_BATCH_MAX  256     /* messages in one batch */

/* "sha256:" and 64 hex digits, and a NUL */
#define BOTTLE_MCP_DIGEST_LEN 72


typedef struct {
    bottle_str_t       *allow;      /* globs; none: nothing of the kind */
    size_t              nallow;
    bottle_str_t       *deny;       /* globs; deny wins */
    size_t              ndeny;
} bottle_mcp_list_t;

struct bottle_mcp_s {
    bottle_mcp_list_t   kinds[BOTTLE_MCP_NKINDS];
};


/* "tools", "resources", "prompts"; "tool", "resource", "prompt" */
const char *bottle_mcp_kind_field(int kind);
const char *bottle_mcp_kind_name(int kind);

/* the kind of "tools" etc., or -1 */
int bottle_mcp_kind_by_field(const char *s, size_t len);

/*
 * 1 if the route's mcp field lets the bottle use this tool (by name),
 * resource (by URI, or a template by its URI template) or prompt (by
 * name): a deny glob matches nothing of it and an allow glob does.
 */
int bottle_mcp_allowed(const bottle_mcp_t *m, int kind, const char *name,
    size_t len);

/* a glob the policy may hold: 0, or -1 and why in *why */
int bottle_mcp_glob_ok(const char *s, size_t len, const char **why);


/* one JSON-RPC message of a request body */
typedef struct {
    char               *id;         /* compact JSON of its id; NULL: a
                                       notification or a response */
    char               *method;     /* NULL: a response */
    int                 kind;       /* gated call: BOTTLE_MCP_*, else -1 */
    int                 list;       /* a list call: BOTTLE_MCP_*, else -1;
                                       resources/templates/list is
                                       BOTTLE_MCP_RESOURCE too */
    char               *name;       /* of the gated call's target */
    char                digest[BOTTLE_MCP_DIGEST_LEN];  /* its arguments */
    int                 allowed;
} bottle_mcp_msg_t;

typedef struct {
    bottle_mcp_msg_t   *msgs;
    size_t              n;
    int                 batch;
    int                 refused;    /* messages not allowed */
} bottle_mcp_body_t;

/*
 * Reads a request body as JSON-RPC 2.0 (one message or a batch) and
 * decides each gated call with m.  0 with *out filled (free it with
 * bottle_mcp_body_free), or -1 and one line in err (malformed: nothing
 * may be forwarded).
 */
int bottle_mcp_read(bottle_mcp_body_t *out, const bottle_mcp_t *m,
    const char *body, size_t len, char *err, size_t errlen);
void bottle_mcp_body_free(bottle_mcp_body_t *b);

/*
 * The answer to a body with a refused call, sent in place of forwarding
 * it: compact JSON, malloc()ed (free() it), *len its length.  Each
 * request of it gets an error: a refused call's names the rule
 * mcp_tool_denied (mcp_resource_denied, mcp_prompt_denied), the others of
 * a batch mcp_batch_refused.  NULL if out of memory.
 */
char *bottle_mcp_refusal(const bottle_mcp_body_t *b, size_t *len);

/* a JSON-RPC error with a null id for a malformed body (rule
 * mcp_malformed); malloc()ed */
char *bottle_mcp_malformed(const char *why, size_t *len);

/*
 * A response message (one JSON value, or a batch) with what m does not
 * allow removed from the lists it answers.  A response whose id one of
 * the request's list calls had is filtered for that kind; with b NULL
 * (a stream not tied to a request: the HTTP+SSE transport's) every list
 * a result holds is.  Returns 1 and *out (malloc()ed compact JSON) when
 * something was removed, 0 when the message passes as it is, -1 when it
 * is not JSON (it must not pass).
 */
int bottle_mcp_filter(char **out, size_t *outlen, const bottle_mcp_t *m,
    const bottle_mcp_body_t *b, const char *msg, size_t len);


/*
 * egress-allow's "mcp" part (supervise): the host's route from the stored
 * bottle object (a new route with GET, POST, DELETE if it has none) with
 * the asked names ({"tools": [...], "resources": [...], "prompts": [...]})
 * added to its mcp allow lists.  A new route object, or NULL and why in
 * err (a bad name, one the route's deny list matches, nothing new).
 * The json_t is jansson's; the caller includes <jansson.h>.
 */
struct json_t;
struct json_t *bottle_mcp_grant(const struct json_t *bottle,
    const char *host, const struct json_t *ask, char *err, size_t errlen);

/*
 * For the operator's warnings (bottle_warn.c): 1 and one phrase in buf
 * when the new route allows MCP names the old one did not, or drops its
 * mcp field; 0 otherwise.
 */
int bottle_mcp_widened(char *buf, size_t size, const struct json_t *old,
    const struct json_t *new_route);

/*
 * Server-sent events (text/event-stream): the length of the first whole
 * event in buf, its blank line included; 0 while it is not all there.
 */
size_t bottle_mcp_sse_event(const char *buf, size_t len);

/*
 * One whole event through bottle_mcp_filter: its data lines are the
 * message (an event named other than "message" passes as it is).
 * 0: it passes as it is; 1: *out (malloc()ed, NUL-terminated) replaces
 * it; 2: its data is not JSON and it must not pass; -1: out of memory.
 */
int bottle_mcp_sse_filter(char **out, size_t *outlen, const bottle_mcp_t *m,
    const bottle_mcp_body_t *b, const char *ev, size_t len);


#endif /* BOTTLE_MCP_H */
