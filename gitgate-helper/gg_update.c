/*
 * The pre-receive hook's input: ref updates, one a line.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_update.h"


static int
hex_val(unsigned c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}


/* 40 lowercase hex digits, as git writes them; 1 if all zero */
static int
parse_oid(unsigned char *out, const char *p, int *zero)
{
    int     hi, lo;
    size_t  i;

    *zero = 1;
    for (i = 0; i < GG_OID_RAWSZ; i++) {
        hi = hex_val((unsigned char) p[2 * i]);
        lo = hex_val((unsigned char) p[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return -1;
        }
        out[i] = (unsigned char) (hi << 4 | lo);
        if (out[i]) {
            *zero = 0;
        }
    }
    return 0;
}


static int
parse_line(gg_update_t *u, const char *p, size_t len, char *err,
    size_t errlen)
{
    int     zold, znew;
    size_t  i, rlen;

    /* 40 + 1 + 40 + 1 + at least one byte of ref name */
    if (len < 2 * GG_OID_HEXSZ + 3 || p[GG_OID_HEXSZ] != ' '
        || p[2 * GG_OID_HEXSZ + 1] != ' ')
    {
        snprintf(err, errlen, "malformed ref update line");
        return -1;
    }

    if (parse_oid(u->old, p, &zold) != 0
        || parse_oid(u->new, p + GG_OID_HEXSZ + 1, &znew) != 0)
    {
        snprintf(err, errlen, "malformed object id in a ref update "
                 "(only %d-digit SHA-1 ids are read)", GG_OID_HEXSZ);
        return -1;
    }

    if (zold && znew) {
        snprintf(err, errlen, "ref update with two zero ids");
        return -1;
    }

    p += 2 * GG_OID_HEXSZ + 2;
    rlen = len - 2 * GG_OID_HEXSZ - 2;

    if (rlen > GG_MAX_REFNAME) {
        snprintf(err, errlen, "ref name longer than %d bytes",
                 GG_MAX_REFNAME);
        return -1;
    }

    for (i = 0; i < rlen; i++) {
        if ((unsigned char) p[i] < 0x20 || p[i] == 0x7f) {
            snprintf(err, errlen, "control byte in a ref name");
            return -1;
        }
    }

    u->ref = malloc(rlen + 1);
    if (u->ref == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(u->ref, p, rlen);
    u->ref[rlen] = '\0';
    u->ref_len = rlen;
    u->create = zold;
    u->delete = znew;

    return 0;
}


int
gg_updates_parse(gg_updates_t *out, const char *buf, size_t len, char *err,
    size_t errlen)
{
    size_t        n, cap, i;
    const char   *p, *end, *nl;
    gg_update_t  *u, *a;

    out->u = NULL;
    out->n = 0;
    out->bottle = NULL;             /* no trailer check unless the hook
                                       names the pusher */
    out->trailer_required = 0;

    u = NULL;
    n = 0;
    cap = 0;
    p = buf;
    end = buf + len;

    while (p < end) {
        nl = memchr(p, '\n', (size_t) (end - p));
        if (nl == NULL) {
            snprintf(err, errlen, "ref update line without a newline");
            goto failed;
        }

        if (n == GG_MAX_UPDATES) {
            snprintf(err, errlen, "more than %d ref updates", GG_MAX_UPDATES);
            goto failed;
        }

        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            a = realloc(u, cap * sizeof(*u));
            if (a == NULL) {
                snprintf(err, errlen, "out of memory");
                goto failed;
            }
            u = a;
        }

        memset(&u[n], 0, sizeof(u[n]));
        if (parse_line(&u[n], p, (size_t) (nl - p), err, errlen) != 0) {
            goto failed;
        }
        n++;
        p = nl + 1;
    }

    out->u = u;
    out->n = n;
    return 0;

failed:

    for (i = 0; i < n; i++) {
        free(u[i].ref);
    }
    free(u);
    return -1;
}


void
gg_updates_free(gg_updates_t *u)
{
    size_t  i;

    for (i = 0; i < u->n; i++) {
        free(u->u[i].ref);
    }
    free(u->u);
    u->u = NULL;
    u->n = 0;
}
