/*
 * git-gate's push scanner: the scan context's own services, below every
 * file that scans (gg_field.c, gg_view.c, gg_decode.c, gg_scan.c): its
 * growing buffers (gg_buf_add()), the runs of the added lines being
 * gathered (gg_line_at()) and the push's budget (gg_budget():
 * GITGATE_SCAN_TIMEOUT, GITGATE_SCAN_MEMORY_MB).  It calls nothing of
 * theirs.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "gg_scan_int.h"


/* buffers */

int
gg_buf_add(gg_buf_t *b, const void *data, size_t len)
{
    char    *p;
    size_t   cap;

    if (b->len + len > b->cap) {
        cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len) {
            cap *= 2;
        }
        p = realloc(b->data, cap);
        if (p == NULL) {
            return -1;
        }
        b->data = p;
        b->cap = cap;
    }

    if (len && data) {
        memcpy(b->data + b->len, data, len);
    }
    b->len += len;
    return 0;
}


int
gg_line_at(gg_ctx_t *c, uint64_t pos, int ctx)
{
    gg_line_t  *l;
    size_t      cap;

    if (c->nlines == c->lcap) {
        cap = c->lcap ? c->lcap * 2 : 1024;
        l = realloc(c->lines, cap * sizeof(*l));
        if (l == NULL) {
            return -1;
        }
        c->lines = l;
        c->lcap = cap;
    }

    c->lines[c->nlines].off = c->add.len;
    c->lines[c->nlines].pos = pos;
    c->lines[c->nlines].lineno = 0;
    c->lines[c->nlines].ctx = ctx;
    c->nlines++;
    return 0;
}


/* the budget */

static uint64_t
gg_now_ms(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}


static uint64_t
gg_peak_kb(void)
{
    struct rusage  ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0;
    }
    return (uint64_t) ru.ru_maxrss;
}


void
gg_budget_start(gg_ctx_t *c)
{
    c->t0 = gg_now_ms();
    c->rss0 = gg_peak_kb();
}


int
gg_budget(gg_ctx_t *c)
{
    uint64_t  now, peak;

    if (c->over) {
        return -1;
    }

    if (c->time_ms == 0 && c->mem_kb == 0) {
        return 0;
    }

    now = gg_now_ms();

    if (c->time_ms) {
        if (now - c->t0 > c->time_ms) {
            c->over = 1;
            snprintf(c->budget_why, sizeof(c->budget_why), "the scan ran "
                     "over its time budget of %llu.%03llu s "
                     "(GITGATE_SCAN_TIMEOUT) at %s%s%s",
                     (unsigned long long) (c->time_ms / 1000),
                     (unsigned long long) (c->time_ms % 1000),
                     c->obj_kind, *c->obj ? " " : "", c->obj);
        }
    }

    /* getrusage() is a system call: at most once a millisecond (a field
     * of a few bytes after another), and after any longer field */
    if (!c->over && c->mem_kb && now != c->mem_at) {
        c->mem_at = now;
        peak = gg_peak_kb();
        if (peak > c->rss0 && peak - c->rss0 > c->mem_kb) {
            c->over = 1;
            snprintf(c->budget_why, sizeof(c->budget_why), "the scan ran "
                     "over its memory budget of %llu MB "
                     "(GITGATE_SCAN_MEMORY_MB) at %s%s%s: %llu MB",
                     (unsigned long long) (c->mem_kb >> 10), c->obj_kind,
                     *c->obj ? " " : "", c->obj,
                     (unsigned long long) ((peak - c->rss0) >> 10));
        }
    }

    if (c->over) {
        snprintf(c->err, c->errlen, "%s", c->budget_why);
        return -1;
    }
    return 0;
}
