/*
 * The store's limits (bottle_limits.h): their defaults, the words that
 * raise them, and the checks bottlectl and the gateway both make.
 */

#include <stdio.h>
#include <string.h>

#include "bottle_limits.h"
#include "bottle_util.h"


#define BOTTLE_LIMITS_HINT  "raise \"%s\" with bottle_store_limits and " \
                            "bottlectl --limits"

#define BOTTLE_LIMITS_CAP   ((size_t) 1 << 40)     /* 1 TiB, or 2^40 */


static int bottle_limits_value(const char *s, size_t len, int size,
    size_t *out);


void
bottle_limits_default(bottle_limits_t *l)
{
    l->policy = BOTTLE_LIMIT_POLICY;
    l->routes = BOTTLE_LIMIT_ROUTES;
    l->secret = BOTTLE_LIMIT_SECRET;
    l->store = BOTTLE_LIMIT_STORE;
}


int
bottle_limits_parse(bottle_limits_t *l, const char *spec, size_t len,
    char *err, size_t errlen)
{
    size_t           n, nlen;
    size_t          *dst;
    const char      *p, *end, *eq, *word;
    bottle_limits_t  v;

    v = *l;
    p = spec;
    end = spec + len;

    for ( ;; ) {
        while (p < end && (*p == ' ' || *p == ',' || *p == '\t')) {
            p++;
        }

        if (p == end) {
            break;
        }

        word = p;

        while (p < end && *p != ' ' && *p != ',' && *p != '\t') {
            p++;
        }

        eq = memchr(word, '=', (size_t) (p - word));

        if (eq == NULL) {
            return bottle_errf(err, errlen, "limit \"%.*s\": not "
                               "\"name=value\"", (int) (p - word > 64
                                                        ? 64 : p - word),
                               word);
        }

        nlen = (size_t) (eq - word);

        if (nlen == 6 && memcmp(word, "policy", 6) == 0) {
            dst = &v.policy;

        } else if (nlen == 6 && memcmp(word, "routes", 6) == 0) {
            dst = &v.routes;

        } else if (nlen == 6 && memcmp(word, "secret", 6) == 0) {
            dst = &v.secret;

        } else if (nlen == 5 && memcmp(word, "store", 5) == 0) {
            dst = &v.store;

        } else {
            return bottle_errf(err, errlen, "unknown limit \"%.*s\" "
                               "(policy, routes, secret and store are "
                               "known)", (int) (nlen > 64 ? 64 : nlen), word);
        }

        if (bottle_limits_value(eq + 1, (size_t) (p - eq - 1),
                                dst != &v.routes, &n)
            != 0)
        {
            return bottle_errf(err, errlen, "limit \"%.*s\": bad value "
                               "(a number from 1, with k, m or g for a "
                               "size)", (int) nlen, word);
        }

        *dst = n;
    }

    *l = v;

    return 0;
}


static int
bottle_limits_value(const char *s, size_t len, int size, size_t *out)
{
    size_t  i, v, unit;

    unit = 1;

    if (size && len > 1) {
        switch (s[len - 1]) {
        case 'k': case 'K': unit = 1024; len--; break;
        case 'm': case 'M': unit = 1024 * 1024; len--; break;
        case 'g': case 'G': unit = 1024 * 1024 * 1024; len--; break;
        default: break;
        }
    }

    if (len == 0 || len > 13) {
        return -1;
    }

    v = 0;

    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (size_t) (s[i] - '0');
    }

    if (v == 0 || v > BOTTLE_LIMITS_CAP / unit) {
        return -1;
    }

    *out = v * unit;

    return 0;
}


void
bottle_limits_print(const bottle_limits_t *l, char *buf, size_t size)
{
    snprintf(buf, size, "policy=%zu routes=%zu secret=%zu store=%zu",
             l->policy, l->routes, l->secret, l->store);
}


int
bottle_limits_check_policy(const bottle_limits_t *l, const char *source,
    const char *id, size_t len, char *err, size_t errlen)
{
    if (len <= l->policy) {
        return 0;
    }

    return bottle_errf(err, errlen, "%s: bottle \"%s\": policy: %zu bytes, "
                       "over the limit of %zu (" BOTTLE_LIMITS_HINT ")",
                       source, id, len, l->policy, "policy");
}


int
bottle_limits_check_secret(const bottle_limits_t *l, const char *source,
    const char *id, const char *field, size_t len, char *err, size_t errlen)
{
    if (len <= l->secret) {
        return 0;
    }

    return bottle_errf(err, errlen, "%s: bottle \"%s\": %s: %zu bytes, over "
                       "the limit of %zu for a secret (" BOTTLE_LIMITS_HINT
                       ")", source, id, field, len, l->secret, "secret");
}


int
bottle_limits_check_bottle(const bottle_limits_t *l, const char *source,
    const bottle_t *b, char *err, size_t errlen)
{
    size_t  i;
    char    field[160];

    if (b->nroutes > l->routes) {
        return bottle_errf(err, errlen, "%s: bottle \"%s\": routes: %zu "
                           "routes, over the limit of %zu ("
                           BOTTLE_LIMITS_HINT ")", source, b->id.data,
                           b->nroutes, l->routes, "routes");
    }

    if (bottle_limits_check_secret(l, source, b->id.data, "canary",
                                   b->canary.len, err, errlen)
        != 0)
    {
        return -1;
    }

    for (i = 0; i < b->negress_tokens; i++) {
        snprintf(field, sizeof(field), "egress_tokens.%s",
                 b->egress_tokens[i].name.data);

        if (bottle_limits_check_secret(l, source, b->id.data, field,
                                       b->egress_tokens[i].value.len, err,
                                       errlen)
            != 0)
        {
            return -1;
        }
    }

    for (i = 0; i < b->nheld_secrets; i++) {
        snprintf(field, sizeof(field), "held_secrets.%s",
                 b->held_secrets[i].name.data);

        if (bottle_limits_check_secret(l, source, b->id.data, field,
                                       b->held_secrets[i].value.len, err,
                                       errlen)
            != 0)
        {
            return -1;
        }
    }

    return 0;
}


int
bottle_limits_check_store(const bottle_limits_t *l, const char *source,
    const char *id, size_t total, char *err, size_t errlen)
{
    if (total <= l->store) {
        return 0;
    }

    return bottle_errf(err, errlen, "%s: bottle \"%s\": the store would hold "
                       "%zu bytes of policy, over the limit of %zu ("
                       BOTTLE_LIMITS_HINT ")", source, id, total, l->store,
                       "store");
}
