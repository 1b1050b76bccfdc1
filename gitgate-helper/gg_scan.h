/*
 * git-gate's push scanner: over exactly what a push introduces (the
 * commits reachable from its new tips and from no existing ref, the
 * annotated tags it sends, its ref names), libbottle's scanner looks for
 * token shapes, the bottle's canary, egress tokens and held secrets, in
 * every encoding DLP knows.  Issue 16; threat model rows 4 and 5.
 *
 * What is scanned, one scanner field each:
 *
 *   ref       the name of every created or updated ref
 *   commit    its raw object's bytes: the message (all after the first
 *             empty line), the first author and committer lines, every
 *             other header line (only its own tree and parents' ids left
 *             out); the path of every changed tree entry (an empty tree's
 *             too) and a file's added lines: against the first parent,
 *             the whole tree for a root commit; a tree entry of a mode git
 *             does not write refuses (bad_filemode) unless
 *             GITGATE_FILEMODES=scan
 *   tag       annotated tags, raw: name, tagger, other header lines,
 *             message; a tag of a blob or a tree, or a ref set to one,
 *             scans that blob or tree whole
 *
 * Findings carry the rule and where it was found, never the value; a name
 * (ref, path, tag) that itself matched is withheld from every "where".
 */

#ifndef GG_SCAN_H
#define GG_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "bottle_scan.h"
#include "gg_update.h"


/* a finding refuses the push */
#define GG_REFUSE           1
/* a token shape on a line marked "gitleaks:allow": refused until the
 * operator approves a gitleaks-allow proposal (gg_allow.c) */
#define GG_NEEDS_ALLOW      2

/* "sha256:" and 64 hex digits of the matched value, and a NUL */
#define GG_DIGEST_LEN       (7 + 64 + 1)

/* findings kept for the report, the rest only counted; a marked value
 * (GG_NEEDS_ALLOW) is kept once, its other places counted in it */
#define GG_MAX_FINDINGS     32

/* the detectors a push is scanned with (the canary always is) */
#define GG_DETECTORS        (BOTTLE_DLP_TOKEN_PATTERNS                       \
                             | BOTTLE_DLP_KNOWN_SECRETS)


typedef struct {
    int                 outcome;    /* GG_REFUSE, GG_NEEDS_ALLOW */
    char               *rule;       /* "github_pat_classic", "canary",
                                       "held_secret:NAME", ... */
    char               *where;      /* "commit 1a2b3c4d5e6f file a.txt
                                       line 3", "ref update 2", ... */

    /* GG_NEEDS_ALLOW's, for its gitleaks-allow proposal: never the value */
    char                digest[GG_DIGEST_LEN];  /* of the matched value */
    char               *file;       /* its path; NULL if withheld */
    char                commit[GG_OID_HEXSZ + 1];   /* short sha */
    size_t              line;       /* in the new file */
    size_t              also;       /* more places of the same value
                                       (rule and digest) in the push */
    int                 allowed;    /* the operator allowed it already */
} gg_finding_t;


typedef struct {
    gg_finding_t       *f;
    size_t              n;
    size_t              more;       /* findings past GG_MAX_FINDINGS
                                       (a marked value's other places
                                       are not: gg_finding_t.also) */
    int                 refuse;     /* some finding is GG_REFUSE */

    uint64_t            commits;    /* scanned */
    uint64_t            tags;
    uint64_t            files;      /* added or modified blobs */
    uint64_t            added;      /* bytes of added lines scanned */
    uint64_t            bytes;      /* every byte scanned */
    uint64_t            delta_files;    /* modified files whose added
                                           lines a pack's delta gave */
    uint64_t            extent_files;   /* of them, with neither
                                           version built (extents) */
    uint64_t            tail_files;     /* of them, appended to an old
                                           version known by its tail
                                           (gg_tail.c), neither read */
} gg_report_t;


/*
 * Scans the push.  repo is the repository receive-pack writes into (a bare
 * one: its git dir); quarantine, if not NULL, is the objects directory
 * holding the pushed objects until they are accepted (a pre-receive
 * hook's $GIT_QUARANTINE_PATH).  sec is the bottle's
 * (bottle_scan_secrets_for_git()).
 *
 * Returns 0 when the scan ran: out lists the findings (none: the push may
 * go on).  Returns -1 when it could not run (unreadable repo or object,
 * out of memory): err says why, without names or values, and the push
 * must be refused.  Either way out is released with gg_report_free().
 */
int gg_scan_push(gg_report_t *out, const char *repo, const char *quarantine,
    const gg_updates_t *updates, bottle_scan_secrets_t *sec, char *err,
    size_t errlen);

void gg_report_free(gg_report_t *r);

/* libgit2 started as a scan uses it (gg_scan.c): no hash check on read,
 * no configuration but the repository's */
void gg_git_init(void);

/*
 * A resident scanner's start (gg_scand.c): the generic assignments'
 * matcher compiled once (2-3 ms of a push's CPU otherwise), every later
 * gg_scan_push() of the process and of its forked children using it.
 * 0, or -1 (err says why; each push then compiles its own).
 */
int gg_scan_preload(char *err, size_t errlen);

/*
 * on: the process's later pushes of one repository find its packs
 * mapped by git-gate's pack reader (gg_pack_keep()), through which
 * libgit2 reads too (gg_odb.c): a warm child of the resident scanner's
 * (gg_scand.c), its pushes one after another in one process
 */
void gg_scan_keep(int on);

/* a push's memory budget, KB: GITGATE_SCAN_MEMORY_MB (1 to 1048576),
 * else 2048 MB; the growth of the process's peak RSS it may take */
uint64_t gg_scan_memory_kb(void);

/*
 * The blob tails of the files at the tips of repo's branches (gg_tail.c,
 * gg_tail_fill.c): a record of each that has none.  0 (st: how many were
 * written, how many bytes read, whether the pass's budget ended it, or
 * whether it left because another pass waits), or -1 (err says why).
 * gg_tail_fill_spawn(): the same in a detached process at nice 19, the
 * caller not waiting for it.
 */
typedef struct {
    size_t              records;
    uint64_t            bytes;
    int                 more;       /* the budget spent: some left */
    int                 skipped;    /* another pass waits: none read */
} gg_tail_fill_t;

int gg_tail_fill(const char *repo, gg_tail_fill_t *st, char *err,
    size_t errlen);
void gg_tail_fill_spawn(const char *repo);


#endif /* GG_SCAN_H */
