/*
 * bottlectl audit tail [-f] [--bottle B] [-n N]: the last N events of the
 * audit journal (the bottle:audit stream, field "event"), oldest first,
 * one JSON object per line; -f then follows the stream with a blocking
 * XREAD until interrupted.
 *
 * The newest entries are read backwards in batches (XREVRANGE with an
 * exclusive end) until N of them matched --bottle or the stream ends.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bottlectl.h"
#include "bottlectl_chain.h"


#define BOTTLECTL_AUDIT_BATCH  256
#define BOTTLECTL_ID_LEN       48      /* "<ms>-<seq>", two 64-bit numbers */


typedef struct {
    const char         *bottle;     /* --bottle, or NULL */
    unsigned long       n;          /* -n */
    int                 follow;     /* -f */
    char                last[BOTTLECTL_ID_LEN];   /* newest id seen */
    char              **events;     /* matched, newest first */
    size_t              nevents;
} bottlectl_tail_t;


static int bottlectl_tail_args(bottlectl_tail_t *t, int argc, char **argv);
static int bottlectl_tail_backlog(bottlectl_t *ctl, bottlectl_tail_t *t);
static int bottlectl_tail_follow(bottlectl_t *ctl, bottlectl_tail_t *t);
static int bottlectl_entry(const redisReply *e, const char *bottle,
    char **out);
static int bottlectl_print(const char *event);
static void bottlectl_on_signal(int signo);


int
bottlectl_audit(bottlectl_t *ctl, int argc, char **argv)
{
    int               rc;
    size_t            i;
    bottlectl_tail_t  t;

    memset(&t, 0, sizeof(t));

    if (argc >= 2 && strcmp(argv[1], "verify") == 0) {
        return bottlectl_audit_verify(ctl, argc, argv);
    }

    if (argc >= 2 && strcmp(argv[1], "forward") == 0) {
        return bottlectl_audit_forward(ctl, argc, argv);
    }

    rc = bottlectl_tail_args(&t, argc, argv);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    /* a reader gone (| head) or ^C is the normal end, not an error */

    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, bottlectl_on_signal);
    signal(SIGTERM, bottlectl_on_signal);

    rc = bottlectl_tail_backlog(ctl, &t);

    for (i = t.nevents; rc == BOTTLECTL_OK && i > 0; i--) {
        if (bottlectl_print(t.events[i - 1]) != 0) {
            t.follow = 0;
            break;
        }
    }

    for (i = 0; i < t.nevents; i++) {
        free(t.events[i]);
    }

    free(t.events);

    if (rc == BOTTLECTL_OK && t.follow) {
        rc = bottlectl_tail_follow(ctl, &t);
    }

    return rc;
}


static int
bottlectl_tail_args(bottlectl_tail_t *t, int argc, char **argv)
{
    int          i, is_bottle;
    char        *end;
    const char  *v;

    static const char  usage[] =
        "audit tail [-f] [--bottle BOTTLE] [-n N] | audit verify ... | "
        "audit forward ...";

    t->n = 10;

    if (argc < 2 || strcmp(argv[1], "tail") != 0) {
        return bottlectl_usage(usage);
    }

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0) {
            t->follow = 1;
            continue;
        }

        is_bottle = strncmp(argv[i], "--bottle", 8) == 0;

        if (strcmp(argv[i], "--bottle") == 0 || strcmp(argv[i], "-n") == 0) {
            if (i + 1 >= argc) {
                return bottlectl_usage(usage);
            }
            v = argv[++i];

        } else if (strncmp(argv[i], "--bottle=", 9) == 0) {
            v = argv[i] + 9;

        } else if (strncmp(argv[i], "-n", 2) == 0) {
            v = argv[i] + 2;

        } else {
            bottlectl_error("unknown option '%s'", argv[i]);
            return bottlectl_usage(usage);
        }

        if (is_bottle) {
            t->bottle = v;
            continue;
        }

        errno = 0;
        t->n = strtoul(v, &end, 10);

        if (*v < '0' || *v > '9' || *end != '\0' || errno != 0
            || t->n > 1000000)
        {
            bottlectl_error("invalid -n '%s': a number up to 1000000", v);
            return BOTTLECTL_USAGE;
        }
    }

    return BOTTLECTL_OK;
}


/* XREVRANGE bottle:audit <end> - COUNT batch, until n matched */

static int
bottlectl_tail_backlog(bottlectl_t *ctl, bottlectl_tail_t *t)
{
    int           rc;
    char          end[BOTTLECTL_ID_LEN + 1], count[32], *event;
    size_t        i;
    const char   *argv[6];
    redisReply   *r, *e;

    t->events = calloc(t->n ? t->n : 1, sizeof(char *));
    if (t->events == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    strcpy(end, "+");
    strcpy(t->last, "0-0");

    snprintf(count, sizeof(count), "%lu",
             t->bottle || t->n > BOTTLECTL_AUDIT_BATCH
             ? (unsigned long) BOTTLECTL_AUDIT_BATCH : (t->n ? t->n : 1));

    while (t->nevents < t->n || strcmp(t->last, "0-0") == 0) {
        argv[0] = "XREVRANGE";
        argv[1] = BOTTLE_STORE_AUDIT;
        argv[2] = end;
        argv[3] = "-";
        argv[4] = "COUNT";
        argv[5] = count;

        rc = bottlectl_command(ctl, &r, 6, argv, NULL);
        if (rc != BOTTLECTL_OK) {
            return rc;
        }

        if (r->type != REDIS_REPLY_ARRAY) {
            bottlectl_error("cannot read %s: %s", BOTTLE_STORE_AUDIT,
                            r->type == REDIS_REPLY_ERROR ? r->str
                                                         : "not a stream");
            freeReplyObject(r);
            return BOTTLECTL_REFUSED;
        }

        for (i = 0; i < r->elements; i++) {
            e = r->element[i];

            if (e->type != REDIS_REPLY_ARRAY || e->elements != 2
                || e->element[0]->type != REDIS_REPLY_STRING
                || e->element[0]->len >= BOTTLECTL_ID_LEN)
            {
                continue;
            }

            if (strcmp(t->last, "0-0") == 0) {
                memcpy(t->last, e->element[0]->str, e->element[0]->len + 1);
            }

            snprintf(end, sizeof(end), "(%s", e->element[0]->str);

            if (t->nevents < t->n
                && bottlectl_entry(e, t->bottle, &event) == 0)
            {
                t->events[t->nevents++] = event;
            }
        }

        i = r->elements;
        freeReplyObject(r);

        if (i < (size_t) atoi(count)) {
            break;                  /* the stream's beginning */
        }
    }

    return BOTTLECTL_OK;
}


/* XREAD BLOCK 0 STREAMS bottle:audit <last>, forever */

static int
bottlectl_tail_follow(bottlectl_t *ctl, bottlectl_tail_t *t)
{
    int              rc;
    char            *event;
    size_t           i, k;
    const char      *argv[8];
    redisReply      *r, *entries, *e;
    struct timeval   tv;

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    tv.tv_sec = 0;
    tv.tv_usec = 0;

    if (redisSetTimeout(ctl->redis, tv) != REDIS_OK) {
        return bottlectl_lost(ctl);
    }

    for ( ;; ) {
        argv[0] = "XREAD";
        argv[1] = "COUNT";
        argv[2] = "256";
        argv[3] = "BLOCK";
        argv[4] = "0";
        argv[5] = "STREAMS";
        argv[6] = BOTTLE_STORE_AUDIT;
        argv[7] = t->last;

        rc = bottlectl_command(ctl, &r, 8, argv, NULL);
        if (rc != BOTTLECTL_OK) {
            return rc;
        }

        if (r->type == REDIS_REPLY_ERROR) {
            bottlectl_error("cannot read %s: %s", BOTTLE_STORE_AUDIT, r->str);
            freeReplyObject(r);
            return BOTTLECTL_REFUSED;
        }

        /* [[key, [[id, [field, value, ...]], ...]]] */

        for (k = 0; r->type == REDIS_REPLY_ARRAY && k < r->elements; k++) {
            if (r->element[k]->type != REDIS_REPLY_ARRAY
                || r->element[k]->elements != 2)
            {
                continue;
            }

            entries = r->element[k]->element[1];

            for (i = 0; entries->type == REDIS_REPLY_ARRAY
                        && i < entries->elements; i++)
            {
                e = entries->element[i];

                if (e->type != REDIS_REPLY_ARRAY || e->elements != 2
                    || e->element[0]->type != REDIS_REPLY_STRING
                    || e->element[0]->len >= BOTTLECTL_ID_LEN)
                {
                    continue;
                }

                memcpy(t->last, e->element[0]->str, e->element[0]->len + 1);

                if (bottlectl_entry(e, t->bottle, &event) != 0) {
                    continue;
                }

                rc = bottlectl_print(event);
                free(event);

                if (rc != 0) {
                    freeReplyObject(r);
                    return BOTTLECTL_OK;
                }
            }
        }

        freeReplyObject(r);
    }
}


/*
 * The event of an entry [id, [field, value, ...]] if it has one and it is
 * the bottle's (when a bottle is asked for): 0 and a new string, on one
 * line; else -1.
 */

static int
bottlectl_entry(const redisReply *e, const char *bottle, char **out)
{
    size_t              i;
    json_t             *root;
    const char         *who;
    json_error_t        jerr;
    const redisReply   *f, *event;

    *out = NULL;
    f = e->element[1];
    event = NULL;

    for (i = 0; f->type == REDIS_REPLY_ARRAY && i + 1 < f->elements; i += 2) {
        if (f->element[i]->type == REDIS_REPLY_STRING
            && strcmp(f->element[i]->str, "event") == 0
            && f->element[i + 1]->type == REDIS_REPLY_STRING)
        {
            event = f->element[i + 1];
            break;
        }
    }

    if (event == NULL) {
        return -1;
    }

    if (bottle == NULL && memchr(event->str, '\n', event->len) == NULL) {
        *out = strdup(event->str);
        return *out ? 0 : -1;
    }

    root = json_loadb(event->str, event->len, 0, &jerr);
    if (root == NULL) {
        if (bottle) {
            return -1;
        }
        *out = strdup(event->str);
        return *out ? 0 : -1;
    }

    who = json_string_value(json_object_get(root, "bottle"));

    if (bottle == NULL || (who && strcmp(who, bottle) == 0)) {
        *out = memchr(event->str, '\n', event->len)
               ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER)
               : strdup(event->str);
    }

    json_decref(root);

    return *out ? 0 : -1;
}


/* one line, flushed; -1 when nobody reads any more */

static int
bottlectl_print(const char *event)
{
    if (printf("%s\n", event) < 0 || fflush(stdout) != 0) {
        return -1;
    }

    return 0;
}


static void
bottlectl_on_signal(int signo)
{
    (void) signo;

    /* every line printed was flushed: nothing is lost */
    _exit(BOTTLECTL_OK);
}
