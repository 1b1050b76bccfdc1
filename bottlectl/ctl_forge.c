/*
 * bottlectl forge connect|rm, forges: the forges git-gate serves
 * (docs/gitgate.md, lib/bottle_forge.h).  A forge is the hash
 * bottle:forge:<forge> {kind, url, api, token, account} and a member of
 * the set bottle:forges.  The token is read from a file (never argv) and
 * never printed.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bottlectl.h"


#define BOTTLECTL_FORGE_TOKEN_MAX  4096


static int bottlectl_forge_connect(bottlectl_t *ctl, int argc, char **argv);
static int bottlectl_forge_rm(bottlectl_t *ctl, const char *name);
static int bottlectl_forge_name(char *out, const char *s);
static int bottlectl_url_ok(const char *what, const char *url);
static int bottlectl_token_file(char *out, const char *file);
static int bottlectl_exec(bottlectl_t *ctl, int argc, const char **argv,
    const size_t *argvlen, const char *what);


static const char  bottlectl_forge_usage[] =
    "forge connect FORGE --kind gitea|github --url URL [--api URL] "
    "--token-file FILE [--account NAME] | forge rm FORGE";


int
bottlectl_forge(bottlectl_t *ctl, int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "connect") == 0) {
        return bottlectl_forge_connect(ctl, argc - 2, argv + 2);
    }

    if (argc == 3 && strcmp(argv[1], "rm") == 0) {
        return bottlectl_forge_rm(ctl, argv[2]);
    }

    return bottlectl_usage(bottlectl_forge_usage);
}


static int
bottlectl_forge_connect(bottlectl_t *ctl, int argc, char **argv)
{
    int          i, rc, n;
    char         name[BOTTLE_FORGE_NAME_MAX + 1], key[BOTTLE_FORGE_NAME_MAX + 32],
                 token[BOTTLECTL_FORGE_TOKEN_MAX + 1];
    size_t       len[16];
    const char  *kind, *url, *api, *file, *account, *other, *av[16];

    kind = url = api = file = account = NULL;

    if (bottlectl_forge_name(name, argv[0]) != 0) {
        return BOTTLECTL_REFUSED;
    }

    for (i = 1; i < argc; i++) {
        if (i + 1 == argc) {
            return bottlectl_usage(bottlectl_forge_usage);
        }

        if (strcmp(argv[i], "--kind") == 0) {
            kind = argv[++i];
        } else if (strcmp(argv[i], "--url") == 0) {
            url = argv[++i];
        } else if (strcmp(argv[i], "--api") == 0) {
            api = argv[++i];
        } else if (strcmp(argv[i], "--token-file") == 0) {
            file = argv[++i];
        } else if (strcmp(argv[i], "--account") == 0) {
            account = argv[++i];
        } else {
            return bottlectl_usage(bottlectl_forge_usage);
        }
    }

    if (kind == NULL || url == NULL || file == NULL) {
        return bottlectl_usage(bottlectl_forge_usage);
    }

    other = bottle_forge_other_kind(name);
    if (other) {
        bottlectl_error("forge \"%s\" runs %s: git-gate serves gitea and "
                        "github forges only", name, other);
        return BOTTLECTL_REFUSED;
    }

    if (bottle_forge_kind_valid(kind) != 0) {
        bottlectl_error("--kind: \"gitea\" or \"github\"");
        return BOTTLECTL_REFUSED;
    }

    if (bottlectl_url_ok("--url", url) != 0
        || (api && bottlectl_url_ok("--api", api) != 0)
        || bottlectl_token_file(token, file) != 0)
    {
        return BOTTLECTL_REFUSED;
    }

    snprintf(key, sizeof(key), "%s%s", BOTTLE_FORGE_PREFIX, name);

    /* the whole hash replaced, and the set, at once */
    av[0] = "MULTI";
    rc = bottlectl_exec(ctl, 1, av, NULL, "MULTI");
    if (rc != BOTTLECTL_OK) {
        goto cleanup;
    }

    av[0] = "DEL";
    av[1] = key;
    rc = bottlectl_exec(ctl, 2, av, NULL, "DEL");
    if (rc != BOTTLECTL_OK) {
        goto cleanup;
    }

    n = 0;
    av[n++] = "HSET";
    av[n++] = key;
    av[n++] = BOTTLE_FORGE_F_KIND;
    av[n++] = kind;
    av[n++] = BOTTLE_FORGE_F_URL;
    av[n++] = url;
    av[n++] = BOTTLE_FORGE_F_TOKEN;
    av[n++] = token;
    if (api) {
        av[n++] = BOTTLE_FORGE_F_API;
        av[n++] = api;
    }
    if (account) {
        av[n++] = BOTTLE_FORGE_F_ACCOUNT;
        av[n++] = account;
    }

    for (i = 0; i < n; i++) {
        len[i] = strlen(av[i]);
    }

    rc = bottlectl_exec(ctl, n, av, len, "HSET");
    if (rc != BOTTLECTL_OK) {
        goto cleanup;
    }

    av[0] = "SADD";
    av[1] = BOTTLE_FORGES;
    av[2] = name;
    rc = bottlectl_exec(ctl, 3, av, NULL, "SADD");
    if (rc != BOTTLECTL_OK) {
        goto cleanup;
    }

    av[0] = "EXEC";
    rc = bottlectl_exec(ctl, 1, av, NULL, "EXEC");
    if (rc != BOTTLECTL_OK) {
        goto cleanup;
    }

    printf("%s connected (%s, %s)\n", name, kind, url);

cleanup:

    memset(token, 0, sizeof(token));
    return rc;
}


static int
bottlectl_forge_rm(bottlectl_t *ctl, const char *arg)
{
    int          rc;
    char         name[BOTTLE_FORGE_NAME_MAX + 1], key[BOTTLE_FORGE_NAME_MAX + 32];
    long long    n;
    const char  *av[3];
    redisReply  *r;

    if (bottlectl_forge_name(name, arg) != 0) {
        return BOTTLECTL_REFUSED;
    }

    snprintf(key, sizeof(key), "%s%s", BOTTLE_FORGE_PREFIX, name);

    av[0] = "DEL";
    av[1] = key;
    rc = bottlectl_command(ctl, &r, 2, av, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    n = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);

    av[0] = "SREM";
    av[1] = BOTTLE_FORGES;
    av[2] = name;
    rc = bottlectl_command(ctl, &r, 3, av, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    n += r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);

    if (n == 0) {
        bottlectl_error("no forge \"%s\"", name);
        return BOTTLECTL_REFUSED;
    }

    printf("%s removed\n", name);
    return BOTTLECTL_OK;
}


/* the forges, sorted, without their tokens */

static int
bottlectl_str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}


int
bottlectl_forges(bottlectl_t *ctl, int argc, char **argv)
{
    int           rc;
    char          key[BOTTLE_FORGE_NAME_MAX + 32];
    size_t        i, n;
    json_t       *arr, *o;
    const char   *av[6], **names;
    redisReply   *all, *r;

    (void) argv;

    if (argc != 1) {
        return bottlectl_usage("[--json] forges");
    }

    av[0] = "SMEMBERS";
    av[1] = BOTTLE_FORGES;
    rc = bottlectl_command(ctl, &all, 2, av, NULL);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (all->type != REDIS_REPLY_ARRAY) {
        bottlectl_error("cannot read %s", BOTTLE_FORGES);
        freeReplyObject(all);
        return BOTTLECTL_REFUSED;
    }

    n = all->elements;
    names = calloc(n ? n : 1, sizeof(names[0]));
    arr = json_array();
    if (names == NULL || arr == NULL) {
        bottlectl_error("out of memory");
        free(names);
        json_decref(arr);
        freeReplyObject(all);
        return BOTTLECTL_REFUSED;
    }

    for (i = 0; i < n; i++) {
        names[i] = all->element[i]->str ? all->element[i]->str : "";
    }

    qsort(names, n, sizeof(names[0]), bottlectl_str_cmp);

    for (i = 0; rc == BOTTLECTL_OK && i < n; i++) {
        snprintf(key, sizeof(key), "%s%s", BOTTLE_FORGE_PREFIX, names[i]);
        av[0] = "HMGET";
        av[1] = key;
        av[2] = BOTTLE_FORGE_F_KIND;
        av[3] = BOTTLE_FORGE_F_URL;
        av[4] = BOTTLE_FORGE_F_API;
        av[5] = BOTTLE_FORGE_F_ACCOUNT;

        rc = bottlectl_command(ctl, &r, 6, av, NULL);
        if (rc != BOTTLECTL_OK) {
            break;
        }

        if (r->type == REDIS_REPLY_ARRAY && r->elements == 4) {
            if (ctl->json) {
                o = json_pack("{s:s, s:s, s:s, s:s, s:s}",
                              "forge", names[i],
                              "kind", bottlectl_str(r, 0),
                              "url", bottlectl_str(r, 1),
                              "api", bottlectl_str(r, 2),
                              "account", bottlectl_str(r, 3));
                if (o) {
                    json_array_append_new(arr, o);
                }

            } else {
                printf("%s\t%s\t%s\t%s\n", names[i],
                       bottlectl_str(r, 0)[0] ? bottlectl_str(r, 0) : "-",
                       bottlectl_str(r, 1)[0] ? bottlectl_str(r, 1) : "-",
                       bottlectl_str(r, 3)[0] ? bottlectl_str(r, 3) : "-");
            }
        }

        freeReplyObject(r);
    }

    if (rc == BOTTLECTL_OK && ctl->json) {
        char  *s = json_dumps(arr, JSON_INDENT(2));
        if (s) {
            printf("%s\n", s);
            free(s);
        }
    }

    json_decref(arr);
    free(names);
    freeReplyObject(all);
    return rc;
}


static int
bottlectl_forge_name(char *out, const char *s)
{
    if (bottle_forge_name_parse(out, s, strlen(s)) != 0) {
        bottlectl_error("\"%s\" is not a forge name (a host name, "
                        "optionally with :port)", s);
        return -1;
    }

    return 0;
}


static int
bottlectl_url_ok(const char *what, const char *url)
{
    size_t  i;

    if (strncmp(url, "https://", 8) != 0 && strncmp(url, "http://", 7) != 0) {
        bottlectl_error("%s: an http:// or https:// URL", what);
        return -1;
    }

    for (i = 0; url[i]; i++) {
        if ((unsigned char) url[i] <= 0x20 || url[i] == 0x7f
            || url[i] == '@')
        {
            bottlectl_error("%s: no spaces, control bytes or credentials "
                            "(the token goes in --token-file)", what);
            return -1;
        }
    }

    return 0;
}


/* the token: the file's first line, printable, no spaces */

static int
bottlectl_token_file(char *out, const char *file)
{
    char    *text;
    size_t   len, i;

    if (bottlectl_read(&text, &len, file) != 0) {
        return -1;
    }

    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r')) {
        len--;
    }

    if (len == 0 || len > BOTTLECTL_FORGE_TOKEN_MAX) {
        bottlectl_error("--token-file: empty, or longer than %d bytes",
                        BOTTLECTL_FORGE_TOKEN_MAX);
        memset(text, 0, len);
        free(text);
        return -1;
    }

    for (i = 0; i < len; i++) {
        if ((unsigned char) text[i] < 0x21 || text[i] == 0x7f) {
            bottlectl_error("--token-file: one line, no spaces or control "
                            "bytes");
            memset(text, 0, len);
            free(text);
            return -1;
        }
    }

    memcpy(out, text, len);
    out[len] = '\0';
    memset(text, 0, len);
    free(text);

    return 0;
}


static int
bottlectl_exec(bottlectl_t *ctl, int argc, const char **argv,
    const size_t *argvlen, const char *what)
{
    int          rc;
    redisReply  *r;

    rc = bottlectl_command(ctl, &r, argc, argv, argvlen);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type == REDIS_REPLY_ERROR) {
        bottlectl_error("%s: %s", what, r->str);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    freeReplyObject(r);
    return BOTTLECTL_OK;
}
