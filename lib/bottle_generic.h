/*
 * Generic secret assignments (gitleaks' "generic-api-key" family): a
 * keyword that names a secret (key, token, secret, password, auth,
 * credential, ...), an assignment operator, and a value that looks like a
 * secret: 10 to 150 characters of [A-Za-z0-9_.=+/-] with letters and
 * digits, at least BOTTLE_GENERIC_ENTROPY bits of Shannon entropy per
 * character, and none of the placeholder words.
 *
 *     API_KEY = "q8Zr3kP0vX2mL9tB"      found
 *     token: getToken()                 not (no value of that shape)
 *     password = "changeme123456"       not (a placeholder word)
 *
 * For source code: git-gate's push scan runs it on the lines a push
 * adds.  Not for egress DLP, where any JSON body with a "token" field
 * would be refused.
 */

#ifndef BOTTLE_GENERIC_H
#define BOTTLE_GENERIC_H

#include <stddef.h>


#define BOTTLE_GENERIC_RULE      "generic-assignment"
#define BOTTLE_GENERIC_ENTROPY   3.5
#define BOTTLE_GENERIC_MIN       10
#define BOTTLE_GENERIC_MAX       150


typedef struct bottle_generic_s  bottle_generic_t;

/* the value's span in the data scanned; return non-zero to stop */
typedef int (*bottle_generic_cb)(void *arg, size_t start, size_t end);


/* compiles the pattern (JIT where there is one): 0, or -1 and err */
int bottle_generic_create(bottle_generic_t **out, char *err, size_t errlen);

void bottle_generic_free(bottle_generic_t *g);

/*
 * Calls cb for each assignment found in data, in order.  Not thread-safe
 * per object (its match data); one object per thread.  Returns the
 * number of values reported, or -1 on a matcher error (a limit reached:
 * the caller refuses, it cannot say the data is clean).
 */
int bottle_generic_scan(bottle_generic_t *g, const char *data, size_t len,
    bottle_generic_cb cb, void *arg);

/* the Shannon entropy of s, bits per byte */
double bottle_generic_entropy(const char *s, size_t len);


#endif /* BOTTLE_GENERIC_H */
