/*
 * supervise-helper's heartbeat (docs/control-plane.md, "Heartbeats"): a
 * thread of its own writes "bottle:heartbeat:supervise:<name>" every
 * --heartbeat seconds on its own store connection, so that `bottlectl
 * status` sees the helper attached.  A store it cannot reach is logged
 * once, and once more when it is back.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bottle_heartbeat.h"
#include "supervise.h"


static void *sv_heartbeat_run(void *arg);
static int sv_heartbeat_write(void);


static pthread_t        sv_hb_thread;
static pthread_mutex_t  sv_hb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t   sv_hb_cond;
static int              sv_hb_stop;
static int              sv_hb_running;
static time_t           sv_hb_started;
static char             sv_hb_host[128];
static char             sv_hb_key[BOTTLE_HEARTBEAT_KEY_LEN];


int
sv_heartbeat_start(void)
{
    pthread_condattr_t  attr;

    if (sv_conf.heartbeat <= 0) {
        return 0;
    }

    sv_hb_started = time(NULL);

    if (gethostname(sv_hb_host, sizeof(sv_hb_host)) != 0) {
        strcpy(sv_hb_host, "supervise");
    }

    sv_hb_host[sizeof(sv_hb_host) - 1] = '\0';

    if (sv_conf.name[0] == '\0') {
        snprintf(sv_conf.name, sizeof(sv_conf.name), "%s", sv_hb_host);
    }

    (void) bottle_heartbeat_key(sv_hb_key, BOTTLE_HEARTBEAT_SUPERVISE,
                                sv_conf.name);

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&sv_hb_cond, &attr);
    pthread_condattr_destroy(&attr);

    if (pthread_create(&sv_hb_thread, NULL, sv_heartbeat_run, NULL) != 0) {
        sv_log("failure 'heartbeat': cannot start its thread");
        return -1;
    }

    sv_hb_running = 1;

    return 0;
}


void
sv_heartbeat_stop(void)
{
    if (!sv_hb_running) {
        return;
    }

    pthread_mutex_lock(&sv_hb_lock);
    sv_hb_stop = 1;
    pthread_cond_signal(&sv_hb_cond);
    pthread_mutex_unlock(&sv_hb_lock);

    pthread_join(sv_hb_thread, NULL);
    sv_hb_running = 0;
}


static void *
sv_heartbeat_run(void *arg)
{
    int              ok, was_ok;
    struct timespec  next;

    (void) arg;

    was_ok = 1;

    clock_gettime(CLOCK_MONOTONIC, &next);

    pthread_mutex_lock(&sv_hb_lock);

    while (!sv_hb_stop) {
        pthread_mutex_unlock(&sv_hb_lock);

        ok = sv_heartbeat_write() == 0;

        if (ok != was_ok) {
            sv_log(ok ? "heartbeat: written again to the store %s"
                      : "heartbeat: cannot write it to the store %s",
                   sv_conf.store_text);
            was_ok = ok;
        }

        next.tv_sec += sv_conf.heartbeat;

        pthread_mutex_lock(&sv_hb_lock);

        while (!sv_hb_stop
               && pthread_cond_timedwait(&sv_hb_cond, &sv_hb_lock, &next)
                  != ETIMEDOUT)
        {
            /* a spurious wakeup */
        }
    }

    pthread_mutex_unlock(&sv_hb_lock);

    sv_store_lost();

    return NULL;
}


static int
sv_heartbeat_write(void)
{
    int                  rc;
    char                *json, err[512];
    redisReply          *r;
    redisContext        *c;
    struct timespec      now;
    bottle_heartbeat_t   hb;

    c = sv_store(err, sizeof(err));
    if (c == NULL) {
        return -1;
    }

    clock_gettime(CLOCK_REALTIME, &now);

    bottle_heartbeat_init(&hb);

    hb.kind = BOTTLE_HEARTBEAT_SUPERVISE;
    hb.id = sv_conf.name;
    hb.host = sv_hb_host;
    hb.instance = sv_conf.name;
    hb.store = "up";
    hb.pid = getpid();
    hb.time_ms = (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
    hb.period_ms = (int64_t) sv_conf.heartbeat * 1000;
    hb.ttl_ms = bottle_heartbeat_ttl(hb.period_ms);
    hb.uptime_s = time(NULL) - sv_hb_started;

    json = bottle_heartbeat_json(&hb);
    if (json == NULL) {
        return -1;
    }

    r = redisCommand(c, "SET %s %s PX %lld", sv_hb_key, json,
                     (long long) hb.ttl_ms);
    free(json);

    if (r == NULL) {
        sv_store_lost();
        return -1;
    }

    rc = r->type == REDIS_REPLY_ERROR ? -1 : 0;

    if (rc != 0) {
        sv_log("heartbeat: the store %s refused it: %s", sv_conf.store_text,
               r->str);
    }

    freeReplyObject(r);

    return rc;
}
