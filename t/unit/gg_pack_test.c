/*
 * Unit test of git-gate's pack reader (gitgate-helper/gg_pack.c).
 *
 * Real packs written by git: fast-import's delta chains, an aggressive
 * `git repack -adf --depth=50 --window=250`, a thin pack as a push sends
 * it (`git pack-objects --revs --thin`) fixed by `git index-pack
 * --fix-thin` as receive-pack does; every blob the reader returns must be
 * what `git cat-file blob` prints.  Then packs built here byte by byte and
 * broken on purpose (truncated, bad delta sizes, a copy out of the base,
 * op 0, an ofs-delta on itself, a ref-delta loop, a chain deeper than
 * GG_PACK_DEPTH, a size over GG_BLOB_MAX): each a clean error, never a
 * crash (run under ASan too: t/unit/gg_pack.t).  Every built pack is read
 * twice, through memory and from a file of the same bytes with pread()
 * (as a quarantine's pack over GG_PACK_COPY is): the same objects, the
 * same errors; and a real quarantine over GG_PACK_COPY is read so.
 */

#define _GNU_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <zlib.h>

#include "tap.h"
#include "sh.h"
#include "gg_blob.h"
#include "gg_pack.h"


static char  dir[256];


static unsigned
rnd(void)
{
    static uint64_t  s = 88172645463325252ULL;

    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (unsigned) s;
}


/* lines of words, each line unlike the others */
static void
lines(char **buf, size_t *len, size_t *cap, size_t n)
{
    static const char  *w[] = { "alpha", "beta", "gamma", "delta", "token",
                                "value", "len", "buf", "return", "static" };
    char                line[128];
    size_t              k;
    int                 m;

    for (k = 0; k < n; k++) {
        m = snprintf(line, sizeof(line), "%s %s = %u; /* %s */\n",
                     w[rnd() % 10], w[rnd() % 10], rnd(), w[rnd() % 10]);
        if (*len + (size_t) m > *cap) {
            *cap = (*cap + m) * 2;
            *buf = realloc(*buf, *cap);
        }
        memcpy(*buf + *len, line, (size_t) m);
        *len += (size_t) m;
    }
}


/*
 * A fast-import stream: 3 files through 40 commits, appended to,
 * edited inside (a line replaced, lines inserted), one shrunk, and one
 * big file of 300 KB (copies over 64 KB in its deltas)
 */
static int
fast_import(const char *repo)
{
    FILE    *f;
    char    *cmd, *file[4], *nb;
    size_t   len[4], cap[4], i, k, at;
    int      c;

    if (asprintf(&cmd, "git init -q --bare %s && git -C %s fast-import "
                 "--quiet --done", repo, repo) < 0)
    {
        return -1;
    }
    f = popen(cmd, "w");
    free(cmd);
    if (f == NULL) {
        return -1;
    }

    for (i = 0; i < 4; i++) {
        file[i] = NULL;
        len[i] = cap[i] = 0;
        lines(&file[i], &len[i], &cap[i], i == 3 ? 6000 : 200);
    }

    for (c = 1; c <= 40; c++) {
        for (i = 0; i < 4; i++) {
            switch ((c + i) % 4) {
            case 0:
                lines(&file[i], &len[i], &cap[i], 20);
                break;
            case 1:
                /* lines inserted in the middle */
                at = len[i] / 2;
                while (at > 0 && file[i][at - 1] != '\n') {
                    at--;
                }
                nb = NULL;
                k = 0;
                cap[i] = 0;
                {
                    size_t  nl = 0, ncap = 0;

                    nb = malloc(len[i] + 1);
                    memcpy(nb, file[i], at);
                    nl = at;
                    ncap = len[i] + 1;
                    lines(&nb, &nl, &ncap, 7);
                    if (nl + (len[i] - at) > ncap) {
                        ncap = nl + (len[i] - at);
                        nb = realloc(nb, ncap);
                    }
                    memcpy(nb + nl, file[i] + at, len[i] - at);
                    nl += len[i] - at;
                    free(file[i]);
                    file[i] = nb;
                    len[i] = nl;
                    cap[i] = ncap;
                }
                (void) k;
                break;
            case 2:
                /* the first few bytes changed */
                if (len[i] > 10) {
                    file[i][0] = (char) ('a' + c % 26);
                }
                break;
            default:
                /* shrunk by a tenth */
                if (len[i] > 2000) {
                    len[i] -= len[i] / 10;
                }
            }
            fprintf(f, "blob\nmark :%d\ndata %zu\n", c * 10 + (int) i,
                    len[i]);
            fwrite(file[i], 1, len[i], f);
            fprintf(f, "\n");
        }
        fprintf(f, "commit refs/heads/main\nmark :%d\ncommitter T <t@x> "
                "1700000000 +0000\ndata 2\nc\n", c * 10 + 9);
        if (c > 1) {
            fprintf(f, "from :%d\n", (c - 1) * 10 + 9);
        }
        for (i = 0; i < 4; i++) {
            fprintf(f, "M 100644 :%d f%zu.txt\n", c * 10 + (int) i, i);
        }
        fprintf(f, "\n");
        if (c == 20) {
            fprintf(f, "reset refs/heads/half\nfrom :%d\n\n", c * 10 + 9);
        }
    }
    fprintf(f, "done\n");

    for (i = 0; i < 4; i++) {
        free(file[i]);
    }
    return pclose(f) == 0 ? 0 : -1;
}


static int
hex2raw(unsigned char *raw, const char *hex)
{
    int       i;
    unsigned  v;

    for (i = 0; i < GG_PACK_OIDSZ; i++) {
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
            return -1;
        }
        raw[i] = (unsigned char) v;
    }
    return 0;
}


/* what git says blob hex is */
static char *
git_blob(const char *repo, const char *hex, size_t *len)
{
    return sh_out(len, "git -C %s cat-file blob %s", repo, hex);
}


/*
 * The blob oid as extents (gg_pack_extents()) against what gg_pack_get()
 * gave (get_rc, want): built exactly when it was read, its bytes the
 * same, read through the extents; never built when the read failed.  0
 * when they agree.
 */
static size_t ext_checked;

static int
ext_agrees(gg_pack_t *p, const unsigned char *oid, int get_rc,
    const unsigned char *want, size_t wlen)
{
    int            rc, bad;
    char           err[256];
    size_t         i;
    uint64_t       at;
    gg_extents_t   x;

    memset(&x, 0, sizeof(x));
    rc = gg_pack_extents(&x, p, oid, 0, err, sizeof(err));
    ext_checked++;
    bad = 0;
    if (get_rc != 0) {
        bad = rc == 0;
    } else if (rc != 0) {
        bad = 1;
    } else {
        at = 0;
        for (i = 0; i < x.n && !bad; i++) {
            if (x.e[i].pos != at || x.e[i].len > wlen - at
                || x.e[i].p != x.e[i].src->data + x.e[i].soff
                || memcmp(x.e[i].p, want + at, x.e[i].len) != 0)
            {
                bad = 1;
            }
            at += x.e[i].len;
        }
        bad |= at != wlen || x.len != wlen;
    }
    if (bad) {
        printf("# extents: rc %d against the read's %d (%s)\n", rc, get_rc,
               rc ? err : "bytes differ");
    }
    gg_extents_release(p, &x);
    gg_extents_free(&x);
    return bad ? -1 : 0;
}


/* every blob of repo (and of its quarantine q, when not NULL) read by
 * the pack reader equals git's; the count */
static void
check_repo(const char *repo, const char *q, const char *what,
    uint64_t cache)
{
    int          rc, bad, missing, xbad;
    char         cmd[1024], line[256], err[256], *want;
    size_t       wlen = 0, n, deltas;
    FILE        *f;
    gg_pack_t   *p;
    gg_pobj_t   *o;
    unsigned char oid[GG_PACK_OIDSZ];

    rc = gg_pack_open(&p, repo, q, cache, err, sizeof(err));
    ok(rc == 0, "%s: packs open", what);
    if (rc != 0) {
        return;
    }
    if (q != NULL) {
        /* git sees the quarantine's objects as receive-pack's hook does */
        setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", q, 1);
    }
    ok(gg_pack_count(p) > 0, "%s: %zu pack(s) ours", what, gg_pack_count(p));

    snprintf(cmd, sizeof(cmd), "git -C %s cat-file --batch-all-objects "
             "--batch-check='%%(objectname) %%(objecttype) "
             "%%(deltabase)'", repo);
    f = popen(cmd, "r");
    n = 0;
    bad = 0;
    xbad = 0;
    missing = 0;
    deltas = 0;
    while (f && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line + 41, "blob", 4) != 0) {
            continue;
        }
        if (strncmp(line + 46, "0000000000", 10) != 0) {
            deltas++;
        }
        line[40] = '\0';
        hex2raw(oid, line);
        rc = gg_pack_get(&o, p, oid, err, sizeof(err));
        if (rc != 0) {
            printf("# %s: %s: rc %d %s\n", what, line, rc, err);
            missing++;
            continue;
        }
        want = git_blob(repo, line, &wlen);
        if (o->type != GG_OBJ_BLOB || want == NULL || wlen != o->len
            || memcmp(want, o->data, wlen) != 0)
        {
            printf("# %s: %s differs (%zu vs %zu)\n", what, line, o->len,
                   wlen);
            bad++;
        } else if (ext_agrees(p, oid, 0, (unsigned char *) want, wlen)
                   != 0)
        {
            printf("# %s: %s as extents differs\n", what, line);
            xbad++;
        }
        free(want);
        gg_pack_put(p, o);
        n++;
    }
    if (f) {
        pclose(f);
    }
    ok(n > 20 && bad == 0 && missing == 0, "%s: %zu blobs (%zu deltas) as "
       "git reads them; %d differ, %d unread", what, n, deltas, bad,
       missing);
    ok(deltas > 0, "%s: the pack has deltas", what);
    ok(xbad == 0, "%s: every blob as extents (none built) the same bytes; "
       "%d differ", what, xbad);
    gg_pack_close(p);
    unsetenv("GIT_ALTERNATE_OBJECT_DIRECTORIES");
}


/* packs built here */

typedef struct {
    unsigned char  *d;
    size_t          len, cap;
} buf_t;


static void
put(buf_t *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->d = realloc(b->d, b->cap);
    }
    memcpy(b->d + b->len, p, n);
    b->len += n;
}


static void
put32(buf_t *b, uint32_t v)
{
    unsigned char  x[4] = { v >> 24, v >> 16, v >> 8, v };

    put(b, x, 4);
}


/* an entry's header: type and size */
static void
put_hdr(buf_t *b, int type, uint64_t size)
{
    unsigned char  c;

    c = (unsigned char) ((type << 4) | (size & 15));
    size >>= 4;
    while (size) {
        put(b, (unsigned char[]) { c | 0x80 }, 1);
        c = size & 0x7f;
        size >>= 7;
    }
    put(b, &c, 1);
}


static void
put_ofs(buf_t *b, uint64_t d)
{
    unsigned char  x[16];
    int            i;

    i = 15;
    x[i] = d & 0x7f;
    while (d >>= 7) {
        d--;
        x[--i] = 0x80 | (d & 0x7f);
    }
    put(b, x + i, (size_t) (16 - i));
}


static void
put_zlib(buf_t *b, const void *p, size_t n)
{
    uLongf         out;
    unsigned char *z;

    out = compressBound(n);
    z = malloc(out);
    compress2(z, &out, p, n, 6);
    put(b, z, out);
    free(z);
}


static void
put_varint(buf_t *b, uint64_t v)
{
    unsigned char  c;

    do {
        c = v & 0x7f;
        v >>= 7;
        if (v) {
            c |= 0x80;
        }
        put(b, &c, 1);
    } while (v);
}


typedef struct {
    unsigned char   oid[GG_PACK_OIDSZ];
    uint64_t        off;
} ent_t;


static int
ent_cmp(const void *a, const void *b)
{
    return memcmp(((const ent_t *) a)->oid, ((const ent_t *) b)->oid,
                  GG_PACK_OIDSZ);
}


/* the idx v2 of entries e (oids made up, the checksums the pack's) */
static void
make_idx(buf_t *idx, const buf_t *pack, ent_t *e, size_t n)
{
    size_t    i, k, n64;
    uint32_t  count;

    qsort(e, n, sizeof(*e), ent_cmp);
    idx->len = 0;
    put(idx, "\377tOc", 4);
    put32(idx, 2);
    for (i = 0; i < 256; i++) {
        count = 0;
        for (k = 0; k < n; k++) {
            count += e[k].oid[0] <= i;
        }
        put32(idx, count);
    }
    for (k = 0; k < n; k++) {
        put(idx, e[k].oid, GG_PACK_OIDSZ);
    }
    for (k = 0; k < n; k++) {
        put32(idx, 0);
    }
    n64 = 0;
    for (k = 0; k < n; k++) {
        if (e[k].off >= 0x80000000u) {
            put32(idx, 0x80000000u | (uint32_t) n64++);
        } else {
            put32(idx, (uint32_t) e[k].off);
        }
    }
    for (k = 0; k < n; k++) {
        if (e[k].off >= 0x80000000u) {
            put32(idx, (uint32_t) (e[k].off >> 32));
            put32(idx, (uint32_t) e[k].off);
        }
    }
    put(idx, pack->d + pack->len - GG_PACK_OIDSZ, GG_PACK_OIDSZ);
    put(idx, "idx-checksum-made-up", GG_PACK_OIDSZ);
}


static void
pack_start(buf_t *pack, uint32_t n)
{
    pack->len = 0;
    put(pack, "PACK", 4);
    put32(pack, 2);
    put32(pack, n);
}


static void
pack_end(buf_t *pack)
{
    put(pack, "pack-checksum-madeup", GG_PACK_OIDSZ);
}


static void
oid_of(unsigned char *oid, int k)
{
    memset(oid, 0, GG_PACK_OIDSZ);
    oid[0] = (unsigned char) (k * 37);
    oid[1] = (unsigned char) (k >> 8);
    oid[2] = (unsigned char) k;
    oid[19] = 1;
}


static size_t ext_bad, fd_bad, fd_checked;


/* a file of b's bytes (memfd), or -1 */
static int
memfd_of(const buf_t *b)
{
    int  fd;

    fd = memfd_create("gg_pack_test", MFD_CLOEXEC);
    if (fd >= 0 && write(fd, b->d, b->len) != (ssize_t) b->len) {
        close(fd);
        fd = -1;
    }
    return fd;
}


/* entry k read from a file of pack's bytes with pread(): the same rc as
 * through memory, and o's bytes (o NULL: no object); fd_bad counts where
 * not */
static void
get_k_fd(const buf_t *idx, const buf_t *pack, const unsigned char *oid,
    int rc, const gg_pobj_t *o, uint64_t cache)
{
    int         fd, rc2;
    char        err[256];
    gg_pack_t  *p;
    gg_pobj_t  *o2;

    fd_checked++;
    fd = memfd_of(pack);
    /* (no pack bytes in memory: every read must be the file's) */
    if (fd < 0 || gg_pack_open_mem(&p, idx->d, idx->len, NULL, pack->len,
                                   fd, cache, err, sizeof(err)) != 0)
    {
        fd_bad++;
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    rc2 = gg_pack_get(&o2, p, oid, err, sizeof(err));
    if (rc2 != rc) {
        printf("# from the file: rc %d, through memory %d (%s)\n", rc2, rc,
               err);
        fd_bad++;
    } else if (rc2 == 0) {
        if (o == NULL || o2->len != o->len || o2->type != o->type
            || memcmp(o2->data, o->data, o->len) != 0)
        {
            fd_bad++;
        }
        gg_pack_put(p, o2);
    }
    gg_pack_close(p);
    close(fd);
}


/* get entry k of a pack: its rc, data compared to want if given; the
 * same entry as extents must agree (ext_bad counts where not), and read
 * from a file (fd_bad) */
static int
get_k(const buf_t *idx, const buf_t *pack, int k, const char *want,
    char *err, size_t errlen, uint64_t cache)
{
    int            rc;
    gg_pack_t     *p;
    gg_pobj_t     *o;
    unsigned char  oid[GG_PACK_OIDSZ];

    if (gg_pack_open_mem(&p, idx->d, idx->len, pack->d, pack->len, -1,
                         cache, err, errlen) != 0)
    {
        return -2;
    }
    if (gg_pack_count(p) != 1) {
        gg_pack_close(p);
        return -3;
    }
    oid_of(oid, k);
    err[0] = '\0';
    rc = gg_pack_get(&o, p, oid, err, errlen);
    get_k_fd(idx, pack, oid, rc, rc == 0 ? o : NULL, cache);
    if (rc == 0) {
        if (want != NULL
            && (o->len != strlen(want) || memcmp(o->data, want, o->len)))
        {
            rc = -4;
        }
        /* the same object as extents, on the same reader */
        if (o->type == GG_OBJ_BLOB
            && ext_agrees(p, oid, 0, o->data, o->len) != 0)
        {
            ext_bad++;
        }
        gg_pack_put(p, o);
    } else if (ext_agrees(p, oid, rc, NULL, 0) != 0) {
        ext_bad++;
    }
    gg_pack_close(p);
    return rc;
}


/* a delta: sizes, then raw ops */
static void
delta(buf_t *d, uint64_t src, uint64_t dst, const void *ops, size_t n)
{
    d->len = 0;
    put_varint(d, src);
    put_varint(d, dst);
    put(d, ops, n);
}


static void
synthetic(void)
{
    int            rc, i;
    char           err[256];
    buf_t          pack = { 0 }, idx = { 0 }, d = { 0 };
    ent_t          e[8];
    uint64_t       o0, o1, o2;
    const char    *base = "hello world\nsecond line\n";
    /* copy base[0..12), insert "again\n", copy base[12..24) */
    unsigned char  ops[] = { 0x90, 12, 6, 'a', 'g', 'a', 'i', 'n', '\n',
                             0x91, 12, 12 };
    const char    *want = "hello world\nagain\nsecond line\n";

    /* a blob, an ofs-delta on it, a ref-delta on the ofs-delta */
    pack_start(&pack, 3);
    o0 = pack.len;
    put_hdr(&pack, GG_OBJ_BLOB, strlen(base));
    put_zlib(&pack, base, strlen(base));
    o1 = pack.len;
    delta(&d, strlen(base), strlen(want), ops, sizeof(ops));
    put_hdr(&pack, GG_OBJ_OFS_DELTA, d.len);
    put_ofs(&pack, o1 - o0);
    put_zlib(&pack, d.d, d.len);
    o2 = pack.len;
    {
        /* the identity delta over want */
        unsigned char  id[] = { 0x90, (unsigned char) strlen(want) };

        delta(&d, strlen(want), strlen(want), id, sizeof(id));
    }
    put_hdr(&pack, GG_OBJ_REF_DELTA, d.len);
    oid_of(e[0].oid, 1);
    put(&pack, e[0].oid, GG_PACK_OIDSZ);
    put_zlib(&pack, d.d, d.len);
    pack_end(&pack);
    oid_of(e[0].oid, 0);
    e[0].off = o0;
    oid_of(e[1].oid, 1);
    e[1].off = o1;
    oid_of(e[2].oid, 2);
    e[2].off = o2;
    make_idx(&idx, &pack, e, 3);

    is_int(get_k(&idx, &pack, 0, base, err, sizeof(err), 0), 0,
           "built pack: a whole blob");
    is_int(get_k(&idx, &pack, 1, want, err, sizeof(err), 0), 0,
           "built pack: an ofs-delta");
    is_int(get_k(&idx, &pack, 2, want, err, sizeof(err), 0), 0,
           "built pack: a ref-delta on an ofs-delta");
    is_int(get_k(&idx, &pack, 2, want, err, sizeof(err), 1), 0,
           "built pack: with a cache of 1 byte");
    is_int(get_k(&idx, &pack, 7, NULL, err, sizeof(err), 0), 1,
           "built pack: an oid in no pack is not found");

    /* every truncation of the pack (its trailer kept) fails cleanly */
    {
        buf_t  t = { 0 };
        int    crashed = 0, okays = 0;
        size_t cut;

        for (cut = 13; cut < pack.len - GG_PACK_OIDSZ; cut++) {
            t.len = 0;
            put(&t, pack.d, cut);
            put(&t, "pack-checksum-madeup", GG_PACK_OIDSZ);
            for (i = 0; i < 3; i++) {
                rc = get_k(&idx, &t, i, i ? want : base, err, sizeof(err),
                           0);
                if (rc == 0) {
                    okays++;
                } else if (rc != -1 && rc != -2 && rc != 1) {
                    crashed++;
                }
            }
        }
        ok(crashed == 0, "truncated packs: clean errors (%d reads of "
           "entries before the cut passed)", okays);
        is_int(get_k(&idx, &t, 2, NULL, err, sizeof(err), 0) != 0, 1,
               "truncated in the last entry: an error (%s)", err);
        free(t.d);
    }

    /* the pack's checksum not the idx's: not ours (not found) */
    {
        buf_t  t = { 0 };

        put(&t, pack.d, pack.len);
        t.d[t.len - 1] ^= 1;
        is_int(get_k(&idx, &t, 0, NULL, err, sizeof(err), 0), -3,
               "a pack its idx does not name is left out");
        free(t.d);
    }

    /* broken deltas, each an ofs-delta on the blob at o0 */
    {
        struct {
            const char     *what;
            uint64_t        src, dst;
            unsigned char   ops[16];
            size_t          n;
            const char     *err;
        } bad[] = {
            { "a delta whose source size is not its base's", 5, 12,
              { 0x90, 12 }, 2, "corrupt" },
            { "a delta making fewer bytes than it says", 24, 30,
              { 0x90, 12 }, 2, "corrupt" },
            { "a delta making more bytes than it says", 24, 5,
              { 0x90, 12 }, 2, "corrupt" },
            { "a copy out of the base", 24, 30,
              { 0x91, 20, 10 }, 3, "corrupt" },
            { "a copy of 0x10000 bytes (size 0) from a small base", 24,
              0x10000, { 0x80 }, 1, "corrupt" },
            { "op 0", 24, 1, { 0, 1, 'x' }, 3, "corrupt" },
            { "an insert cut short", 24, 9, { 9, 'a', 'b' }, 3, "corrupt" },
            { "a copy's offset bytes cut short", 24, 9, { 0x8f, 1 }, 2,
              "corrupt" },
        };
        size_t  k;

        for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
            pack_start(&pack, 2);
            o0 = pack.len;
            put_hdr(&pack, GG_OBJ_BLOB, strlen(base));
            put_zlib(&pack, base, strlen(base));
            o1 = pack.len;
            delta(&d, bad[k].src, bad[k].dst, bad[k].ops, bad[k].n);
            put_hdr(&pack, GG_OBJ_OFS_DELTA, d.len);
            put_ofs(&pack, o1 - o0);
            put_zlib(&pack, d.d, d.len);
            pack_end(&pack);
            oid_of(e[0].oid, 0);
            e[0].off = o0;
            oid_of(e[1].oid, 1);
            e[1].off = o1;
            make_idx(&idx, &pack, e, 2);
            rc = get_k(&idx, &pack, 1, NULL, err, sizeof(err), 0);
            ok(rc == -1 && strstr(err, bad[k].err) != NULL, "%s: %s",
               bad[k].what, err);
        }
    }

    /* an entry whose header says more or fewer bytes than it inflates to */
    for (i = 0; i < 2; i++) {
        pack_start(&pack, 1);
        o0 = pack.len;
        put_hdr(&pack, GG_OBJ_BLOB, strlen(base) + (i ? 1 : -1));
        put_zlib(&pack, base, strlen(base));
        pack_end(&pack);
        oid_of(e[0].oid, 0);
        e[0].off = o0;
        make_idx(&idx, &pack, e, 1);
        rc = get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0);
        ok(rc == -1, "a size %s than the data: %s", i ? "bigger" : "smaller",
           err);
    }

    /*
     * zlib streams git's zlib would not inflate (index-pack refuses them;
     * the scan must not read bytes of its own from them): a wrong
     * Adler-32, the stream cut short (its checksum's last bytes the
     * pack's trailer), a preset dictionary asked for (FDICT)
     */
    for (i = 0; i < 3; i++) {
        size_t  zs;

        pack_start(&pack, 1);
        o0 = pack.len;
        put_hdr(&pack, GG_OBJ_BLOB, strlen(base));
        zs = pack.len;
        put_zlib(&pack, base, strlen(base));
        if (i == 0) {
            pack.d[pack.len - 1] ^= 1;
        } else if (i == 1) {
            pack.len -= 3;
        } else {
            /* FLG with FDICT, FCHECK kept a multiple of 31 */
            pack.d[zs + 1] = 0x20;
            pack.d[zs + 1] += 31 - (pack.d[zs] * 256 + 0x20) % 31;
        }
        pack_end(&pack);
        oid_of(e[0].oid, 0);
        e[0].off = o0;
        make_idx(&idx, &pack, e, 1);
        rc = get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0);
        ok(rc == -1, "a zlib stream with %s: %s",
           i == 0 ? "a wrong Adler-32" : i == 1 ? "its end cut"
           : "a preset dictionary", err);
    }

    /* a size over GG_BLOB_MAX, and one a small pack cannot hold */
    for (i = 0; i < 2; i++) {
        pack_start(&pack, 1);
        o0 = pack.len;
        put_hdr(&pack, GG_OBJ_BLOB, i ? GG_BLOB_MAX + 1 : 100000000);
        put_zlib(&pack, base, strlen(base));
        pack_end(&pack);
        make_idx(&idx, &pack, e, 1);
        rc = get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0);
        ok(rc == (i ? -2 : -1), "a size of %s: %s",
           i ? "GG_BLOB_MAX + 1" : "100 MB", err);
    }

    /* type 5 (reserved) */
    pack_start(&pack, 1);
    put_hdr(&pack, 5, strlen(base));
    put_zlib(&pack, base, strlen(base));
    pack_end(&pack);
    make_idx(&idx, &pack, e, 1);
    ok(get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0) == -1,
       "a reserved type: %s", err);

    /* an ofs-delta on itself (offset 0) and one before the pack */
    for (i = 0; i < 2; i++) {
        pack_start(&pack, 1);
        o0 = pack.len;
        delta(&d, 24, 24, (unsigned char[]) { 0x90, 24 }, 2);
        put_hdr(&pack, GG_OBJ_OFS_DELTA, d.len);
        put_ofs(&pack, i ? o0 : 0);
        put_zlib(&pack, d.d, d.len);
        pack_end(&pack);
        oid_of(e[0].oid, 0);
        e[0].off = o0;
        make_idx(&idx, &pack, e, 1);
        ok(get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0) == -1,
           "an ofs-delta %s: %s", i ? "before the pack" : "on itself", err);
    }

    /* two ref-deltas on each other, and one on itself */
    for (i = 0; i < 2; i++) {
        pack_start(&pack, 2);
        delta(&d, 24, 24, (unsigned char[]) { 0x90, 24 }, 2);
        e[0].off = pack.len;
        oid_of(e[0].oid, 0);
        put_hdr(&pack, GG_OBJ_REF_DELTA, d.len);
        oid_of(e[1].oid, i ? 1 : 0);
        put(&pack, e[1].oid, GG_PACK_OIDSZ);
        put_zlib(&pack, d.d, d.len);
        e[1].off = pack.len;
        oid_of(e[1].oid, 1);
        put_hdr(&pack, GG_OBJ_REF_DELTA, d.len);
        put(&pack, e[0].oid, GG_PACK_OIDSZ);
        put_zlib(&pack, d.d, d.len);
        pack_end(&pack);
        make_idx(&idx, &pack, e, 2);
        ok(get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0) == -1
           && strstr(err, "deeper") != NULL,
           "a ref-delta %s: %s", i ? "loop of two" : "on itself", err);
    }

    /* a depth bomb: a chain of GG_PACK_DEPTH + 10 ofs-deltas */
    {
        int   n = GG_PACK_DEPTH + 10;
        ent_t last;

        pack_start(&pack, 1);
        o0 = pack.len;
        put_hdr(&pack, GG_OBJ_BLOB, strlen(base));
        put_zlib(&pack, base, strlen(base));
        delta(&d, 24, 24, (unsigned char[]) { 0x90, 24 }, 2);
        for (i = 0; i < n; i++) {
            o1 = pack.len;
            put_hdr(&pack, GG_OBJ_OFS_DELTA, d.len);
            put_ofs(&pack, o1 - o0);
            put_zlib(&pack, d.d, d.len);
            o0 = o1;
        }
        pack_end(&pack);
        oid_of(last.oid, 0);
        last.off = o1;
        make_idx(&idx, &pack, &last, 1);
        ok(get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0) == -1
           && strstr(err, "deeper") != NULL, "a depth bomb: %s", err);

        /* the same chain at GG_PACK_DEPTH - 1 deep reads */
        pack_start(&pack, 1);
        o0 = pack.len;
        put_hdr(&pack, GG_OBJ_BLOB, strlen(base));
        put_zlib(&pack, base, strlen(base));
        for (i = 0; i < GG_PACK_DEPTH - 1; i++) {
            o1 = pack.len;
            put_hdr(&pack, GG_OBJ_OFS_DELTA, d.len);
            put_ofs(&pack, o1 - o0);
            put_zlib(&pack, d.d, d.len);
            o0 = o1;
        }
        pack_end(&pack);
        last.off = o1;
        make_idx(&idx, &pack, &last, 1);
        is_int(get_k(&idx, &pack, 0, base, err, sizeof(err), 0), 0,
               "a chain %d deep reads", GG_PACK_DEPTH - 1);
    }

    /* an offset in the idx past the pack, and a 64-bit offset */
    pack_start(&pack, 1);
    put_hdr(&pack, GG_OBJ_BLOB, strlen(base));
    put_zlib(&pack, base, strlen(base));
    pack_end(&pack);
    oid_of(e[0].oid, 0);
    e[0].off = (uint64_t) 1 << 33;
    make_idx(&idx, &pack, e, 1);
    ok(get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0) != 0,
       "a 64-bit offset past the pack is not read");

    /* idx versions and sizes that are not ours */
    e[0].off = 12;
    make_idx(&idx, &pack, e, 1);
    is_int(get_k(&idx, &pack, 0, base, err, sizeof(err), 0), 0,
           "the idx again, right");
    idx.d[7] = 3;
    is_int(get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0), -3,
           "an idx v3 is left out");
    idx.d[7] = 2;
    idx.len -= 4;
    is_int(get_k(&idx, &pack, 0, NULL, err, sizeof(err), 0), -3,
           "a cut idx is left out");

    /* the delta iterator: 0x10000 for a copy of size 0 */
    {
        gg_delta_iter_t  it;
        gg_delta_op_t    op;

        delta(&d, 0x20000, 0x10000, (unsigned char[]) { 0x81, 1 }, 2);
        ok(gg_delta_init(&it, d.d, d.len) == 0
           && gg_delta_next(&it, &op) == 1 && op.copy && op.off == 1
           && op.len == 0x10000 && gg_delta_next(&it, &op) == 0,
           "a copy of size 0 copies 0x10000 bytes");
    }

    free(pack.d);
    free(idx.d);
    free(d.d);
}


/*
 * A blob as stored deflate blocks: blk bytes each (0: zlib's own, at
 * level 0), the header's BFINAL set on block `last` (-1: on the last
 * one), block `bad` with NLEN wrong, block `fixed` a fixed-Huffman one
 * (-1: none of those)
 */
static void
put_stored(buf_t *b, const unsigned char *p, size_t n, size_t blk, int last,
    int bad, int fixed)
{
    int            k;
    size_t         at, m;
    unsigned char  h[5];
    uLong          a;

    if (blk == 0) {
        uLongf          out = compressBound(n);
        unsigned char  *z = malloc(out);

        compress2(z, &out, p, n, 0);
        put(b, z, out);
        free(z);
        return;
    }
    put(b, "\x78\x01", 2);
    for (at = 0, k = 0; at < n; at += m, k++) {
        m = n - at < blk ? n - at : blk;
        if (k == fixed) {
            /* BFINAL, BTYPE 01, the end-of-block code: an empty block */
            put(b, "\x03\x00", 2);
            break;
        }
        h[0] = (at + m == n || k == last) ? 1 : 0;
        h[1] = (unsigned char) m;
        h[2] = (unsigned char) (m >> 8);
        h[3] = (unsigned char) ~m ^ (k == bad);
        h[4] = (unsigned char) (~m >> 8);
        put(b, h, 5);
        put(b, p + at, m);
        if (k == last) {
            break;
        }
    }
    a = adler32(1, p, (uInt) n);
    put32(b, (uint32_t) a);
}


/* what a pack of the one blob given by put_stored()'s arguments lets
 * gg_stored_read() read: ranges at random, agreeing with src; the
 * number of reads that failed, or -1 when gg_pack_stored() refused it.
 * Each read from a file of the pack's bytes too, the same (fd_bad). */
static int
stored_reads(const unsigned char *src, size_t n, uint64_t size, size_t blk,
    int last, int bad, int fixed, int reads, size_t *mism)
{
    int            k, failed, rc, fd;
    char           err[256];
    buf_t          pack = { 0 }, idx = { 0 };
    ent_t          e[1];
    uint64_t       off, len;
    gg_pack_t     *p, *p2;
    gg_stored_t    st, st2;
    unsigned char *dst, *dst2;

    memset(&st, 0, sizeof(st));
    memset(&st2, 0, sizeof(st2));
    pack_start(&pack, 1);
    e[0].off = pack.len;
    oid_of(e[0].oid, 5);
    put_hdr(&pack, GG_OBJ_BLOB, n);
    put_stored(&pack, src, n, blk, last, bad, fixed);
    pack_end(&pack);
    make_idx(&idx, &pack, e, 1);

    failed = -1;
    *mism = 0;
    dst = malloc(n + 1);
    dst2 = malloc(n + 1);
    fd = memfd_of(&pack);
    if (fd < 0
        || gg_pack_open_mem(&p, idx.d, idx.len, pack.d, pack.len, -1, 0,
                            err, sizeof(err)) != 0)
    {
        goto done;
    }
    if (gg_pack_open_mem(&p2, idx.d, idx.len, NULL, pack.len, fd, 0, err,
                         sizeof(err)) != 0)
    {
        gg_pack_close(p);
        goto done;
    }
    rc = gg_pack_stored(&st, p, e[0].oid, size);
    fd_checked++;
    fd_bad += gg_pack_stored(&st2, p2, e[0].oid, size) != rc;
    if (rc == 1) {
        failed = 0;
        for (k = 0; k < reads; k++) {
            /* from the end backwards first, then anywhere */
            off = k < 20 ? n - (n / 20) * (k + 1) : rnd() % n;
            len = rnd() % (n - off < 70000 ? n - off + 1 : 70000);
            rc = gg_stored_read(&st, off, len, dst);
            fd_checked++;
            if (gg_stored_read(&st2, off, len, dst2) != rc
                || (rc == 0 && memcmp(dst, dst2, len) != 0))
            {
                fd_bad++;
            }
            if (rc != 0) {
                failed++;
            } else if (memcmp(dst, src + off, len) != 0) {
                (*mism)++;
            }
        }
        /* past the end: never */
        failed += gg_stored_read(&st, n - 1, 2, dst) == 0 ? 1000 : 0;
        failed += gg_stored_read(&st2, n - 1, 2, dst) == 0 ? 1000 : 0;
    }
    gg_pack_close(p2);
    gg_pack_close(p);

done:

    if (fd >= 0) {
        close(fd);
    }
    gg_stored_free(&st);
    gg_stored_free(&st2);
    free(dst2);
    free(dst);
    free(pack.d);
    free(idx.d);
    return failed;
}


/*
 * Entries big enough to be read from the file with pread() in several
 * chunks (GG_PREAD_CHUNK): get_k() reads each
 * through memory and from the file; both the same, every hostile stream
 * an error
 */
static void
pread_cases(void)
{
    int          i, rc;
    char         err[256], *src;
    size_t       n, k;
    buf_t        pack = { 0 }, idx = { 0 };
    ent_t        e[1];
    const char  *what[] = {
        "deflated", "stored blocks", "a size bigger than its data",
        "a size smaller than its data", "a wrong Adler-32",
        "its end cut (its last bytes the trailer's)",
        "another stream after it"
    };

    n = 600000;
    src = malloc(n + 1);
    for (k = 0; k < n; k++) {
        src[k] = k % 61 == 60 ? '\n' : (char) ('a' + rnd() % 26);
    }
    src[n] = '\0';
    for (i = 0; i < 7; i++) {
        pack_start(&pack, 1);
        e[0].off = pack.len;
        oid_of(e[0].oid, 0);
        put_hdr(&pack, GG_OBJ_BLOB, n + (i == 2) - (i == 3));
        if (i == 1) {
            put_stored(&pack, (unsigned char *) src, n, 0, -1, -1, -1);
        } else {
            put_zlib(&pack, src, n);
        }
        if (i == 4) {
            pack.d[pack.len - 1] ^= 1;
        } else if (i == 5) {
            pack.len -= 3;
        } else if (i == 6) {
            put_zlib(&pack, src, 1000);
        }
        pack_end(&pack);
        make_idx(&idx, &pack, e, 1);
        rc = get_k(&idx, &pack, 0, i < 2 || i == 6 ? src : NULL, err,
                   sizeof(err), 0);
        ok(rc == (i < 2 || i == 6 ? 0 : -1), "%zu bytes, %s: %s", n,
           what[i], rc == 0 ? "read" : err);
    }
    free(pack.d);
    free(idx.d);
    free(src);
}


static void
stored(void)
{
    int             r;
    size_t          n, cap, mism;
    char           *src;

    src = NULL;
    n = cap = 0;
    lines(&src, &n, &cap, 8000);

    r = stored_reads((unsigned char *) src, n, n, 0, -1, -1, -1, 3000,
                     &mism);
    ok(r == 0 && mism == 0, "stored blocks (zlib, level 0), %zu bytes: "
       "3000 ranges read as written (%d failed, %zu differ)", n, r, mism);
    r = stored_reads((unsigned char *) src, n, n, 1500, -1, -1, -1, 3000,
                     &mism);
    ok(r == 0 && mism == 0, "stored blocks of 1500 bytes: 3000 ranges "
       "read as written (%d failed, %zu differ)", r, mism);
    ok(stored_reads((unsigned char *) src, n, n + 1, 0, -1, -1, -1, 1,
                    &mism) == -1, "stored blocks: another size than the "
       "entry's: not taken");
    {
        buf_t       pack = { 0 }, idx = { 0 };
        ent_t       e[1];
        char        err[256];
        gg_pack_t  *p;
        gg_stored_t st;

        memset(&st, 0, sizeof(st));
        pack_start(&pack, 1);
        e[0].off = pack.len;
        oid_of(e[0].oid, 5);
        put_hdr(&pack, GG_OBJ_BLOB, n);
        put_zlib(&pack, src, n);
        pack_end(&pack);
        make_idx(&idx, &pack, e, 1);
        ok(gg_pack_open_mem(&p, idx.d, idx.len, pack.d, pack.len, -1, 0,
                            err, sizeof(err)) == 0
           && gg_pack_stored(&st, p, e[0].oid, n) == 0,
           "a compressed entry: not taken as stored");
        gg_pack_close(p);
        free(pack.d);
        free(idx.d);
    }
    r = stored_reads((unsigned char *) src, n, n, 1500, -1, 40, -1, 200,
                     &mism);
    ok(r > 0 && r < 200 && mism == 0, "a block whose NLEN is wrong: the "
       "reads that reach it fail (%d of 200), the others as written", r);
    r = stored_reads((unsigned char *) src, n, n, 1500, 40, -1, -1, 200,
                     &mism);
    ok(r > 0 && r < 200 && mism == 0, "the last block early: the reads "
       "past it fail (%d of 200), the others as written", r);
    r = stored_reads((unsigned char *) src, n, n, 1500, -1, -1, 40, 200,
                     &mism);
    ok(r > 0 && r < 200 && mism == 0, "a fixed-Huffman block after stored "
       "ones: the reads that reach it fail (%d of 200)", r);
    r = stored_reads((unsigned char *) src, n, n, 100, -1, -1, -1, 200,
                     &mism);
    ok(r > 0 && mism == 0, "blocks of 100 bytes (more than one a KB): "
       "reads far in refused (%d of 200)", r);
    free(src);

    /* over GG_STORED_PREAD: read through the mapping from the file's
     * pack too, the same bytes */
    n = GG_STORED_PREAD + 4096;
    src = malloc(n);
    {
        size_t  k;

        for (k = 0; k < n; k++) {
            src[k] = k % 53 == 52 ? '\n' : (char) ('a' + k % 23);
        }
    }
    r = stored_reads((unsigned char *) src, n, n, 0, -1, -1, -1, 200,
                     &mism);
    ok(r == 0 && mism == 0, "stored blocks, a blob over GG_STORED_PREAD "
       "(%zu bytes): 200 ranges read as written (%d failed, %zu differ)",
       n, r, mism);
    free(src);
}


int
main(void)
{
    char  repo[512], r2[512], r3[512], r4[512], q4[600];

    if (git_sandbox(dir, sizeof(dir), "gg_pack_test") != 0) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    synthetic();
    stored();
    pread_cases();
    ok(fd_checked > 1000 && fd_bad == 0, "every built pack read from a "
       "file with pread() as through memory: the same objects, the same "
       "errors (%zu of %zu disagree)", fd_bad, fd_checked);
    ok(ext_bad == 0, "the built packs as extents: as read, built exactly "
       "when read, a clean error when not (%zu of %zu disagree)", ext_bad,
       ext_checked);

    snprintf(repo, sizeof(repo), "%s/fi.git", dir);
    ok(fast_import(repo) == 0, "git fast-import wrote a repository");
    check_repo(repo, NULL, "fast-import's chains", 0);
    check_repo(repo, NULL, "fast-import's chains, a cache of 64 KB", 65536);

    snprintf(r2, sizeof(r2), "%s/repack.git", dir);
    ok(sh("git clone -q --bare %s %s && git -C %s repack -q -adf "
          "--depth=50 --window=250", repo, r2, r2) == 0,
       "git repack -adf --depth=50 --window=250");
    check_repo(r2, NULL, "an aggressive repack", 0);
    /* whole entries' objects over a quarter of it dropped once put back
     * (gg_cache_whole()), the deltas' bases among them read again */
    check_repo(r2, NULL, "an aggressive repack, a cache of 1 MB", 1024 * 1024);
    check_repo(repo, NULL, "fast-import's chains, a cache of 1 MB", 1024 * 1024);

    /* a push's thin pack: the objects of half..main, deltas on objects
     * only the receiver has, fixed as receive-pack fixes them */
    snprintf(r3, sizeof(r3), "%s/thin.git", dir);
    ok(sh("git init -q --bare %s && git -C %s fetch -q %s half:half "
          "&& git -C %s repack -q -ad "
          "&& git -C %s pack-objects -q --revs --thin --stdout "
          "<<'EOF' | git -C %s index-pack --fix-thin --stdin >/dev/null\n"
          "main\n^half\nEOF\n", r3, r3, repo, r3, repo, r3) == 0,
       "a thin pack fixed by git index-pack --fix-thin");
    ok(sh("test $(ls %s/objects/pack/*.idx | wc -l) = 2", r3) == 0,
       "the fixed thin pack next to the repository's");
    check_repo(r3, NULL, "a thin pack and the repository's", 0);

    /* a push's quarantine over GG_PACK_COPY as receive-pack leaves it at
     * the gate's core.compression=0 (its bases stored blocks): read from
     * its file with pread() */
    snprintf(r4, sizeof(r4), "%s/quarantine.git", dir);
    ok(sh("git init -q --bare %s && git -C %s fetch -q %s half:half "
          "&& git -C %s repack -q -ad && git clone -q -b main %s %s/w "
          "&& head -c 4000000 /dev/urandom | base64 > %s/w/big.txt "
          "&& git -C %s/w add big.txt "
          "&& git -C %s/w -c user.name=T -c user.email=t@x commit -qm big "
          "&& mkdir -p %s/objects/incoming/pack "
          "&& git -C %s/w pack-objects -q --revs --thin --stdout "
          "<<'EOF' | GIT_OBJECT_DIRECTORY=%s/objects/incoming "
          "GIT_ALTERNATE_OBJECT_DIRECTORIES=%s/objects "
          "git -C %s -c core.compression=0 index-pack --fix-thin --stdin "
          ">/dev/null\nmain\n^origin/half\nEOF\n", r4, r4, repo, r4, repo,
          dir, dir, dir, dir, r4, dir, r4, r4, r4) == 0,
       "a push's thin pack fixed into a quarantine, core.compression=0");
    ok(sh("test $(stat -c %%s %s/objects/incoming/pack/*.pack) -gt %llu",
          r4, (unsigned long long) GG_PACK_COPY) == 0,
       "the quarantine's pack over GG_PACK_COPY");
    snprintf(q4, sizeof(q4), "%s/objects/incoming", r4);
    check_repo(r4, q4, "a quarantine over GG_PACK_COPY, from its file", 0);

    sh("rm -rf %s", dir);
    return done_testing();
}
