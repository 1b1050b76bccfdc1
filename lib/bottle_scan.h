/*
 * The streaming secret scanner (outbound DLP, docs/dlp.md): finds the
 * bottle's canary, its egress tokens in many encodings and split forms,
 * vendor token shapes, high-entropy runs and prompt-injection phrases in
 * the fields of one request (hostname, path, query, header values, the
 * body fed in chunks), and reports each match by detector, rule name and
 * raw byte span, never by value.
 *
 * Three objects, from longest-lived to shortest:
 *
 *   bottle_scan_db_t       the vendor rules and injection phrases, compiled
 *                          once per process (at configuration load) and
 *                          read-only afterwards;
 *   bottle_scan_secrets_t  one bottle's canary and egress tokens in every
 *                          encoding, compiled once per policy load; it also
 *                          keeps the free list of scan states for its bottle;
 *   bottle_scan_t          the state of one request scan: streams, scratch,
 *                          view buffers and the match list.  Taken from the
 *                          secrets object's free list by bottle_scan_acquire()
 *                          and given back by bottle_scan_release(); a state
 *                          is allocated only when the list is empty, so a
 *                          process that preallocated its peak concurrency
 *                          (bottle_scan_secrets_reserve) never allocates
 *                          while scanning.
 *
 * A request is scanned as a sequence of fields; each is begun, fed in
 * chunks of any size (a match spanning chunks is found, offsets are
 * absolute within the field) and ended.  The separator-stripped view runs
 * on across the fields of one request, so a secret spread over several
 * fields in order is found too (not removable: the gateway refuses).
 *
 * Not thread-safe per state; the free lists are protected by a mutex, so
 * states of one secrets object may be used by several threads at once.
 * No nginx types: shared by the nginx module and git-gate.
 */

#ifndef BOTTLE_SCAN_H
#define BOTTLE_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bottle_policy.h"


/* what found a match */
#define BOTTLE_DETECT_CANARY          1
#define BOTTLE_DETECT_KNOWN_SECRETS   2
#define BOTTLE_DETECT_TOKEN_PATTERNS  3
#define BOTTLE_DETECT_ENTROPY         4     /* warn only */
#define BOTTLE_DETECT_INJECTION       5     /* inbound, flag only */

/* the view a match was first found in */
#define BOTTLE_VIEW_RAW               0
#define BOTTLE_VIEW_JSON              1     /* JSON-unescaped */
#define BOTTLE_VIEW_PCT               2     /* percent-decoded once */
#define BOTTLE_VIEW_PCT2              3     /* percent-decoded twice */
#define BOTTLE_VIEW_SKELETON          4     /* decoded, separators stripped */

/* the most matches one request scan keeps (bottle_scan_overflow()) */
#define BOTTLE_SCAN_MAX_MATCHES       128

/* shortest egress token scanned for; the canary is scanned at any length */
#define BOTTLE_SCAN_SECRET_MIN        8

/* split forms: any this many consecutive letters and digits of a secret,
 * alone in a field, are found (windows of 14 at stride 3) */
#define BOTTLE_SCAN_WINDOW            16

/* longest text a confirm or a decoded-view mapping looks back over */
#define BOTTLE_SCAN_LOOKBACK          4096

/*
 * In the detectors of bottle_scan_acquire(): the raw view only, no decoded
 * or skeleton views.  For measuring what the views cost (bench/); never in
 * the gateway, where encoded and split forms would then pass.
 */
#define BOTTLE_SCAN_RAW_ONLY          0x10000

/* redact: "[REDACTED:rule]" rather than "[REDACTED]" */
#define BOTTLE_REDACT_RULE_NAME       0x01

#define BOTTLE_SCAN_OK                0
#define BOTTLE_SCAN_ERROR            -1   /* engine failure: fail closed */
#define BOTTLE_SCAN_E_STATE          -2   /* call out of order */
#define BOTTLE_SCAN_E_TOO_LONG       -3   /* a field over 4 GiB */


typedef struct bottle_scan_db_s       bottle_scan_db_t;
typedef struct bottle_scan_secrets_s  bottle_scan_secrets_t;
typedef struct bottle_scan_s          bottle_scan_t;


typedef struct {
    int                 detector;   /* BOTTLE_DETECT_* */
    /*
     * "aws_access_key_id", "canary", "egress_token:NAME", "high_entropy",
     * ...: static, or owned by the secrets object the scan was acquired
     * from.  Never the value.
     */
    const char         *rule;
    int                 field;      /* the caller's field id */
    uint64_t            start;      /* [start, end) in the field's raw */
    uint64_t            end;        /*  bytes */
    /*
     * 1 when deleting [start, end) from the raw field removes the whole
     * match.  0 when the match spans fields, or its start could not be
     * found exactly (a token longer than its rule's window, at most
     * BOTTLE_SCAN_LOOKBACK): then [start, end) covers only the part in
     * this field, or the part the scanner could see, and the gateway must
     * refuse, not redact.
     */
    unsigned            removable:1;
    unsigned            cross_field:1;  /* pieces in earlier fields too */
    int                 view;       /* BOTTLE_VIEW_* */
} bottle_scan_match_t;


/*
 * Compiles the vendor rules (token_patterns) and the injection phrases.
 * Once per process; read-only afterwards and shareable by threads and,
 * after fork(), by worker processes.  On failure returns -1 with a
 * lowercase reason in err.
 */
int bottle_scan_db_create(bottle_scan_db_t **out, char *err, size_t errlen);
/*
 * The same; cache (NULL: none) a directory only this program's user may
 * write, where the compiled databases are kept for the next process: read
 * from there when a file holds them (its digest and vectorscan's checks
 * pass), else compiled and written there (bottle_scan_cache.c).
 */
int bottle_scan_db_create_cached(bottle_scan_db_t **out, const char *cache,
    char *err, size_t errlen);
void bottle_scan_db_free(bottle_scan_db_t *db);

/* the rule table, for docs and tests: name, vendor and shape of rule i */
size_t bottle_scan_rule_count(void);
int bottle_scan_rule_info(size_t i, const char **name, const char **vendor,
    const char **shape, int *detector);


/*
 * Compiles the literal databases of one bottle: the canary (may be empty)
 * and the egress tokens (values shorter than BOTTLE_SCAN_SECRET_MIN are
 * skipped).  db must outlive the result.  Returns 0 or -1 with err set;
 * the values never appear in err.
 */
int bottle_scan_secrets_create(bottle_scan_secrets_t **out,
    const bottle_scan_db_t *db, const bottle_str_t *canary,
    const bottle_secret_t *tokens, size_t ntokens, char *err, size_t errlen);

/* the same, from a parsed bottle's canary and egress_tokens */
int bottle_scan_secrets_from_bottle(bottle_scan_secrets_t **out,
    const bottle_scan_db_t *db, const bottle_t *b, char *err, size_t errlen);

/*
 * The same, with held secrets too (git-gate: secret values the bottle's
 * agent has and must not push): rule "held_secret:NAME", values shorter
 * than BOTTLE_SCAN_SECRET_MIN skipped like egress tokens.
 */
int bottle_scan_secrets_create_held(bottle_scan_secrets_t **out,
    const bottle_scan_db_t *db, const bottle_str_t *canary,
    const bottle_secret_t *tokens, size_t ntokens,
    const bottle_secret_t *held, size_t nheld, char *err, size_t errlen);

/* git-gate's: a parsed bottle's canary, egress tokens and held secrets */
int bottle_scan_secrets_for_git(bottle_scan_secrets_t **out,
    const bottle_scan_db_t *db, const bottle_t *b, char *err, size_t errlen);

/* allocates states up to n on the free list now, so scans don't have to */
int bottle_scan_secrets_reserve(bottle_scan_secrets_t *sec, size_t n);

/*
 * Frees the secrets object and its free list.  States still acquired keep
 * it alive: the last bottle_scan_release() frees it (policy reloads).
 */
void bottle_scan_secrets_free(bottle_scan_secrets_t *sec);

/* how many literals the bottle's databases hold (raw, skeleton) */
void bottle_scan_secrets_stats(const bottle_scan_secrets_t *sec,
    size_t *nraw, size_t *nskeleton);


/*
 * Takes a scan state for one request.  detectors is a mask of the
 * BOTTLE_DLP_* bits of bottle_policy.h (TOKEN_PATTERNS, KNOWN_SECRETS,
 * ENTROPY, NAIVE_INJECTION); the canary is always looked for when the
 * bottle has one.  Returns 0, or -1 when a new state could not be
 * allocated.
 */
int bottle_scan_acquire(bottle_scan_t **out, bottle_scan_secrets_t *sec,
    unsigned detectors);

/* forgets the matches and fields: the next request, same state */
void bottle_scan_reset(bottle_scan_t *s, unsigned detectors);

void bottle_scan_release(bottle_scan_t *s);


/*
 * One field: begin, feed any number of chunks, end.  field is the
 * caller's id, copied into each match (a location: hostname, path, query,
 * header index, body).  Matches are known once the field has ended.
 * Each returns BOTTLE_SCAN_OK or a negative BOTTLE_SCAN_ERROR or
 * BOTTLE_SCAN_E_*; after an error the request must be refused.
 */
int bottle_scan_begin(bottle_scan_t *s, int field);
int bottle_scan_feed(bottle_scan_t *s, const void *data, size_t len);
int bottle_scan_end(bottle_scan_t *s);

/* one small field in one call: begin, feed, end */
int bottle_scan_field(bottle_scan_t *s, int field, const void *data,
    size_t len);

/*
 * The matches so far, sorted by field order, then start.  Overlapping or
 * touching matches of the same rule in the same field are merged.  Valid
 * until the next call on s.
 */
const bottle_scan_match_t *bottle_scan_matches(bottle_scan_t *s, size_t *n);

/*
 * 1 if more than BOTTLE_SCAN_MAX_MATCHES blocking matches were found and
 * some were not kept: the request must be refused, not redacted.
 * (Warn-only matches, entropy and injection, are dropped first.)
 */
int bottle_scan_overflow(const bottle_scan_t *s);


/*
 * Redaction of one field, which may be done piecewise: in holds the
 * field's bytes [base, base + len).  Every match of that field whose
 * detector is in the BOTTLE_DETECT_* bit mask detectors (bit 1 << d) is
 * replaced by one marker, "[REDACTED]" or with BOTTLE_REDACT_RULE_NAME
 * "[REDACTED:rule]", written in the piece holding the match's start;
 * overlapping matches share one marker.  Returns the output length, or
 * -1 when a selected match is not removable (refuse instead) or out is
 * too small: bottle_scan_redact_len() gives the size needed.  The caller
 * fixes Content-Length.
 */
ssize_t bottle_scan_redact(unsigned char *out, size_t cap,
    const unsigned char *in, size_t len, uint64_t base,
    const bottle_scan_match_t *m, size_t n, int field, unsigned detectors,
    unsigned flags);

ssize_t bottle_scan_redact_len(size_t len, uint64_t base,
    const bottle_scan_match_t *m, size_t n, int field, unsigned detectors,
    unsigned flags);

/* "canary", "known_secrets", "token_patterns", "entropy", "injection" */
const char *bottle_scan_detector_name(int detector);


#endif /* BOTTLE_SCAN_H */
