/*
 * Unit test of git-gate's blob tails' cache (gitgate-helper/gg_tail.c,
 * docs/gitgate.md "Appended files"), through gg_tail_open(),
 * gg_tail_put() and gg_tail_get() on a temporary directory: records for
 * 300,000 pseudo-random blob ids leave the file at exactly GG_TAIL_SLOTS
 * records of 48 bytes (6,291,456 bytes, "never grows past 6 MB"), never
 * more on the way, and what it holds is what a model of the cache says
 * (a blob's bucket its id's first 4 bytes big-endian modulo the buckets,
 * a free way of it, else the way its id's fifth byte picks): every id kept
 * found with the values put, none evicted found, most of the last 1,000
 * found.  Five ids of one bucket: four found, each with its own values,
 * the one the fifth's byte picks lost.  A record whose bytes changed on
 * disk (its size, its magic, its CRC), cut short, or another id's record
 * in its slot: none.  A blob under GG_TAIL_MIN bytes: no record.  No
 * file to be had (no directory, a directory or a symbolic link where the
 * file goes): -1, and gg_tail_get() on -1 finds nothing, gg_tail_put()
 * writes nothing.
 */

#define _GNU_SOURCE

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "sh.h"
#include "gg_scan_int.h"


/* the file's layout (gg_tail.c): 48-byte records, 4 to a bucket; in a
 * record, the id at 8, the flags at 28, the size at 32, the lines at 40 */
#define RECSZ       48
#define WAYS        4
#define BUCKETS     (GG_TAIL_SLOTS / WAYS)
#define FILESZ      ((off_t) GG_TAIL_SLOTS * RECSZ)
#define NIDS        300000
#define NLAST       1000


static char      dir[256];
static uint64_t  rng = 0x9e3779b97f4a7c15ULL;


/* splitmix64 */
static uint64_t
next(void)
{
    uint64_t  z;

    z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}


static void
random_id(unsigned char *id)
{
    int       i;
    uint64_t  v;

    v = 0;
    for (i = 0; i < GG_PACK_OIDSZ; i++) {
        if (i % 8 == 0) {
            v = next();
        }
        id[i] = (unsigned char) (v >> (i % 8 * 8));
    }
}


/* the bucket the code computes: the id's first 4 bytes, big-endian */
static uint32_t
bucket(const unsigned char *id)
{
    return ((uint32_t) id[0] << 24 | (uint32_t) id[1] << 16
            | (uint32_t) id[2] << 8 | id[3]) % BUCKETS;
}


/* the values put for the i-th id */
static void
values(gg_tail_t *t, size_t i)
{
    t->size = GG_TAIL_MIN + i * 13;
    t->lines = i * 7 + 1;
    t->flags = (uint32_t) (i % 8);
}


static int
same(const gg_tail_t *a, const gg_tail_t *b)
{
    return a->size == b->size && a->lines == b->lines && a->flags == b->flags;
}


static off_t
file_size(int fd)
{
    struct stat  st;

    return fstat(fd, &st) == 0 ? st.st_size : -1;
}


/* a repository directory of its own under dir */
static void
repo(char *path, size_t size, const char *name)
{
    snprintf(path, size, "%s/%s", dir, name);
    mkdir(path, 0755);
}


/* byte `at` of the file flipped */
static void
flip(int fd, off_t at)
{
    unsigned char  b;

    if (pread(fd, &b, 1, at) == 1) {
        b ^= 0x5a;
        if (pwrite(fd, &b, 1, at) != 1) {
            printf("# pwrite failed\n");
        }
    }
}


/* 300,000 ids against a model of the cache */
static void
check_many(void)
{
    int             fd, w, bad;
    char            path[512];
    off_t           at, top, sz, max;
    size_t          i, kept, found, lost, wrong, last;
    uint32_t       *slot, b;
    gg_tail_t       t, g;
    unsigned char  *ids, *id;

    repo(path, sizeof(path), "many");
    fd = gg_tail_open(path);
    ok(fd >= 0 && file_size(fd) == 0,
       "an absent file: gg_tail_open() creates it, empty");
    ids = malloc((size_t) NIDS * GG_PACK_OIDSZ);
    slot = malloc(GG_TAIL_SLOTS * sizeof(uint32_t));
    if (fd < 0 || ids == NULL || slot == NULL) {
        printf("Bail out! setup\n");
        exit(1);
    }

    /* slot[]: which id (1 + its index) the model has in each way */
    memset(slot, 0, GG_TAIL_SLOTS * sizeof(uint32_t));
    top = 0;
    max = 0;
    bad = 0;
    for (i = 0; i < NIDS; i++) {
        id = ids + i * GG_PACK_OIDSZ;
        random_id(id);
        values(&t, i);
        gg_tail_put(fd, id, &t);

        b = bucket(id);
        for (w = 0; w < WAYS && slot[b * WAYS + w] != 0; w++) {
            /* (ids are distinct: none is put twice) */
        }
        if (w == WAYS) {
            w = id[4] % WAYS;
        }
        slot[b * WAYS + w] = (uint32_t) i + 1;
        at = ((off_t) b * WAYS + w + 1) * RECSZ;
        if (at > top) {
            top = at;
        }

        if (i % 1000 == 999) {
            sz = file_size(fd);
            if (sz > max) {
                max = sz;
            }
            if (sz != top) {
                bad++;
            }
        }
    }

    sz = file_size(fd);
    is_int(sz, FILESZ, "%d ids put: the file is exactly %d records of %d "
           "bytes", NIDS, GG_TAIL_SLOTS, RECSZ);
    ok(max <= FILESZ && bad == 0, "and never larger on the way, its size "
       "always the end of the furthest way written (largest seen %lld)",
       (long long) max);

    kept = 0;
    for (i = 0; i < GG_TAIL_SLOTS; i++) {
        kept += slot[i] != 0;
    }

    /* each id found exactly when the model keeps it, with its values */
    found = 0;
    lost = 0;
    wrong = 0;
    last = 0;
    for (i = 0; i < NIDS; i++) {
        id = ids + i * GG_PACK_OIDSZ;
        b = bucket(id);
        for (w = 0; w < WAYS && slot[b * WAYS + w] != i + 1; w++) {
            /* its way in the model, or none */
        }
        values(&t, i);
        memset(&g, 0, sizeof(g));
        if (gg_tail_get(fd, id, &g) == 1) {
            found++;
            if (w == WAYS || !same(&g, &t)) {
                wrong++;
            }
            if (i >= NIDS - NLAST && same(&g, &t)) {
                last++;
            }
        } else if (w < WAYS) {
            lost++;
        }
    }
    is_int(found, kept, "the ids found are as many as the model keeps "
           "(%zu of %d)", kept, NIDS);
    ok(lost == 0 && wrong == 0, "each id the model keeps found with its "
       "own values, none it evicted found (%zu lost, %zu wrong)",
       lost, wrong);
    ok(last >= NLAST - 20, "most of the last %d ids put found with the "
       "values put (%zu)", NLAST, last);

    free(slot);
    free(ids);
    close(fd);
}


/* five ids of one bucket */
static void
check_bucket(void)
{
    int            fd, i, w, n, own, at[5];
    char           path[512];
    off_t          base;
    uint32_t       h;
    gg_tail_t      t, g;
    unsigned char  id[5][GG_PACK_OIDSZ], r[RECSZ];
    /* first 4 bytes: 12345 plus a multiple of the buckets (the fourth's
     * the third's) */
    static const uint32_t  k[5] = { 0, 1, 0x10000, 0x10000, 0x1ffff };

    repo(path, sizeof(path), "bucket");
    fd = gg_tail_open(path);

    for (i = 0; i < 5; i++) {
        memset(id[i], 0xa0 + i, GG_PACK_OIDSZ);
        h = 12345 + k[i] * BUCKETS;
        id[i][0] = (unsigned char) (h >> 24);
        id[i][1] = (unsigned char) (h >> 16);
        id[i][2] = (unsigned char) (h >> 8);
        id[i][3] = (unsigned char) h;
    }
    /* the fourth differs from the third only in its last byte (the whole
     * id is compared); the fifth's byte 4 picks way 2 when all four are
     * taken */
    memcpy(id[3], id[2], GG_PACK_OIDSZ - 1);
    id[4][4] = 0x06;
    for (i = 0; i < 5; i++) {
        if (bucket(id[i]) != 12345) {
            printf("Bail out! id %d not in bucket 12345\n", i);
            exit(1);
        }
    }
    base = (off_t) 12345 * WAYS * RECSZ;

    for (i = 0; i < 4; i++) {
        values(&t, (size_t) i + 1);
        gg_tail_put(fd, id[i], &t);
    }
    n = 0;
    for (i = 0; i < 4; i++) {
        at[i] = -1;
        for (w = 0; w < WAYS; w++) {
            if (pread(fd, r, RECSZ, base + w * RECSZ) == RECSZ
                && memcmp(r + 8, id[i], GG_PACK_OIDSZ) == 0)
            {
                at[i] = w;
            }
        }
        n += at[i] == i;
    }
    is_int(n, 4, "four ids of one bucket: in its ways 0 to 3, in the order "
           "put");

    values(&t, 5);
    gg_tail_put(fd, id[4], &t);
    n = 0;
    own = 1;
    for (i = 0; i < 5; i++) {
        memset(&g, 0, sizeof(g));
        if (gg_tail_get(fd, id[i], &g) == 1) {
            n++;
            values(&t, (size_t) i + 1);
            own = own && same(&g, &t);
        }
    }
    is_int(n, 4, "five ids of one bucket: exactly four found");
    ok(own, "each found with its own values");
    ok(gg_tail_get(fd, id[2], &g) == 0 && gg_tail_get(fd, id[4], &g) == 1
       && pread(fd, r, RECSZ, base + 2 * RECSZ) == RECSZ
       && memcmp(r + 8, id[4], GG_PACK_OIDSZ) == 0,
       "the fifth took the way its fifth byte picks (%d), its id lost",
       id[4][4] % WAYS);
    ok(gg_tail_get(fd, id[3], &g) == 1,
       "an id differing from the lost one in its last byte only: kept");

    /* an id with a record put again: its own way, no other lost */
    values(&t, 9);
    gg_tail_put(fd, id[0], &t);
    n = 0;
    for (i = 0; i < 5; i++) {
        n += gg_tail_get(fd, id[i], &g) == 1;
    }
    ok(n == 4 && gg_tail_get(fd, id[0], &g) == 1 && same(&g, &t)
       && pread(fd, r, RECSZ, base) == RECSZ
       && memcmp(r + 8, id[0], GG_PACK_OIDSZ) == 0,
       "an id put again: its record rewritten in its way, none lost");

    close(fd);
}


/* records that are not: changed bytes, cut short, another id's */
static void
check_damage(void)
{
    int            fd, w;
    char           path[512];
    off_t          at, sz;
    gg_tail_t      t, g;
    unsigned char  a[GG_PACK_OIDSZ], b[GG_PACK_OIDSZ], r[RECSZ], keep[RECSZ];

    repo(path, sizeof(path), "damage");
    fd = gg_tail_open(path);
    /* (two buckets: 1 and 2) */
    random_id(a);
    random_id(b);
    memcpy(a, "\0\0\0\1", 4);
    memcpy(b, "\0\0\0\2", 4);
    values(&t, 77);
    gg_tail_put(fd, a, &t);
    values(&t, 88);
    gg_tail_put(fd, b, &t);
    at = (off_t) bucket(a) * WAYS * RECSZ;

    values(&t, 77);
    ok(gg_tail_get(fd, a, &g) == 1 && same(&g, &t)
       && pread(fd, keep, RECSZ, at) == RECSZ
       && memcmp(keep + 8, a, GG_PACK_OIDSZ) == 0,
       "a record put: found, in way 0 of its bucket");

    for (w = 0; w < 8; w++) {
        /* one byte of its size field */
        flip(fd, at + 32 + w);
        if (gg_tail_get(fd, a, &g) != 0) {
            break;
        }
        flip(fd, at + 32 + w);
    }
    is_int(w, 8, "each byte of its size changed on disk: not found (its "
           "CRC)");
    flip(fd, at + 40);
    ok(gg_tail_get(fd, a, &g) == 0, "a byte of its line count changed: "
       "not found");
    flip(fd, at + 40);
    flip(fd, at + 28);
    ok(gg_tail_get(fd, a, &g) == 0, "a byte of its flags changed: "
       "not found");
    flip(fd, at + 28);
    flip(fd, at + 1);
    ok(gg_tail_get(fd, a, &g) == 0, "its magic changed: not found");
    flip(fd, at + 1);
    flip(fd, at + 5);
    ok(gg_tail_get(fd, a, &g) == 0, "its CRC changed: not found");
    flip(fd, at + 5);
    ok(gg_tail_get(fd, a, &g) == 1 && same(&g, &t),
       "each byte changed back: found again");

    /* the slot rewritten with b's record */
    if (pread(fd, r, RECSZ, (off_t) bucket(b) * WAYS * RECSZ) != RECSZ
        || memcmp(r + 8, b, GG_PACK_OIDSZ) != 0
        || pwrite(fd, r, RECSZ, at) != RECSZ)
    {
        printf("# b's record not copied\n");
    }
    ok(gg_tail_get(fd, a, &g) == 0, "its slot rewritten with another "
       "id's record: not found for it");
    values(&t, 88);
    ok(gg_tail_get(fd, b, &g) == 1 && same(&g, &t),
       "the other id still found in its own bucket, with its values");

    /* a's put again takes a free way, b's copy (a whole record) kept */
    values(&t, 77);
    gg_tail_put(fd, a, &t);
    ok(gg_tail_get(fd, a, &g) == 1 && same(&g, &t)
       && pread(fd, r, RECSZ, at + RECSZ) == RECSZ
       && memcmp(r + 8, a, GG_PACK_OIDSZ) == 0,
       "put again: written in the next free way (the copy there is a whole "
       "record)");

    /* cut short in the middle of a's record */
    if (ftruncate(fd, at + RECSZ + 30) != 0) {
        printf("# ftruncate failed\n");
    }
    ok(gg_tail_get(fd, a, &g) == 0, "the file cut short inside a record: "
       "not found");
    if (pwrite(fd, keep, RECSZ, at + RECSZ) != RECSZ) {
        printf("# pwrite failed\n");
    }
    ok(gg_tail_get(fd, a, &g) == 1, "the record whole again: found");

    /* under GG_TAIL_MIN bytes: none written */
    sz = file_size(fd);
    random_id(a);
    t.size = GG_TAIL_MIN - 1;
    gg_tail_put(fd, a, &t);
    ok(gg_tail_get(fd, a, &g) == 0 && file_size(fd) == sz,
       "a blob under %d bytes: no record, nothing written", GG_TAIL_MIN);
    t.size = GG_TAIL_MIN;
    gg_tail_put(fd, a, &t);
    ok(gg_tail_get(fd, a, &g) == 1 && g.size == GG_TAIL_MIN,
       "one of %d bytes: recorded", GG_TAIL_MIN);

    close(fd);
}


/* no file to be had */
static void
check_none(void)
{
    char           path[512], big[5000];
    gg_tail_t      t, g;
    unsigned char  id[GG_PACK_OIDSZ];

    snprintf(path, sizeof(path), "%s/absent/repo", dir);
    ok(gg_tail_open(path) == -1, "a repository directory that does not "
       "exist: -1");

    repo(path, sizeof(path), "isdir");
    sh("mkdir %s/gitgate-tails", path);
    ok(gg_tail_open(path) == -1, "a directory where the file goes: -1");

    repo(path, sizeof(path), "link");
    sh("ln -s %s/many/gitgate-tails %s/gitgate-tails", dir, path);
    ok(gg_tail_open(path) == -1, "a symbolic link where the file goes: -1 "
       "(not followed)");

    memset(big, 'a', sizeof(big) - 1);
    big[0] = '/';
    big[sizeof(big) - 1] = '\0';
    ok(gg_tail_open(big) == -1, "a path too long: -1");

    if (geteuid() != 0) {
        repo(path, sizeof(path), "ro");
        chmod(path, 0555);
        ok(gg_tail_open(path) == -1, "a directory the scan cannot write: "
           "-1");
        chmod(path, 0755);
    } else {
        ok(1, "a directory the scan cannot write # SKIP root writes any");
    }

    random_id(id);
    values(&t, 5);
    gg_tail_put(-1, id, &t);
    memset(&g, 0xee, sizeof(g));
    ok(gg_tail_get(-1, id, &g) == 0 && g.size == 0xeeeeeeeeeeeeeeeeULL,
       "gg_tail_get() on -1: 0, nothing given; gg_tail_put() on -1: "
       "nothing");
}


int
main(void)
{
    if (git_sandbox(dir, sizeof(dir), "gg_tail_test") != 0) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }

    check_many();
    check_bucket();
    check_damage();
    check_none();

    sh("rm -rf %s", dir);
    return done_testing();
}
