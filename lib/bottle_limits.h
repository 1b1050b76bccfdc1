/*
 * The limits of what a store may hold (docs/control-plane.md, "Limits"):
 * one definition, enforced by bottlectl before it writes and again by the
 * gateway's loader before (and after) it reads, so that no policy,
 * written by whatever means, can take the store or a worker's memory away
 * from the other bottles.
 *
 * An operator raises them with the same words on both sides: the
 * gateway's bottle_store_limits directive and bottlectl's --limits option
 * (or $BOTTLE_LIMITS), e.g. "policy=4m routes=20000".
 */

#ifndef BOTTLE_LIMITS_H
#define BOTTLE_LIMITS_H

#include <stddef.h>

#include "bottle_policy.h"


#define BOTTLE_LIMIT_POLICY   (1024 * 1024)         /* bytes of one bottle's
                                                       stored JSON */
#define BOTTLE_LIMIT_ROUTES   4096                  /* routes of one bottle */
#define BOTTLE_LIMIT_SECRET   (16 * 1024)           /* bytes of one secret */
#define BOTTLE_LIMIT_STORE    (256 * 1024 * 1024)   /* bytes of every
                                                       bottle's JSON */

typedef struct {
    size_t      policy;
    size_t      routes;
    size_t      secret;
    size_t      store;
} bottle_limits_t;


void bottle_limits_default(bottle_limits_t *l);

/*
 * "name=value ..." (spaces or commas between them): policy, secret and
 * store take a size ("512k", "4m", "1g", bytes without a suffix), routes
 * a count.  Names not given keep their value in *l.  0, or -1 with one
 * line in err.
 */
int bottle_limits_parse(bottle_limits_t *l, const char *spec, size_t len,
    char *err, size_t errlen);

/* "policy=1048576 routes=4096 secret=16384 store=268435456" */
void bottle_limits_print(const bottle_limits_t *l, char *buf, size_t size);

/*
 * One bottle's stored JSON of len bytes: 0, or -1 with
 * "<source>: bottle \"<id>\": policy: N bytes, over the limit of M
 * (...)" in err.
 */
int bottle_limits_check_policy(const bottle_limits_t *l, const char *source,
    const char *id, size_t len, char *err, size_t errlen);

/*
 * A parsed bottle: its routes and its secrets (canary, egress_tokens and
 * held_secrets values).  0, or -1 with one line naming the field, never a
 * value.
 */
int bottle_limits_check_bottle(const bottle_limits_t *l, const char *source,
    const bottle_t *b, char *err, size_t errlen);

/* a secret of len bytes at field (bottlectl's "token"): 0 or -1 */
int bottle_limits_check_secret(const bottle_limits_t *l, const char *source,
    const char *id, const char *field, size_t len, char *err, size_t errlen);

/* every bottle's JSON together, total bytes: 0 or -1 */
int bottle_limits_check_store(const bottle_limits_t *l, const char *source,
    const char *id, size_t total, char *err, size_t errlen);


#endif /* BOTTLE_LIMITS_H */
