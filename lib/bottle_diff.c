/*
 * A unified line diff (bottle_diff.h): split into lines, take off the
 * common head and tail, match the middle by a bounded LCS table, then
 * print hunks with three lines of context.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "bottle_diff.h"


typedef struct {
    const char         *data;
    size_t              len;
} bottle_line_t;

typedef struct {
    char                op;         /* ' ', '-', '+' */
    size_t              ai;         /* a's line at this op */
    size_t              bi;         /* b's line at this op */
} bottle_diff_op_t;

typedef struct {
    char               *data;
    size_t              len;
    size_t              cap;
    int                 failed;
} bottle_diff_buf_t;


static int bottle_diff_split(bottle_line_t **out, size_t *n, const char *s,
    size_t len);
static int bottle_diff_eq(const bottle_line_t *a, const bottle_line_t *b);
static int bottle_diff_ops(bottle_diff_op_t *ops, size_t *nops,
    const bottle_line_t *a, size_t na, const bottle_line_t *b, size_t nb);
static void bottle_diff_hunks(bottle_diff_buf_t *buf,
    const bottle_diff_op_t *ops, size_t nops, const bottle_line_t *a,
    const bottle_line_t *b);
static void bottle_diff_put(bottle_diff_buf_t *buf, const char *s,
    size_t len);


int
bottle_diff(char **out, size_t *len, const char *a, size_t alen,
    const char *b, size_t blen, const char *label_a, const char *label_b)
{
    int                 rc;
    size_t              na, nb, nops, i;
    bottle_line_t      *la, *lb;
    bottle_diff_op_t   *ops;
    bottle_diff_buf_t   buf;

    *out = NULL;
    *len = 0;
    la = NULL;
    lb = NULL;
    ops = NULL;
    rc = -1;

    memset(&buf, 0, sizeof(buf));

    if (bottle_diff_split(&la, &na, a, alen) != 0
        || bottle_diff_split(&lb, &nb, b, blen) != 0)
    {
        goto cleanup;
    }

    ops = malloc((na + nb + 1) * sizeof(bottle_diff_op_t));
    if (ops == NULL) {
        goto cleanup;
    }

    if (bottle_diff_ops(ops, &nops, la, na, lb, nb) != 0) {
        goto cleanup;
    }

    for (i = 0; i < nops && ops[i].op == ' '; i++) {
        /* void */
    }

    if (i < nops) {
        bottle_diff_put(&buf, "--- ", 4);
        bottle_diff_put(&buf, label_a, strlen(label_a));
        bottle_diff_put(&buf, "\n+++ ", 5);
        bottle_diff_put(&buf, label_b, strlen(label_b));
        bottle_diff_put(&buf, "\n", 1);
        bottle_diff_hunks(&buf, ops, nops, la, lb);
    }

    bottle_diff_put(&buf, "", 1);       /* the NUL */

    if (buf.failed) {
        goto cleanup;
    }

    *out = buf.data;
    *len = buf.len - 1;
    buf.data = NULL;
    rc = 0;

cleanup:

    free(buf.data);
    free(ops);
    free(la);
    free(lb);

    return rc;
}


static int
bottle_diff_split(bottle_line_t **out, size_t *n, const char *s, size_t len)
{
    size_t          i, k, start;
    bottle_line_t  *l;

    k = 0;
    for (i = 0; i < len; i++) {
        k += s[i] == '\n';
    }

    l = malloc((k + 2) * sizeof(bottle_line_t));
    if (l == NULL) {
        return -1;
    }

    k = 0;
    start = 0;

    for (i = 0; i < len; i++) {
        if (s[i] == '\n') {
            l[k].data = s + start;
            l[k++].len = i - start;
            start = i + 1;
        }
    }

    if (start < len) {
        l[k].data = s + start;
        l[k++].len = len - start;
    }

    *out = l;
    *n = k;

    return 0;
}


static int
bottle_diff_eq(const bottle_line_t *a, const bottle_line_t *b)
{
    return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}


/*
 * The edit script: the common head, the middle (LCS when the table is
 * small enough, else all of a's removed then all of b's added), the
 * common tail.
 */

static int
bottle_diff_ops(bottle_diff_op_t *ops, size_t *nops, const bottle_line_t *a,
    size_t na, const bottle_line_t *b, size_t nb)
{
    size_t     head, tail, ma, mb, i, j, k, w;
    uint32_t  *t;

    head = 0;
    while (head < na && head < nb && bottle_diff_eq(&a[head], &b[head])) {
        head++;
    }

    tail = 0;
    while (tail < na - head && tail < nb - head
           && bottle_diff_eq(&a[na - 1 - tail], &b[nb - 1 - tail]))
    {
        tail++;
    }

    ma = na - head - tail;
    mb = nb - head - tail;
    k = 0;

    for (i = 0; i < head; i++) {
        ops[k].op = ' '; ops[k].ai = i; ops[k++].bi = i;
    }

    t = NULL;
    w = mb + 1;

    if (ma && mb && (ma + 1) <= BOTTLE_DIFF_CELLS_MAX / w) {
        t = calloc((ma + 1) * w, sizeof(uint32_t));
        if (t == NULL) {
            return -1;
        }

        /* t[i][j]: the LCS of a's middle from i and b's from j */

        for (i = ma; i-- > 0; ) {
            for (j = mb; j-- > 0; ) {
                if (bottle_diff_eq(&a[head + i], &b[head + j])) {
                    t[i * w + j] = t[(i + 1) * w + j + 1] + 1;

                } else {
                    t[i * w + j] = t[(i + 1) * w + j] > t[i * w + j + 1]
                                   ? t[(i + 1) * w + j] : t[i * w + j + 1];
                }
            }
        }
    }

    i = 0;
    j = 0;

    while (t && i < ma && j < mb) {
        if (bottle_diff_eq(&a[head + i], &b[head + j])) {
            ops[k].op = ' '; ops[k].ai = head + i++; ops[k++].bi = head + j++;

        } else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) {
            ops[k].op = '-'; ops[k].ai = head + i++; ops[k++].bi = head + j;

        } else {
            ops[k].op = '+'; ops[k].ai = head + i; ops[k++].bi = head + j++;
        }
    }

    free(t);

    while (i < ma) {
        ops[k].op = '-'; ops[k].ai = head + i++; ops[k++].bi = head + j;
    }

    while (j < mb) {
        ops[k].op = '+'; ops[k].ai = head + i; ops[k++].bi = head + j++;
    }

    for (i = 0; i < tail; i++) {
        ops[k].op = ' ';
        ops[k].ai = na - tail + i;
        ops[k++].bi = nb - tail + i;
    }

    *nops = k;

    return 0;
}


/* "@@ -a,n +b,m @@" hunks: changes closer than twice the context join */

static void
bottle_diff_hunks(bottle_diff_buf_t *buf, const bottle_diff_op_t *ops,
    size_t nops, const bottle_line_t *a, const bottle_line_t *b)
{
    int                   n;
    char                  head[96];
    size_t                c, s, e, last, next, i, acount, bcount;
    const bottle_line_t  *l;

    c = 0;

    for ( ;; ) {
        while (c < nops && ops[c].op == ' ') {
            c++;
        }

        if (c == nops) {
            return;
        }

        s = c > BOTTLE_DIFF_CONTEXT ? c - BOTTLE_DIFF_CONTEXT : 0;
        last = c;

        for (next = c + 1; next < nops; next++) {
            if (ops[next].op == ' ') {
                if (next - last > 2 * BOTTLE_DIFF_CONTEXT) {
                    break;
                }
                continue;
            }
            last = next;
        }

        e = last + 1 + BOTTLE_DIFF_CONTEXT;
        if (e > nops) {
            e = nops;
        }

        acount = 0;
        bcount = 0;

        for (i = s; i < e; i++) {
            acount += ops[i].op != '+';
            bcount += ops[i].op != '-';
        }

        n = snprintf(head, sizeof(head), "@@ -%zu,%zu +%zu,%zu @@\n",
                     acount ? ops[s].ai + 1 : ops[s].ai, acount,
                     bcount ? ops[s].bi + 1 : ops[s].bi, bcount);
        bottle_diff_put(buf, head, (size_t) n);

        for (i = s; i < e; i++) {
            l = ops[i].op == '+' ? &b[ops[i].bi] : &a[ops[i].ai];
            bottle_diff_put(buf, &ops[i].op, 1);
            bottle_diff_put(buf, l->data, l->len);
            bottle_diff_put(buf, "\n", 1);
        }

        c = e;
    }
}


static void
bottle_diff_put(bottle_diff_buf_t *buf, const char *s, size_t len)
{
    char    *p;
    size_t   cap;

    if (buf->failed) {
        return;
    }

    if (buf->len + len > buf->cap) {
        cap = buf->cap ? buf->cap : 4096;
        while (cap < buf->len + len) {
            cap *= 2;
        }

        p = realloc(buf->data, cap);
        if (p == NULL) {
            buf->failed = 1;
            return;
        }

        buf->data = p;
        buf->cap = cap;
    }

    memcpy(buf->data + buf->len, s, len);
    buf->len += len;
}


size_t
bottle_diff_cut(const char *diff, size_t len, size_t max)
{
    size_t  i;

    if (len <= max) {
        return len;
    }

    for (i = max; i > 0; i--) {
        if (diff[i - 1] == '\n') {
            return i;
        }
    }

    return max;
}


int
bottle_diff_digest(char out[BOTTLE_DIFF_DIGEST_LEN], const char *diff,
    size_t len)
{
    size_t          i;
    unsigned char   md[SHA256_DIGEST_LENGTH];

    static const char  hex[] = "0123456789abcdef";

    if (SHA256((const unsigned char *) diff, len, md) == NULL) {
        return -1;
    }

    memcpy(out, "sha256:", 7);

    for (i = 0; i < 8; i++) {
        out[7 + 2 * i] = hex[md[i] >> 4];
        out[8 + 2 * i] = hex[md[i] & 0x0f];
    }

    out[23] = '\0';

    return 0;
}
