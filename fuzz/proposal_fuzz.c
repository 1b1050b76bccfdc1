/*
 * libFuzzer target for a stored proposal, the agent's words, as the
 * operator's side reads it (bottle_proposal.c, bottle_decision.c): parsed
 * and checked, summarised for a listing, its args applied to a fixed
 * bottle as an approval would (an egress route, an add-repo grant), and
 * checked as a grant against itself.  See docs/fuzzing.md.  Beyond "no
 * crash, no sanitizer report" it checks: the summary is printable ASCII
 * within its buffer, an applied change is an object whose routes or
 * repos are arrays, and a repo grant applied is stored canonically
 * (parses again, lowercase forge).
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_decision.h"
#include "bottle_forge.h"
#include "bottle_proposal.h"
#include "fuzz.h"


static const char  bottle_json[] =
    "{\"id\":\"f\",\"token_sha256\":\"00\",\"canary\":\"CANARY-0\","
    "\"egress_tokens\":{\"K\":\"v\"},\"repos\":[\"git.example/a/b:write\"],"
    "\"routes\":[{\"host\":\"a.example\"},{\"host\":\"B.example.\"}]}";


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                     changed;
    char                    err[512], summary[96], e[256];
    size_t                  i;
    json_t                 *p, *b, *out, *args, *repos;
    const char             *s;
    bottle_repo_t           r;
    bottle_proposal_kind_e  kind;

    p = bottle_proposal_parse((const char *) data, size, &kind, err,
                              sizeof(err));
    if (p == NULL) {
        return 0;
    }

    memset(summary, 'x', sizeof(summary));
    bottle_proposal_summary(summary, sizeof(summary), p);
    CHECK(memchr(summary, '\0', sizeof(summary)) != NULL);

    for (i = 0; summary[i]; i++) {
        CHECK(summary[i] >= 0x20 && summary[i] < 0x7f);
    }

    args = json_object_get(p, "args");

    (void) bottle_decision_grant_check(kind, p, args, err, sizeof(err));

    if (bottle_proposal_changes_policy(kind)) {
        b = json_loads(bottle_json, 0, NULL);
        CHECK(b != NULL);

        out = bottle_proposal_apply(b, kind, args, &changed, err,
                                    sizeof(err));
        if (out) {
            CHECK(json_is_object(out));
            CHECK(json_is_array(json_object_get(out, "routes")));

            repos = json_object_get(out, "repos");
            CHECK(json_is_array(repos));

            for (i = 0; kind == BOTTLE_PROPOSAL_ADD_REPO
                        && i < json_array_size(repos); i++)
            {
                s = json_string_value(json_array_get(repos, i));
                CHECK(s != NULL);
                CHECK(bottle_repo_parse(&r, s, strlen(s), 1, e, sizeof(e))
                      == 0);
            }

            free(bottle_proposal_pretty(out));
            json_decref(out);
        }

        json_decref(b);
    }

    json_decref(p);

    return 0;
}
