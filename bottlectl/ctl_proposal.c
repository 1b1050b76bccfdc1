/*
 * What propose/check (ctl_propose.c), approve/deny/modify (ctl_decide.c)
 * and the forge commands (ctl_forge.c) share about a proposal's answer,
 * below all of them: the egress change an approval would make
 * (bottlectl_change()), and the lib's answer status as an exit status
 * (bottlectl_decision_status()).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottle_decision.h"
#include "bottlectl.h"


/* the lib's status as an exit status, after its line */

int
bottlectl_decision_status(bottlectl_t *ctl,
    const bottle_decision_result_t *res)
{
    switch (res->status) {

    case BOTTLE_DECISION_OK:
        return BOTTLECTL_OK;

    case BOTTLE_DECISION_ANSWERED:
        bottlectl_error("%s", res->err);
        return BOTTLECTL_ANSWERED;

    case BOTTLE_DECISION_UNREACHABLE:
        bottlectl_error("cannot reach the store %s: %s", ctl->url_text,
                        res->err);
        bottlectl_disconnect(ctl);
        return BOTTLECTL_UNREACHABLE;

    default:
        bottlectl_error("%s", res->err);
        return BOTTLECTL_REFUSED;
    }
}


int
bottlectl_change(bottlectl_t *ctl, const char *bottle,
    bottle_proposal_kind_e kind, const json_t *route,
    bottlectl_change_t *chg)
{
    int                       rc;
    char                      err[BOTTLE_DECISION_ERR_LEN];
    bottle_decision_status_e  status;

    memset(chg, 0, sizeof(*chg));

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (bottle_decision_change(chg, ctl->redis, bottle, kind, route, &status,
                               err, sizeof(err))
        == 0)
    {
        return BOTTLECTL_OK;
    }

    if (status == BOTTLE_DECISION_UNREACHABLE) {
        bottlectl_error("cannot reach the store %s: %s", ctl->url_text, err);
        bottlectl_disconnect(ctl);
        return BOTTLECTL_UNREACHABLE;
    }

    bottlectl_error("%s", err);

    return BOTTLECTL_REFUSED;
}


void
bottlectl_change_free(bottlectl_change_t *chg)
{
    bottle_decision_change_free(chg);
}
