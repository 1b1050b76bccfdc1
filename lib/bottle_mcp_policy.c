/*
 * Parsing a route's "mcp" field (docs/mcp.md): for each of "tools",
 * "resources", "prompts", an "allow" and a "deny" list of exact names and
 * '*' globs.  What the gateway cannot honour is refused here.
 */

#include <string.h>

#include "bottle_policy_int.h"
#include "bottle_mcp.h"


static const char *const  bottle_mcp_fields[] = {
    "tools", "resources", "prompts", NULL
};

static const char *const  bottle_mcp_list_fields[] = {
    "allow", "deny", NULL
};


static int
bottle_mcp_parse_globs(bottle_ctx_t *ctx, json_t *obj, const char *key,
    bottle_str_t **out, size_t *nout)
{
    char         q[BOTTLE_QUOTE_LEN];
    size_t       i, n, saved, item;
    json_t      *v, *g;
    const char  *why;

    if (bottle_get(&v, ctx, obj, key, BOTTLE_J_ARRAY, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, key);
    n = json_array_size(v);

    if (n == 0) {
        return bottle_fail(ctx, "must not be empty (omit it)");
    }

    *out = bottle_alloc_array(ctx->policy, n, sizeof(bottle_str_t));
    if (*out == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    for (i = 0; i < n; i++) {
        item = bottle_path_index(ctx, i);
        g = json_array_get(v, i);          /* borrowed */

        if (!json_is_string(g)) {
            return bottle_fail(ctx, "must be a string");
        }

        bottle_quote(q, sizeof(q), json_string_value(g),
                     json_string_length(g));

        if (bottle_mcp_glob_ok(json_string_value(g), json_string_length(g),
                               &why)
            != 0)
        {
            return bottle_fail(ctx, "%s is not a name or glob: %s", q, why);
        }

        if (bottle_str_set(&(*out)[i], ctx, json_string_value(g),
                           json_string_length(g), 0) != 0)
        {
            return -1;
        }

        bottle_path_pop(ctx, item);
    }

    *nout = n;
    bottle_path_pop(ctx, saved);

    return 0;
}


static int
bottle_mcp_parse_kind(bottle_ctx_t *ctx, json_t *obj, int kind,
    bottle_mcp_list_t *l)
{
    size_t       saved;
    json_t      *v;
    const char  *key;

    key = bottle_mcp_kind_field(kind);

    if (bottle_get(&v, ctx, obj, key, BOTTLE_J_OBJECT, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, key);

    if (bottle_check_fields(ctx, v, bottle_mcp_list_fields) != 0
        || bottle_mcp_parse_globs(ctx, v, "allow", &l->allow, &l->nallow) != 0
        || bottle_mcp_parse_globs(ctx, v, "deny", &l->deny, &l->ndeny) != 0)
    {
        return -1;
    }

    if (l->nallow == 0) {
        return bottle_fail(ctx, "needs \"allow\": without it nothing of "
                           "this kind is allowed (omit the kind instead)");
    }

    bottle_path_pop(ctx, saved);

    return 0;
}


int
bottle_parse_mcp(bottle_ctx_t *ctx, json_t *obj, bottle_route_t *r)
{
    int            kind;
    size_t         i, saved;
    json_t        *v;
    unsigned       methods;
    bottle_mcp_t  *m;

    if (bottle_get(&v, ctx, obj, "mcp", BOTTLE_J_OBJECT, 0) != 0) {
        return -1;
    }

    if (v == NULL) {
        return 0;
    }

    saved = bottle_path_key(ctx, "mcp");

    if (bottle_check_fields(ctx, v, bottle_mcp_fields) != 0) {
        return -1;
    }

    /* MCP's Streamable HTTP transport sends every message with POST */

    methods = r->methods ? r->methods : BOTTLE_M_READ_ONLY;

    for (i = 0; i < r->nallow; i++) {
        methods |= r->allow[i].methods;
    }

    if (!(methods & (BOTTLE_M_POST | BOTTLE_M_ANY))) {
        return bottle_fail(ctx, "the route's methods must allow POST: MCP "
                           "messages are POSTed");
    }

    m = bottle_alloc_array(ctx->policy, 1, sizeof(bottle_mcp_t));
    if (m == NULL) {
        return bottle_fail(ctx, "out of memory");
    }

    memset(m, 0, sizeof(bottle_mcp_t));

    for (kind = 0; kind < BOTTLE_MCP_NKINDS; kind++) {
        if (bottle_mcp_parse_kind(ctx, v, kind, &m->kinds[kind]) != 0) {
            return -1;
        }
    }

    r->mcp = m;
    bottle_path_pop(ctx, saved);

    return 0;
}
