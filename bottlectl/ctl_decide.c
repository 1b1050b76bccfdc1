/*
 * bottlectl approve|deny ID [--note TEXT] and modify ID FILE [--note
 * TEXT]: one answer to a proposal (docs/control-plane.md, "Proposals and
 * decisions").
 *
 * The answer itself is libbottle's (bottle_decision.h, shared with the
 * operator page): the change computed, checked and diffed, the decide
 * script run, a later answer journalled as decision.late.  Here: the
 * arguments, modify's FILE (a route, or an add-repo's repo grant), the
 * lines and the exit status (4 for 409).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottle_decision.h"
#include "bottlectl.h"


static int bottlectl_answer(bottlectl_t *ctl, const char *action, int argc,
    char **argv);
static json_t *bottlectl_answer_grant(const char *file);


int
bottlectl_approve(bottlectl_t *ctl, int argc, char **argv)
{
    return bottlectl_answer(ctl, "approve", argc, argv);
}


int
bottlectl_deny(bottlectl_t *ctl, int argc, char **argv)
{
    return bottlectl_answer(ctl, "deny", argc, argv);
}


int
bottlectl_modify(bottlectl_t *ctl, int argc, char **argv)
{
    return bottlectl_answer(ctl, "modify", argc, argv);
}


static int
bottlectl_answer(bottlectl_t *ctl, const char *action, int argc, char **argv)
{
    int                        rc, i, modify, npos;
    const char                *pos[2], *note;
    json_t                    *grant;
    bottle_decision_req_t      req;
    bottle_decision_result_t   res;

    modify = strcmp(action, "modify") == 0;
    npos = 0;
    note = NULL;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--note") == 0 && i + 1 < argc) {
            note = argv[++i];

        } else if (strncmp(argv[i], "--note=", 7) == 0) {
            note = argv[i] + 7;

        } else if (npos < 2 && (argv[i][0] != '-' || argv[i][1] == '\0')) {
            pos[npos++] = argv[i];

        } else {
            npos = 3;
            break;
        }
    }

    if (npos != 1 + modify) {
        return bottlectl_usage(modify ? "modify ID FILE|- [--note TEXT]"
                                      : strcmp(action, "approve") == 0
                                        ? "approve ID [--note TEXT]"
                                        : "deny ID [--note TEXT]");
    }

    if (!bottle_proposal_id_valid(pos[0])) {
        bottlectl_error("no proposal \"%s\"", pos[0]);
        return BOTTLECTL_REFUSED;
    }

    if (note && strlen(note) > BOTTLE_PROPOSAL_TEXT_MAX) {
        bottlectl_error("--note: longer than %d bytes",
                        BOTTLE_PROPOSAL_TEXT_MAX);
        return BOTTLECTL_USAGE;
    }

    grant = NULL;

    if (modify) {
        grant = bottlectl_answer_grant(pos[1]);
        if (grant == NULL) {
            return BOTTLECTL_REFUSED;
        }
    }

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        json_decref(grant);
        return rc;
    }

    memset(&req, 0, sizeof(req));
    req.proposal = pos[0];
    req.action = action;
    req.notes = note;
    req.grant = grant;
    req.operator_name = bottlectl_operator();
    req.producer = "bottlectl";

    bottle_decision_answer(&res, ctl->redis, &req);

    if (res.warning[0]) {
        bottlectl_error("warning: %s", res.warning);
    }

    rc = bottlectl_decision_status(ctl, &res);

    if (rc == BOTTLECTL_OK) {
        if (res.version) {
            printf("%s %s: bottle %s version %lld\n", req.proposal,
                   res.state, res.bottle, res.version);

        } else {
            printf("%s %s\n", req.proposal, res.state);
        }
    }

    bottle_decision_result_free(&res);
    json_decref(grant);

    return rc;
}


/* modify's FILE: one JSON object, a route (policy.md), a repo grant, a
 * forge grant or a launch spec (bottle_decision.h) */

static json_t *
bottlectl_answer_grant(const char *file)
{
    char          *text;
    size_t         len;
    json_t        *o;
    json_error_t   jerr;

    if (bottlectl_read(&text, &len, file) != 0) {
        return NULL;
    }

    o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);

    if (o == NULL) {
        bottlectl_error("%s: invalid JSON: %s", file, jerr.text);
        return NULL;
    }

    /* which grant it must be is the proposal's kind's (the lib's check) */

    if (!json_is_object(o)) {
        bottlectl_error("%s: not a JSON object (a route, a repo grant, a "
                        "forge grant or a launch spec)", file);
        json_decref(o);
        return NULL;
    }

    return o;
}
