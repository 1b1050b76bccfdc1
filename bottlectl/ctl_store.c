/*
 * bottlectl's store connection: libbottle's bottle_store_connect() (TCP
 * or unix socket, 2 s, AUTH [user] password, SELECT db), then commands
 * with a 5 s timeout.  Every
 * failure to reach the store is one line naming the URL without its
 * credentials, and exit status 3.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
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


int
bottlectl_write_id(char *wid)
{
    int            i;
    FILE          *f;
    unsigned char  raw[BOTTLE_STORE_WRITE_ID_LEN / 2];

    static const char  hex[] = "0123456789abcdef";

    f = fopen("/dev/urandom", "rb");
    if (f == NULL) {
        return -1;
    }

    if (fread(raw, 1, sizeof(raw), f) != sizeof(raw)) {
        fclose(f);
        return -1;
    }

    fclose(f);

    for (i = 0; i < (int) sizeof(raw); i++) {
        wid[2 * i] = hex[raw[i] >> 4];
        wid[2 * i + 1] = hex[raw[i] & 0x0f];
    }

    wid[BOTTLE_STORE_WRITE_ID_LEN] = '\0';

    return 0;
}


/*
 * A write whose reply is lost may still be applied: Redis may have run it,
 * or may run it when it reads its socket again (a store stopped, not
 * gone).  The settle script, on a new connection, either finds the
 * write's record or voids its id, so that it never applies later: either
 * way the answer is the outcome.  Without an answer, the outcome is
 * unknown, and said so.
 */

int
bottlectl_write(bottlectl_t *ctl, const char *wid, redisReply **out,
    char **settled, int argc, const char **argv, const size_t *argvlen)
{
    int           rc;
    char          ttl[32], why[256], err[512];
    const char   *sargv[5];
    redisReply   *r;

    *out = NULL;
    *settled = NULL;

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        /* nothing was sent */
        return rc;
    }

    *out = redisCommandArgv(ctl->redis, argc, argv, argvlen);

    if (*out != NULL) {
        if ((*out)->type == REDIS_REPLY_ERROR
            && strncmp((*out)->str, "NOAUTH", 6) == 0)
        {
            /* refused before it ran */
            freeReplyObject(*out);
            *out = NULL;
            return bottlectl_unreachable(ctl, "authentication required");
        }

        return BOTTLECTL_OK;
    }

    snprintf(why, sizeof(why), "%s",
             ctl->redis->err ? ctl->redis->errstr : "connection lost");
    bottlectl_disconnect(ctl);

    snprintf(ttl, sizeof(ttl), "%d", BOTTLE_STORE_WRITE_TTL);

    sargv[0] = "EVAL";
    sargv[1] = bottle_store_settle_script;
    sargv[2] = "0";
    sargv[3] = wid;
    sargv[4] = ttl;

    if (bottle_store_connect(&ctl->redis, &ctl->url,
                             BOTTLECTL_CONNECT_TIMEOUT,
                             BOTTLECTL_COMMAND_TIMEOUT, err, sizeof(err))
        == 0)
    {
        r = redisCommandArgv(ctl->redis, 5, sargv, NULL);

        if (r && r->type == REDIS_REPLY_STRING) {
            *settled = strndup(r->str, r->len);
            freeReplyObject(r);

            if (*settled == NULL) {
                bottlectl_error("out of memory");
                return BOTTLECTL_UNKNOWN;
            }

            if (strcmp(*settled, "void") == 0) {
                bottlectl_error("cannot reach the store %s: %s; the write "
                                "was not applied, and never will be",
                                ctl->url_text, why);
            }

            return BOTTLECTL_OK;
        }

        if (r) {
            freeReplyObject(r);
        }
    }

    bottlectl_disconnect(ctl);

    bottlectl_error("outcome unknown: the store %s did not answer (%s) and "
                    "may still apply this write; 'bottlectl policy status "
                    "%s' tells whether it was applied (once that has an "
                    "answer, a write not applied never will be)",
                    ctl->url_text, why, wid);

    return BOTTLECTL_UNKNOWN;
}


const char *
bottlectl_str(const redisReply *r, size_t i)
{
    if (r->type != REDIS_REPLY_ARRAY || i >= r->elements
        || r->element[i]->type != REDIS_REPLY_STRING)
    {
        return "";
    }

    return r->element[i]->str;
}
