/*
 * The reference of gg_diff_fuzz.c (the differential check of git-gate's
 * push scan, issue 26): objects read whole, no git-gate code.  It walks
 * the push's objects with git_odb_read(), parses trees and commits
 * itself, applies its own whole-line rule and zlib and UTF-16 decoding,
 * and lists into found[] what libbottle's scanner and generic matcher
 * find; matched() tells whether the gate's report holds a finding.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <git2.h>
#include <zlib.h>

#include "bottle_generic.h"
#include "bottle_scan.h"
#include "gg_scan.h"
#include "fuzz.h"
#include "gg_diff.h"


#define DECODE_MAX (1 << 20)


/* the reference: objects read whole, no git-gate code */

static int
set_has(const set_t *s, const git_oid *o)
{
    size_t  i;

    for (i = 0; i < s->n; i++) {
        if (git_oid_equal(&s->oid[i], o)) {
            return 1;
        }
    }
    return 0;
}

static int
set_add(set_t *s, const git_oid *o)
{
    if (set_has(s, o)) {
        return 0;
    }
    CHECK(s->n < MAXOBJ);
    s->oid[s->n++] = *o;
    return 1;
}


/* walks from o, every object not in stop into out (in walk order) */
void
walk(git_odb *odb, const git_oid *o, const set_t *stop, set_t *out)
{
    size_t          len;
    const char     *d, *p, *e, *sp;
    git_oid         x;
    git_odb_object *ob;
    git_object_t    type;

    if (set_has(stop, o) || !set_add(out, o)) {
        return;
    }
    CHECK(git_odb_read(&ob, odb, o) == 0);
    d = git_odb_object_data(ob);
    len = git_odb_object_size(ob);
    type = git_odb_object_type(ob);

    if (type == GIT_OBJECT_COMMIT || type == GIT_OBJECT_TAG) {
        /* header lines up to the blank line: tree, parents, object */
        for (p = d; p < d + len && *p != '\n'; p = e + 1) {
            e = memchr(p, '\n', d + len - p);
            if (e == NULL) {
                break;
            }
            if ((e - p == 45 && memcmp(p, "tree ", 5) == 0)
                || (e - p == 47 && memcmp(p, "parent ", 7) == 0)
                || (e - p == 47 && memcmp(p, "object ", 7) == 0))
            {
                if (git_oid_fromstrn(&x, e - 40, 40) == 0
                    && git_odb_exists(odb, &x))
                {
                    walk(odb, &x, stop, out);
                }
            }
            if (type == GIT_OBJECT_COMMIT && memcmp(p, "author ", 7) == 0) {
                break;          /* git reads parents before author only */
            }
        }
    } else if (type == GIT_OBJECT_TREE) {
        for (p = d; p < d + len; p = sp + 1 + GIT_OID_RAWSZ) {
            sp = memchr(p, '\0', d + len - p);
            CHECK(sp != NULL && sp + 1 + GIT_OID_RAWSZ <= d + len);
            git_oid_fromraw(&x, (const unsigned char *) sp + 1);
            if (strncmp(p, "160000 ", 7) != 0) {
                walk(odb, &x, stop, out);
            }
        }
    }
    git_odb_object_free(ob);
}


typedef struct {
    char     path[64];
    char     mode[8];
    git_oid  oid;
} ent_t;


static size_t
flatten(git_odb *odb, const git_oid *tree, const char *prefix, ent_t *e,
    size_t n)
{
    char            name[128];
    const char     *d, *p, *sp, *m;
    size_t          len;
    git_oid         x;
    git_odb_object *ob;

    CHECK(git_odb_read(&ob, odb, tree) == 0);
    d = git_odb_object_data(ob);
    len = git_odb_object_size(ob);
    for (p = d; p < d + len; p = sp + 1 + GIT_OID_RAWSZ) {
        sp = memchr(p, '\0', d + len - p);
        m = memchr(p, ' ', sp - p);
        CHECK(m != NULL);
        git_oid_fromraw(&x, (const unsigned char *) sp + 1);
        snprintf(name, sizeof(name), "%s%.*s", prefix, (int) (sp - m - 1),
                 m + 1);
        if (m - p == 5 && memcmp(p, "40000", 5) == 0) {
            strcat(name, "/");
            n = flatten(odb, &x, name, e, n);
        } else if (!(m - p == 6 && memcmp(p, "160000", 6) == 0)) {
            CHECK(n < 64);
            snprintf(e[n].path, sizeof(e[n].path), "%s", name);
            snprintf(e[n].mode, sizeof(e[n].mode), "%.*s", (int) (m - p), p);
            e[n].oid = x;
            n++;
        }
    }
    git_odb_object_free(ob);
    return n;
}


static int
generic_one(void *arg, size_t start, size_t end)
{
    (void) arg;
    (void) start;
    (void) end;
    return 1;                       /* one is enough: stop */
}


static void
scan_field(const char *kind, const char *commit, const char *path,
    const char *mode, const char *data, size_t len, int file)
{
    size_t                      i, n, tokens;
    const bottle_scan_match_t  *m;
    finding_t                  *f;

    bottle_scan_reset(rs, BOTTLE_DLP_TOKEN_PATTERNS | BOTTLE_DLP_KNOWN_SECRETS);
    CHECK(bottle_scan_field(rs, 0, data, len) == BOTTLE_SCAN_OK);
    m = bottle_scan_matches(rs, &n);
    tokens = 0;

    for (i = 0; i <= n; i++) {
        const char  *rule;

        if (i < n) {
            if (m[i].detector == BOTTLE_DETECT_ENTROPY
                || m[i].detector == BOTTLE_DETECT_INJECTION)
            {
                continue;
            }
            rule = m[i].rule;
            tokens++;
        } else {
            if (tokens || !file) {
                break;
            }
            /* generic assignments: where no token shape was found */
            if (bottle_generic_scan(gen, data, len, generic_one, NULL) <= 0) {
                break;
            }
            rule = BOTTLE_GENERIC_RULE;
        }
        if (nfound == capfound) {
            capfound = capfound ? capfound * 2 : 16;
            found = realloc(found, capfound * sizeof(*found));
            CHECK(found != NULL);
        }
        f = &found[nfound++];
        memset(f, 0, sizeof(*f));
        snprintf(f->rule, sizeof(f->rule), "%s", rule);
        f->kind = kind;
        snprintf(f->commit, sizeof(f->commit), "%s", commit ? commit : "");
        snprintf(f->path, sizeof(f->path), "%s", path ? path : "");
        snprintf(f->mode, sizeof(f->mode), "%s", mode ? mode : "");
        bput(&f->field, data, len);
    }
}


/* the added lines of new against old (whole lines), each run a field */
static void
added(const char *commit, const char *path, const char *mode,
    const char *o, size_t ol, const char *d, size_t dl)
{
    const char  *p, *e, *q, *qe, *run;
    int          have;

    run = NULL;
    for (p = d; p < d + dl; p = e + 1) {
        e = memchr(p, '\n', d + dl - p);
        e = e ? e : d + dl;
        have = 0;
        for (q = o; o && q < o + ol; q = qe + 1) {
            qe = memchr(q, '\n', o + ol - q);
            qe = qe ? qe : o + ol;
            if (qe - q == e - p && memcmp(q, p, e - p) == 0) {
                have = 1;
                break;
            }
        }
        if (have && run) {
            scan_field("file", commit, path, mode, run, p - run, 1);
            run = NULL;
        } else if (!have && !run) {
            run = p;
        }
        if (e == d + dl) {
            break;
        }
    }
    if (run) {
        scan_field("file", commit, path, mode, run, d + dl - run, 1);
    }
}


/* a blob's decoded view (UTF-16 or zlib/gzip), or 0 */
static int
decoded(const char *d, size_t len, buf_t *out)
{
    size_t    i;
    z_stream  z;
    int       rc, le;
    char      tmp[4096];

    out->len = 0;
    if (len >= 2 && ((unsigned char) d[0] == 0xff || (unsigned char) d[0]
                     == 0xfe) && ((unsigned char) d[1] ^ (unsigned char) d[0])
                     == 0x01)
    {
        le = (unsigned char) d[0] == 0xff;
        for (i = 2; i + 1 < len; i += 2) {
            unsigned  u = le ? (unsigned char) d[i]
                               | (unsigned char) d[i + 1] << 8
                             : (unsigned char) d[i] << 8
                               | (unsigned char) d[i + 1];
            char      c = u < 0x80 ? (char) u : '?';
            bput(out, &c, 1);
        }
        return 1;
    }
    if (len >= 2 && ((unsigned char) d[0] == 0x1f
                     || ((unsigned char) d[0] & 0x0f) == 8))
    {
        memset(&z, 0, sizeof(z));
        if (inflateInit2(&z, 15 + 32) != Z_OK) {
            return 0;
        }
        z.next_in = (Bytef *) d;
        z.avail_in = (uInt) len;
        do {
            z.next_out = (Bytef *) tmp;
            z.avail_out = sizeof(tmp);
            rc = inflate(&z, Z_NO_FLUSH);
            bput(out, tmp, sizeof(tmp) - z.avail_out);
        } while (rc == Z_OK && out->len < DECODE_MAX);
        inflateEnd(&z);
        return rc == Z_STREAM_END;
    }
    return 0;
}


void
reference(git_odb *odb, const git_oid *base, const git_oid *tips, size_t ntips,
    const char **refs)
{
    size_t          i, j, k, nn, no, len, dl;
    char            hex[GIT_OID_HEXSZ + 1];
    const char     *d, *p, *sp;
    git_oid         tree, parent, x;
    git_odb_object *ob, *b1, *b2;
    ent_t           ne[64], oe[64];
    buf_t           v1 = { 0 }, v2 = { 0 }, v3 = { 0 };
    static set_t    have, fresh;

    have.n = 0;
    fresh.n = 0;
    walk(odb, base, &fresh, &have);
    for (i = 0; i < ntips; i++) {
        scan_field("ref", NULL, NULL, NULL, refs[i], strlen(refs[i]), 0);
        walk(odb, &tips[i], &have, &fresh);
    }

    for (i = 0; i < fresh.n; i++) {
        CHECK(git_odb_read(&ob, odb, &fresh.oid[i]) == 0);
        d = git_odb_object_data(ob);
        len = git_odb_object_size(ob);
        git_oid_tostr(hex, sizeof(hex), &fresh.oid[i]);

        switch (git_odb_object_type(ob)) {
        case GIT_OBJECT_TAG:
            scan_field("tag", hex, NULL, NULL, d, len, 0);
            break;
        case GIT_OBJECT_TREE:
            for (p = d; p < d + len; p = sp + 1 + GIT_OID_RAWSZ) {
                sp = memchr(p, '\0', d + len - p);
                p = memchr(p, ' ', sp - p) + 1;
                scan_field("name", hex, NULL, NULL, p, sp - p, 0);
            }
            break;
        case GIT_OBJECT_COMMIT:
            scan_field("commit", hex, NULL, NULL, d, len, 0);
            CHECK(len > 46 && git_oid_fromstrn(&tree, d + 5, 40) == 0);
            nn = flatten(odb, &tree, "", ne, 0);
            no = 0;
            if (len > 94 && memcmp(d + 46, "parent ", 7) == 0
                && git_oid_fromstrn(&parent, d + 53, 40) == 0)
            {
                git_odb_object *po;
                CHECK(git_odb_read(&po, odb, &parent) == 0);
                CHECK(git_oid_fromstrn(&x, (const char *)
                                       git_odb_object_data(po) + 5, 40) == 0);
                git_odb_object_free(po);
                no = flatten(odb, &x, "", oe, 0);
            }
            for (j = 0; j < nn; j++) {
                for (k = 0; k < no; k++) {
                    if (strcmp(oe[k].path, ne[j].path) == 0) {
                        break;
                    }
                }
                if (k < no && git_oid_equal(&oe[k].oid, &ne[j].oid)) {
                    continue;
                }
                CHECK(git_odb_read(&b2, odb, &ne[j].oid) == 0);
                b1 = NULL;
                if (k < no) {
                    CHECK(git_odb_read(&b1, odb, &oe[k].oid) == 0);
                }
                added(hex, ne[j].path, ne[j].mode,
                      b1 ? git_odb_object_data(b1) : NULL,
                      b1 ? git_odb_object_size(b1) : 0,
                      git_odb_object_data(b2), git_odb_object_size(b2));
                if (decoded(git_odb_object_data(b2), git_odb_object_size(b2),
                            &v2))
                {
                    /*
                     * against every line the old version had, raw or
                     * decoded: what the forge has in either form
                     */
                    dl = 0;
                    v3.len = 0;
                    if (b1) {
                        bput(&v3, git_odb_object_data(b1),
                             git_odb_object_size(b1));
                        if (decoded(git_odb_object_data(b1),
                                    git_odb_object_size(b1), &v1))
                        {
                            bputs(&v3, "\n");
                            bput(&v3, v1.b ? v1.b : "", v1.len);
                        }
                        dl = v3.len;
                    }
                    added(hex, ne[j].path, ne[j].mode, dl ? v3.b : NULL, dl,
                          v2.b ? v2.b : "", v2.len);
                }
                git_odb_object_free(b2);
                if (b1) {
                    git_odb_object_free(b1);
                }
            }
            break;
        default:
            break;
        }
        git_odb_object_free(ob);
    }
    free(v1.b);
    free(v2.b);
    free(v3.b);
}


/* whether the gate's report holds reference finding f */
int
matched(const gg_report_t *r, const finding_t *f)
{
    size_t       i;
    char         shorth[13];
    const char  *w;
    int          here;

    if (r->more) {
        return 1;
    }
    snprintf(shorth, sizeof(shorth), "%.12s", f->commit);
    for (i = 0; i < r->n; i++) {
        w = r->f[i].where;
        here = strstr(w, shorth) != NULL
               && (strstr(w, f->path) != NULL
                   || strstr(w, "changed file") != NULL
                   || strstr(w, "withheld") != NULL);
        if (strcmp(f->kind, "file") == 0
            && strncmp(f->mode, "1006", 4) == 0 && strcmp(f->mode, "100644")
            && (strstr(w, f->mode) || strstr(r->f[i].rule, f->mode)))
        {
            return 1;
        }
        if (strcmp(f->kind, "file") == 0
            && strcmp(f->rule, BOTTLE_GENERIC_RULE) == 0 && here)
        {
            return 1;
        }
        if (strcmp(r->f[i].rule, f->rule) != 0) {
            continue;
        }
        if (strcmp(f->kind, "ref") == 0 ? strstr(w, "ref update") != NULL
            : strcmp(f->kind, "commit") == 0
            ? strncmp(w, "commit ", 7) == 0 && strncmp(w + 7, shorth, 12) == 0
            : strcmp(f->kind, "tag") == 0 ? strncmp(w, "tag", 3) == 0
            : strcmp(f->kind, "file") == 0 ? here
            : 1)
        {
            return 1;
        }
    }
    return 0;
}
