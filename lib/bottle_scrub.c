/*
 * Held secrets scrubbed from a stream: one vectorscan literal database of
 * the values in every form (the same base64 alignment helper as the
 * outbound scanner's literals), a streaming scan, and a carry-over of the
 * last window bytes so a value split across chunks is found whole.  See
 * bottle_scrub.h.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_scrub.h"
#include "bottle_scan_int.h"


typedef struct {
    uint32_t            len;
    uint16_t            value;
    uint16_t            form;
} bottle_scrub_lit_t;

typedef struct {
    uint64_t            from;
    uint64_t            to;
    uint16_t            value;
    uint16_t            form;
} bottle_scrub_hit_t;

typedef struct {
    char               *data;
    size_t              len;
    unsigned            flags;
    bottle_scrub_lit_t  lit;
} bottle_scrub_build_t;


struct bottle_scrub_db_s {
    hs_database_t          *hs;
    hs_scratch_t           *proto;
    bottle_scrub_lit_t     *lits;
    size_t                  nlits;
    size_t                  nvalues;
    char                   *names[BOTTLE_SCRUB_VALUES];
    char                   *kinds[BOTTLE_SCRUB_VALUES];
    char                   *marks[BOTTLE_SCRUB_VALUES];     /* [held:NAME] */
    size_t                  mlen[BOTTLE_SCRUB_VALUES];
    size_t                  window;
    uint8_t                 cs[256];    /* bytes some literal has */
};


struct bottle_scrub_s {
    const bottle_scrub_db_t    *db;
    hs_stream_t                *st;
    hs_scratch_t               *scratch;
    bottle_scrub_sink_pt        sink;
    void                       *arg;

    uint64_t                    seen;       /* stream bytes fed */
    uint64_t                    emitted;    /* stream bytes sent on (or
                                               replaced) */
    unsigned char              *carry;      /* [emitted, seen) */
    size_t                      clen;

    bottle_scrub_hit_t         *hits;       /* found, not yet sent on */
    size_t                      nhits;
    size_t                      hcap;
    int                         failed;

    unsigned                    found[BOTTLE_SCRUB_VALUES];
};


static const char *const  bottle_scrub_forms[] = {
    "plain", "base64", "base64url", "hex", "pct", "url"
};


const char *
bottle_scrub_form_name(unsigned form)
{
    unsigned  i;

    for (i = 0; i < sizeof(bottle_scrub_forms) / sizeof(char *); i++) {
        if (form == (1u << i)) {
            return bottle_scrub_forms[i];
        }
    }

    return "unknown";
}


static int
scrub_add(bottle_scrub_build_t **a, size_t *n, size_t *cap, const char *data,
    size_t len, unsigned flags, size_t value, unsigned form)
{
    bottle_scrub_build_t  *na;

    if (len < BOTTLE_SCRUB_MIN) {
        return 0;
    }

    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 32;
        na = realloc(*a, *cap * sizeof(**a));
        if (na == NULL) {
            return -1;
        }
        *a = na;
    }

    na = &(*a)[*n];
    na->data = malloc(len);
    if (na->data == NULL) {
        return -1;
    }

    memcpy(na->data, data, len);
    na->len = len;
    na->flags = flags;
    na->lit.len = (uint32_t) len;
    na->lit.value = (uint16_t) value;
    na->lit.form = (uint16_t) form;
    (*n)++;

    return 0;
}


static int
scrub_unreserved(unsigned c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
           || c == '-' || c == '.' || c == '_' || c == '~';
}


/* every form of one value: plain, base64 (3 alignments, both alphabets),
 * hex, %XX of every byte, URL-encoded when that differs from plain */

static int
scrub_forms(bottle_scrub_build_t **a, size_t *n, size_t *cap,
    const unsigned char *v, size_t len, size_t value, char *tmp)
{
    static const char  hex[] = "0123456789ABCDEF";
    size_t             i, k, m, m2, o;
    int                differs;

    if (scrub_add(a, n, cap, (const char *) v, len, 0, value,
                  BOTTLE_SCRUB_F_PLAIN) != 0)
    {
        return -1;
    }

    for (k = 0; k < 3; k++) {
        m = bottle_scan_b64_aligned(tmp, v, len, (unsigned) k, 0);
        if (scrub_add(a, n, cap, tmp, m, 0, value, BOTTLE_SCRUB_F_BASE64)
            != 0)
        {
            return -1;
        }

        m2 = bottle_scan_b64_aligned(tmp + m, v, len, (unsigned) k, 1);
        if ((m2 != m || memcmp(tmp, tmp + m, m) != 0)
            && scrub_add(a, n, cap, tmp + m, m2, 0, value,
                         BOTTLE_SCRUB_F_BASE64URL) != 0)
        {
            return -1;
        }
    }

    for (i = 0; i < len; i++) {
        tmp[2 * i] = hex[v[i] >> 4];
        tmp[2 * i + 1] = hex[v[i] & 15];
    }

    if (scrub_add(a, n, cap, tmp, 2 * len, HS_FLAG_CASELESS, value,
                  BOTTLE_SCRUB_F_HEX) != 0)
    {
        return -1;
    }

    for (i = 0; i < len; i++) {
        tmp[3 * i] = '%';
        tmp[3 * i + 1] = hex[v[i] >> 4];
        tmp[3 * i + 2] = hex[v[i] & 15];
    }

    if (scrub_add(a, n, cap, tmp, 3 * len, HS_FLAG_CASELESS, value,
                  BOTTLE_SCRUB_F_PCT) != 0)
    {
        return -1;
    }

    differs = 0;

    for (i = 0, o = 0; i < len; i++) {
        if (scrub_unreserved(v[i])) {
            tmp[o++] = (char) v[i];
            continue;
        }

        differs = 1;
        tmp[o++] = '%';
        tmp[o++] = hex[v[i] >> 4];
        tmp[o++] = hex[v[i] & 15];
    }

    if (differs
        && scrub_add(a, n, cap, tmp, o, HS_FLAG_CASELESS, value,
                        BOTTLE_SCRUB_F_URL) != 0)
    {
        return -1;
    }

    return 0;
}


int
bottle_scrub_db_create(bottle_scrub_db_t **out, const bottle_scrub_value_t *v,
    size_t n, char *err, size_t errlen)
{
    int                    rc;
    char                  *tmp;
    unsigned               c;
    size_t                 i, j, na, cap, len;
    unsigned              *flags, *ids;
    size_t                *lens;
    const char           **exprs;
    bottle_scrub_db_t     *db;
    bottle_scrub_build_t  *a;
    hs_platform_info_t     plat;
    hs_compile_error_t    *ce;

    *out = NULL;
    a = NULL;
    na = 0;
    cap = 0;
    exprs = NULL;
    flags = NULL;
    ids = NULL;
    lens = NULL;
    rc = -1;

    db = calloc(1, sizeof(bottle_scrub_db_t));
    tmp = malloc(3 * BOTTLE_SCRUB_MAX + 16);

    if (db == NULL || tmp == NULL) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    for (i = 0; i < n; i++) {
        if (v[i].len < BOTTLE_SCRUB_MIN) {
            continue;
        }

        if (v[i].len > BOTTLE_SCRUB_MAX) {
            snprintf(err, errlen, "held value \"%s\" is longer than %d bytes",
                     v[i].name, BOTTLE_SCRUB_MAX);
            goto cleanup;
        }

        for (j = 0; j < i; j++) {
            if (v[j].len == v[i].len
                && memcmp(v[j].value, v[i].value, v[i].len) == 0)
            {
                break;
            }
        }

        if (j < i) {
            continue;
        }

        if (db->nvalues == BOTTLE_SCRUB_VALUES) {
            snprintf(err, errlen, "more than %d held values",
                     BOTTLE_SCRUB_VALUES);
            goto cleanup;
        }

        len = strlen(v[i].name);
        db->names[db->nvalues] = strdup(v[i].name);
        db->kinds[db->nvalues] = strdup(v[i].kind);
        db->marks[db->nvalues] = malloc(len + sizeof("[held:]"));

        if (db->names[db->nvalues] == NULL || db->kinds[db->nvalues] == NULL
            || db->marks[db->nvalues] == NULL)
        {
            db->nvalues++;
            snprintf(err, errlen, "out of memory");
            goto cleanup;
        }

        db->mlen[db->nvalues] = (size_t) snprintf(db->marks[db->nvalues],
                                                  len + sizeof("[held:]"),
                                                  "[held:%s]", v[i].name);

        if (scrub_forms(&a, &na, &cap, v[i].value, v[i].len, db->nvalues,
                        tmp) != 0)
        {
            db->nvalues++;
            snprintf(err, errlen, "out of memory");
            goto cleanup;
        }

        db->nvalues++;
    }

    if (na == 0) {
        rc = 0;
        goto cleanup;
    }

    exprs = malloc(na * sizeof(*exprs));
    flags = malloc(na * sizeof(*flags));
    ids = malloc(na * sizeof(*ids));
    lens = malloc(na * sizeof(*lens));
    db->lits = malloc(na * sizeof(bottle_scrub_lit_t));

    if (exprs == NULL || flags == NULL || ids == NULL || lens == NULL
        || db->lits == NULL)
    {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    for (i = 0; i < na; i++) {
        exprs[i] = a[i].data;
        lens[i] = a[i].len;
        flags[i] = a[i].flags;
        ids[i] = (unsigned) i;
        db->lits[i] = a[i].lit;

        for (j = 0; j < a[i].len; j++) {
            c = (unsigned char) a[i].data[j];
            db->cs[c] = 1;
            if (a[i].flags & HS_FLAG_CASELESS) {
                db->cs[(c >= 'a' && c <= 'z') ? c - 32
                       : (c >= 'A' && c <= 'Z') ? c + 32 : c] = 1;
            }
        }

        if (a[i].len - 1 > db->window) {
            db->window = a[i].len - 1;
        }
    }

    db->nlits = na;

    /* generic matchers, as the outbound scanner's literals (docs/dlp.md,
     * "Engine") */
    if (hs_populate_platform(&plat) != HS_SUCCESS) {
        snprintf(err, errlen, "cannot read the platform");
        goto cleanup;
    }
    plat.cpu_features = 0;

    if (hs_compile_lit_multi(exprs, flags, ids, lens, (unsigned) na,
                             HS_MODE_STREAM, &plat, &db->hs, &ce)
        != HS_SUCCESS)
    {
        snprintf(err, errlen, "cannot compile the held values: %s",
                 ce->message);
        hs_free_compile_error(ce);
        db->hs = NULL;
        goto cleanup;
    }

    if (hs_alloc_scratch(db->hs, &db->proto) != HS_SUCCESS) {
        snprintf(err, errlen, "cannot allocate scratch");
        goto cleanup;
    }

    *out = db;
    db = NULL;
    rc = 0;

cleanup:

    for (i = 0; i < na; i++) {
        free(a[i].data);
    }

    free(a);
    free(exprs);
    free(flags);
    free(ids);
    free(lens);
    free(tmp);
    bottle_scrub_db_free(db);

    return rc;
}


void
bottle_scrub_db_free(bottle_scrub_db_t *db)
{
    size_t  i;

    if (db == NULL) {
        return;
    }

    for (i = 0; i < db->nvalues; i++) {
        free(db->names[i]);
        free(db->kinds[i]);
        free(db->marks[i]);
    }

    hs_free_scratch(db->proto);
    hs_free_database(db->hs);
    free(db->lits);
    free(db);
}


size_t
bottle_scrub_window(const bottle_scrub_db_t *db)
{
    return db->window;
}


size_t
bottle_scrub_count(const bottle_scrub_db_t *db)
{
    return db->nvalues;
}


const char *
bottle_scrub_name(const bottle_scrub_db_t *db, size_t i)
{
    return db->names[i];
}


const char *
bottle_scrub_kind(const bottle_scrub_db_t *db, size_t i)
{
    return db->kinds[i];
}


int
bottle_scrub_create(bottle_scrub_t **out, const bottle_scrub_db_t *db,
    bottle_scrub_sink_pt sink, void *arg)
{
    bottle_scrub_t  *s;

    *out = NULL;

    s = calloc(1, sizeof(bottle_scrub_t));
    if (s == NULL) {
        return BOTTLE_SCRUB_ERROR;
    }

    s->db = db;
    s->sink = sink;
    s->arg = arg;
    s->carry = malloc(db->window + 1);

    if (s->carry == NULL
        || hs_clone_scratch(db->proto, &s->scratch) != HS_SUCCESS)
    {
        bottle_scrub_destroy(s);
        return BOTTLE_SCRUB_ERROR;
    }

    *out = s;

    return BOTTLE_SCRUB_OK;
}


void
bottle_scrub_sink(bottle_scrub_t *s, bottle_scrub_sink_pt sink, void *arg)
{
    s->sink = sink;
    s->arg = arg;
}


static int
scrub_on_match(unsigned int id, unsigned long long from,
    unsigned long long to, unsigned int flags, void *ctx)
{
    bottle_scrub_t            *s = ctx;
    bottle_scrub_hit_t        *h;
    const bottle_scrub_lit_t  *l;

    (void) from;
    (void) flags;

    if (s->nhits == s->hcap) {
        s->hcap = s->hcap ? s->hcap * 2 : 16;
        h = realloc(s->hits, s->hcap * sizeof(*h));
        if (h == NULL) {
            s->failed = 1;
            return 1;
        }
        s->hits = h;
    }

    l = &s->db->lits[id];
    h = &s->hits[s->nhits++];
    h->from = to - l->len;
    h->to = to;
    h->value = l->value;
    h->form = l->form;

    return 0;
}


/* the raw stream bytes [a, b): the carry holds [emitted0, seen0), p the
 * rest */

static int
scrub_raw(bottle_scrub_t *s, uint64_t a, uint64_t b, uint64_t base,
    const unsigned char *p)
{
    size_t    n;
    uint64_t  cend;

    cend = base + s->clen;

    if (a < cend) {
        n = (size_t) ((b < cend ? b : cend) - a);
        if (n && s->sink(s->arg, s->carry + (a - base), n) != 0) {
            return BOTTLE_SCRUB_ESINK;
        }
        a += n;
    }

    if (a < b && s->sink(s->arg, p + (a - cend), (size_t) (b - a)) != 0) {
        return BOTTLE_SCRUB_ESINK;
    }

    return BOTTLE_SCRUB_OK;
}


static int
scrub_stars(bottle_scrub_t *s, size_t n)
{
    size_t                      k;
    static const unsigned char  stars[] =
        "****************************************************************";

    while (n) {
        k = n < sizeof(stars) - 1 ? n : sizeof(stars) - 1;
        if (s->sink(s->arg, stars, k) != 0) {
            return BOTTLE_SCRUB_ESINK;
        }
        n -= k;
    }

    return BOTTLE_SCRUB_OK;
}


/*
 * The placeholder of value v, as long as the n bytes it replaces (a
 * response keeps its length): "[held:NAME]" and '*' up to n, or, when n
 * is shorter, "[held" '*'... "]" (n >= BOTTLE_SCRUB_MIN)
 */

static int
scrub_mark(bottle_scrub_t *s, unsigned v, size_t n)
{
    const bottle_scrub_db_t  *db = s->db;

    if (n >= db->mlen[v]) {
        if (s->sink(s->arg, (const unsigned char *) db->marks[v],
                    db->mlen[v]) != 0)
        {
            return BOTTLE_SCRUB_ESINK;
        }
        return scrub_stars(s, n - db->mlen[v]);
    }

    if (s->sink(s->arg, (const unsigned char *) "[held", 5) != 0
        || scrub_stars(s, n - 6) != BOTTLE_SCRUB_OK
        || s->sink(s->arg, (const unsigned char *) "]", 1) != 0)
    {
        return BOTTLE_SCRUB_ESINK;
    }

    return BOTTLE_SCRUB_OK;
}


static int
scrub_hit_cmp(const void *a, const void *b)
{
    const bottle_scrub_hit_t  *x = a, *y = b;

    if (x->from != y->from) {
        return x->from < y->from ? -1 : 1;
    }

    return x->to < y->to ? 1 : (x->to > y->to ? -1 : 0);
}


/*
 * Sends on everything before the stream offset e (moved past any hit that
 * straddles it), each run of overlapping hits as one placeholder; keeps
 * [e, seen) in the carry.
 */

static int
scrub_emit(bottle_scrub_t *s, uint64_t e, const unsigned char *p, size_t len)
{
    int                        rc;
    size_t                     i, j, k, keep_old, from_p;
    uint64_t                   base, seen0, end;
    const bottle_scrub_hit_t  *h;

    base = s->emitted;
    seen0 = s->seen - len;

    if (s->nhits > 1) {
        qsort(s->hits, s->nhits, sizeof(bottle_scrub_hit_t), scrub_hit_cmp);
    }

    for (i = 0; i < s->nhits && s->hits[i].from < e; i++) {
        if (s->hits[i].to > e) {
            e = s->hits[i].to;
        }
    }

    for (i = 0; i < s->nhits && s->hits[i].from < e; i++) {
        h = &s->hits[i];

        if (h->to <= s->emitted) {
            continue;
        }

        s->found[h->value] |= h->form;

        if (h->from < s->emitted) {
            /* overlaps the run already replaced: its rest masked */
            rc = scrub_stars(s, (size_t) (h->to - s->emitted));
            if (rc != BOTTLE_SCRUB_OK) {
                return rc;
            }
            s->emitted = h->to;
            continue;
        }

        rc = scrub_raw(s, s->emitted, h->from, base, p);
        if (rc != BOTTLE_SCRUB_OK) {
            return rc;
        }

        /* the run: this hit and those that overlap it, one placeholder */
        end = h->to;
        for (j = i + 1; j < s->nhits && s->hits[j].from < end; j++) {
            s->found[s->hits[j].value] |= s->hits[j].form;
            if (s->hits[j].to > end) {
                end = s->hits[j].to;
            }
        }

        rc = scrub_mark(s, h->value, (size_t) (end - h->from));
        if (rc != BOTTLE_SCRUB_OK) {
            return rc;
        }

        s->emitted = end;
        i = j - 1;
    }

    if (s->emitted < e) {
        rc = scrub_raw(s, s->emitted, e, base, p);
        if (rc != BOTTLE_SCRUB_OK) {
            return rc;
        }
        s->emitted = e;
    }

    /* the hits not yet sent on: those that start at e or later */
    for (k = 0; i < s->nhits; i++, k++) {
        s->hits[k] = s->hits[i];
    }
    s->nhits = k;

    /* the carry: [e, seen), from the old carry's tail and p's */
    keep_old = e < seen0 ? (size_t) (seen0 - e) : 0;
    if (keep_old) {
        memmove(s->carry, s->carry + (s->clen - keep_old), keep_old);
    }

    from_p = e > seen0 ? (size_t) (e - seen0) : 0;
    if (len > from_p) {
        memcpy(s->carry + keep_old, p + from_p, len - from_p);
    }
    s->clen = keep_old + (len > from_p ? len - from_p : 0);

    return BOTTLE_SCRUB_OK;
}


/*
 * Where the held-back tail starts: the window, or after the last byte no
 * literal has (a value not yet complete cannot span it), whichever is
 * later.  An SSE event's "\n\n" ends it, so events are not held back.
 */

static uint64_t
scrub_safe(bottle_scrub_t *s, const unsigned char *p, size_t len)
{
    uint64_t  e, q, seen0;

    e = s->seen > s->db->window ? s->seen - s->db->window : 0;
    if (e < s->emitted) {
        e = s->emitted;
    }

    seen0 = s->seen - len;

    for (q = s->seen; q > e; q--) {
        if (!s->db->cs[q - 1 >= seen0 ? p[q - 1 - seen0]
                                      : s->carry[q - 1 - s->emitted]])
        {
            return q;
        }
    }

    return e;
}


int
bottle_scrub_feed(bottle_scrub_t *s, const unsigned char *p, size_t len)
{
    int       rc;
    size_t    n;
    uint64_t  e;

    if (s->failed) {
        return BOTTLE_SCRUB_ERROR;
    }

    if (s->st == NULL
        && hs_open_stream(s->db->hs, 0, &s->st) != HS_SUCCESS)
    {
        s->st = NULL;
        s->failed = 1;
        return BOTTLE_SCRUB_ERROR;
    }

    /* the carry never holds more than the window: see scrub_emit() */
    while (len) {
        n = len < (1u << 30) ? len : (1u << 30);

        if (hs_scan_stream(s->st, (const char *) p, (unsigned) n, 0,
                           s->scratch, scrub_on_match, s)
            != HS_SUCCESS || s->failed)
        {
            s->failed = 1;
            return BOTTLE_SCRUB_ERROR;
        }

        s->seen += n;
        e = scrub_safe(s, p, n);

        rc = scrub_emit(s, e, p, n);
        if (rc != BOTTLE_SCRUB_OK) {
            s->failed = 1;
            return rc;
        }

        p += n;
        len -= n;
    }

    return BOTTLE_SCRUB_OK;
}


int
bottle_scrub_finish(bottle_scrub_t *s)
{
    int  rc;

    if (s->failed) {
        return BOTTLE_SCRUB_ERROR;
    }

    if (s->st) {
        if (hs_close_stream(s->st, s->scratch, scrub_on_match, s)
            != HS_SUCCESS)
        {
            s->st = NULL;
            s->failed = 1;
            return BOTTLE_SCRUB_ERROR;
        }
        s->st = NULL;
    }

    rc = scrub_emit(s, s->seen, NULL, 0);
    if (rc != BOTTLE_SCRUB_OK) {
        s->failed = 1;
        return rc;
    }

    s->seen = 0;
    s->emitted = 0;
    s->clen = 0;
    s->nhits = 0;

    return BOTTLE_SCRUB_OK;
}


unsigned
bottle_scrub_found(const bottle_scrub_t *s, size_t i)
{
    return i < BOTTLE_SCRUB_VALUES ? s->found[i] : 0;
}


void
bottle_scrub_clear(bottle_scrub_t *s)
{
    memset(s->found, 0, sizeof(s->found));
}


void
bottle_scrub_destroy(bottle_scrub_t *s)
{
    if (s == NULL) {
        return;
    }

    if (s->st) {
        (void) hs_close_stream(s->st, s->scratch, NULL, NULL);
    }

    hs_free_scratch(s->scratch);
    free(s->hits);
    free(s->carry);
    free(s);
}
