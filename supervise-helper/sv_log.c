/*
 * What every supervise-helper file may call, calling none of them: the
 * log (stderr, or --log FILE: sv_log_open()), one line a call whatever
 * the agent sent; the clock (sv_now()); the event sequence (sv_seq()).
 */

#define _POSIX_C_SOURCE  200809L

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/time.h>

#include "bottle_audit.h"
#include "supervise.h"


static FILE            *sv_log_file;    /* NULL: stderr */
static pthread_mutex_t  sv_log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t  sv_seq_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t         sv_seq_next;


int
sv_log_open(const char *file)
{
    FILE  *f;

    f = fopen(file, "a");
    if (f == NULL) {
        return -1;
    }

    setvbuf(f, NULL, _IOLBF, 0);
    sv_log_file = f;

    return 0;
}


void
sv_log_close(void)
{
    if (sv_log_file) {
        fclose(sv_log_file);
        sv_log_file = NULL;
    }
}


void
sv_log(const char *fmt, ...)
{
    char        line[2048], when[BOTTLE_AUDIT_TIME_LEN];
    size_t      i;
    va_list     ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);

    /* one line, whatever the agent sent */

    for (i = 0; line[i]; i++) {
        if ((unsigned char) line[i] < 0x20 || line[i] == 0x7f) {
            line[i] = '?';
        }
    }

    if (bottle_audit_time(when, sizeof(when), sv_now()) != 0) {
        when[0] = '\0';
    }

    pthread_mutex_lock(&sv_log_lock);
    fprintf(sv_log_file ? sv_log_file : stderr, "%s " SV_NAME ": %s\n",
            when, line);
    fflush(sv_log_file ? sv_log_file : stderr);
    pthread_mutex_unlock(&sv_log_lock);
}


uint64_t
sv_seq(void)
{
    uint64_t  n;

    pthread_mutex_lock(&sv_seq_lock);
    n = ++sv_seq_next;
    pthread_mutex_unlock(&sv_seq_lock);

    return n;
}


int64_t
sv_now(void)
{
    struct timeval  tv;

    gettimeofday(&tv, NULL);

    return (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}
