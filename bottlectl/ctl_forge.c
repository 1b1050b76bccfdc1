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

#include "bottle_forge_client.h"
#include "bottlectl.h"


static int bottlectl_forge_connect(bottlectl_t *ctl, int argc, char **argv);
static int bottlectl_forge_rm(bottlectl_t *ctl, const char *name);
static int bottlectl_forge_name(char *out, const char *s);
static int bottlectl_token_file(char *out, const char *file);


static const char  bottlectl_forge_usage[] =
    "forge connect FORGE --kind gitea|github --url URL [--api URL] "
    "--token-file FILE [--account NAME] | forge connect --proposal ID "
    "--kind gitea|github --token-file FILE [--api URL] [--account NAME] "
    "[--note TEXT] | forge rm FORGE";


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


/*
 * forge connect FORGE ...: the operator's own forge; forge connect
 * --proposal ID ...: an agent's forge-connect, the forge and its URL the
 * proposal's, answered (bottle_forge_connect_answer()).
 */

static int
bottlectl_forge_connect(bottlectl_t *ctl, int argc, char **argv)
{
    int                          i, rc, lost;
    char                         name[BOTTLE_FORGE_NAME_MAX + 1],
                                 err[1024];
    const char                  *kind, *url, *api, *file, *account, *other,
                                *proposal, *note;
    bottle_forge_conf_t         *f;
    bottle_forge_connect_req_t   req;
    bottle_decision_result_t     res;

    kind = url = api = file = account = proposal = note = NULL;
    i = 0;

    if (strcmp(argv[0], "--proposal") != 0) {
        if (bottlectl_forge_name(name, argv[0]) != 0) {
            return BOTTLECTL_REFUSED;
        }

        i = 1;
    }

    for ( /* void */ ; i < argc; i++) {
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
        } else if (strcmp(argv[i], "--proposal") == 0) {
            proposal = argv[++i];
        } else if (strcmp(argv[i], "--note") == 0) {
            note = argv[++i];
        } else {
            return bottlectl_usage(bottlectl_forge_usage);
        }
    }

    /* with a proposal the operator gives neither the forge nor its URL */

    if (kind == NULL || file == NULL
        || (proposal ? url != NULL || strcmp(argv[0], "--proposal") != 0
                     : url == NULL || note != NULL))
    {
        return bottlectl_usage(bottlectl_forge_usage);
    }

    if (bottle_forge_kind_valid(kind) != 0) {
        bottlectl_error("--kind: \"gitea\" or \"github\"");
        return BOTTLECTL_REFUSED;
    }

    if ((url && bottle_forge_url_check("--url", url, err, sizeof(err)) != 0)
        || (api && bottle_forge_url_check("--api", api, err, sizeof(err))
                   != 0))
    {
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;
    }

    if (account && (account[0] == '\0'
                    || strlen(account) > BOTTLE_FORGE_ACCOUNT_MAX))
    {
        bottlectl_error("--account: 1 to %d bytes", BOTTLE_FORGE_ACCOUNT_MAX);
        return BOTTLECTL_REFUSED;
    }

    if (!proposal) {
        other = bottle_forge_other_kind(name);
        if (other) {
            bottlectl_error("forge \"%s\" runs %s: git-gate serves gitea and "
                            "github forges only", name, other);
            return BOTTLECTL_REFUSED;
        }
    }

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    if (bottlectl_token_file(f->token, file) != 0) {
        free(f);
        return BOTTLECTL_REFUSED;
    }

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        goto cleanup;
    }

    if (proposal) {
        memset(&req, 0, sizeof(req));
        req.proposal = proposal;
        req.kind = kind;
        req.token = f->token;
        req.api = api;
        req.account = account;
        req.notes = note;
        req.operator_name = bottlectl_operator();
        req.producer = "bottlectl";

        bottle_forge_connect_answer(&res, ctl->redis, &req);

        if (res.warning[0]) {
            bottlectl_error("warning: %s", res.warning);
        }

        rc = bottlectl_decision_status(ctl, &res);

        if (rc == BOTTLECTL_OK) {
            printf("%s %s: %s connected as %s\n", proposal, res.state,
                   json_string_value(json_object_get(
                       json_object_get(res.decision, "forge"), "forge")),
                   json_string_value(json_object_get(
                       json_object_get(res.decision, "forge"), "account")));
        }

        bottle_decision_result_free(&res);
        goto cleanup;
    }

    snprintf(f->kind, sizeof(f->kind), "%s", kind);
    snprintf(f->url, sizeof(f->url), "%s", url);
    snprintf(f->api, sizeof(f->api), "%s", api ? api : "");
    snprintf(f->account, sizeof(f->account), "%s", account ? account : "");

    if (bottle_forge_save(ctl->redis, name, f, &lost, err, sizeof(err)) != 0)
    {
        if (lost) {
            bottlectl_error("cannot reach the store %s: %s", ctl->url_text,
                            err);
            bottlectl_disconnect(ctl);
            rc = BOTTLECTL_UNREACHABLE;

        } else {
            bottlectl_error("%s", err);
            rc = BOTTLECTL_REFUSED;
        }

        goto cleanup;
    }

    printf("%s connected (%s, %s)\n", name, kind, url);

cleanup:

    bottle_forge_conf_clear(f);
    free(f);

    return rc;
}


/* repo create --proposal ID [--note TEXT]: a create-repo made */

int
bottlectl_repo(bottlectl_t *ctl, int argc, char **argv)
{
    int                        rc;
    const char                *note;
    bottle_decision_result_t   res;

    static const char  usage[] = "repo create --proposal ID [--note TEXT]";

    note = NULL;

    if (argc == 6 && strcmp(argv[4], "--note") == 0) {
        note = argv[5];
        argc -= 2;
    }

    if (argc != 4 || strcmp(argv[1], "create") != 0
        || strcmp(argv[2], "--proposal") != 0)
    {
        return bottlectl_usage(usage);
    }

    if (note && strlen(note) > BOTTLE_PROPOSAL_TEXT_MAX) {
        bottlectl_error("--note: longer than %d bytes",
                        BOTTLE_PROPOSAL_TEXT_MAX);
        return BOTTLECTL_USAGE;
    }

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    bottle_forge_create_answer(&res, ctl->redis, argv[3], note,
                               bottlectl_operator(), "bottlectl");

    if (res.warning[0]) {
        bottlectl_error("warning: %s", res.warning);
    }

    rc = bottlectl_decision_status(ctl, &res);

    if (rc == BOTTLECTL_OK) {
        printf("%s %s: created %s, granted %s: bottle %s version %lld\n",
               argv[3], res.state,
               json_string_value(json_object_get(res.decision, "created")),
               json_string_value(json_object_get(
                   json_object_get(res.decision, "grant"), "repo")),
               res.bottle, res.version);
    }

    bottle_decision_result_free(&res);

    return rc;
}


static int
bottlectl_forge_rm(bottlectl_t *ctl, const char *arg)
{
    int          rc;
    char         name[BOTTLE_FORGE_NAME_MAX + 1],
                 key[BOTTLE_FORGE_NAME_MAX + 32];
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


/* the token: the file's first line (bottle_forge_token_check()) */

static int
bottlectl_token_file(char *out, const char *file)
{
    int      rc;
    char    *text, err[256];
    size_t   len;

    if (bottlectl_read(&text, &len, file) != 0) {
        return -1;
    }

    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r')) {
        len--;
    }

    rc = -1;

    if (len > BOTTLE_FORGE_TOKEN_MAX || memchr(text, '\0', len)) {
        bottlectl_error("--token-file: longer than %d bytes, or binary",
                        BOTTLE_FORGE_TOKEN_MAX);

    } else {
        memcpy(out, text, len);
        out[len] = '\0';

        if (bottle_forge_token_check(out, err, sizeof(err)) != 0) {
            bottlectl_error("--token-file: %s", err);
            memset(out, 0, len);

        } else {
            rc = 0;
        }
    }

    memset(text, 0, len);
    free(text);

    return rc;
}
