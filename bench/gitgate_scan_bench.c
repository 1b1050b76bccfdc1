/*
 * git-gate's push scan on one core: gg_scan_push() over a push that a
 * generator (bench/gitgate_bench.py, run by `make bench-gitgate`) wrote
 * into a repository with git fast-import, as receive-pack would hold it
 * (one pack, deltas included).  Prints the MB/s of added lines scanned,
 * against the target of 200 MB/s.  The CPU is the scan's and its
 * git cat-file child's (gg_blob.h) together: what one core would spend.
 *
 *   gitgate_scan_bench REPO OLD NEW REFNAME [runs]
 *
 * The bottle: a canary, three egress tokens and three held secrets; the
 * detectors are a push's (token shapes, known secrets, the canary).
 *
 * Then the floor on this machine, what no scan of that push can go under
 * whatever it does between: every entry of the repository's packs
 * inflated once (the scan reads every pushed version and the old ones
 * they change), and the scanner (the same detectors, then the generic
 * assignments) over as many bytes as the push added, one field per 1.25
 * MB, taken from the packs' whole blobs.  The scan's MB/s is then also
 * said as a share of the floor's.
 *
 * With HOOK (the environment: build/gitgate-scan), the hook itself as a
 * pre-receive hook runs it, a process each time, start-up included (the
 * dynamic loader, the policy, the rule databases, libgit2, the pack
 * index): the CPU of the process and of its children together, over the
 * added MB.  Its first run compiles the databases into a fresh
 * GITGATE_SCAN_CACHE, the others read them from there.
 *
 * HOOK=build/gitgate-hook is the resident scanner's client (gg_scand.h):
 * its first run finds no scanner, starts one and scans in-process; the
 * second goes to a fresh child of the scanner, the others to that child
 * kept warm for the bottle; the figure adds the CPU of the child for that
 * push (reported back: GITGATE_SCAND_REPORT; all it spent since its last
 * report, the wait for this push's connection included) to the client's
 * own.  A fresh child's figure leaves out the scanner's fork (about 1 ms
 * at 1 MB) and the child's exit.  The warm child's runs give their best
 * and their median.  HOOK_B=OTHER/gitgate-hook times another build's
 * hook and scanner in the same runs, the two taking turns push by push
 * (an A/B comparison this VM's drift by the hour does not blur).
 *
 * Every run starts from the repository's blob tails (gg_tail.c) as they
 * were before the first: a run does not profit from the records an
 * earlier run of the same push wrote.  BENCH_KEEP_TAILS=1 keeps what
 * the runs wrote instead (make bench-gitgate-shapes: the earlier push
 * of push-again, scanned first as the gate would have).
 */

#define _POSIX_C_SOURCE  200809L
#define _DEFAULT_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <glob.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <isa-l/igzip_lib.h>
#include <git2.h>

#include "bottle_generic.h"
#include "bottle_scan.h"
#include "gg_pack.h"
#include "gg_scan.h"
#include "gg_update.h"


#define MB  1e6


static double
clock_of(clockid_t id)
{
    struct timespec  ts;

    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* CPU of the children waited for: the scan's git cat-file */
static double
clock_children(void)
{
    struct rusage  ru;

    getrusage(RUSAGE_CHILDREN, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
           + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}


static int
secrets(bottle_scan_db_t **db, bottle_scan_secrets_t **sec)
{
    char                    err[256];
    bottle_str_t            canary;
    bottle_secret_t         tok[3], held[3];
    static const char      *tv[3] = { "bench-egress-value-000001",
                                      "bench-egress-value-000002",
                                      "sk-bench-0123456789abcdef" };
    static const char      *hv[3] = { "bench-held-secret-aaaaaa",
                                      "correct horse battery staple",
                                      "db-password-5551234567" };
    int                     i;

    canary.data = "canary-bench-9f8e7d6c5b4a";
    canary.len = strlen(canary.data);

    for (i = 0; i < 3; i++) {
        tok[i].name.data = "T";
        tok[i].name.len = 1;
        tok[i].value.data = tv[i];
        tok[i].value.len = strlen(tv[i]);
        held[i].name.data = "H";
        held[i].name.len = 1;
        held[i].value.data = hv[i];
        held[i].value.len = strlen(hv[i]);
    }

    if (bottle_scan_db_create(db, err, sizeof(err)) != 0
        || bottle_scan_secrets_create_held(sec, *db, &canary, tok, 3, held,
                                           3, err, sizeof(err)) != 0)
    {
        fprintf(stderr, "gitgate_scan_bench: %s\n", err);
        return -1;
    }
    return 0;
}


typedef struct {
    bottle_scan_t       *s;
    bottle_generic_t    *gen;
    uint64_t             left;      /* bytes still to scan */
    int                  id;        /* the next field's */
    double               inflated;  /* MB */
} floor_t;


static int
floor_found(void *arg, size_t start, size_t end)
{
    (void) arg;
    (void) start;
    (void) end;
    return 0;
}


/* a whole blob's bytes through the scanner, as fields of 1.25 MB, up to
 * f->left: while they are still in the cache, as the scan reads them */
static void
floor_scan(floor_t *f, const unsigned char *p, uint64_t len)
{
    uint64_t  k;

    while (len > 0 && f->left > 0) {
        k = len < 1250000 ? len : 1250000;
        k = k < f->left ? k : f->left;
        bottle_scan_field(f->s, f->id++, p, (size_t) k);
        bottle_generic_scan(f->gen, (const char *) p, (size_t) k,
                            floor_found, NULL);
        p += k;
        len -= k;
        f->left -= k;
    }
}


static int
floor_pack(floor_t *f, struct inflate_state *z, const char *path)
{
    int                   fd, type, rc;
    uint32_t              i, n;
    uint64_t              off, size, data_off, base_off, used;
    struct stat           st;
    unsigned char        *out;
    const unsigned char  *pack, *base_oid;

    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 32) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    pack = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (pack == MAP_FAILED) {
        return -1;
    }

    rc = -1;
    n = (uint32_t) pack[8] << 24 | (uint32_t) pack[9] << 16
        | (uint32_t) pack[10] << 8 | pack[11];
    off = 12;
    for (i = 0; i < n; i++) {
        if (gg_pack_entry(&type, &size, &data_off, &base_off, &base_oid,
                          pack, (size_t) st.st_size, off) != 0)
        {
            goto done;
        }
        out = malloc(size ? size : 1);
        if (out == NULL) {
            goto done;
        }
        /* the scan's inflater */
        if (gg_zinflate(z, pack + data_off, (uint64_t) st.st_size - data_off,
                        out, (size_t) size, &used) != 0)
        {
            free(out);
            goto done;
        }
        f->inflated += size / MB;
        /* a whole blob (type 3) */
        if (type == 3) {
            floor_scan(f, out, size);
        }
        free(out);
        off = data_off + used;
    }
    rc = 0;

done:

    munmap((void *) pack, (size_t) st.st_size);
    return rc;
}


/*
 * The floor: every entry of the repository's packs inflated once, and as
 * many bytes as the push added scanned, from the whole blobs as they are
 * inflated.  Its seconds of CPU, or -1 when a pack could not be read;
 * *scanned: the MB scanned (less than added when the whole blobs hold
 * fewer bytes).
 */
static double
floor_measure(const char *repo, const char *quarantine, uint64_t added,
    bottle_scan_secrets_t *sec, double *inflated, double *scanned)
{
    char                    pat[4096], err[256];
    size_t                  i;
    double                  c0, t;
    glob_t                  g;
    floor_t                 f;
    struct inflate_state   *z;

    t = -1;
    memset(&f, 0, sizeof(f));
    f.left = added;
    z = malloc(sizeof(*z));
    if (z == NULL) {
        return -1;
    }
    if (bottle_scan_acquire(&f.s, sec, GG_DETECTORS) != 0) {
        goto done;
    }
    /* the quarantine's packs (the pushed ones) first, as the scan's */
    if (quarantine != NULL) {
        if ((size_t) snprintf(pat, sizeof(pat), "%s/pack/*.pack",
                              quarantine) >= sizeof(pat)
            || glob(pat, 0, NULL, &g) != 0)
        {
            goto done;
        }
    }
    snprintf(pat, sizeof(pat), "%s/objects/pack/*.pack", repo);
    if (bottle_generic_create(&f.gen, err, sizeof(err)) != 0
        || glob(pat, quarantine != NULL ? GLOB_APPEND : 0, NULL, &g) != 0)
    {
        goto done;
    }
    c0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
    for (i = 0; i < g.gl_pathc; i++) {
        if (floor_pack(&f, z, g.gl_pathv[i]) != 0) {
            break;
        }
    }
    if (i == g.gl_pathc) {
        t = clock_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    globfree(&g);
    *inflated = f.inflated;
    *scanned = (added - f.left) / MB;

done:

    if (f.gen != NULL) {
        bottle_generic_free(f.gen);
    }
    if (f.s != NULL) {
        bottle_scan_release(f.s);
    }
    free(z);
    return t;
}


/*
 * The floor of a push into a copy that holds the old versions (an append,
 * the gate's blob tails doing the rest): every entry of the pushed pack
 * but the stored bases read once from its file (pread(), as the scan
 * reads a big quarantine) and inflated; a stored base (index-pack's for a
 * thin push, written uncompressed by the gate's receive-pack) read as it
 * lies, whole, only when a delta on it copies from it past the old
 * version it starts with (the pieces a `code` append copies are spread
 * over all of it: one read is the cheapest); and as many bytes as the
 * push added scanned, the inflated ones first.  What no scan of that push
 * can go under: it leaves out the records, applying the deltas, the
 * commits' walk and any process.  Its seconds of CPU, or -1; *read_mb,
 * *stored_mb: the MB read, the MB of stored bases among them.
 */
typedef struct {
    uint64_t  off;          /* its header's */
    uint64_t  data_off;
    uint64_t  len;          /* its bytes in the pack */
    uint64_t  size;
    int64_t   base;         /* a delta's that copies from it past its
                               start: its base's off; else -1 */
    int       stored;       /* 1 a stored base, 2 one a delta copies */
} push_entry_t;


/* the entry of the pack whose idx is x (n objects) holding oid, or -1 */
static int64_t
idx_find(const unsigned char *x, size_t xlen, uint32_t n,
    const unsigned char *oid)
{
    uint32_t  i;

    if (xlen < 8 + 1024 + (size_t) n * 28) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (memcmp(x + 8 + 1024 + (size_t) i * 20, oid, 20) == 0) {
            const unsigned char *o = x + 8 + 1024 + (size_t) n * 24
                                     + (size_t) i * 4;
            return (int64_t) ((uint32_t) o[0] << 24 | (uint32_t) o[1] << 16
                              | (uint32_t) o[2] << 8 | o[3]) & 0x7fffffff;
        }
    }
    return -1;
}


/* whether a delta copies from its base past a leading copy of all of it */
static int
delta_copies(const unsigned char *d, size_t len)
{
    uint64_t         lead;
    gg_delta_op_t    op;
    gg_delta_iter_t  it;

    if (gg_delta_init(&it, d, len) != 0) {
        return 1;
    }
    lead = 0;
    while (gg_delta_next(&it, &op) == 1) {
        if (!op.copy) {
            lead = it.src_size + 1;
        } else if (lead == op.off && lead < it.src_size) {
            lead += op.len;
        } else {
            return 1;
        }
    }
    return 0;
}


static double
floor_push(const char *quarantine, uint64_t added,
    bottle_scan_secrets_t *sec, double *read_mb, double *stored_mb)
{
    int                    fd, xfd, type, k;
    char                   pat[4096], err[256];
    size_t                 xlen;
    uint32_t               i, j, n;
    uint64_t               off, size, data_off, base_off, used, cap, ocap;
    double                 c0, t;
    glob_t                 g;
    floor_t                f;
    struct stat            st, xst;
    push_entry_t          *e;
    unsigned char         *in, *out;
    const unsigned char   *pack, *idx, *base_oid;
    struct inflate_state  *z;

    t = -1;
    e = NULL;
    in = out = NULL;
    memset(&f, 0, sizeof(f));
    f.left = added;
    *read_mb = *stored_mb = 0;
    fd = xfd = -1;
    pack = idx = MAP_FAILED;
    xlen = 0;
    z = malloc(sizeof(*z));
    if (z == NULL || quarantine == NULL
        || (size_t) snprintf(pat, sizeof(pat), "%s/pack/*.pack", quarantine)
           >= sizeof(pat)
        || glob(pat, 0, NULL, &g) != 0)
    {
        free(z);
        return -1;
    }
    /* one pushed pack, as receive-pack keeps it, and its index */
    if (g.gl_pathc != 1 || (fd = open(g.gl_pathv[0], O_RDONLY)) < 0
        || fstat(fd, &st) != 0 || st.st_size < 32
        || (pack = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE,
                        fd, 0)) == MAP_FAILED
        || snprintf(pat, sizeof(pat), "%.*s.idx",
                    (int) strlen(g.gl_pathv[0]) - 5, g.gl_pathv[0]) <= 0
        || (xfd = open(pat, O_RDONLY)) < 0 || fstat(xfd, &xst) != 0
        || (idx = mmap(NULL, (size_t) xst.st_size, PROT_READ, MAP_PRIVATE,
                       xfd, 0)) == MAP_FAILED
        || bottle_scan_acquire(&f.s, sec, GG_DETECTORS) != 0
        || bottle_generic_create(&f.gen, err, sizeof(err)) != 0)
    {
        goto done;
    }
    xlen = (size_t) xst.st_size;

    /* where each entry lies, which bases are read (not timed: the scan
     * has the pack's index and reads the deltas anyway) */
    n = (uint32_t) pack[8] << 24 | (uint32_t) pack[9] << 16
        | (uint32_t) pack[10] << 8 | pack[11];
    e = calloc(n ? n : 1, sizeof(*e));
    if (e == NULL) {
        goto done;
    }
    cap = ocap = 1;
    off = 12;
    for (i = 0; i < n; i++) {
        if (gg_pack_entry(&type, &size, &data_off, &base_off, &base_oid,
                          pack, (size_t) st.st_size, off) != 0)
        {
            goto done;
        }
        free(out);
        out = malloc(size ? size : 1);
        if (out == NULL
            || gg_zinflate(z, pack + data_off,
                           (uint64_t) st.st_size - data_off, out,
                           (size_t) size, &used) != 0)
        {
            goto done;
        }
        e[i].off = off;
        e[i].data_off = data_off;
        e[i].len = used;
        e[i].size = size;
        /* zlib's header, then a first block of BTYPE 00 */
        e[i].stored = type == 3 && used > 3 && (pack[data_off + 2] & 6) == 0;
        e[i].base = -1;
        if ((type == 6 || type == 7) && delta_copies(out, (size_t) size)) {
            e[i].base = type == 6 ? (int64_t) base_off
                                  : idx_find(idx, xlen, n, base_oid);
        }
        cap = used > cap ? used : cap;
        ocap = size > ocap ? size : ocap;
        off = data_off + used;
    }
    /* the stored bases the deltas copy from */
    for (i = 0; i < n; i++) {
        for (j = 0; e[i].base >= 0 && j < n; j++) {
            if (e[j].stored && (int64_t) e[j].off == e[i].base) {
                e[j].stored = 2;
            }
        }
    }
    free(out);
    in = malloc(cap);
    out = malloc(ocap);
    if (in == NULL || out == NULL) {
        goto done;
    }

    c0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
    for (k = 0; k < 2; k++) {
        /* the inflated entries scanned first, then the stored ones read */
        for (i = 0; i < n; i++) {
            if ((k == 0 && e[i].stored) || (k == 1 && e[i].stored != 2)) {
                continue;
            }
            if (pread(fd, in, e[i].len, (off_t) e[i].data_off)
                != (ssize_t) e[i].len)
            {
                goto done;
            }
            *read_mb += e[i].len / MB;
            if (k == 1) {
                *stored_mb += e[i].len / MB;
                floor_scan(&f, in + 2, e[i].len > 7 ? e[i].len - 7 : 0);
                continue;
            }
            if (gg_zinflate(z, in, e[i].len, out, (size_t) e[i].size, &used)
                != 0)
            {
                goto done;
            }
            floor_scan(&f, out, e[i].size);
        }
    }
    t = clock_of(CLOCK_PROCESS_CPUTIME_ID) - c0;

done:

    globfree(&g);
    if (pack != MAP_FAILED) {
        munmap((void *) pack, (size_t) st.st_size);
    }
    if (idx != MAP_FAILED) {
        munmap((void *) idx, xlen);
    }
    if (fd >= 0) {
        close(fd);
    }
    if (xfd >= 0) {
        close(xfd);
    }
    if (f.gen != NULL) {
        bottle_generic_free(f.gen);
    }
    if (f.s != NULL) {
        bottle_scan_release(f.s);
    }
    free(e);
    free(in);
    free(out);
    free(z);
    return t;
}


/* a policy of the same bottle as secrets()'s, for the hook */
static const char  policy[] =
    "{\"bottles\": [{\"id\": \"b1\", \"token\": \"tok-0123456789abcdef\",\n"
    " \"canary\": \"canary-bench-9f8e7d6c5b4a\",\n"
    " \"egress_tokens\": {\"A\": \"bench-egress-value-000001\",\n"
    "   \"B\": \"bench-egress-value-000002\",\n"
    "   \"C\": \"sk-bench-0123456789abcdef\"},\n"
    " \"held_secrets\": {\"H1\": \"bench-held-secret-aaaaaa\",\n"
    "   \"H2\": \"correct horse battery staple\",\n"
    "   \"H3\": \"db-password-5551234567\"},\n"
    " \"routes\": []}]}\n";


/* the scanner's child's CPU for the last push, from the client's report
 * (0 when it scanned in-process); the report emptied */
static double
hook_reported(const char *dir)
{
    char       path[4096];
    FILE      *f;
    long long  u, s;
    double     t;

    snprintf(path, sizeof(path), "%s/report", dir);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    t = 0;
    while (fscanf(f, "%lld %lld", &u, &s) == 2) {
        t += (u + s) / 1e6;
    }
    fclose(f);
    unlink(path);
    return t;
}


/* one run of the hook: its CPU and its children's, or -1 */
static double
hook_run(const char *hook, const char *dir, const char *repo,
    const char *quarantine, const char *line)
{
    int                          fd[2], status, i, rc;
    char                         pol[4096], cache[4096], scand[4096],
                                 report[4096], env[6][4200], *envp[7],
                                 *argv[8];
    pid_t                        pid;
    double                       k0;
    posix_spawn_file_actions_t   fa;

    snprintf(pol, sizeof(pol), "%s/policy.json", dir);
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    snprintf(scand, sizeof(scand), "%s/scand", dir);
    snprintf(report, sizeof(report), "%s/report", dir);
    if (pipe(fd) != 0) {
        return -1;
    }
    snprintf(env[0], sizeof(env[0]), "GITGATE_SCAN_CACHE=%s", cache);
    snprintf(env[1], sizeof(env[1]), "GITGATE_SCAND_DIR=%s", scand);
    snprintf(env[2], sizeof(env[2]), "GITGATE_SCAND_REPORT=%s", report);
    snprintf(env[3], sizeof(env[3]), "GITGATE_SCAND_IDLE=5");
    snprintf(env[4], sizeof(env[4]), "PATH=%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    for (i = 0; i < 5; i++) {
        envp[i] = env[i];
    }
    envp[5] = NULL;
    /* the pushed pack in its quarantine, as receive-pack tells its hook */
    if (quarantine != NULL) {
        snprintf(env[5], sizeof(env[5]), "GIT_QUARANTINE_PATH=%s",
                 quarantine);
        envp[5] = env[5];
        envp[6] = NULL;
    }
    argv[0] = (char *) hook;
    argv[1] = "--policy";
    argv[2] = pol;
    argv[3] = "--bottle";
    argv[4] = "b1";
    argv[5] = "--repo";
    argv[6] = (char *) repo;
    argv[7] = NULL;

    /*
     * posix_spawn (vfork): the hook's CPU is its own, not the copy and
     * the teardown of this big process's page tables that a fork() then
     * exec() would charge it (git, the hook's real parent, is small)
     */
    k0 = clock_children();
    if (posix_spawn_file_actions_init(&fa) != 0) {
        return -1;
    }
    posix_spawn_file_actions_adddup2(&fa, fd[0], 0);
    posix_spawn_file_actions_addclose(&fa, fd[1]);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    rc = posix_spawn(&pid, hook, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    close(fd[0]);
    if (write(fd[1], line, strlen(line)) != (ssize_t) strlen(line)) {
        close(fd[1]);
    }
    close(fd[1]);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)
        || WEXITSTATUS(status) > 1)
    {
        return -1;
    }
    return clock_children() - k0 + hook_reported(dir);
}


/*
 * The repository's blob tails (gg_tail.c) as they were before the push:
 * put back before each run, so that no run reads the records an earlier
 * run of the same push wrote (its old versions'), only those the gate
 * had before it (push-again: the earlier push's)
 */
static char    *tails;
static size_t   tails_len;
static int      tails_keep;     /* BENCH_KEEP_TAILS: the runs' stay */

static void
tails_save(const char *repo)
{
    char   path[4096];
    FILE  *f;
    long   n;

    snprintf(path, sizeof(path), "%s/gitgate-tails", repo);
    f = fopen(path, "rb");
    if (f == NULL) {
        return;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0
        && fseek(f, 0, SEEK_SET) == 0
        && (tails = malloc((size_t) n)) != NULL
        && fread(tails, 1, (size_t) n, f) == (size_t) n)
    {
        tails_len = (size_t) n;
    }
    fclose(f);
}

static void
tails_restore(const char *repo)
{
    int                   fd;
    off_t                 off, st_len, n;
    char                  path[4096];
    static unsigned char  zero[65536];

    if (tails_keep) {
        return;
    }
    snprintf(path, sizeof(path), "%s/gitgate-tails", repo);
    if (tails_len == 0) {
        unlink(path);
        return;
    }
    /* written over in place, and what a run added past the saved length
     * zeroed (no record), not cut off: a truncated file is a new one
     * each run, its pages allocated again and the scan's writes past its
     * end growing it, which the gate's file, as long as it ever gets,
     * does not */
    fd = open(path, O_RDWR | O_CREAT, 0644);
    if (fd < 0 || pwrite(fd, tails, tails_len, 0) != (ssize_t) tails_len
        || (st_len = lseek(fd, 0, SEEK_END)) < 0)
    {
        fprintf(stderr, "gitgate_scan_bench: cannot write %s\n", path);
        exit(1);
    }
    for (off = (off_t) tails_len; off < st_len; off += n) {
        n = st_len - off < (off_t) sizeof(zero) ? st_len - off
                                                : (off_t) sizeof(zero);
        if (pwrite(fd, zero, (size_t) n, off) != (ssize_t) n) {
            fprintf(stderr, "gitgate_scan_bench: cannot write %s\n", path);
            exit(1);
        }
    }
    close(fd);
}


/* floor_push()'s MB/s and the same with process_floor()'s CPU added,
 * when measured */
static double  push_floor = -1;
static double  push_floor_proc = -1;


/* the median of n values (sorted in place) */
static double
median(double *v, int n)
{
    int     i, j;
    double  t;

    for (i = 1; i < n; i++) {
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}


/*
 * The least CPU a process costs this machine to start and end: the CPU of
 * an empty static program (bench_empty, built as the hook is) spawned as
 * the hook is, best and median of runs; -1 when it cannot run.  Every
 * push pays it at least once: git starts its hook.
 */
static double
process_floor(const char *prog, int runs, double *median_s)
{
    int      i, status;
    char    *argv[2];
    char    *envp[1];
    pid_t    pid;
    double   k0, best, *v;

    v = calloc((size_t) runs, sizeof(double));
    if (v == NULL) {
        return -1;
    }
    argv[0] = (char *) prog;
    argv[1] = NULL;
    envp[0] = NULL;
    best = -1;
    for (i = 0; i < runs; i++) {
        k0 = clock_children();
        if (posix_spawn(&pid, prog, NULL, NULL, argv, envp) != 0
            || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)
            || WEXITSTATUS(status) != 0)
        {
            free(v);
            return -1;
        }
        v[i] = clock_children() - k0;
        best = best < 0 || v[i] < best ? v[i] : best;
    }
    *median_s = median(v, runs);
    free(v);
    return best;
}


/*
 * The hook timed: its first run (no scanner: it starts one and scans
 * in-process, compiling the databases), its second (a fresh child), then
 * runs more on the bottle's warm child.  With HOOK_B, a second build's
 * hook (its own scanner, beside its own gitgate-scan) timed the same way
 * in the same runs, the two taking turns push by push: this VM's speed
 * moves 15-25% by the hour, a turn each keeps that out of the comparison
 * (the medians resolve a few percent where the best of a few runs each
 * cannot)
 */
static void
hook_measure(const char **hook, int nhooks, const char *repo,
    const char *quarantine, const char *line, uint64_t added, int runs)
{
    int      i, h, k;
    char     dir[2][64], path[4096];
    FILE    *f;
    double   t, first[2], fresh[2], *warm[2], best, med;

    for (h = 0; h < nhooks; h++) {
        warm[h] = calloc((size_t) runs, sizeof(double));
        strcpy(dir[h], "/tmp/gitgate-bench-hook.XXXXXX");
        if (warm[h] == NULL || mkdtemp(dir[h]) == NULL) {
            return;
        }
        snprintf(path, sizeof(path), "%s/policy.json", dir[h]);
        f = fopen(path, "w");
        if (f == NULL) {
            return;
        }
        fputs(policy, f);
        fclose(f);
    }

    for (i = 0; i < runs + 2; i++) {
        for (h = 0; h < nhooks; h++) {
            tails_restore(repo);
            t = hook_run(hook[h], dir[h], repo, quarantine, line);
            if (t < 0) {
                printf("hook: %s did not run\n", hook[h]);
                return;
            }
            if (i == 0) {
                first[h] = t;
                /* a resident scanner started by the first run: ready */
                snprintf(path, sizeof(path), "%s/scand/sock", dir[h]);
                for (k = 0; k < 100 && access(path, F_OK) != 0; k++) {
                    usleep(50000);
                }
                usleep(200000);
            } else if (i == 1) {
                /* the scanner's fresh child (gitgate-scan: a process
                 * again), which then waits warm for the bottle's next
                 * pushes */
                fresh[h] = t;
                snprintf(path, sizeof(path), "%s/scand/w-b1", dir[h]);
                for (k = 0; k < 100 && access(path, F_OK) != 0; k++) {
                    usleep(10000);
                }
            } else {
                warm[h][i - 2] = t;
            }
        }
    }

    for (h = 0; h < nhooks; h++) {
        best = warm[h][0];
        for (i = 1; i < runs; i++) {
            best = warm[h][i] < best ? warm[h][i] : best;
        }
        med = median(warm[h], runs);
        if (nhooks > 1) {
            printf("%s: ", hook[h]);
        }
        printf("hook, start-up included: %.3f s cpu, %.0f MB/s of added "
               "lines (the bottle's warm child, best of %d; median %.0f "
               "MB/s; a fresh child: %.3f s, %.0f MB/s; the first run, "
               "compiling the rule databases: %.3f s, %.0f MB/s; target "
               ">= 200): %s", best, added / MB / best, runs,
               added / MB / med, fresh[h], added / MB / fresh[h], first[h],
               added / MB / first[h],
               added / MB / best >= 200 ? "met" : "NOT met");
        if (push_floor_proc > 0) {
            printf("; best %.0f%% of the push floor with a process's",
                   100 * added / MB / best / push_floor_proc);
        }
        printf("\n");
        snprintf(path, sizeof(path), "rm -rf '%s'", dir[h]);
        free(warm[h]);
        if (system(path) != 0) {
            return;
        }
    }
}


int
main(int argc, char **argv)
{
    int                     i, runs, quick;
    char                    line[GG_MAX_REFNAME + 128], err[512],
                            qdir[4096], empty[4096];
    double                  w0, c0, k0, wall, cpu, kid, best, t, fl,
                            pfl, inflated, scanned;
    char                   *e;
    ssize_t                 n;
    const char             *quarantine, *hooks[2];
    struct stat             st;
    uint64_t                added;
    gg_report_t             r;
    gg_updates_t            u;
    bottle_scan_db_t       *db;
    bottle_scan_secrets_t  *sec;

    if (argc < 5) {
        fprintf(stderr, "usage: gitgate_scan_bench REPO OLD NEW REFNAME "
                "[runs]\n");
        return 2;
    }
    runs = argc > 5 ? atoi(argv[5]) : 3;
    runs = runs < 1 ? 1 : runs;
    /* BENCH_HOOK_ONLY: one in-process run (the added bytes), no floor */
    quick = getenv("BENCH_HOOK_ONLY") != NULL && getenv("HOOK") != NULL;

    /* the pushed pack where receive-pack keeps it: gitgate_bench.py's
     * push-* modes write it into objects/incoming-bench */
    snprintf(qdir, sizeof(qdir), "%s/objects/incoming-bench", argv[1]);
    quarantine = stat(qdir, &st) == 0 && S_ISDIR(st.st_mode) ? qdir : NULL;

    snprintf(line, sizeof(line), "%s %s %s\n", argv[2], argv[3], argv[4]);
    if (gg_updates_parse(&u, line, strlen(line), err, sizeof(err)) != 0
        || secrets(&db, &sec) != 0)
    {
        fprintf(stderr, "gitgate_scan_bench: %s\n", err);
        return 1;
    }

    /*
     * what a resident scanner loads once (gg_scand.c), loaded once here
     * too: libgit2's start (its certificates) and the generic matcher are
     * not the scan's
     */
    git_libgit2_init();
    if (gg_scan_preload(err, sizeof(err)) != 0) {
        fprintf(stderr, "gitgate_scan_bench: %s\n", err);
        return 1;
    }

    best = 0;
    added = 0;
    tails_keep = getenv("BENCH_KEEP_TAILS") != NULL;
    tails_save(argv[1]);
    for (i = 0; i < (quick ? 1 : runs); i++) {
        tails_restore(argv[1]);
        w0 = clock_of(CLOCK_MONOTONIC);
        c0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
        k0 = clock_children();
        if (gg_scan_push(&r, argv[1], quarantine, &u, sec, err,
                         sizeof(err))
            != 0)
        {
            fprintf(stderr, "gitgate_scan_bench: %s\n", err);
            return 1;
        }
        wall = clock_of(CLOCK_MONOTONIC) - w0;
        cpu = clock_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
        kid = clock_children() - k0;
        cpu += kid;

        printf("run %d: %llu commits, %llu files (%llu by a pack's delta, %llu "
               "as extents, %llu by a tail), "
               "%.1f MB of added lines "
               "(%.1f MB scanned), %.3f s wall, %.3f s cpu (git cat-file "
               "%.3f s): %.0f MB/s of added lines; findings %zu\n", i + 1,
               (unsigned long long) r.commits, (unsigned long long) r.files,
               (unsigned long long) r.delta_files,
               (unsigned long long) r.extent_files,
               (unsigned long long) r.tail_files,
               r.added / MB, r.bytes / MB, wall, cpu, kid, r.added / MB / cpu,
               r.n + r.more);
        if (r.added / MB / cpu > best) {
            best = r.added / MB / cpu;
        }
        added = r.added;
        gg_report_free(&r);
    }

    printf("best: %.0f MB/s of added lines on one core (target >= 200): "
           "%s\n", best, best >= 200 ? "met" : "NOT met");

    /* the best of as many tries as runs: the VM's noise is the runs' */
    fl = -1;
    inflated = scanned = 0;
    for (i = 0; i < (quick || getenv("BENCH_NO_FLOOR") ? 0 : runs); i++) {
        t = floor_measure(argv[1], quarantine, added, sec, &inflated,
                          &scanned);
        if (t < 0) {
            fl = -1;
            break;
        }
        fl = fl < 0 || t < fl ? t : fl;
    }
    if (fl > 0) {
        printf("floor: the packs' %.1f MB inflated once and %.1f MB of "
               "their whole blobs scanned: %.3f s, at most %.0f MB/s on "
               "this machine; best run %.0f%% of it\n", inflated, scanned,
               fl, scanned / fl, 100 * best / (scanned / fl));
    } else if (quick || getenv("BENCH_NO_FLOOR")) {
        printf("floor: not measured (BENCH_HOOK_ONLY, BENCH_NO_FLOOR)\n");
    } else {
        printf("floor: not measured (a pack could not be read)\n");
    }

    /* the push's own floor, with a copy that holds the old versions */
    pfl = -1;
    for (i = 0; i < (getenv("BENCH_NO_FLOOR") || quarantine == NULL
                     ? 0 : runs > 20 ? runs : 20); i++)
    {
        t = floor_push(quarantine, added, sec, &inflated, &scanned);
        if (t < 0) {
            pfl = -1;
            break;
        }
        pfl = pfl < 0 || t < pfl ? t : pfl;
    }
    if (pfl > 0) {
        push_floor = added / MB / pfl;
        printf("push floor: the pushed pack's %.1f MB read once (%.1f MB "
               "of it stored bases, read as they lie; the rest inflated) "
               "and %.1f MB scanned: %.4f s, at most %.0f MB/s on this "
               "machine%s", inflated, scanned, added / MB, pfl, push_floor,
               quick ? "\n" : "");
        if (!quick) {
            printf("; best run %.0f%% of it\n", 100 * best / push_floor);
        }
    }

    /* and a process's start and end, which git adds to every push */
    if (getenv("BENCH_EMPTY") != NULL) {
        snprintf(empty, sizeof(empty), "%s", getenv("BENCH_EMPTY"));
    } else if ((n = readlink("/proc/self/exe", empty, sizeof(empty) - 16)) > 0
               && (empty[n] = '\0', e = strrchr(empty, '/')) != NULL)
    {
        strcpy(e, "/bench_empty");
    } else {
        empty[0] = '\0';
    }
    if (pfl > 0 && empty[0] != '\0' && access(empty, X_OK) == 0
        && (t = process_floor(empty, 200, &fl)) > 0)
    {
        push_floor_proc = added / MB / (pfl + t);
        printf("process floor: an empty static program (%s, built as the "
               "hook is) starts and ends in %.3f ms of CPU (best of 200; "
               "median %.3f ms); the push floor with it: at most %.0f MB/s "
               "on this machine\n", empty, t * 1e3, fl * 1e3,
               push_floor_proc);
    }

    if (getenv("HOOK") != NULL && added > 0) {
        hooks[0] = getenv("HOOK");
        hooks[1] = getenv("HOOK_B");
        hook_measure(hooks, hooks[1] != NULL ? 2 : 1, argv[1], quarantine,
                     line, added, runs);
    }
    tails_restore(argv[1]);

    gg_updates_free(&u);
    bottle_scan_secrets_free(sec);
    bottle_scan_db_free(db);
    return 0;
}
