/*
 * git-gate's push scanner: one piece of a push as one scanner field, and
 * its matches as findings that say where, never what.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "gg_scan_int.h"


static size_t gg_line_of(const gg_field_t *fd, uint64_t off);
static int gg_in_context(const gg_field_t *fd, uint64_t start, uint64_t end);
static int gg_marked(const gg_field_t *fd, uint64_t start, uint64_t end);


/* a marked value's digest: "sha256:" and the hex of the matched bytes
 * (the value itself never leaves the scanner) */
static void
gg_allow_digest(char *digest, const gg_field_t *fd, uint64_t start,
    uint64_t end)
{
    size_t         i;
    unsigned char  md[SHA256_DIGEST_LENGTH];

    start = start < fd->len ? start : fd->len;
    end = end < fd->len ? end : fd->len;
    end = end > start ? end : start;

    SHA256((const unsigned char *) fd->data + start, (size_t) (end - start),
           md);

    memcpy(digest, "sha256:", 7);
    for (i = 0; i < SHA256_DIGEST_LENGTH; i++) {
        snprintf(digest + 7 + 2 * i, 3, "%02x", md[i]);
    }
}


/* findings */

static int
gg_add_finding(gg_ctx_t *c, const gg_field_t *fd, uint64_t start,
    uint64_t end, int outcome, const char *rule, const char *where)
{
    size_t         i;
    gg_report_t   *r;
    gg_finding_t   nf, *f;

    r = c->r;
    if (outcome == GG_REFUSE) {
        r->refuse = 1;
    }

    memset(&nf, 0, sizeof(nf));
    nf.outcome = outcome;

    /* a marked value kept already: one more place of it, no other slot */

    if (outcome == GG_NEEDS_ALLOW) {
        gg_allow_digest(nf.digest, fd, start, end);

        for (i = 0; i < r->n; i++) {
            f = &r->f[i];
            if (f->outcome == GG_NEEDS_ALLOW
                && strcmp(f->digest, nf.digest) == 0
                && strcmp(f->rule, rule) == 0)
            {
                f->also++;
                return 0;
            }
        }
    }

    if (r->n == GG_MAX_FINDINGS) {
        r->more++;
        return 0;
    }

    if (r->f == NULL) {
        r->f = calloc(GG_MAX_FINDINGS, sizeof(gg_finding_t));
        if (r->f == NULL) {
            return -1;
        }
    }

    nf.rule = strdup(rule);
    nf.where = strdup(where);

    /* what its gitleaks-allow proposal says of it */
    if (outcome == GG_NEEDS_ALLOW) {
        snprintf(nf.commit, sizeof(nf.commit), "%s", c->obj);
        nf.line = gg_line_of(fd, start < fd->len ? start : fd->len);
        nf.file = fd->name ? strdup(fd->name) : NULL;
    }

    if (nf.rule == NULL || nf.where == NULL
        || (outcome == GG_NEEDS_ALLOW && fd->name && nf.file == NULL))
    {
        free(nf.rule);
        free(nf.where);
        free(nf.file);
        return -1;
    }

    r->f[r->n++] = nf;
    return 0;
}


/* 1 if [start, end) of a field lies wholly in one of its context lines */
static int
gg_in_context(const gg_field_t *fd, uint64_t start, uint64_t end)
{
    size_t    lo, hi, mid;
    uint64_t  stop;

    if (fd->lines == NULL || fd->nlines == 0) {
        return 0;
    }
    lo = 0;
    hi = fd->nlines;
    while (hi - lo > 1) {
        mid = lo + (hi - lo) / 2;
        if (fd->lines[mid].off <= start) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if (!fd->lines[lo].ctx || fd->lines[lo].off > start) {
        return 0;
    }
    stop = lo + 1 < fd->nlines ? fd->lines[lo + 1].off : fd->len;
    return end <= stop;
}


/* the line of the new file holding byte off of the field */
static size_t
gg_line_of(const gg_field_t *fd, uint64_t off)
{
    size_t       lo, hi, mid, n;
    const char  *p, *end;

    n = fd->first_line;
    p = fd->data;

    /* a run of consecutive lines starts at each entry */
    if (fd->lines != NULL) {
        if (fd->nlines == 0) {
            return 0;
        }
        lo = 0;
        hi = fd->nlines;
        while (hi - lo > 1) {
            mid = lo + (hi - lo) / 2;
            if (fd->lines[mid].off <= off) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        n = fd->lines[lo].lineno;
        if (n == 0 && fd->view != NULL) {
            n = gg_v_lineno(fd->view, fd->lines[lo].pos);
        }
        p = fd->data + (fd->lines[lo].off < fd->len ? fd->lines[lo].off
                                                     : fd->len);
    }

    end = fd->data + (off < fd->len ? off : fd->len);
    if (p > end) {
        p = end;
    }
    while ((p = memchr(p, '\n', (size_t) (end - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}


/* 1 if the lines holding [start, end) of a file field carry the marker */
static int
gg_marked(const gg_field_t *fd, uint64_t start, uint64_t end)
{
    size_t       i, n, m;
    const char  *p;

    if (fd->kind != GG_F_FILE || fd->len == 0) {
        return 0;
    }

    start = start < fd->len ? start : fd->len - 1;
    end = end < fd->len ? end : fd->len;
    while (start > 0 && fd->data[start - 1] != '\n') {
        start--;
    }
    while (end < fd->len && fd->data[end] != '\n') {
        end++;
    }

    p = fd->data + start;
    n = end - start;
    m = sizeof(GG_ALLOW_MARKER) - 1;
    for (i = 0; i + m <= n; i++) {
        if (p[i] == 'g' && memcmp(p + i, GG_ALLOW_MARKER, m) == 0) {
            return 1;
        }
    }
    return 0;
}


static void
gg_where(gg_ctx_t *c, const gg_field_t *fd, uint64_t start, char *buf,
    size_t len)
{
    switch (fd->kind) {

    case GG_F_REF:
        snprintf(buf, len, "ref update %zu (name withheld)", fd->index);
        return;

    case GG_F_PATH:
        snprintf(buf, len, "%s %s path of changed file %zu (withheld)",
                 c->obj_kind, c->obj, fd->index);
        return;

    case GG_F_FILE:
        if (fd->name) {
            snprintf(buf, len, "%s %s file %s line %zu", c->obj_kind, c->obj,
                     fd->name, gg_line_of(fd, start));
        } else {
            snprintf(buf, len, "%s %s changed file %zu line %zu", c->obj_kind,
                     c->obj, fd->index, gg_line_of(fd, start));
        }
        return;

    case GG_F_TAG_NAME:
        snprintf(buf, len, "tag (name withheld) of ref update %zu",
                 fd->index);
        return;

    case GG_F_TAG_MESSAGE:
    case GG_F_TAGGER:
    case GG_F_TAG_HEADER:
        snprintf(buf, len, "tag %s %s", fd->name ? fd->name : "(withheld)",
                 fd->kind == GG_F_TAGGER ? "tagger"
                 : fd->kind == GG_F_TAG_HEADER ? "header" : "message");
        return;

    default:
        snprintf(buf, len, "%s %s %s", c->obj_kind, c->obj,
                 fd->kind == GG_F_MESSAGE ? "message"
                 : fd->kind == GG_F_AUTHOR ? "author"
                 : fd->kind == GG_F_COMMITTER ? "committer" : "header");
    }
}


/* a generic assignment in a file's added lines: a finding */

typedef struct {
    gg_ctx_t            *c;
    const gg_field_t    *fd;
    int                  error;
} gg_generic_t;


static int
gg_generic_found(void *arg, size_t start, size_t end)
{
    char           where[GG_MAX_REFNAME + 256];
    gg_generic_t  *g = arg;

    if (gg_in_context(g->fd, start, end)) {
        return 0;
    }

    gg_where(g->c, g->fd, start, where, sizeof(where));

    if (gg_add_finding(g->c, g->fd, start, end,
                       gg_marked(g->fd, start, end) ? GG_NEEDS_ALLOW
                                                    : GG_REFUSE,
                       BOTTLE_GENERIC_RULE, where)
        != 0)
    {
        g->error = 1;
        return 1;
    }

    return 0;
}


static int
gg_generic(gg_ctx_t *c, const gg_field_t *fd)
{
    int           n;
    gg_generic_t  g;

    g.c = c;
    g.fd = fd;
    g.error = 0;

    n = bottle_generic_scan(c->gen, fd->data, fd->len, gg_generic_found, &g);

    if (g.error) {
        snprintf(c->err, c->errlen, "out of memory");
        return -1;
    }

    if (n < 0) {
        snprintf(c->err, c->errlen, "the generic assignment scan failed");
        return -1;
    }

    return n;
}


/*
 * Scans one field and records its findings.  Returns how many matches it
 * had, or -1 when the scanner failed (the push is refused).
 */
int
gg_field(gg_ctx_t *c, gg_field_t *fd)
{
    int                         id, found, generic;
    char                        where[GG_MAX_REFNAME + 256];
    size_t                      i, n;
    const bottle_scan_match_t  *m;

    id = c->field++;

    if (bottle_scan_field(c->s, id, fd->data, fd->len) != BOTTLE_SCAN_OK) {
        snprintf(c->err, c->errlen, "the secret scanner failed");
        return -1;
    }
    c->r->bytes += fd->len;

    m = bottle_scan_matches(c->s, &n);
    found = 0;

    for (i = 0; i < n; i++) {
        if (m[i].field != id || gg_in_context(fd, m[i].start, m[i].end)) {
            continue;
        }
        found++;
        gg_where(c, fd, m[i].start, where, sizeof(where));
        if (gg_add_finding(c, fd, m[i].start, m[i].end,
                           m[i].detector == BOTTLE_DETECT_TOKEN_PATTERNS
                           && gg_marked(fd, m[i].start, m[i].end)
                           ? GG_NEEDS_ALLOW : GG_REFUSE,
                           m[i].rule, where)
            != 0)
        {
            snprintf(c->err, c->errlen, "out of memory");
            return -1;
        }
    }

    /*
     * source code: generic assignments ("api_key = ..."), once no token
     * shape was found there (one finding says enough)
     */

    if (found == 0 && fd->kind == GG_F_FILE && c->gen != NULL) {
        generic = gg_generic(c, fd);
        if (generic < 0) {
            return -1;
        }
        found += generic;
    }

    if (bottle_scan_overflow(c->s)) {
        snprintf(where, sizeof(where), "%s %s", c->obj_kind, c->obj);
        if (gg_add_finding(c, fd, 0, 0, GG_REFUSE, "too_many_findings",
                           where)
            != 0)
        {
            snprintf(c->err, c->errlen, "out of memory");
            return -1;
        }
        bottle_scan_reset(c->s, GG_DETECTORS);
        c->field = 0;
    }

    /* the push's scan budget, after each field */
    if (gg_budget(c) != 0) {
        return -1;
    }

    return found;
}


int
gg_simple(gg_ctx_t *c, int kind, const char *data, size_t len)
{
    gg_field_t  fd;

    memset(&fd, 0, sizeof(fd));
    fd.kind = kind;
    fd.data = data;
    fd.len = len;
    return gg_field(c, &fd) < 0 ? -1 : 0;
}


/* a refusal of the push that no field's match made (bad_filemode,
 * undecodable, scan_budget) */
int
gg_refusal(gg_ctx_t *c, const char *rule, const char *where)
{
    gg_field_t  fd;

    memset(&fd, 0, sizeof(fd));
    if (gg_add_finding(c, &fd, 0, 0, GG_REFUSE, rule, where) != 0) {
        snprintf(c->err, c->errlen, "out of memory");
        return -1;
    }
    return 0;
}


void
gg_report_free(gg_report_t *r)
{
    size_t  i;

    for (i = 0; i < r->n; i++) {
        free(r->f[i].rule);
        free(r->f[i].where);
        free(r->f[i].file);
    }
    free(r->f);
    memset(r, 0, sizeof(*r));
}
