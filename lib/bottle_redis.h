/*
 * A synchronous hiredis connection to the control plane's store, as
 * bottlectl and the sidecars open it: connect (TCP or unix socket) with a
 * timeout, AUTH [user] password, SELECT db, then a command timeout.
 *
 * libbottle's only hiredis code with bottle_proposal_decide.c: the nginx
 * module never links these objects (it talks to Redis on its own event
 * loop), the others link -lhiredis.
 */

#ifndef BOTTLE_REDIS_H
#define BOTTLE_REDIS_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "bottle_store.h"


/*
 * A new connection in *out, set up as above.  0, or -1 and the reason
 * in err (never the password; the caller names the URL).
 */
int bottle_redis_connect(redisContext **out, const bottle_store_url_t *url,
    int connect_s, int command_s, char *err, size_t errlen);


#endif /* BOTTLE_REDIS_H */
