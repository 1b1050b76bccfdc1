/*
 * Cookie headers, as the gateway's cookie jar reads them (gateway.txt
 * "Cookies").
 *
 * bottle_cookie_filter() rebuilds an agent's Cookie header from the pairs a
 * callback keeps: every "name=value" of one or more Cookie values (HTTP/1.1
 * may send several headers; nginx joins HTTP/2's crumbs into one) is offered
 * once, and the kept ones are written "name=value; name=value".  A name is
 * written once: its first kept pair, so a header repeating a pair cannot
 * make the output longer than one copy of each name the jar holds.  The
 * output never exceeds `cap`: bottle_cookie_filter_bound() is the most any
 * input can need, and every write is checked against `cap` as well.
 *
 * bottle_cookie_set_parse() reads the name, value and lifetime of one
 * Set-Cookie header.
 *
 * No nginx types and no allocation: shared by the nginx module, the unit
 * tests and the fuzz target.
 */

#ifndef BOTTLE_COOKIE_H
#define BOTTLE_COOKIE_H

#include <stddef.h>
#include <sys/types.h>


/* the output does not fit in cap bytes */
#define BOTTLE_COOKIE_E_SPACE  -1

/* Max-Age is capped at 400 days, as browsers do (RFC 6265bis 5.6.2) */
#define BOTTLE_COOKIE_MAX_AGE  (400LL * 24 * 60 * 60)


typedef struct {
    const unsigned char  *data;
    size_t                len;
} bottle_cookie_str_t;


/*
 * Asked once for each pair whose name was not written yet: nonzero keeps
 * it.  name is never empty; value may be.  Neither contains ';', the name
 * no '=', and neither starts or ends with a space or a tab.
 */
typedef int (*bottle_cookie_keep_pt)(void *data,
    const unsigned char *name, size_t name_len,
    const unsigned char *value, size_t value_len);


/*
 * The most bytes bottle_cookie_filter() writes for inputs of `len` bytes in
 * all: a pair takes at least two bytes of the input ("a=") and at most two
 * more in the output ("; "), so twice the input.  0 if that overflows.
 */
size_t bottle_cookie_filter_bound(size_t len);

/*
 * Writes the kept pairs of in[0..n) to out, "; " between them; returns the
 * bytes written (0: none kept) or BOTTLE_COOKIE_E_SPACE when they do not
 * fit in cap (out then holds a truncated list of whole pairs, not to be
 * used).  A pair is the text between two ';' (or an input's ends) with
 * spaces and tabs around the name and the value trimmed; one without '=' or
 * with an empty name is skipped.
 */
ssize_t bottle_cookie_filter(unsigned char *out, size_t cap,
    const bottle_cookie_str_t *in, size_t n, bottle_cookie_keep_pt keep,
    void *data);


/* one Set-Cookie header */
typedef struct {
    bottle_cookie_str_t  name;          /* never empty */
    bottle_cookie_str_t  value;
    int                  has_max_age;   /* a valid Max-Age was given */
    long long            max_age;       /* <= 0: delete; capped */
    bottle_cookie_str_t  expires;       /* the raw Expires date, or len 0 */
} bottle_cookie_set_t;

/*
 * 0, or -1 when the header sets no cookie (no '=' in its first part, or an
 * empty name).  Of repeated attributes the last counts; a Max-Age that is
 * not an optional '-' and digits is ignored (RFC 6265 5.2.2); when a valid
 * Max-Age is present the caller ignores Expires (RFC 6265 5.3, step 3).
 */
int bottle_cookie_set_parse(bottle_cookie_set_t *out, const unsigned char *in,
    size_t len);


#endif /* BOTTLE_COOKIE_H */
