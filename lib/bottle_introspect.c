
/*
 * _egress.local/allowlist: the routes of the calling bottle as JSON.
 * Every jansson reference made here is new and handed to its container with
 * a *_new() setter, so freeing the root frees everything.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottle_introspect.h"


static const struct {
    unsigned     bit;
    const char  *name;
} bottle_methods[] = {
    { BOTTLE_M_GET, "GET" }, { BOTTLE_M_HEAD, "HEAD" },
    { BOTTLE_M_POST, "POST" }, { BOTTLE_M_PUT, "PUT" },
    { BOTTLE_M_PATCH, "PATCH" }, { BOTTLE_M_DELETE, "DELETE" },
    { BOTTLE_M_OPTIONS, "OPTIONS" }, { BOTTLE_M_TRACE, "TRACE" },
    { BOTTLE_M_PROPFIND, "PROPFIND" }, { BOTTLE_M_PROPPATCH, "PROPPATCH" },
    { BOTTLE_M_MKCOL, "MKCOL" }, { BOTTLE_M_COPY, "COPY" },
    { BOTTLE_M_MOVE, "MOVE" }, { BOTTLE_M_LOCK, "LOCK" },
    { BOTTLE_M_UNLOCK, "UNLOCK" }, { BOTTLE_M_REPORT, "REPORT" }
};


static json_t *
bottle_methods_json(unsigned mask)
{
    size_t   i;
    json_t  *a;

    a = json_array();
    if (a == NULL) {
        return NULL;
    }

    if (mask & BOTTLE_M_ANY) {
        json_array_append_new(a, json_string("*"));
        return a;
    }

    for (i = 0; i < sizeof(bottle_methods) / sizeof(bottle_methods[0]); i++) {
        if (mask & bottle_methods[i].bit) {
            json_array_append_new(a, json_string(bottle_methods[i].name));
        }
    }

    return a;
}


static json_t *
bottle_allow_json(const bottle_allow_t *allow)
{
    size_t   i;
    json_t  *o, *h;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }

    if (allow->path.len) {
        json_object_set_new(o, "path", json_string(allow->path.data));
    }

    if (allow->methods) {
        json_object_set_new(o, "methods", bottle_methods_json(allow->methods));
    }

    if (allow->nheaders) {
        h = json_object();
        for (i = 0; i < allow->nheaders; i++) {
            json_object_set_new(h, allow->headers[i].name.data,
                                json_string(allow->headers[i].value.data));
        }
        json_object_set_new(o, "headers", h);
    }

    return o;
}


static json_t *
bottle_route_json(const bottle_route_t *r)
{
    size_t       i;
    json_t      *o, *a;
    const char  *auth;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }

    json_object_set_new(o, "host", json_string(r->host.data));

    a = json_array();
    for (i = 0; i < r->nports; i++) {
        json_array_append_new(a, json_integer(r->ports[i]));
    }

    if (r->nports == 0) {
        json_array_append_new(a, json_integer(443));
        json_array_append_new(a, json_integer(80));
    }

    json_object_set_new(o, "ports", a);
    json_object_set_new(o, "passthrough", json_boolean(r->passthrough));

    if (r->passthrough) {
        return o;
    }

    json_object_set_new(o, "methods",
                        bottle_methods_json(r->methods ? r->methods
                                                       : BOTTLE_M_READ_ONLY));

    if (r->nallow) {
        a = json_array();
        for (i = 0; i < r->nallow; i++) {
            json_array_append_new(a, bottle_allow_json(&r->allow[i]));
        }
        json_object_set_new(o, "allow", a);
    }

    switch (r->auth_type) {
    case BOTTLE_AUTH_BEARER:
        auth = "bearer";
        break;
    case BOTTLE_AUTH_TOKEN:
        auth = "token";
        break;
    case BOTTLE_AUTH_HEADER:
        auth = "header";
        break;
    default:
        auth = NULL;
    }

    if (auth) {
        /* the kind of credential the gateway adds, never its value */
        json_object_set_new(o, "auth",
                            json_pack("{s:s, s:s}", "type", auth,
                                      "header", r->auth_header.data));
    }

    json_object_set_new(o, "preserve_auth", json_boolean(r->preserve_auth));
    json_object_set_new(o, "git_fetch", json_boolean(r->git_fetch));
    json_object_set_new(o, "dlp", json_boolean(!r->dlp_off));

    return o;
}


char *
bottle_allowlist_json(const bottle_t *b, size_t *out_len)
{
    size_t   i;
    char    *s;
    json_t  *root, *routes;

    root = json_object();
    routes = json_array();

    if (root == NULL || routes == NULL) {
        json_decref(root);
        json_decref(routes);
        return NULL;
    }

    json_object_set_new(root, "bottle", json_string(b->id.data));
    json_object_set_new(root, "slug", json_string(b->slug.data));

    for (i = 0; i < b->nroutes; i++) {
        json_array_append_new(routes, bottle_route_json(&b->routes[i]));
    }

    json_object_set_new(root, "routes", routes);

    s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);

    if (s && out_len) {
        *out_len = strlen(s);
    }

    return s;
}
