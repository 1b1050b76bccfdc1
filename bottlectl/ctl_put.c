/*
 * bottlectl policy put FILE|DIR|-: validate a policy document with the
 * gateway's parser, then write every bottle in it with one EVAL of the put
 * script (all or none), each bottle's policy.changed event in the same
 * script.  What is stored is the bottle's own JSON object,
 * its plaintext "token" replaced by "token_sha256": the token itself never
 * reaches the store.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottlectl.h"


static int bottlectl_put_eval(bottlectl_t *ctl, const char *name,
    bottlectl_put_t *items, size_t n, const char *operator_name);
static int bottlectl_put_settled(bottlectl_t *ctl, const char *settled);
static int bottlectl_put_parents(bottlectl_t *ctl, const char *name,
    const bottle_policy_t *p);


int
bottlectl_policy_put(bottlectl_t *ctl, const char *file,
    const char *operator_name)
{
    int                  rc;
    size_t               n;
    bottlectl_put_t     *items;
    bottlectl_source_t   src;

    items = NULL;
    n = 0;

    /* the gateway's own checks, and its messages */

    rc = bottlectl_source_load(&src, file);
    if (rc != BOTTLECTL_OK) {
        goto cleanup;
    }

    rc = BOTTLECTL_REFUSED;

    if (bottlectl_put_parents(ctl, src.name, src.policy) != 0) {
        goto cleanup;
    }

    if (bottlectl_put_items(ctl, &src, &items, &n) != 0) {
        goto cleanup;
    }

    rc = bottlectl_put_eval(ctl, src.name, items, n, operator_name);

cleanup:

    bottlectl_put_items_free(items, n);
    bottlectl_source_free(&src);

    return rc;
}


int
bottlectl_put_items(bottlectl_t *ctl, const bottlectl_source_t *src,
    bottlectl_put_t **items, size_t *n)
{
    size_t  i;

    *n = json_array_size(src->bottles);

    *items = calloc(*n ? *n : 1, sizeof(bottlectl_put_t));
    if (*items == NULL) {
        bottlectl_error("out of memory");
        return -1;
    }

    for (i = 0; i < *n; i++) {
        if (bottlectl_put_prepare(ctl, src->name, &(*items)[i],
                                  json_array_get(src->bottles, i),
                                  bottle_policy_at(src->policy, i),
                                  src->policy)
            != 0)
        {
            return -1;
        }
    }

    return 0;
}


void
bottlectl_put_items_free(bottlectl_put_t *items, size_t n)
{
    size_t  i;

    for (i = 0; items && i < n; i++) {
        free(items[i].json);
    }

    free(items);
}


/*
 * A child whose parent is not in the document: within the parent the
 * store holds now (the parser checked those in the document).
 */

static int
bottlectl_put_parents(bottlectl_t *ctl, const char *name,
    const bottle_policy_t *p)
{
    char              err[1024];
    size_t            i;
    const bottle_t   *b, *parent;
    bottle_policy_t  *pp;

    for (i = 0; i < bottle_policy_count(p); i++) {
        b = bottle_policy_at(p, i);

        if (b->parent.len == 0
            || bottle_policy_find_id(p, b->parent.data, b->parent.len))
        {
            continue;
        }

        if (bottlectl_fetch_bottle(ctl, b->parent.data, &pp)
            != BOTTLECTL_OK)
        {
            bottlectl_error("%s: bottle \"%s\": parent: no bottle \"%s\" in "
                            "it or in the store", name, b->id.data,
                            b->parent.data);
            return -1;
        }

        parent = bottle_policy_find_id(pp, b->parent.data, b->parent.len);

        if (parent->parent.len) {
            bottlectl_error("%s: bottle \"%s\": parent: \"%s\" is itself a "
                            "child (of \"%s\"): depth is 1", name, b->id.data,
                            parent->id.data, parent->parent.data);
            bottle_policy_free(pp);
            return -1;
        }

        if (bottle_child_check(b, parent, err, sizeof(err)) != 0) {
            bottlectl_error("%s", err);
            bottle_policy_free(pp);
            return -1;
        }

        bottle_policy_free(pp);
    }

    return 0;
}


/*
 * The stored form of one bottle: its object, compact with sorted keys,
 * "token" replaced by "token_sha256" in lowercase hex (the parser's
 * digest, the one the gateway compares).  The limits are checked on it
 * as the gateway checks them (bottle_limits.h), and on the token, which
 * only bottlectl sees.
 */

int
bottlectl_put_prepare(bottlectl_t *ctl, const char *name,
    bottlectl_put_t *put, json_t *bottle, const bottle_t *parsed,
    const bottle_policy_t *p)
{
    size_t           i;
    char             err[512];
    json_t          *copy, *token;
    const char      *id;
    const bottle_t  *b;

    static const char  hex[] = "0123456789abcdef";

    /* the parser keeps the document's order: the i-th bottle is this */

    id = json_string_value(json_object_get(bottle, "id"));
    b = parsed;

    if (id && (b == NULL || strcmp(b->id.data, id) != 0)) {
        b = bottle_policy_find_id(p, id, strlen(id));
    }

    if (b == NULL) {
        bottlectl_error("a bottle without a valid id");
        return -1;
    }

    token = json_object_get(bottle, "token");       /* borrowed */

    if (bottle_limits_check_bottle(&ctl->limits, name, b, err, sizeof(err))
        != 0
        || (json_is_string(token)
            && bottle_limits_check_secret(&ctl->limits, name, b->id.data,
                                          "token", json_string_length(token),
                                          err, sizeof(err))
               != 0))
    {
        bottlectl_error("%s", err);
        return -1;
    }

    for (i = 0; i < 32; i++) {
        put->digest[2 * i] = hex[b->token_sha256[i] >> 4];
        put->digest[2 * i + 1] = hex[b->token_sha256[i] & 0x0f];
    }

    put->digest[64] = '\0';
    put->id = id;

    copy = json_deep_copy(bottle);                  /* new */
    if (copy == NULL) {
        bottlectl_error("out of memory");
        return -1;
    }

    json_object_del(copy, "token");

    if (json_object_set_new(copy, "token_sha256", json_string(put->digest))
        != 0)
    {
        json_decref(copy);
        bottlectl_error("out of memory");
        return -1;
    }

    put->json = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(copy);

    if (put->json == NULL) {
        bottlectl_error("out of memory");
        return -1;
    }

    put->len = strlen(put->json);

    if (bottle_limits_check_policy(&ctl->limits, name, b->id.data, put->len,
                                   err, sizeof(err))
        != 0)
    {
        bottlectl_error("%s", err);
        return -1;
    }

    return 0;
}


/*
 * EVAL put 0 n (id json digest)... (version event)... wid ttl store-max
 * audit-max: one script, so all or none, once under its write id, only
 * if the store's total stays within the limit (measured by the script,
 * atomically), and journalled in the same script: one policy.changed
 * event per bottle, built against the version it names.
 */

static int
bottlectl_put_eval(bottlectl_t *ctl, const char *name,
    bottlectl_put_t *items, size_t n, const char *operator_name)
{
    int                   rc, argc, added;
    char                  count[32], wid[BOTTLE_STORE_WRITE_ID_LEN + 1];
    char                  ttl[32], max[32], err[512], (*versions)[32];
    char                 *settled, **events, jmsg[600];
    size_t                i, *lens;
    json_t               *before, *after;
    const char          **argv, *msg;
    redisReply           *r;
    bottlectl_summary_t   sum;

    if (bottlectl_write_id(wid) != 0) {
        bottlectl_error("cannot make a write id: /dev/urandom");
        return BOTTLECTL_REFUSED;
    }

    snprintf(ttl, sizeof(ttl), "%d", BOTTLE_STORE_WRITE_TTL);
    snprintf(max, sizeof(max), "%zu", ctl->limits.store);

    argc = 8 + 5 * (int) n;
    argv = calloc((size_t) argc, sizeof(char *));
    lens = calloc((size_t) argc, sizeof(size_t));
    events = calloc(n + 1, sizeof(char *));
    versions = calloc(n + 1, sizeof(*versions));

    rc = BOTTLECTL_REFUSED;
    r = NULL;
    settled = NULL;

    if (argv == NULL || lens == NULL || events == NULL || versions == NULL) {
        bottlectl_error("out of memory");
        goto cleanup;
    }

    /* each bottle's event, against the version stored now */

    for (i = 0; i < n; i++) {
        rc = bottlectl_stored(ctl, items[i].id, &before, versions[i],
                              sizeof(versions[i]));
        if (rc != BOTTLECTL_OK) {
            goto cleanup;
        }

        after = json_loads(items[i].json, 0, NULL);

        added = before == NULL;

        if (added) {
            before = json_object();     /* a new bottle: all of it added */
        }

        if (after == NULL || before == NULL
            || bottlectl_summarize(&sum, before, after) != 0)
        {
            json_decref(before);
            json_decref(after);
            bottlectl_error("out of memory");
            rc = BOTTLECTL_REFUSED;
            goto cleanup;
        }

        if (added) {
            free(sum.summary);
            sum.summary = strdup("bottle added");
        }

        events[i] = sum.summary
                    ? bottlectl_policy_event(items[i].id, "put",
                                             operator_name, wid,
                                             versions[i][0]
                                             ? strtoll(versions[i], NULL, 10)
                                             : -1, &sum)
                    : NULL;

        bottlectl_summary_free(&sum);
        json_decref(before);
        json_decref(after);

        if (events[i] == NULL) {
            bottlectl_error("out of memory");
            rc = BOTTLECTL_REFUSED;
            goto cleanup;
        }
    }

    snprintf(count, sizeof(count), "%zu", n);

    argv[0] = "EVAL";
    argv[1] = bottle_store_put_once_script;
    argv[2] = "0";
    argv[3] = count;

    for (i = 0; i < n; i++) {
        argv[4 + 3 * i] = items[i].id;
        argv[5 + 3 * i] = items[i].json;
        argv[6 + 3 * i] = items[i].digest;
        argv[4 + 3 * n + 2 * i] = versions[i];
        argv[5 + 3 * n + 2 * i] = events[i];
    }

    argv[argc - 4] = wid;
    argv[argc - 3] = ttl;
    argv[argc - 2] = max;
    argv[argc - 1] = BOTTLECTL_AUDIT_MAXLEN;

    for (i = 0; i < (size_t) argc; i++) {
        lens[i] = strlen(argv[i]);
    }

    rc = bottlectl_write(ctl, wid, &r, &settled, argc, argv, lens);

cleanup:

    for (i = 0; events && i < n; i++) {
        free(events[i]);
    }

    free(events);
    free(versions);
    free(argv);
    free(lens);

    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r == NULL) {
        rc = bottlectl_put_settled(ctl, settled);
        free(settled);
        return rc;
    }

    if (r->type == REDIS_REPLY_ERROR) {
        /* a script's error_reply: "bottle "b": token: already ..." */
        msg = r->str;
        if (strncmp(msg, "ERR ", 4) == 0) {
            msg += 4;
        }

        if (strncmp(msg, "CHANGED ", 8) == 0) {
            snprintf(jmsg, sizeof(jmsg), "%s; nothing written (run it "
                     "again)", msg + 8);
            msg = jmsg;

        } else if (strncmp(msg, "JOURNAL ", 8) == 0) {
            snprintf(jmsg, sizeof(jmsg), "cannot journal the policy change: "
                     "%s", msg + 8);
            msg = jmsg;
        }

        if (strncmp(msg, "LIMIT ", 6) == 0) {
            (void) bottle_limits_check_store(&ctl->limits, name, items[0].id,
                                             (size_t) strtoull(msg + 6, NULL,
                                                               10),
                                             err, sizeof(err));
            msg = err;
        }
        bottlectl_error("%s", msg);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
        bottlectl_error("unexpected reply from the store to the put script");
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    for (i = 0; i < n; i++) {
        printf("%s version %lld\n", items[i].id, r->element[i]->integer);
    }

    freeReplyObject(r);

    return BOTTLECTL_OK;
}


/* the outcome of a write whose reply was lost: "applied\n<id> <v>..." */

static int
bottlectl_put_settled(bottlectl_t *ctl, const char *settled)
{
    (void) ctl;

    if (strncmp(settled, "applied\n", 8) != 0) {
        /* "void": bottlectl_write() said so */
        return BOTTLECTL_UNREACHABLE;
    }

    /* the lines the reply would have printed: "<id> version <v>" */
    printf("%s\n", settled + 8);

    return BOTTLECTL_OK;
}
