/*
 * The scanner's match list (merging, ordering, overflow) and redaction.
 */

#include <stdio.h>
#include <string.h>

#include "bottle_scan_int.h"


/* matches */

static int
warn_only(int detector)
{
    return detector == BOTTLE_DETECT_ENTROPY
           || detector == BOTTLE_DETECT_INJECTION;
}


static int
same_rule(const bottle_scan_match_t *a, int detector, const char *rule)
{
    return a->detector == detector
           && (a->rule == rule || strcmp(a->rule, rule) == 0);
}


static void
merge_into(bottle_scan_match_t *m, uint64_t start, uint64_t end,
    int removable, int cross, int view)
{
    m->start = start < m->start ? start : m->start;
    m->end = end > m->end ? end : m->end;
    m->removable = m->removable && removable;
    m->cross_field = m->cross_field || cross;
    m->view = view < m->view ? view : m->view;
}


void
bottle_scan_add(bottle_scan_t *s, int detector, const char *rule,
    uint64_t start, uint64_t end, int removable, int cross, int view)
{
    size_t                i;
    bottle_scan_match_t  *m;

    /* hits of one token come together; bottle_scan_matches() merges what
     * is left */
    for (i = s->nm; i > 0 && i + 16 > s->nm && s->mord[i - 1] == s->ordinal;
         i--)
    {
        m = &s->m[i - 1];
        if (same_rule(m, detector, rule) && start <= m->end
            && end >= m->start)
        {
            merge_into(m, start, end, removable, cross, view);
            return;
        }
    }

    if (s->nm == BOTTLE_SCAN_MAX_MATCHES) {
        s->dropped++;
        if (warn_only(detector)) {
            return;
        }
        /* a blocking match pushes out a warning */
        for (i = s->nm; i > 0 && !warn_only(s->m[i - 1].detector); i--) {
            /* void */
        }
        if (i == 0) {
            s->overflow = 1;
            return;
        }
        memmove(&s->m[i - 1], &s->m[i], (s->nm - i) * sizeof(s->m[0]));
        memmove(&s->mord[i - 1], &s->mord[i], (s->nm - i) * sizeof(s->mord[0]));
        s->nm--;
    }

    m = &s->m[s->nm];
    s->mord[s->nm++] = s->ordinal;
    m->detector = detector;
    m->rule = rule;
    m->field = s->field;
    m->start = start;
    m->end = end;
    m->removable = removable ? 1 : 0;
    m->cross_field = cross ? 1 : 0;
    m->view = view;
}


const bottle_scan_match_t *
bottle_scan_matches(bottle_scan_t *s, size_t *n)
{
    size_t               i, j, k;
    unsigned             ord[BOTTLE_SCAN_MAX_MATCHES], o;
    bottle_scan_match_t *m, t;

    k = 0;
    for (i = 0; i < s->nm; i++) {
        s->sorted[k] = s->m[i];
        ord[k++] = s->mord[i];
    }

    /* merges the chains the incremental merge missed */
    for (i = 0; i < k; i++) {
        m = &s->sorted[i];
        for (j = i + 1; j < k; j++) {
            if (ord[j] == ord[i] && same_rule(&s->sorted[j], m->detector,
                                              m->rule)
                && s->sorted[j].start <= m->end && s->sorted[j].end >= m->start)
            {
                merge_into(m, s->sorted[j].start, s->sorted[j].end,
                           s->sorted[j].removable, s->sorted[j].cross_field,
                           s->sorted[j].view);
                s->sorted[j] = s->sorted[--k];
                ord[j] = ord[k];
                j = i;      /* m grew: look again */
            }
        }
    }

    /* insertion sort: field order, then start */
    for (i = 1; i < k; i++) {
        t = s->sorted[i];
        o = ord[i];
        for (j = i; j > 0 && (ord[j - 1] > o || (ord[j - 1] == o
                              && s->sorted[j - 1].start > t.start)); j--)
        {
            s->sorted[j] = s->sorted[j - 1];
            ord[j] = ord[j - 1];
        }
        s->sorted[j] = t;
        ord[j] = o;
    }

    *n = k;
    return s->sorted;
}


int
bottle_scan_overflow(const bottle_scan_t *s)
{
    return s->overflow;
}


const char *
bottle_scan_detector_name(int detector)
{
    switch (detector) {
    case BOTTLE_DETECT_CANARY: return "canary";
    case BOTTLE_DETECT_KNOWN_SECRETS: return "known_secrets";
    case BOTTLE_DETECT_TOKEN_PATTERNS: return "token_patterns";
    case BOTTLE_DETECT_ENTROPY: return "entropy";
    case BOTTLE_DETECT_INJECTION: return "injection";
    }
    return "unknown";
}


/* redaction */

static int
selected(const bottle_scan_match_t *m, int field, unsigned detectors)
{
    return m->field == field && (detectors & (1u << m->detector));
}


static ssize_t
redact(unsigned char *out, size_t cap, const unsigned char *in, size_t len,
    uint64_t base, const bottle_scan_match_t *m, size_t n, int field,
    unsigned detectors, unsigned flags)
{
    int                        grew;
    size_t                     i, o, k, ml;
    uint64_t                   pos, end, st, en;
    char                       marker[160];
    const bottle_scan_match_t *first;

    end = base + len;

    for (i = 0; i < n; i++) {
        if (selected(&m[i], field, detectors) && !m[i].removable
            && m[i].start < end && m[i].end > base)
        {
            return -1;
        }
    }

    pos = base;
    o = 0;

    while (pos < end) {
        /* the next span that isn't over yet */
        first = NULL;
        for (i = 0; i < n; i++) {
            if (selected(&m[i], field, detectors) && m[i].end > pos
                && m[i].end > m[i].start
                && (first == NULL || m[i].start < first->start))
            {
                first = &m[i];
            }
        }

        st = first ? first->start : end;
        k = (size_t) ((st < end ? st : end) - pos);
        if (st > pos) {
            if (out) {
                if (o + k > cap) {
                    return -1;
                }
                memcpy(out + o, in + (pos - base), k);
            }
            o += k;
            pos += k;
            continue;
        }

        /* the union of the spans overlapping this one */
        en = first->end;
        do {
            grew = 0;
            for (i = 0; i < n; i++) {
                if (selected(&m[i], field, detectors) && m[i].start < en
                    && m[i].end > en)
                {
                    en = m[i].end;
                    grew = 1;
                }
            }
        } while (grew);

        if (st >= base) {
            if (flags & BOTTLE_REDACT_RULE_NAME) {
                ml = (size_t) snprintf(marker, sizeof(marker),
                                       "[REDACTED:%s]", first->rule);
                ml = ml < sizeof(marker) ? ml : sizeof(marker) - 1;
            } else {
                ml = sizeof("[REDACTED]") - 1;
                memcpy(marker, "[REDACTED]", ml);
            }
            if (out) {
                if (o + ml > cap) {
                    return -1;
                }
                memcpy(out + o, marker, ml);
            }
            o += ml;
        }

        pos = en < end ? en : end;
    }

    return (ssize_t) o;
}


ssize_t
bottle_scan_redact(unsigned char *out, size_t cap, const unsigned char *in,
    size_t len, uint64_t base, const bottle_scan_match_t *m, size_t n,
    int field, unsigned detectors, unsigned flags)
{
    return redact(out, cap, in, len, base, m, n, field, detectors, flags);
}


ssize_t
bottle_scan_redact_len(size_t len, uint64_t base,
    const bottle_scan_match_t *m, size_t n, int field, unsigned detectors,
    unsigned flags)
{
    return redact(NULL, 0, NULL, len, base, m, n, field, detectors, flags);
}
