/*
 * Waiters for decisions.  A tools/call that queued a proposal suspends its
 * MHD connection (no thread waits for it); one subscriber thread, SUBSCRIBEd
 * to bottle:decisions, resumes the connection whose proposal was answered,
 * and sleeps exactly until the next waiter's deadline (woken through its
 * pipe when a waiter is added), so a wait ends when its time is up, not
 * on a polling tick.  A resumed
 * request reads the decision with the check script itself, so a message
 * is only a wake-up: a subscription lost and made again resumes every
 * waiter, and each checks the store.
 *
 * A waiter is listed before its proposal is queued, so a decision that
 * comes before the connection is suspended is not lost: it marks the
 * waiter fired, and sv_wait_suspend() answers at once.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <microhttpd.h>

#include "supervise.h"


#define SV_WAIT_RETRY_MS    1000    /* reconnect the subscriber */
#define SV_WAIT_IDLE_MS     60000   /* the longest sleep, no waiter */


static void *sv_wait_run(void *arg);
static redisContext *sv_wait_subscribe(void);
static void sv_wait_message(redisReply *m);
static void sv_wait_fire(sv_waiter_t *w);
static void sv_wait_expire(int all);
static void sv_wait_unlist(sv_waiter_t *w);
static int sv_wait_next(redisContext *c, int64_t retry);
static void sv_wait_wake(void);


static pthread_mutex_t  sv_wait_lock = PTHREAD_MUTEX_INITIALIZER;
static sv_waiter_t     *sv_waiters;
static pthread_t        sv_wait_thread;
static int              sv_wait_pipe[2] = { -1, -1 };
static int              sv_wait_running;
static volatile int     sv_wait_stopping;


int
sv_wait_start(void)
{
    if (pipe(sv_wait_pipe) != 0) {
        sv_log("failure 'pipe': %s", strerror(errno));
        return -1;
    }

    fcntl(sv_wait_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(sv_wait_pipe[1], F_SETFL, O_NONBLOCK);
    sv_wait_stopping = 0;
    sv_wait_running = 1;

    if (pthread_create(&sv_wait_thread, NULL, sv_wait_run, NULL) != 0) {
        sv_log("failure 'subscriber': cannot start its thread");
        sv_wait_running = 0;
        return -1;
    }

    return 0;
}


void
sv_wait_stop(void)
{
    if (!sv_wait_running) {
        return;
    }

    pthread_mutex_lock(&sv_wait_lock);
    sv_wait_stopping = 1;
    pthread_mutex_unlock(&sv_wait_lock);

    if (write(sv_wait_pipe[1], "x", 1) != 1 && errno != EAGAIN) {
        sv_log("failure 'subscriber': cannot wake it");
    }

    pthread_join(sv_wait_thread, NULL);
    sv_wait_running = 0;

    close(sv_wait_pipe[0]);
    close(sv_wait_pipe[1]);
}


/*
 * The subscriber: poll() on its socket and the pipe (a waiter added, or
 * stop) until the next deadline (sv_wait_next()).  hiredis's own blocking
 * read is not used: a read timeout would break its context.
 */

static void *
sv_wait_run(void *arg)
{
    int             n, lost, stop;
    char            drain[64];
    void           *reply;
    int64_t         retry;
    redisContext   *c;
    struct pollfd   pfd[2];

    (void) arg;

    c = NULL;
    retry = 0;

    for ( ;; ) {
        if (c == NULL && sv_now() >= retry) {
            c = sv_wait_subscribe();
            retry = sv_now() + SV_WAIT_RETRY_MS;

            /* whatever was published meanwhile: every waiter checks */

            if (c) {
                sv_wait_expire(1);
            }
        }

        pfd[0].fd = sv_wait_pipe[0];
        pfd[0].events = POLLIN;
        pfd[1].fd = c ? c->fd : -1;
        pfd[1].events = POLLIN;

        n = poll(pfd, 2, sv_wait_next(c, retry));

        if (n < 0 && errno != EINTR) {
            sv_log("failure 'subscriber': poll: %s", strerror(errno));
        }

        if (n > 0 && (pfd[0].revents & POLLIN)) {
            while (read(sv_wait_pipe[0], drain, sizeof(drain)) > 0) {
                /* a wake-up: the deadlines are computed again below */
            }

            pthread_mutex_lock(&sv_wait_lock);
            stop = sv_wait_stopping;
            pthread_mutex_unlock(&sv_wait_lock);

            if (stop) {
                break;
            }
        }

        lost = 0;

        if (c && n > 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            if (redisBufferRead(c) != REDIS_OK) {
                lost = 1;
            }

            while (!lost) {
                reply = NULL;
                if (redisGetReplyFromReader(c, &reply) != REDIS_OK) {
                    lost = 1;
                    break;
                }

                if (reply == NULL) {
                    break;
                }

                sv_wait_message(reply);
                freeReplyObject(reply);
            }
        }

        if (lost) {
            sv_log("failure 'subscriber': lost the store %s: %s",
                   sv_conf.store_text, c->errstr[0] ? c->errstr
                                                    : "connection lost");
            redisFree(c);
            c = NULL;
        }

        sv_wait_expire(0);
    }

    if (c) {
        redisFree(c);
    }

    return NULL;
}


/* ms until the next deadline (or the subscriber's retry), for poll() */

static int
sv_wait_next(redisContext *c, int64_t retry)
{
    int64_t       now, next;
    sv_waiter_t  *w;

    now = sv_now();
    next = now + SV_WAIT_IDLE_MS;

    if (c == NULL && retry < next) {
        next = retry;
    }

    pthread_mutex_lock(&sv_wait_lock);

    /* one fired already waits for its own call to pick it up */

    for (w = sv_waiters; w; w = w->next) {
        if (!w->fired && w->deadline_ms < next) {
            next = w->deadline_ms;
        }
    }

    pthread_mutex_unlock(&sv_wait_lock);

    return next <= now ? 0 : (int) (next - now);
}


/* the subscriber computes its next deadline again */

static void
sv_wait_wake(void)
{
    if (sv_wait_running && write(sv_wait_pipe[1], "w", 1) != 1
        && errno != EAGAIN)
    {
        sv_log("failure 'subscriber': cannot wake it");
    }
}


static redisContext *
sv_wait_subscribe(void)
{
    char            err[512];
    redisReply     *r;
    redisContext   *c;
    struct timeval  tv;

    if (bottle_store_connect(&c, &sv_conf.store, SV_STORE_CONNECT_S,
                             SV_STORE_COMMAND_S, err, sizeof(err))
        != 0)
    {
        sv_log("failure 'subscriber': cannot reach the store %s: %s",
               sv_conf.store_text, err);
        return NULL;
    }

    r = redisCommand(c, "SUBSCRIBE %s", BOTTLE_DECISIONS_CHANNEL);

    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        sv_log("failure 'subscriber': cannot subscribe to %s on %s",
               BOTTLE_DECISIONS_CHANNEL, sv_conf.store_text);
        if (r) {
            freeReplyObject(r);
        }
        redisFree(c);
        return NULL;
    }

    freeReplyObject(r);

    /* from here on the socket is read by poll() and the reader only */

    tv.tv_sec = 0;
    tv.tv_usec = 0;
    (void) redisSetTimeout(c, tv);

    return c;
}


/* ["message", "bottle:decisions", "<id> <state>"] */

static void
sv_wait_message(redisReply *m)
{
    size_t        n;
    const char   *msg;
    sv_waiter_t  *w, *next;

    if (m->type != REDIS_REPLY_ARRAY || m->elements != 3
        || m->element[2]->type != REDIS_REPLY_STRING)
    {
        return;
    }

    msg = m->element[2]->str;
    n = strcspn(msg, " ");

    pthread_mutex_lock(&sv_wait_lock);

    for (w = sv_waiters; w; w = next) {
        next = w->next;

        if (strlen(w->id) == n && memcmp(w->id, msg, n) == 0) {
            sv_wait_fire(w);
        }
    }

    pthread_mutex_unlock(&sv_wait_lock);
}


/* with the lock: fired; a suspended one is unlisted and resumed */

static void
sv_wait_fire(sv_waiter_t *w)
{
    struct MHD_Connection  *c;

    w->fired = 1;
    c = w->connection;

    if (c) {
        sv_wait_unlist(w);
        MHD_resume_connection(c);
    }
}


/* every waiter whose time is up (all: every waiter) */

static void
sv_wait_expire(int all)
{
    int64_t       now;
    sv_waiter_t  *w, *next;

    now = sv_now();

    pthread_mutex_lock(&sv_wait_lock);

    for (w = sv_waiters; w; w = next) {
        next = w->next;

        if (all || w->deadline_ms <= now) {
            sv_wait_fire(w);
        }
    }

    pthread_mutex_unlock(&sv_wait_lock);
}


size_t
sv_wait_release_all(void)
{
    size_t        n;
    sv_waiter_t  *w;

    n = 0;

    pthread_mutex_lock(&sv_wait_lock);

    for (w = sv_waiters; w; w = w->next) {
        w->deadline_ms = 0;
        n++;
    }

    pthread_mutex_unlock(&sv_wait_lock);

    sv_wait_expire(1);

    return n;
}


void
sv_wait_add(sv_waiter_t *w, const char *id, int64_t deadline_ms)
{
    snprintf(w->id, sizeof(w->id), "%s", id);
    w->deadline_ms = deadline_ms;
    w->connection = NULL;
    w->fired = 0;

    pthread_mutex_lock(&sv_wait_lock);

    w->prev = NULL;
    w->next = sv_waiters;
    if (sv_waiters) {
        sv_waiters->prev = w;
    }
    sv_waiters = w;
    w->listed = 1;

    pthread_mutex_unlock(&sv_wait_lock);

    /* its deadline may be the next one */
    sv_wait_wake();
}


int
sv_wait_suspend(sv_waiter_t *w, void *connection)
{
    int  rc;

    pthread_mutex_lock(&sv_wait_lock);

    if (w->fired || !w->listed || w->deadline_ms <= sv_now()) {
        /* answered, or its time is up already: answer now */
        sv_wait_unlist(w);
        rc = 0;

    } else {
        /* suspended before the subscriber can see it: its resume is
         * never lost */
        MHD_suspend_connection(connection);
        w->connection = connection;
        rc = 1;
    }

    pthread_mutex_unlock(&sv_wait_lock);

    return rc;
}


void
sv_wait_remove(sv_waiter_t *w)
{
    pthread_mutex_lock(&sv_wait_lock);
    sv_wait_unlist(w);
    pthread_mutex_unlock(&sv_wait_lock);
}


/* with the lock */

static void
sv_wait_unlist(sv_waiter_t *w)
{
    if (!w->listed) {
        return;
    }

    if (w->prev) {
        w->prev->next = w->next;
    } else {
        sv_waiters = w->next;
    }

    if (w->next) {
        w->next->prev = w->prev;
    }

    w->prev = NULL;
    w->next = NULL;
    w->listed = 0;
    w->connection = NULL;
}
