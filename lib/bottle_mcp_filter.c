/*
 * MCP gating, the response side (bottle_mcp.h, docs/mcp.md): the lists a
 * server answers with, without what the route does not allow.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottle_mcp.h"


#define BOTTLE_MCP_ALL_KINDS  ((1u << BOTTLE_MCP_NKINDS) - 1)


/* the result's arrays of each kind, and the key naming an entry */
static const struct {
    int          kind;
    const char  *array;
    const char  *key;
} bottle_mcp_lists[] = {
    { BOTTLE_MCP_TOOL, "tools", "name" },
    { BOTTLE_MCP_RESOURCE, "resources", "uri" },
    { BOTTLE_MCP_RESOURCE, "resourceTemplates", "uriTemplate" },
    { BOTTLE_MCP_PROMPT, "prompts", "name" }
};


/* 1 if an entry was removed; an entry without its string key goes too */

static int
bottle_mcp_filter_array(json_t *arr, const bottle_mcp_t *m, int kind,
    const char *key)
{
    int      changed;
    size_t   i;
    json_t  *e, *name;

    changed = 0;
    i = 0;

    while (i < json_array_size(arr)) {
        e = json_array_get(arr, i);
        name = json_is_object(e) ? json_object_get(e, key) : NULL;

        if (json_is_string(name)
            && bottle_mcp_allowed(m, kind, json_string_value(name),
                                  json_string_length(name)))
        {
            i++;
            continue;
        }

        json_array_remove(arr, i);
        changed = 1;
    }

    return changed;
}


/* the kinds a response is filtered for: its request's, or every kind */

static unsigned
bottle_mcp_kinds_of(const bottle_mcp_body_t *b, json_t *id)
{
    char      *s;
    size_t     i;
    unsigned   kinds;
    int        found;

    if (b == NULL || id == NULL) {
        return BOTTLE_MCP_ALL_KINDS;
    }

    s = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL) {
        return BOTTLE_MCP_ALL_KINDS;
    }

    kinds = 0;
    found = 0;

    for (i = 0; i < b->n; i++) {
        if (b->msgs[i].id && strcmp(b->msgs[i].id, s) == 0) {
            found = 1;

            if (b->msgs[i].list >= 0) {
                kinds |= 1u << b->msgs[i].list;
            }
        }
    }

    free(s);

    /* an answer to no request of ours is filtered for everything */

    return found ? kinds : BOTTLE_MCP_ALL_KINDS;
}


static int
bottle_mcp_filter_one(json_t *msg, const bottle_mcp_t *m,
    const bottle_mcp_body_t *b)
{
    int        changed;
    size_t     i;
    json_t    *result, *arr;
    unsigned   kinds;

    if (!json_is_object(msg)) {
        return 0;
    }

    result = json_object_get(msg, "result");
    if (!json_is_object(result)) {
        return 0;
    }

    kinds = bottle_mcp_kinds_of(b, json_object_get(msg, "id"));
    changed = 0;

    for (i = 0; i < sizeof(bottle_mcp_lists) / sizeof(bottle_mcp_lists[0]);
         i++)
    {
        if (!(kinds & (1u << bottle_mcp_lists[i].kind))) {
            continue;
        }

        arr = json_object_get(result, bottle_mcp_lists[i].array);
        if (arr == NULL) {
            continue;
        }

        if (!json_is_array(arr)) {
            /* not a list a client could read: gone */
            json_object_del(result, bottle_mcp_lists[i].array);
            changed = 1;
            continue;
        }

        changed |= bottle_mcp_filter_array(arr, m, bottle_mcp_lists[i].kind,
                                           bottle_mcp_lists[i].key);
    }

    return changed;
}


int
bottle_mcp_filter(char **out, size_t *outlen, const bottle_mcp_t *m,
    const bottle_mcp_body_t *b, const char *msg, size_t len)
{
    int           changed;
    size_t        i;
    json_t       *root;
    json_error_t  je;

    *out = NULL;
    *outlen = 0;

    root = json_loadb(msg, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL) {
        return -1;
    }

    changed = 0;

    if (json_is_array(root)) {
        for (i = 0; i < json_array_size(root); i++) {
            changed |= bottle_mcp_filter_one(json_array_get(root, i), m, b);
        }

    } else {
        changed = bottle_mcp_filter_one(root, m, b);
    }

    if (!changed) {
        json_decref(root);
        return 0;
    }

    *out = json_dumps(root, JSON_COMPACT);
    json_decref(root);

    if (*out == NULL) {
        return -1;
    }

    *outlen = strlen(*out);

    return 1;
}
