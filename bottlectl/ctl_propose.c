/*
 * bottlectl propose, proposals [-f], show and check: the queue of
 * proposals an operator answers (docs/control-plane.md, "Proposals and
 * decisions").  approve, deny and modify are ctl_decide.c.
 *
 * propose is the operator's and the tests' way to queue one; the
 * producers (supervise, the egress proxy, git-gate) run the same script.
 */

#define _POSIX_C_SOURCE  200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bottle_warn.h"
#include "bottlectl.h"


typedef struct {
    const char         *bottle;     /* --bottle */
    int                 all;        /* --all */
    int                 follow;     /* -f */
    char              **seen;       /* ids printed (for -f) */
    size_t              nseen;
    int                 header;     /* the header line printed */
} bottlectl_list_t;


static int bottlectl_list(bottlectl_t *ctl, bottlectl_list_t *l);
static int bottlectl_list_follow(bottlectl_t *ctl, bottlectl_list_t *l,
    redisContext *sub);
static int bottlectl_list_print(bottlectl_t *ctl, bottlectl_list_t *l,
    const char *id, const redisReply *r, json_t *rows);
static int bottlectl_subscribe(bottlectl_t *ctl, redisContext **out);
static int bottlectl_propose_reply(bottlectl_t *ctl, int rc,
    const bottle_proposal_queued_t *q, const char *err, const char *bottle);
static void bottlectl_age(char *buf, size_t size, long long created);


static unsigned long long  bottlectl_event_counter;


int
bottlectl_propose(bottlectl_t *ctl, int argc, char **argv)
{
    int                        rc, k, i;
    char                       err[512], host[128], gw[160];
    json_t                    *args;
    const char                *why, *pos[3];
    json_error_t               jerr;
    bottle_proposal_origin_t   o;
    bottle_proposal_queued_t   q;

    static const char  usage[] = "propose BOTTLE KIND ARGS-JSON "
                                 "[--justification TEXT] [--producer NAME]";

    why = "";
    k = 0;
    memset(&o, 0, sizeof(o));
    o.producer = "bottlectl";

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--justification") == 0 && i + 1 < argc) {
            why = argv[++i];

        } else if (strcmp(argv[i], "--producer") == 0 && i + 1 < argc) {
            o.producer = argv[++i];

        } else if (k < 3 && (argv[i][0] != '-' || argv[i][1] == '\0')) {
            pos[k++] = argv[i];

        } else {
            return bottlectl_usage(usage);
        }
    }

    if (k != 3) {
        return bottlectl_usage(usage);
    }

    k = bottle_proposal_kind_parse(pos[1]);
    if (k < 0) {
        bottlectl_error("unknown kind '%s' (egress-allow, egress-block, "
                        "forge-connect, add-repo, launch-bottle, create-repo, "
                        "egress-token-allow, gitleaks-allow)", pos[1]);
        return BOTTLECTL_USAGE;
    }

    args = json_loads(pos[2], JSON_REJECT_DUPLICATES, &jerr);
    if (args == NULL) {
        bottlectl_error("args: invalid JSON: %s", jerr.text);
        return BOTTLECTL_REFUSED;
    }

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        json_decref(args);
        return rc;
    }

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "bottlectl");
    }

    host[sizeof(host) - 1] = '\0';
    snprintf(gw, sizeof(gw), "%s:%ld", host, (long) getpid());

    o.gateway = gw;
    o.seq = ++bottlectl_event_counter;
    o.stream_max = strtoull(BOTTLECTL_AUDIT_MAXLEN, NULL, 10);
    q.id[0] = '\0';

    rc = bottle_proposal_propose(&q, ctl->redis, pos[0],
                                 (bottle_proposal_kind_e) k, args, why, &o,
                                 err, sizeof(err));
    json_decref(args);

    return bottlectl_propose_reply(ctl, rc, &q, err, pos[0]);
}


static int
bottlectl_propose_reply(bottlectl_t *ctl, int rc,
    const bottle_proposal_queued_t *q, const char *err, const char *bottle)
{
    switch (rc) {

    case 0:
        break;

    case BOTTLE_PROPOSAL_EINVALID:
        bottlectl_error("invalid proposal: %s", err);
        return BOTTLECTL_REFUSED;

    case BOTTLE_PROPOSAL_ENOBOTTLE:
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;

    case BOTTLE_PROPOSAL_EJOURNAL:
        bottlectl_error("cannot journal the proposal, and bottle \"%s\" "
                        "requires it (audit.delivery \"required\"): %s; "
                        "nothing queued", bottle, err);
        return BOTTLECTL_REFUSED;

    case BOTTLE_PROPOSAL_ELOST:
        return bottlectl_unreachable(ctl, err);

    default:
        bottlectl_error("cannot queue the proposal: %s", err);
        return BOTTLECTL_REFUSED;
    }

    if (q->journal_err[0]) {
        bottlectl_error("warning: decision.proposed is not in the audit "
                        "journal: %s", q->journal_err);
    }

    printf("%s\n", q->id);

    return BOTTLECTL_OK;
}


int
bottlectl_proposals(bottlectl_t *ctl, int argc, char **argv)
{
    int                rc;
    int                i;
    size_t             k;
    redisContext      *sub;
    bottlectl_list_t   l;

    static const char  usage[] = "proposals [-f] [--bottle BOTTLE] [--all]";

    memset(&l, 0, sizeof(l));

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0) {
            l.follow = 1;

        } else if (strcmp(argv[i], "--all") == 0) {
            l.all = 1;

        } else if (strcmp(argv[i], "--bottle") == 0 && i + 1 < argc) {
            l.bottle = argv[++i];

        } else if (strncmp(argv[i], "--bottle=", 9) == 0) {
            l.bottle = argv[i] + 9;

        } else {
            return bottlectl_usage(usage);
        }
    }

    sub = NULL;

    /* subscribed before the listing: nothing falls between the two */

    if (l.follow) {
        signal(SIGPIPE, SIG_IGN);

        rc = bottlectl_subscribe(ctl, &sub);
        if (rc != BOTTLECTL_OK) {
            return rc;
        }
    }

    rc = bottlectl_list(ctl, &l);

    if (rc == BOTTLECTL_OK && l.follow) {
        rc = bottlectl_list_follow(ctl, &l, sub);
    }

    if (sub) {
        redisFree(sub);
    }

    for (k = 0; k < l.nseen; k++) {
        free(l.seen[k]);
    }

    free(l.seen);

    return rc;
}


/* a second connection, SUBSCRIBEd to bottle:proposals, no timeout */

static int
bottlectl_subscribe(bottlectl_t *ctl, redisContext **out)
{
    int              rc;
    redisReply      *r;
    redisContext    *keep;
    struct timeval   tv;

    keep = ctl->redis;
    ctl->redis = NULL;

    rc = bottlectl_connect(ctl);

    *out = ctl->redis;
    ctl->redis = keep;

    if (rc != BOTTLECTL_OK) {
        *out = NULL;
        return rc;
    }

    tv.tv_sec = 0;
    tv.tv_usec = 0;

    r = redisSetTimeout(*out, tv) == REDIS_OK
        ? redisCommand(*out, "SUBSCRIBE %s", BOTTLE_PROPOSALS_CHANNEL)
        : NULL;

    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        if (r) {
            freeReplyObject(r);
        }
        bottlectl_error("cannot subscribe to %s on the store %s",
                        BOTTLE_PROPOSALS_CHANNEL, ctl->url_text);
        return BOTTLECTL_UNREACHABLE;
    }

    freeReplyObject(r);

    return BOTTLECTL_OK;
}


/* the index's ids, then each one's hash in one pipeline */

static int
bottlectl_list(bottlectl_t *ctl, bottlectl_list_t *l)
{
    int           rc;
    char         *key, *text;
    size_t        i, n, klen;
    json_t       *rows;
    const char   *av[6], *index;
    redisReply   *ids, *r;

    index = BOTTLE_PROPOSALS_PENDING;
    key = NULL;

    if (l->bottle) {
        klen = sizeof(BOTTLE_PROPOSALS_OF) + strlen(l->bottle);
        key = malloc(klen);
        if (key == NULL) {
            bottlectl_error("out of memory");
            return BOTTLECTL_REFUSED;
        }
        snprintf(key, klen, "%s%s", BOTTLE_PROPOSALS_OF, l->bottle);
        index = key;

    } else if (l->all) {
        index = BOTTLE_PROPOSALS_ALL;
    }

    av[0] = "ZRANGE";
    av[1] = index;
    av[2] = "0";
    av[3] = "-1";

    rc = bottlectl_command(ctl, &ids, 4, av, NULL);
    free(key);

    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (ids->type != REDIS_REPLY_ARRAY) {
        bottlectl_error("cannot read the proposals: %s",
                        ids->type == REDIS_REPLY_ERROR ? ids->str
                                                       : "not a sorted set");
        freeReplyObject(ids);
        return BOTTLECTL_REFUSED;
    }

    n = ids->elements;
    l->seen = calloc(n + 1, sizeof(char *));
    rows = ctl->json ? json_array() : NULL;

    if (l->seen == NULL || (ctl->json && rows == NULL)) {
        freeReplyObject(ids);
        json_decref(rows);
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    for (i = 0; i < n; i++) {
        redisAppendCommand(ctl->redis, "HMGET %s%s json state",
                           BOTTLE_PROPOSAL_PREFIX, bottlectl_str(ids, i));
    }

    for (i = 0; i < n; i++) {
        if (redisGetReply(ctl->redis, (void **) &r) != REDIS_OK) {
            freeReplyObject(ids);
            json_decref(rows);
            return bottlectl_lost(ctl);
        }

        l->seen[l->nseen] = strdup(bottlectl_str(ids, i));
        if (l->seen[l->nseen]) {
            l->nseen++;
        }

        bottlectl_list_print(ctl, l, bottlectl_str(ids, i), r, rows);
        freeReplyObject(r);
    }

    freeReplyObject(ids);

    if (rows) {
        text = json_dumps(rows, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (text) {
            printf("%s\n", text);
            free(text);
        }
        json_decref(rows);
    }

    return BOTTLECTL_OK;
}


/* -f: each new proposal of bottle:proposals, as it comes */

static int
bottlectl_list_follow(bottlectl_t *ctl, bottlectl_list_t *l,
    redisContext *sub)
{
    int          dup;
    char         id[BOTTLE_PROPOSAL_ID_LEN];
    size_t       i, n;
    redisReply  *m, *r;
    const char  *msg;

    fflush(stdout);

    for ( ;; ) {
        if (redisGetReply(sub, (void **) &m) != REDIS_OK) {
            bottlectl_error("cannot reach the store %s: %s", ctl->url_text,
                            sub->errstr[0] ? sub->errstr : "connection lost");
            return BOTTLECTL_UNREACHABLE;
        }

        /* ["message", channel, "<id> <bottle> <kind>"] */

        msg = m->type == REDIS_REPLY_ARRAY && m->elements == 3
              ? bottlectl_str(m, 2) : "";
        n = strcspn(msg, " ");

        if (n == 0 || n >= sizeof(id) || msg[n] != ' ') {
            freeReplyObject(m);
            continue;
        }

        memcpy(id, msg, n);
        id[n] = '\0';

        /* "<id> <bottle> <kind>": --bottle's only */

        dup = l->bottle
              && (strncmp(msg + n + 1, l->bottle, strlen(l->bottle)) != 0
                  || msg[n + 1 + strlen(l->bottle)] != ' ');
        freeReplyObject(m);

        for (i = 0; i < l->nseen; i++) {
            dup |= strcmp(l->seen[i], id) == 0;
        }

        if (dup) {
            continue;
        }

        r = redisCommand(ctl->redis, "HMGET %s%s json state",
                         BOTTLE_PROPOSAL_PREFIX, id);
        if (r == NULL) {
            return bottlectl_lost(ctl);
        }

        bottlectl_list_print(ctl, l, id, r, NULL);
        freeReplyObject(r);

        if (fflush(stdout) != 0) {
            return BOTTLECTL_OK;            /* the reader is gone */
        }
    }
}


/* one line "ID BOTTLE KIND STATE AGE SUMMARY", or a row of --json */

static int
bottlectl_list_print(bottlectl_t *ctl, bottlectl_list_t *l, const char *id,
    const redisReply *r, json_t *rows)
{
    char                     summary[256], age[32];
    json_t                  *p, *created;
    const char              *state, *bottle, *kind;
    long long                ms;
    bottle_proposal_kind_e   k;

    (void) ctl;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        return -1;
    }

    state = bottlectl_str(r, 1);

    if (!l->all && strcmp(state, "pending") != 0) {
        return 0;
    }

    p = bottle_proposal_parse(r->element[0]->str, r->element[0]->len, &k,
                              NULL, 0);
    if (p == NULL) {
        return -1;
    }

    bottle = json_string_value(json_object_get(p, "bottle"));
    kind = json_string_value(json_object_get(p, "kind"));
    created = json_object_get(p, "created");
    bottle_proposal_summary(summary, sizeof(summary), p);

    ms = atoll(id);
    bottlectl_age(age, sizeof(age), ms);

    if (rows) {
        json_array_append_new(rows,
            json_pack("{s:s, s:s, s:s, s:s, s:O, s:s}", "id", id,
                      "bottle", bottle, "kind", kind, "state", state,
                      "created", created, "summary", summary));
        json_decref(p);
        return 0;
    }

    if (!l->header) {
        printf("%-22s  %-12s  %-18s  %-8s  %5s  %s\n", "ID", "BOTTLE",
               "KIND", "STATE", "AGE", "SUMMARY");
        l->header = 1;
    }

    printf("%-22s  %-12s  %-18s  %-8s  %5s  %s\n", id, bottle, kind, state,
           age, summary);

    json_decref(p);

    return 0;
}


static void
bottlectl_age(char *buf, size_t size, long long created)
{
    long long  s;

    s = (bottlectl_now() - created) / 1000;
    if (s < 0) {
        s = 0;
    }

    if (s < 120) {
        snprintf(buf, size, "%llds", s);

    } else if (s < 7200) {
        snprintf(buf, size, "%lldm", s / 60);

    } else if (s < 172800) {
        snprintf(buf, size, "%lldh", s / 3600);

    } else {
        snprintf(buf, size, "%lldd", s / 86400);
    }
}


/* show ID: the proposal, its state and its decision, as JSON */

int
bottlectl_show(bottlectl_t *ctl, int argc, char **argv)
{
    int                      rc;
    char                    *text, err[512];
    json_t                  *o, *p, *d, *route;
    redisReply              *r;
    const char              *av[7];
    bottlectl_change_t       chg;
    bottle_proposal_kind_e   kind;

    if (argc != 2) {
        return bottlectl_usage("show ID");
    }

    av[0] = "HMGET";
    av[2] = BOTTLE_PROPOSAL_F_JSON;
    av[3] = BOTTLE_PROPOSAL_F_STATE;
    av[4] = BOTTLE_PROPOSAL_F_DECISION;
    av[5] = BOTTLE_PROPOSAL_F_VERSION;

    text = malloc(sizeof(BOTTLE_PROPOSAL_PREFIX) + strlen(argv[1]));
    if (text == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    sprintf(text, "%s%s", BOTTLE_PROPOSAL_PREFIX, argv[1]);
    av[1] = text;

    rc = bottlectl_command(ctl, &r, 6, av, NULL);
    free(text);

    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4
        || r->element[0]->type != REDIS_REPLY_STRING)
    {
        bottlectl_error("no proposal \"%s\"", argv[1]);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    p = bottle_proposal_parse(r->element[0]->str, r->element[0]->len, &kind,
                              err, sizeof(err));
    if (p == NULL) {
        bottlectl_error("proposal \"%s\": %s", argv[1], err);
        freeReplyObject(r);
        return BOTTLECTL_REFUSED;
    }

    d = bottlectl_str(r, 2)[0] ? json_loads(bottlectl_str(r, 2), 0, NULL)
                               : NULL;

    o = json_pack("{s:o, s:s, s:o, s:o}", "proposal", p,
                  "state", bottlectl_str(r, 1),
                  "decision", d ? d : json_null(),
                  "version", bottlectl_str(r, 3)[0]
                             ? json_integer(atoll(bottlectl_str(r, 3)))
                             : json_null());

    text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER
                                   | JSON_ENSURE_ASCII) : NULL;
    if (text) {
        printf("%s\n", text);
        free(text);
    }

    /* what an approval would change, for the operator to read first */

    if (!ctl->json && strcmp(bottlectl_str(r, 1), "pending") == 0
        && bottle_proposal_changes_policy(kind))
    {
        route = json_object_get(json_object_get(o, "proposal"), "args");

        memset(&chg, 0, sizeof(chg));
        rc = bottlectl_change(ctl,
                 json_string_value(json_object_get(json_object_get(o,
                                       "proposal"), "bottle")),
                 kind, route, &chg);

        /* the operator page's text too (bottle_warn.h) */

        text = rc == BOTTLECTL_OK
               ? bottle_warn_render("approving it", chg.changed,
                                    chg.warnings, chg.diff, chg.diff_len)
               : NULL;
        if (text) {
            printf("\n%s", text);
            free(text);
        }

        bottlectl_change_free(&chg);
        rc = BOTTLECTL_OK;
    }

    json_decref(o);
    freeReplyObject(r);

    return rc;
}


/* check BOTTLE ID: the agent's view, only its own bottle's proposals */

int
bottlectl_check(bottlectl_t *ctl, int argc, char **argv)
{
    int          rc;
    char        *text, err[512];
    json_t      *o;

    if (argc != 3) {
        return bottlectl_usage("check BOTTLE ID");
    }

    rc = bottlectl_connect(ctl);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    rc = bottle_proposal_check(&o, ctl->redis, argv[1], argv[2], err,
                               sizeof(err));
    if (rc == BOTTLE_PROPOSAL_ELOST) {
        return bottlectl_unreachable(ctl, err);
    }

    if (rc == BOTTLE_PROPOSAL_ENONE) {
        bottlectl_error("no proposal \"%s\" of bottle \"%s\"", argv[2],
                        argv[1]);
        return BOTTLECTL_REFUSED;
    }

    if (rc != 0) {
        bottlectl_error("%s", err);
        return BOTTLECTL_REFUSED;
    }

    text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER
                             | JSON_ENSURE_ASCII);
    json_decref(o);

    if (text == NULL) {
        bottlectl_error("out of memory");
        return BOTTLECTL_REFUSED;
    }

    printf("%s\n", text);
    free(text);

    return BOTTLECTL_OK;
}


int64_t
bottlectl_now(void)
{
    struct timeval  tv;

    gettimeofday(&tv, NULL);

    return (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}
