/*
 * MCP gating in proposals (bottle_mcp.h, docs/mcp.md): the route an
 * egress-allow with an "mcp" part asks for (the host's route with the
 * names added to its mcp allow lists), and the line the operator reads
 * about what a route change newly allows (bottle_warn.c).
 */

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "bottle_mcp.h"


#define BOTTLE_MCP_ASK_MAX  64      /* names of one kind in one ask */


static int
bottle_mcp_has(const json_t *arr, const char *s)
{
    size_t  i;

    for (i = 0; i < json_array_size(arr); i++) {
        if (json_is_string(json_array_get(arr, i))
            && strcmp(json_string_value(json_array_get(arr, i)), s) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static int
bottle_mcp_denied(const json_t *kobj, const char *s)
{
    size_t       i;
    json_t      *deny, *g;

    deny = json_object_get(kobj, "deny");

    for (i = 0; i < json_array_size(deny); i++) {
        g = json_array_get(deny, i);

        if (json_is_string(g)
            && bottle_glob_match(json_string_value(g), json_string_length(g),
                                 s, strlen(s)))
        {
            return 1;
        }
    }

    return 0;
}


/* the host's route in a stored bottle, or NULL */

static json_t *
bottle_mcp_route_of(const json_t *bottle, const char *host)
{
    size_t       i;
    json_t      *routes, *r, *h;

    routes = json_object_get(bottle, "routes");

    for (i = 0; i < json_array_size(routes); i++) {
        r = json_array_get(routes, i);
        h = json_object_get(r, "host");

        if (json_is_string(h) && strcasecmp(json_string_value(h), host) == 0) {
            return r;
        }
    }

    return NULL;
}


json_t *
bottle_mcp_grant(const json_t *bottle, const char *host, const json_t *ask,
    char *err, size_t errlen)
{
    int          kind, any;
    size_t       i;
    json_t      *route, *old, *mcp, *kobj, *allow, *names, *v;
    const char  *key, *s, *why;
    void        *it;

    if (!json_is_object(ask)) {
        snprintf(err, errlen, "mcp: an object is required, as {\"tools\": "
                 "[names], \"resources\": [URIs], \"prompts\": [names]}");
        return NULL;
    }

    for (it = json_object_iter((json_t *) ask); it;
         it = json_object_iter_next((json_t *) ask, it))
    {
        key = json_object_iter_key(it);

        if (bottle_mcp_kind_by_field(key, strlen(key)) < 0) {
            snprintf(err, errlen, "mcp: \"%.32s\" is not tools, resources "
                     "or prompts", key);
            return NULL;
        }
    }

    old = bottle_mcp_route_of(bottle, host);

    if (old && json_is_true(json_object_get(old, "passthrough"))) {
        snprintf(err, errlen, "mcp: the route to this host is passthrough: "
                 "its MCP calls cannot be read");
        return NULL;
    }

    route = old ? json_deep_copy(old)
                : json_pack("{s:s, s:[sss]}", "host", host, "methods", "GET",
                            "POST", "DELETE");
    if (route == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    mcp = json_object_get(route, "mcp");
    if (!json_is_object(mcp)) {
        mcp = json_object();
        if (mcp == NULL || json_object_set_new(route, "mcp", mcp) != 0) {
            goto nomem;
        }
    }

    any = 0;

    for (kind = 0; kind < BOTTLE_MCP_NKINDS; kind++) {
        key = bottle_mcp_kind_field(kind);
        names = json_object_get(ask, key);

        if (names == NULL) {
            continue;
        }

        if (!json_is_array(names) || json_array_size(names) == 0
            || json_array_size(names) > BOTTLE_MCP_ASK_MAX)
        {
            snprintf(err, errlen, "mcp.%s: an array of 1 to %d names",
                     key, BOTTLE_MCP_ASK_MAX);
            goto failed;
        }

        kobj = json_object_get(mcp, key);
        if (!json_is_object(kobj)) {
            kobj = json_object();
            if (kobj == NULL || json_object_set_new(mcp, key, kobj) != 0) {
                goto nomem;
            }
        }

        allow = json_object_get(kobj, "allow");
        if (!json_is_array(allow)) {
            allow = json_array();
            if (allow == NULL
                || json_object_set_new(kobj, "allow", allow) != 0)
            {
                goto nomem;
            }
        }

        for (i = 0; i < json_array_size(names); i++) {
            v = json_array_get(names, i);

            if (!json_is_string(v)) {
                snprintf(err, errlen, "mcp.%s[%zu]: a string is required",
                         key, i);
                goto failed;
            }

            s = json_string_value(v);

            if (bottle_mcp_glob_ok(s, json_string_length(v), &why) != 0) {
                snprintf(err, errlen, "mcp.%s[%zu]: %s", key, i, why);
                goto failed;
            }

            if (bottle_mcp_denied(kobj, s)) {
                snprintf(err, errlen, "mcp.%s: \"%.64s\" is on the route's "
                         "deny list: the operator refused it already", key,
                         s);
                goto failed;
            }

            if (!bottle_mcp_has(allow, s)) {
                if (json_array_append(allow, v) != 0) {
                    goto nomem;
                }

                any = 1;
            }
        }
    }

    if (!any) {
        snprintf(err, errlen, "mcp: nothing new: the route allows all of "
                 "it already");
        goto failed;
    }

    return route;

nomem:

    snprintf(err, errlen, "out of memory");

failed:

    json_decref(route);
    return NULL;
}


/* the names in a route's mcp allow lists that the old route did not have */

int
bottle_mcp_widened(char *buf, size_t size, const json_t *old,
    const json_t *new)
{
    int          kind, n;
    size_t       i, len;
    json_t      *nm, *om, *na, *oa;
    const char  *key;

    nm = json_object_get(new, "mcp");
    om = old ? json_object_get(old, "mcp") : NULL;

    if (size == 0) {
        return 0;
    }

    buf[0] = '\0';

    if (om && nm == NULL) {
        snprintf(buf, size, "drops its mcp field: every tool, resource and "
                 "prompt of the server is allowed");
        return 1;
    }

    if (nm == NULL) {
        return 0;
    }

    n = 0;

    for (kind = 0; kind < BOTTLE_MCP_NKINDS; kind++) {
        key = bottle_mcp_kind_field(kind);
        na = json_object_get(json_object_get(nm, key), "allow");
        oa = json_object_get(json_object_get(om, key), "allow");

        for (i = 0; i < json_array_size(na); i++) {
            if (!json_is_string(json_array_get(na, i))
                || bottle_mcp_has(oa, json_string_value(json_array_get(na,
                                                                       i))))
            {
                continue;
            }

            len = strlen(buf);
            snprintf(buf + len, size - len, "%s%s%s \"%s\"",
                     n ? ", " : "allows MCP ", "",
                     bottle_mcp_kind_name(kind),
                     json_string_value(json_array_get(na, i)));
            n++;
        }
    }

    return n > 0;
}
