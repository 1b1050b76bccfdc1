/*
 * bottlectl status [--expect KIND=N[,KIND=N]...]: the store's health
 * (PING's round trip, INFO's role, replicas and memory), the policy it
 * holds, the pending proposals by kind and by bottle, and every
 * component's heartbeat (lib/bottle_heartbeat.h) with its age.
 *
 * A record's age is the key's own: ttl_ms less its PTTL, Redis's clock
 * alone.  A component whose record is older than BOTTLE_HEARTBEAT_STALE
 * periods is stale; --expect names how many of a kind must be up
 * (gateway: instances with a worker up; supervise: records up; git-gate:
 * records, whatever their age, since git-gate writes per request).  A
 * stale or missing component: one line each on stderr and exit 6.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "bottle_heartbeat.h"
#include "bottlectl.h"


#define BOTTLECTL_STATUS_KEYS_MAX  65536    /* heartbeat records read */
#define BOTTLECTL_STATUS_KINDS     3


static const char  *bottlectl_status_kinds[BOTTLECTL_STATUS_KINDS] = {
    BOTTLE_HEARTBEAT_GATEWAY, BOTTLE_HEARTBEAT_SUPERVISE,
    BOTTLE_HEARTBEAT_GITGATE
};


static int bottlectl_status_expect(const char *spec, long *expect);
static int bottlectl_status_store(bottlectl_t *ctl, json_t *out);
static int bottlectl_status_policy(bottlectl_t *ctl, json_t *out);
static int bottlectl_status_proposals(bottlectl_t *ctl, json_t *out);
static int bottlectl_status_components(bottlectl_t *ctl, json_t *out);
static int bottlectl_status_judge(json_t *out, const long *expect);
static void bottlectl_status_print(json_t *out);
static int bottlectl_status_cmp(const void *a, const void *b);
static void bottlectl_status_count(json_t *map, const char *name);


int
bottlectl_status(bottlectl_t *ctl, int argc, char **argv)
{
    int      i, rc, bad;
    long     expect[BOTTLECTL_STATUS_KINDS];
    json_t  *out;

    static const char  synopsis[] =
        "[--json] status [--expect KIND=N[,KIND=N]...]";

    for (i = 0; i < BOTTLECTL_STATUS_KINDS; i++) {
        expect[i] = -1;
    }

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) {
            if (bottlectl_status_expect(argv[++i], expect) != 0) {
                return bottlectl_usage(synopsis);
            }

        } else if (strncmp(argv[i], "--expect=", 9) == 0) {
            if (bottlectl_status_expect(argv[i] + 9, expect) != 0) {
                return bottlectl_usage(synopsis);
            }

        } else {
            return bottlectl_usage(synopsis);
        }
    }

    out = json_object();
    if (out == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    rc = bottlectl_status_store(ctl, out);

    if (rc == BOTTLECTL_OK) {
        rc = bottlectl_status_policy(ctl, out);
    }

    if (rc == BOTTLECTL_OK) {
        rc = bottlectl_status_proposals(ctl, out);
    }

    if (rc == BOTTLECTL_OK) {
        rc = bottlectl_status_components(ctl, out);
    }

    if (rc == BOTTLECTL_UNREACHABLE) {
        /* said on stderr already; stdout says it too */
        if (ctl->json) {
            json_object_set_new(json_object_get(out, "store"), "up",
                                json_false());
            json_object_set_new(out, "ok", json_false());
            json_dumpf(out, stdout, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
            fputc('\n', stdout);

        } else {
            printf("store       %s  DOWN: it cannot be reached; no "
                   "component can be read\n", ctl->url_text);
        }

        json_decref(out);
        return rc;
    }

    if (rc != BOTTLECTL_OK) {
        json_decref(out);
        return rc;
    }

    bad = bottlectl_status_judge(out, expect);

    if (ctl->json) {
        json_dumpf(out, stdout, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
        fputc('\n', stdout);

    } else {
        bottlectl_status_print(out);
    }

    json_decref(out);

    return bad ? BOTTLECTL_STALE : BOTTLECTL_OK;
}


/* "gateway=2,supervise=1" */

static int
bottlectl_status_expect(const char *spec, long *expect)
{
    int          k;
    long         n;
    char        *end;
    size_t       len;
    const char  *p, *eq;

    p = spec;

    for ( ;; ) {
        eq = strchr(p, '=');
        if (eq == NULL) {
            bottlectl_error("--expect: \"%s\" is not KIND=N", p);
            return -1;
        }

        len = eq - p;

        for (k = 0; k < BOTTLECTL_STATUS_KINDS; k++) {
            if (strlen(bottlectl_status_kinds[k]) == len
                && strncmp(bottlectl_status_kinds[k], p, len) == 0)
            {
                break;
            }
        }

        if (k == BOTTLECTL_STATUS_KINDS) {
            bottlectl_error("--expect: unknown kind \"%.*s\" (gateway, "
                            "supervise, git-gate)", (int) len, p);
            return -1;
        }

        n = strtol(eq + 1, &end, 10);
        if (end == eq + 1 || n < 0 || n > 100000
            || (*end != '\0' && *end != ','))
        {
            bottlectl_error("--expect: \"%.*s\": not a count",
                            (int) strcspn(eq + 1, ","), eq + 1);
            return -1;
        }

        expect[k] = n;

        if (*end == '\0') {
            return 0;
        }

        p = end + 1;
    }
}


static double
bottlectl_status_ms(const struct timespec *a, const struct timespec *b)
{
    return (b->tv_sec - a->tv_sec) * 1000.0
           + (b->tv_nsec - a->tv_nsec) / 1000000.0;
}


/* "name:value" of INFO's text, or NULL */

static json_t *
bottlectl_status_info(const char *info, const char *name, int number)
{
    char         buf[128];
    size_t       len, n;
    const char  *p;

    len = strlen(name);

    for (p = info; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, len) == 0 && p[len] == ':') {
            p += len + 1;
            n = strcspn(p, "\r\n");
            n = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
            memcpy(buf, p, n);
            buf[n] = '\0';

            return number ? json_integer(strtoll(buf, NULL, 10))
                          : json_string(buf);
        }
    }

    return json_null();
}


static int
bottlectl_status_store(bottlectl_t *ctl, json_t *out)
{
    int               rc;
    json_t           *st;
    redisReply       *r;
    const char       *argv[1];
    struct timespec   t0, t1;

    st = json_object();
    json_object_set_new(out, "store", st);
    json_object_set_new(st, "url", json_string(ctl->url_text));

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        json_object_set_new(st, "up", json_false());
        return rc;
    }

    argv[0] = "PING";

    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = bottlectl_command(ctl, &r, 1, argv, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);

    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type == REDIS_REPLY_ERROR) {
        bottlectl_error("the store %s answered PING with: %s", ctl->url_text,
                        r->str);
        freeReplyObject(r);
        return BOTTLECTL_UNREACHABLE;
    }

    freeReplyObject(r);

    json_object_set_new(st, "up", json_true());
    json_object_set_new(st, "ping_ms",
                        json_real((double) (long) (bottlectl_status_ms(&t0,
                                  &t1) * 1000) / 1000.0));

    argv[0] = "INFO";

    rc = bottlectl_command(ctl, &r, 1, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) {
        /* an ACL without +info: what it says, and go on */
        json_object_set_new(st, "info_error",
                            json_string(r->type == REDIS_REPLY_ERROR
                                        ? r->str : "not a string"));
        freeReplyObject(r);
        return BOTTLECTL_OK;
    }

    json_object_set_new(st, "redis_version",
                        bottlectl_status_info(r->str, "redis_version", 0));
    json_object_set_new(st, "role",
                        bottlectl_status_info(r->str, "role", 0));
    json_object_set_new(st, "replicas",
                        bottlectl_status_info(r->str, "connected_slaves", 1));
    json_object_set_new(st, "memory_bytes",
                        bottlectl_status_info(r->str, "used_memory", 1));
    json_object_set_new(st, "memory_human",
                        bottlectl_status_info(r->str, "used_memory_human",
                                              0));
    json_object_set_new(st, "uptime",
                        bottlectl_status_info(r->str, "uptime_in_seconds",
                                              1));

    freeReplyObject(r);

    return BOTTLECTL_OK;
}


/* the version counter, the bottles and the highest bottle version */

static int
bottlectl_status_policy(bottlectl_t *ctl, json_t *out)
{
    int          rc;
    size_t       i;
    json_t      *p;
    long long    v, max;
    redisReply  *r;
    const char  *argv[2];

    p = json_object();
    json_object_set_new(out, "policy", p);

    argv[0] = "GET";
    argv[1] = BOTTLE_STORE_VERSION;

    rc = bottlectl_command(ctl, &r, 2, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    json_object_set_new(p, "counter", r->type == REDIS_REPLY_STRING
                        ? json_integer(strtoll(r->str, NULL, 10))
                        : json_null());
    freeReplyObject(r);

    argv[0] = "HVALS";
    argv[1] = BOTTLE_STORE_BOTTLES;

    rc = bottlectl_command(ctl, &r, 2, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type != REDIS_REPLY_ARRAY) {
        bottlectl_error("%s: %s", BOTTLE_STORE_BOTTLES,
                        r->type == REDIS_REPLY_ERROR ? r->str
                                                     : "not a hash");
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    max = 0;

    for (i = 0; i < r->elements; i++) {
        v = strtoll(bottlectl_str(r, i), NULL, 10);
        max = v > max ? v : max;
    }

    json_object_set_new(p, "bottles", json_integer(r->elements));
    json_object_set_new(p, "version", json_integer(max));
    freeReplyObject(r);

    return BOTTLECTL_OK;
}


static void
bottlectl_status_count(json_t *map, const char *name)
{
    json_t  *n;

    n = json_object_get(map, name);

    json_object_set_new(map, name,
                        json_integer(n ? json_integer_value(n) + 1 : 1));
}


/* the pending proposals, by kind and by bottle */

static int
bottlectl_status_proposals(bottlectl_t *ctl, json_t *out)
{
    int          rc;
    size_t       i;
    json_t      *p, *kinds, *bottles;
    redisReply  *ids, *r;
    const char  *argv[4];

    p = json_object();
    kinds = json_object();
    bottles = json_object();
    json_object_set_new(out, "proposals", p);
    json_object_set_new(p, "by_kind", kinds);
    json_object_set_new(p, "by_bottle", bottles);

    argv[0] = "ZRANGE";
    argv[1] = BOTTLE_PROPOSALS_PENDING;
    argv[2] = "0";
    argv[3] = "-1";

    rc = bottlectl_command(ctl, &ids, 4, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (ids->type != REDIS_REPLY_ARRAY) {
        bottlectl_error("%s: %s", BOTTLE_PROPOSALS_PENDING,
                        ids->type == REDIS_REPLY_ERROR ? ids->str
                                                       : "not a sorted set");
        freeReplyObject(ids);
        return BOTTLECTL_REFUSED;
    }

    json_object_set_new(p, "pending", json_integer(ids->elements));

    for (i = 0; i < ids->elements; i++) {
        redisAppendCommand(ctl->redis, "HMGET %s%s %s %s",
                           BOTTLE_PROPOSAL_PREFIX, bottlectl_str(ids, i),
                           BOTTLE_PROPOSAL_F_BOTTLE, BOTTLE_PROPOSAL_F_KIND);
    }

    for (i = 0; i < ids->elements; i++) {
        if (redisGetReply(ctl->redis, (void **) &r) != REDIS_OK) {
            freeReplyObject(ids);
            return bottlectl_lost(ctl);
        }

        if (r->type == REDIS_REPLY_ARRAY && r->elements == 2
            && r->element[0]->type == REDIS_REPLY_STRING
            && r->element[1]->type == REDIS_REPLY_STRING)
        {
            bottlectl_status_count(bottles, r->element[0]->str);
            bottlectl_status_count(kinds, r->element[1]->str);
        }

        freeReplyObject(r);
    }

    freeReplyObject(ids);

    return BOTTLECTL_OK;
}


/* every heartbeat record, with its age, sorted by kind and id */

static int
bottlectl_status_components(bottlectl_t *ctl, json_t *out)
{
    int            rc;
    char         **keys, *cursor;
    size_t         n, i, j;
    json_t        *list, *o, *ttl;
    long long      pttl, age;
    redisReply    *r, *g, *t;
    json_error_t   jerr;

    list = json_array();
    json_object_set_new(out, "components", list);

    keys = calloc(BOTTLECTL_STATUS_KEYS_MAX, sizeof(char *));
    if (keys == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    n = 0;
    cursor = strdup("0");
    rc = BOTTLECTL_OK;

    do {
        r = redisCommand(ctl->redis, "SCAN %s MATCH %s* COUNT 1000", cursor,
                         BOTTLE_HEARTBEAT_PREFIX);
        free(cursor);
        cursor = NULL;

        if (r == NULL) {
            rc = bottlectl_lost(ctl);
            break;
        }

        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
            || r->element[0]->type != REDIS_REPLY_STRING
            || r->element[1]->type != REDIS_REPLY_ARRAY)
        {
            bottlectl_error("SCAN: %s", r->type == REDIS_REPLY_ERROR
                                        ? r->str : "an unexpected reply");
            freeReplyObject(r);
            rc = BOTTLECTL_REFUSED;
            break;
        }

        for (j = 0; j < r->element[1]->elements
                    && n < BOTTLECTL_STATUS_KEYS_MAX; j++)
        {
            keys[n++] = strdup(bottlectl_str(r->element[1], j));
        }

        cursor = strcmp(r->element[0]->str, "0") == 0
                 ? NULL : strdup(r->element[0]->str);

        freeReplyObject(r);

    } while (cursor && n < BOTTLECTL_STATUS_KEYS_MAX);

    free(cursor);

    /* SCAN may name a key twice */
    qsort(keys, n, sizeof(char *), bottlectl_status_cmp);

    for (i = 0; rc == BOTTLECTL_OK && i < n; i++) {
        if (keys[i] == NULL || (i > 0 && keys[i - 1]
                                && strcmp(keys[i], keys[i - 1]) == 0))
        {
            continue;
        }

        redisAppendCommand(ctl->redis, "GET %s", keys[i]);
        redisAppendCommand(ctl->redis, "PTTL %s", keys[i]);

        if (redisGetReply(ctl->redis, (void **) &g) != REDIS_OK) {
            rc = bottlectl_lost(ctl);
            break;
        }

        if (redisGetReply(ctl->redis, (void **) &t) != REDIS_OK) {
            freeReplyObject(g);
            rc = bottlectl_lost(ctl);
            break;
        }

        o = NULL;

        if (g->type == REDIS_REPLY_STRING) {
            o = json_loadb(g->str, g->len, 0, &jerr);
        }

        if (json_is_object(o)) {
            pttl = t->type == REDIS_REPLY_INTEGER ? t->integer : -1;
            ttl = json_object_get(o, "ttl_ms");

            if (pttl >= 0 && json_is_integer(ttl)) {
                age = json_integer_value(ttl) - pttl;
                json_object_set_new(o, "age_ms",
                                    json_integer(age < 0 ? 0 : age));

            } else {
                json_object_set_new(o, "age_ms", json_null());
            }

            json_object_set_new(o, "key", json_string(keys[i]));
            json_array_append(list, o);

        } else if (g->type == REDIS_REPLY_STRING) {
            bottlectl_error("%s: not a heartbeat record, skipped", keys[i]);
        }

        json_decref(o);
        freeReplyObject(g);
        freeReplyObject(t);
    }

    for (i = 0; i < n; i++) {
        free(keys[i]);
    }

    free(keys);

    return rc;
}


static int
bottlectl_status_cmp(const void *a, const void *b)
{
    const char  *x = *(char * const *) a;
    const char  *y = *(char * const *) b;

    if (x == NULL || y == NULL) {
        return (x == NULL) - (y == NULL);
    }

    return strcmp(x, y);
}


static const char *
bottlectl_status_s(json_t *o, const char *name)
{
    const char  *s;

    s = json_string_value(json_object_get(o, name));

    return s ? s : "";
}


static long long
bottlectl_status_i(json_t *o, const char *name)
{
    json_t  *v;

    v = json_object_get(o, name);

    return json_is_integer(v) ? json_integer_value(v) : -1;
}


/*
 * Each record's state (up, stale, idle: git-gate's, which writes per
 * request) and the expectations: "problems", "ok".  Returns the number
 * of problems, each said on stderr.
 */

static int
bottlectl_status_judge(json_t *out, const long *expect)
{
    int          k, bad;
    long         have;
    size_t       i, j;
    json_t      *list, *o, *problems, *seen;
    long long    age, period;
    const char  *kind, *state;

    list = json_object_get(out, "components");
    problems = json_array();
    json_object_set_new(out, "problems", problems);
    bad = 0;

    json_array_foreach(list, i, o) {
        age = bottlectl_status_i(o, "age_ms");
        period = bottlectl_status_i(o, "period_ms");

        if (period == 0) {
            state = "idle";

        } else if (period < 0 || age < 0
                   || age > period * BOTTLE_HEARTBEAT_STALE)
        {
            state = "stale";

        } else {
            state = "up";
        }

        json_object_set_new(o, "state", json_string(state));

        if (strcmp(state, "stale") == 0) {
            json_array_append_new(problems,
                json_pack("{s:s, s:s, s:s, s:I, s:I}", "problem", "stale",
                          "kind", bottlectl_status_s(o, "kind"),
                          "id", bottlectl_status_s(o, "id"),
                          "age_ms", (json_int_t) age,
                          "stale_after_ms",
                          (json_int_t) (period * BOTTLE_HEARTBEAT_STALE)));

            bottlectl_error("stale: %s %s: its last heartbeat is %lld s old "
                            "(stale after %lld s)",
                            bottlectl_status_s(o, "kind"),
                            bottlectl_status_s(o, "id"), age / 1000,
                            period * BOTTLE_HEARTBEAT_STALE / 1000);
            bad++;
        }
    }

    for (k = 0; k < BOTTLECTL_STATUS_KINDS; k++) {
        if (expect[k] < 0) {
            continue;
        }

        kind = bottlectl_status_kinds[k];
        seen = json_object();
        have = 0;

        json_array_foreach(list, j, o) {
            if (strcmp(bottlectl_status_s(o, "kind"), kind) != 0) {
                continue;
            }

            state = bottlectl_status_s(o, "state");

            if (k == 0) {
                /* gateways: instances with a worker up */
                if (strcmp(state, "up") == 0) {
                    json_object_set_new(seen,
                                        bottlectl_status_s(o, "instance"),
                                        json_true());
                }

            } else if (k == 1 ? strcmp(state, "up") == 0 : 1) {
                have++;
            }
        }

        if (k == 0) {
            have = (long) json_object_size(seen);
        }

        json_decref(seen);

        if (have < expect[k]) {
            json_array_append_new(problems,
                json_pack("{s:s, s:s, s:i, s:i}", "problem", "missing",
                          "kind", kind, "expected", (int) expect[k],
                          "up", (int) have));

            bottlectl_error("missing: %ld %s expected up, %ld %s", expect[k],
                            kind, have, have == 1 ? "is" : "are");
            bad++;
        }
    }

    json_object_set_new(out, "ok", json_boolean(bad == 0));

    return bad;
}


static void
bottlectl_status_num(char *buf, size_t len, long long v, const char *unit)
{
    if (v < 0) {
        snprintf(buf, len, "-");

    } else {
        snprintf(buf, len, "%lld%s", v, unit);
    }
}


static void
bottlectl_status_print(json_t *out)
{
    size_t       i;
    json_t      *st, *p, *pr, *o, *v;
    const char  *name;
    char         age[32], pol[48], bot[32], sync[32], up[32], wk[32];
    long long    store_version;

    st = json_object_get(out, "store");
    p = json_object_get(out, "policy");
    pr = json_object_get(out, "proposals");

    printf("store       %s  up  ping %.3f ms", bottlectl_status_s(st, "url"),
           json_real_value(json_object_get(st, "ping_ms")));

    if (json_object_get(st, "info_error")) {
        printf("  (INFO refused: %s)\n",
               bottlectl_status_s(st, "info_error"));

    } else {
        printf("  redis %s  role %s  replicas %lld  memory %s  uptime "
               "%lld s\n", bottlectl_status_s(st, "redis_version"),
               bottlectl_status_s(st, "role"),
               bottlectl_status_i(st, "replicas"),
               bottlectl_status_s(st, "memory_human"),
               bottlectl_status_i(st, "uptime"));
    }

    store_version = bottlectl_status_i(p, "version");

    bottlectl_status_num(age, sizeof(age), bottlectl_status_i(p, "counter"),
                         "");
    printf("policy      version %lld  bottles %lld  counter %s\n",
           store_version, bottlectl_status_i(p, "bottles"), age);

    printf("proposals   %lld pending", bottlectl_status_i(pr, "pending"));

    json_object_foreach(json_object_get(pr, "by_kind"), name, v) {
        printf("  %s %lld", name, (long long) json_integer_value(v));
    }

    if (json_object_size(json_object_get(pr, "by_bottle"))) {
        printf("  by bottle:");

        json_object_foreach(json_object_get(pr, "by_bottle"), name, v) {
            printf(" %s %lld", name, (long long) json_integer_value(v));
        }
    }

    printf("\n\n%-10s %-24s %-6s %6s %12s %7s %6s %-8s %8s %7s %8s %s\n",
           "KIND", "ID", "STATE", "AGE", "POLICY", "BOTTLES", "SYNC",
           "STORE", "PID", "WORKERS", "UPTIME", "VERSION");

    json_array_foreach(json_object_get(out, "components"), i, o) {
        bottlectl_status_num(age, sizeof(age),
                             bottlectl_status_i(o, "age_ms") < 0 ? -1
                             : bottlectl_status_i(o, "age_ms") / 1000, "s");
        bottlectl_status_num(bot, sizeof(bot),
                             bottlectl_status_i(o, "bottles"), "");
        bottlectl_status_num(sync, sizeof(sync),
                             bottlectl_status_i(o, "since_sync"), "s");
        bottlectl_status_num(up, sizeof(up),
                             bottlectl_status_i(o, "uptime"), "s");

        if (bottlectl_status_i(o, "policy_version") < 0) {
            snprintf(pol, sizeof(pol), "-");

        } else {
            snprintf(pol, sizeof(pol), "%lld%s",
                     bottlectl_status_i(o, "policy_version"),
                     bottlectl_status_i(o, "policy_version") < store_version
                     ? " behind" : "");
        }

        if (bottlectl_status_i(o, "workers") < 0) {
            snprintf(wk, sizeof(wk), "-");

        } else {
            snprintf(wk, sizeof(wk), "%lld/%lld",
                     bottlectl_status_i(o, "worker"),
                     bottlectl_status_i(o, "workers"));
        }

        printf("%-10s %-24s %-6s %6s %12s %7s %6s %-8s %8lld %7s %8s %s\n",
               bottlectl_status_s(o, "kind"), bottlectl_status_s(o, "id"),
               bottlectl_status_s(o, "state"), age, pol, bot, sync,
               json_is_string(json_object_get(o, "store"))
               ? bottlectl_status_s(o, "store") : "-",
               bottlectl_status_i(o, "pid"), wk, up,
               bottlectl_status_s(o, "version"));
    }
}
