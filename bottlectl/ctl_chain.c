/*
 * The audit journal's chain as bottlectl reads it (bottlectl_chain.h).
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottlectl_chain.h"


static int bottlectl_chain_hex(char out[BOTTLE_AUDIT_HEX_LEN],
    const redisReply *v);


int
bottlectl_chain_range(bottlectl_t *ctl, redisReply **out, const char *start,
    size_t count)
{
    int          rc;
    char         n[32];
    const char  *argv[6];

    snprintf(n, sizeof(n), "%zu", count);

    argv[0] = "XRANGE";
    argv[1] = BOTTLE_STORE_AUDIT;
    argv[2] = start;
    argv[3] = "+";
    argv[4] = "COUNT";
    argv[5] = n;

    rc = bottlectl_command(ctl, out, 6, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if ((*out)->type != REDIS_REPLY_ARRAY) {
        bottlectl_error("cannot read %s: %s", BOTTLE_STORE_AUDIT,
                        (*out)->type == REDIS_REPLY_ERROR ? (*out)->str
                                                          : "not a stream");
        freeReplyObject(*out);
        *out = NULL;
        return BOTTLECTL_REFUSED;
    }

    return BOTTLECTL_OK;
}


int
bottlectl_chain_entry(const redisReply *r, bottlectl_entry_t *e)
{
    int                 have_seq, have_prev, have_hash;
    char               *end;
    size_t              i;
    const redisReply   *f, *k, *v;

    memset(e, 0, sizeof(*e));

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING
        || r->element[0]->len >= BOTTLECTL_CHAIN_ID_LEN)
    {
        return -1;
    }

    memcpy(e->id, r->element[0]->str, r->element[0]->len + 1);

    f = r->element[1];
    have_seq = 0;
    have_prev = 0;
    have_hash = 0;

    for (i = 0; f->type == REDIS_REPLY_ARRAY && i + 1 < f->elements; i += 2) {
        k = f->element[i];
        v = f->element[i + 1];

        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) {
            continue;
        }

        if (strcmp(k->str, "event") == 0) {
            e->event = v->str;
            e->event_len = v->len;

        } else if (strcmp(k->str, BOTTLE_AUDIT_F_SEQ) == 0) {
            errno = 0;
            e->seq = strtoull(v->str, &end, 10);
            have_seq = v->len > 0 && v->str[0] >= '1' && v->str[0] <= '9'
                       && *end == '\0' && errno == 0;

        } else if (strcmp(k->str, "prev") == 0) {
            have_prev = bottlectl_chain_hex(e->prev, v) == 0;

        } else if (strcmp(k->str, BOTTLE_AUDIT_F_HASH) == 0) {
            have_hash = bottlectl_chain_hex(e->hash, v) == 0;
        }
    }

    e->chained = e->event && have_seq && have_prev && have_hash;

    return 0;
}


static int
bottlectl_chain_hex(char out[BOTTLE_AUDIT_HEX_LEN], const redisReply *v)
{
    if (v->len != BOTTLE_AUDIT_HEX_LEN - 1
        || strspn(v->str, "0123456789abcdef") != v->len)
    {
        return -1;
    }

    memcpy(out, v->str, BOTTLE_AUDIT_HEX_LEN);

    return 0;
}


int
bottlectl_chain_link(char out[BOTTLE_AUDIT_HEX_LEN],
    const bottlectl_entry_t *e)
{
    char  digest[BOTTLE_AUDIT_HEX_LEN];

    bottle_audit_sha256_hex(digest, e->event, e->event_len);

    return bottle_audit_link(out, e->prev, e->seq, digest);
}


/* bottlectl_chain.h */

int
bottlectl_broken(const char *fmt, ...)
{
    va_list  ap;

    fputs("audit verify: broken: ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);

    return BOTTLECTL_REFUSED;
}
