/*
 * The streaming secret scanner: scan states, their views, fields and
 * blocks, and the confirm step.  See bottle_scan.h for the interface and
 * docs/dlp.md for the design; the rules and their database are in
 * bottle_scan_rules.c, the decoders in bottle_scan_decode.c, a bottle's
 * literals in bottle_scan_secrets.c, matches and redaction in
 * bottle_scan_match.c.
 *
 * Each field is scanned in up to five views.  The raw view runs the
 * vendor rules (vectorscan, streaming, no start of match), the injection
 * phrases and the bottle's raw literals; the JSON-unescaped and the
 * percent-decoded (once, twice) views run the vendor rules, only from the
 * first block whose escapes could write a token character; the skeleton
 * view (decoded, separators stripped, running on across the request's
 * fields) runs the bottle's skeleton literals.  A vendor hit reports only
 * its end: PCRE2 (JIT) then finds the start in a window ending there.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_scan_int.h"


static int bottle_scan_on_rule(unsigned id, unsigned long long from,
    unsigned long long to, unsigned flags, void *ctx);
static int bottle_scan_on_lit(unsigned id, unsigned long long from,
    unsigned long long to, unsigned flags, void *ctx);


static int
cs_has(const unsigned char *bm, unsigned c)
{
    return bm[c >> 3] & (1 << (c & 7));
}


/* states */

static int
view_init(bottle_scan_view_t *v, bottle_scan_t *s, int id)
{
    size_t  cap;

    v->s = s;
    v->id = id;
    v->tailcap = BOTTLE_SCAN_TAIL;

    if (id == BOTTLE_VIEW_RAW) {
        v->buf = malloc(BOTTLE_SCAN_TAIL);
        return v->buf ? 0 : -1;
    }

    /* tail, one decoded sub-block, what a decoder held back and the
     * skeleton decoder's last store (up to 64 bytes); or a seed (at most a
     * tail) and a sub-block in an empty view */
    if (id == BOTTLE_VIEW_SKELETON) {
        v->tailcap = s->sec->skel_max + 8;
        cap = v->tailcap + BOTTLE_SCAN_DBLOCK + 128;
        v->buf = malloc(cap);
        /* a segment has a view byte at least */
        v->seg = malloc(cap * sizeof(bottle_scan_seg_t));
        return (v->buf && v->seg) ? 0 : -1;
    }

    cap = v->tailcap + BOTTLE_SCAN_DBLOCK + 64 + BOTTLE_SCAN_TAIL;
    v->buf = malloc(cap);
    v->map = malloc(cap * sizeof(uint32_t));
    v->mlen = malloc(cap);

    return (v->buf && v->map && v->mlen) ? 0 : -1;
}


static int
stream_open(hs_stream_t **st, const hs_database_t *db)
{
    return db == NULL || hs_open_stream(db, 0, st) == HS_SUCCESS ? 0 : -1;
}


bottle_scan_t *
bottle_scan_state_new(bottle_scan_secrets_t *sec)
{
    int             i;
    bottle_scan_t  *s;

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }

    s->sec = sec;
    s->db = sec->db;

    if (hs_clone_scratch(sec->proto, &s->scratch) != HS_SUCCESS) {
        goto failed;
    }

    s->md = pcre2_match_data_create(BOTTLE_SCAN_MD_PAIRS, NULL);
    s->win = malloc(BOTTLE_SCAN_TAIL + 16);
    if (s->md == NULL || s->win == NULL) {
        goto failed;
    }

    for (i = 0; i < BOTTLE_SCAN_NVIEWS; i++) {
        if (view_init(&s->v[i], s, i) != 0) {
            goto failed;
        }
        if (i != BOTTLE_VIEW_SKELETON
            && stream_open(&s->v[i].vs, s->db->vendor) != 0)
        {
            goto failed;
        }
    }

    if (stream_open(&s->v[BOTTLE_VIEW_RAW].is, s->db->inject) != 0
        || stream_open(&s->v[BOTTLE_VIEW_RAW].ls, sec->raw) != 0
        || stream_open(&s->v[BOTTLE_VIEW_SKELETON].ls, sec->skel) != 0)
    {
        goto failed;
    }

    return s;

failed:

    bottle_scan_state_free(s);
    return NULL;
}


void
bottle_scan_state_free(bottle_scan_t *s)
{
    int                  i;
    bottle_scan_view_t  *v;

    for (i = 0; i < BOTTLE_SCAN_NVIEWS; i++) {
        v = &s->v[i];
        if (v->vs) {
            hs_close_stream(v->vs, NULL, NULL, NULL);
        }
        if (v->is) {
            hs_close_stream(v->is, NULL, NULL, NULL);
        }
        if (v->ls) {
            hs_close_stream(v->ls, NULL, NULL, NULL);
        }
        free(v->buf);
        free(v->map);
        free(v->mlen);
        free(v->seg);
    }

    hs_free_scratch(s->scratch);
    pcre2_match_data_free(s->md);
    free(s->win);
    free(s);
}


static void
view_clear(bottle_scan_view_t *v)
{
    v->keep = 0;
    v->nseg = 0;
    v->cur = NULL;
    v->curlen = 0;
    v->base = 0;
    v->active = 0;
    v->seeded = 0;
    v->dstate = 0;
    v->dn = 0;
}


void
bottle_scan_reset(bottle_scan_t *s, unsigned detectors)
{
    int  i;

    for (i = 0; i < BOTTLE_SCAN_NVIEWS; i++) {
        view_clear(&s->v[i]);
    }

    /* an interrupted request leaves state behind: drop it unreported */
    if (s->in_field) {
        for (i = 0; i < BOTTLE_SCAN_NVIEWS; i++) {
            if (s->v[i].vs) {
                hs_reset_stream(s->v[i].vs, 0, NULL, NULL, NULL);
            }
        }
        hs_reset_stream(s->v[BOTTLE_VIEW_RAW].is, 0, NULL, NULL, NULL);
        if (s->v[BOTTLE_VIEW_RAW].ls) {
            hs_reset_stream(s->v[BOTTLE_VIEW_RAW].ls, 0, NULL, NULL, NULL);
        }
    }
    if (s->v[BOTTLE_VIEW_SKELETON].ls) {
        hs_reset_stream(s->v[BOTTLE_VIEW_SKELETON].ls, 0, NULL, NULL, NULL);
    }
    s->v[BOTTLE_VIEW_SKELETON].field_start = 0;

    s->detectors = detectors;
    s->in_field = 0;
    s->failed = 0;
    s->ordinal = 0;
    s->fpos = 0;
    s->nm = 0;
    s->overflow = 0;
    s->dropped = 0;
    s->ent.len = 0;
}


/* view bytes */

/* view offsets [from, to) as one run of bytes: in place when they are, else
 * copied from the raw tail and the caller's block into s->win */
static const unsigned char *
view_window(bottle_scan_view_t *v, uint64_t from, uint64_t to)
{
    size_t  a, t;

    a = (size_t) (from - v->base);

    if (v->id != BOTTLE_VIEW_RAW) {
        return v->buf + a;
    }

    if (a >= v->keep) {
        return v->cur + (a - v->keep);
    }

    t = v->keep - a;
    if (to - from < t) {
        return v->buf + a;
    }
    memcpy(v->s->win, v->buf + a, t);

    /* an empty chunk has no bytes, and maybe no pointer either */
    if ((size_t) (to - from) > t) {
        memcpy(v->s->win + t, v->cur, (size_t) (to - from) - t);
    }

    return v->s->win;
}


static unsigned
view_byte(bottle_scan_view_t *v, uint64_t off)
{
    size_t  a;

    a = (size_t) (off - v->base);
    if (v->id != BOTTLE_VIEW_RAW || a < v->keep) {
        return v->buf[a];
    }
    return v->cur[a - v->keep];
}


/* the raw span of view offsets [from, to) */
static void
view_raw_span(bottle_scan_view_t *v, uint64_t from, uint64_t to,
    uint64_t *start, uint64_t *end)
{
    uint32_t  s0, e0, s1, e1;

    if (v->id == BOTTLE_VIEW_RAW) {
        *start = from;
        *end = to;
        return;
    }

    bottle_scan_view_span(v, (size_t) (from - v->base), &s0, &e0);
    bottle_scan_view_span(v, (size_t) (to - 1 - v->base), &s1, &e1);
    *start = s0;
    *end = e1;
}


/* a vendor rule or a phrase hit: find the start, report */

/* the JIT straight away when there is one: pcre2_match() checks more */
static int
bottle_scan_pcre(const pcre2_code *re, int jit, const unsigned char *w,
    size_t len, size_t off, bottle_scan_t *s)
{
    if (jit) {
        return pcre2_jit_match(re, w, len, off, 0, s->md, s->db->mctx);
    }
    return pcre2_match(re, w, len, off, 0, s->md, s->db->mctx);
}


/* the context a rule wants, ending where the token starts */
static int
bottle_scan_context(bottle_scan_view_t *v, const bottle_scan_crule_t *cr,
    uint64_t st)
{
    int                   rc;
    uint64_t              ws;
    const unsigned char  *w;

    ws = st > cr->r->maxlen ? st - cr->r->maxlen : 0;
    ws = ws < v->base ? v->base : ws;
    w = view_window(v, ws, st);

    rc = bottle_scan_pcre(cr->ctx, cr->jit_ctx, w, (size_t) (st - ws), 0,
                          v->s);
    if (rc > 0) {
        return 1;
    }
    return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}


/*
 * A token made of cs characters only lies in the run of them that ends
 * where it does, and starts where the run does, or after an escape that
 * opens the run ("\\n", "%0A"): at most three anchored tries, instead of
 * a search from every position of the window.  w[lb, lb + n) is the
 * window, w[0] the view offset w0.
 */
static int
bottle_scan_confirm_run(bottle_scan_view_t *v, const bottle_scan_crule_t *cr,
    const unsigned char *w, size_t lb, size_t n, uint64_t w0, int at_start,
    uint64_t *start)
{
    int         rc, k;
    size_t      r, e, cand[3], nc;
    PCRE2_SIZE *ov;

    e = lb + n;
    for (r = e; r > lb && cs_has(cr->cs, w[r - 1]); r--) {
        /* void */
    }

    if (r == lb && r > 0 && cs_has(cr->cs, w[r - 1])) {
        /* the run is longer than the longest token, or its start isn't
         * in the view: a bounded rule can't match, an unbounded one may */
        return cr->r->unbounded ? -1 : 0;
    }
    if (r == 0 && !at_start && cr->r->unbounded) {
        return -1;
    }

    nc = 0;
    cand[nc++] = r;
    if (r > 0 && w[r - 1] == '\\' && r + 1 < e) {
        cand[nc++] = r + 1;
    }
    if (r > 0 && w[r - 1] == '%' && r + 2 < e) {
        cand[nc++] = r + 2;
    }

    for (k = 0; k < (int) nc; k++) {
        rc = bottle_scan_pcre(cr->re, cr->jit, w, e, cand[k], v->s);
        if (rc > 0) {
            ov = pcre2_get_ovector_pointer(v->s->md);
            *start = w0 + ov[2];
            return cr->ctx ? bottle_scan_context(v, cr, *start) : 1;
        }
        if (rc != PCRE2_ERROR_NOMATCH) {
            return -1;
        }
    }

    return 0;
}


static int
bottle_scan_confirm(bottle_scan_view_t *v, const bottle_scan_crule_t *cr,
    uint64_t e, uint64_t *start)
{
    int                   rc, at_start;
    size_t                lb, st;
    uint64_t              ws;
    PCRE2_SIZE           *ov;
    const unsigned char  *w;

    /* the longest token, and an escape before it ("%0A") */
    ws = e > cr->r->maxlen + 3 ? e - cr->r->maxlen - 3 : 0;
    if (ws < v->base) {
        ws = v->base;
    }
    at_start = ws == 0 && !v->seeded;

    /* room for the lookbehinds before the window */
    lb = ws - v->base < 4 ? (size_t) (ws - v->base) : 4;
    w = view_window(v, ws - lb, e);

    if (cr->r->jwt) {
        rc = bottle_scan_jwt(w, lb, lb + (size_t) (e - ws), at_start, &st);
        if (rc == 1) {
            *start = ws - lb + st;
        }
        return rc;
    }

    if (cr->r->cs && !cr->r->dotted && !cr->r->jwt) {
        return bottle_scan_confirm_run(v, cr, w, lb, (size_t) (e - ws),
                                       ws - lb, at_start, start);
    }

    rc = bottle_scan_pcre(cr->re, cr->jit, w, lb + (size_t) (e - ws), lb,
                          v->s);
    if (rc > 0) {
        ov = pcre2_get_ovector_pointer(v->s->md);
        *start = ws - lb + ov[2];
        return cr->ctx ? bottle_scan_context(v, cr, *start) : 1;
    }

    if (rc == PCRE2_ERROR_NOMATCH) {
        /* bounded rules are wholly in the window: a real no */
        return cr->r->unbounded && !at_start ? -1 : 0;
    }

    return -1;
}


static int
bottle_scan_on_rule(unsigned id, unsigned long long from,
    unsigned long long to, unsigned flags, void *ctx)
{
    int                        rc;
    uint64_t                   e, st = 0, rs, re;
    bottle_scan_view_t        *v;
    const bottle_scan_crule_t *cr;

    (void) from;
    (void) flags;

    v = ctx;
    cr = &v->s->db->rules[id];

    /* the trailing boundary was consumed unless the field ended there */
    e = to;
    if (cr->r->cs && e > v->base && !cs_has(cr->cs, view_byte(v, e - 1))) {
        e--;
    }

    rc = bottle_scan_confirm(v, cr, e, &st);
    if (rc == 0) {
        return 0;
    }

    /* a documentation example or a placeholder is not a leak: vendor
     * shapes only; the canary and the bottle's tokens always count */
    if (rc > 0 && cr->r->detector == BOTTLE_DETECT_TOKEN_PATTERNS
        && bottle_scan_placeholder(v->s->db, cr, view_window(v, st, e),
                                   (size_t) (e - st), v->s->md))
    {
        return 0;
    }

    if (rc < 0) {
        /* longer than the lookback, or past the regex limits: what we saw */
        st = e > cr->r->maxlen ? e - cr->r->maxlen : 0;
        st = st < v->base ? v->base : st;
    }

    view_raw_span(v, st, e, &rs, &re);
    bottle_scan_add(v->s, cr->r->detector, cr->r->name, rs, re,
                    rc > 0 && !cr->r->partial, 0, v->id);
    return 0;
}


static int
bottle_scan_on_lit(unsigned id, unsigned long long from,
    unsigned long long to, unsigned flags, void *ctx)
{
    int                       cross;
    uint64_t                  st, rs, re;
    bottle_scan_t            *s;
    bottle_scan_view_t       *v;
    const bottle_scan_lit_t  *lit;

    (void) from;
    (void) flags;

    v = ctx;
    s = v->s;
    lit = v->id == BOTTLE_VIEW_RAW ? &s->sec->raw_lits[id]
                                   : &s->sec->skel_lits[id];

    if (!lit->canary && !(s->detectors & BOTTLE_DLP_KNOWN_SECRETS)) {
        return 0;
    }

    st = to - lit->len;
    cross = 0;

    if (v->id == BOTTLE_VIEW_SKELETON && st < v->field_start) {
        /* pieces in earlier fields: report this field's part */
        cross = 1;
        st = v->field_start;
    }

    view_raw_span(v, st, to, &rs, &re);
    bottle_scan_add(s, lit->canary ? BOTTLE_DETECT_CANARY
                                   : BOTTLE_DETECT_KNOWN_SECRETS,
                    s->sec->names[lit->secret], rs, re, !cross, cross, v->id);
    return 0;
}


/* decoded views */

static int
view_scan(bottle_scan_view_t *v, hs_stream_t *st,
    match_event_handler cb)
{
    if (v->curlen == 0 || st == NULL) {
        return 0;
    }

    return hs_scan_stream(st, (const char *) v->buf + v->keep,
                          (unsigned) v->curlen, 0, v->s->scratch, cb, v)
           == HS_SUCCESS ? 0 : -1;
}


/* keeps the last tailcap bytes for the next block */
static void
view_commit(bottle_scan_view_t *v)
{
    size_t  total, shift;

    total = v->keep + v->curlen;

    if (total > v->tailcap) {
        shift = total - v->tailcap;
        memmove(v->buf, v->buf + shift, v->tailcap);
        if (v->seg) {
            bottle_scan_seg_shift(v, shift);
        } else {
            memmove(v->map, v->map + shift, v->tailcap * sizeof(uint32_t));
            memmove(v->mlen, v->mlen + shift, v->tailcap);
        }
        v->base += shift;
        total = v->tailcap;
    }

    v->keep = total;
    v->curlen = 0;
}


/*
 * A decoded view switched on in the middle of a field starts with the raw
 * tail, which had nothing to decode that matters: a token that began before
 * the escape is seen whole, and an escape cut by the last block's end is
 * decoded whole.  The tail is longer than any bounded token, so its start
 * is a token start only when it is the field's.
 */
static void
view_activate(bottle_scan_view_t *v, const unsigned char *seed, size_t n,
    uint64_t seed_off)
{
    view_clear(v);
    v->active = 1;
    v->seeded = seed_off > 0;

    if (v->id == BOTTLE_VIEW_JSON) {
        bottle_scan_json_decode(v, seed, n, (uint32_t) seed_off);
    } else {
        bottle_scan_pct_decode(v, seed, n, NULL, NULL, (uint32_t) seed_off);
    }
}


static void
decoded_triggers(bottle_scan_t *s, const unsigned char *p, size_t n,
    unsigned trig)
{
    int                  twice;
    size_t               j, k;
    unsigned char        junction[10];
    bottle_scan_view_t  *raw, *p1, *p2;

    raw = &s->v[BOTTLE_VIEW_RAW];
    p1 = &s->v[BOTTLE_VIEW_PCT];
    p2 = &s->v[BOTTLE_VIEW_PCT2];

    if (trig == (unsigned) -1) {
        j = raw->keep < 5 ? raw->keep : 5;
        k = n < 5 ? n : 5;
        memcpy(junction, raw->buf + raw->keep - j, j);
        memcpy(junction + j, p, k);

        twice = 0;
        trig = 0;
        if (bottle_scan_json_trigger(junction, j + k)
            || bottle_scan_json_trigger(p, n))
        {
            trig |= BOTTLE_TRIG_JSON;
        }
        if (bottle_scan_pct_trigger(junction, j + k, &twice)
            | bottle_scan_pct_trigger(p, n, &twice))
        {
            trig |= BOTTLE_TRIG_PCT;
        }
        if (twice) {
            trig |= BOTTLE_TRIG_PCT | BOTTLE_TRIG_PCT2;
        }
    }

    if ((trig & BOTTLE_TRIG_JSON) && !s->v[BOTTLE_VIEW_JSON].active) {
        view_activate(&s->v[BOTTLE_VIEW_JSON], raw->buf, raw->keep,
                      raw->base);
    }

    if ((trig & BOTTLE_TRIG_PCT) && !p1->active) {
        view_activate(p1, raw->buf, raw->keep, raw->base);
    }

    if ((trig & BOTTLE_TRIG_PCT2) && !p2->active) {
        /* decodes the once-decoded view from the start of what it holds */
        view_clear(p2);
        p2->active = 1;
        p2->seeded = p1->seeded || p1->base > 0;
        s->p2_in = p1->base;
    }
}


static int
decoded_pct(bottle_scan_t *s, const unsigned char *p, size_t n, uint32_t off,
    int flush)
{
    int                  rc;
    size_t               a, b;
    bottle_scan_view_t  *p1, *p2;

    p1 = &s->v[BOTTLE_VIEW_PCT];
    p2 = &s->v[BOTTLE_VIEW_PCT2];
    rc = 0;

    if (flush) {
        bottle_scan_decode_flush(p1);
    } else {
        bottle_scan_pct_decode(p1, p, n, NULL, NULL, off);
    }
    rc |= view_scan(p1, p1->vs, bottle_scan_on_rule);

    if (p2->active) {
        a = (size_t) (s->p2_in - p1->base);
        b = p1->keep + p1->curlen;
        bottle_scan_pct_decode(p2, p1->buf + a, b - a, p1->map + a,
                               p1->mlen + a, 0);
        s->p2_in = p1->base + b;
        if (flush) {
            bottle_scan_decode_flush(p2);
        }
        rc |= view_scan(p2, p2->vs, bottle_scan_on_rule);
        view_commit(p2);
    }

    view_commit(p1);
    return rc;
}


static int
decoded_block(bottle_scan_t *s, const unsigned char *p, size_t n)
{
    int                  rc;
    size_t               o, k;
    uint32_t             off;
    bottle_scan_view_t  *json;

    json = &s->v[BOTTLE_VIEW_JSON];
    rc = 0;

    for (o = 0; o < n; o += k) {
        k = n - o < BOTTLE_SCAN_DBLOCK ? n - o : BOTTLE_SCAN_DBLOCK;
        off = (uint32_t) (s->fpos + o);

        if (json->active) {
            bottle_scan_json_decode(json, p + o, k, off);
            rc |= view_scan(json, json->vs, bottle_scan_on_rule);
            view_commit(json);
        }

        if (s->v[BOTTLE_VIEW_PCT].active) {
            rc |= decoded_pct(s, p + o, k, off, 0);
        }
    }

    return rc;
}


static int
skeleton_block(bottle_scan_t *s, const unsigned char *p, size_t n)
{
    int                  rc;
    size_t               o, k;
    bottle_scan_view_t  *v;

    v = &s->v[BOTTLE_VIEW_SKELETON];
    rc = 0;

    for (o = 0; o < n; o += k) {
        k = n - o < BOTTLE_SCAN_DBLOCK ? n - o : BOTTLE_SCAN_DBLOCK;
        bottle_scan_skel_decode(v, p + o, k, (uint32_t) (s->fpos + o));
        rc |= view_scan(v, v->ls, bottle_scan_on_lit);
        view_commit(v);
    }

    return rc;
}


/* the raw view keeps the last bytes of the caller's blocks */
static void
raw_commit(bottle_scan_view_t *v, const unsigned char *p, size_t n)
{
    size_t  drop;

    if (n >= v->tailcap) {
        memcpy(v->buf, p + n - v->tailcap, v->tailcap);
        v->base += v->keep + n - v->tailcap;
        v->keep = v->tailcap;

    } else {
        drop = v->keep + n > v->tailcap ? v->keep + n - v->tailcap : 0;
        memmove(v->buf, v->buf + drop, v->keep - drop);
        memcpy(v->buf + v->keep - drop, p, n);
        v->base += drop;
        v->keep += n - drop;
    }

    v->cur = NULL;
    v->curlen = 0;
}


static int
want_literals(bottle_scan_t *s)
{
    return s->sec->has_canary || (s->detectors & BOTTLE_DLP_KNOWN_SECRETS);
}


static int
raw_block(bottle_scan_t *s, const unsigned char *p, size_t n)
{
    int                  rc;
    unsigned             trig;
    bottle_scan_view_t  *v;

    v = &s->v[BOTTLE_VIEW_RAW];
    v->cur = p;
    v->curlen = n;
    rc = 0;
    trig = (unsigned) -1;

    if (want_literals(s)) {
        if (v->ls && !(s->skip & BOTTLE_SKIP_LITS)) {
            rc |= hs_scan_stream(v->ls, (const char *) p, (unsigned) n, 0,
                                 s->scratch, bottle_scan_on_lit, v);
        }
        if (s->v[BOTTLE_VIEW_SKELETON].ls
            && !(s->detectors & BOTTLE_SCAN_RAW_ONLY))
        {
            s->trig = 0;
            rc |= skeleton_block(s, p, n);
            trig = s->trig;
        }
    }

    if ((s->detectors & BOTTLE_DLP_TOKEN_PATTERNS)
        && !(s->skip & BOTTLE_SKIP_VENDOR))
    {
        rc |= hs_scan_stream(v->vs, (const char *) p, (unsigned) n, 0,
                             s->scratch, bottle_scan_on_rule, v);
        if (!(s->detectors & BOTTLE_SCAN_RAW_ONLY)) {
            decoded_triggers(s, p, n, trig);
            rc |= decoded_block(s, p, n);
        }
    }

    if (s->detectors & BOTTLE_DLP_NAIVE_INJECTION) {
        rc |= hs_scan_stream(v->is, (const char *) p, (unsigned) n, 0,
                             s->scratch, bottle_scan_on_rule, v);
    }

    if (s->detectors & BOTTLE_DLP_ENTROPY) {
        bottle_scan_entropy_feed(s, p, n);
    }

    raw_commit(v, p, n);
    s->fpos += n;
    return rc;
}


/* fields */

int
bottle_scan_begin(bottle_scan_t *s, int field)
{
    bottle_scan_view_t  *sk;

    if (s->failed) {
        return BOTTLE_SCAN_ERROR;
    }
    if (s->in_field) {
        return BOTTLE_SCAN_E_STATE;
    }

    s->in_field = 1;
    s->field = field;
    s->ordinal++;
    s->fpos = 0;
    s->skip = 0;
    s->ent.len = 0;

    view_clear(&s->v[BOTTLE_VIEW_RAW]);
    view_clear(&s->v[BOTTLE_VIEW_JSON]);
    view_clear(&s->v[BOTTLE_VIEW_PCT]);
    view_clear(&s->v[BOTTLE_VIEW_PCT2]);

    /* the skeleton runs on; escapes don't */
    sk = &s->v[BOTTLE_VIEW_SKELETON];
    sk->field_start = sk->base + sk->keep;
    sk->dstate = 0;
    sk->dn = 0;

    return BOTTLE_SCAN_OK;
}


int
bottle_scan_feed(bottle_scan_t *s, const void *data, size_t len)
{
    size_t               k;
    const unsigned char *p;

    if (s->failed) {
        return BOTTLE_SCAN_ERROR;
    }
    if (!s->in_field) {
        return BOTTLE_SCAN_E_STATE;
    }
    if (len > UINT32_MAX - 256 - s->fpos) {
        s->failed = 1;
        return BOTTLE_SCAN_E_TOO_LONG;
    }

    p = data;

    while (len) {
        k = len < BOTTLE_SCAN_BLOCK ? len : BOTTLE_SCAN_BLOCK;
        if (raw_block(s, p, k) != 0) {
            s->failed = 1;
            return BOTTLE_SCAN_ERROR;
        }
        p += k;
        len -= k;
    }

    return BOTTLE_SCAN_OK;
}


static int
stream_end(bottle_scan_t *s, bottle_scan_view_t *v, hs_stream_t *st)
{
    /* reports what is anchored at the end of data, then starts over */
    return hs_reset_stream(st, 0, s->scratch, bottle_scan_on_rule, v)
           == HS_SUCCESS ? 0 : -1;
}


int
bottle_scan_end(bottle_scan_t *s)
{
    int                  rc;
    bottle_scan_view_t  *v;

    if (s->failed) {
        return BOTTLE_SCAN_ERROR;
    }
    if (!s->in_field) {
        return BOTTLE_SCAN_E_STATE;
    }

    rc = 0;
    v = &s->v[BOTTLE_VIEW_JSON];
    if (v->active) {
        bottle_scan_decode_flush(v);
        rc |= view_scan(v, v->vs, bottle_scan_on_rule);
        view_commit(v);
        rc |= stream_end(s, v, v->vs);
    }

    if (s->v[BOTTLE_VIEW_PCT].active) {
        rc |= decoded_pct(s, NULL, 0, 0, 1);
        rc |= stream_end(s, &s->v[BOTTLE_VIEW_PCT], s->v[BOTTLE_VIEW_PCT].vs);
        v = &s->v[BOTTLE_VIEW_PCT2];
        if (v->active) {
            rc |= stream_end(s, v, v->vs);
        }
    }

    v = &s->v[BOTTLE_VIEW_SKELETON];
    if (v->ls && want_literals(s)) {
        bottle_scan_decode_flush(v);
        rc |= view_scan(v, v->ls, bottle_scan_on_lit);
        view_commit(v);
    }

    /* a stream this field didn't feed is clean already */
    v = &s->v[BOTTLE_VIEW_RAW];
    if ((s->detectors & BOTTLE_DLP_TOKEN_PATTERNS)
        && !(s->skip & BOTTLE_SKIP_VENDOR))
    {
        rc |= stream_end(s, v, v->vs);
    }
    if (s->detectors & BOTTLE_DLP_NAIVE_INJECTION) {
        rc |= stream_end(s, v, v->is);
    }
    if (v->ls && !(s->skip & BOTTLE_SKIP_LITS)) {
        rc |= hs_reset_stream(v->ls, 0, NULL, NULL, NULL);
    }

    if (s->detectors & BOTTLE_DLP_ENTROPY) {
        bottle_scan_entropy_end(s);
    }

    s->in_field = 0;

    if (rc != 0) {
        s->failed = 1;
        return BOTTLE_SCAN_ERROR;
    }

    return BOTTLE_SCAN_OK;
}


int
bottle_scan_field(bottle_scan_t *s, int field, const void *data, size_t len)
{
    int  rc;

    rc = bottle_scan_begin(s, field);

    /*
     * Whole, a field shorter than every vendor pattern, or than every raw
     * literal, is not fed to those streams: they start over with each
     * field, so nothing of theirs can match in it.  Most header fields
     * are that short, and each stream costs a scan and a reset per field.
     * The skeleton runs across fields and is always fed.
     */

    if (rc == BOTTLE_SCAN_OK) {
        if (len < s->db->vendor_min) {
            s->skip |= BOTTLE_SKIP_VENDOR;
        }
        if (len < s->sec->raw_min) {
            s->skip |= BOTTLE_SKIP_LITS;
        }

        rc = bottle_scan_feed(s, data, len);
    }
    if (rc == BOTTLE_SCAN_OK) {
        rc = bottle_scan_end(s);
    }
    return rc;
}
