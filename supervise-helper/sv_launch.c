/*
 * launch-bottle (docs/supervise.md): the checks of a child bottle's
 * launch before it is queued, and the child's access compared with its
 * parent's live policy.
 *
 * Refused before anything is queued: a calling bottle that is itself a
 * child (depth 1), an agent its policy's children.agents does not list,
 * a bottle name not in the store, a named bottle granting a repo on a
 * forge this gateway has not connected, and (counted by the propose
 * script) a bottle at its children.max.  What the named bottles hold
 * beyond the parent's policy as the store holds it now (hosts, repos,
 * egress_tokens names, git_gate.actions.create patterns) is listed in the
 * proposal's args as "removed": the child is launched without it, and
 * the gateway refuses a child that has it (bottle_policy_check_family).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "bottle_forge.h"
#include "supervise.h"
#include "sv_tools_int.h"


#define SV_LAUNCH_BOTTLES_MAX   16      /* names in "bottles" */
#define SV_LAUNCH_REMOVED_MAX   256     /* elements listed as removed */


typedef struct {
    json_t                 *removed;    /* {"hosts", "repos", "env",
                                           "create"}: arrays */
    size_t                  n;          /* listed */
    size_t                  more;       /* beyond, not listed */
    int                     failed;     /* out of memory */
} sv_removed_t;


static int sv_launch_name_ok(const char *s);
static json_t *sv_launch_check_bottle(sv_tool_t *t, const char *name,
    json_t *forges, sv_removed_t *r);
static void sv_launch_removed(void *data, const char *field, long index,
    const char *what, const char *why);


/*
 * launch-bottle(agent, prompt, bottles, label): depth 1 (a child launches
 * nothing), a known agent and known bottles, their forges connected, and
 * at most children.max children pending or approved.
 */

json_t *
sv_launch_bottle(sv_tool_t *t)
{
    int           bad;
    char          why[160];
    size_t        i, j;
    json_t       *args, *bottles, *v, *forges, *refused;
    const char   *agent, *prompt, *label, *name;
    sv_removed_t  r;

    bad = 0;
    agent = sv_string(t->in, "agent", &bad);
    prompt = sv_string(t->in, "prompt", &bad);
    label = sv_string(t->in, "label", &bad);
    bottles = json_object_get(t->in, "bottles");

    if (bad || agent == NULL || agent[0] == '\0') {
        return sv_refuse(t, "agent (a non-empty string) is required; "
                         "prompt and label are strings");
    }

    if (!sv_launch_name_ok(agent)) {
        return sv_refuse(t, "agent: a name, 1-%d characters of A-Z a-z 0-9 "
                         ". _ : @ -", SV_BOTTLE_ID_MAX);
    }

    if (bottles && json_is_null(bottles)) {
        bottles = NULL;
    }

    if (bottles) {
        if (!json_is_array(bottles)) {
            return sv_refuse(t, "bottles: an array of bottle names");
        }

        if (json_array_size(bottles) > SV_LAUNCH_BOTTLES_MAX) {
            return sv_refuse(t, "bottles: %zu names, more than %d",
                             json_array_size(bottles),
                             SV_LAUNCH_BOTTLES_MAX);
        }

        json_array_foreach(bottles, i, v) {
            name = json_string_value(v);

            if (name == NULL || !sv_launch_name_ok(name)) {
                return sv_refuse(t, "bottles: an array of bottle names "
                                 "(1-%d characters of A-Z a-z 0-9 . _ : @ "
                                 "-)", SV_BOTTLE_ID_MAX);
            }

            for (j = 0; j < i; j++) {
                if (strcmp(name, json_string_value(json_array_get(bottles,
                                                                  j)))
                    == 0)
                {
                    return sv_refuse(t, "bottles: \"%s\" named twice",
                                     name);
                }
            }
        }
    }

    if (t->b.is_child) {
        return sv_refuse(t, "this bottle is itself a child: a child cannot "
                         "launch bottles (depth 1)");
    }

    /* the agents this bottle's children may run: its policy's word */

    for (i = 0; i < t->b.bottle->nchild_agents; i++) {
        if (strcmp(t->b.bottle->child_agents[i].data, agent) == 0) {
            break;
        }
    }

    if (t->b.bottle->nchild_agents == 0) {
        return sv_refuse(t, "unknown agent \"%s\": this bottle's policy "
                         "names no agent its children may run "
                         "(children.agents)", agent);
    }

    if (i == t->b.bottle->nchild_agents) {
        return sv_refuse(t, "unknown agent \"%s\": not one this bottle's "
                         "children may run (children.agents)", agent);
    }

    /* each named bottle: known, its forges connected, compared */

    memset(&r, 0, sizeof(r));
    r.removed = json_pack("{s:[], s:[], s:[], s:[]}", "hosts", "repos",
                          "env", "create");
    forges = json_object();

    if (r.removed == NULL || forges == NULL) {
        json_decref(r.removed);
        json_decref(forges);
        return NULL;
    }

    for (i = 0; bottles && i < json_array_size(bottles); i++) {
        name = json_string_value(json_array_get(bottles, i));

        refused = sv_launch_check_bottle(t, name, forges, &r);

        if (refused != NULL || r.failed) {
            json_decref(r.removed);
            json_decref(forges);
            return refused;
        }
    }

    json_decref(forges);

    args = json_pack("{s:s}", "agent", agent);
    if (args == NULL) {
        json_decref(r.removed);
        return sv_refuse(t, "agent: not UTF-8");
    }

    if (prompt) {
        json_object_set_new(args, "prompt", json_string(prompt));
    }

    if (label) {
        json_object_set_new(args, "label", json_string(label));
    }

    if (bottles) {
        json_object_set(args, "bottles", bottles);
    }

    if (r.n > 0) {
        if (r.more > 0) {
            json_object_set_new(r.removed, "more", json_integer(r.more));
        }

        json_object_set(args, "removed", r.removed);
    }

    json_decref(r.removed);

    snprintf(why, sizeof(why), "this bottle is at its children.max (%lld "
             "launch-bottle proposals pending or approved)",
             t->b.children_max);

    return sv_queue(t, BOTTLE_PROPOSAL_LAUNCH_BOTTLE, args,
                    t->b.children_max, why);
}


/* as a bottle's id: 1-SV_BOTTLE_ID_MAX of A-Z a-z 0-9 . _ : @ - */

static int
sv_launch_name_ok(const char *s)
{
    size_t  i;

    for (i = 0; s[i]; i++) {
        if (i == SV_BOTTLE_ID_MAX
            || !((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
                 || (s[i] >= '0' && s[i] <= '9') || strchr("._:@-", s[i])))
        {
            return 0;
        }
    }

    return i > 0;
}


/*
 * One named bottle: in the store, every forge of its repos connected
 * (forges: those found so far), and what it holds beyond the caller's
 * policy added to r.  NULL, or the refusal.
 */

static json_t *
sv_launch_check_bottle(sv_tool_t *t, const char *name, json_t *forges,
    sv_removed_t *r)
{
    int           rc, connected;
    char          err[1024];
    size_t        i;
    json_t       *refused;
    redisReply   *reply;
    sv_bottle_t   nb;
    const char   *forge;

    rc = sv_bottle_load(&nb, name, err, sizeof(err));

    if (rc == 1) {
        return sv_refuse(t, "unknown bottle \"%s\": not in the store", name);
    }

    if (rc != 0) {
        return sv_refuse(t, "bottle \"%s\": %s", name, err);
    }

    refused = NULL;

    for (i = 0; i < nb.bottle->nrepos; i++) {
        forge = nb.bottle->repos[i].forge;

        if (json_object_get(forges, forge)) {
            continue;
        }

        reply = sv_store_read(err, sizeof(err), "SISMEMBER %s %s",
                              BOTTLE_FORGES, forge);
        if (reply == NULL || reply->type != REDIS_REPLY_INTEGER) {
            if (reply) {
                freeReplyObject(reply);
            }

            refused = sv_refuse(t, "cannot read the connected forges from "
                                "the store");
            goto done;
        }

        connected = reply->integer != 0;
        freeReplyObject(reply);

        if (!connected) {
            /* the forge only: not another bottle's repo names */
            refused = sv_refuse(t, "bottle \"%s\" has a repo on forge %s, "
                                "which is not connected to this gateway: "
                                "ask for it with forge-connect (https://%s/) "
                                "first", name, forge, forge);
            goto done;
        }

        json_object_set_new(forges, forge, json_true());
    }

    if (bottle_child_beyond(nb.bottle, t->b.bottle, sv_launch_removed, r)
        < 0)
    {
        r->failed = 1;
    }

done:

    sv_bottle_free(&nb);

    return refused;
}


static void
sv_launch_removed(void *data, const char *field, long index,
    const char *what, const char *why)
{
    size_t         i;
    json_t        *a, *s;
    const char    *key;
    sv_removed_t  *r = data;

    (void) index;
    (void) why;

    key = strcmp(field, "routes") == 0 ? "hosts"
          : strcmp(field, "repos") == 0 ? "repos"
          : strcmp(field, "egress_tokens") == 0 ? "env" : "create";

    a = json_object_get(r->removed, key);

    /* the same element of two named bottles: once */

    for (i = 0; i < json_array_size(a); i++) {
        if (strcmp(json_string_value(json_array_get(a, i)), what) == 0) {
            return;
        }
    }

    if (r->n == SV_LAUNCH_REMOVED_MAX) {
        r->more++;
        return;
    }

    s = json_string(what);

    if (s == NULL || json_array_append_new(a, s) != 0) {
        r->failed = 1;
        return;
    }

    r->n++;
}
