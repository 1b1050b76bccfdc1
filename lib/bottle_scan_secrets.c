/*
 * A bottle's literal databases (canary and egress tokens in every
 * encoding, docs/dlp.md "Encodings") and the free list of scan states
 * that belongs with them: a state's streams are opened against these
 * databases, so states are kept per bottle.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_scan_int.h"


#define WINDOW_LEN     14
#define WINDOW_STRIDE  (BOTTLE_SCAN_WINDOW - WINDOW_LEN + 1)


typedef struct {
    char               *data;
    size_t              len;
    unsigned            flags;
    bottle_scan_lit_t   lit;
} bottle_lit_build_t;

typedef struct {
    bottle_lit_build_t *a;
    size_t              n;
    size_t              cap;
    int                 failed;
} bottle_lit_list_t;


static void
lit_add(bottle_lit_list_t *l, const void *data, size_t len, unsigned flags,
    uint32_t secret, int canary)
{
    size_t               i;
    bottle_lit_build_t  *a;

    if (l->failed || len == 0) {
        return;
    }

    /* windows of a repetitive secret repeat themselves */
    for (i = l->n;
         i > 0 && i + 64 > l->n && l->a[i - 1].lit.secret == secret;
         i--)
    {
        if (l->a[i - 1].len == len && l->a[i - 1].flags == flags
            && memcmp(l->a[i - 1].data, data, len) == 0)
        {
            return;
        }
    }

    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        a = realloc(l->a, l->cap * sizeof(*a));
        if (a == NULL) {
            l->failed = 1;
            return;
        }
        l->a = a;
    }

    a = &l->a[l->n];
    a->data = malloc(len);
    if (a->data == NULL) {
        l->failed = 1;
        return;
    }
    memcpy(a->data, data, len);
    a->len = len;
    a->flags = flags;
    a->lit.len = (uint32_t) len;
    a->lit.secret = secret;
    a->lit.canary = (uint8_t) canary;
    l->n++;
}


static void
lit_list_free(bottle_lit_list_t *l)
{
    size_t  i;

    for (i = 0; i < l->n; i++) {
        free(l->a[i].data);
    }
    free(l->a);
}


static int
lit_is_alnum(unsigned c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}


/*
 * 1 if the skeleton view finds the text t whole, at the same raw span,
 * wherever the raw view would: its letters and digits are a skeleton
 * literal (alnum letters and digits, at least min and at most the
 * lookback), it starts and ends with one (the skeleton span runs from the
 * first kept byte to the last), and it has no '%' or '\\' that the
 * skeleton would decode.
 */
static int
lit_skel_covers(const unsigned char *t, size_t n, size_t min)
{
    size_t  i, m;

    if (n == 0 || !lit_is_alnum(t[0]) || !lit_is_alnum(t[n - 1])) {
        return 0;
    }

    for (i = 0, m = 0; i < n; i++) {
        if (t[i] == '%' || t[i] == '\\') {
            return 0;
        }
        m += lit_is_alnum(t[i]);
    }

    return m >= min && m <= BOTTLE_SCAN_LOOKBACK;
}


/*
 * The raw view's literals: exact encodings of the whole value, those the
 * skeleton doesn't find at the same span (most values are letters and
 * digits at both ends: then none).  The skeleton decodes %XX, %25XX and
 * \u00XX and drops separators, so it finds the value, its hex and its
 * base64 in every raw form below, and more.
 */
static void
lit_raw_forms(bottle_lit_list_t *l, const unsigned char *v, size_t n,
    uint32_t id, int canary, char *tmp, int b64)
{
    static const char  hex[] = "0123456789ABCDEF";
    size_t             i, k, m, m2, min;
    int                ascii, skel;

    /* the skeleton has literals for this value (lit_skel_forms()) */
    min = canary ? 4 : BOTTLE_SCAN_SECRET_MIN;
    for (i = 0, m = 0; i < n; i++) {
        m += lit_is_alnum(v[i]);
    }
    skel = m >= min && m <= BOTTLE_SCAN_LOOKBACK;

    for (k = 0; b64 && k < 3; k++) {
        m = bottle_scan_b64_aligned(tmp, v, n, (unsigned) k, 0);
        if (m >= BOTTLE_SCAN_SECRET_MIN
            && !(skel && lit_skel_covers((unsigned char *) tmp, m,
                                         BOTTLE_SCAN_SECRET_MIN)))
        {
            lit_add(l, tmp, m, 0, id, canary);
        }
        m2 = bottle_scan_b64_aligned(tmp + m, v, n, (unsigned) k, 1);
        if (m2 >= BOTTLE_SCAN_SECRET_MIN
            && (m2 != m || memcmp(tmp, tmp + m, m) != 0)
            && !(skel && lit_skel_covers((unsigned char *) tmp + m, m2,
                                         BOTTLE_SCAN_SECRET_MIN)))
        {
            lit_add(l, tmp + m, m2, 0, id, canary);
        }
    }

    if (skel && lit_skel_covers(v, n, min) && 2 * n <= BOTTLE_SCAN_LOOKBACK) {
        /* the value, its hex, %XX, %25XX and \u00XX: the skeleton's */
        return;
    }

    /* any case: a hostname is lowercased on the way, and so can anything */
    lit_add(l, v, n, HS_FLAG_CASELESS, id, canary);

    /* hex in either case, %XX once and twice, \u00XX: caseless */
    for (i = 0; i < n; i++) {
        tmp[2 * i] = hex[v[i] >> 4];
        tmp[2 * i + 1] = hex[v[i] & 15];
    }
    lit_add(l, tmp, 2 * n, HS_FLAG_CASELESS, id, canary);

    for (i = 0; i < n; i++) {
        tmp[3 * i] = '%';
        tmp[3 * i + 1] = hex[v[i] >> 4];
        tmp[3 * i + 2] = hex[v[i] & 15];
    }
    lit_add(l, tmp, 3 * n, HS_FLAG_CASELESS, id, canary);

    for (i = 0; i < n; i++) {
        memcpy(tmp + 5 * i, "%25", 3);
        tmp[5 * i + 3] = hex[v[i] >> 4];
        tmp[5 * i + 4] = hex[v[i] & 15];
    }
    lit_add(l, tmp, 5 * n, HS_FLAG_CASELESS, id, canary);

    ascii = 1;
    for (i = 0; i < n; i++) {
        ascii &= v[i] < 0x80;
        memcpy(tmp + 6 * i, "\\u00", 4);
        tmp[6 * i + 4] = hex[v[i] >> 4];
        tmp[6 * i + 5] = hex[v[i] & 15];
    }
    if (ascii) {
        lit_add(l, tmp, 6 * n, HS_FLAG_CASELESS, id, canary);
    }
}


/* the skeleton view's literals: letters and digits of the value, and
 * (all set) of its base64 and hex, and every window of BOTTLE_SCAN_WINDOW
 * of the value's */
static void
lit_skel_forms(bottle_lit_list_t *l, const unsigned char *v, size_t n,
    uint32_t id, int canary, char *tmp, unsigned char *sk, int all)
{
    static const char  hex[] = "0123456789abcdef";
    size_t             i, k, m, min;

    min = canary ? 4 : BOTTLE_SCAN_SECRET_MIN;

    m = bottle_scan_alnum(sk, v, n);
    if (m < min || m > BOTTLE_SCAN_LOOKBACK) {
        return;
    }

    lit_add(l, sk, m, HS_FLAG_CASELESS, id, canary);

    /* windows of W at stride S: any W + S - 1 = BOTTLE_SCAN_WINDOW
     * consecutive characters hold one; the last one ends the secret */
    if (!all) {
        return;
    }

    if (m > BOTTLE_SCAN_WINDOW) {
        for (i = 0; i + WINDOW_LEN <= m; i += WINDOW_STRIDE) {
            lit_add(l, sk + i, WINDOW_LEN, HS_FLAG_CASELESS, id, canary);
        }
        lit_add(l, sk + m - WINDOW_LEN, WINDOW_LEN, HS_FLAG_CASELESS, id,
                canary);
    }

    for (k = 0; k < 3; k++) {
        i = bottle_scan_b64_aligned(tmp, v, n, (unsigned) k, 0);
        i = bottle_scan_alnum((unsigned char *) tmp, (unsigned char *) tmp, i);
        if (i >= BOTTLE_SCAN_SECRET_MIN && i <= BOTTLE_SCAN_LOOKBACK) {
            lit_add(l, tmp, i, 0, id, canary);
        }
    }

    if (2 * n <= BOTTLE_SCAN_LOOKBACK) {
        for (i = 0; i < n; i++) {
            tmp[2 * i] = hex[v[i] >> 4];
            tmp[2 * i + 1] = hex[v[i] & 15];
        }
        lit_add(l, tmp, 2 * n, HS_FLAG_CASELESS, id, canary);
    }
}


static int
lit_compile(hs_database_t **out, bottle_scan_lit_t **lits, size_t *nlits,
    bottle_lit_list_t *l, char *err, size_t errlen)
{
    int                  rc;
    size_t               i;
    unsigned            *flags, *ids;
    size_t              *lens;
    const char         **exprs;
    hs_platform_info_t   plat;
    hs_compile_error_t  *ce;

    *out = NULL;
    *lits = NULL;
    *nlits = 0;

    if (l->n == 0) {
        return 0;
    }

    exprs = malloc(l->n * sizeof(*exprs));
    flags = malloc(l->n * sizeof(*flags));
    ids = malloc(l->n * sizeof(*ids));
    lens = malloc(l->n * sizeof(*lens));
    *lits = malloc(l->n * sizeof(**lits));
    rc = -1;

    if (exprs == NULL || flags == NULL || ids == NULL || lens == NULL
        || *lits == NULL)
    {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    for (i = 0; i < l->n; i++) {
        exprs[i] = l->a[i].data;
        lens[i] = l->a[i].len;
        flags[i] = l->a[i].flags;
        ids[i] = (unsigned) i;
        (*lits)[i] = l->a[i].lit;
    }

    /*
     * For no particular CPU: with AVX2 and AVX-512, vectorscan's literal
     * matchers ran 2 to 4 times slower on some sets of secrets than on
     * others (4 or 6 of them, measured on letters and digits), the generic
     * ones at an even pace; docs/dlp.md, "Engine".
     */
    if (hs_populate_platform(&plat) != HS_SUCCESS) {
        snprintf(err, errlen, "cannot read the platform");
        goto cleanup;
    }
    plat.cpu_features = 0;

    if (hs_compile_lit_multi(exprs, flags, ids, lens, (unsigned) l->n,
                             HS_MODE_STREAM, &plat, out, &ce)
        != HS_SUCCESS)
    {
        /* the message names no literal, only what went wrong */
        snprintf(err, errlen, "cannot compile the secrets database: %s",
                 ce->message);
        hs_free_compile_error(ce);
        *out = NULL;
        goto cleanup;
    }

    *nlits = l->n;
    rc = 0;

cleanup:

    free(exprs);
    free(flags);
    free(ids);
    free(lens);
    if (rc != 0) {
        free(*lits);
        *lits = NULL;
    }
    return rc;
}


static void
secrets_destroy(bottle_scan_secrets_t *sec)
{
    size_t          i;
    bottle_scan_t  *s;

    while ((s = sec->free) != NULL) {
        sec->free = s->next;
        bottle_scan_state_free(s);
    }

    hs_free_database(sec->raw);
    hs_free_database(sec->skel);
    hs_free_scratch(sec->proto);
    free(sec->raw_lits);
    free(sec->skel_lits);
    for (i = 0; i < sec->nnames; i++) {
        free(sec->names[i]);
    }
    free(sec->names);
    pthread_mutex_destroy(&sec->lock);
    free(sec);
}


/*
 * The literals of the canary, then of the egress tokens, then of the held
 * secrets (git-gate's only): the same encodings for all, rule names
 * "canary", "egress_token:NAME", "held_secret:NAME".
 */
static int
secrets_literals(bottle_scan_secrets_t *sec, const bottle_str_t *canary,
    const bottle_secret_t *tokens, size_t ntokens,
    const bottle_secret_t *held, size_t nheld, char *err, size_t errlen)
{
    int                     rc;
    size_t                  i, k, n, max, len, total;
    char                   *tmp;
    const char             *prefix;
    unsigned char          *sk, *rev;
    const unsigned char    *v;
    const bottle_secret_t  *t;
    bottle_lit_list_t       raw, skel;

    memset(&raw, 0, sizeof(raw));
    memset(&skel, 0, sizeof(skel));

    total = ntokens + nheld;

    max = canary ? canary->len : 0;
    for (i = 0; i < ntokens; i++) {
        max = tokens[i].value.len > max ? tokens[i].value.len : max;
    }
    for (i = 0; i < nheld; i++) {
        max = held[i].value.len > max ? held[i].value.len : max;
    }

    tmp = malloc(6 * max + 16);
    sk = malloc(max + 16);
    rev = malloc(max + 16);
    sec->names = calloc(total + 1, sizeof(char *));
    rc = -1;

    if (tmp == NULL || sk == NULL || rev == NULL || sec->names == NULL) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    for (i = 0; i <= total; i++) {
        if (i == 0) {
            if (canary == NULL || canary->len == 0) {
                continue;
            }
            v = (const unsigned char *) canary->data;
            n = canary->len;
            sec->names[sec->nnames] = strdup("canary");
            sec->has_canary = 1;

        } else {
            if (i <= ntokens) {
                t = &tokens[i - 1];
                prefix = "egress_token";
            } else {
                t = &held[i - 1 - ntokens];
                prefix = "held_secret";
            }
            v = (const unsigned char *) t->value.data;
            n = t->value.len;
            if (n < BOTTLE_SCAN_SECRET_MIN) {
                continue;
            }
            len = strlen(prefix) + 2 + t->name.len;
            sec->names[sec->nnames] = malloc(len);
            if (sec->names[sec->nnames]) {
                snprintf(sec->names[sec->nnames], len, "%s:%.*s", prefix,
                         (int) t->name.len, t->name.data);
            }
        }

        if (sec->names[sec->nnames] == NULL) {
            snprintf(err, errlen, "out of memory");
            goto cleanup;
        }

        lit_raw_forms(&raw, v, n, (uint32_t) sec->nnames, i == 0, tmp, 1);
        lit_skel_forms(&skel, v, n, (uint32_t) sec->nnames, i == 0, tmp, sk,
                       1);

        /*
         * Written backwards: the value whole, in every form the skeleton
         * decodes (any case, separators, %XX, \u00XX, HTML references,
         * JSON escaped twice); not its base64 and hex, nor the windows of
         * split forms: one literal more per value instead of doubling the
         * skeleton's literals, whose scan is most of the cost of 20
         * secrets
         */
        for (k = 0; k < n; k++) {
            rev[k] = v[n - 1 - k];
        }
        if (n > 1 && memcmp(rev, v, n) != 0) {
            lit_raw_forms(&raw, rev, n, (uint32_t) sec->nnames, i == 0, tmp,
                          0);
            lit_skel_forms(&skel, rev, n, (uint32_t) sec->nnames, i == 0,
                           tmp, sk, 0);
        }

        sec->nnames++;
    }

    if (raw.failed || skel.failed) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    for (i = 0; i < skel.n; i++) {
        if (skel.a[i].len > sec->skel_max) {
            sec->skel_max = skel.a[i].len;
        }
    }

    for (i = 0; i < raw.n; i++) {
        if (i == 0 || raw.a[i].len < sec->raw_min) {
            sec->raw_min = raw.a[i].len;
        }
    }

    if (lit_compile(&sec->raw, &sec->raw_lits, &sec->nraw, &raw, err,
                    errlen) != 0
        || lit_compile(&sec->skel, &sec->skel_lits, &sec->nskel, &skel, err,
                       errlen) != 0)
    {
        goto cleanup;
    }

    rc = 0;

cleanup:

    lit_list_free(&raw);
    lit_list_free(&skel);
    free(tmp);
    free(sk);
    free(rev);
    return rc;
}


int
bottle_scan_secrets_create(bottle_scan_secrets_t **out,
    const bottle_scan_db_t *db, const bottle_str_t *canary,
    const bottle_secret_t *tokens, size_t ntokens, char *err, size_t errlen)
{
    return bottle_scan_secrets_create_held(out, db, canary, tokens, ntokens,
                                           NULL, 0, err, errlen);
}


int
bottle_scan_secrets_create_held(bottle_scan_secrets_t **out,
    const bottle_scan_db_t *db, const bottle_str_t *canary,
    const bottle_secret_t *tokens, size_t ntokens,
    const bottle_secret_t *held, size_t nheld, char *err, size_t errlen)
{
    bottle_scan_secrets_t  *sec;

    *out = NULL;

    sec = calloc(1, sizeof(*sec));
    if (sec == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    sec->db = db;
    pthread_mutex_init(&sec->lock, NULL);

    if (secrets_literals(sec, canary, tokens, ntokens, held, nheld, err,
                         errlen)
        != 0)
    {
        goto failed;
    }

    if (hs_clone_scratch(db->proto, &sec->proto) != HS_SUCCESS
        || (sec->raw && hs_alloc_scratch(sec->raw, &sec->proto)
                        != HS_SUCCESS)
        || (sec->skel && hs_alloc_scratch(sec->skel, &sec->proto)
                         != HS_SUCCESS))
    {
        snprintf(err, errlen, "cannot allocate scratch space");
        goto failed;
    }

    *out = sec;
    return 0;

failed:

    secrets_destroy(sec);
    return -1;
}


int
bottle_scan_secrets_from_bottle(bottle_scan_secrets_t **out,
    const bottle_scan_db_t *db, const bottle_t *b, char *err, size_t errlen)
{
    return bottle_scan_secrets_create(out, db, &b->canary, b->egress_tokens,
                                      b->negress_tokens, err, errlen);
}


int
bottle_scan_secrets_for_git(bottle_scan_secrets_t **out,
    const bottle_scan_db_t *db, const bottle_t *b, char *err, size_t errlen)
{
    return bottle_scan_secrets_create_held(out, db, &b->canary,
                                           b->egress_tokens,
                                           b->negress_tokens, b->held_secrets,
                                           b->nheld_secrets, err, errlen);
}


void
bottle_scan_secrets_stats(const bottle_scan_secrets_t *sec, size_t *nraw,
    size_t *nskeleton)
{
    *nraw = sec->nraw;
    *nskeleton = sec->nskel;
}


int
bottle_scan_secrets_reserve(bottle_scan_secrets_t *sec, size_t n)
{
    bottle_scan_t  *s;

    pthread_mutex_lock(&sec->lock);

    while (sec->nfree + sec->nout < n) {
        pthread_mutex_unlock(&sec->lock);
        s = bottle_scan_state_new(sec);
        if (s == NULL) {
            return -1;
        }
        pthread_mutex_lock(&sec->lock);
        s->next = sec->free;
        sec->free = s;
        sec->nfree++;
    }

    pthread_mutex_unlock(&sec->lock);
    return 0;
}


void
bottle_scan_secrets_free(bottle_scan_secrets_t *sec)
{
    int  now;

    if (sec == NULL) {
        return;
    }

    pthread_mutex_lock(&sec->lock);
    sec->dead = 1;
    now = sec->nout == 0;
    pthread_mutex_unlock(&sec->lock);

    if (now) {
        secrets_destroy(sec);
    }
}


int
bottle_scan_acquire(bottle_scan_t **out, bottle_scan_secrets_t *sec,
    unsigned detectors)
{
    bottle_scan_t  *s;

    pthread_mutex_lock(&sec->lock);
    s = sec->free;
    if (s) {
        sec->free = s->next;
        sec->nfree--;
    }
    sec->nout++;
    pthread_mutex_unlock(&sec->lock);

    if (s == NULL) {
        s = bottle_scan_state_new(sec);
        if (s == NULL) {
            pthread_mutex_lock(&sec->lock);
            sec->nout--;
            pthread_mutex_unlock(&sec->lock);
            *out = NULL;
            return -1;
        }
    }

    bottle_scan_reset(s, detectors);
    *out = s;
    return 0;
}


void
bottle_scan_release(bottle_scan_t *s)
{
    int                     last;
    bottle_scan_secrets_t  *sec;

    if (s == NULL) {
        return;
    }

    sec = s->sec;

    pthread_mutex_lock(&sec->lock);
    s->next = sec->free;
    sec->free = s;
    sec->nfree++;
    sec->nout--;
    last = sec->dead && sec->nout == 0;
    pthread_mutex_unlock(&sec->lock);

    if (last) {
        secrets_destroy(sec);
    }
}
