/*
 * bottlectl policy get|rm, bottles.  policy put is ctl_put.c, the stored
 * bottle read (bottlectl_get_json(), bottlectl_fetch_bottle()) is
 * ctl_source.c's.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottlectl.h"


typedef struct {
    const char         *id;
    long long           version;    /* -1: none (--policy) */
    long long           routes;     /* -1: unreadable */
} bottlectl_row_t;


static int bottlectl_policy_get(bottlectl_t *ctl, const char *id);
static int bottlectl_policy_rm(bottlectl_t *ctl, const char *id,
    const char *operator_name);
static int bottlectl_bottles_store(bottlectl_t *ctl);
static int bottlectl_bottles_file(bottlectl_t *ctl);
static void bottlectl_bottles_print(bottlectl_t *ctl, bottlectl_row_t *rows,
    size_t n);
static int bottlectl_row_cmp(const void *a, const void *b);


int
bottlectl_policy(bottlectl_t *ctl, int argc, char **argv)
{
    int          i, n;
    char        *args[2];
    const char  *operator_name, *sub;

    static const char  usage[] =
        "policy put FILE|DIR|- [--operator NAME] | get BOTTLE "
        "| rm BOTTLE [--operator NAME] | status WRITE-ID | check FILE|DIR|- "
        "| diff FILE|DIR|-";

    /* --operator NAME (put and rm) may stand anywhere after the command */

    operator_name = NULL;
    n = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--operator") == 0 && i + 1 < argc) {
            operator_name = argv[++i];

        } else if (strncmp(argv[i], "--operator=", 11) == 0) {
            operator_name = argv[i] + 11;

        } else if (n < 2) {
            args[n++] = argv[i];

        } else {
            return bottlectl_usage(usage);
        }
    }

    if (n != 2) {
        return bottlectl_usage(usage);
    }

    sub = args[0];

    if (strcmp(sub, "put") != 0 && strcmp(sub, "get") != 0
        && strcmp(sub, "rm") != 0 && strcmp(sub, "status") != 0
        && strcmp(sub, "check") != 0 && strcmp(sub, "diff") != 0)
    {
        bottlectl_error("unknown policy command '%s' (put, get, rm, status, "
                        "check and diff are known)", sub);
        return BOTTLECTL_USAGE;
    }

    if (operator_name
        && (operator_name[0] == '\0'
            || (strcmp(sub, "put") != 0 && strcmp(sub, "rm") != 0)))
    {
        bottlectl_error("--operator NAME is an option of policy put and "
                        "policy rm");
        return BOTTLECTL_USAGE;
    }

    if (operator_name == NULL) {
        operator_name = bottlectl_operator();
    }

    if (strcmp(sub, "check") == 0) {
        return bottlectl_policy_check(ctl, args[1]);
    }

    if (ctl->policy) {
        bottlectl_error("policy %s works on the store, not on --policy", sub);
        return BOTTLECTL_USAGE;
    }

    if (strcmp(sub, "put") == 0) {
        return bottlectl_policy_put(ctl, args[1], operator_name);
    }

    if (strcmp(sub, "diff") == 0) {
        return bottlectl_policy_diff(ctl, args[1]);
    }

    if (strcmp(sub, "get") == 0) {
        return bottlectl_policy_get(ctl, args[1]);
    }

    if (strcmp(sub, "status") == 0) {
        return bottlectl_policy_status(ctl, args[1]);
    }

    return bottlectl_policy_rm(ctl, args[1], operator_name);
}


static int
bottlectl_policy_get(bottlectl_t *ctl, const char *id)
{
    int           rc;
    char         *text;
    json_t       *root;
    redisReply   *r;
    json_error_t  jerr;

    rc = bottlectl_get_json(ctl, id, &r);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    root = json_loadb(r->str, r->len, 0, &jerr);
    freeReplyObject(r);

    if (root == NULL) {
        bottlectl_error("bottle \"%s\": the stored JSON is invalid", id);
        return BOTTLECTL_REFUSED;
    }

    text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);

    if (text == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    printf("%s\n", text);
    free(text);

    return BOTTLECTL_OK;
}


/*
 * rm under a write id, journalled in the same script (policy.changed): an
 * outcome lost with the reply is settled
 */

static int
bottlectl_policy_rm(bottlectl_t *ctl, const char *id,
    const char *operator_name)
{
    int                   rc;
    char                  wid[BOTTLE_STORE_WRITE_ID_LEN + 1], ttl[32];
    char                  version[32], *settled, *event;
    size_t                len;
    json_t               *before, *none;
    long long             removed;
    const char           *argv[9];
    redisReply           *r;
    bottlectl_summary_t   sum;

    if (bottlectl_write_id(wid) != 0) {
        bottlectl_error("cannot make a write id: /dev/urandom");
        return BOTTLECTL_REFUSED;
    }

    snprintf(ttl, sizeof(ttl), "%d", BOTTLE_STORE_WRITE_TTL);

    rc = bottlectl_stored(ctl, id, &before, version, sizeof(version));
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    event = NULL;

    if (before == NULL && version[0]) {
        before = json_object();         /* listed, its JSON gone */
    }

    if (before) {
        none = json_object();

        if (none == NULL || bottlectl_summarize(&sum, before, none) != 0) {
            json_decref(none);
            json_decref(before);
            bottlectl_error("out of memory");
            return BOTTLECTL_REFUSED;
        }

        free(sum.summary);
        sum.summary = strdup("bottle removed");
        json_array_clear(sum.fields);

        event = sum.summary
                ? bottlectl_policy_event(id, "rm", operator_name, wid,
                                         version[0]
                                         ? strtoll(version, NULL, 10) : -1,
                                         &sum)
                : NULL;

        bottlectl_summary_free(&sum);
        json_decref(none);
        json_decref(before);

        if (event == NULL) {
            bottlectl_error("out of memory");
            return BOTTLECTL_REFUSED;
        }
    }

    argv[0] = "EVAL";
    argv[1] = bottle_store_rm_once_script;
    argv[2] = "0";
    argv[3] = id;
    argv[4] = wid;
    argv[5] = ttl;
    argv[6] = version;
    argv[7] = event ? event : "";
    argv[8] = BOTTLECTL_AUDIT_MAXLEN;

    rc = bottlectl_write(ctl, wid, &r, &settled, 9, argv, NULL);
    free(event);

    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r == NULL) {
        /* "applied\n<id> removed|none", or "void" (said already) */

        rc = BOTTLECTL_UNREACHABLE;
        len = strlen(settled);

        if (strncmp(settled, "applied\n", 8) == 0) {
            if (len > 8 && strcmp(settled + len - 8, " removed") == 0) {
                printf("%s removed\n", id);
                rc = BOTTLECTL_OK;

            } else {
                bottlectl_error("no bottle \"%s\"", id);
                rc = BOTTLECTL_REFUSED;
            }
        }

        free(settled);
        return rc;
    }

    if (r->type == REDIS_REPLY_ERROR
        && (strncmp(r->str, "JOURNAL ", 8) == 0
            || strncmp(r->str, "CHANGED ", 8) == 0))
    {
        bottlectl_error("cannot remove bottle \"%s\": %s%s", id,
                        r->str[0] == 'J' ? "cannot journal the policy "
                                           "change: " : "",
                        r->str + 8);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    if (r->type != REDIS_REPLY_INTEGER) {
        bottlectl_error("cannot remove bottle \"%s\": %s", id,
                        r->type == REDIS_REPLY_ERROR ? r->str
                                                     : "unexpected reply");
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    removed = r->integer;
    freeReplyObject(r);

    if (removed == 0) {
        bottlectl_error("no bottle \"%s\"", id);
        return BOTTLECTL_REFUSED;
    }

    printf("%s removed\n", id);

    return BOTTLECTL_OK;
}


int
bottlectl_bottles(bottlectl_t *ctl, int argc, char **argv)
{
    (void) argv;

    if (argc != 1) {
        return bottlectl_usage("[--json] bottles");
    }

    return ctl->policy ? bottlectl_bottles_file(ctl)
                       : bottlectl_bottles_store(ctl);
}


/* HGETALL bottle:bottles, then each bottle's JSON in one pipeline */

static int
bottlectl_bottles_store(bottlectl_t *ctl)
{
    int               rc;
    char              key[BOTTLECTL_URL_LEN];
    size_t            i, n;
    json_t           *root;
    const char       *argv[3];
    redisReply       *all, *r;
    json_error_t      jerr;
    bottlectl_row_t  *rows;

    argv[0] = "HGETALL";
    argv[1] = BOTTLE_STORE_BOTTLES;

    rc = bottlectl_command(ctl, &all, 2, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (all->type != REDIS_REPLY_ARRAY) {
        bottlectl_error("cannot read %s: %s", BOTTLE_STORE_BOTTLES,
                        all->type == REDIS_REPLY_ERROR ? all->str
                                                       : "not a hash");
        freeReplyObject(all);
        return BOTTLECTL_REFUSED;
    }

    n = all->elements / 2;
    rows = calloc(n ? n : 1, sizeof(bottlectl_row_t));
    if (rows == NULL) {
        freeReplyObject(all);
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    for (i = 0; i < n; i++) {
        rows[i].id = all->element[2 * i]->str;
        rows[i].version = strtoll(all->element[2 * i + 1]->str, NULL, 10);
        rows[i].routes = -1;

        snprintf(key, sizeof(key), "%s%s", BOTTLE_STORE_POLICY_PREFIX,
                 rows[i].id);
        argv[0] = "HGET";
        argv[1] = key;
        argv[2] = BOTTLE_STORE_F_JSON;

        if (redisAppendCommandArgv(ctl->redis, 3, argv, NULL) != REDIS_OK) {
            rc = bottlectl_lost(ctl);
            goto cleanup;
        }
    }

    for (i = 0; i < n; i++) {
        if (redisGetReply(ctl->redis, (void **) &r) != REDIS_OK) {
            rc = bottlectl_lost(ctl);
            goto cleanup;
        }

        if (r->type == REDIS_REPLY_STRING) {
            root = json_loadb(r->str, r->len, 0, &jerr);
            if (json_is_array(json_object_get(root, "routes"))) {
                rows[i].routes = (long long)
                    json_array_size(json_object_get(root, "routes"));
            }
            json_decref(root);
        }

        freeReplyObject(r);
    }

    qsort(rows, n, sizeof(bottlectl_row_t), bottlectl_row_cmp);
    bottlectl_bottles_print(ctl, rows, n);

cleanup:

    free(rows);
    freeReplyObject(all);

    return rc;
}


static int
bottlectl_bottles_file(bottlectl_t *ctl)
{
    char              err[1024];
    size_t            i, n;
    const bottle_t   *b;
    bottle_policy_t  *p;
    bottlectl_row_t  *rows;

    if (bottle_policy_load(&p, ctl->policy, err, sizeof(err)) != 0) {
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;
    }

    n = bottle_policy_count(p);
    rows = calloc(n ? n : 1, sizeof(bottlectl_row_t));
    if (rows == NULL) {
        bottle_policy_free(p);
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    for (i = 0; i < n; i++) {
        b = bottle_policy_at(p, i);
        rows[i].id = b->id.data;
        rows[i].version = -1;
        rows[i].routes = (long long) b->nroutes;
    }

    qsort(rows, n, sizeof(bottlectl_row_t), bottlectl_row_cmp);
    bottlectl_bottles_print(ctl, rows, n);

    free(rows);
    bottle_policy_free(p);

    return BOTTLECTL_OK;
}


static void
bottlectl_bottles_print(bottlectl_t *ctl, bottlectl_row_t *rows, size_t n)
{
    int      w;
    char     routes[32], version[32];
    size_t   i;
    json_t  *list, *o;
    char    *text;

    if (ctl->json) {
        list = json_array();

        for (i = 0; i < n; i++) {
            o = json_pack("{s:s}", "id", rows[i].id);
            json_object_set_new(o, "routes", rows[i].routes < 0
                                ? json_null() : json_integer(rows[i].routes));
            json_object_set_new(o, "version", rows[i].version < 0
                                ? json_null() : json_integer(rows[i].version));
            json_array_append_new(list, o);
        }

        text = json_dumps(list, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (text) {
            printf("%s\n", text);
            free(text);
        }

        json_decref(list);
        return;
    }

    w = 6;
    for (i = 0; i < n; i++) {
        if ((int) strlen(rows[i].id) > w) {
            w = (int) strlen(rows[i].id);
        }
    }

    printf("%-*s  %6s  %s\n", w, "BOTTLE", "ROUTES", "VERSION");

    for (i = 0; i < n; i++) {
        snprintf(routes, sizeof(routes), "%lld", rows[i].routes);
        snprintf(version, sizeof(version), "%lld", rows[i].version);

        printf("%-*s  %6s  %s\n", w, rows[i].id,
               rows[i].routes < 0 ? "?" : routes,
               rows[i].version < 0 ? "-" : version);
    }
}


static int
bottlectl_row_cmp(const void *a, const void *b)
{
    return strcmp(((const bottlectl_row_t *) a)->id,
                  ((const bottlectl_row_t *) b)->id);
}


/*
 * policy status WRITE-ID: the settle script (bottle_store.h) answers with
 * the write's record, or voids the id so that it never applies later.
 */

int
bottlectl_policy_status(bottlectl_t *ctl, const char *wid)
{
    int          rc;
    char         ttl[32];
    size_t       i;
    const char  *argv[5];
    redisReply  *r;

    for (i = 0; wid[i]; i++) {
        if (!((wid[i] >= '0' && wid[i] <= '9')
              || (wid[i] >= 'a' && wid[i] <= 'f')))
        {
            break;
        }
    }

    if (i != BOTTLE_STORE_WRITE_ID_LEN || wid[i] != '\0') {
        bottlectl_error("a write id is %d lowercase hex digits",
                        BOTTLE_STORE_WRITE_ID_LEN);
        return BOTTLECTL_USAGE;
    }

    snprintf(ttl, sizeof(ttl), "%d", BOTTLE_STORE_WRITE_TTL);

    argv[0] = "EVAL";
    argv[1] = bottle_store_settle_script;
    argv[2] = "0";
    argv[3] = wid;
    argv[4] = ttl;

    rc = bottlectl_command(ctl, &r, 5, argv, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type != REDIS_REPLY_STRING) {
        bottlectl_error("cannot read write %s: %s", wid,
                        r->type == REDIS_REPLY_ERROR ? r->str
                                                     : "unexpected reply");
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    if (r->len > 8 && strncmp(r->str, "applied\n", 8) == 0) {
        printf("%s applied\n%.*s\n", wid, (int) r->len - 8, r->str + 8);
        rc = BOTTLECTL_OK;

    } else {
        printf("%s not applied (and never will be)\n", wid);
        rc = BOTTLECTL_REFUSED;
    }

    freeReplyObject(r);

    return rc;
}
