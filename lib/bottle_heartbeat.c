/*
 * Heartbeat records (bottle_heartbeat.h): the key and the JSON.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottle_heartbeat.h"


void
bottle_heartbeat_init(bottle_heartbeat_t *hb)
{
    memset(hb, 0, sizeof(*hb));

    hb->pid = -1;
    hb->time_ms = -1;
    hb->period_ms = -1;
    hb->ttl_ms = -1;
    hb->uptime_s = -1;
    hb->policy_version = -1;
    hb->bottles = -1;
    hb->since_sync_s = -1;
    hb->worker = -1;
    hb->workers = -1;
    hb->master_pid = -1;
}


int64_t
bottle_heartbeat_ttl(int64_t period_ms)
{
    if (period_ms <= 0) {
        return BOTTLE_HEARTBEAT_IDLE_TTL_MS;
    }

    return period_ms * BOTTLE_HEARTBEAT_KEEP;
}


size_t
bottle_heartbeat_key(char *buf, const char *kind, const char *id)
{
    size_t  n, i;

    n = sizeof(BOTTLE_HEARTBEAT_PREFIX) - 1;
    memcpy(buf, BOTTLE_HEARTBEAT_PREFIX, n);

    for (i = 0; kind[i] && i < sizeof(BOTTLE_HEARTBEAT_SUPERVISE); i++) {
        buf[n++] = kind[i];
    }

    buf[n++] = ':';

    for (i = 0; id[i] && i < BOTTLE_HEARTBEAT_ID_MAX; i++) {
        buf[n++] = ((unsigned char) id[i] > 0x20
                    && (unsigned char) id[i] < 0x7f) ? id[i] : '_';
    }

    buf[n] = '\0';

    return n;
}


static int
bottle_heartbeat_int(json_t *o, const char *name, int64_t v)
{
    return json_object_set_new(o, name, v < 0 ? json_null()
                                              : json_integer(v));
}


static int
bottle_heartbeat_str(json_t *o, const char *name, const char *v)
{
    return json_object_set_new(o, name, v ? json_string(v) : json_null());
}


char *
bottle_heartbeat_json(const bottle_heartbeat_t *hb)
{
    int      rc;
    char    *s;
    json_t  *o;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }

    rc = bottle_heartbeat_str(o, "kind", hb->kind)
         | bottle_heartbeat_str(o, "id", hb->id)
         | bottle_heartbeat_str(o, "host", hb->host)
         | bottle_heartbeat_str(o, "instance", hb->instance)
         | bottle_heartbeat_str(o, "version", BOTTLE_HEARTBEAT_VERSION)
         | bottle_heartbeat_str(o, "store", hb->store)
         | bottle_heartbeat_int(o, "pid", hb->pid)
         | bottle_heartbeat_int(o, "time", hb->time_ms)
         | bottle_heartbeat_int(o, "period_ms", hb->period_ms)
         | bottle_heartbeat_int(o, "ttl_ms", hb->ttl_ms)
         | bottle_heartbeat_int(o, "uptime", hb->uptime_s)
         | bottle_heartbeat_int(o, "policy_version", hb->policy_version)
         | bottle_heartbeat_int(o, "bottles", hb->bottles)
         | bottle_heartbeat_int(o, "since_sync", hb->since_sync_s)
         | bottle_heartbeat_int(o, "worker", hb->worker)
         | bottle_heartbeat_int(o, "workers", hb->workers)
         | bottle_heartbeat_int(o, "master_pid", hb->master_pid);

    if (rc != 0) {
        json_decref(o);
        return NULL;
    }

    s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);

    return s;
}
