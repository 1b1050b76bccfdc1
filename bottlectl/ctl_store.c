/*
 * bottlectl's store connection: connect (TCP or unix socket, 2 s), AUTH
 * [user] password, SELECT db, then commands with a 5 s timeout.  Every
 * failure to reach the store is one line naming the URL without its
 * credentials, and exit status 3.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "bottlectl.h"


static int bottlectl_unreachable(bottlectl_t *ctl, const char *why);
static int bottlectl_setup(bottlectl_t *ctl);


int
bottlectl_connect(bottlectl_t *ctl)
{
    struct timeval  tv;

    if (ctl->redis) {
        return BOTTLECTL_OK;
    }

    tv.tv_sec = BOTTLECTL_CONNECT_TIMEOUT;
    tv.tv_usec = 0;

    if (ctl->url.is_unix) {
        ctl->redis = redisConnectUnixWithTimeout(ctl->url.path, tv);

    } else {
        ctl->redis = redisConnectWithTimeout(ctl->url.host,
                                             (int) ctl->url.port, tv);
    }

    if (ctl->redis == NULL) {
        return bottlectl_unreachable(ctl, "out of memory");
    }

    if (ctl->redis->err) {
        return bottlectl_lost(ctl);
    }

    tv.tv_sec = BOTTLECTL_COMMAND_TIMEOUT;

    if (redisSetTimeout(ctl->redis, tv) != REDIS_OK) {
        return bottlectl_lost(ctl);
    }

    return bottlectl_setup(ctl);
}


/* AUTH and SELECT; the password never goes into a message */

static int
bottlectl_setup(bottlectl_t *ctl)
{
    int           argc;
    char          db[16], why[256];
    const char   *argv[3], *what;
    redisReply   *r;

    what = NULL;

    if (ctl->url.has_password) {
        argc = 0;
        argv[argc++] = "AUTH";
        if (ctl->url.user[0]) {
            argv[argc++] = ctl->url.user;
        }
        argv[argc++] = ctl->url.password;

        r = redisCommandArgv(ctl->redis, argc, argv, NULL);
        if (r == NULL) {
            return bottlectl_lost(ctl);
        }

        /* Redis's reason ("WRONGPASS ...") never repeats the password */

        if (r->type == REDIS_REPLY_ERROR) {
            snprintf(why, sizeof(why), "authentication failed: %s", r->str);
            what = why;
        }

        freeReplyObject(r);
    }

    if (what == NULL && ctl->url.db != 0) {
        snprintf(db, sizeof(db), "%u", ctl->url.db);
        argv[0] = "SELECT";
        argv[1] = db;

        r = redisCommandArgv(ctl->redis, 2, argv, NULL);
        if (r == NULL) {
            return bottlectl_lost(ctl);
        }

        if (r->type == REDIS_REPLY_ERROR) {
            what = "cannot select the database";
        }

        freeReplyObject(r);
    }

    if (what) {
        return bottlectl_unreachable(ctl, what);
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


static int
bottlectl_unreachable(bottlectl_t *ctl, const char *why)
{
    bottlectl_error("cannot reach the store %s: %s", ctl->url_text, why);
    bottlectl_disconnect(ctl);

    return BOTTLECTL_UNREACHABLE;
}
