/*
 * Unit tests for repo grants and forges (lib/bottle_forge.c) and the
 * policy's `repos` (lib/bottle_policy_bottle.c, bottle_find_repo); the
 * patterns of git_gate.actions.create (bottle_repo_pattern_parse,
 * bottle_create_allowed).
 */

#include <string.h>

#include "tap.h"
#include "bottle_forge.h"
#include "bottle_policy.h"


static int
parse(bottle_repo_t *r, const char *s, int with_mode)
{
    char  err[256];

    return bottle_repo_parse(r, s, strlen(s), with_mode, err, sizeof(err));
}


static int
pattern(bottle_repo_pattern_t *pt, const char *s, char *err, size_t errlen)
{
    return bottle_repo_pattern_parse(pt, s, strlen(s), err, errlen);
}


/* 1 if the pattern allows creating repo s (public or not) */
static int
allows(const char *pat, const char *s, int public_repo)
{
    char                   err[256];
    bottle_repo_t          r;
    bottle_repo_pattern_t  pt;

    if (pattern(&pt, pat, err, sizeof(err)) != 0 || parse(&r, s, 0) != 0) {
        return -1;
    }

    return bottle_repo_pattern_match(&pt, &r, public_repo);
}


static bottle_policy_t *
load_gg(const char *git_gate, char *err, size_t errlen)
{
    char              json[1024];
    bottle_policy_t  *p;

    snprintf(json, sizeof(json), "{\"bottles\": [{\"id\": \"a\", "
             "\"token\": \"aaaaaaaaaaaaaaaa\", \"routes\": [], "
             "\"git_gate\": %s}]}", git_gate);

    if (bottle_policy_parse(&p, json, strlen(json), "t", err, errlen) != 0) {
        return NULL;
    }

    return p;
}


static bottle_policy_t *
load(const char *repos, char *err, size_t errlen)
{
    char              json[512];
    bottle_policy_t  *p;

    snprintf(json, sizeof(json), "{\"bottles\": [{\"id\": \"a\", "
             "\"token\": \"aaaaaaaaaaaaaaaa\", \"routes\": [], "
             "\"repos\": %s}]}", repos);

    if (bottle_policy_parse(&p, json, strlen(json), "t", err, errlen) != 0) {
        return NULL;
    }

    return p;
}


static void
test_patterns(void)
{
    char                          err[512];
    size_t                        i;
    bottle_repo_t                 r;
    bottle_policy_t              *p;
    const bottle_t               *b;
    bottle_repo_pattern_t         pt;
    const bottle_repo_pattern_t  *by;

    static const struct {
        const char  *pattern;
        const char  *why;
    } bad[] = {
        { "", "a pattern is" },
        { "github.com/o", "a pattern is" },
        { "github.com/o/r/x", "a pattern is" },
        { "github.com/*/r", "owner of a pattern is literal" },
        { "github.com/o*/r", "owner of a pattern is literal" },
        { "github.com/o/a*b", "'*' only as" },
        { "github.com/o/**", "'*' only as" },
        { "github.com/o/*x", "'*' only as" },
        { "github.com/o/r:write", "only mode of a pattern" },
        { "github.com/o/r:", "only mode of a pattern" },
        { "github.com/o/*:publicx", "only mode of a pattern" },
        { "git hub.com/o/r", "not a forge's host name" },
        { "*.github.com/o/r", "not a forge's host name" },
        { "github.com/o/.x*", "prefix of a name" },
        { "github.com/o/.git", "name of a repo" },
        { "github.com/o/r r", "name of a repo" },
        { NULL, NULL }
    };

    for (i = 0; bad[i].pattern; i++) {
        err[0] = '\0';
        ok(pattern(&pt, bad[i].pattern, err, sizeof(err)) == -1
           && strstr(err, bad[i].why) != NULL,
           "pattern \"%s\" refused: %s", bad[i].pattern, err);
    }

    ok(pattern(&pt, "GitHub.com:8443/Me/agent-*:public", err, sizeof(err))
       == 0 && strcmp(pt.forge, "github.com:8443") == 0
       && strcmp(pt.owner, "Me") == 0 && strcmp(pt.name, "agent-") == 0
       && pt.prefix && pt.public_ok,
       "a prefix pattern with a port and :public");
    ok(pattern(&pt, "github.com/o/*", err, sizeof(err)) == 0
       && pt.prefix && pt.name[0] == '\0' && !pt.public_ok, "any name");
    ok(pattern(&pt, "github.com/o/r.git", err, sizeof(err)) == 0
       && !pt.prefix && strcmp(pt.name, "r") == 0, "a literal, .git dropped");

    ok(allows("github.com/o/agent-*", "github.com/o/agent-x", 0) == 1,
       "a prefix matches");
    ok(allows("github.com/o/agent-*", "github.com/O/Agent-X", 0) == 1,
       "owner and name case-insensitively");
    ok(allows("github.com/o/agent-*", "github.com/o/agent-", 0) == 1,
       "the prefix alone matches");
    ok(allows("github.com/o/agent-*", "github.com/o/agent", 0) == 0,
       "a shorter name does not");
    ok(allows("github.com/o/agent-*", "github.com/other/agent-x", 0) == 0,
       "another owner does not");
    ok(allows("github.com/o/agent-*", "gitea.test/o/agent-x", 0) == 0,
       "another forge does not");
    ok(allows("github.com/o/agent-*", "github.com/o/agent-x", 1) == 0,
       "public without :public does not");
    ok(allows("github.com/o/agent-*:public", "github.com/o/agent-x", 1) == 1
       && allows("github.com/o/agent-*:public", "github.com/o/agent-x", 0)
          == 1, ":public allows public and private");
    ok(allows("github.com/o/r", "github.com/o/r", 0) == 1
       && allows("github.com/o/r", "github.com/o/r2", 0) == 0
       && allows("github.com/o/r", "github.com/o/R.git", 0) == 1,
       "a literal name matches itself only");
    ok(allows("github.com/o/*", "github.com/o/anything", 0) == 1, "'*'");

    p = load_gg("{\"actions\": {\"create\": [\"github.com/o/a-*\", "
                "\"github.com/team/*:public\"]}}", err, sizeof(err));
    ok(p != NULL, "a policy with git_gate loads: %s", p ? "" : err);

    if (p != NULL) {
        b = bottle_policy_at(p, 0);
        ok(b->ncreate == 2, "two patterns");
        parse(&r, "github.com/team/x", 0);
        by = bottle_create_allowed(b, &r, 1);
        ok(by == &b->create[1], "the pattern that allows it");
        parse(&r, "github.com/o/b-x", 0);
        ok(bottle_create_allowed(b, &r, 0) == NULL, "none allows it");
        bottle_policy_free(p);
    }

    p = load_gg("{}", err, sizeof(err));
    ok(p != NULL && bottle_policy_at(p, 0)->ncreate == 0,
       "an empty git_gate");
    bottle_policy_free(p);
    p = load_gg("{\"actions\": {\"create\": []}}", err, sizeof(err));
    ok(p != NULL && bottle_policy_at(p, 0)->ncreate == 0,
       "an empty create list");
    bottle_policy_free(p);

    p = load_gg("{\"actions\": {\"push\": true}}", err, sizeof(err));
    ok(p == NULL && strstr(err, "bottle \"a\": git_gate.actions: unknown "
                           "field \"push\"") != NULL,
       "an unknown action refused: %s", err);
    p = load_gg("{\"create\": []}", err, sizeof(err));
    ok(p == NULL && strstr(err, "git_gate: unknown field \"create\"")
                    != NULL, "create outside actions refused: %s", err);
    p = load_gg("{\"actions\": {\"create\": [\"github.com/o/x\", "
                "\"github.com/*/y\"]}}", err, sizeof(err));
    ok(p == NULL && strstr(err, "git_gate.actions.create[1]: "
                           "\"github.com/*/y\": the owner") != NULL,
       "a bad pattern refused with its path: %s", err);
}


int
main(void)
{
    bottle_repo_t           r, w;
    char                    err[512];
    bottle_policy_t        *p;
    const bottle_t         *b;
    const bottle_repo_t    *g;
    size_t                  i;

    static const char  *bad[] = {
        "", "github.com", "github.com/o", "github.com/o/", "/o/r",
        "github.com//r", "github.com/o/r/x", "github.com/o/r:read",
        "github.com/o/r:", "github.com/o/r:writex", "github.com/.o/r",
        "github.com/o/..", "github.com/o/.", "github.com/o/.git",
        "github.com/o/r r", "git hub.com/o/r", "-gh.com/o/r", "gh-.com/o/r",
        "gh..com/o/r", "gh.com./o/r", "gh.com:0/o/r", "gh.com:65536/o/r",
        "gh.com:/o/r", "gh.com:x/o/r", "github.com/o%2f/r", "github.com/o/r\n",
        "github.com/o/r?x", "github.com/o/r#x", "github.com/\xc3\xa9/r",
        NULL
    };

    ok(parse(&r, "github.com/octo/hello", 1) == 0
       && strcmp(r.forge, "github.com") == 0 && strcmp(r.owner, "octo") == 0
       && strcmp(r.repo, "hello") == 0 && r.write == 0, "a read grant");

    ok(parse(&r, "GitHub.COM/Octo/hello.git:write", 1) == 0
       && strcmp(r.forge, "github.com") == 0 && strcmp(r.owner, "Octo") == 0
       && strcmp(r.repo, "hello") == 0 && r.write == 1,
       "a write grant: forge lowercased, .git dropped, owner kept");

    ok(parse(&r, "127.0.0.1:3000/o/r", 1) == 0
       && strcmp(r.forge, "127.0.0.1:3000") == 0, "a forge with a port");

    ok(parse(&r, "forge.test/o/r.git.git", 1) == 0
       && strcmp(r.repo, "r.git") == 0, "one .git dropped");

    ok(parse(&r, "github.com/o/r:write", 0) != 0, "no mode where none is "
       "taken");

    for (i = 0; bad[i]; i++) {
        ok(parse(&r, bad[i], 1) != 0, "refused: \"%s\"", bad[i]);
    }

    ok(bottle_repo_parse(&r, "github.com/o/r\0x", 16, 1, err, sizeof(err))
       != 0, "a NUL byte is refused");

    ok(parse(&r, "github.com/O/R", 1) == 0 && parse(&w, "github.com/o/r", 1)
       == 0 && bottle_repo_same(&r, &w), "owner and repo compare "
       "case-insensitively");

    ok(parse(&w, "gitea.test/o/r", 1) == 0 && !bottle_repo_same(&r, &w),
       "another forge is another repo");

    ok(bottle_forge_other_kind("gitlab.com") != NULL
       && strcmp(bottle_forge_other_kind("GitLab.com:443"), "GitLab") == 0,
       "gitlab.com runs GitLab");
    ok(bottle_forge_other_kind("github.com") == NULL
       && bottle_forge_other_kind("gitea.example") == NULL,
       "github.com and an unknown host are not refused by kind");
    ok(bottle_forge_kind_valid("gitea") == 0
       && bottle_forge_kind_valid("github") == 0
       && bottle_forge_kind_valid("gitlab") != 0, "the kinds served");

    p = load("[\"github.com/o/r\", \"github.com/O/R:write\", "
             "\"gitea.test/x/y\"]", err, sizeof(err));
    ok(p != NULL, "a policy with repos loads: %s", p ? "" : err);

    if (p != NULL) {
        b = bottle_policy_at(p, 0);
        ok(b->nrepos == 3, "three grants");
        parse(&w, "github.com/o/r", 1);
        g = bottle_find_repo(b, &w);
        ok(g != NULL && g->write, "the write grant of a repo granted twice");
        parse(&w, "gitea.test/x/y", 1);
        g = bottle_find_repo(b, &w);
        ok(g != NULL && !g->write, "a read grant");
        parse(&w, "gitea.test/x/z", 1);
        ok(bottle_find_repo(b, &w) == NULL, "no grant");
        bottle_policy_free(p);
    }

    p = load("[\"github.com/o\"]", err, sizeof(err));
    ok(p == NULL && strstr(err, "repos[0]") != NULL
       && strstr(err, "<forge>/<owner>/<repo>[:write]") != NULL,
       "a bad grant is refused with its path: %s", err);

    test_patterns();

    return done_testing();
}
