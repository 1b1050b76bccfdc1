/*
 * git-gate's configuration, the control plane and the files of the
 * file-source gateway (gg_gate.h).
 */

#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "bottle_audit_chain.h"
#include "bottle_forge.h"
#include "bottle_heartbeat.h"
#include "gg_scand_run.h"
#include "bottle_store.h"
#include "gg_gate.h"


#define GG_STORE_TIMEOUT    5       /* seconds, connect and each command */
#define GG_AUDIT_MAXLEN     "1000000"


struct gg_store_s {
    redisContext       *redis;
    char                name[BOTTLE_STORE_HOST_MAX + 64];  /* no password */
    int                 pending;    /* the heartbeat's reply, unread */
};


static int gg_store_command(gg_store_t *s, redisReply **out, int argc,
    const char **argv, char *err, size_t errlen);
static void gg_store_drain(gg_store_t *s);
static int gg_forge_file(gg_forge_t *out, const gg_conf_t *c,
    const char *forge, char *err, size_t errlen);
static int gg_forge_set(gg_forge_t *out, const char *kind, size_t kind_len,
    const char *url, size_t url_len, const char *token, size_t token_len,
    const char *forge, char *err, size_t errlen);


int
gg_conf_env(gg_conf_t *c, char *err, size_t errlen)
{
    char        *end;
    const char  *s;

    memset(c, 0, sizeof(*c));

    c->dir = getenv("GITGATE_DIR");
    c->store = getenv("GITGATE_STORE");
    c->policy = getenv("GITGATE_POLICY");
    c->forges = getenv("GITGATE_FORGES");
    c->git = getenv("GITGATE_GIT");
    c->refresh = GG_REFRESH_DEFAULT;

    if (c->store && c->store[0] == '\0') {
        c->store = NULL;
    }

    if (c->git == NULL || c->git[0] == '\0') {
        c->git = "git";
    }

    s = getenv("GITGATE_REFRESH");
    if (s && s[0]) {
        c->refresh = (unsigned) strtoul(s, &end, 10);
        if (*end != '\0' || c->refresh > GG_REFRESH_MAX) {
            snprintf(err, errlen, "failure 'GITGATE_REFRESH': not a number "
                     "of seconds up to %d", GG_REFRESH_MAX);
            return -1;
        }
    }

    if (c->dir == NULL || c->dir[0] != '/') {
        snprintf(err, errlen, "failure 'GITGATE_DIR': an absolute path "
                 "is required");
        return -1;
    }

    if (c->store == NULL && (c->policy == NULL || c->policy[0] == '\0')) {
        snprintf(err, errlen, "failure 'GITGATE_STORE': neither a store "
                 "nor GITGATE_POLICY is set");
        return -1;
    }

    return 0;
}


int
gg_store_open(gg_store_t **out, const gg_conf_t *c, char *err, size_t errlen)
{
    gg_store_t          *s;
    bottle_store_url_t   u;

    *out = NULL;

    if (c->store == NULL) {
        return 0;
    }

    if (bottle_store_url_parse(&u, c->store, err, errlen) != 0) {
        return -1;
    }

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    bottle_store_url_print(&u, s->name, sizeof(s->name));

    /* libbottle's connect, AUTH and SELECT, as bottlectl's and supervise's */

    if (bottle_store_connect(&s->redis, &u, GG_STORE_TIMEOUT,
                             GG_STORE_TIMEOUT, err, errlen)
        != 0)
    {
        goto failed;
    }

    *out = s;
    return 0;

failed:

    gg_store_close(s);
    return -1;
}


void
gg_store_close(gg_store_t *s)
{
    if (s == NULL) {
        return;
    }

    if (s->redis) {
        redisFree(s->redis);
    }

    free(s);
}


struct redisContext *
gg_store_redis(gg_store_t *s)
{
    if (s) {
        gg_store_drain(s);
    }

    return s ? s->redis : NULL;
}


int
gg_store_sismember(int *out, gg_store_t *s, const char *key,
    const char *member, char *err, size_t errlen)
{
    const char  *argv[3];
    redisReply  *r;

    argv[0] = "SISMEMBER";
    argv[1] = key;
    argv[2] = member;

    if (gg_store_command(s, &r, 3, argv, err, errlen) != 0) {
        return -1;
    }

    *out = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return 0;
}


/* a reply that is no error, or -1 and err (never the arguments) */

static int
gg_store_command(gg_store_t *s, redisReply **out, int argc,
    const char **argv, char *err, size_t errlen)
{
    redisReply  *r;

    if (s->pending) {
        /* the heartbeat and this command go out in one write */
        if (redisAppendCommandArgv(s->redis, argc, argv, NULL) != REDIS_OK) {
            r = NULL;

        } else {
            gg_store_drain(s);

            if (redisGetReply(s->redis, (void **) &r) != REDIS_OK) {
                r = NULL;
            }
        }

    } else {
        r = redisCommandArgv(s->redis, argc, argv, NULL);
    }

    if (r == NULL) {
        snprintf(err, errlen, "failure '%s': %s", s->name,
                 s->redis->errstr[0] ? s->redis->errstr : "no reply");
        return -1;
    }

    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "failure '%s': %s %s", s->name, argv[0],
                 r->str ? r->str : "error");
        freeReplyObject(r);
        return -1;
    }

    *out = r;
    return 0;
}


int
gg_policy_load(bottle_policy_t **out, const gg_conf_t *c, gg_store_t *s,
    const char *id, char *err, size_t errlen)
{
    int          rc;
    char         key[512];
    const char  *argv[3];
    redisReply  *r;

    *out = NULL;

    if (s == NULL) {
        if (bottle_policy_load(out, c->policy, err, errlen) != 0) {
            return -1;
        }

    } else {
        snprintf(key, sizeof(key), "%s%s", BOTTLE_STORE_POLICY_PREFIX, id);
        argv[0] = "HGET";
        argv[1] = key;
        argv[2] = BOTTLE_STORE_F_JSON;

        if (gg_store_command(s, &r, 3, argv, err, errlen) != 0) {
            return -1;
        }

        if (r->type != REDIS_REPLY_STRING) {
            freeReplyObject(r);
            snprintf(err, errlen, "failure 'bottle': not in the store");
            return -1;
        }

        /* in the resident scanner's child: parsed already, when these
         * bytes were seen (gg_scand_run.h) */
        rc = gg_scand_policy("store", key, id, r->str, r->len, out) == 0
             ? 0 : bottle_policy_parse(out, r->str, r->len, key, err, errlen);
        freeReplyObject(r);

        if (rc != 0) {
            return -1;
        }
    }

    if (bottle_policy_find_id(*out, id, strlen(id)) == NULL) {
        snprintf(err, errlen, "failure 'bottle': not in the policy");
        bottle_policy_free(*out);
        *out = NULL;
        return -1;
    }

    return 0;
}


int
gg_forge_load(gg_forge_t *out, const gg_conf_t *c, gg_store_t *s,
    const char *forge, char *err, size_t errlen)
{
    int           rc;
    char          key[BOTTLE_FORGE_NAME_MAX + 32];
    size_t        i, klen, ulen, tlen;
    const char   *argv[5], *kind, *url, *token;
    redisReply   *r;

    memset(out, 0, sizeof(*out));

    if (s == NULL) {
        return gg_forge_file(out, c, forge, err, errlen);
    }

    snprintf(key, sizeof(key), "%s%s", BOTTLE_FORGE_PREFIX, forge);
    argv[0] = "HMGET";
    argv[1] = key;
    argv[2] = BOTTLE_FORGE_F_KIND;
    argv[3] = BOTTLE_FORGE_F_URL;
    argv[4] = BOTTLE_FORGE_F_TOKEN;

    if (gg_store_command(s, &r, 5, argv, err, errlen) != 0) {
        return -1;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        freeReplyObject(r);
        snprintf(err, errlen, "failure '%s': not a forge's hash", key);
        return -1;
    }

    for (i = 0; i < 3; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING) {
            break;
        }
    }

    /* no url: not connected (a token is optional: a public forge) */
    if (r->element[1]->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return 1;
    }

    kind = i > 0 ? r->element[0]->str : "";
    klen = i > 0 ? r->element[0]->len : 0;
    url = r->element[1]->str;
    ulen = r->element[1]->len;
    token = r->element[2]->type == REDIS_REPLY_STRING ? r->element[2]->str
                                                      : "";
    tlen = r->element[2]->type == REDIS_REPLY_STRING ? r->element[2]->len
                                                     : 0;

    rc = gg_forge_set(out, kind, klen, url, ulen, token, tlen, key, err,
                      errlen);
    freeReplyObject(r);

    return rc;
}


/*
 * The forges file of a file-source gateway:
 *   {"forges": {"<forge>": {"kind": "gitea", "url": "https://...",
 *                           "token_file": "/etc/.../token"}}}
 * ("token" inline is taken too).
 */

static int
gg_forge_file(gg_forge_t *out, const gg_conf_t *c, const char *forge,
    char *err, size_t errlen)
{
    int            rc;
    char           buf[GG_TOKEN_MAX + 2];
    FILE          *f;
    size_t         n;
    json_t        *root, *fo, *kind, *url, *token, *tfile;
    const char    *tok;
    json_error_t   je;

    if (c->forges == NULL || c->forges[0] == '\0') {
        return 1;
    }

    root = json_load_file(c->forges, 0, &je);
    if (root == NULL) {
        snprintf(err, errlen, "failure '%s': line %d: %s", c->forges,
                 je.line, je.text);
        return -1;
    }

    rc = 1;
    fo = json_object_get(json_object_get(root, "forges"), forge);

    if (!json_is_object(fo)) {
        goto cleanup;
    }

    kind = json_object_get(fo, "kind");
    url = json_object_get(fo, "url");
    token = json_object_get(fo, "token");
    tfile = json_object_get(fo, "token_file");

    if (!json_is_string(url)) {
        rc = -1;
        snprintf(err, errlen, "failure '%s': forge '%s': url must be a "
                 "string", c->forges, forge);
        goto cleanup;
    }

    tok = json_is_string(token) ? json_string_value(token) : "";
    n = strlen(tok);

    if (json_is_string(tfile)) {
        f = fopen(json_string_value(tfile), "r");
        if (f == NULL) {
            rc = -1;
            snprintf(err, errlen, "failure '%s': forge '%s': cannot read "
                     "its token_file", c->forges, forge);
            goto cleanup;
        }

        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) {
            n--;
        }
        buf[n] = '\0';
        tok = buf;
    }

    rc = gg_forge_set(out, json_is_string(kind) ? json_string_value(kind)
                                                : "",
                      json_is_string(kind) ? json_string_length(kind) : 0,
                      json_string_value(url), json_string_length(url),
                      tok, n, c->forges, err, errlen);

cleanup:

    explicit_bzero(buf, sizeof(buf));
    json_decref(root);
    return rc;
}


static int
gg_forge_set(gg_forge_t *out, const char *kind, size_t kind_len,
    const char *url, size_t url_len, const char *token, size_t token_len,
    const char *forge, char *err, size_t errlen)
{
    size_t  i;

    while (url_len && url[url_len - 1] == '/') {
        url_len--;
    }

    if (url_len == 0 || url_len >= sizeof(out->url)
        || (strncmp(url, "https://", 8) != 0
            && strncmp(url, "http://", 7) != 0))
    {
        snprintf(err, errlen, "failure '%s': url is not an http(s) URL",
                 forge);
        return -1;
    }

    for (i = 0; i < url_len; i++) {
        if ((unsigned char) url[i] <= 0x20 || url[i] == 0x7f
            || url[i] == '@')
        {
            snprintf(err, errlen, "failure '%s': url holds a space, a "
                     "control byte or credentials", forge);
            return -1;
        }
    }

    for (i = 0; i < token_len; i++) {
        if ((unsigned char) token[i] < 0x21 || token[i] == 0x7f) {
            snprintf(err, errlen, "failure '%s': the token holds a space "
                     "or a control byte", forge);
            return -1;
        }
    }

    if (token_len >= sizeof(out->token)) {
        snprintf(err, errlen, "failure '%s': the token is too long", forge);
        return -1;
    }

    if (kind_len >= sizeof(out->kind)) {
        kind_len = sizeof(out->kind) - 1;
    }

    memcpy(out->kind, kind, kind_len);
    out->kind[kind_len] = '\0';
    memcpy(out->url, url, url_len);
    out->url[url_len] = '\0';
    memcpy(out->token, token, token_len);
    out->token[token_len] = '\0';

    return 0;
}


int
gg_journal(gg_store_t *s, const char *json, size_t len, char *err,
    size_t errlen)
{
    redisReply  *r;

    if (s == NULL) {
        snprintf(err, errlen, "failure 'journal': no store");
        return -1;
    }

    gg_store_drain(s);

    r = bottle_audit_append(s->redis, GG_AUDIT_MAXLEN, json, len);

    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "failure '%s': journal: %s", s->name,
                 r ? r->str : s->redis->errstr);
        if (r) {
            freeReplyObject(r);
        }
        return -1;
    }

    freeReplyObject(r);
    return 0;
}


/* the forge's URL of the repo; 1 if the forge is not connected */

int
gg_forge_url(gg_ctx_t *ctx, char *err, size_t errlen)
{
    int  rc;

    rc = gg_forge_load(&ctx->forge, &ctx->conf, ctx->store, ctx->repo.forge,
                       err, errlen);
    if (rc != 0) {
        return rc;
    }

    snprintf(ctx->url, sizeof(ctx->url), "%s/%s/%s.git", ctx->forge.url,
             ctx->repo.owner, ctx->repo.repo);

    return 0;
}


void
gg_ctx_free(gg_ctx_t *ctx)
{
    explicit_bzero(ctx->forge.token, sizeof(ctx->forge.token));

    if (ctx->policy) {
        bottle_policy_free(ctx->policy);
    }

    gg_store_close(ctx->store);
}


/*
 * The heartbeat (docs/control-plane.md, "Heartbeats"): git-gate runs per
 * request, so each request's first store command carries its record,
 * "bottle:heartbeat:git-gate:<host>", in the same write; its reply is
 * read with that command's.  Its age says when git-gate last served a
 * request: idle, not down.
 */

void
gg_store_heartbeat(gg_store_t *s)
{
    char                 host[128], key[BOTTLE_HEARTBEAT_KEY_LEN], *json;
    struct timeval       tv;
    bottle_heartbeat_t   hb;

    if (s == NULL || s->pending) {
        return;
    }

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "git-gate");
    }

    host[sizeof(host) - 1] = '\0';

    gettimeofday(&tv, NULL);

    bottle_heartbeat_init(&hb);

    hb.kind = BOTTLE_HEARTBEAT_GITGATE;
    hb.id = host;
    hb.host = host;
    hb.instance = host;
    hb.store = "up";
    hb.pid = getpid();
    hb.time_ms = (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000;
    hb.period_ms = 0;
    hb.ttl_ms = bottle_heartbeat_ttl(0);

    json = bottle_heartbeat_json(&hb);
    if (json == NULL) {
        return;
    }

    (void) bottle_heartbeat_key(key, BOTTLE_HEARTBEAT_GITGATE, host);

    if (redisAppendCommand(s->redis, "SET %s %s PX %lld", key, json,
                           (long long) hb.ttl_ms)
        == REDIS_OK)
    {
        s->pending = 1;
    }

    free(json);
}


/* the heartbeat's reply, whatever it is */

static void
gg_store_drain(gg_store_t *s)
{
    void  *r;

    if (!s->pending) {
        return;
    }

    s->pending = 0;

    if (redisGetReply(s->redis, &r) == REDIS_OK) {
        freeReplyObject(r);
    }
}
