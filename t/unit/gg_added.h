/*
 * The added lines gg_match_lines() left in c->add and c->lines, one entry
 * a line (an entry of c->lines is a run of consecutive lines): for the
 * git-gate unit tests and fuzz target that check each against the new
 * file.  The numbers are c->lines' (gg_lines_number() first).
 */

#ifndef GG_ADDED_H
#define GG_ADDED_H

#include <stdlib.h>

#include "gg_scan_int.h"


typedef struct {
    size_t       ln;        /* in the new file */
    const char  *p;         /* in c->add, newline included */
    size_t       len;
    int          ctx;       /* a context line, not added */
} gg_added_line_t;


/* every line of c->add, *n of them (free() the array), NULL out of
 * memory */
static inline gg_added_line_t *
gg_added_lines(const gg_ctx_t *c, size_t *n)
{
    size_t            k, i, from, to, e, ln;
    gg_added_line_t  *a;

    /* at most a line a newline, and one more an entry */
    for (i = 0, k = c->nlines; i < c->add.len; i++) {
        k += c->add.data[i] == '\n';
    }
    a = malloc((k + 1) * sizeof(*a));
    if (a == NULL) {
        return NULL;
    }
    *n = 0;
    for (k = 0; k < c->nlines; k++) {
        from = (size_t) c->lines[k].off;
        to = k + 1 < c->nlines ? (size_t) c->lines[k + 1].off : c->add.len;
        ln = c->lines[k].lineno;
        while (from < to) {
            e = from;
            while (e < to && c->add.data[e] != '\n') {
                e++;
            }
            if (e < to) {
                e++;
            }
            a[*n].ln = ln++;
            a[*n].p = c->add.data + from;
            a[*n].len = e - from;
            a[*n].ctx = c->lines[k].ctx;
            (*n)++;
            from = e;
        }
    }
    return a;
}

#endif /* GG_ADDED_H */
