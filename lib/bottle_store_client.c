/*
 * A synchronous hiredis connection to the store (bottle_store.h, "over a
 * hiredis connection"): connect, timeouts, AUTH and SELECT, as bottlectl
 * and the helpers all need them.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "bottle_store.h"
#include "bottle_util.h"


static int bottle_store_setup(redisContext *c, const bottle_store_url_t *u,
    char *err, size_t errlen);
static int bottle_store_open(redisContext **out, const bottle_store_url_t *u,
    const char *host, unsigned port, int connect_s, int command_s, char *err,
    size_t errlen);
static int bottle_store_discover(redisContext **out,
    const bottle_store_url_t *u, int connect_s, int command_s, char *err,
    size_t errlen);
static int bottle_store_ask(const bottle_store_url_t *u, unsigned i,
    int connect_s, char *host, size_t hostlen, unsigned *port, char *err,
    size_t errlen);
static int bottle_store_auth(redisContext *c, const char *user,
    const char *password, char *err, size_t errlen);
static int bottle_store_role(redisContext *c, char *err, size_t errlen);


int
bottle_store_connect(redisContext **out, const bottle_store_url_t *u,
    int connect_s, int command_s, char *err, size_t errlen)
{
    *out = NULL;

    if (u->nsentinels) {
        return bottle_store_discover(out, u, connect_s, command_s, err,
                                     errlen);
    }

    return bottle_store_open(out, u, u->host, u->port, connect_s, command_s,
                             err, errlen);
}


/* host NULL: u's unix socket */

static int
bottle_store_open(redisContext **out, const bottle_store_url_t *u,
    const char *host, unsigned port, int connect_s, int command_s, char *err,
    size_t errlen)
{
    redisContext    *c;
    struct timeval   tv;

    tv.tv_sec = connect_s;
    tv.tv_usec = 0;

    c = u->is_unix ? redisConnectUnixWithTimeout(u->path, tv)
                   : redisConnectWithTimeout(host, (int) port, tv);

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


/*
 * Each sentinel in turn: the primary it names, connected to, and a master
 * by its own ROLE (a sentinel that has not yet seen a failover names the
 * old primary, which may answer as a replica).
 */

static int
bottle_store_discover(redisContext **out, const bottle_store_url_t *u,
    int connect_s, int command_s, char *err, size_t errlen)
{
    char           host[BOTTLE_STORE_HOST_MAX + 1], why[256];
    unsigned       i, port;
    redisContext  *c;

    why[0] = '\0';
    port = 0;

    for (i = 0; i < u->nsentinels; i++) {
        if (bottle_store_ask(u, i, connect_s, host, sizeof(host), &port, why,
                             sizeof(why))
            != 0)
        {
            continue;
        }

        if (bottle_store_open(&c, u, host, port, connect_s, command_s, why,
                              sizeof(why))
            != 0)
        {
            continue;
        }

        if (bottle_store_role(c, why, sizeof(why)) != 0) {
            redisFree(c);
            continue;
        }

        *out = c;

        return 0;
    }

    return bottle_errf(err, errlen, "no sentinel gave a primary for '%s' "
                       "(last: %s)", u->master, why);
}


static int
bottle_store_ask(const bottle_store_url_t *u, unsigned i, int connect_s,
    char *host, size_t hostlen, unsigned *port, char *err, size_t errlen)
{
    int                       rc;
    long                      p;
    char                     *end;
    redisReply               *r;
    redisContext             *c;
    struct timeval            tv;
    const bottle_store_node_t *s = &u->sentinel[i];

    tv.tv_sec = connect_s;
    tv.tv_usec = 0;

    c = redisConnectWithTimeout(s->host, (int) s->port, tv);
    if (c == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    rc = -1;

    if (c->err) {
        bottle_errf(err, errlen, "sentinel %s:%u: %s", s->host, s->port,
                    c->errstr);
        goto done;
    }

    (void) redisSetTimeout(c, tv);

    if (u->has_sentinel_password
        && bottle_store_auth(c, u->sentinel_user, u->sentinel_password, err,
                             errlen)
           != 0)
    {
        goto done;
    }

    r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", u->master);

    if (r == NULL) {
        bottle_errf(err, errlen, "sentinel %s:%u: %s", s->host, s->port,
                    c->err ? c->errstr : "connection lost");
        goto done;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING
        || r->element[1]->type != REDIS_REPLY_STRING
        || r->element[0]->len == 0 || r->element[0]->len >= hostlen)
    {
        bottle_errf(err, errlen, "sentinel %s:%u does not know '%s'",
                    s->host, s->port, u->master);
        freeReplyObject(r);
        goto done;
    }

    p = strtol(r->element[1]->str, &end, 10);

    if (*end != '\0' || p <= 0 || p > 65535) {
        bottle_errf(err, errlen, "sentinel %s:%u gave a bad port", s->host,
                    s->port);
        freeReplyObject(r);
        goto done;
    }

    memcpy(host, r->element[0]->str, r->element[0]->len);
    host[r->element[0]->len] = '\0';
    *port = (unsigned) p;
    rc = 0;

    freeReplyObject(r);

done:

    redisFree(c);

    return rc;
}


static int
bottle_store_role(redisContext *c, char *err, size_t errlen)
{
    int          rc;
    redisReply  *r;

    r = redisCommand(c, "ROLE");
    if (r == NULL) {
        return bottle_errf(err, errlen, "%s",
                           c->err ? c->errstr : "connection lost");
    }

    rc = 0;

    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0
        || r->element[0]->type != REDIS_REPLY_STRING
        || strcmp(r->element[0]->str, "master") != 0)
    {
        rc = bottle_errf(err, errlen, "the server a sentinel named is not "
                         "a primary");
    }

    freeReplyObject(r);

    return rc;
}


static int
bottle_store_auth(redisContext *c, const char *user, const char *password,
    char *err, size_t errlen)
{
    int           argc, rc;
    const char   *argv[3];
    redisReply   *r;

    argc = 0;
    argv[argc++] = "AUTH";
    if (user[0]) {
        argv[argc++] = user;
    }
    argv[argc++] = password;

    r = redisCommandArgv(c, argc, argv, NULL);
    if (r == NULL) {
        return bottle_errf(err, errlen, "%s",
                           c->err ? c->errstr : "connection lost");
    }

    /* Redis's reason ("WRONGPASS ...") never repeats the password */

    rc = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        rc = bottle_errf(err, errlen, "authentication failed: %s", r->str);
    }

    freeReplyObject(r);

    return rc;
}


/* AUTH and SELECT; the password never goes into a message */

static int
bottle_store_setup(redisContext *c, const bottle_store_url_t *u, char *err,
    size_t errlen)
{
    int           rc;
    char          db[16];
    const char   *argv[2];
    redisReply   *r;

    if (u->has_password
        && bottle_store_auth(c, u->user, u->password, err, errlen) != 0)
    {
        return -1;
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
