/*
 * Unit tests of lib/bottle_warn.c: the warnings of a policy change and the
 * text bottlectl show and the operator page print.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tap.h"
#include "bottle_warn.h"


/* the warnings of before -> after, joined with '|' */

static char *
warn(const char *before, const char *after)
{
    static char    buf[8192];
    size_t         i, n;
    json_t        *a, *b, *w, *v;

    a = json_loads(before, 0, NULL);
    b = json_loads(after, 0, NULL);
    w = bottle_warn_change(a, b);
    n = 0;
    buf[0] = '\0';

    json_array_foreach(w, i, v) {
        n += snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? "|" : "",
                      json_string_value(v));
    }

    json_decref(a);
    json_decref(b);
    json_decref(w);

    return buf;
}


#define GH_AUTH                                                              \
    "{\"id\":\"a\",\"routes\":[{\"host\":\"api.github.com\",\"methods\":"     \
    "[\"GET\",\"POST\"],\"auth\":{\"type\":\"bearer\",\"value\":"             \
    "\"secret:GH\"}}]}"


static void
test_routes(void)
{
    is_str(warn(GH_AUTH, "{\"id\":\"a\",\"routes\":[{\"host\":"
                "\"API.github.com.\",\"methods\":[\"GET\",\"POST\","
                "\"DELETE\"]}]}"),
           "API.github.com.: removes the credential the gateway injects "
           "(auth bearer secret:GH): requests go out without it|"
           "API.github.com.: widens methods: adds DELETE (was GET, POST)",
           "the issue's case: auth dropped, DELETE added (any spelling of "
           "the host)");

    is_str(warn(GH_AUTH, GH_AUTH), "", "the same policy: no warning");

    is_str(warn(GH_AUTH, "{\"id\":\"a\",\"routes\":[]}"), "",
           "a route removed: no warning");

    is_str(warn(GH_AUTH, "{\"id\":\"a\",\"routes\":[{\"host\":"
                "\"api.github.com\",\"methods\":[\"GET\"],\"auth\":{\"type\":"
                "\"token\",\"value\":\"secret:OTHER\"}}]}"),
           "api.github.com: changes the credential the gateway injects "
           "(auth token secret:OTHER, was bearer secret:GH)",
           "auth changed, methods narrowed: one warning");

    is_str(warn("{\"id\":\"a\"}", "{\"id\":\"a\",\"routes\":[{\"host\":"
                "\"npm.example\",\"passthrough\":true}]}"),
           "npm.example: turns on passthrough: TLS is tunnelled untouched, "
           "with no interception, DLP, credential stripping or injection",
           "a new passthrough route");

    is_str(warn("{\"id\":\"a\"}", "{\"id\":\"a\",\"routes\":[{\"host\":"
                "\"r.example\"},{\"host\":\"w.example\",\"methods\":[\"GET\","
                "\"post\"]}]}"),
           "w.example: a new route with methods beyond GET and HEAD: POST",
           "new routes: read-only is quiet, POST is named");

    is_str(warn("{\"id\":\"a\",\"routes\":[{\"host\":\"x.example\","
                "\"allow\":[{\"path\":\"/a/*\"}]}]}",
                "{\"id\":\"a\",\"routes\":[{\"host\":\"x.example\","
                "\"allow\":[{\"path\":\"/a/*\",\"methods\":[\"PUT\"]}]}]}"),
           "x.example: widens methods: adds PUT (was GET, HEAD)",
           "methods of an allow entry count");

    is_str(warn("{\"id\":\"a\",\"routes\":[{\"host\":\"x.example\","
                "\"allow\":[{\"path\":\"/a/*\"}]}]}",
                "{\"id\":\"a\",\"routes\":[{\"host\":\"x.example\","
                "\"preserve_auth\":true,\"dlp\":false}]}"),
           "x.example: drops its path restrictions (allow): any path|"
           "x.example: turns on preserve_auth: the agent's own credentials "
           "and cookies go out|x.example: turns DLP off (dlp: false)",
           "allow dropped, preserve_auth on, DLP off");

    is_str(warn("{\"id\":\"a\",\"routes\":[{\"host\":\"x.example\","
                "\"methods\":[\"GET\"]}]}",
                "{\"id\":\"a\",\"routes\":[{\"host\":\"x.example\","
                "\"methods\":[\"*\"]}]}"),
           "x.example: widens methods: adds HEAD, POST, PUT, PATCH, DELETE, "
           "OPTIONS, TRACE, PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, LOCK, "
           "UNLOCK, REPORT (was GET)", "methods * named");

    is_str(warn("{\"id\":\"a\",\"routes\":[{\"host\":\"x.example\","
                "\"auth\":{\"type\":\"bearer\",\"value\":\"s3cr3t-literal\"}}"
                "]}", "{\"id\":\"a\",\"routes\":[{\"host\":\"x.example\"}]}"),
           "x.example: removes the credential the gateway injects (auth "
           "bearer): requests go out without it",
           "a literal auth value is never shown");
}


static void
test_repos(void)
{
    is_str(warn("{\"id\":\"a\",\"repos\":[\"g.example/o/r\"]}",
                "{\"id\":\"a\",\"repos\":[\"g.example/o/r:write\","
                "\"g.example/o/s\"]}"),
           "g.example/o/r: grants write: the bottle may push to it",
           "a repo granted write");

    is_str(warn("{\"id\":\"a\",\"repos\":[\"G.example/o/R.git:write\"]}",
                "{\"id\":\"a\",\"repos\":[\"g.example/o/r:write\"]}"),
           "", "write it had already: no warning");
}


static void
test_cap(void)
{
    int      i;
    size_t   n;
    json_t  *a, *b, *routes, *w;

    a = json_pack("{s:s}", "id", "a");
    routes = json_array();

    for (i = 0; i < 40; i++) {
        char  host[32];

        snprintf(host, sizeof(host), "h%d.example", i);
        json_array_append_new(routes, json_pack("{s:s, s:b}", "host", host,
                                                "passthrough", 1));
    }

    b = json_pack("{s:s, s:o}", "id", "a", "routes", routes);
    w = bottle_warn_change(a, b);
    n = json_array_size(w);

    ok(n == BOTTLE_WARN_MAX + 1, "40 warnings: %d kept and one more line "
       "(%zu)", BOTTLE_WARN_MAX, n);
    is_str(json_string_value(json_array_get(w, n - 1)),
           "more warnings left out", "the last line says so");

    json_decref(a);
    json_decref(b);
    json_decref(w);
}


static void
test_render(void)
{
    char    *s;
    json_t  *w;

    s = bottle_warn_render("approving it", 0, NULL, NULL, 0);
    is_str(s, "approving it changes nothing\n", "render: nothing");
    free(s);

    w = json_pack("[s, s]", "one", "two");
    s = bottle_warn_render("approving it", 1, w, "--- a\n+++ b\n", 12);
    is_str(s, "approving it changes the bottle's policy:\nwarning: one\n"
              "warning: two\n--- a\n+++ b\n", "render: header, warnings, diff");
    free(s);
    json_decref(w);
}


int
main(void)
{
    test_routes();
    test_repos();
    test_cap();
    test_render();

    return done_testing();
}
