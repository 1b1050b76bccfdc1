/*
 * What supervise asks a connected forge before it queues a proposal
 * (docs/supervise.md, "Asked of the forge first"): a create-repo the forge
 * could never make (the repo exists; an owner the forge token cannot
 * create under) is refused at once, before an operator sees a card.
 * Blocking calls (libcurl, bounded by BOTTLE_FORGE_API_TIMEOUT) on the
 * tool call's thread of the HTTP pool, as a create-repo the bottle's
 * policy allows makes its repo (sv_create_allowed()).
 */

#include <stdio.h>

#include <hiredis/hiredis.h>

#include "supervise.h"
#include "bottle_forge.h"
#include "bottle_forge_client.h"


/*
 * 0: nothing against it (or the forge could not be asked), queue it;
 * else refused, err says why (the forge's answer).
 */

int
sv_forge_create_check(const bottle_repo_t *repo, char *err, size_t errlen)
{
    int            rc, lost;
    char           why[1024];
    redisContext  *c;

    c = sv_store(err, errlen);
    if (c == NULL) {
        return -1;
    }

    rc = bottle_forge_create_check(c, repo, &lost, why, sizeof(why));

    if (lost) {
        sv_store_lost();
    }

    if (rc < 0) {
        /*
         * The forge could not be asked (down, a bad token): the card is
         * queued as before, the operator's Create meets the same error.
         */

        sv_log("create-repo %s/%s/%s: cannot ask the forge, queued "
               "unchecked: %s", repo->forge, repo->owner, repo->repo, why);
        return 0;
    }

    if (rc == 0) {
        return 0;
    }

    snprintf(err, errlen, "the forge cannot create %s/%s/%s: %s",
             repo->forge, repo->owner, repo->repo, why);

    return -1;
}
