/*
 * Generic secret assignments (bottle_generic.h).  The keywords are found
 * by vectorscan (literals, any case: gigabytes a second); at each one a
 * PCRE2 pattern anchored there reads the name's rest, the operator and
 * the value, and the value is then checked for what a pattern cannot
 * express.  (The pattern alone, unanchored, ran at under 100 MB/s on
 * source code: its first characters are among the commonest letters.)
 */

#define PCRE2_CODE_UNIT_WIDTH  8

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hs/hs.h>
#include <pcre2.h>

#include "bottle_generic.h"
#include "bottle_util.h"


struct bottle_generic_s {
    hs_database_t          *kw;
    hs_scratch_t           *scratch;
    pcre2_code             *re;
    pcre2_match_data       *md;
    pcre2_match_context    *mctx;
    int                     jit;
};


/* one scan's state, for the keyword callback */
typedef struct {
    bottle_generic_t       *g;
    const char             *data;
    size_t                  len;
    size_t                  done;       /* the end of the last value */
    bottle_generic_cb       cb;
    void                   *arg;
    int                     found;
    int                     error;
    int                     stop;
} bottle_generic_scan_t;


static const char *const  bottle_generic_keywords[] = {
    "access", "auth", "api", "credential", "creds", "key", "passwd",
    "password", "pwd", "secret", "token", NULL
};


/*
 * At a keyword: up to 20 more name characters (API_KEY_ID), optional quotes,
 * an operator (= : := ::= => ?= || , >), optional quotes and spaces, the
 * value (group 1), then a quote, space, ';', a "\n" escape or the end of
 * the line.
 */
static const char  bottle_generic_pattern[] =
    "[A-Za-z]{3,10}[\\w.-]{0,20}['\"]?[ \\t]{0,3}"
    "(?:=|:{1,3}=|\\?=|=>|\\|\\||:|,|>)[ \\t]{0,3}[`'\"]?[ \\t]{0,2}"
    "([\\w.=+/-]{10,150})"
    "(?=[`'\"\\s;,)]|\\\\[nrt]|$)";

/* values that are not secrets but names of one */
static const char *const  bottle_generic_stop[] = {
    "example", "placeholder", "changeme", "change_me", "your_", "yourkey",
    "dummy", "sample", "redacted", "xxxxxx", "******", "000000", "123456",
    "abcdef", "fake", "insert", "replace", "todo", "secret_here",
    "token_here", "key_here", NULL
};


static int bottle_generic_keyword(unsigned id, unsigned long long from,
    unsigned long long to, unsigned flags, void *ctx);
static int bottle_generic_value(const char *v, size_t len);


int
bottle_generic_create(bottle_generic_t **out, char *err, size_t errlen)
{
    int                errcode;
    PCRE2_SIZE         erroff;
    bottle_generic_t  *g;
    PCRE2_UCHAR        msg[128];

    unsigned             n, ids[16], flags[16];
    hs_compile_error_t  *ce;

    *out = NULL;

    g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    for (n = 0; bottle_generic_keywords[n]; n++) {
        ids[n] = n;
        flags[n] = HS_FLAG_CASELESS;
    }

    if (hs_compile_multi(bottle_generic_keywords, flags, ids, n,
                         HS_MODE_BLOCK, NULL, &g->kw, &ce) != HS_SUCCESS)
    {
        bottle_errf(err, errlen, "cannot compile the generic assignment "
                    "keywords: %s", ce->message);
        hs_free_compile_error(ce);
        bottle_generic_free(g);
        return -1;
    }

    if (hs_alloc_scratch(g->kw, &g->scratch) != HS_SUCCESS) {
        bottle_generic_free(g);
        return bottle_errf(err, errlen, "out of memory");
    }


    g->re = pcre2_compile((PCRE2_SPTR) bottle_generic_pattern,
                          PCRE2_ZERO_TERMINATED,
                          PCRE2_ANCHORED | PCRE2_MULTILINE, &errcode,
                          &erroff, NULL);
    if (g->re == NULL) {
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        bottle_generic_free(g);
        return bottle_errf(err, errlen, "cannot compile the generic "
                           "assignment pattern: %s", (char *) msg);
    }

    g->jit = pcre2_jit_compile(g->re, PCRE2_JIT_COMPLETE) == 0;

    g->md = pcre2_match_data_create_from_pattern(g->re, NULL);
    g->mctx = pcre2_match_context_create(NULL);

    if (g->md == NULL || g->mctx == NULL) {
        bottle_generic_free(g);
        return bottle_errf(err, errlen, "out of memory");
    }

    /* the pattern is linear; a bound all the same, so a limit is an error
     * and never a silent miss */
    pcre2_set_match_limit(g->mctx, 10000000);

    *out = g;

    return 0;
}


void
bottle_generic_free(bottle_generic_t *g)
{
    if (g == NULL) {
        return;
    }

    pcre2_match_context_free(g->mctx);
    pcre2_match_data_free(g->md);
    pcre2_code_free(g->re);
    hs_free_scratch(g->scratch);
    hs_free_database(g->kw);
    free(g);
}


int
bottle_generic_scan(bottle_generic_t *g, const char *data, size_t len,
    bottle_generic_cb cb, void *arg)
{
    hs_error_t             rc;
    bottle_generic_scan_t  st;

    if (len == 0) {
        return 0;
    }

    if (len > 0xffffffffu) {
        /* vectorscan's block mode takes an unsigned int length */
        return -1;
    }

    st.g = g;
    st.data = data;
    st.len = len;
    st.done = 0;
    st.cb = cb;
    st.arg = arg;
    st.found = 0;
    st.error = 0;
    st.stop = 0;

    rc = hs_scan(g->kw, data, (unsigned) len, 0, g->scratch,
                 bottle_generic_keyword, &st);

    if (st.error || (rc != HS_SUCCESS && rc != HS_SCAN_TERMINATED)) {
        return -1;
    }

    return st.found;
}


/*
 * A keyword ends at "to": the pattern, anchored at its first byte.  One
 * value is reported once: "API_KEY=v" has two keywords before it.
 */

static int
bottle_generic_keyword(unsigned id, unsigned long long from,
    unsigned long long to, unsigned flags, void *ctx)
{
    int                     rc;
    size_t                  start;
    PCRE2_SIZE             *ov;
    bottle_generic_t       *g;
    bottle_generic_scan_t  *st = ctx;

    (void) from;
    (void) flags;

    g = st->g;
    start = (size_t) to - strlen(bottle_generic_keywords[id]);

    if (start < st->done) {
        return 0;
    }

    if (g->jit) {
        /* anchored: compiled so, as the JIT takes no such option here */
        rc = pcre2_jit_match(g->re, (PCRE2_SPTR) st->data, st->len, start,
                             0, g->md, g->mctx);
    } else {
        rc = pcre2_match(g->re, (PCRE2_SPTR) st->data, st->len, start, 0,
                         g->md, g->mctx);
    }

    if (rc == PCRE2_ERROR_NOMATCH) {
        return 0;
    }

    if (rc < 0) {
        st->error = 1;
        return 1;
    }

    ov = pcre2_get_ovector_pointer(g->md);

    if (ov[2] < st->done
        || !bottle_generic_value(st->data + ov[2], ov[3] - ov[2]))
    {
        return 0;
    }

    st->found++;
    st->done = ov[3];

    if (st->cb(st->arg, ov[2], ov[3]) != 0) {
        return 1;
    }

    return 0;
}


double
bottle_generic_entropy(const char *s, size_t len)
{
    size_t  i, count[256];
    double  h, p;

    if (len == 0) {
        return 0.0;
    }

    memset(count, 0, sizeof(count));

    for (i = 0; i < len; i++) {
        count[(unsigned char) s[i]]++;
    }

    h = 0.0;

    for (i = 0; i < 256; i++) {
        if (count[i]) {
            p = (double) count[i] / (double) len;
            h -= p * log2(p);
        }
    }

    return h;
}


/* 1 if a value of the right shape looks like a secret */

static int
bottle_generic_value(const char *v, size_t len)
{
    size_t       i, k, n;
    int          digit, alpha;
    const char  *w;

    digit = 0;
    alpha = 0;

    for (i = 0; i < len; i++) {
        if (v[i] >= '0' && v[i] <= '9') {
            digit = 1;

        } else if ((v[i] | 0x20) >= 'a' && (v[i] | 0x20) <= 'z') {
            alpha = 1;
        }
    }

    /* a name (get_token_value), a number or a version is not a secret */
    if (!digit || !alpha) {
        return 0;
    }

    if (bottle_generic_entropy(v, len) < BOTTLE_GENERIC_ENTROPY) {
        return 0;
    }

    for (k = 0; bottle_generic_stop[k]; k++) {
        w = bottle_generic_stop[k];
        n = strlen(w);

        for (i = 0; i + n <= len; i++) {
            if (strncasecmp(v + i, w, n) == 0) {
                return 0;
            }
        }
    }

    return 1;
}
