/*
 * A policy document as bottlectl policy put, check and diff read it: a
 * file, standard input, or a directory read exactly as the gateway reads
 * one (bottle_policy_load(): its "*.json" files sorted by name); what
 * a put changes in one bottle, for the policy.changed journal event and
 * policy diff; and one bottle as stored, for policy get, a put's parent
 * and explain (bottlectl_fetch_bottle()).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "bottle_audit_chain.h"
#include "bottlectl.h"


static int bottlectl_source_add(bottlectl_source_t *src, const char *text,
    size_t len, const char *name);
static int bottlectl_source_again(bottlectl_source_t *src, const char *path);
static json_t *bottlectl_routes(const json_t *bottle);
static int bottlectl_summary_text(bottlectl_summary_t *s);


int
bottlectl_source_load(bottlectl_source_t *src, const char *path)
{
    char         err[1024], **files, *text;
    size_t       i, n, len;
    struct stat  st;

    memset(src, 0, sizeof(*src));

    src->bottles = json_array();
    if (src->bottles == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    src->name = strcmp(path, "-") == 0 ? "stdin" : path;

    if (strcmp(path, "-") == 0 || stat(path, &st) != 0
        || !S_ISDIR(st.st_mode))
    {
        /* one document: the gateway's parser on its bytes */

        if (bottlectl_read(&src->text, &src->len, path) != 0) {
            return BOTTLECTL_REFUSED;
        }

        if (bottle_policy_parse(&src->policy, src->text, src->len,
                                src->name, err, sizeof(err))
            != 0
            || bottle_policy_unsupported(src->policy, err, sizeof(err)) != 0)
        {
            bottlectl_error("%s", err);
            return BOTTLECTL_REFUSED;
        }

        return bottlectl_source_add(src, src->text, src->len, src->name);
    }

    /* a directory: the gateway's loader, then the same files' objects */

    if (bottle_policy_load(&src->policy, path, err, sizeof(err)) != 0
        || bottle_policy_unsupported(src->policy, err, sizeof(err)) != 0)
    {
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;
    }

    if (bottle_policy_files(&files, &n, path, err, sizeof(err)) != 0) {
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;
    }

    for (i = 0; i < n; i++) {
        if (bottlectl_read(&text, &len, files[i]) != 0) {
            break;
        }

        if (bottlectl_source_add(src, text, len, files[i]) != 0) {
            memset(text, 0, len);
            free(text);
            break;
        }

        memset(text, 0, len);
        free(text);
    }

    bottle_policy_files_free(files, n);

    if (i != n) {
        return BOTTLECTL_REFUSED;
    }

    return bottlectl_source_again(src, path);
}


/*
 * The files were read twice (by the gateway's loader, then for their
 * objects): the objects are parsed again, so that what put stores is
 * what was checked even if a file changed in between.
 */

static int
bottlectl_source_again(bottlectl_source_t *src, const char *path)
{
    int      rc;
    char    *text, err[1024];
    json_t  *doc;

    doc = json_pack("{s:O}", "bottles", src->bottles);
    text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);

    if (text == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    bottle_policy_free(src->policy);

    rc = bottle_policy_parse(&src->policy, text, strlen(text), path, err,
                             sizeof(err))
         || bottle_policy_unsupported(src->policy, err, sizeof(err));

    /* it holds tokens and egress secrets */
    memset(text, 0, strlen(text));
    free(text);

    if (rc != 0) {
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;
    }

    return BOTTLECTL_OK;
}


/* the document's bottles ({"bottles": [...]} or one bottle object) */

static int
bottlectl_source_add(bottlectl_source_t *src, const char *text, size_t len,
    const char *name)
{
    size_t        i;
    json_t       *root, *list;
    json_error_t  jerr;

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        bottlectl_error("%s: invalid JSON", name);
        return BOTTLECTL_REFUSED;
    }

    list = json_object_get(root, "bottles");        /* borrowed */

    if (list == NULL) {
        json_array_append(src->bottles, root);

    } else {
        for (i = 0; i < json_array_size(list); i++) {
            json_array_append(src->bottles, json_array_get(list, i));
        }
    }

    json_decref(root);

    return BOTTLECTL_OK;
}


void
bottlectl_source_free(bottlectl_source_t *src)
{
    if (src->text) {
        /* it may hold tokens and egress secrets */
        memset(src->text, 0, src->len);
        free(src->text);
    }

    json_decref(src->bottles);
    bottle_policy_free(src->policy);
    memset(src, 0, sizeof(*src));
}


/* {host: route} of a bottle's routes; a route without a host is skipped */

static json_t *
bottlectl_routes(const json_t *bottle)
{
    size_t       i;
    json_t      *out, *r, *list;
    const char  *host;

    out = json_object();
    list = json_object_get(bottle, "routes");

    for (i = 0; out && i < json_array_size(list); i++) {
        r = json_array_get(list, i);
        host = json_string_value(json_object_get(r, "host"));

        if (host) {
            json_object_set(out, host, r);
        }
    }

    return out;
}


int
bottlectl_summarize(bottlectl_summary_t *s, const json_t *before,
    const json_t *after)
{
    json_t      *rb, *ra, *v, *w;
    const char  *key;

    memset(s, 0, sizeof(*s));

    s->added = json_array();
    s->removed = json_array();
    s->changed = json_array();
    s->fields = json_array();
    rb = bottlectl_routes(before);
    ra = bottlectl_routes(after);

    if (s->added == NULL || s->removed == NULL || s->changed == NULL
        || s->fields == NULL || rb == NULL || ra == NULL)
    {
        json_decref(rb);
        json_decref(ra);
        return -1;
    }

    json_object_foreach(ra, key, v) {
        w = json_object_get(rb, key);
        if (w == NULL) {
            json_array_append_new(s->added, json_string(key));

        } else if (!json_equal(v, w)) {
            json_array_append_new(s->changed, json_string(key));
        }
    }

    json_object_foreach(rb, key, v) {
        if (json_object_get(ra, key) == NULL) {
            json_array_append_new(s->removed, json_string(key));
        }
    }

    json_decref(rb);
    json_decref(ra);

    /* the other top-level fields, "token_sha256" among them */

    json_object_foreach((json_t *) after, key, v) {
        if (strcmp(key, "routes") != 0
            && !json_equal(v, json_object_get(before, key)))
        {
            json_array_append_new(s->fields, json_string(key));
        }
    }

    json_object_foreach((json_t *) before, key, v) {
        if (strcmp(key, "routes") != 0
            && json_object_get(after, key) == NULL)
        {
            json_array_append_new(s->fields, json_string(key));
        }
    }

    return bottlectl_summary_text(s);
}


/* "routes added: a, b; routes removed: c; fields changed: audit" */

static int
bottlectl_summary_text(bottlectl_summary_t *s)
{
    size_t        i, k, len;
    json_t       *list;
    const char   *item;
    char         *buf, *p;

    static const char  *const names[] = { "routes added", "routes removed",
                                          "routes changed", "fields changed" };

    json_t  *lists[4];

    lists[0] = s->added;
    lists[1] = s->removed;
    lists[2] = s->changed;
    lists[3] = s->fields;

    /* the worst case: every name, every item and its separator */

    len = 16;

    for (k = 0; k < 4; k++) {
        len += strlen(names[k]) + 4;
        for (i = 0; i < json_array_size(lists[k]); i++) {
            len += json_string_length(json_array_get(lists[k], i)) + 2;
        }
    }

    buf = malloc(len);
    if (buf == NULL) {
        return -1;
    }

    p = buf;

    for (k = 0; k < 4; k++) {
        list = lists[k];

        if (json_array_size(list) == 0) {
            continue;
        }

        p += sprintf(p, "%s%s: ", p == buf ? "" : "; ", names[k]);

        for (i = 0; i < json_array_size(list); i++) {
            item = json_string_value(json_array_get(list, i));
            p += sprintf(p, "%s%s", i ? ", " : "", item);
        }
    }

    if (p == buf) {
        strcpy(buf, "no change");
    }

    s->summary = buf;

    return 0;
}


void
bottlectl_summary_free(bottlectl_summary_t *s)
{
    json_decref(s->added);
    json_decref(s->removed);
    json_decref(s->changed);
    json_decref(s->fields);
    free(s->summary);
    memset(s, 0, sizeof(*s));
}


/* a JSON array of strings as the event's list (items borrowed) */

static const char **
bottlectl_list(const json_t *a, bottle_audit_list_t *l)
{
    size_t        i;
    const char  **items;

    l->n = json_array_size(a);
    items = calloc(l->n + 1, sizeof(char *));

    for (i = 0; items && i < l->n; i++) {
        items[i] = json_string_value(json_array_get(a, i));
    }

    l->items = items;

    return items;
}


char *
bottlectl_policy_event(const char *bottle, const char *action,
    const char *operator_name, const char *wid, long long old_version,
    const bottlectl_summary_t *s)
{
    int                   k, ok;
    char                 *json;
    size_t                len;
    const char          **items[4];
    bottle_audit_event_t  e;

    memset(&e, 0, sizeof(e));

    e.type = BOTTLE_AUDIT_POLICY_CHANGED;
    e.producer = "bottlectl";
    e.bottle.data = bottle;
    e.bottle.len = strlen(bottle);
    e.correlation_id.data = wid;
    e.correlation_id.len = strlen(wid);
    e.operator_name.data = operator_name;
    e.operator_name.len = strlen(operator_name);
    e.operator_action.data = action;
    e.operator_action.len = strlen(action);
    e.old_version = old_version;
    e.new_version = strcmp(action, "put") == 0 ? 0 : -1;
    e.summary.data = s->summary;
    e.summary.len = strlen(s->summary);

    items[0] = bottlectl_list(s->added, &e.routes_added);
    items[1] = bottlectl_list(s->removed, &e.routes_removed);
    items[2] = bottlectl_list(s->changed, &e.routes_changed);
    items[3] = bottlectl_list(s->fields, &e.fields_changed);

    ok = 1;
    for (k = 0; k < 4; k++) {
        ok = ok && items[k] != NULL;
    }

    /*
     * the plain JSON: the put's script fills in the new version, so the
     * chain's digest is taken there (the chained argument's "<hex>:" off)
     */

    json = ok ? bottle_decision_event_arg(&e, "bottlectl", &len) : NULL;

    if (json != NULL && len > BOTTLE_AUDIT_HEX_LEN) {
        len -= BOTTLE_AUDIT_HEX_LEN;
        memmove(json, json + BOTTLE_AUDIT_HEX_LEN, len + 1);
    }

    for (k = 0; k < 4; k++) {
        free(items[k]);
    }

    return json;
}


/*
 * The bottle as stored: its bottle:bottles version ("" none), then its
 * object (NULL none).  Plain reads, no script: the put script checks the
 * version again, so a change between the two reads is "CHANGED" there.
 */

int
bottlectl_stored(bottlectl_t *ctl, const char *id, json_t **json,
    char *version, size_t size)
{
    int          rc, k;
    char         key[BOTTLECTL_URL_LEN];
    const char  *argv[3];
    redisReply  *r;

    *json = NULL;
    version[0] = '\0';

    if (strlen(id) + sizeof(BOTTLE_STORE_POLICY_PREFIX) > sizeof(key)) {
        bottlectl_error("bottle \"%.64s...\": the id is too long", id);
        return BOTTLECTL_REFUSED;
    }

    snprintf(key, sizeof(key), "%s%s", BOTTLE_STORE_POLICY_PREFIX, id);

    for (k = 0; k < 2; k++) {
        argv[0] = "HGET";
        argv[1] = k == 0 ? BOTTLE_STORE_BOTTLES : key;
        argv[2] = k == 0 ? id : BOTTLE_STORE_F_JSON;

        rc = bottlectl_command(ctl, &r, 3, argv, NULL);
        if (rc != BOTTLECTL_OK) {
            json_decref(*json);
            *json = NULL;
            return rc;
        }

        if (r->type == REDIS_REPLY_ERROR) {
            bottlectl_error("cannot read bottle \"%s\": %s", id, r->str);
            freeReplyObject(r);
            json_decref(*json);
            *json = NULL;
            return BOTTLECTL_REFUSED;
        }

        if (r->type == REDIS_REPLY_STRING && k == 0) {
            snprintf(version, size, "%s", r->str);

        } else if (r->type == REDIS_REPLY_STRING) {
            *json = json_loadb(r->str, r->len, 0, NULL);
            if (*json == NULL) {
                *json = json_object();  /* unreadable: all of it changes */
            }
        }

        freeReplyObject(r);
    }

    return BOTTLECTL_OK;
}


/* HGET bottle:policy:<id> json: 0 with a string reply, or an exit status */

int
bottlectl_get_json(bottlectl_t *ctl, const char *id, redisReply **out)
{
    int          rc;
    char        *key;
    size_t       len;
    const char  *argv[3];
    redisReply  *r;

    *out = NULL;

    len = sizeof(BOTTLE_STORE_POLICY_PREFIX) + strlen(id);
    key = malloc(len);
    if (key == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    snprintf(key, len, "%s%s", BOTTLE_STORE_POLICY_PREFIX, id);

    argv[0] = "HGET";
    argv[1] = key;
    argv[2] = BOTTLE_STORE_F_JSON;

    rc = bottlectl_command(ctl, &r, 3, argv, NULL);
    free(key);

    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type == REDIS_REPLY_ERROR) {
        bottlectl_error("cannot read bottle \"%s\": %s", id, r->str);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    if (r->type != REDIS_REPLY_STRING) {
        bottlectl_error("no bottle \"%s\"", id);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    *out = r;

    return BOTTLECTL_OK;
}


int
bottlectl_fetch_bottle(bottlectl_t *ctl, const char *id,
    bottle_policy_t **out)
{
    int           rc;
    char          err[1024], source[BOTTLECTL_URL_LEN];
    redisReply   *r;

    *out = NULL;

    if (ctl->policy) {
        if (bottle_policy_load(out, ctl->policy, err, sizeof(err)) != 0) {
            bottlectl_error("%s", err);
            return BOTTLECTL_REFUSED;
        }

        if (bottle_policy_find_id(*out, id, strlen(id)) == NULL) {
            bottlectl_error("no bottle \"%s\" in '%s'", id, ctl->policy);
            bottle_policy_free(*out);
            *out = NULL;
            return BOTTLECTL_REFUSED;
        }

        return BOTTLECTL_OK;
    }

    rc = bottlectl_get_json(ctl, id, &r);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    snprintf(source, sizeof(source), "%s%s", BOTTLE_STORE_POLICY_PREFIX, id);

    rc = bottle_policy_parse(out, r->str, r->len, source, err, sizeof(err));
    freeReplyObject(r);

    if (rc != 0) {
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;
    }

    if (bottle_policy_find_id(*out, id, strlen(id)) == NULL) {
        bottlectl_error("%s: holds no bottle \"%s\"", source, id);
        bottle_policy_free(*out);
        *out = NULL;
        return BOTTLECTL_REFUSED;
    }

    return BOTTLECTL_OK;
}
