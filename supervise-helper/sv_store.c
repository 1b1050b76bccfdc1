/*
 * The store, from the helper's threads: one synchronous hiredis context
 * per thread (MHD's pool and the subscriber each have their own), opened
 * on first use and dropped when the store is lost; and a bottle's stored
 * policy, read when a tool needs it.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "supervise.h"


static void sv_store_free(void *c);
static void sv_store_key_init(void);


static pthread_key_t   sv_store_key;
static pthread_once_t  sv_store_once = PTHREAD_ONCE_INIT;


static void
sv_store_key_init(void)
{
    (void) pthread_key_create(&sv_store_key, sv_store_free);
}


static void
sv_store_free(void *c)
{
    if (c) {
        redisFree(c);
    }
}


redisContext *
sv_store(char *err, size_t errlen)
{
    char           why[512];
    redisContext  *c;

    pthread_once(&sv_store_once, sv_store_key_init);

    c = pthread_getspecific(sv_store_key);

    if (c && c->err) {
        redisFree(c);
        c = NULL;
        pthread_setspecific(sv_store_key, NULL);
    }

    if (c) {
        return c;
    }

    if (bottle_store_connect(&c, &sv_conf.store, SV_STORE_CONNECT_S,
                             SV_STORE_COMMAND_S, why, sizeof(why))
        != 0)
    {
        snprintf(err, errlen, "cannot reach the store %s: %s",
                 sv_conf.store_text, why);
        return NULL;
    }

    pthread_setspecific(sv_store_key, c);

    return c;
}


void
sv_store_lost(void)
{
    redisContext  *c;

    pthread_once(&sv_store_once, sv_store_key_init);

    c = pthread_getspecific(sv_store_key);
    if (c) {
        redisFree(c);
        pthread_setspecific(sv_store_key, NULL);
    }
}


redisReply *
sv_store_read(char *err, size_t errlen, const char *fmt, ...)
{
    int            try;
    va_list        ap;
    redisReply    *r;
    redisContext  *c;

    for (try = 0; try < 2; try++) {
        c = sv_store(err, errlen);
        if (c == NULL) {
            return NULL;
        }

        va_start(ap, fmt);
        r = redisvCommand(c, fmt, ap);
        va_end(ap);

        /* through Sentinel, a primary demoted since: ask again */

        if (r && sv_conf.store.nsentinels && r->type == REDIS_REPLY_ERROR
            && bottle_store_reply_demoted(r->str, r->len) && try == 0)
        {
            freeReplyObject(r);
            sv_store_lost();
            continue;
        }

        if (r) {
            return r;
        }

        snprintf(err, errlen, "cannot reach the store %.400s: %s",
                 sv_conf.store_text, c->err ? c->errstr : "connection lost");
        sv_store_lost();
    }

    return NULL;
}


/*
 * HGET bottle:policy:<id> json, parsed by the gateway's parser ("parent"
 * and "children" are the policy's: docs/policy.md).
 */

int
sv_bottle_load(sv_bottle_t *out, const char *id, char *err, size_t errlen)
{
    int            rc;
    char          *text, source[SV_BOTTLE_ID_MAX + 32];
    json_t        *o;
    redisReply    *r;
    json_error_t   jerr;

    memset(out, 0, sizeof(*out));

    r = sv_store_read(err, errlen, "HGET %s%s %s",
                      BOTTLE_STORE_POLICY_PREFIX, id, BOTTLE_STORE_F_JSON);
    if (r == NULL) {
        return -1;
    }

    if (r->type == REDIS_REPLY_NIL) {
        freeReplyObject(r);
        return 1;
    }

    if (r->type != REDIS_REPLY_STRING) {
        snprintf(err, errlen, "cannot read bottle \"%s\" from the store: %s",
                 id, r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
        freeReplyObject(r);
        return -1;
    }

    o = json_loadb(r->str, r->len, JSON_REJECT_DUPLICATES, &jerr);
    freeReplyObject(r);

    if (!json_is_object(o)) {
        json_decref(o);
        snprintf(err, errlen, "bottle \"%s\": the stored policy is not a "
                 "JSON object", id);
        return -1;
    }

    text = json_dumps(o, JSON_COMPACT);
    if (text == NULL) {
        json_decref(o);
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    snprintf(source, sizeof(source), "%s%s", BOTTLE_STORE_POLICY_PREFIX, id);

    rc = bottle_policy_parse(&out->policy, text, strlen(text), source, err,
                             errlen);
    free(text);

    if (rc != 0) {
        json_decref(o);
        return -1;
    }

    out->bottle = bottle_policy_find_id(out->policy, id, strlen(id));
    if (out->bottle == NULL) {
        snprintf(err, errlen, "%s: holds no bottle \"%s\"", source, id);
        json_decref(o);
        bottle_policy_free(out->policy);
        out->policy = NULL;
        return -1;
    }

    out->is_child = out->bottle->parent.len != 0;
    out->children_max = out->bottle->children_max;
    out->json = o;

    return 0;
}


void
sv_bottle_free(sv_bottle_t *b)
{
    json_decref(b->json);

    if (b->policy) {
        bottle_policy_free(b->policy);
    }

    memset(b, 0, sizeof(*b));
}
