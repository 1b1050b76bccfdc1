/*
 * libFuzzer target: the differential check of git-gate's push scan
 * (issue 26; t/gitgate_diff.t is its bounded form).  The input drives a
 * generator that writes a push's objects with libgit2's odb (any bytes:
 * odd tree modes, headers after committer, NULs in messages, tags with
 * extra headers, UTF-16 and zlib/gzip blobs), a base commit in the
 * repository and the pushed objects in a quarantine, loose or packed by
 * libgit2's packbuilder (deltas); then gg_scan_push() runs on it
 * in-process, and a reference that reads every object whole with
 * git_odb_read() and uses no git-gate code (its own tree and commit
 * parsing, whole-line rule, zlib and UTF-16 decoding; libbottle's scanner
 * and generic matcher) lists what must be found (gg_diff_ref.c, what the
 * two share in gg_diff.h).  Every reference finding must be in the
 * gate's report: the rule, and where it lists one, the same commit (and
 * file).  A miss aborts with the finding and the field.
 *
 * GG_DIFF_FUZZ_OFF=mode,header,nul,tag,utf16,zlib,xdel,name leaves those
 * hostile shapes out of the generator (the holes issue 26 lists, and an
 * empty directory named with a secret, while they are open), to look for
 * others; GG_DIFF_FUZZ_DEBUG=1 prints every reference finding.
 */

#define _GNU_SOURCE                 /* memmem, nftw */

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>
#include <git2/sys/odb_backend.h>
#include <zlib.h>

#include "bottle_generic.h"
#include "bottle_policy.h"
#include "bottle_scan.h"
#include "gg_scan.h"
#include "gg_update.h"
#include "fuzz.h"
#include "gg_diff.h"


#define F_MODE     0x01
#define F_HEADER   0x02
#define F_NUL      0x04
#define F_TAG      0x08
#define F_UTF16    0x10
#define F_ZLIB     0x20
#define F_XDEL     0x40
#define F_PACK     0x80
#define F_NAME     0x01             /* in the input's flags */
#define OFF_NAME   0x100            /* in off: "name" */

#define MAXFILES   6
#define MAXLINES   64


#define CANARY  "canary-fuzz-1234567890"
#define EGRESS  "egress-fuzz-token-9876"
#define HELD    "held-fuzz-secret-55555"

static const char *secrets[] = {
    CANARY, EGRESS, HELD,
    "ghp_Qx7Lm2Vb9Rt4Kp8Zw3Nc6Hd1Js5Fg0Ya2Ue7",
    "glpat-Xq3Vb8Lm2Nz7Rt5Kp9Wd",
    "AKIAQ7X2M9V4B8N3L6K5",
    "xoxb-4817263950-582917364051-Qm7Xv2Lb9Rz4Kt8Np3Wd6Hc1",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Vb2Lm9Xz4\n"
    "-----END RSA PRIVATE KEY-----",
    "api_key = \"q8Zr3kP0vX2mL9tBw4Ny\"",
};
#define NSECRETS  (sizeof(secrets) / sizeof(secrets[0]))

static const char *words[] = {
    "int", "char", "return", "value", "path", "the", "{", "}", ";", "key",
    "data", "if", "else", "buffer", "x", "next",
};

static const char *paths[MAXFILES] = {
    "a.txt", "src/b.c", "src/c/d.md", "e", "doc/f.txt", "g/h/i.txt",
};

static const char *modes[] = {
    "100644", "100755", "120000", "100664", "100600", "100640",
};


typedef struct {
    const uint8_t  *p;
    size_t          n, i;
} in_t;

typedef struct {
    int             live;
    int             mode;       /* index into modes */
    int             enc;        /* 0 raw, 1 UTF-16LE + BOM, 2 zlib */
    int             nlines;
    buf_t           line[MAXLINES];
} file_t;


static unsigned                off;
static bottle_scan_db_t       *db;
static bottle_scan_secrets_t  *sec;
bottle_scan_t                 *rs;
bottle_generic_t              *gen;
static char                    root[256];
static unsigned long           iter;

static file_t                  files[MAXFILES];
static const char             *extra_name;
finding_t                     *found;
size_t                         nfound, capfound;


static unsigned
byte(in_t *in)
{
    return in->i < in->n ? in->p[in->i++] : 0;
}


void
bput(buf_t *b, const void *p, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        b->cap = (b->len + len + 1) * 2;
        b->b = realloc(b->b, b->cap);
        CHECK(b->b != NULL);
    }
    memcpy(b->b + b->len, p, len);
    b->len += len;
    b->b[b->len] = '\0';
}


void
bputs(buf_t *b, const char *s)
{
    bput(b, s, strlen(s));
}


static void
gen_line(in_t *in, buf_t *l)
{
    unsigned  k, i, n;

    l->len = 0;
    k = byte(in);
    if (k < 180) {
        n = 1 + k % 5;
        for (i = 0; i < n; i++) {
            bputs(l, words[byte(in) % (sizeof(words) / sizeof(words[0]))]);
            if (i + 1 < n) {
                bputs(l, " ");
            }
        }
    } else if (k < 230) {
        if ((off & F_XDEL) == 0 && (k & 1)) {
            bputs(l, "x");
        }
        bputs(l, k & 2 ? "T = \"" : "");
        bputs(l, secrets[byte(in) % NSECRETS]);
        bputs(l, k & 2 ? "\";" : "");
    } else {
        n = byte(in) % 24;
        for (i = 0; i < n; i++) {
            char  c = (char) byte(in);
            if (c == '\n' && (off & F_NUL)) {
                c = ' ';
            }
            if (c == '\0' && (off & F_NUL)) {
                c = '0';
            }
            bput(l, &c, 1);
        }
    }
}


/* a file's bytes, in its encoding */
static void
file_bytes(const file_t *f, buf_t *out)
{
    int     i;
    size_t  k;
    buf_t   t = { 0 };
    uLongf  zl;

    out->len = 0;
    for (i = 0; i < f->nlines; i++) {
        bput(&t, f->line[i].b ? f->line[i].b : "", f->line[i].len);
        bputs(&t, "\n");
    }
    if (f->enc == 1) {
        bputs(out, "\xff\xfe");
        for (k = 0; k < t.len; k++) {
            bput(out, &t.b[k], 1);
            bput(out, "", 1);
        }
    } else if (f->enc == 2) {
        zl = compressBound(t.len);
        out->len = 0;
        bput(out, "", 0);
        if (out->cap < zl + 1) {
            out->b = realloc(out->b, zl + 1);
            CHECK(out->b != NULL);
            out->cap = zl + 1;
        }
        CHECK(compress((Bytef *) out->b, &zl, (Bytef *) t.b, t.len) == Z_OK);
        out->len = zl;
    } else if (t.len) {
        bput(out, t.b, t.len);
    }
    free(t.b);
}


/* trees: the files under prefix (a directory of paths[]) */
static void
write_tree(git_odb *odb, const char *prefix, git_oid *out)
{
    int          i, j, k, n;
    size_t       pl;
    char         names[MAXFILES + 1][64], sub[128];
    const char  *rest;
    git_oid      oids[MAXFILES + 1];
    int          isdir[MAXFILES + 1];
    buf_t        raw = { 0 }, fb = { 0 };

    n = 0;
    pl = strlen(prefix);
    for (i = 0; i < MAXFILES; i++) {
        if (!files[i].live || strncmp(paths[i], prefix, pl) != 0) {
            continue;
        }
        rest = paths[i] + pl;
        k = (int) strcspn(rest, "/");
        for (j = 0; j < n; j++) {
            if ((int) strlen(names[j]) == k
                && strncmp(names[j], rest, k) == 0)
            {
                break;
            }
        }
        if (j < n) {
            continue;
        }
        snprintf(names[n], sizeof(names[n]), "%.*s", k, rest);
        isdir[n] = rest[k] == '/';
        if (isdir[n]) {
            snprintf(sub, sizeof(sub), "%s%s/", prefix, names[n]);
            write_tree(odb, sub, &oids[n]);
        } else {
            file_bytes(&files[i], &fb);
            CHECK(git_odb_write(&oids[n], odb, fb.b ? fb.b : "", fb.len,
                                GIT_OBJECT_BLOB) == 0);
            isdir[n] = -1 - i;
        }
        n++;
    }

    /* a secret as the name of an empty directory, at the top */
    if (prefix[0] == '\0' && extra_name != NULL) {
        snprintf(names[n], sizeof(names[n]), "%s", extra_name);
        CHECK(git_odb_write(&oids[n], odb, "", 0, GIT_OBJECT_TREE) == 0);
        isdir[n] = 2;
        n++;
    }

    /* git's order: a directory's name sorts as if it ended in '/' */
    for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
            char  a[70], b[70];
            snprintf(a, sizeof(a), "%s%s", names[i], isdir[i] > 0 ? "/" : "");
            snprintf(b, sizeof(b), "%s%s", names[j], isdir[j] > 0 ? "/" : "");
            if (strcmp(a, b) > 0) {
                char     tn[64];
                git_oid  to;
                int      td;
                memcpy(tn, names[i], 64);
                memcpy(names[i], names[j], 64);
                memcpy(names[j], tn, 64);
                to = oids[i]; oids[i] = oids[j]; oids[j] = to;
                td = isdir[i]; isdir[i] = isdir[j]; isdir[j] = td;
            }
        }
    }

    for (i = 0; i < n; i++) {
        bputs(&raw, isdir[i] > 0 ? "40000" : modes[files[-1 - isdir[i]].mode]);
        bputs(&raw, " ");
        bput(&raw, names[i], strlen(names[i]) + 1);
        bput(&raw, oids[i].id, GIT_OID_RAWSZ);
    }
    CHECK(git_odb_write(out, odb, raw.b ? raw.b : "", raw.len,
                        GIT_OBJECT_TREE) == 0);
    free(raw.b);
    free(fb.b);
}


static void
write_commit(in_t *in, git_odb *odb, const git_oid *parent, git_oid *out,
    unsigned long t)
{
    char     hex[GIT_OID_HEXSZ + 1], line[160];
    unsigned k;
    git_oid  tree;
    buf_t    raw = { 0 }, l = { 0 };

    write_tree(odb, "", &tree);
    git_oid_tostr(hex, sizeof(hex), &tree);
    snprintf(line, sizeof(line), "tree %s\n", hex);
    bputs(&raw, line);
    if (parent) {
        git_oid_tostr(hex, sizeof(hex), parent);
        snprintf(line, sizeof(line), "parent %s\n", hex);
        bputs(&raw, line);
    }
    snprintf(line, sizeof(line), "author A <a@b> %lu +0000\n"
             "committer A <a@b> %lu +0000\n", t, t);
    bputs(&raw, line);

    k = byte(in);
    if (!(off & F_HEADER) && k >= 200) {
        static const char *h[] = { " ", "parent ", "author ", "tree ",
                                   "x-note ", "gpgsig x\n " };
        bputs(&raw, h[k % 6]);
        gen_line(in, &l);
        bput(&raw, l.b ? l.b : "", l.len);
        bputs(&raw, "\n");
    }
    bputs(&raw, "\nmsg ");
    gen_line(in, &l);
    bput(&raw, l.b ? l.b : "", l.len);
    k = byte(in);
    if (!(off & F_NUL) && k >= 200) {
        bput(&raw, "\0", 1);
        gen_line(in, &l);
        bput(&raw, l.b ? l.b : "", l.len);
    }
    bputs(&raw, "\n");
    CHECK(git_odb_write(out, odb, raw.b, raw.len, GIT_OBJECT_COMMIT) == 0);
    free(raw.b);
    free(l.b);
}


static void
edit(in_t *in)
{
    unsigned  op, fi, at, n, k;
    file_t   *f;
    buf_t     t;

    fi = byte(in) % MAXFILES;
    f = &files[fi];
    if (!f->live) {
        f->live = 1;
        f->mode = 0;
        f->enc = 0;
        f->nlines = 0;
    }
    op = byte(in) % 10;
    n = (unsigned) f->nlines;
    at = n ? byte(in) % n : 0;

    switch (op) {
    case 0: case 1:                 /* insert */
        if (n < MAXLINES) {
            t = f->line[n];
            memmove(&f->line[at + 1], &f->line[at], (n - at) * sizeof(buf_t));
            f->line[at] = t;
            gen_line(in, &f->line[at]);
            f->nlines++;
        }
        break;
    case 2:                         /* delete */
        if (n) {
            t = f->line[at];
            memmove(&f->line[at], &f->line[at + 1],
                    (n - at - 1) * sizeof(buf_t));
            f->line[n - 1] = t;
            f->nlines--;
        }
        break;
    case 3:                         /* replace */
        if (n) {
            gen_line(in, &f->line[at]);
        }
        break;
    case 4:                         /* move a line */
        if (n > 1) {
            k = byte(in) % n;
            t = f->line[at];
            f->line[at] = f->line[k];
            f->line[k] = t;
        }
        break;
    case 5:                         /* join with the next */
        if (at + 1 < n) {
            bput(&f->line[at], f->line[at + 1].b ? f->line[at + 1].b : "",
                 f->line[at + 1].len);
            t = f->line[at + 1];
            memmove(&f->line[at + 1], &f->line[at + 2],
                    (n - at - 2) * sizeof(buf_t));
            f->line[n - 1] = t;
            f->nlines--;
        }
        break;
    case 6:                         /* a leading char deleted */
        if (n && f->line[at].len && !(off & F_XDEL)) {
            memmove(f->line[at].b, f->line[at].b + 1, --f->line[at].len);
        }
        break;
    case 7:                         /* a trailing char deleted */
        if (n && f->line[at].len) {
            f->line[at].len--;
        }
        break;
    case 8:                         /* mode */
        if (!(off & F_MODE)) {
            f->mode = byte(in) % (sizeof(modes) / sizeof(modes[0]));
        }
        break;
    default:                        /* encoding */
        k = byte(in) % 3;
        if ((k == 1 && !(off & F_UTF16)) || (k == 2 && !(off & F_ZLIB))
            || k == 0)
        {
            f->enc = (int) k;
        }
    }
}


static int
rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void) st;
    (void) flag;
    (void) ftw;
    return remove(p);
}


static void
rm_root(void)
{
    rmdir(root);                    /* empty unless a push was kept */
}


static void
init(void)
{
    char             err[256];
    const char      *o;
    const bottle_t  *b;
    static bottle_policy_t *p;      /* kept: the secrets' bottle */
    static const char policy[] =
        "{\"bottles\": [{\"id\": \"b1\", \"token\": \"tok-0123456789abcdef\","
        " \"canary\": \"" CANARY "\", \"egress_tokens\": {\"API\": \""
        EGRESS "\"}, \"held_secrets\": {\"DB_PASSWORD\": \"" HELD "\"},"
        " \"routes\": []}]}";

    o = getenv("GG_DIFF_FUZZ_OFF");
    if (o) {
        off |= strstr(o, "mode") ? F_MODE : 0;
        off |= strstr(o, "header") ? F_HEADER : 0;
        off |= strstr(o, "nul") ? F_NUL : 0;
        off |= strstr(o, "tag") ? F_TAG : 0;
        off |= strstr(o, "utf16") ? F_UTF16 : 0;
        off |= strstr(o, "zlib") ? F_ZLIB : 0;
        off |= strstr(o, "xdel") ? F_XDEL : 0;
        off |= strstr(o, "name") ? OFF_NAME : 0;
    }

    git_libgit2_init();
    CHECK(bottle_policy_parse(&p, policy, sizeof(policy) - 1, "fuzz", err,
                              sizeof(err)) == 0);
    b = bottle_policy_find_id(p, "b1", 2);
    CHECK(b != NULL);
    CHECK(bottle_scan_db_create(&db, err, sizeof(err)) == 0);
    CHECK(bottle_scan_secrets_for_git(&sec, db, b, err, sizeof(err)) == 0);
    CHECK(bottle_scan_acquire(&rs, sec, BOTTLE_DLP_TOKEN_PATTERNS
                              | BOTTLE_DLP_KNOWN_SECRETS) == 0);
    CHECK(bottle_generic_create(&gen, err, sizeof(err)) == 0);

    snprintf(root, sizeof(root), "%s/gg_diff_fuzz.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    CHECK(mkdtemp(root) != NULL);
    atexit(rm_root);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int                i, ncommits, flags;
    char               dir[300], repo[320], q[320], hex[41], bhex[41],
                       input[400], err[512], line[160];
    size_t             k;
    in_t               in;
    buf_t              raw = { 0 };
    git_oid            base, head, tips[2], tag;
    const char        *refs[2];
    git_odb           *rodb, *qodb, *all;
    git_repository    *r;
    git_reference     *ref;
    git_packbuilder   *pb;
    gg_updates_t       u;
    gg_report_t        rep;
    unsigned long      t;

    if (db == NULL) {
        init();
    }

    in.p = data;
    in.n = size;
    in.i = 0;
    flags = (int) byte(&in);
    t = 1700000000;

    snprintf(dir, sizeof(dir), "%s/%lu", root, iter++);
    snprintf(repo, sizeof(repo), "%s/r.git", dir);
    snprintf(q, sizeof(q), "%s/q", dir);
    CHECK(git_repository_init(&r, repo, 1) == 0);
    CHECK(mkdir(q, 0700) == 0);
    CHECK(git_repository_odb(&rodb, r) == 0);
    CHECK(git_odb_open(&qodb, q) == 0);

    /* the base, on the remote */
    memset(files, 0, sizeof(files));
    ncommits = 1 + (int) (byte(&in) % 3);
    for (i = 0; i < ncommits; i++) {
        files[i].live = 1;
        files[i].nlines = (int) (byte(&in) % 12);
        for (k = 0; k < (size_t) files[i].nlines; k++) {
            gen_line(&in, &files[i].line[k]);
        }
    }
    write_commit(&in, rodb, NULL, &base, t);
    CHECK(git_reference_create(&ref, r, "refs/heads/main", &base, 1, NULL)
          == 0);
    git_reference_free(ref);

    /* the push: into the quarantine */
    head = base;
    ncommits = 1 + (int) (byte(&in) % 3);
    for (i = 0; i < ncommits; i++) {
        for (k = 0; k < 1 + byte(&in) % 4; k++) {
            edit(&in);
        }
        t += 60;
        if (i == ncommits - 1 && (flags & F_NAME) && !(off & OFF_NAME)) {
            extra_name = secrets[byte(&in) % 7];    /* the one-line ones */
        }
        write_commit(&in, qodb, &head, &head, t);
    }
    extra_name = NULL;
    tips[0] = head;
    refs[0] = "refs/heads/main";
    k = 1;
    if (!(off & F_TAG) && (flags & F_TAG)) {
        git_oid_tostr(hex, sizeof(hex), &head);
        snprintf(line, sizeof(line), "object %s\ntype commit\ntag t\n"
                 "tagger A <a@b> %lu +0000\n", hex, t);
        bputs(&raw, line);
        if (byte(&in) & 1) {
            bputs(&raw, "x-extra ");
            gen_line(&in, &files[0].line[MAXLINES - 1]);
            bput(&raw, files[0].line[MAXLINES - 1].b ?
                 files[0].line[MAXLINES - 1].b : "",
                 files[0].line[MAXLINES - 1].len);
            bputs(&raw, "\n");
        }
        bputs(&raw, "\nrelease");
        if (!(off & F_NUL) && (byte(&in) & 1)) {
            bput(&raw, "\0", 1);
        }
        gen_line(&in, &files[0].line[MAXLINES - 1]);
        bput(&raw, files[0].line[MAXLINES - 1].b ?
             files[0].line[MAXLINES - 1].b : "",
             files[0].line[MAXLINES - 1].len);
        bputs(&raw, "\n");
        CHECK(git_odb_write(&tag, qodb, raw.b, raw.len, GIT_OBJECT_TAG) == 0);
        tips[1] = tag;
        refs[1] = "refs/tags/t";
        k = 2;
    }

    /* the reference, over both object stores */
    CHECK(git_odb_new(&all) == 0);
    CHECK(git_odb_add_disk_alternate(all, q) == 0);
    snprintf(line, sizeof(line), "%s/objects", repo);
    CHECK(git_odb_add_disk_alternate(all, line) == 0);
    nfound = 0;
    reference(all, &base, tips, k, refs);

    /*
     * packed: the repository's objects into one pack, the quarantine's
     * into another (libgit2's deltas), their loose copies removed (else
     * git-gate asks git cat-file for the blobs)
     */
    if (flags & F_PACK) {
        static set_t  none, fresh;
        const char   *where[2];
        set_t        *sets[2];
        int           s;

        none.n = 0;
        fresh.n = 0;
        walk(all, &base, &none, &none);
        for (i = 0; i < (int) k; i++) {
            walk(all, &tips[i], &none, &fresh);
        }
        git_odb_add_disk_alternate(rodb, q);
        snprintf(line, sizeof(line), "%s/objects", repo);
        where[0] = line;
        where[1] = q;
        sets[0] = &none;
        sets[1] = &fresh;
        for (s = 0; s < 2; s++) {
            snprintf(input, sizeof(input), "%s/pack", where[s]);
            mkdir(input, 0700);
            CHECK(git_packbuilder_new(&pb, r) == 0);
            for (i = 0; i < (int) sets[s]->n; i++) {
                CHECK(git_packbuilder_insert(pb, &sets[s]->oid[i], NULL)
                      == 0);
            }
            CHECK(git_packbuilder_write(pb, input, 0, NULL, NULL) == 0);
            git_packbuilder_free(pb);
            for (i = 0; i < (int) sets[s]->n; i++) {
                git_oid_tostr(hex, sizeof(hex), &sets[s]->oid[i]);
                snprintf(input, sizeof(input), "%s/%.2s/%s", where[s], hex,
                         hex + 2);
                unlink(input);
            }
        }
    }

    /* the gate */
    git_oid_tostr(bhex, sizeof(bhex), &base);
    git_oid_tostr(hex, sizeof(hex), &tips[0]);
    snprintf(input, sizeof(input), "%s %s refs/heads/main\n", bhex, hex);
    if (k == 2) {
        git_oid_tostr(hex, sizeof(hex), &tips[1]);
        snprintf(input + strlen(input), sizeof(input) - strlen(input),
                 "%040d %s refs/tags/t\n", 0, hex);
    }
    CHECK(gg_updates_parse(&u, input, strlen(input), err, sizeof(err)) == 0);
    memset(&rep, 0, sizeof(rep));
    setenv("GIT_QUARANTINE_PATH", q, 1);

    if (getenv("GG_DIFF_FUZZ_DEBUG")) {
        for (k = 0; k < nfound; k++) {
            fprintf(stderr, "reference: %s in the %s %s %s\n", found[k].rule,
                    found[k].kind, found[k].commit, found[k].path);
        }
    }

    if (gg_scan_push(&rep, repo, q, &u, sec, err, sizeof(err)) == 0) {
        for (k = 0; k < nfound; k++) {
            if (!matched(&rep, &found[k])) {
                fprintf(stderr, "the gate missed a reference finding: rule %s"
                        " in the %s %s%s%s (mode %s), field of %zu bytes:\n",
                        found[k].rule, found[k].kind, found[k].commit,
                        found[k].path[0] ? " file " : "", found[k].path,
                        found[k].mode, found[k].field.len);
                fwrite(found[k].field.b, 1, found[k].field.len, stderr);
                fprintf(stderr, "\nthe push: %s (the quarantine %s, the "
                        "updates \"%s\"), kept\n", repo, q, input);
                fprintf(stderr, "the gate's report:\n");
                for (i = 0; i < (int) rep.n; i++) {
                    fprintf(stderr, "  rule %s where %s\n", rep.f[i].rule,
                            rep.f[i].where);
                }
                CHECK(!"every reference finding is the gate's");
            }
        }
    }

    for (k = 0; k < nfound; k++) {
        free(found[k].field.b);
    }
    gg_report_free(&rep);
    gg_updates_free(&u);
    git_odb_free(all);
    git_odb_free(qodb);
    git_odb_free(rodb);
    git_repository_free(r);
    for (i = 0; i < MAXFILES; i++) {
        for (k = 0; k < MAXLINES; k++) {
            free(files[i].line[k].b);
        }
    }
    memset(files, 0, sizeof(files));
    free(raw.b);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
