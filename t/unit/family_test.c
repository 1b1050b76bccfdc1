/*
 * bottle_policy's parents and children (docs/policy.md#parent-and-
 * children): "parent" and "children" parsed, hostile shapes refused (a
 * child naming itself, cycles, a child of a child, children of a child,
 * huge lists), a child beyond its parent refused with a message naming
 * the child, the field and the parent, bottle_child_beyond()'s listing,
 * and a file whose child's parent is missing.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "bottle_policy.h"


static char  err[1024];


/* the error text for a policy that must be refused; "" if accepted */

static const char *
error_of(const char *json)
{
    bottle_policy_t  *p;

    err[0] = '\0';

    if (bottle_policy_parse(&p, json, strlen(json), "policy.json", err,
                            sizeof(err)) == 0)
    {
        bottle_policy_free(p);
        return "";
    }

    return err;
}


static int
has(const char *s, const char *part)
{
    if (strstr(s, part) == NULL) {
        printf("#   '%s' lacks '%s'\n", s, part);
        return 0;
    }

    return 1;
}


/* a bottle's JSON: id, token, then the rest ("routes" included) */

static char *
bottle(char *out, size_t size, const char *id, const char *rest)
{
    snprintf(out, size, "{\"id\":\"%s\",\"token\":\"%s-token-0123456789\","
             "%s}", id, id, rest);
    return out;
}


static const char *
pair(const char *parent_rest, const char *child_rest)
{
    static char  json[8192];
    char         a[4096], b[4096];

    snprintf(json, sizeof(json), "{\"bottles\":[%s,%s]}",
             bottle(a, sizeof(a), "alice", parent_rest),
             bottle(b, sizeof(b), "kid", child_rest));

    return error_of(json);
}


typedef struct {
    int     n;
    char    text[4096];
} beyond_t;


static void
collect(void *data, const char *field, long index, const char *what,
    const char *why)
{
    beyond_t  *b = data;
    size_t     len;

    (void) why;

    b->n++;
    len = strlen(b->text);
    snprintf(b->text + len, sizeof(b->text) - len, "%s%s[%ld]=%s",
             len ? " " : "", field, index, what);
}


static void
count(void *data, const char *field, long index, const char *what,
    const char *why)
{
    (void) field;
    (void) index;
    (void) what;
    (void) why;

    (*(long *) data)++;
}


#define PARENT                                                               \
    "\"children\":{\"max\":2,\"agents\":[\"claude\",\"codex\"]},"            \
    "\"egress_tokens\":{\"GH\":\"ghp-value-0001\",\"NPM\":\"npm-v-0002\"},"  \
    "\"repos\":[\"git.example.org/team/app:write\","                         \
    "\"git.example.org/team/docs\"],"                                        \
    "\"git_gate\":{\"actions\":{\"create\":[\"git.example.org/team/tmp-*\"]}}," \
    "\"routes\":[{\"host\":\"api.github.com\"},{\"host\":\"pypi.org\"}]"


static void
test_parse(void)
{
    char              a[4096], b[4096], json[8192];
    bottle_policy_t  *p;
    const bottle_t   *x;

    snprintf(json, sizeof(json), "{\"bottles\":[%s,%s]}",
             bottle(a, sizeof(a), "alice", PARENT),
             bottle(b, sizeof(b), "kid", "\"parent\":\"alice\","
                    "\"egress_tokens\":{\"GH\":\"other-value-1\"},"
                    "\"repos\":[\"git.example.org/team/app:write\","
                    "\"git.example.org/Team/DOCS\"],"
                    "\"git_gate\":{\"actions\":{\"create\":"
                    "[\"git.example.org/team/tmp-x*\"]}},"
                    "\"routes\":[{\"host\":\"API.github.com.\"}]"));

    ok(bottle_policy_parse(&p, json, strlen(json), "policy.json", err,
                           sizeof(err)) == 0,
       "a parent and a child within it parse");
    if (p == NULL) {
        printf("#   %s\n", err);
        return;
    }

    x = bottle_policy_find_id(p, "alice", 5);
    ok(x && x->parent.len == 0 && strcmp(x->parent.data, "") == 0,
       "the parent has no parent (\"\")");
    is_int(x ? x->children_max : 0, 2, "children.max read");
    ok(x && x->nchild_agents == 2
       && strcmp(x->child_agents[1].data, "codex") == 0,
       "children.agents read");

    x = bottle_policy_find_id(p, "kid", 3);
    is_str(x ? x->parent.data : NULL, "alice", "the child's parent");
    is_int(x ? x->children_max : 1, 0, "a child launches nothing");

    bottle_policy_free(p);

    snprintf(json, sizeof(json), "%s",
             bottle(a, sizeof(a), "solo", "\"routes\":[]"));
    ok(bottle_policy_parse(&p, json, strlen(json), "policy.json", err,
                           sizeof(err)) == 0
       && bottle_policy_at(p, 0)->children_max == BOTTLE_CHILDREN_DEFAULT
       && bottle_policy_at(p, 0)->nchild_agents == 0,
       "no children field: children.max 3, no agent");
    bottle_policy_free(p);

    /* a store's key: the parent elsewhere, checked by the caller */

    snprintf(json, sizeof(json), "%s",
             bottle(a, sizeof(a), "kid", "\"parent\":\"alice\","
                    "\"routes\":[{\"host\":\"evil.example\"}]"));
    is_str(error_of(json), "", "a child alone: its parent is the caller's");
}


static void
test_shapes(void)
{
    int          i;
    char         a[4096], b[4096], c[4096], json[2048];
    char        *big;
    size_t       len;

    ok(has(error_of(bottle(a, sizeof(a), "kid", "\"parent\":\"kid\","
                           "\"routes\":[]")),
           "bottle \"kid\": parent: a bottle cannot be its own parent"),
       "a child naming itself refused");

    ok(has(error_of(bottle(a, sizeof(a), "kid", "\"parent\":\"x y\","
                           "\"routes\":[]")),
           "parent: \"x y\" is not a bottle id"),
       "a parent that is no id refused");

    ok(has(error_of(bottle(a, sizeof(a), "kid", "\"parent\":7,"
                           "\"routes\":[]")), "parent:"),
       "a parent that is no string refused");

    ok(has(error_of(bottle(a, sizeof(a), "kid", "\"parent\":\"alice\","
                           "\"children\":{\"max\":1},\"routes\":[]")),
           "children: a child (it has a parent) cannot have children: "
           "depth is 1"),
       "a child with children refused");

    /* a child of a child */

    snprintf(json, sizeof(json), "{\"bottles\":[%s,%s,%s]}",
             bottle(a, sizeof(a), "alice", "\"routes\":[]"),
             bottle(b, sizeof(b), "kid", "\"parent\":\"alice\","
                    "\"routes\":[]"),
             bottle(c, sizeof(c), "grandkid", "\"parent\":\"kid\","
                    "\"routes\":[]"));
    ok(has(error_of(json), "bottle \"grandkid\": parent: \"kid\" is itself "
           "a child (of \"alice\"): depth is 1"),
       "a child of a child refused");

    /* a cycle: each is the other's parent */

    snprintf(json, sizeof(json), "{\"bottles\":[%s,%s]}",
             bottle(a, sizeof(a), "a", "\"parent\":\"b\",\"routes\":[]"),
             bottle(b, sizeof(b), "b", "\"parent\":\"a\",\"routes\":[]"));
    ok(has(error_of(json), "is itself a child"), "a cycle refused");

    ok(has(error_of(bottle(a, sizeof(a), "p", "\"children\":{\"max\":65},"
                           "\"routes\":[]")),
           "children.max: must be 0-64"), "children.max over 64 refused");
    ok(has(error_of(bottle(a, sizeof(a), "p", "\"children\":{\"max\":-1},"
                           "\"routes\":[]")),
           "children.max: must be 0-64"), "children.max -1 refused");
    ok(has(error_of(bottle(a, sizeof(a), "p", "\"children\":{\"max\":\"3\"},"
                           "\"routes\":[]")),
           "children.max:"), "children.max a string refused");
    ok(has(error_of(bottle(a, sizeof(a), "p", "\"children\":{\"mx\":3},"
                           "\"routes\":[]")),
           "unknown field \"mx\""), "an unknown children field refused");
    ok(has(error_of(bottle(a, sizeof(a), "p", "\"children\":[],"
                           "\"routes\":[]")),
           "children:"), "children not an object refused");
    ok(has(error_of(bottle(a, sizeof(a), "p", "\"children\":{\"agents\":"
                           "[\"a\",\"a\"]},\"routes\":[]")),
           "children.agents[1]: \"a\": duplicate"),
       "a duplicate agent refused");
    ok(has(error_of(bottle(a, sizeof(a), "p", "\"children\":{\"agents\":"
                           "[\"a\\nb\"]},\"routes\":[]")),
           "children.agents[0]: must be an agent's name"),
       "an agent's name with a newline refused");
    ok(has(error_of(bottle(a, sizeof(a), "p", "\"children\":{\"agents\":"
                           "[]},\"routes\":[]")),
           "children.agents: [] names no agent"), "no agent refused");

    /* huge lists: 65 agents */

    len = 0;
    json[0] = '\0';
    for (i = 0; i < 65; i++) {
        len += snprintf(json + len, sizeof(json) - len, "%s\"ag%d\"",
                        i ? "," : "", i);
    }

    snprintf(c, sizeof(c), "\"children\":{\"agents\":[%s]},\"routes\":[]",
             json);
    ok(has(error_of(bottle(a, sizeof(a), "p", c)),
           "children.agents: 65 agents, over the limit of 64"),
       "65 agents refused");

    /* a huge parent id */

    big = malloc(100000);
    memset(big, 'x', 99999);
    big[99999] = '\0';
    snprintf(json, sizeof(json), "{\"id\":\"kid\",\"token\":"
             "\"kid-token-0123456789\",\"routes\":[],\"parent\":\"");
    len = strlen(json);
    {
        char  *doc = malloc(len + 100000 + 8);

        memcpy(doc, json, len);
        memcpy(doc + len, big, 99999);
        memcpy(doc + len + 99999, "\"}", 3);
        ok(has(error_of(doc), "is not a bottle id"),
           "a 100,000-byte parent refused");
        free(doc);
    }
    free(big);
}


static void
test_beyond(void)
{
    ok(has(pair(PARENT, "\"parent\":\"alice\",\"routes\":"
                "[{\"host\":\"pypi.org\"},{\"host\":\"evil.example\"}]"),
           "policy.json: bottle \"kid\": routes[1]: \"evil.example\" "
           "exceeds its parent \"alice\": the parent has no route to it"),
       "a host beyond the parent refused, named");

    ok(has(pair(PARENT, "\"parent\":\"alice\",\"routes\":[],"
                "\"repos\":[\"git.example.org/team/other\"]"),
           "repos[0]: \"git.example.org/team/other\" exceeds its parent "
           "\"alice\": the parent is not granted it"),
       "a repo beyond the parent refused");

    ok(has(pair(PARENT, "\"parent\":\"alice\",\"routes\":[],"
                "\"repos\":[\"git.example.org/team/docs:write\"]"),
           "repos[0]: \"git.example.org/team/docs:write\" exceeds its "
           "parent \"alice\": the parent may only read it"),
       "write on a repo the parent reads refused");

    ok(has(pair(PARENT, "\"parent\":\"alice\",\"routes\":[],"
                "\"egress_tokens\":{\"AWS\":\"aws-value-0001\"}"),
           "egress_tokens: \"AWS\" exceeds its parent \"alice\": the parent "
           "has no egress token of that name"),
       "an env name beyond the parent refused");

    ok(has(pair(PARENT, "\"parent\":\"alice\",\"routes\":[],"
                "\"git_gate\":{\"actions\":{\"create\":"
                "[\"git.example.org/team/*\"]}}"),
           "git_gate.actions.create[0]: \"git.example.org/team/*\" exceeds "
           "its parent \"alice\""),
       "a wider create pattern refused");

    ok(has(pair(PARENT, "\"parent\":\"alice\",\"routes\":[],"
                "\"git_gate\":{\"actions\":{\"create\":"
                "[\"git.example.org/team/tmp-1:public\"]}}"),
           "git_gate.actions.create[0]"),
       "a public create the parent's pattern does not allow refused");

    ok(has(pair(PARENT, "\"parent\":\"alice\",\"routes\":"
                "[{\"host\":\"a.example\"},{\"host\":\"b.example\"}],"
                "\"egress_tokens\":{\"AWS\":\"aws-value-0001\"}"),
           "(and 2 more)"),
       "the message counts the rest");

    ok(has(pair("\"routes\":[]", "\"parent\":\"alice\",\"routes\":"
                "[{\"host\":\"pypi.org\"}]"), "exceeds its parent"),
       "a parent with nothing: any host beyond");

    is_str(pair(PARENT, "\"parent\":\"alice\",\"routes\":[]"), "",
           "a child with nothing: within");
}


static void
test_listing(void)
{
    char              a[4096], b[4096], json[8192];
    beyond_t          r;
    bottle_policy_t  *p;

    snprintf(json, sizeof(json), "{\"bottles\":[%s,%s]}",
             bottle(a, sizeof(a), "alice", PARENT),
             bottle(b, sizeof(b), "other",
                    "\"egress_tokens\":{\"GH\":\"ghp-value-0009\","
                    "\"AWS\":\"aws-value-0001\"},"
                    "\"repos\":[\"git.example.org/team/app\","
                    "\"git.example.org/team/docs:write\","
                    "\"git.example.org/x/y\"],"
                    "\"routes\":[{\"host\":\"pypi.org\"},"
                    "{\"host\":\"evil.example\"}]"));

    if (bottle_policy_parse(&p, json, strlen(json), "policy.json", err,
                            sizeof(err)) != 0)
    {
        ok(0, "listing: parsed (%s)", err);
        return;
    }

    memset(&r, 0, sizeof(r));

    is_int(bottle_child_beyond(bottle_policy_find_id(p, "other", 5),
                               bottle_policy_find_id(p, "alice", 5),
                               collect, &r),
           4, "bottle_child_beyond: four elements beyond");
    is_str(r.text, "routes[1]=evil.example "
           "repos[1]=git.example.org/team/docs:write "
           "repos[2]=git.example.org/x/y egress_tokens[-1]=AWS",
           "bottle_child_beyond: each named, in the child's order");

    bottle_policy_free(p);
}


/* a child and a parent of 4000 routes, tokens and repos each: n log n */

static void
test_huge(void)
{
    int               i;
    long              n;
    char             *json, *q;
    size_t            size;
    bottle_policy_t  *p;
    const bottle_t   *pa, *ch;

    size = 4 * 1024 * 1024;
    json = malloc(size);
    q = json;

    q += sprintf(q, "{\"bottles\":[{\"id\":\"alice\",\"token\":"
                 "\"alice-token-0123456789\",\"egress_tokens\":{");
    for (i = 0; i < 4000; i++) {
        q += sprintf(q, "%s\"T%d\":\"value-%d\"", i ? "," : "", i, i);
    }
    q += sprintf(q, "},\"repos\":[");
    for (i = 0; i < 4000; i++) {
        q += sprintf(q, "%s\"git.example.org/o/r%d:write\"", i ? "," : "", i);
    }
    q += sprintf(q, "],\"routes\":[");
    for (i = 0; i < 4000; i++) {
        q += sprintf(q, "%s{\"host\":\"h%d.example\"}", i ? "," : "", i);
    }

    q += sprintf(q, "]},{\"id\":\"kid\",\"token\":\"kid-token-0123456789\","
                 "\"parent\":\"alice\",\"egress_tokens\":{");
    for (i = 0; i < 4000; i++) {
        q += sprintf(q, "%s\"T%d\":\"value-%d\"", i ? "," : "", 3999 - i,
                     i);
    }
    q += sprintf(q, "},\"repos\":[");
    for (i = 0; i < 4000; i++) {
        q += sprintf(q, "%s\"git.example.org/o/r%d\"", i ? "," : "",
                     3999 - i);
    }
    q += sprintf(q, "],\"routes\":[");
    for (i = 0; i < 4000; i++) {
        q += sprintf(q, "%s{\"host\":\"h%d.example\"}", i ? "," : "",
                     3999 - i);
    }
    q += sprintf(q, "]}]}");

    ok(bottle_policy_parse(&p, json, strlen(json), "huge.json", err,
                           sizeof(err)) == 0,
       "4000 routes, tokens and repos each, all within: accepted");

    if (p) {
        pa = bottle_policy_find_id(p, "alice", 5);
        ch = bottle_policy_find_id(p, "kid", 3);
        n = 0;
        /* the parent compared with its child: nothing of the child's is
           beyond the parent, and the parent's writes are beyond it */
        ok(bottle_child_beyond(ch, pa, count, &n) == 0 && n == 0,
           "huge: the child within");
        n = 0;
        ok(bottle_child_beyond(pa, ch, count, &n) == 4000 && n == 4000,
           "huge: the parent's 4000 writes beyond the child");
        bottle_policy_free(p);
    }

    free(json);
}


/* a file: every child's parent must be in it */

static void
test_load(void)
{
    int               fd;
    char              path[] = "/tmp/family_test_XXXXXX";
    char              a[4096], json[8192];
    bottle_policy_t  *p;

    fd = mkstemp(path);
    if (fd < 0) {
        ok(0, "mkstemp");
        return;
    }

    snprintf(json, sizeof(json), "{\"bottles\":[%s]}",
             bottle(a, sizeof(a), "kid", "\"parent\":\"alice\","
                    "\"routes\":[]"));
    if (write(fd, json, strlen(json)) != (ssize_t) strlen(json)) {
        ok(0, "write");
    }
    close(fd);

    ok(bottle_policy_load(&p, path, err, sizeof(err)) != 0
       && has(err, "bottle \"kid\": parent: no bottle \"alice\" in the "
              "policy"),
       "a file: a child whose parent is not in it refused");

    unlink(path);
}


int
main(void)
{
    test_parse();
    test_shapes();
    test_beyond();
    test_listing();
    test_huge();
    test_load();

    return done_testing();
}
