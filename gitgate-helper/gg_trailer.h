/*
 * Commit trailers (docs/gitgate.md, "Commit trailers"): the Bottle-Id
 * trailers of a commit's message, as git reads trailers: the message's
 * last paragraph, never its first (the title).  Attribution, not secret
 * protection: a commit whose trailers attribute it to a bottle must be
 * pushed by that bottle.
 *
 * No libgit2 here: the parser is fuzzed on its own (fuzz/gg_trailer_fuzz.c).
 */

#ifndef GG_TRAILER_H
#define GG_TRAILER_H

#include <stddef.h>


#define GG_TRAILER_NAME     "Bottle-Id"
#define GG_TRAILER_RULE     "bottle_trailer"
#define GG_TRAILER_VALUE_MAX  256       /* longer: names no bottle */


typedef struct {
    size_t              named;      /* Bottle-Id trailers naming bottle */
    size_t              other;      /* naming anything else */
} gg_trailers_t;


/*
 * The Bottle-Id trailers of msg (len bytes, any bytes: NULs, CR, no final
 * newline): lines split at LF, one CR before it dropped; a line of spaces
 * and tabs only is blank; paragraphs are runs of lines not blank; with two
 * paragraphs or more, the last is the trailer block.  In it a line
 * "<name>[ \t]*:<value>" whose name is Bottle-Id in any case is one, its
 * value with the following lines that start with a space or a tab (folded:
 * each trimmed, joined by one space), trimmed of spaces and tabs.  A value
 * is compared with bottle (blen bytes) exactly.
 */
void gg_trailers(gg_trailers_t *out, const char *msg, size_t len,
    const char *bottle, size_t blen);


#endif /* GG_TRAILER_H */
