/*
 * launch-bottle (docs/supervise.md): the checks of a child bottle's
 * launch before it is queued.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <string.h>

#include "supervise.h"
#include "sv_tools_int.h"


/*
 * launch-bottle: depth 1 (a child launches nothing), and at most
 * children.max children pending or approved.
 */

json_t *
sv_launch_bottle(sv_tool_t *t)
{
    int          bad;
    char         why[160];
    size_t       i;
    json_t      *args, *bottles, *v;
    const char  *agent, *prompt, *label;

    bad = 0;
    agent = sv_string(t->in, "agent", &bad);
    prompt = sv_string(t->in, "prompt", &bad);
    label = sv_string(t->in, "label", &bad);
    bottles = json_object_get(t->in, "bottles");

    if (bad || agent == NULL || agent[0] == '\0') {
        return sv_refuse(t, "agent (a non-empty string) is required; "
                         "prompt and label are strings");
    }

    if (bottles && !json_is_null(bottles)) {
        if (!json_is_array(bottles)) {
            return sv_refuse(t, "bottles: an array of bottle names");
        }

        json_array_foreach(bottles, i, v) {
            if (!json_is_string(v)) {
                return sv_refuse(t, "bottles: an array of bottle names");
            }
        }
    }

    if (t->b.is_child) {
        return sv_refuse(t, "this bottle is itself a child: a child cannot "
                         "launch bottles (depth 1)");
    }

    args = json_pack("{s:s}", "agent", agent);
    if (args == NULL) {
        return sv_refuse(t, "agent: not UTF-8");
    }

    if (prompt) {
        json_object_set_new(args, "prompt", json_string(prompt));
    }

    if (label) {
        json_object_set_new(args, "label", json_string(label));
    }

    if (bottles && !json_is_null(bottles)) {
        json_object_set(args, "bottles", bottles);
    }

    snprintf(why, sizeof(why), "this bottle is at its children.max (%lld "
             "launch-bottle proposals pending or approved)",
             t->b.children_max);

    return sv_queue(t, BOTTLE_PROPOSAL_LAUNCH_BOTTLE, args,
                    t->b.children_max, why);
}
