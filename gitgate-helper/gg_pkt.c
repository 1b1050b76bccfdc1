/*
 * pkt-lines and protocol v2 requests (gg_pkt.h).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_pkt.h"


static int gg_hex4(const char *p, size_t *out);
static int gg_is(const char *p, size_t len, const char *s);
static int gg_starts(const char *p, size_t len, const char *s);


long
gg_pkt_next(const char *buf, size_t len, int *type, const char **data,
    size_t *dlen)
{
    size_t  n;

    if (len < 4) {
        return 0;
    }

    if (gg_hex4(buf, &n) != 0) {
        return -1;
    }

    if (n < 4) {
        if (n == 3) {
            return -1;
        }
        *type = n == 0 ? GG_PKT_FLUSH : n == 1 ? GG_PKT_DELIM : GG_PKT_END;
        *data = NULL;
        *dlen = 0;
        return 4;
    }

    if (n > GG_PKT_MAX) {
        return -1;
    }

    if (len < n) {
        return 0;
    }

    *type = GG_PKT_DATA;
    *data = buf + 4;
    *dlen = n - 4;
    return (long) n;
}


int
gg_pkt_oid(const char *p, size_t len)
{
    size_t  i;

    if (len < GG_PKT_OID_HEX) {
        return 0;
    }

    for (i = 0; i < GG_PKT_OID_HEX; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) {
            return 0;
        }
    }

    return 1;
}


int
gg_v2_request_parse(gg_v2_request_t *r, const char *body, size_t len,
    char *err, size_t errlen)
{
    int          type, section;
    long         n;
    size_t       off, dlen, max;
    const char  *d;

    memset(r, 0, sizeof(*r));

    /* a want or a ref-prefix is a pkt-line of at least 5 bytes */
    max = len / 5 + 1;
    r->wants = calloc(max, sizeof(r->wants[0]));
    r->prefixes = calloc(max, sizeof(r->prefixes[0]));
    r->prefix_lens = calloc(max, sizeof(r->prefix_lens[0]));

    if (r->wants == NULL || r->prefixes == NULL || r->prefix_lens == NULL) {
        snprintf(err, errlen, "out of memory");
        goto failed;
    }

    r->simple = 1;
    section = 0;    /* 0 capabilities, 1 arguments, 2 after the flush */

    for (off = 0; off < len; off += (size_t) n) {
        if (section == 2) {
            snprintf(err, errlen, "data after the request's flush");
            goto failed;
        }

        n = gg_pkt_next(body + off, len - off, &type, &d, &dlen);
        if (n <= 0) {
            snprintf(err, errlen, "%s pkt-line at %zu",
                     n == 0 ? "a truncated" : "a malformed", off);
            goto failed;
        }

        if (type == GG_PKT_END) {
            snprintf(err, errlen, "a response-end in a request");
            goto failed;
        }

        if (type == GG_PKT_FLUSH) {
            section = 2;
            continue;
        }

        if (type == GG_PKT_DELIM) {
            if (section != 0) {
                snprintf(err, errlen, "a second delimiter");
                goto failed;
            }
            section = 1;
            continue;
        }

        if (dlen && d[dlen - 1] == '\n') {
            dlen--;
        }

        if (section == 0) {
            if (gg_starts(d, dlen, "command=")) {
                if (off != 0) {
                    snprintf(err, errlen, "the command is not first");
                    goto failed;
                }
                r->command = gg_is(d, dlen, "command=fetch") ? GG_CMD_FETCH
                    : gg_is(d, dlen, "command=ls-refs") ? GG_CMD_LS_REFS
                    : GG_CMD_OTHER;

            } else if (off == 0) {
                snprintf(err, errlen, "no command");
                goto failed;

            } else if (!gg_starts(d, dlen, "agent=")
                       && !gg_is(d, dlen, "object-format=sha1"))
            {
                /* server-option, another object format, ... */
                r->simple = 0;
            }
            continue;
        }

        if (gg_starts(d, dlen, "want ")) {
            if (dlen != 5 + GG_PKT_OID_HEX || !gg_pkt_oid(d + 5, dlen - 5)) {
                snprintf(err, errlen, "a malformed want");
                goto failed;
            }
            r->wants[r->nwants++] = d + 5;

        } else if (gg_starts(d, dlen, "ref-prefix ")) {
            r->prefixes[r->nprefixes] = d + 11;
            r->prefix_lens[r->nprefixes++] = dlen - 11;

        } else if (gg_is(d, dlen, "done")) {
            r->done = 1;
        } else if (gg_is(d, dlen, "no-progress")) {
            r->no_progress = 1;
        } else if (gg_is(d, dlen, "include-tag")) {
            r->include_tag = 1;
        } else if (gg_is(d, dlen, "ofs-delta")) {
            r->ofs_delta = 1;
        } else if (gg_is(d, dlen, "thin-pack")) {
            /* nothing: a clone has nothing to be thin against */
        } else if (gg_is(d, dlen, "symrefs")) {
            r->symrefs = 1;
        } else if (gg_is(d, dlen, "peel")) {
            r->peel = 1;
        } else if (gg_is(d, dlen, "unborn")) {
            r->unborn = 1;
        } else {
            /* have, shallow, deepen*, filter, want-ref, packfile-uris,
             * sideband-all, wait-for-done, ... */
            r->simple = 0;
        }
    }

    if (section != 2) {
        snprintf(err, errlen, "no flush at the request's end");
        goto failed;
    }

    if (r->command != GG_CMD_FETCH || r->nwants == 0 || !r->done) {
        r->simple = 0;
    }

    return 0;

failed:

    gg_v2_request_free(r);
    return -1;
}


void
gg_v2_request_free(gg_v2_request_t *r)
{
    free(r->wants);
    free(r->prefixes);
    free(r->prefix_lens);
    r->wants = NULL;
    r->prefixes = NULL;
    r->prefix_lens = NULL;
    r->nwants = 0;
    r->nprefixes = 0;
}


/* "<oid>|unborn SP <refname> *(SP <attr>)" */

int
gg_ls_refs_line(const char *line, size_t len, const char **oid,
    const char **peeled)
{
    size_t       i, nlen;
    const char  *name, *a, *e, *end;

    *oid = NULL;
    *peeled = NULL;

    if (len && line[len - 1] == '\n') {
        len--;
    }
    end = line + len;

    if (gg_pkt_oid(line, len) && len > GG_PKT_OID_HEX
        && line[GG_PKT_OID_HEX] == ' ')
    {
        *oid = line;
        name = line + GG_PKT_OID_HEX + 1;

    } else if (gg_starts(line, len, "unborn ")) {
        name = line + 7;

    } else {
        return -1;
    }

    e = memchr(name, ' ', (size_t) (end - name));
    if (e == NULL) {
        e = end;
    }
    nlen = (size_t) (e - name);

    if (nlen == 0) {
        return -1;
    }

    for (i = 0; i < nlen; i++) {
        if ((unsigned char) name[i] < 0x21 || name[i] == 0x7f) {
            return -1;
        }
    }

    for (a = e; a < end; a = e) {
        a++;
        e = memchr(a, ' ', (size_t) (end - a));
        if (e == NULL) {
            e = end;
        }

        if (gg_starts(a, (size_t) (e - a), "peeled:")) {
            if ((size_t) (e - a) != 7 + GG_PKT_OID_HEX
                || !gg_pkt_oid(a + 7, GG_PKT_OID_HEX))
            {
                return -1;
            }
            *peeled = a + 7;
        }
    }

    return gg_is(name, nlen, "HEAD")
           || (gg_starts(name, nlen, "refs/heads/") && nlen > 11)
           || (gg_starts(name, nlen, "refs/tags/") && nlen > 10);
}


static int
gg_hex4(const char *p, size_t *out)
{
    int     i;
    size_t  n;

    n = 0;
    for (i = 0; i < 4; i++) {
        n <<= 4;
        if (p[i] >= '0' && p[i] <= '9') {
            n |= (size_t) (p[i] - '0');
        } else if (p[i] >= 'a' && p[i] <= 'f') {
            n |= (size_t) (p[i] - 'a' + 10);
        } else if (p[i] >= 'A' && p[i] <= 'F') {
            n |= (size_t) (p[i] - 'A' + 10);
        } else {
            return -1;
        }
    }

    *out = n;
    return 0;
}


static int
gg_is(const char *p, size_t len, const char *s)
{
    return strlen(s) == len && memcmp(p, s, len) == 0;
}


static int
gg_starts(const char *p, size_t len, const char *s)
{
    size_t  n;

    n = strlen(s);
    return len >= n && memcmp(p, s, n) == 0;
}
