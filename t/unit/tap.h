/*
 * Minimal TAP producer for the C unit tests: prove runs them like any .t.
 * ok(cond, fmt, ...) prints "ok N - ..." or "not ok N - ...";
 * done_testing() prints the plan and returns the exit status.
 */
#ifndef TAP_H
#define TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static void
tap_report(int pass, const char *file, int line, const char *fmt, ...)
{
    va_list  ap;

    tap_n++;
    if (!pass) {
        tap_failed++;
    }
    printf("%sok %d - ", pass ? "" : "not ", tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    if (!pass) {
        printf("#   failed at %s line %d\n", file, line);
    }
    fflush(stdout);
}

#define ok(cond, ...)  tap_report(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...)                                               \
    do {                                                                     \
        long long g_ = (long long) (got), w_ = (long long) (want);          \
        ok(g_ == w_, __VA_ARGS__);                                           \
        if (g_ != w_) printf("#   got %lld, want %lld\n", g_, w_);          \
    } while (0)
#define is_str(got, want, ...)                                               \
    do {                                                                     \
        const char *g_ = (got), *w_ = (want);                               \
        int p_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_;               \
        ok(p_, __VA_ARGS__);                                                 \
        if (!p_) printf("#   got '%s', want '%s'\n", g_ ? g_ : "(null)",    \
                        w_ ? w_ : "(null)");                                 \
    } while (0)

static int
done_testing(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif /* TAP_H */
