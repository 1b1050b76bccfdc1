/*
 * The egress tools (docs/supervise.md): egress-allow and egress-block,
 * each a proposal queued (sv_queue()) after its route is checked as an
 * approval would check it, and list-egress-routes, answered from the
 * bottle's policy.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdlib.h>
#include <string.h>

#include "bottle_introspect.h"
#include "bottle_mcp.h"
#include "supervise.h"
#include "sv_tools_int.h"


/*
 * egress-allow: a route, or a host and methods.  The route is checked as
 * an approval would check it: added to a copy of the bottle's stored
 * policy and parsed by the gateway's parser, so that a route the operator
 * could never approve is refused now, with the parser's reason.
 */

json_t *
sv_egress_allow(sv_tool_t *t)
{
    int                 changed, bad;
    char               *text;
    json_t             *route, *methods, *nb, *mcp;
    const char         *host;
    bottle_policy_t    *p;

    bad = 0;
    route = json_object_get(t->in, "route");
    host = sv_string(t->in, "host", &bad);
    methods = json_object_get(t->in, "methods");
    mcp = json_object_get(t->in, "mcp");

    if (mcp && !json_is_null(mcp)) {
        /* a tool, resource or prompt of the host's MCP server */

        if ((route && !json_is_null(route))
            || (methods && !json_is_null(methods)) || host == NULL || bad)
        {
            return sv_refuse(t, "mcp: give it with a host, and no route or "
                             "methods");
        }

        route = bottle_mcp_grant(t->b.json, host, mcp, t->err,
                                 sizeof(t->err));
        if (route == NULL) {
            return sv_refuse(t, "%s", t->err);
        }

    } else if (route && !json_is_null(route)) {
        if (host || (methods && !json_is_null(methods))) {
            return sv_refuse(t, "give a route, or a host and methods, not "
                             "both");
        }

        if (!json_is_object(route)) {
            return sv_refuse(t, "route: an object is required (a route as "
                             "in the gateway's policy)");
        }

        route = json_deep_copy(route);

    } else {
        if (host == NULL || bad) {
            return sv_refuse(t, "host: a string is required (or a route)");
        }

        route = json_pack("{s:s}", "host", host);

        if (route && methods && !json_is_null(methods)) {
            json_object_set(route, "methods", methods);
        }
    }

    if (route == NULL) {
        return NULL;
    }

    if (bottle_proposal_args_check(BOTTLE_PROPOSAL_EGRESS_ALLOW, route,
                                   t->err, sizeof(t->err))
        != 0)
    {
        json_decref(route);
        return sv_refuse(t, "%s", t->err);
    }

    nb = bottle_proposal_apply(t->b.json, BOTTLE_PROPOSAL_EGRESS_ALLOW,
                               route, &changed, t->err, sizeof(t->err));
    if (nb == NULL) {
        json_decref(route);
        return sv_refuse(t, "route: %s", t->err);
    }

    text = json_dumps(nb, JSON_COMPACT);
    json_decref(nb);

    if (text == NULL) {
        json_decref(route);
        return NULL;
    }

    p = NULL;

    if (bottle_policy_parse(&p, text, strlen(text), "egress-allow", t->err,
                            sizeof(t->err)) != 0
        || bottle_policy_unsupported(p, t->err, sizeof(t->err)) != 0)
    {
        free(text);
        if (p) {
            bottle_policy_free(p);
        }
        json_decref(route);
        return sv_refuse(t, "the route is not one the gateway could serve: "
                         "%s", t->err);
    }

    free(text);
    bottle_policy_free(p);

    if (!changed) {
        json_decref(route);
        return sv_refuse(t, "this bottle has exactly this route already "
                         "(list-egress-routes)");
    }

    return sv_queue(t, BOTTLE_PROPOSAL_EGRESS_ALLOW, route, -1, NULL);
}


json_t *
sv_egress_block(sv_tool_t *t)
{
    int          bad;
    json_t      *args;
    const char  *host;

    bad = 0;
    host = sv_string(t->in, "host", &bad);

    if (host == NULL || host[0] == '\0' || bad) {
        return sv_refuse(t, "host: a non-empty string is required");
    }

    args = json_pack("{s:s}", "host", host);
    if (args == NULL) {
        return sv_refuse(t, "host: not UTF-8");
    }

    return sv_queue(t, BOTTLE_PROPOSAL_EGRESS_BLOCK, args, -1, NULL);
}


/* answered here, from the bottle's policy: no operator, no token */

json_t *
sv_list_routes(sv_tool_t *t)
{
    char    *text;
    size_t   len;
    json_t  *o;

    text = bottle_allowlist_json(t->b.bottle, &len);
    if (text == NULL) {
        return NULL;
    }

    o = json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text",
                  "text", json_stringn(text, len), "isError", 0);
    free(text);

    return o;
}
