/*
 * The ref updates of one push, as git gives them to a pre-receive hook on
 * stdin: one "<old-sha> SP <new-sha> SP <refname> LF" per ref, an all-zero
 * old sha for a new ref and an all-zero new sha for a deletion.
 *
 * No libgit2 here: the parser is fuzzed on its own (fuzz/gg_update_fuzz.c).
 */

#ifndef GG_UPDATE_H
#define GG_UPDATE_H

#include <stddef.h>


#define GG_OID_RAWSZ        20      /* SHA-1: what libgit2 1.5 reads */
#define GG_OID_HEXSZ        40
/* limits, named in the errors: git sends far less */
#define GG_MAX_UPDATES      65536
#define GG_MAX_REFNAME      4096


typedef struct {
    unsigned char       old[GG_OID_RAWSZ];
    unsigned char       new[GG_OID_RAWSZ];
    char               *ref;        /* NUL-terminated, no control bytes */
    size_t              ref_len;
    unsigned            create:1;   /* old is all zeros */
    unsigned            delete:1;   /* new is all zeros */
} gg_update_t;


typedef struct {
    gg_update_t        *u;
    size_t              n;
    const char         *bottle;     /* who pushes: the new commits' Bottle-Id
                                       trailers checked against it
                                       (gg_trailer.h); NULL: not checked */
    int                 trailer_required;   /* and each must have one */
} gg_updates_t;


/*
 * Parses the whole of a hook's stdin.  Returns 0, or -1 with a lowercase
 * reason in err (never a ref name: it may be what the scan looks for).
 * On success out must be released with gg_updates_free().
 */
int gg_updates_parse(gg_updates_t *out, const char *buf, size_t len,
    char *err, size_t errlen);

void gg_updates_free(gg_updates_t *u);


#endif /* GG_UPDATE_H */
