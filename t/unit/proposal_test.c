/*
 * Proposals and decisions (lib/bottle_proposal.c, lib/bottle_diff.c,
 * the decision.* events of lib/bottle_audit.c): the unified diff, its cut
 * and digest; kinds, ids, args, the proposal's and the decision's JSON;
 * an egress change applied to a bottle; the diff's text without secrets;
 * the events, with a diff over 64 KiB.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tap.h"
#include "bottle_audit.h"
#include "bottle_diff.h"
#include "bottle_decision.h"
#include "bottle_forge.h"
#include "bottle_proposal.h"


static char *
diff(const char *a, const char *b)
{
    char    *out;
    size_t   len;

    if (bottle_diff(&out, &len, a, strlen(a), b, strlen(b), "a", "b") != 0) {
        return NULL;
    }

    return out;
}


static void
test_diff(void)
{
    char    *d, *big_a, *big_b, dg[BOTTLE_DIFF_DIGEST_LEN];
    size_t   i, len, plus, minus;

    d = diff("x\ny\n", "x\ny\n");
    is_str(d, "", "diff: same lines, empty");
    free(d);

    d = diff("x\ny", "x\ny\n");
    is_str(d, "", "diff: a missing last newline is no change");
    free(d);

    d = diff("1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nnew\n5\n6\n7\n8\n");
    is_str(d, "--- a\n+++ b\n@@ -2,6 +2,7 @@\n 2\n 3\n 4\n+new\n 5\n 6\n 7\n",
           "diff: an insertion with three lines of context");
    free(d);

    d = diff("1\n2\n3\n", "1\n3\n");
    is_str(d, "--- a\n+++ b\n@@ -1,3 +1,2 @@\n 1\n-2\n 3\n",
           "diff: a deletion");
    free(d);

    d = diff("a\nb\nc\n", "a\nB\nc\n");
    is_str(d, "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
           "diff: a change");
    free(d);

    d = diff("", "x\n");
    is_str(d, "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+x\n", "diff: from nothing");
    free(d);

    d = diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
             "X\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n");
    is_str(d, "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n"
              "@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+Y\n",
           "diff: two hunks far apart");
    free(d);

    d = diff("1\n2\n3\n4\n5\n6\n7\n", "X\n2\n3\n4\n5\n6\nY\n");
    is_str(d, "--- a\n+++ b\n@@ -1,7 +1,7 @@\n-1\n+X\n 2\n 3\n 4\n 5\n 6\n"
              "-7\n+Y\n", "diff: close changes in one hunk");
    free(d);

    d = diff("a\nx\nb\ny\nc\n", "a\nb\nc\nz\n");
    is_str(d, "--- a\n+++ b\n@@ -1,5 +1,4 @@\n a\n-x\n b\n-y\n c\n+z\n",
           "diff: the longest common lines kept");
    free(d);

    /* over the LCS table's bound: every middle line removed then added */

    big_a = malloc(4 * 3000 + 1);
    big_b = malloc(4 * 3000 + 1);
    for (i = 0; i < 3000; i++) {
        sprintf(big_a + 4 * i, "a%02zu\n", i % 100);
        sprintf(big_b + 4 * i, "b%02zu\n", i % 100);
    }

    ok(bottle_diff(&d, &len, big_a, strlen(big_a), big_b, strlen(big_b),
                   "a", "b") == 0, "diff: 3000 x 3000 lines");

    plus = 0;
    minus = 0;
    for (i = 0; i < len; i++) {
        if (i == 0 || d[i - 1] == '\n') {
            plus += d[i] == '+';
            minus += d[i] == '-';
        }
    }

    is_int(plus, 3001, "diff: every line added (and the header)");
    is_int(minus, 3001, "diff: every line removed (and the header)");
    free(d);
    free(big_a);
    free(big_b);

    is_int(bottle_diff_cut("ab\ncd\n", 6, 10), 6, "cut: fits");
    is_int(bottle_diff_cut("ab\ncd\nef\n", 9, 7), 6, "cut: at a line's end");
    is_int(bottle_diff_cut("abcdef", 6, 4), 4, "cut: no line fits");

    bottle_diff_digest(dg, "abc", 3);
    is_str(dg, "sha256:ba7816bf8f01cfea", "digest: SHA-256 prefix");
}


static void
test_kinds(void)
{
    int   k;
    char  id[BOTTLE_PROPOSAL_ID_LEN];

    for (k = 0; k < BOTTLE_PROPOSAL_NKINDS; k++) {
        ok(bottle_proposal_kind_parse(bottle_proposal_kind_name(k)) == k,
           "kind %s: round trip", bottle_proposal_kind_name(k));
    }

    ok(bottle_proposal_kind_parse("egress") == -1, "kind: unknown");
    ok(bottle_proposal_kind_name(BOTTLE_PROPOSAL_NKINDS) == NULL,
       "kind: no name past the last");

    ok(bottle_proposal_no_plain_allow(BOTTLE_PROPOSAL_FORGE_CONNECT)
       && bottle_proposal_no_plain_allow(BOTTLE_PROPOSAL_ADD_REPO)
       && bottle_proposal_no_plain_allow(BOTTLE_PROPOSAL_LAUNCH_BOTTLE)
       && bottle_proposal_no_plain_allow(BOTTLE_PROPOSAL_CREATE_REPO),
       "no plain allow: the four");
    ok(!bottle_proposal_no_plain_allow(BOTTLE_PROPOSAL_EGRESS_ALLOW)
       && !bottle_proposal_no_plain_allow(BOTTLE_PROPOSAL_GITLEAKS_ALLOW),
       "no plain allow: not the others");
    ok(bottle_proposal_changes_policy(BOTTLE_PROPOSAL_EGRESS_BLOCK)
       && !bottle_proposal_changes_policy(BOTTLE_PROPOSAL_EGRESS_TOKEN_ALLOW),
       "changes policy: egress-allow and -block only");

    ok(bottle_proposal_id(id, 1796133400101LL) == 0
       && strncmp(id, "1796133400101-", 14) == 0 && strlen(id) == 22,
       "id: <ms>-<8 hex>");
    ok(bottle_proposal_id_valid(id), "id: valid");
    ok(!bottle_proposal_id_valid("") && !bottle_proposal_id_valid("a b")
       && !bottle_proposal_id_valid("../x")
       && !bottle_proposal_id_valid("0123456789012345678901234567890123"),
       "id: empty, spaces, dots, too long: invalid");
}


static void
test_json(void)
{
    char                     err[256], sum[64], *s;
    json_t                  *args, *p, *q, *d, *r;
    bottle_proposal_kind_e   kind;

    args = json_pack("{s:s, s:s, s:s, s:s, s:s}", "host", "a.example",
                     "detector", "token_patterns", "location", "body",
                     "digest", "sha256:0", "value", "ghp_x");
    ok(bottle_proposal_args_check(BOTTLE_PROPOSAL_EGRESS_TOKEN_ALLOW, args,
                                  err, sizeof(err)) == -1
       && strstr(err, "args.value: unknown field"),
       "args: egress-token-allow never takes a value");
    json_object_del(args, "value");
    ok(bottle_proposal_args_check(BOTTLE_PROPOSAL_EGRESS_TOKEN_ALLOW, args,
                                  err, sizeof(err)) == 0,
       "args: egress-token-allow");
    json_decref(args);

    args = json_pack("{s:[s]}", "methods", "GET");
    ok(bottle_proposal_args_check(BOTTLE_PROPOSAL_EGRESS_ALLOW, args, err,
                                  sizeof(err)) == -1
       && strstr(err, "args.host"), "args: egress-allow needs a host");
    json_object_set_new(args, "host", json_string("api.example.com"));
    json_object_set_new(args, "colour", json_string("red"));
    ok(bottle_proposal_args_check(BOTTLE_PROPOSAL_EGRESS_ALLOW, args, err,
                                  sizeof(err)) == 0,
       "args: egress-allow's route is checked when approved");

    p = bottle_proposal_build("1-abcdef01", "alice",
                              BOTTLE_PROPOSAL_EGRESS_ALLOW, args, "because",
                              1796133400101LL, "supervise", err, sizeof(err));
    ok(p != NULL, "build: a proposal");
    s = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);
    is_str(s, "{\"args\":{\"colour\":\"red\",\"host\":\"api.example.com\","
              "\"methods\":[\"GET\"]},\"bottle\":\"alice\",\"created\":"
              "\"2026-12-01T13:56:40.101Z\",\"id\":\"1-abcdef01\","
              "\"justification\":\"because\",\"kind\":\"egress-allow\","
              "\"producer\":\"supervise\"}", "build: its JSON");

    q = bottle_proposal_parse(s, strlen(s), &kind, err, sizeof(err));
    ok(q && kind == BOTTLE_PROPOSAL_EGRESS_ALLOW && json_equal(p, q),
       "parse: round trip");
    json_decref(q);
    free(s);

    bottle_proposal_summary(sum, sizeof(sum), p);
    is_str(sum, "api.example.com GET", "summary: host and methods");
    json_decref(p);

    /* launch-bottle's "removed": its shape, and the summary says it */

    {
        char     lsum[256];
        json_t  *largs;

        largs = json_loads("{\"agent\":\"claude\",\"bottles\":[\"dev\"],"
                          "\"removed\":{\"hosts\":[\"evil.example\"],"
                          "\"repos\":[],\"env\":[\"AWS\"],"
                          "\"create\":[],\"more\":2}}", 0, NULL);
        ok(bottle_proposal_args_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, largs,
                                      err, sizeof(err)) == 0,
           "args: launch-bottle's removed");

        p = bottle_proposal_build("1-abcdef02", "alice",
                                  BOTTLE_PROPOSAL_LAUNCH_BOTTLE, largs, "j",
                                  1796133400101LL, "supervise", err,
                                  sizeof(err));
        bottle_proposal_summary(lsum, sizeof(lsum), p);
        is_str(lsum, "claude bottles dev; beyond the parent, removed: hosts "
               "evil.example env AWS and 2 more",
               "summary: launch-bottle's bottles and what is removed");
        json_decref(p);

        json_object_set_new(json_object_get(largs, "removed"), "hosts",
                            json_pack("[i]", 7));
        ok(bottle_proposal_args_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, largs,
                                      err, sizeof(err)) == -1
           && strstr(err, "args.removed.hosts: an array of strings"),
           "args: removed holds strings");
        json_object_set_new(json_object_get(largs, "removed"), "tokens",
                            json_pack("[]"));
        json_object_set_new(json_object_get(largs, "removed"), "hosts",
                            json_pack("[]"));
        ok(bottle_proposal_args_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, largs,
                                      err, sizeof(err)) == -1
           && strstr(err, "args.removed.tokens"),
           "args: removed's lists only");
        json_object_set_new(largs, "removed", json_string("all"));
        ok(bottle_proposal_args_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, largs,
                                      err, sizeof(err)) == -1
           && strstr(err, "args.removed: not an object"),
           "args: removed is an object");
        json_decref(largs);
    }

    s = "{\"id\":\"1-a\",\"bottle\":\"b\",\"kind\":\"nope\",\"args\":{}}";
    ok(bottle_proposal_parse(s, strlen(s), &kind, err, sizeof(err)) == NULL
       && strcmp(err, "unknown kind") == 0, "parse: unknown kind");

    p = bottle_proposal_build("x y", "alice", BOTTLE_PROPOSAL_EGRESS_ALLOW,
                              args, NULL, 1, NULL, err, sizeof(err));
    ok(p == NULL, "build: an invalid id refused");
    json_decref(args);

    r = json_pack("{s:s}", "host", "a.example");
    d = bottle_decision_build("d1", "1-a", "modify", "ann", "ro",
                              1796133400101LL, r);
    s = json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER);
    is_str(s, "{\"id\":\"d1\",\"proposal\":\"1-a\",\"action\":\"modify\","
              "\"state\":\"modified\",\"operator\":\"ann\",\"notes\":\"ro\","
              "\"time\":\"2026-12-01T13:56:40.101Z\",\"route\":{\"host\":"
              "\"a.example\"}}", "decision: its JSON, with modify's route");
    free(s);
    json_decref(d);
    json_decref(r);

    ok(bottle_decision_build("d", "p", "maybe", "ann", NULL, 1, NULL) == NULL,
       "decision: an unknown action");
}


static void
test_apply_repo(void)
{
    int      changed;
    char     err[256], *s;
    json_t  *b, *g, *out;

    ok(bottle_proposal_changes_policy(BOTTLE_PROPOSAL_ADD_REPO),
       "add-repo: changes the bottle's repos");

    b = json_loads("{\"id\":\"alice\",\"repos\":[\"git.example/acme/a\","
                   "\"Git.Example/Acme/W.git:write\"]}", 0, NULL);

    /* the proposal's own args: repo and write */
    g = json_pack("{s:s, s:b}", "repo", "git.example/acme/new", "write", 1);
    out = bottle_proposal_apply(b, BOTTLE_PROPOSAL_ADD_REPO, g, &changed,
                                err, sizeof(err));
    s = json_dumps(json_object_get(out, "repos"), JSON_COMPACT);
    is_str(s, "[\"git.example/acme/a\",\"Git.Example/Acme/W.git:write\","
              "\"git.example/acme/new:write\"]",
           "apply add-repo: the grant appended, with write as asked");
    ok(changed, "apply add-repo: changed");
    free(s);
    json_decref(out);
    json_decref(g);

    /* the operator's read-only grant of a repo granted write before */
    g = json_pack("{s:s}", "repo", "git.example/acme/w");
    out = bottle_proposal_apply(b, BOTTLE_PROPOSAL_ADD_REPO, g, &changed,
                                err, sizeof(err));
    s = json_dumps(json_object_get(out, "repos"), JSON_COMPACT);
    is_str(s, "[\"git.example/acme/a\",\"git.example/acme/w\"]",
           "apply add-repo: the same repo (any case, .git) replaced in "
           "place, read-only");
    free(s);
    json_decref(out);
    json_decref(g);

    g = json_pack("{s:s}", "repo", "git.example/acme/a");
    out = bottle_proposal_apply(b, BOTTLE_PROPOSAL_ADD_REPO, g, &changed,
                                err, sizeof(err));
    ok(out && !changed, "apply add-repo: a grant the bottle has changes "
                        "nothing");
    json_decref(out);
    json_decref(g);

    g = json_pack("{s:s}", "repo", "git.example/../x");
    ok(bottle_proposal_apply(b, BOTTLE_PROPOSAL_ADD_REPO, g, &changed, err,
                             sizeof(err)) == NULL
       && strncmp(err, "repo: ", 6) == 0,
       "apply add-repo: an invalid grant refused (%s)", err);
    json_decref(g);

    g = json_pack("{s:s}", "repo", "git.example/acme/a:admin");
    ok(bottle_proposal_apply(b, BOTTLE_PROPOSAL_ADD_REPO, g, &changed, err,
                             sizeof(err)) == NULL,
       "apply add-repo: an unknown mode refused");
    json_decref(g);
    json_decref(b);

    b = json_loads("{\"id\":\"bob\"}", 0, NULL);
    g = json_pack("{s:s}", "repo", "git.example/acme/a");
    out = bottle_proposal_apply(b, BOTTLE_PROPOSAL_ADD_REPO, g, &changed,
                                err, sizeof(err));
    s = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
    is_str(s, "{\"id\":\"bob\",\"repos\":[\"git.example/acme/a\"]}",
           "apply add-repo: repos created");
    free(s);
    json_decref(out);
    json_decref(g);
    json_decref(b);
}


static void
test_grant(void)
{
    char     err[256];
    json_t  *p, *g;

    p = json_loads("{\"args\":{\"repo\":\"git.example/acme/w\","
                   "\"write\":true}}", 0, NULL);

    g = json_pack("{s:s}", "repo", "git.example/acme/w");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_ADD_REPO, p, g, err,
                                   sizeof(err)) == 0,
       "grant: read-only instead of the write asked for");
    json_decref(g);

    g = json_pack("{s:s}", "repo", "GIT.example/acme/w.git:write");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_ADD_REPO, p, g, err,
                                   sizeof(err)) == 0,
       "grant: write as asked (any case, .git)");
    json_decref(g);

    g = json_pack("{s:s}", "repo", "git.example/acme/other");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_ADD_REPO, p, g, err,
                                   sizeof(err)) != 0
       && strstr(err, "the repo the agent asked for"),
       "grant: another repo refused (%s)", err);
    json_decref(g);

    g = json_pack("{s:s, s:b}", "repo", "git.example/acme/w", "write", 1);
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_ADD_REPO, p, g, err,
                                   sizeof(err)) != 0,
       "grant: only \"repo\" in a grant");
    json_decref(g);
    json_decref(p);

    p = json_loads("{\"args\":{\"repo\":\"git.example/acme/r\"}}", 0,
                   NULL);
    g = json_pack("{s:s}", "repo", "git.example/acme/r:write");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_ADD_REPO, p, g, err,
                                   sizeof(err)) != 0
       && strstr(err, "no more than was asked"),
       "grant: no write when read was asked (%s)", err);
    json_decref(g);

    g = json_pack("{s:s}", "host", "a.example");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_EGRESS_ALLOW, p, g, err,
                                   sizeof(err)) == 0,
       "grant: egress-allow takes a route");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_ADD_REPO, p, g, err,
                                   sizeof(err)) != 0,
       "grant: add-repo takes no route");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_CREATE_REPO, p, g, err,
                                   sizeof(err)) != 0,
       "grant: create-repo takes no route");
    json_decref(g);

    /* create-repo: its repo, with write though the agent said nothing */
    g = json_pack("{s:s}", "repo", "git.example/acme/r:write");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_CREATE_REPO, p, g, err,
                                   sizeof(err)) == 0,
       "grant: create-repo's repo with write");
    json_decref(g);
    g = json_pack("{s:s}", "repo", "git.example/acme/x:write");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_CREATE_REPO, p, g, err,
                                   sizeof(err)) != 0,
       "grant: create-repo, another repo refused");
    json_decref(g);
    json_decref(p);
}


static void
test_grant_actions(void)
{
    char     err[256], name[BOTTLE_FORGE_NAME_MAX + 1];
    json_t  *p, *g, *l, *want;

    ok(bottle_forge_url_name(name, "https://Git.Example:8443/a/b?c", err,
                             sizeof(err)) == 0
       && strcmp(name, "git.example:8443") == 0,
       "url name: host and port, lowercase (%s)", name);
    ok(bottle_forge_url_name(name, "http://git.example", err, sizeof(err))
       == 0 && strcmp(name, "git.example") == 0,
       "url name: http, no path");
    ok(bottle_forge_url_name(name, "https://u:t@git.example/", err,
                             sizeof(err)) != 0,
       "url name: credentials refused");
    ok(bottle_forge_url_name(name, "ssh://git.example/", err, sizeof(err))
       != 0, "url name: ssh refused");
    ok(bottle_forge_url_name(name, "https:///x", err, sizeof(err)) != 0,
       "url name: no host refused");

    p = json_loads("{\"args\":{\"url\":\"https://Git.Example/x\"}}", 0,
                   NULL);
    g = json_pack("{s:s, s:s}", "forge", "git.example", "account", "bot");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_FORGE_CONNECT, p, g, err,
                                   sizeof(err)) == 0,
       "forge grant: the proposal's forge");
    json_decref(g);
    g = json_pack("{s:s, s:s}", "forge", "other.example", "account", "bot");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_FORGE_CONNECT, p, g, err,
                                   sizeof(err)) != 0
       && strstr(err, "its own url"),
       "forge grant: another forge refused (%s)", err);
    json_decref(g);
    g = json_pack("{s:s}", "forge", "git.example");
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_FORGE_CONNECT, p, g, err,
                                   sizeof(err)) != 0,
       "forge grant: an account is required");
    json_decref(g);
    json_decref(p);

    p = json_loads("{\"args\":{\"agent\":\"claude\",\"prompt\":\"p\","
                   "\"bottles\":[\"a\",\"b\"],\"label\":\"l\"}}", 0,
                   NULL);
    g = json_loads("{\"bottles\":[\"b\"]}", 0, NULL);
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, p, g, err,
                                   sizeof(err)) == 0,
       "launch: fewer bottles");
    l = bottle_decision_launch(p, g);
    want = json_loads("{\"agent\":\"claude\",\"prompt\":\"p\","
                      "\"bottles\":[\"b\"],\"label\":\"l\"}", 0, NULL);
    ok(l && json_equal(l, want),
       "launch: the spec, the proposal's with the bottles given");
    json_decref(want);
    json_decref(l);
    json_decref(g);

    /* the launch spec carries the parent and what is removed */
    json_object_set_new(p, "bottle", json_string("alice"));
    json_object_set_new(json_object_get(p, "args"), "removed",
                        json_pack("{s:[s]}", "hosts", "evil.example"));
    l = bottle_decision_launch(p, NULL);
    want = json_loads("{\"agent\":\"claude\",\"prompt\":\"p\","
                      "\"bottles\":[\"a\",\"b\"],\"label\":\"l\","
                      "\"parent\":\"alice\",\"removed\":{\"hosts\":"
                      "[\"evil.example\"]}}", 0, NULL);
    ok(l && json_equal(l, want),
       "launch: the spec names the parent and what is removed");
    json_decref(want);
    json_decref(l);
    json_object_del(p, "bottle");
    json_object_del(json_object_get(p, "args"), "removed");

    g = json_loads("{\"bottles\":[\"a\",\"c\"]}", 0, NULL);
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, p, g, err,
                                   sizeof(err)) != 0
       && strstr(err, "\"c\" is not one the proposal asked for"),
       "launch: a bottle not asked for refused (%s)", err);
    json_decref(g);
    g = json_loads("{\"bottles\":[\"a\",\"a\"]}", 0, NULL);
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, p, g, err,
                                   sizeof(err)) != 0,
       "launch: a bottle twice refused");
    json_decref(g);
    g = json_loads("{\"prompt\":\"other\"}", 0, NULL);
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, p, g, err,
                                   sizeof(err)) != 0,
       "launch: another prompt refused");
    json_decref(g);
    g = json_loads("{\"agent\":\"claude\",\"extra\":1}", 0, NULL);
    ok(bottle_decision_grant_check(BOTTLE_PROPOSAL_LAUNCH_BOTTLE, p, g, err,
                                   sizeof(err)) != 0,
       "launch: an unknown field refused");
    json_decref(g);
    json_decref(p);
}


static void
test_apply(void)
{
    int      changed;
    char     err[256], *s;
    json_t  *b, *r, *out;

    b = json_loads("{\"id\":\"alice\",\"canary\":\"CANARY-123456\","
                   "\"egress_tokens\":{\"GH\":\"ghp_secret\"},\"routes\":["
                   "{\"host\":\"A.example.\"},{\"host\":\"b.example\"}]}",
                   0, NULL);

    r = json_pack("{s:s, s:[s]}", "host", "a.example", "methods", "GET");
    out = bottle_proposal_apply(b, BOTTLE_PROPOSAL_EGRESS_ALLOW, r, &changed,
                                err, sizeof(err));
    s = json_dumps(json_object_get(out, "routes"), JSON_COMPACT);
    is_str(s, "[{\"host\":\"a.example\",\"methods\":[\"GET\"]},"
              "{\"host\":\"b.example\"}]",
           "apply: the same host (any case, a trailing dot) replaced in place");
    ok(changed, "apply: changed");
    free(s);
    json_decref(out);
    json_decref(r);

    r = json_pack("{s:s}", "host", "c.example");
    out = bottle_proposal_apply(b, BOTTLE_PROPOSAL_EGRESS_ALLOW, r, &changed,
                                err, sizeof(err));
    is_int(json_array_size(json_object_get(out, "routes")), 3,
           "apply: a new host appended");
    json_decref(out);

    out = bottle_proposal_apply(b, BOTTLE_PROPOSAL_EGRESS_BLOCK, r, &changed,
                                err, sizeof(err));
    ok(out && !changed, "apply: blocking a host without a route changes "
                        "nothing");
    json_decref(out);
    json_decref(r);

    r = json_pack("{s:s}", "host", "b.example");
    out = bottle_proposal_apply(b, BOTTLE_PROPOSAL_EGRESS_BLOCK, r, &changed,
                                err, sizeof(err));
    s = json_dumps(json_object_get(out, "routes"), JSON_COMPACT);
    is_str(s, "[{\"host\":\"A.example.\"}]", "apply: block removes the route");
    free(s);
    json_decref(out);

    ok(bottle_proposal_apply(b, BOTTLE_PROPOSAL_ADD_REPO, r, &changed, err,
                             sizeof(err)) == NULL,
       "apply: add-repo takes a repo grant, not a route");
    json_decref(r);

    ok(bottle_proposal_apply(b, BOTTLE_PROPOSAL_CREATE_REPO, r, &changed,
                             err, sizeof(err)) == NULL,
       "apply: create-repo changes no policy");

    s = bottle_proposal_pretty(b);
    ok(s && !strstr(s, "ghp_secret") && !strstr(s, "CANARY-123456")
       && strstr(s, "\"GH\": \"<redacted>\""),
       "pretty: the bottle's secrets redacted");
    ok(s && s[strlen(s) - 1] == '\n' && strstr(s, "\n  \"egress_tokens\""),
       "pretty: indented, sorted, a newline at the end");
    free(s);

    json_decref(b);
}


static void
test_events(void)
{
    char                  *s, *big, dg[BOTTLE_DIFF_DIGEST_LEN];
    size_t                 i, len;
    json_t                *o;
    bottle_audit_event_t   e;

    memset(&e, 0, sizeof(e));
    e.type = BOTTLE_AUDIT_LATE;
    e.producer = "bottlectl";
    e.id.data = "ops:1-1-1";
    e.id.len = 9;
    e.time_ms = 1796133400101LL;
    e.correlation_id.data = "1-abcdef01";
    e.correlation_id.len = 10;
    e.kind.data = "egress-allow";
    e.kind.len = 12;
    e.operator_action.data = "deny";
    e.operator_action.len = 4;
    e.lost_to.data = "d1";
    e.lost_to.len = 2;
    e.lost_to_action.data = "approve";
    e.lost_to_action.len = 7;

    s = bottle_audit_json(&e, &len);
    ok(s && strstr(s, "\"type\":\"decision.late\"")
       && strstr(s, "\"correlation_id\":\"1-abcdef01\"")
       && strstr(s, "\"operator_action\":\"deny\",\"operator_notes\":null")
       && strstr(s, "\"lost_to\":\"d1\",\"lost_to_action\":\"approve\""),
       "decision.late: names the decision it lost to");
    free(s);

    big = malloc(100000);
    for (i = 0; i < 100000; i++) {
        big[i] = (i % 50 == 49) ? '\n' : 'x';
    }

    e.type = BOTTLE_AUDIT_RESOLVED;
    e.diff.data = big;
    e.diff.len = 100000;

    s = bottle_audit_json(&e, &len);
    o = json_loads(s, 0, NULL);
    bottle_diff_digest(dg, big, 100000);

    ok(json_is_true(json_object_get(o, "diff_truncated")),
       "decision.resolved: a diff over 64 KiB is truncated");
    is_int(json_string_length(json_object_get(o, "untrusted.diff")), 65500,
           "decision.resolved: cut at the last line's end under 64 KiB");
    is_str(json_string_value(json_object_get(o, "diff_digest")), dg,
           "decision.resolved: the whole diff's digest");
    ok(json_object_get(o, "lost_to") == NULL,
       "decision.resolved: no lost_to");
    json_decref(o);
    free(s);

    e.diff.len = 0;
    s = bottle_audit_json(&e, &len);
    ok(s && !strstr(s, "diff"), "decision.resolved: no diff, no diff fields");
    free(s);
    free(big);

    e.type = BOTTLE_AUDIT_PROPOSED;
    e.justification.data = "line\nbreak";
    e.justification.len = 10;
    s = bottle_audit_json(&e, &len);
    ok(s && strstr(s, "\"untrusted.justification\":\"line?break\""),
       "decision.proposed: the justification, printable only");
    free(s);
}


int
main(void)
{
    test_diff();
    test_kinds();
    test_json();
    test_apply();
    test_apply_repo();
    test_grant();
    test_grant_actions();
    test_events();

    return done_testing();
}
