/*
 * The warnings of a policy change (bottle_warn.h): each route of the new
 * object against the route of the same host in the old one, each write
 * grant in the new repos against the old grants of the same repo.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "bottle_forge.h"
#include "bottle_warn.h"
#include "bottle_mcp.h"


#define BOTTLE_WARN_READ    0x3u        /* GET, HEAD */
#define BOTTLE_WARN_LINE    512


static const char  *const bottle_warn_methods[] = {
    "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE",
    "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK",
    "REPORT"
};

#define BOTTLE_WARN_NMETHODS                                                 \
    (sizeof(bottle_warn_methods) / sizeof(bottle_warn_methods[0]))
#define BOTTLE_WARN_ALL     ((1u << BOTTLE_WARN_NMETHODS) - 1)


static const json_t *bottle_warn_route(const json_t *bottle,
    const char *host);
static int bottle_warn_same_host(const char *a, const char *b);
static unsigned bottle_warn_list(const json_t *list, int *listed);
static unsigned bottle_warn_route_methods(const json_t *route);
static void bottle_warn_names(char *buf, size_t size, unsigned set);
static void bottle_warn_auth(char *buf, size_t size, const json_t *auth);
static void bottle_warn_add(json_t *out, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void bottle_warn_routes(json_t *out, const json_t *before,
    const json_t *after);
static void bottle_warn_one(json_t *out, const char *host,
    const json_t *old, const json_t *new);
static void bottle_warn_repos(json_t *out, const json_t *before,
    const json_t *after);


json_t *
bottle_warn_change(const json_t *before, const json_t *after)
{
    json_t  *out;

    out = json_array();
    if (out == NULL) {
        return NULL;
    }

    bottle_warn_routes(out, before, after);
    bottle_warn_repos(out, before, after);

    return out;
}


static void
bottle_warn_routes(json_t *out, const json_t *before, const json_t *after)
{
    size_t         i;
    const char    *host;
    const json_t  *r;

    json_array_foreach(json_object_get(after, "routes"), i, r) {
        host = json_string_value(json_object_get(r, "host"));
        if (host == NULL) {
            continue;
        }

        bottle_warn_one(out, host, bottle_warn_route(before, host), r);
    }
}


/* one route after the change against the old route of its host (or none) */

static void
bottle_warn_one(json_t *out, const char *host, const json_t *old,
    const json_t *new)
{
    char           was[BOTTLE_WARN_LINE], now[BOTTLE_WARN_LINE];
    unsigned       om, nm, added;
    const json_t  *oa, *na;

    if (old && json_equal((json_t *) old, (json_t *) new)) {
        return;
    }

    if (json_is_true(json_object_get(new, "passthrough"))) {
        if (old == NULL || !json_is_true(json_object_get(old, "passthrough")))
        {
            bottle_warn_add(out, "%s: turns on passthrough: TLS is tunnelled "
                            "untouched, with no interception, DLP, "
                            "credential stripping or injection", host);
        }
        return;
    }

    oa = old ? json_object_get(old, "auth") : NULL;
    na = json_object_get(new, "auth");

    if (oa && na == NULL) {
        bottle_warn_auth(was, sizeof(was), oa);
        bottle_warn_add(out, "%s: removes the credential the gateway "
                        "injects (auth %s): requests go out without it",
                        host, was);

    } else if (oa && na && !json_equal((json_t *) oa, (json_t *) na)) {
        bottle_warn_auth(was, sizeof(was), oa);
        bottle_warn_auth(now, sizeof(now), na);
        bottle_warn_add(out, "%s: changes the credential the gateway injects "
                        "(auth %s, was %s)", host, now, was);
    }

    om = old ? bottle_warn_route_methods(old) : 0;
    nm = bottle_warn_route_methods(new);
    added = nm & ~om;

    if (old == NULL) {
        added &= ~BOTTLE_WARN_READ;
    }

    if (added) {
        bottle_warn_names(now, sizeof(now), added);

        if (old) {
            bottle_warn_names(was, sizeof(was), om);
            bottle_warn_add(out, "%s: widens methods: adds %s (was %s)",
                            host, now, was);

        } else {
            bottle_warn_add(out, "%s: a new route with methods beyond GET "
                            "and HEAD: %s", host, now);
        }
    }

    if (old && json_object_get(old, "allow")
        && json_object_get(new, "allow") == NULL)
    {
        bottle_warn_add(out, "%s: drops its path restrictions (allow): any "
                        "path", host);
    }

    if (json_is_true(json_object_get(new, "preserve_auth"))
        && (old == NULL || !json_is_true(json_object_get(old,
                                                         "preserve_auth"))))
    {
        bottle_warn_add(out, "%s: turns on preserve_auth: the agent's own "
                        "credentials and cookies go out", host);
    }

    if (json_is_false(json_object_get(new, "dlp"))
        && (old == NULL || !json_is_false(json_object_get(old, "dlp"))))
    {
        bottle_warn_add(out, "%s: turns DLP off (dlp: false)", host);
    }

    if (bottle_mcp_widened(now, sizeof(now), old, new)) {
        bottle_warn_add(out, "%s: %s", host, now);
    }
}


/* a repo granted with write that had no write grant */

static void
bottle_warn_repos(json_t *out, const json_t *before, const json_t *after)
{
    int            had;
    char           e[256];
    size_t         i, j;
    const char    *s;
    const json_t  *v, *w;
    bottle_repo_t  a, b;

    json_array_foreach(json_object_get(after, "repos"), i, v) {
        s = json_string_value(v);

        if (s == NULL
            || bottle_repo_parse(&a, s, strlen(s), 1, e, sizeof(e)) != 0
            || !a.write)
        {
            continue;
        }

        had = 0;

        json_array_foreach(json_object_get(before, "repos"), j, w) {
            s = json_string_value(w);

            if (s && bottle_repo_parse(&b, s, strlen(s), 1, e, sizeof(e)) == 0
                && bottle_repo_same(&a, &b) && b.write)
            {
                had = 1;
                break;
            }
        }

        if (!had) {
            bottle_warn_add(out, "%s/%s/%s: grants write: the bottle may "
                            "push to it", a.forge, a.owner, a.repo);
        }
    }
}


static const json_t *
bottle_warn_route(const json_t *bottle, const char *host)
{
    size_t         i;
    const char    *h;
    const json_t  *r;

    json_array_foreach(json_object_get(bottle, "routes"), i, r) {
        h = json_string_value(json_object_get(r, "host"));

        if (h && bottle_warn_same_host(h, host)) {
            return r;
        }
    }

    return NULL;
}


/* case-insensitive, one trailing dot ignored, as the parser stores it */

static int
bottle_warn_same_host(const char *a, const char *b)
{
    size_t  la, lb;

    la = strlen(a);
    lb = strlen(b);

    la -= la > 1 && a[la - 1] == '.';
    lb -= lb > 1 && b[lb - 1] == '.';

    return la == lb && strncasecmp(a, b, la) == 0;
}


/* the methods a "methods" array names; *listed set if it is one */

static unsigned
bottle_warn_list(const json_t *list, int *listed)
{
    size_t         i, k;
    unsigned       set;
    const char    *m;
    const json_t  *v;

    if (!json_is_array(list)) {
        return 0;
    }

    *listed = 1;
    set = 0;

    json_array_foreach(list, i, v) {
        m = json_string_value(v);
        if (m == NULL) {
            continue;
        }

        if (strcmp(m, "*") == 0) {
            return BOTTLE_WARN_ALL;
        }

        for (k = 0; k < BOTTLE_WARN_NMETHODS; k++) {
            if (strcasecmp(m, bottle_warn_methods[k]) == 0) {
                set |= 1u << k;
            }
        }
    }

    return set;
}


/*
 * The methods a route may send: its own and its allow entries' together;
 * none listed anywhere is GET and HEAD (policy.md, "Methods")
 */

static unsigned
bottle_warn_route_methods(const json_t *route)
{
    int            listed;
    size_t         i;
    unsigned       set;
    const json_t  *e;

    listed = 0;
    set = bottle_warn_list(json_object_get(route, "methods"), &listed);

    json_array_foreach(json_object_get(route, "allow"), i, e) {
        set |= bottle_warn_list(json_object_get(e, "methods"), &listed);
    }

    return listed ? set : BOTTLE_WARN_READ;
}


static void
bottle_warn_names(char *buf, size_t size, unsigned set)
{
    size_t  k, n;

    buf[0] = '\0';

    if (set == BOTTLE_WARN_ALL) {
        snprintf(buf, size, "any method (*)");
        return;
    }

    if (set == 0) {
        snprintf(buf, size, "none");
        return;
    }

    n = 0;

    for (k = 0; k < BOTTLE_WARN_NMETHODS && n < size; k++) {
        if (set & (1u << k)) {
            n += snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
                          bottle_warn_methods[k]);
        }
    }
}


/* "bearer secret:GH", "header x-api-key secret:KEY": never a value */

static void
bottle_warn_auth(char *buf, size_t size, const json_t *auth)
{
    const char  *type, *name, *value;

    type = json_string_value(json_object_get(auth, "type"));
    name = json_string_value(json_object_get(auth, "name"));
    value = json_string_value(json_object_get(auth, "value"));

    if (value && strncmp(value, "secret:", 7) != 0) {
        value = NULL;               /* the parser refuses it; never shown */
    }

    snprintf(buf, size, "%s%s%s%s%s", type ? type : "?", name ? " " : "",
             name ? name : "", value ? " " : "", value ? value : "");
}


static void
bottle_warn_add(json_t *out, const char *fmt, ...)
{
    char     line[BOTTLE_WARN_LINE];
    size_t   n;
    va_list  ap;

    n = json_array_size(out);

    if (n > BOTTLE_WARN_MAX) {
        return;
    }

    if (n == BOTTLE_WARN_MAX) {
        json_array_append_new(out, json_string("more warnings left out"));
        return;
    }

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);

    json_array_append_new(out, json_string(line));
}


char *
bottle_warn_render(const char *what, int changed, const json_t *warnings,
    const char *diff, size_t diff_len)
{
    char          *s, *p;
    size_t         n, i;
    const json_t  *w;

    if (!changed) {
        n = strlen(what) + sizeof(" changes nothing\n");
        s = malloc(n);
        if (s) {
            snprintf(s, n, "%s changes nothing\n", what);
        }
        return s;
    }

    n = strlen(what) + sizeof(" changes the bottle's policy:\n") + diff_len;

    json_array_foreach(warnings, i, w) {
        n += sizeof("warning: \n") + json_string_length(w);
    }

    s = malloc(n);
    if (s == NULL) {
        return NULL;
    }

    p = s + sprintf(s, "%s changes the bottle's policy:\n", what);

    json_array_foreach(warnings, i, w) {
        p += sprintf(p, "warning: %s\n", json_string_value(w));
    }

    memcpy(p, diff ? diff : "", diff ? diff_len : 0);
    p[diff ? diff_len : 0] = '\0';

    return s;
}
