/*
 * bottlectl firehose [--bottle B] [-n N]: a firehose consumer
 * (docs/firehose.md).  It subscribes to the bottle:firehose channel, which
 * is what tells every gateway that someone listens (they ask Redis once a
 * second), and prints each OCSF record as it comes, one JSON object per
 * line; --bottle keeps one bottle's (unmapped.bottle), -n stops after N.
 * A message carries one record or several, a newline between them (a
 * gateway worker's batch, docs/firehose.md); each is printed as a line,
 * and a message's lines are written at once.
 * The stream is lossy: what was published before it subscribed, or while
 * it was too slow for Redis's output buffer limits, is not seen.
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
#include "bottle_record.h"


typedef struct {
    const char         *bottle;     /* --bottle, or NULL */
    unsigned long       n;          /* -n, 0: until interrupted */
} bottlectl_firehose_t;


static int bottlectl_firehose_args(bottlectl_firehose_t *f, int argc,
    char **argv);
static int bottlectl_firehose_keep(const char *rec, size_t len,
    const char *bottle);
static void bottlectl_firehose_signal(int signo);


int
bottlectl_firehose(bottlectl_t *ctl, int argc, char **argv)
{
    int                   rc;
    void                 *reply;
    size_t                len;
    redisReply           *r, *p;
    const char           *args[2], *rec, *end, *nl;
    unsigned long         printed;
    sigset_t              stop, was;
    struct timeval        tv;
    bottlectl_firehose_t  f;

    memset(&f, 0, sizeof(f));

    rc = bottlectl_firehose_args(&f, argc, argv);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, bottlectl_firehose_signal);
    signal(SIGTERM, bottlectl_firehose_signal);

    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    tv.tv_sec = 0;
    tv.tv_usec = 0;

    if (redisSetTimeout(ctl->redis, tv) != REDIS_OK) {
        return bottlectl_lost(ctl);
    }

    args[0] = "SUBSCRIBE";
    args[1] = BOTTLE_RECORD_FIREHOSE_CHANNEL;

    rc = bottlectl_command(ctl, &r, 2, args, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type == REDIS_REPLY_ERROR) {
        bottlectl_error("cannot subscribe to %s: %s",
                        BOTTLE_RECORD_FIREHOSE_CHANNEL, r->str);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    freeReplyObject(r);

    for (printed = 0; f.n == 0 || printed < f.n; /* void */) {
        if (redisGetReply(ctl->redis, &reply) != REDIS_OK || reply == NULL) {
            return bottlectl_lost(ctl);
        }

        r = reply;

        /* a message's lines all printed before a signal stops us */
        sigprocmask(SIG_BLOCK, &stop, &was);

        /* ["message", channel, payload] */

        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3
            && r->element[0]->type == REDIS_REPLY_STRING
            && strcmp(r->element[0]->str, "message") == 0
            && r->element[2]->type == REDIS_REPLY_STRING)
        {
            p = r->element[2];
            end = p->str + p->len;

            for (rec = p->str;
                 rec < end && (f.n == 0 || printed < f.n);
                 rec = nl + 1)
            {
                nl = memchr(rec, '\n', end - rec);
                if (nl == NULL) {
                    nl = end;
                }

                len = nl - rec;

                if (bottlectl_firehose_keep(rec, len, f.bottle)) {
                    if (fwrite(rec, 1, len, stdout) != len
                        || putchar('\n') == EOF)
                    {
                        freeReplyObject(r);
                        return BOTTLECTL_OK;
                    }

                    printed++;
                }
            }
        }

        freeReplyObject(r);

        if (fflush(stdout) != 0) {
            return BOTTLECTL_OK;
        }

        sigprocmask(SIG_SETMASK, &was, NULL);
    }

    return BOTTLECTL_OK;
}


static int
bottlectl_firehose_args(bottlectl_firehose_t *f, int argc, char **argv)
{
    int          i;
    char        *end;
    const char  *v;

    static const char  usage[] = "firehose [--bottle BOTTLE] [-n N]";

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bottle") == 0 || strcmp(argv[i], "-n") == 0) {
            if (i + 1 >= argc) {
                return bottlectl_usage(usage);
            }
            v = argv[i + 1];

        } else if (strncmp(argv[i], "--bottle=", 9) == 0) {
            f->bottle = argv[i] + 9;
            continue;

        } else {
            bottlectl_error("unknown option '%s'", argv[i]);
            return bottlectl_usage(usage);
        }

        if (argv[i][1] == '-') {
            f->bottle = v;
            i++;
            continue;
        }

        i++;
        errno = 0;
        f->n = strtoul(v, &end, 10);

        if (*v < '1' || *v > '9' || *end != '\0' || errno != 0) {
            bottlectl_error("invalid -n '%s': a positive number", v);
            return BOTTLECTL_USAGE;
        }
    }

    return BOTTLECTL_OK;
}


/* the record is not empty, and the bottle's when one is asked for */

static int
bottlectl_firehose_keep(const char *rec, size_t len, const char *bottle)
{
    int            keep;
    json_t        *root;
    const char    *who;
    json_error_t   jerr;

    if (len == 0) {
        return 0;
    }

    if (bottle == NULL) {
        return 1;
    }

    root = json_loadb(rec, len, 0, &jerr);
    if (root == NULL) {
        return 0;
    }

    who = json_string_value(json_object_get(json_object_get(root, "unmapped"),
                                            "bottle"));
    keep = (who != NULL && strcmp(who, bottle) == 0);

    json_decref(root);

    return keep;
}


static void
bottlectl_firehose_signal(int signo)
{
    (void) signo;

    /* every line printed was flushed (signals wait while a message's
     * lines are printed): nothing is lost */
    _exit(BOTTLECTL_OK);
}
