/*
 * A unified line diff of two texts (GNU diff -u form, three lines of
 * context), for the policy change a decision applies: decision.resolved's
 * untrusted.diff (docs/control-plane.md, "Proposals and decisions").
 *
 * Common leading and trailing lines are taken off first; what is left is
 * matched by a longest common subsequence when it is at most
 * BOTTLE_DIFF_CELLS_MAX line pairs, else shown as removed then added
 * (still a correct diff, only not the shortest).  No nginx, no hiredis.
 */

#ifndef BOTTLE_DIFF_H
#define BOTTLE_DIFF_H

#include <stddef.h>


#define BOTTLE_DIFF_CONTEXT     3
#define BOTTLE_DIFF_CELLS_MAX   (4 * 1024 * 1024)

/* a diff kept in an audit event is cut here (at a line's end) */
#define BOTTLE_DIFF_MAX         (64 * 1024)

/* "sha256:" and 16 hex digits, and a NUL */
#define BOTTLE_DIFF_DIGEST_LEN  24


/*
 * The diff from a to b, headed "--- <label_a>" and "+++ <label_b>",
 * malloc()ed and NUL-terminated (free() it) in *out, its length in *len:
 * "" when the texts have the same lines.  A last line without a newline
 * is compared as if it had one.  0, or -1 out of memory.
 */
int bottle_diff(char **out, size_t *len, const char *a, size_t alen,
    const char *b, size_t blen, const char *label_a, const char *label_b);

/*
 * How much of a diff to keep under max bytes: all of it if it fits, else
 * up to the end of the last whole line that fits (max if no line does).
 */
size_t bottle_diff_cut(const char *diff, size_t len, size_t max);

/* "sha256:<first 16 hex digits of SHA-256(diff)>"; 0 or -1 */
int bottle_diff_digest(char out[BOTTLE_DIFF_DIGEST_LEN], const char *diff,
    size_t len);


#endif /* BOTTLE_DIFF_H */
