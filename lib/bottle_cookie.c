/*
 * Cookie headers: the agent's Cookie filtered through a callback, and one
 * Set-Cookie read; see bottle_cookie.h.
 */

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "bottle_cookie.h"


/*
 * The names written so far, by the offset of their pair in the output: an
 * open-addressing table on the stack, so that asking whether a name was
 * written costs its length, not a scan of the output (the jar asks under
 * its shared lock, once per pair of a header the agent may fill with
 * thousands).  Beyond BOTTLE_COOKIE_SEEN_FILL names the table is full and
 * the output is scanned instead: a jar keeps at most 256 names a host.
 */
#define BOTTLE_COOKIE_SEEN       512
#define BOTTLE_COOKIE_SEEN_FILL  384

typedef struct {
    uint32_t  off[BOTTLE_COOKIE_SEEN];    /* offset + 1; 0: empty */
    size_t    n;
} bottle_cookie_seen_t;


static void bottle_cookie_trim(const unsigned char **b,
    const unsigned char **e);
static uint32_t bottle_cookie_hash(const unsigned char *name, size_t len);
static int bottle_cookie_seen(bottle_cookie_seen_t *seen,
    const unsigned char *out, size_t len, const unsigned char *name,
    size_t name_len, int add, size_t at);
static int bottle_cookie_written(const unsigned char *out, size_t len,
    const unsigned char *name, size_t name_len);
static int bottle_cookie_pair(const unsigned char *p,
    const unsigned char *end, bottle_cookie_str_t *name,
    bottle_cookie_str_t *value);
static int bottle_cookie_max_age(const unsigned char *p, size_t len,
    long long *out);
static int bottle_cookie_attr_is(const unsigned char *a, size_t len,
    const char *lower);


size_t
bottle_cookie_filter_bound(size_t len)
{
    return len > SIZE_MAX / 2 ? 0 : 2 * len;
}


ssize_t
bottle_cookie_filter(unsigned char *out, size_t cap,
    const bottle_cookie_str_t *in, size_t n, bottle_cookie_keep_pt keep,
    void *data)
{
    size_t                i, o, need;
    const unsigned char  *p, *last, *semi;
    bottle_cookie_str_t   name, value;
    bottle_cookie_seen_t  seen;

    o = 0;

    /* offsets are kept in 32 bits: a larger output is only scanned */
    memset(&seen, 0, sizeof(seen));
    seen.n = cap > UINT32_MAX ? BOTTLE_COOKIE_SEEN_FILL : 0;

    for (i = 0; i < n; i++) {
        if (in[i].len == 0) {
            continue;
        }

        p = in[i].data;
        last = p + in[i].len;

        for ( /* void */ ; p < last; p = semi + 1) {
            semi = memchr(p, ';', (size_t) (last - p));
            if (semi == NULL) {
                semi = last;
            }

            if (bottle_cookie_pair(p, semi, &name, &value) != 0
                || bottle_cookie_seen(&seen, out, o, name.data, name.len, 0,
                                      0)
                || !keep(data, name.data, name.len, value.data, value.len))
            {
                continue;
            }

            /* checked before every write, whatever the bound says */

            need = (o ? 2 : 0) + name.len + 1 + value.len;

            if (need > cap - o) {
                return BOTTLE_COOKIE_E_SPACE;
            }

            if (o) {
                out[o++] = ';';
                out[o++] = ' ';
            }

            bottle_cookie_seen(&seen, out, o, name.data, name.len, 1, o);

            memcpy(out + o, name.data, name.len);
            o += name.len;
            out[o++] = '=';

            if (value.len) {
                memcpy(out + o, value.data, value.len);
                o += value.len;
            }
        }
    }

    return (ssize_t) o;
}


/* the pair between p and end; -1: none (no '=', or an empty name) */

static int
bottle_cookie_pair(const unsigned char *p, const unsigned char *end,
    bottle_cookie_str_t *name, bottle_cookie_str_t *value)
{
    const unsigned char  *eq, *nb, *ne, *vb, *ve;

    eq = memchr(p, '=', (size_t) (end - p));
    if (eq == NULL) {
        return -1;
    }

    nb = p;
    ne = eq;
    bottle_cookie_trim(&nb, &ne);

    if (nb == ne) {
        return -1;
    }

    vb = eq + 1;
    ve = end;
    bottle_cookie_trim(&vb, &ve);

    name->data = nb;
    name->len = (size_t) (ne - nb);
    value->data = vb;
    value->len = (size_t) (ve - vb);

    return 0;
}


static void
bottle_cookie_trim(const unsigned char **b, const unsigned char **e)
{
    while (*b < *e && (**b == ' ' || **b == '\t')) {
        (*b)++;
    }

    while (*e > *b && ((*e)[-1] == ' ' || (*e)[-1] == '\t')) {
        (*e)--;
    }
}


/*
 * Whether the name was written; add: remember that its pair starts at
 * `at` (the caller has checked it was not written).
 */

static int
bottle_cookie_seen(bottle_cookie_seen_t *seen, const unsigned char *out,
    size_t len, const unsigned char *name, size_t name_len, int add,
    size_t at)
{
    size_t                i;
    uint32_t              h;
    const unsigned char  *p;

    if (seen->n >= BOTTLE_COOKIE_SEEN_FILL) {
        return add ? 0 : bottle_cookie_written(out, len, name, name_len);
    }

    h = bottle_cookie_hash(name, name_len);

    for (i = h % BOTTLE_COOKIE_SEEN; seen->off[i];
         i = (i + 1) % BOTTLE_COOKIE_SEEN)
    {
        p = out + seen->off[i] - 1;

        /* a written name is followed by its '=' */
        if (!add && (size_t) (seen->off[i] - 1) + name_len < len
            && p[name_len] == '=' && memcmp(p, name, name_len) == 0)
        {
            return 1;
        }
    }

    if (add) {
        seen->off[i] = (uint32_t) at + 1;
        seen->n++;
    }

    return 0;
}


/* FNV-1a */

static uint32_t
bottle_cookie_hash(const unsigned char *name, size_t len)
{
    size_t    i;
    uint32_t  h;

    h = 2166136261u;

    for (i = 0; i < len; i++) {
        h = (h ^ name[i]) * 16777619u;
    }

    return h;
}


/*
 * Whether out[0..len), pairs bottle_cookie_filter() wrote, has this name:
 * a written name ends at the first '=' of its pair and a written pair at
 * the next ';', since neither a name nor a value can hold a ';'.
 */

static int
bottle_cookie_written(const unsigned char *out, size_t len,
    const unsigned char *name, size_t name_len)
{
    const unsigned char  *p, *last, *eq, *semi;

    p = out;
    last = out + len;

    while (p < last) {
        eq = memchr(p, '=', (size_t) (last - p));
        if (eq == NULL) {
            return 0;
        }

        if ((size_t) (eq - p) == name_len && memcmp(p, name, name_len) == 0) {
            return 1;
        }

        semi = memchr(eq, ';', (size_t) (last - eq));
        if (semi == NULL) {
            return 0;
        }

        p = semi + 2;
    }

    return 0;
}


int
bottle_cookie_set_parse(bottle_cookie_set_t *out, const unsigned char *in,
    size_t len)
{
    long long             age;
    const unsigned char  *last, *semi, *a, *ae, *eq, *vb, *ve;

    memset(out, 0, sizeof(*out));

    if (len == 0) {
        return -1;
    }

    last = in + len;

    semi = memchr(in, ';', len);
    if (semi == NULL) {
        semi = last;
    }

    if (bottle_cookie_pair(in, semi, &out->name, &out->value) != 0) {
        return -1;
    }

    for (a = semi; a < last; a = ae) {
        a++;

        ae = memchr(a, ';', (size_t) (last - a));
        if (ae == NULL) {
            ae = last;
        }

        eq = memchr(a, '=', (size_t) (ae - a));
        if (eq == NULL) {
            continue;
        }

        vb = eq + 1;
        ve = ae;
        bottle_cookie_trim(&vb, &ve);

        if (bottle_cookie_attr_is(a, (size_t) (eq - a), "max-age")) {
            if (bottle_cookie_max_age(vb, (size_t) (ve - vb), &age) == 0) {
                out->has_max_age = 1;
                out->max_age = age;
            }

        } else if (bottle_cookie_attr_is(a, (size_t) (eq - a), "expires")) {
            out->expires.data = vb;
            out->expires.len = (size_t) (ve - vb);
        }
    }

    return 0;
}


/* the attribute name a[0..len), spaces around it ignored, is lower */

static int
bottle_cookie_attr_is(const unsigned char *a, size_t len, const char *lower)
{
    size_t                i, n;
    unsigned char         c;
    const unsigned char  *e;

    e = a + len;
    bottle_cookie_trim(&a, &e);

    n = strlen(lower);

    if ((size_t) (e - a) != n) {
        return 0;
    }

    for (i = 0; i < n; i++) {
        c = (a[i] >= 'A' && a[i] <= 'Z') ? (unsigned char) (a[i] | 0x20)
                                         : a[i];
        if (c != (unsigned char) lower[i]) {
            return 0;
        }
    }

    return 1;
}


/* RFC 6265 5.2.2: an optional '-', then digits only; capped */

static int
bottle_cookie_max_age(const unsigned char *p, size_t len, long long *out)
{
    int        neg;
    size_t     i;
    long long  v;

    neg = (len && p[0] == '-');
    i = neg ? 1 : 0;

    if (i == len) {
        return -1;
    }

    v = 0;

    for ( /* void */ ; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return -1;
        }

        if (v <= BOTTLE_COOKIE_MAX_AGE) {
            v = v * 10 + (p[i] - '0');
        }
    }

    if (v > BOTTLE_COOKIE_MAX_AGE) {
        v = BOTTLE_COOKIE_MAX_AGE;
    }

    *out = neg ? -v : v;

    return 0;
}
