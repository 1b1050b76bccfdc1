/*
 * Unit tests for repo grants and forges (lib/bottle_forge.c) and the
 * policy's `repos` (lib/bottle_policy_bottle.c, bottle_find_repo).
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

    return done_testing();
}
