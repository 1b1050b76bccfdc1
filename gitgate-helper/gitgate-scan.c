/*
 * gitgate-scan: git-gate's push scan as a pre-receive hook.
 *
 *   gitgate-scan --policy FILE --bottle ID [--repo GIT_DIR]
 *
 * Reads the ref updates on stdin, scans what the push introduces (the
 * new objects are in $GIT_QUARANTINE_PATH until the hook accepts them)
 * and exits 0 to let the push go on, 1 to refuse it, 2 on a usage error
 * (refused too: git refuses on any non-zero status).  Refusals are
 * written to stderr, which git shows the pusher as "remote: " lines; they
 * name the rule and where, never the value.  A scan that cannot run
 * refuses with rule "internal".  GITGATE_FILEMODES, GITGATE_BLOB_TIMEOUT
 * and GITGATE_PACK_CACHE_MB are read from the environment, as the gate's
 * hook reads its FastCGI parameters (docs/gitgate.md); GITGATE_SCAN_CACHE,
 * a directory of this user's where the compiled rule databases are kept
 * between runs (the gate's hook keeps them in <GITGATE_DIR>/.scan-cache).
 *
 *   gitgate-scan --scand DIR
 *
 * is its resident scanner (gg_scand_run.h): the hook client gitgate-hook,
 * given gitgate-scan's arguments and GITGATE_SCAND_DIR=DIR, starts it and
 * hands it each push.
 *
 *   gitgate-scan --tails GIT_DIR
 *
 * records the blob tails of the files at the tips of GIT_DIR's branches
 * (gg_tail_fill.c; the gate starts this pass itself after a fill or a
 * refresh fetched) and says how many: "tails: N recorded, B bytes read"
 * (", more left" when its budget ended it, "tails: another pass waits"
 * when it left that to another); exit 0, or 1 and why on stderr.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_policy.h"
#include "bottle_scan.h"
#include "gg_scan.h"
#include "gg_update.h"
#include "gg_hook.h"
#include "gg_scand_run.h"


static int scan_hook(int argc, char **argv, bottle_scan_db_t *data);
static int tails(const char *repo);


static void
usage(FILE *f)
{
    fprintf(f, "usage: gitgate-scan --policy FILE --bottle ID "
            "[--repo GIT_DIR]\n"
            "a pre-receive hook: ref updates on stdin; exit 0 accepts "
            "the push, 1 refuses it\n");
}


static void
refuse_internal(const char *why)
{
    fprintf(stderr, "git-gate refused this push (rule: internal)\n"
            "  why: %s\n"
            "  the push could not be checked, so it does not go on; "
            "try again, or ask the operator\n", why);
}


int
main(int argc, char **argv)
{
    int                rc;
    char               err[512];
    bottle_scan_db_t  *db;

    if (argc == 3 && strcmp(argv[1], "--tails") == 0) {
        return tails(argv[2]);
    }

    if (argc == 3 && strcmp(argv[1], "--scand") == 0) {
        if (bottle_scan_db_create_cached(&db,
                gg_scan_cache(getenv("GITGATE_SCAN_CACHE")), err,
                sizeof(err)) != 0)
        {
            fprintf(stderr, "gitgate-scan --scand: %s\n", err);
            return 1;
        }
        rc = gg_scand_serve(NULL, argv[2], scan_hook, db);
        bottle_scan_db_free(db);
        return rc;
    }

    return scan_hook(argc, argv, NULL);
}


static int
tails(const char *repo)
{
    char            err[512];
    gg_tail_fill_t  st;

    if (gg_tail_fill(repo, &st, err, sizeof(err)) != 0) {
        fprintf(stderr, "gitgate-scan --tails: %s\n", err);
        return 1;
    }
    if (st.skipped) {
        printf("tails: another pass waits\n");
    } else {
        printf("tails: %zu recorded, %llu bytes read%s\n", st.records,
               (unsigned long long) st.bytes, st.more ? ", more left" : "");
    }
    return 0;
}


/* the hook; data, the rule databases already read, or NULL */

static int
scan_hook(int argc, char **argv, bottle_scan_db_t *data)
{
    int                     i, rc;
    char                    err[512], *input;
    size_t                  len;
    const char             *policy, *bottle, *repo, *quarantine, *cache;
    gg_report_t             r;
    gg_updates_t            u;
    const bottle_t         *b;
    bottle_policy_t        *p, *kept;
    bottle_scan_db_t       *db;
    bottle_scan_secrets_t  *sec;

    policy = NULL;
    bottle = NULL;
    repo = getenv("GIT_DIR");

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (i + 1 == argc) {
            usage(stderr);
            return 2;
        }
        if (strcmp(argv[i], "--policy") == 0) {
            policy = argv[++i];
        } else if (strcmp(argv[i], "--bottle") == 0) {
            bottle = argv[++i];
        } else if (strcmp(argv[i], "--repo") == 0) {
            repo = argv[++i];
        } else {
            usage(stderr);
            return 2;
        }
    }

    if (policy == NULL || bottle == NULL) {
        usage(stderr);
        return 2;
    }

    /* a hook runs in the repository; GIT_DIR is "." there */
    repo = repo ? repo : ".";
    quarantine = getenv("GIT_QUARANTINE_PATH");

    p = NULL;
    kept = NULL;
    db = NULL;
    sec = NULL;
    input = NULL;
    memset(&u, 0, sizeof(u));
    memset(&r, 0, sizeof(r));
    rc = 1;

    /* in the resident scanner's child: the policy and its bottle's
     * secrets, when it has seen these bytes (gg_scand_run.h) */
    if (data && gg_scand_policy_file(policy, bottle, &p) == 0) {
        kept = p;

    } else if (bottle_policy_load(&p, policy, err, sizeof(err)) != 0) {
        refuse_internal(err);
        goto cleanup;
    }

    b = bottle_policy_find_id(p, bottle, strlen(bottle));
    if (b == NULL) {
        refuse_internal("the bottle is not in the policy");
        goto cleanup;
    }

    cache = gg_scan_cache(getenv("GITGATE_SCAN_CACHE"));

    if ((data == NULL
         && bottle_scan_db_create_cached(&db, cache, err, sizeof(err)) != 0)
        || (gg_scand_secrets(kept) == NULL
            && bottle_scan_secrets_for_git(&sec, data ? data : db, b, err,
                                           sizeof(err)) != 0)
        || gg_read_input(&input, &len, err, sizeof(err)) != 0
        || gg_updates_parse(&u, input, len, err, sizeof(err)) != 0
        || gg_scan_push(&r, repo, quarantine, &u,
                        sec ? sec : gg_scand_secrets(kept), err,
                        sizeof(err)) != 0)
    {
        refuse_internal(err);
        goto cleanup;
    }

    if (r.n || r.more) {
        gg_report_print(&r);
        goto cleanup;
    }

    rc = 0;

cleanup:

    gg_report_free(&r);
    gg_updates_free(&u);
    free(input);
    if (sec) {
        bottle_scan_secrets_free(sec);
    }
    if (db) {
        bottle_scan_db_free(db);
    }
    if (p && p != kept) {
        bottle_policy_free(p);
    }
    return rc;
}
