/*
 * Proposals and decisions (bottle_proposal.h): kinds, ids, the JSON of a
 * proposal and of a decision, and an approved egress change applied to a
 * bottle's stored object.  The scripts are bottle_proposal_lua.c.
 */

#define _POSIX_C_SOURCE  200809L

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "bottle_audit.h"
#include "bottle_forge.h"
#include "bottle_proposal.h"
#include "bottle_util.h"


typedef struct {
    const char         *name;
    const char         *required[5];    /* non-empty strings */
    const char         *allowed[7];     /* NULL first: any key */
} bottle_proposal_args_t;


static int bottle_proposal_in(const char *const *list, const char *key);
static int bottle_proposal_removed_check(const json_t *removed, char *err,
    size_t errlen);
static int bottle_proposal_same_host(const char *a, const char *b);
static const char *bottle_proposal_host(const json_t *route);
static void bottle_proposal_cat(char *buf, size_t size, const char *s);
static void bottle_proposal_launch_summary(char *buf, size_t size,
    const json_t *args);
static json_t *bottle_proposal_apply_repo(const json_t *bottle,
    const json_t *grant, int *changed, char *err, size_t errlen);


static const bottle_proposal_args_t  bottle_proposal_kinds[] = {
    { "egress-allow", { "host" }, { NULL } },
    { "egress-block", { "host" }, { "host" } },
    { "forge-connect", { "url" }, { "url" } },
    { "add-repo", { "repo" }, { "repo", "write" } },
    { "launch-bottle", { "agent" },
      { "agent", "prompt", "bottles", "label", "removed" } },
    { "create-repo", { "repo" }, { "repo", "public" } },
    { "egress-token-allow", { "host", "detector", "location", "digest" },
      { "host", "detector", "location", "digest", "rule" } },
    { "gitleaks-allow", { "rule", "digest" },
      { "rule", "digest", "repo", "file", "commit", "line" } }
};


const char *
bottle_proposal_kind_name(bottle_proposal_kind_e kind)
{
    if ((unsigned) kind >= BOTTLE_PROPOSAL_NKINDS) {
        return NULL;
    }

    return bottle_proposal_kinds[kind].name;
}


int
bottle_proposal_kind_parse(const char *s)
{
    int  i;

    for (i = 0; i < BOTTLE_PROPOSAL_NKINDS; i++) {
        if (strcmp(bottle_proposal_kinds[i].name, s) == 0) {
            return i;
        }
    }

    return -1;
}


const char *
bottle_proposal_no_plain_allow(bottle_proposal_kind_e kind)
{
    switch (kind) {

    case BOTTLE_PROPOSAL_FORGE_CONNECT:
        return "a forge connection is approved by connecting the forge with "
               "the operator's token (the console), never plainly";

    case BOTTLE_PROPOSAL_ADD_REPO:
        return "a repo is approved by granting it to the running bottle "
               "(git-gate), never plainly";

    case BOTTLE_PROPOSAL_LAUNCH_BOTTLE:
        return "a child bottle is approved by launching it within its "
               "parent's access (the console), never plainly";

    case BOTTLE_PROPOSAL_CREATE_REPO:
        return "a new repo is approved by creating it on the forge, never "
               "plainly";

    default:
        return NULL;
    }
}


int
bottle_proposal_changes_policy(bottle_proposal_kind_e kind)
{
    return kind == BOTTLE_PROPOSAL_EGRESS_ALLOW
           || kind == BOTTLE_PROPOSAL_EGRESS_BLOCK
           || kind == BOTTLE_PROPOSAL_ADD_REPO;
}


int
bottle_proposal_id(char out[BOTTLE_PROPOSAL_ID_LEN], int64_t ms)
{
    unsigned char  r[4];

    if (ms < 0 || RAND_bytes(r, sizeof(r)) != 1) {
        return -1;
    }

    snprintf(out, BOTTLE_PROPOSAL_ID_LEN, "%" PRId64 "-%02x%02x%02x%02x",
             ms, r[0], r[1], r[2], r[3]);

    return 0;
}


int
bottle_proposal_id_valid(const char *s)
{
    size_t  i;

    for (i = 0; s[i]; i++) {
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')
              || s[i] == '-'))
        {
            return 0;
        }
    }

    return i > 0 && i < BOTTLE_PROPOSAL_ID_LEN;
}


int
bottle_proposal_args_check(bottle_proposal_kind_e kind, const json_t *args,
    char *err, size_t errlen)
{
    size_t                         i;
    json_t                        *v;
    const char                    *key, *s;
    const bottle_proposal_args_t  *k;

    if ((unsigned) kind >= BOTTLE_PROPOSAL_NKINDS) {
        return bottle_errf(err, errlen, "unknown kind");
    }

    k = &bottle_proposal_kinds[kind];

    if (!json_is_object(args)) {
        return bottle_errf(err, errlen, "%s: args: not an object",
                                    k->name);
    }

    for (i = 0; i < 5 && k->required[i]; i++) {
        s = json_string_value(json_object_get(args, k->required[i]));
        if (s == NULL || s[0] == '\0') {
            return bottle_errf(err, errlen,
                                        "%s: args.%s: a non-empty string is "
                                        "required", k->name, k->required[i]);
        }
    }

    if (k->allowed[0] == NULL) {
        return 0;
    }

    /* never a secret's value: only the keys the kind knows */

    json_object_foreach((json_t *) args, key, v) {
        if (!bottle_proposal_in(k->allowed, key)) {
            return bottle_errf(err, errlen,
                                        "%s: args.%s: unknown field", k->name,
                                        key);
        }
    }

    v = json_object_get(args, "removed");

    if (kind == BOTTLE_PROPOSAL_LAUNCH_BOTTLE && v != NULL) {
        return bottle_proposal_removed_check(v, err, errlen);
    }

    return 0;
}


/*
 * launch-bottle's "removed" (supervise's, never the agent's): {"hosts",
 * "repos", "env", "create"}, arrays of strings, and "more", a count
 */

static int
bottle_proposal_removed_check(const json_t *removed, char *err,
    size_t errlen)
{
    size_t       i;
    json_t      *v;
    const char  *key;

    static const char  *const lists[] = { "hosts", "repos", "env", "create",
                                          NULL };

    if (!json_is_object(removed)) {
        return bottle_errf(err, errlen, "launch-bottle: args.removed: not "
                           "an object");
    }

    json_object_foreach((json_t *) removed, key, v) {
        if (strcmp(key, "more") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 0) {
                return bottle_errf(err, errlen, "launch-bottle: "
                                   "args.removed.more: not a count");
            }

            continue;
        }

        if (!bottle_proposal_in(lists, key) || !json_is_array(v)) {
            return bottle_errf(err, errlen, "launch-bottle: args.removed.%s: "
                               "not an array of hosts, repos, env or create",
                               key);
        }

        for (i = 0; i < json_array_size(v); i++) {
            if (!json_is_string(json_array_get(v, i))) {
                return bottle_errf(err, errlen, "launch-bottle: "
                                   "args.removed.%s: an array of strings",
                                   key);
            }
        }
    }

    return 0;
}


static int
bottle_proposal_in(const char *const *list, const char *key)
{
    size_t  i;

    for (i = 0; i < 7 && list[i]; i++) {
        if (strcmp(list[i], key) == 0) {
            return 1;
        }
    }

    return 0;
}


json_t *
bottle_proposal_build(const char *id, const char *bottle,
    bottle_proposal_kind_e kind, const json_t *args,
    const char *justification, int64_t created_ms, const char *producer,
    char *err, size_t errlen)
{
    char     created[BOTTLE_AUDIT_TIME_LEN];
    json_t  *o;

    if (!bottle_proposal_id_valid(id)) {
        bottle_errf(err, errlen, "invalid proposal id");
        return NULL;
    }

    if (bottle[0] == '\0' || strlen(bottle) > 128) {
        bottle_errf(err, errlen, "invalid bottle id");
        return NULL;
    }

    if (justification && strlen(justification) > BOTTLE_PROPOSAL_TEXT_MAX) {
        bottle_errf(err, errlen, "justification: longer than %d "
                             "bytes", BOTTLE_PROPOSAL_TEXT_MAX);
        return NULL;
    }

    if (bottle_proposal_args_check(kind, args, err, errlen) != 0) {
        return NULL;
    }

    if (bottle_audit_time(created, sizeof(created), created_ms) != 0) {
        bottle_errf(err, errlen, "invalid time");
        return NULL;
    }

    /* "o" steals the deep copy; json_pack copies the strings */

    o = json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:s}",
                  "id", id, "bottle", bottle,
                  "kind", bottle_proposal_kind_name(kind),
                  "args", json_deep_copy(args),
                  "justification", justification ? justification : "",
                  "created", created,
                  "producer", producer ? producer : "bottlectl");
    if (o == NULL) {
        bottle_errf(err, errlen, "out of memory, or not UTF-8");
    }

    return o;
}


json_t *
bottle_proposal_parse(const char *json, size_t len,
    bottle_proposal_kind_e *kind, char *err, size_t errlen)
{
    int           k;
    json_t       *o;
    const char   *id, *bottle, *name;
    json_error_t  jerr;

    o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (o == NULL) {
        bottle_errf(err, errlen, "invalid JSON: %s", jerr.text);
        return NULL;
    }

    id = json_string_value(json_object_get(o, "id"));
    bottle = json_string_value(json_object_get(o, "bottle"));
    name = json_string_value(json_object_get(o, "kind"));
    k = name ? bottle_proposal_kind_parse(name) : -1;

    if (id == NULL || !bottle_proposal_id_valid(id) || bottle == NULL
        || bottle[0] == '\0')
    {
        bottle_errf(err, errlen, "no valid id and bottle");
        goto failed;
    }

    if (k < 0) {
        bottle_errf(err, errlen, "unknown kind");
        goto failed;
    }

    if (bottle_proposal_args_check((bottle_proposal_kind_e) k,
                                   json_object_get(o, "args"), err, errlen)
        != 0)
    {
        goto failed;
    }

    *kind = (bottle_proposal_kind_e) k;

    return o;

failed:

    json_decref(o);

    return NULL;
}


void
bottle_proposal_summary(char *buf, size_t size, const json_t *proposal)
{
    size_t       i;
    json_t      *args, *m;
    const char  *kind;

    static const char  *keys[] = { "host", "url", "repo", "agent",
                                   "detector", "location", "rule", "file",
                                   NULL };

    if (size == 0) {
        return;
    }

    buf[0] = '\0';
    args = json_object_get(proposal, "args");               /* borrowed */
    kind = json_string_value(json_object_get(proposal, "kind"));

    for (i = 0; keys[i]; i++) {
        const char  *s = json_string_value(json_object_get(args, keys[i]));

        if (s) {
            bottle_proposal_cat(buf, size, buf[0] ? " " : "");
            bottle_proposal_cat(buf, size, s);
        }
    }

    m = json_object_get(args, "methods");
    for (i = 0; kind && strcmp(kind, "egress-allow") == 0
                && i < json_array_size(m); i++)
    {
        bottle_proposal_cat(buf, size, i ? "," : " ");
        bottle_proposal_cat(buf, size,
                            json_string_value(json_array_get(m, i)));
    }

    if (json_array_size(json_object_get(args, "allow"))) {
        char  n[48];

        snprintf(n, sizeof(n), " (%zu allow entries)",
                 json_array_size(json_object_get(args, "allow")));
        bottle_proposal_cat(buf, size, n);
    }

    if (json_is_true(json_object_get(args, "write"))) {
        bottle_proposal_cat(buf, size, ":write");
    }

    if (json_is_true(json_object_get(args, "public"))) {
        bottle_proposal_cat(buf, size, ":public");
    }

    if (kind && strcmp(kind, "launch-bottle") == 0) {
        bottle_proposal_launch_summary(buf, size, args);
    }
}


/*
 * launch-bottle's: " bottles a,b; beyond the parent, removed: hosts x,y;
 * repos ...; env ...; create ...", what the operator must see first
 */

static void
bottle_proposal_launch_summary(char *buf, size_t size, const json_t *args)
{
    char         n[48];
    size_t       i, k;
    json_t      *a, *removed;

    static const char  *const lists[] = { "hosts", "repos", "env", "create",
                                          NULL };

    a = json_object_get(args, "bottles");

    for (i = 0; i < json_array_size(a); i++) {
        bottle_proposal_cat(buf, size, i ? "," : " bottles ");
        bottle_proposal_cat(buf, size,
                            json_string_value(json_array_get(a, i)));
    }

    removed = json_object_get(args, "removed");

    if (removed == NULL) {
        return;
    }

    bottle_proposal_cat(buf, size, "; beyond the parent, removed:");

    for (k = 0; lists[k]; k++) {
        a = json_object_get(removed, lists[k]);

        for (i = 0; i < json_array_size(a); i++) {
            bottle_proposal_cat(buf, size, i ? "," : " ");

            if (i == 0) {
                bottle_proposal_cat(buf, size, lists[k]);
                bottle_proposal_cat(buf, size, " ");
            }

            bottle_proposal_cat(buf, size,
                                json_string_value(json_array_get(a, i)));
        }
    }

    if (json_integer_value(json_object_get(removed, "more")) > 0) {
        snprintf(n, sizeof(n), " and %lld more",
                 (long long) json_integer_value(json_object_get(removed,
                                                                "more")));
        bottle_proposal_cat(buf, size, n);
    }
}


/* appends s, printable ASCII only (the agent's text), cut to size */

static void
bottle_proposal_cat(char *buf, size_t size, const char *s)
{
    size_t  n;

    if (s == NULL) {
        return;
    }

    n = strlen(buf);

    for ( /* void */ ; *s && n + 1 < size; s++) {
        buf[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    }

    buf[n] = '\0';
}


const char *
bottle_decision_state(const char *action)
{
    if (strcmp(action, "approve") == 0) {
        return "approved";
    }

    if (strcmp(action, "deny") == 0) {
        return "denied";
    }

    if (strcmp(action, "modify") == 0) {
        return "modified";
    }

    return NULL;
}


json_t *
bottle_decision_build(const char *id, const char *proposal,
    const char *action, const char *operator_name, const char *notes,
    int64_t ms, const json_t *route)
{
    char         time[BOTTLE_AUDIT_TIME_LEN];
    json_t      *o;
    const char  *state;

    /* not an operator's action: bottle_decision_state() refuses it */
    state = strcmp(action, "expired") == 0 ? "expired"
                                           : bottle_decision_state(action);

    if (state == NULL || bottle_audit_time(time, sizeof(time), ms) != 0) {
        return NULL;
    }

    o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
                  "id", id, "proposal", proposal, "action", action,
                  "state", state, "operator", operator_name,
                  "notes", notes ? notes : "", "time", time);

    if (o && route
        && json_object_set_new(o, "route", json_deep_copy(route)) != 0)
    {
        json_decref(o);
        return NULL;
    }

    return o;
}


json_t *
bottle_proposal_apply(const json_t *bottle, bottle_proposal_kind_e kind,
    const json_t *route, int *changed, char *err, size_t errlen)
{
    size_t       i;
    json_t      *out, *routes, *r;
    const char  *host, *h;
    int          placed;

    *changed = 0;

    if (!bottle_proposal_changes_policy(kind)) {
        bottle_errf(err, errlen, "%s changes no policy",
                             bottle_proposal_kind_name(kind));
        return NULL;
    }

    if (kind == BOTTLE_PROPOSAL_ADD_REPO) {
        return bottle_proposal_apply_repo(bottle, route, changed, err,
                                          errlen);
    }

    host = bottle_proposal_host(route);
    if (host == NULL) {
        bottle_errf(err, errlen, "the route is not an object with "
                             "a \"host\"");
        return NULL;
    }

    if (!json_is_object(bottle)) {
        bottle_errf(err, errlen, "the bottle is not an object");
        return NULL;
    }

    out = json_deep_copy(bottle);                           /* new */
    if (out == NULL) {
        bottle_errf(err, errlen, "out of memory");
        return NULL;
    }

    routes = json_object_get(out, "routes");                /* borrowed */

    if (routes == NULL) {
        routes = json_array();
        if (json_object_set_new(out, "routes", routes) != 0) {
            goto nomem;
        }
    }

    if (!json_is_array(routes)) {
        json_decref(out);
        bottle_errf(err, errlen, "routes: not an array");
        return NULL;
    }

    /* the host's route is replaced where it stood, or dropped */

    placed = kind == BOTTLE_PROPOSAL_EGRESS_BLOCK;

    for (i = 0; i < json_array_size(routes); /* void */ ) {
        r = json_array_get(routes, i);
        h = bottle_proposal_host(r);

        if (h == NULL || !bottle_proposal_same_host(h, host)) {
            i++;
            continue;
        }

        if (!placed) {
            if (json_array_set_new(routes, i, json_deep_copy(route)) != 0) {
                goto nomem;
            }
            placed = 1;
            i++;
            continue;
        }

        json_array_remove(routes, i);
    }

    if (!placed && json_array_append_new(routes, json_deep_copy(route)) != 0)
    {
        goto nomem;
    }

    *changed = !json_equal(out, (json_t *) bottle);

    return out;

nomem:

    json_decref(out);
    bottle_errf(err, errlen, "out of memory");

    return NULL;
}


/*
 * add-repo: grant {"repo": "<forge>/<owner>/<repo>[:write]"} and maybe
 * "write": true (the proposal's own args) in `repos`, canonical, in place
 * of an earlier grant of the same repo
 */

static json_t *
bottle_proposal_apply_repo(const json_t *bottle, const json_t *grant,
    int *changed, char *err, size_t errlen)
{
    char           text[BOTTLE_FORGE_NAME_MAX + 2 * BOTTLE_REPO_SEGMENT_MAX
                        + 16], e[256];
    size_t         i;
    json_t        *out, *repos, *item;
    const char    *s;
    bottle_repo_t  want, have;
    int            placed;

    s = json_string_value(json_object_get(grant, "repo"));

    if (!json_is_object(grant) || s == NULL) {
        bottle_errf(err, errlen, "the grant is not an object with a "
                    "\"repo\"");
        return NULL;
    }

    if (bottle_repo_parse(&want, s, strlen(s), 1, e, sizeof(e)) != 0) {
        bottle_errf(err, errlen, "repo: %s", e);
        return NULL;
    }

    want.write |= json_is_true(json_object_get(grant, "write"));

    if (!json_is_object(bottle)) {
        bottle_errf(err, errlen, "the bottle is not an object");
        return NULL;
    }

    snprintf(text, sizeof(text), "%s/%s/%s%s", want.forge, want.owner,
             want.repo, want.write ? ":write" : "");

    out = json_deep_copy(bottle);                           /* new */
    if (out == NULL) {
        goto nomem;
    }

    repos = json_object_get(out, "repos");                  /* borrowed */

    if (repos == NULL) {
        repos = json_array();
        if (json_object_set_new(out, "repos", repos) != 0) {
            goto nomem;
        }
    }

    if (!json_is_array(repos)) {
        json_decref(out);
        bottle_errf(err, errlen, "repos: not an array");
        return NULL;
    }

    placed = 0;

    for (i = 0; i < json_array_size(repos); /* void */ ) {
        item = json_array_get(repos, i);
        s = json_string_value(item);

        if (s == NULL
            || bottle_repo_parse(&have, s, strlen(s), 1, e, sizeof(e)) != 0
            || !bottle_repo_same(&have, &want))
        {
            i++;
            continue;
        }

        if (!placed) {
            if (json_array_set_new(repos, i, json_string(text)) != 0) {
                goto nomem;
            }
            placed = 1;
            i++;
            continue;
        }

        json_array_remove(repos, i);
    }

    if (!placed && json_array_append_new(repos, json_string(text)) != 0) {
        goto nomem;
    }

    *changed = !json_equal(out, (json_t *) bottle);

    return out;

nomem:

    json_decref(out);
    bottle_errf(err, errlen, "out of memory");

    return NULL;
}


static const char *
bottle_proposal_host(const json_t *route)
{
    const char  *h;

    h = json_string_value(json_object_get(route, "host"));

    return (h && h[0]) ? h : NULL;
}


/* case-insensitive, one trailing dot ignored: as the parser stores it */

static int
bottle_proposal_same_host(const char *a, const char *b)
{
    size_t  la, lb, i;

    la = strlen(a);
    lb = strlen(b);

    la -= la > 1 && a[la - 1] == '.';
    lb -= lb > 1 && b[lb - 1] == '.';

    if (la != lb) {
        return 0;
    }

    for (i = 0; i < la; i++) {
        unsigned char  ca = (unsigned char) a[i], cb = (unsigned char) b[i];

        if (ca >= 'A' && ca <= 'Z') {
            ca |= 0x20;
        }

        if (cb >= 'A' && cb <= 'Z') {
            cb |= 0x20;
        }

        if (ca != cb) {
            return 0;
        }
    }

    return 1;
}


char *
bottle_proposal_pretty(const json_t *o)
{
    char         *s, *t;
    size_t        n, i;
    json_t       *copy, *m, *v;
    const char   *key;

    static const char  *const maps[] = { "egress_tokens", "held_secrets" };
    static const char  *const values[] = { "token", "canary" };

    /* the journal never holds a secret: the bottle's are redacted */

    copy = json_deep_copy(o);                           /* new */
    if (copy == NULL) {
        return NULL;
    }

    for (i = 0; i < 2; i++) {
        if (json_object_get(copy, values[i])) {
            json_object_set_new(copy, values[i],
                                json_string(BOTTLE_PROPOSAL_REDACTED));
        }

        m = json_object_get(copy, maps[i]);             /* borrowed */

        json_object_foreach(m, key, v) {
            json_object_set_new(m, key, json_string(BOTTLE_PROPOSAL_REDACTED));
        }
    }

    s = json_dumps(copy, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    json_decref(copy);

    if (s == NULL) {
        return NULL;
    }

    n = strlen(s);
    t = realloc(s, n + 2);
    if (t == NULL) {
        free(s);
        return NULL;
    }

    t[n] = '\n';
    t[n + 1] = '\0';

    return t;
}


