/*
 * git-gate's blob reader: the contents of a push's blobs from one
 * `git cat-file --batch` child per scan, on the same objects the hook
 * sees (the quarantine first, then the repository's).  git keeps resolved
 * delta bases in its 96 MB cache, where libgit2 1.5 resolves every blob
 * over 1 MB from the start of its chain (gitgate-helper/README.md,
 * "Speed").
 */

#ifndef GG_BLOB_H
#define GG_BLOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


/* the largest blob scanned; a bigger one refuses the push (internal) */
#define GG_BLOB_MAX         (512ULL * 1024 * 1024)
/* a blob not read whole this long after its request (a child silent or
 * trickling) has stalled: the scan fails (GITGATE_BLOB_TIMEOUT, seconds,
 * sets another: gg_scan_push()) */
#define GG_BLOB_TIMEOUT_MS  60000
#define GG_BLOB_RBUF        65536
#define GG_BLOB_HEXSZ       40


typedef struct {
    const char         *repo;       /* its git dir */
    const char         *quarantine; /* or NULL */
    pid_t               pid;        /* 0: not started */
    int                 fd;         /* socket: its stdin and stdout */
    int64_t             deadline;   /* ms, CLOCK_MONOTONIC: this blob's */
    int                 timeout_ms; /* GG_BLOB_TIMEOUT_MS unless set */
    char                rbuf[GG_BLOB_RBUF];
    size_t              rpos;
    size_t              rlen;
} gg_blob_reader_t;


typedef struct {
    char               *data;
    size_t              len;
    size_t              cap;
} gg_blob_t;


void gg_blob_reader_init(gg_blob_reader_t *br, const char *repo,
    const char *quarantine);

/*
 * Reads the blob hex (40 hex digits) into out (its buffer reused, grown
 * as needed).  Returns 0, or -1 with err saying why (missing, not a blob,
 * over GG_BLOB_MAX, the child died, stalled or said something else): the
 * scan fails and the push is refused.  After -1 the reader is closed.
 */
int gg_blob_read(gg_blob_t *out, gg_blob_reader_t *br, const char *hex,
    char *err, size_t errlen);

/* ends the child (never waits on a stalled one) */
void gg_blob_reader_close(gg_blob_reader_t *br);

/*
 * The answer's header line (line, len: without its '\n') to a request for
 * hex: 0 and *size for "<hex> blob <size>", 1 for "<hex> missing", 2 for
 * "<hex> <type> <size>" of another type, 3 for a size over max, -1 for
 * anything else.  Untrusted input: fuzz/gg_blob_fuzz.c.
 */
int gg_blob_header(uint64_t *size, const char *line, size_t len,
    const char *hex, uint64_t max);


#endif /* GG_BLOB_H */
