/*
 * The parts of a request target that upstreams read differently from the
 * policy: dot segments in the spellings servers and frameworks undo, '#',
 * and query parameter names as frameworks normalise them.
 *
 * Everything here is the agent's input.  No nginx types and no allocation:
 * the caller passes the scratch or output buffer.
 */

#ifndef BOTTLE_URI_H
#define BOTTLE_URI_H

#include <stddef.h>


#define BOTTLE_URI_OK              0
#define BOTTLE_URI_E_FRAGMENT     -1   /* a '#' in the target */
#define BOTTLE_URI_E_DOT          -2   /* a "." or ".." segment */
#define BOTTLE_URI_E_DEEP         -3   /* still encoded after the rounds */

/* percent-decoding rounds the path check undoes (%25252e is three) */
#define BOTTLE_URI_DECODE_ROUNDS   3


/*
 * The whole request target (path and query): BOTTLE_URI_E_FRAGMENT when
 * it holds a '#', else BOTTLE_URI_OK.
 */
int bottle_uri_check_target(const unsigned char *p, size_t n);

/*
 * The path: BOTTLE_URI_E_DOT when some segment is all dots (".", "..",
 * "...") once the
 * path is percent-decoded up to BOTTLE_URI_DECODE_ROUNDS times (overlong
 * UTF-8 for '.', '/' and '\' read as those), split on '/' and '\', each
 * segment cut at its first ';' (matrix parameters) and trimmed of
 * whitespace and control bytes; BOTTLE_URI_E_DEEP when the path still
 * holds a percent-encoding after the last round; else BOTTLE_URI_OK.
 * scratch: n bytes the check may overwrite.
 */
int bottle_uri_check_path(const unsigned char *p, size_t n,
    unsigned char *scratch);

const char *bottle_uri_strerror(int rc);

/*
 * 1 when a query parameter name (as sent, still encoded) names one of the
 * credential parameters (access_token, token, key, api_key, apikey,
 * private_token) once normalised as frameworks do: '+' is a space,
 * percent-decoded once, cut at a NUL, leading and trailing whitespace
 * dropped, ' ' and '.' read as '_', a "[...]" suffix dropped and a '['
 * without its ']' read as '_' (PHP), compared case-insensitively.
 */
int bottle_query_is_credential(const unsigned char *name, size_t n);

/*
 * The query without its credential parameters.  Parameters are split on
 * '&' and on ';'; those kept go out byte for byte, each after the
 * separator that preceded it in the query (none before the first kept).
 * out: n bytes.  Returns the length written; *stripped (may be NULL) is
 * the number of parameters removed.
 */
size_t bottle_query_strip(unsigned char *out, const unsigned char *q,
    size_t n, size_t *stripped);


#endif /* BOTTLE_URI_H */
