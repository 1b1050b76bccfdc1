/*
 * git-gate's readers of raw git objects (gg_object.h).
 */

#include <string.h>

#include "gg_object.h"


int
gg_tree_next(gg_tree_entry_t *e, const char **p, const char *end)
{
    const char  *q, *sp, *nul;

    q = *p;
    if (q >= end) {
        return 0;
    }

    sp = memchr(q, ' ', (size_t) (end - q));
    if (sp == NULL || sp == q || sp - q > GG_MODE_MAX) {
        return -1;
    }
    nul = memchr(sp + 1, '\0', (size_t) (end - sp - 1));
    if (nul == NULL || (size_t) (end - nul - 1) < GG_OID_RAWSZ) {
        return -1;
    }

    e->mode = q;
    e->mlen = (size_t) (sp - q);
    e->m = 0;
    for (; q < sp; q++) {
        if (*q < '0' || *q > '7') {
            return -1;
        }
        e->m = e->m * 8 + (uint32_t) (*q - '0');
    }

    e->name = sp + 1;
    e->nlen = (size_t) (nul - sp - 1);
    e->oid = (const unsigned char *) nul + 1;
    *p = nul + 1 + GG_OID_RAWSZ;
    return 1;
}


int
gg_header_next(const char **p, const char *end, const char **s,
    size_t *len, const char **msg)
{
    const char  *q, *nl;

    q = *p;
    if (q >= end || *q == '\n') {
        *msg = q < end ? q + 1 : end;
        return 0;
    }

    *s = q;
    do {
        nl = memchr(q, '\n', (size_t) (end - q));
        q = nl ? nl + 1 : end;
    } while (q < end && *q == ' ');

    *len = (size_t) (q - *s);
    *p = q;
    return 1;
}


int
gg_header_is(const char *s, size_t len, const char *key, const char *hex)
{
    size_t  klen, hlen;

    klen = strlen(key);
    hlen = strlen(hex);
    return len == klen + 1 + hlen + 1 && memcmp(s, key, klen) == 0
           && s[klen] == ' ' && memcmp(s + klen + 1, hex, hlen) == 0
           && s[len - 1] == '\n';
}


int
gg_header_prefix(const char *s, size_t len, const char *key)
{
    size_t  klen;

    klen = strlen(key);
    return len >= klen && memcmp(s, key, klen) == 0;
}
