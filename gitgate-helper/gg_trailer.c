/*
 * Commit trailers (gg_trailer.h).
 */

#include <string.h>
#include <strings.h>

#include "gg_trailer.h"


typedef struct {
    const char         *s;
    size_t              len;        /* without LF and one CR before it */
} gg_tline_t;


static int gg_tline_next(gg_tline_t *l, const char **p, const char *end);
static int gg_blank(const gg_tline_t *l);
static void gg_trim(const char **s, size_t *len);
static void gg_value_add(char *v, size_t *vlen, int *over, const char *s,
    size_t len);
static void gg_value_done(gg_trailers_t *out, const char *v, size_t vlen,
    int over, const char *bottle, size_t blen);


/* the next line at *p: 1, or 0 at end */

static int
gg_tline_next(gg_tline_t *l, const char **p, const char *end)
{
    const char  *nl;

    if (*p >= end) {
        return 0;
    }

    l->s = *p;
    nl = memchr(*p, '\n', (size_t) (end - *p));

    if (nl == NULL) {
        l->len = (size_t) (end - *p);
        *p = end;

    } else {
        l->len = (size_t) (nl - *p);
        *p = nl + 1;
    }

    if (l->len && l->s[l->len - 1] == '\r') {
        l->len--;
    }

    return 1;
}


static int
gg_blank(const gg_tline_t *l)
{
    size_t  i;

    for (i = 0; i < l->len; i++) {
        if (l->s[i] != ' ' && l->s[i] != '\t') {
            return 0;
        }
    }

    return 1;
}


static void
gg_trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*len)--;
    }

    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t')) {
        (*len)--;
    }
}


/* v holds GG_TRAILER_VALUE_MAX bytes: each write checked */

static void
gg_value_add(char *v, size_t *vlen, int *over, const char *s, size_t len)
{
    gg_trim(&s, &len);

    if (len == 0 || *over) {
        return;
    }

    if (*vlen) {
        if (*vlen + 1 > GG_TRAILER_VALUE_MAX) {
            *over = 1;
            return;
        }
        v[(*vlen)++] = ' ';
    }

    if (len > GG_TRAILER_VALUE_MAX - *vlen) {
        *over = 1;
        return;
    }

    memcpy(v + *vlen, s, len);
    *vlen += len;
}


static void
gg_value_done(gg_trailers_t *out, const char *v, size_t vlen, int over,
    const char *bottle, size_t blen)
{
    if (!over && vlen == blen && memcmp(v, bottle, blen) == 0) {
        out->named++;

    } else {
        out->other++;
    }
}


void
gg_trailers(gg_trailers_t *out, const char *msg, size_t len,
    const char *bottle, size_t blen)
{
    int          over, in, blank_before;
    char         v[GG_TRAILER_VALUE_MAX];
    size_t       i, n, paragraphs, vlen;
    const char  *p, *end, *last, *s;
    gg_tline_t   l;

    memset(out, 0, sizeof(*out));

    /* the last paragraph's start, and how many paragraphs there are */

    p = msg;
    end = msg + len;
    last = NULL;
    paragraphs = 0;
    blank_before = 1;

    while (gg_tline_next(&l, &p, end)) {
        if (gg_blank(&l)) {
            blank_before = 1;
            continue;
        }

        if (blank_before) {
            paragraphs++;
            last = l.s;
        }

        blank_before = 0;
    }

    if (paragraphs < 2) {
        return;
    }

    /* its lines: Bottle-Id trailers and their continuation lines */

    p = last;
    in = 0;
    over = 0;
    vlen = 0;

    while (gg_tline_next(&l, &p, end) && !gg_blank(&l)) {

        if (l.s[0] == ' ' || l.s[0] == '\t') {
            if (in) {
                gg_value_add(v, &vlen, &over, l.s, l.len);
            }
            continue;
        }

        if (in) {
            gg_value_done(out, v, vlen, over, bottle, blen);
            in = 0;
        }

        /* "<token>[ \t]*:" */

        for (n = 0; n < l.len; n++) {
            if (!((l.s[n] >= 'A' && l.s[n] <= 'Z')
                  || (l.s[n] >= 'a' && l.s[n] <= 'z')
                  || (l.s[n] >= '0' && l.s[n] <= '9') || l.s[n] == '-'))
            {
                break;
            }
        }

        if (n != sizeof(GG_TRAILER_NAME) - 1
            || strncasecmp(l.s, GG_TRAILER_NAME, n) != 0)
        {
            continue;
        }

        for (i = n; i < l.len && (l.s[i] == ' ' || l.s[i] == '\t'); i++) {
            /* void */
        }

        if (i == l.len || l.s[i] != ':') {
            continue;
        }

        in = 1;
        over = 0;
        vlen = 0;
        s = l.s + i + 1;
        gg_value_add(v, &vlen, &over, s, l.len - i - 1);
    }

    if (in) {
        gg_value_done(out, v, vlen, over, bottle, blen);
    }
}
