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
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "bottle_scan.h"
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


int
main(int argc, char **argv)
{
    int                     i, runs;
    char                    line[GG_MAX_REFNAME + 128], err[512];
    double                  w0, c0, k0, wall, cpu, kid, best;
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

    snprintf(line, sizeof(line), "%s %s %s\n", argv[2], argv[3], argv[4]);
    if (gg_updates_parse(&u, line, strlen(line), err, sizeof(err)) != 0
        || secrets(&db, &sec) != 0)
    {
        fprintf(stderr, "gitgate_scan_bench: %s\n", err);
        return 1;
    }

    best = 0;
    for (i = 0; i < runs; i++) {
        w0 = clock_of(CLOCK_MONOTONIC);
        c0 = clock_of(CLOCK_PROCESS_CPUTIME_ID);
        k0 = clock_children();
        if (gg_scan_push(&r, argv[1], NULL, &u, sec, err, sizeof(err))
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
               "as extents), "
               "%.1f MB of added lines "
               "(%.1f MB scanned), %.3f s wall, %.3f s cpu (git cat-file "
               "%.3f s): %.0f MB/s of added lines; findings %zu\n", i + 1,
               (unsigned long long) r.commits, (unsigned long long) r.files,
               (unsigned long long) r.delta_files,
               (unsigned long long) r.extent_files,
               r.added / MB, r.bytes / MB, wall, cpu, kid, r.added / MB / cpu,
               r.n + r.more);
        if (r.added / MB / cpu > best) {
            best = r.added / MB / cpu;
        }
        gg_report_free(&r);
    }

    printf("best: %.0f MB/s of added lines on one core (target >= 200): "
           "%s\n", best, best >= 200 ? "met" : "NOT met");

    gg_updates_free(&u);
    bottle_scan_secrets_free(sec);
    bottle_scan_db_free(db);
    return 0;
}
