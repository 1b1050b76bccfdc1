/*
 * A synchronous store connection (bottle_redis.h).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "bottle_redis.h"
#include "bottle_util.h"


static int bottle_redis_setup(redisContext *c, const bottle_store_url_t *url,
    char *err, size_t errlen);


int
bottle_redis_connect(redisContext **out, const bottle_store_url_t *url,
    int connect_s, int command_s, char *err, size_t errlen)
{
    redisContext    *c;
    struct timeval   tv;

    *out = NULL;

    tv.tv_sec = connect_s;
    tv.tv_usec = 0;

    if (url->is_unix) {
        c = redisConnectUnixWithTimeout(url->path, tv);

    } else {
        c = redisConnectWithTimeout(url->host, (int) url->port, tv);
    }

    if (c == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    tv.tv_sec = command_s;

    if (c->err || redisSetTimeout(c, tv) != REDIS_OK) {
        bottle_errf(err, errlen, "%s", c->err ? c->errstr
                                              : "cannot set a timeout");
        redisFree(c);
        return -1;
    }

    if (bottle_redis_setup(c, url, err, errlen) != 0) {
        redisFree(c);
        return -1;
    }

    *out = c;

    return 0;
}


/* AUTH and SELECT; the password never goes into a message */

static int
bottle_redis_setup(redisContext *c, const bottle_store_url_t *url,
    char *err, size_t errlen)
{
    int           argc, rc;
    char          db[16];
    const char   *argv[3];
    redisReply   *r;

    if (url->has_password) {
        argc = 0;
        argv[argc++] = "AUTH";
        if (url->user[0]) {
            argv[argc++] = url->user;
        }
        argv[argc++] = url->password;

        r = redisCommandArgv(c, argc, argv, NULL);
        if (r == NULL) {
            return bottle_errf(err, errlen, "%s",
                               c->err ? c->errstr : "connection lost");
        }

        /* Redis's reason ("WRONGPASS ...") never repeats the password */

        rc = 0;
        if (r->type == REDIS_REPLY_ERROR) {
            rc = bottle_errf(err, errlen, "authentication failed: %s",
                             r->str);
        }

        freeReplyObject(r);

        if (rc != 0) {
            return rc;
        }
    }

    if (url->db != 0) {
        snprintf(db, sizeof(db), "%u", url->db);
        argv[0] = "SELECT";
        argv[1] = db;

        r = redisCommandArgv(c, 2, argv, NULL);
        if (r == NULL) {
            return bottle_errf(err, errlen, "%s",
                               c->err ? c->errstr : "connection lost");
        }

        rc = r->type == REDIS_REPLY_ERROR ? -1 : 0;
        freeReplyObject(r);

        if (rc != 0) {
            return bottle_errf(err, errlen, "cannot select the database");
        }
    }

    return 0;
}
