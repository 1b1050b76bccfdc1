/*
 * bottlectl's store connection: libbottle's bottle_store_connect() (TCP
 * or unix socket, 2 s, AUTH [user] password, SELECT db), then commands
 * with a 5 s timeout.  Every
 * failure to reach the store is one line naming the URL without its
 * credentials, and exit status 3.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "bottlectl.h"




int
bottlectl_connect(bottlectl_t *ctl)
{
    char  err[512];

    if (ctl->redis) {
        return BOTTLECTL_OK;
    }

    if (bottle_store_connect(&ctl->redis, &ctl->url,
                             BOTTLECTL_CONNECT_TIMEOUT,
                             BOTTLECTL_COMMAND_TIMEOUT, err, sizeof(err))
        != 0)
    {
        return bottlectl_unreachable(ctl, err);
    }

    return BOTTLECTL_OK;
}


void
bottlectl_disconnect(bottlectl_t *ctl)
{
    if (ctl->redis) {
        redisFree(ctl->redis);
        ctl->redis = NULL;
    }
}


int
bottlectl_command(bottlectl_t *ctl, redisReply **out, int argc,
    const char **argv, const size_t *argvlen)
{
    int  rc;

    *out = NULL;

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    *out = redisCommandArgv(ctl->redis, argc, argv, argvlen);
    if (*out == NULL) {
        return bottlectl_lost(ctl);
    }

    /* an unauthenticated connection: the store is not reachable for us */

    if ((*out)->type == REDIS_REPLY_ERROR
        && strncmp((*out)->str, "NOAUTH", 6) == 0)
    {
        freeReplyObject(*out);
        *out = NULL;
        return bottlectl_unreachable(ctl, "authentication required");
    }

    return BOTTLECTL_OK;
}


int
bottlectl_lost(bottlectl_t *ctl)
{
    const char  *why;

    why = "connection lost";

    if (ctl->redis && ctl->redis->err) {
        why = ctl->redis->errstr;
    }

    return bottlectl_unreachable(ctl, why);
}


int
bottlectl_unreachable(bottlectl_t *ctl, const char *why)
{
    bottlectl_error("cannot reach the store %s: %s", ctl->url_text, why);
    bottlectl_disconnect(ctl);

    return BOTTLECTL_UNREACHABLE;
}
