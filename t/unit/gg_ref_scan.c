/*
 * gg_ref_scan: the detectors of git-gate's push scan, alone, for the
 * differential check (t/gitgate_diff.t, issue 26).  No git-gate code:
 * libbottle's scanner and generic-assignment matcher only, with the
 * bottle's canary, egress tokens and held secrets from the policy, as
 * gitgate-scan loads them.
 *
 *   gg_ref_scan --policy FILE --bottle ID < fields
 *
 * stdin: fields, each a header line "<kind> <length>\n" and then exactly
 * <length> bytes; kind is a word: "file" (a blob's added lines: the
 * generic assignments are looked for too, as git-gate does in a file's
 * lines, where no token shape was found in the field) or anything else
 * (raw commit or tag bytes, a tree entry's name, a ref name).
 *
 * stdout: one line per finding, "<field index> <rule>", the index
 * counting from 0 in input order.  Each field is scanned alone (the
 * scanner reset between fields), so a finding is one field's own.
 * Exit 0, or 1 on an error (a message on stderr).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_policy.h"
#include "bottle_scan.h"
#include "bottle_generic.h"


/* git-gate's detectors (the canary is always looked for) */
#define REF_DETECTORS  (BOTTLE_DLP_TOKEN_PATTERNS | BOTTLE_DLP_KNOWN_SECRETS)


typedef struct {
    size_t  index;
    int     found;
} ref_gen_t;


static int
ref_generic_found(void *arg, size_t start, size_t end)
{
    ref_gen_t  *g = arg;

    (void) start;
    (void) end;

    printf("%zu %s\n", g->index, BOTTLE_GENERIC_RULE);
    g->found++;
    return 0;
}


int
main(int argc, char **argv)
{
    int                         i, tokens;
    char                        err[512], kind[64], *data;
    size_t                      index, len, n, k, got;
    const char                 *policy, *bottle;
    ref_gen_t                   g;
    const bottle_t             *b;
    bottle_policy_t            *p;
    bottle_generic_t           *gen;
    bottle_scan_t              *s;
    bottle_scan_db_t           *db;
    bottle_scan_secrets_t      *sec;
    const bottle_scan_match_t  *m;

    policy = NULL;
    bottle = NULL;

    for (i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--policy") == 0) {
            policy = argv[i + 1];
        } else if (strcmp(argv[i], "--bottle") == 0) {
            bottle = argv[i + 1];
        }
    }

    if (policy == NULL || bottle == NULL) {
        fprintf(stderr, "usage: gg_ref_scan --policy FILE --bottle ID "
                "< fields\n");
        return 1;
    }

    if (bottle_policy_load(&p, policy, err, sizeof(err)) != 0) {
        fprintf(stderr, "gg_ref_scan: %s\n", err);
        return 1;
    }

    b = bottle_policy_find_id(p, bottle, strlen(bottle));
    if (b == NULL) {
        fprintf(stderr, "gg_ref_scan: no bottle %s\n", bottle);
        return 1;
    }

    if (bottle_scan_db_create(&db, err, sizeof(err)) != 0
        || bottle_scan_secrets_for_git(&sec, db, b, err, sizeof(err)) != 0
        || bottle_generic_create(&gen, err, sizeof(err)) != 0)
    {
        fprintf(stderr, "gg_ref_scan: %s\n", err);
        return 1;
    }

    if (bottle_scan_acquire(&s, sec, REF_DETECTORS) != 0) {
        fprintf(stderr, "gg_ref_scan: no scan state\n");
        return 1;
    }

    for (index = 0; scanf("%63s %zu", kind, &len) == 2; index++) {
        if (getchar() != '\n') {
            fprintf(stderr, "gg_ref_scan: bad header of field %zu\n", index);
            return 1;
        }

        data = malloc(len ? len : 1);
        if (data == NULL) {
            fprintf(stderr, "gg_ref_scan: out of memory\n");
            return 1;
        }
        got = fread(data, 1, len, stdin);
        if (got != len) {
            fprintf(stderr, "gg_ref_scan: field %zu cut short\n", index);
            return 1;
        }

        bottle_scan_reset(s, REF_DETECTORS);
        if (bottle_scan_field(s, 0, data, len) != BOTTLE_SCAN_OK) {
            fprintf(stderr, "gg_ref_scan: the scanner failed\n");
            return 1;
        }

        m = bottle_scan_matches(s, &n);
        tokens = 0;
        for (k = 0; k < n; k++) {
            if (m[k].detector == BOTTLE_DETECT_ENTROPY
                || m[k].detector == BOTTLE_DETECT_INJECTION)
            {
                continue;
            }
            printf("%zu %s\n", index, m[k].rule);
            tokens++;
        }
        if (bottle_scan_overflow(s)) {
            printf("%zu too_many_findings\n", index);
        }

        if (tokens == 0 && strcmp(kind, "file") == 0) {
            g.index = index;
            g.found = 0;
            if (bottle_generic_scan(gen, data, len, ref_generic_found, &g)
                < 0)
            {
                fprintf(stderr, "gg_ref_scan: the generic scan failed\n");
                return 1;
            }
        }

        free(data);
    }

    fflush(stdout);

    bottle_scan_release(s);
    bottle_generic_free(gen);
    bottle_scan_secrets_free(sec);
    bottle_scan_db_free(db);
    bottle_policy_free(p);
    return 0;
}
