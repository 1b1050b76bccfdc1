/*
 * git-gate's readers of raw git objects (gg_object.c): a tree object's
 * entries and the header lines of a commit or a tag, from their bytes as
 * the push holds them (hand-made ones included), no libgit2.
 */

#ifndef GG_OBJECT_H
#define GG_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "gg_update.h"


/* the most octal digits of a tree entry's mode read (git writes 5 or 6) */
#define GG_MODE_MAX         7


/* one entry of a tree object: "<mode> <name>\0<GG_OID_RAWSZ bytes>" */
typedef struct {
    const char             *mode;   /* octal digits, as written */
    size_t                  mlen;
    uint32_t                m;
    const char             *name;   /* no NUL in it */
    size_t                  nlen;
    const unsigned char    *oid;
} gg_tree_entry_t;


/*
 * The entry of a tree object's bytes at *p (up to end), *p moved past it:
 * 1; 0 at the end; -1 when malformed (no space, no NUL, a mode empty, of
 * more than GG_MODE_MAX digits or not octal, the id cut short).
 */
int gg_tree_next(gg_tree_entry_t *e, const char **p, const char *end);

/*
 * The header entry of a commit or a tag at *p (up to end): a line and
 * its continuation lines (those starting with a space) as [*s, *s + *len),
 * *p moved past it: 1.  0 at the header's end: *msg is where the message
 * starts (after the first empty line; end if there is none).
 */
int gg_header_next(const char **p, const char *end, const char **s,
    size_t *len, const char **msg);

/* 1 if [s, s + len) is exactly "<key> <hex>\n" */
int gg_header_is(const char *s, size_t len, const char *key,
    const char *hex);

/* 1 if [s, s + len) starts with key */
int gg_header_prefix(const char *s, size_t len, const char *key);


#endif /* GG_OBJECT_H */
