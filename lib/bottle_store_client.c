/*
 * A synchronous hiredis connection to the store (bottle_store.h, "over a
 * hiredis connection"): connect, timeouts, AUTH and SELECT, as bottlectl
 * and the helpers all need them.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "bottle_store.h"
#include "bottle_util.h"


static int bottle_store_setup(redisContext *c, const bottle_store_url_t *u,
    char *err, size_t errlen);


int
bottle_store_connect(redisContext **out, const bottle_store_url_t *u,
    int connect_s, int command_s, char *err, size_t errlen)
{
    redisContext    *c;
    struct timeval   tv;

    *out = NULL;

    tv.tv_sec = connect_s;
    tv.tv_usec = 0;

    c = u->is_unix ? redisConnectUnixWithTimeout(u->path, tv)
                   : redisConnectWithTimeout(u->host, (int) u->port, tv);

    if (c == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    if (c->err) {
        bottle_errf(err, errlen, "%s", c->errstr);
        goto failed;
    }

    tv.tv_sec = command_s;

    if (redisSetTimeout(c, tv) != REDIS_OK) {
        bottle_errf(err, errlen, "%s", c->err ? c->errstr : "timeout");
        goto failed;
    }

    if (bottle_store_setup(c, u, err, errlen) != 0) {
        goto failed;
    }

    *out = c;

    return 0;

failed:

    redisFree(c);

    return -1;
}


/* AUTH and SELECT; the password never goes into a message */

static int
bottle_store_setup(redisContext *c, const bottle_store_url_t *u, char *err,
    size_t errlen)
{
    int           argc, rc;
    char          db[16];
    const char   *argv[3];
    redisReply   *r;

    if (u->has_password) {
        argc = 0;
        argv[argc++] = "AUTH";
        if (u->user[0]) {
            argv[argc++] = u->user;
        }
        argv[argc++] = u->password;

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

    if (u->db == 0) {
        return 0;
    }

    snprintf(db, sizeof(db), "%u", u->db);
    argv[0] = "SELECT";
    argv[1] = db;

    r = redisCommandArgv(c, 2, argv, NULL);
    if (r == NULL) {
        return bottle_errf(err, errlen, "%s",
                           c->err ? c->errstr : "connection lost");
    }

    rc = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        rc = bottle_errf(err, errlen, "cannot select the database");
    }

    freeReplyObject(r);

    return rc;
}
