/*
 * bottlectl, the operator CLI of the Redis control plane
 * (docs/bottlectl.md, docs/control-plane.md).
 *
 * bottlectl.c parses the global options and dispatches a command to one of
 * the files below; each command returns the process's exit status.  The
 * store connection is opened on first use, so a command that reads a
 * policy file (--policy) never needs Redis.
 */

#ifndef BOTTLECTL_H
#define BOTTLECTL_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "bottle_audit.h"
#include "bottle_decision.h"
#include "bottle_limits.h"
#include "bottle_policy.h"
#include "bottle_proposal.h"
#include "bottle_store.h"


#ifndef BOTTLECTL_VERSION
#define BOTTLECTL_VERSION   "0.1"
#endif

/* exit statuses */
#define BOTTLECTL_OK            0
#define BOTTLECTL_REFUSED       1   /* invalid input, no such bottle, ... */
#define BOTTLECTL_USAGE         2
#define BOTTLECTL_UNREACHABLE   3   /* the store cannot be reached */
#define BOTTLECTL_ANSWERED      4   /* 409: the proposal was answered
                                       already; this answer changed
                                       nothing */
#define BOTTLECTL_UNKNOWN       5   /* a write was sent but its outcome is
                                       unknown: bottlectl policy status
                                       WRITE-ID tells */
#define BOTTLECTL_STALE         6   /* status: a component stale or
                                       missing */

#define BOTTLECTL_CONNECT_TIMEOUT   2   /* seconds */
#define BOTTLECTL_COMMAND_TIMEOUT   5   /* seconds, but audit tail -f */

#define BOTTLECTL_URL_LEN   (BOTTLE_STORE_HOST_MAX + BOTTLE_STORE_PATH_MAX + 64)


typedef struct bottlectl_s  bottlectl_t;

struct bottlectl_s {
    const char             *store;      /* --store, $BOTTLE_STORE or the
                                           default */
    bottle_store_url_t      url;        /* store parsed */
    char                    url_text[BOTTLECTL_URL_LEN];  /* no password */
    const char             *policy;     /* --policy FILE, or NULL */
    int                     json;       /* --json */
    bottle_limits_t         limits;     /* --limits, $BOTTLE_LIMITS */
    redisContext           *redis;      /* NULL until bottlectl_connect() */
};


/* ctl_common.c: what every file may call; it calls none of them */

/* one line "bottlectl: ..." on stderr */
void bottlectl_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* "usage: ..." for the command, then BOTTLECTL_USAGE */
int bottlectl_usage(const char *synopsis);

/* a file, or stdin for "-", whole (64 MiB at most); 0 or -1 after a line */
int bottlectl_read(char **out, size_t *len, const char *file);

/* who answers: $BOTTLE_OPERATOR, else $USER@<host name> */
const char *bottlectl_operator(void);


/* ctl_store.c */

/* connects (once) and authenticates; 0 or BOTTLECTL_UNREACHABLE */
int bottlectl_connect(bottlectl_t *ctl);

void bottlectl_disconnect(bottlectl_t *ctl);

/*
 * Runs one command (connecting first if needed).  Returns 0 with a new
 * reply in *out (freeReplyObject), which may be an error reply, or
 * BOTTLECTL_UNREACHABLE after one line on stderr.
 */
int bottlectl_command(bottlectl_t *ctl, redisReply **out, int argc,
    const char **argv, const size_t *argvlen);

/* the store lost mid-command: the line and BOTTLECTL_UNREACHABLE */
int bottlectl_lost(bottlectl_t *ctl);

/* a reply's string element, or "" */
const char *bottlectl_str(const redisReply *r, size_t i);

/*
 * A write under a write id (bottle_store.h, "written once"): argv[0..1]
 * are EVAL and the script.  0 with the reply in *out; when the reply was
 * lost after the write may have been sent, the outcome is settled on a
 * new connection: 0 with *out NULL and the record in settled (a string
 * "applied\n..." or "void"; free()), or BOTTLECTL_UNREACHABLE when
 * nothing was sent, or BOTTLECTL_UNKNOWN after the line that says which
 * command tells.
 */
int bottlectl_write(bottlectl_t *ctl, const char *wid, redisReply **out,
    char **settled, int argc, const char **argv, const size_t *argvlen);

/* a new write id: BOTTLE_STORE_WRITE_ID_LEN hex digits; 0 or -1 */
int bottlectl_write_id(char *wid);

/* policy status WRITE-ID */
int bottlectl_policy_status(bottlectl_t *ctl, const char *wid);

/* "cannot reach the store URL: why", disconnected, BOTTLECTL_UNREACHABLE */
int bottlectl_unreachable(bottlectl_t *ctl, const char *why);


/* ctl_policy.c */

int bottlectl_policy(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_bottles(bottlectl_t *ctl, int argc, char **argv);


/* ctl_put.c */

int bottlectl_policy_put(bottlectl_t *ctl, const char *file,
    const char *operator_name);

/* one bottle as policy put stores it */
typedef struct {
    const char         *id;         /* borrowed from the document */
    char               *json;       /* json_dumps(), free() */
    size_t              len;
    char                digest[65];
} bottlectl_put_t;

/*
 * The stored form of one bottle of a document, checked against the
 * limits: 0, or -1 after one line on stderr.
 */
int bottlectl_put_prepare(bottlectl_t *ctl, const char *name,
    bottlectl_put_t *put, json_t *bottle, const bottle_t *parsed,
    const bottle_policy_t *p);


/* ctl_source.c: a policy document as policy put|check|diff read it */

typedef struct {
    bottle_policy_t    *policy;     /* the gateway's parse */
    json_t             *bottles;    /* array of the bottles' objects */
    char               *text;       /* "-": standard input, else NULL */
    size_t              len;
    const char         *name;       /* the file, dir or "stdin" */
} bottlectl_source_t;

/*
 * FILE, a directory read as the gateway reads one (bottle_policy_load()),
 * or "-" for standard input.  0, or BOTTLECTL_REFUSED after the parser's
 * line on stderr; bottlectl_source_free() either way.
 */
int bottlectl_source_load(bottlectl_source_t *src, const char *path);
void bottlectl_source_free(bottlectl_source_t *src);

/*
 * Every bottle of a loaded document in its stored form (*items, *n of
 * them; bottlectl_put_items_free() whatever the result): 0, or -1 after
 * one line on stderr.
 */
int bottlectl_put_items(bottlectl_t *ctl, const bottlectl_source_t *src,
    bottlectl_put_t **items, size_t *n);
void bottlectl_put_items_free(bottlectl_put_t *items, size_t n);

/*
 * The bottle as stored, read at once: its version ("" none) and its
 * object (*json NULL when none).  0 or an exit status after a line.
 */
int bottlectl_stored(bottlectl_t *ctl, const char *id, json_t **json,
    char *version, size_t size);

/* what changes from one stored bottle object to another (NULL: none) */
typedef struct {
    json_t             *added;      /* arrays of strings */
    json_t             *removed;
    json_t             *changed;
    json_t             *fields;
    char               *summary;    /* one line, malloc() */
} bottlectl_summary_t;

int bottlectl_summarize(bottlectl_summary_t *s, const json_t *before,
    const json_t *after);
void bottlectl_summary_free(bottlectl_summary_t *s);

/*
 * The policy.changed event of a put ("new_version":0, set by the store's
 * script) or an rm; malloc()ed JSON, or NULL out of memory.
 */
char *bottlectl_policy_event(const char *bottle, const char *action,
    const char *operator_name, const char *wid, long long old_version,
    const bottlectl_summary_t *s);

/* HGET bottle:policy:<id> json: 0 with a string reply, or an exit status */
int bottlectl_get_json(bottlectl_t *ctl, const char *id, redisReply **out);

/*
 * One bottle for a command that looks at it (explain): from the --policy
 * file when it was given (*out is that whole policy), else from the store
 * (*out is a policy holding that bottle alone).  Find the bottle in it
 * with bottle_policy_find_id(); free it with bottle_policy_free().
 * Returns 0, or after one line on stderr BOTTLECTL_REFUSED (no such
 * bottle, an invalid policy) or BOTTLECTL_UNREACHABLE.
 */
int bottlectl_fetch_bottle(bottlectl_t *ctl, const char *id,
    bottle_policy_t **out);


/* ctl_check.c: policy check, policy diff */

int bottlectl_policy_check(bottlectl_t *ctl, const char *path);
int bottlectl_policy_diff(bottlectl_t *ctl, const char *path);


/* ctl_audit.c */

int bottlectl_audit(bottlectl_t *ctl, int argc, char **argv);


/* ctl_firehose.c */

int bottlectl_firehose(bottlectl_t *ctl, int argc, char **argv);


/* ctl_propose.c: propose, proposals [-f], show, check */

int bottlectl_propose(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_proposals(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_show(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_check(bottlectl_t *ctl, int argc, char **argv);

/* the MAXLEN (about) bottlectl caps the audit stream at, as a gateway */
#define BOTTLECTL_AUDIT_MAXLEN  "1000000"

/* ms since the epoch */
int64_t bottlectl_now(void);


/* ctl_decide.c: approve, deny, modify */

int bottlectl_approve(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_deny(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_modify(bottlectl_t *ctl, int argc, char **argv);


/* ctl_proposal.c: what propose, decide and forge share of an answer */

/*
 * The change an approval would make to the bottle's stored policy,
 * checked by the gateway's parser (bottle_decision.h).
 */
typedef bottle_decision_change_t  bottlectl_change_t;

/* 0, or an exit status after a line; bottlectl_change_free() either way */
int bottlectl_change(bottlectl_t *ctl, const char *bottle,
    bottle_proposal_kind_e kind, const json_t *route,
    bottlectl_change_t *chg);
void bottlectl_change_free(bottlectl_change_t *chg);

/* an answer's status as an exit status, after its line on stderr */
int bottlectl_decision_status(bottlectl_t *ctl,
    const bottle_decision_result_t *res);


/* ctl_forge.c: forge connect|rm, forges */

int bottlectl_forge(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_forges(bottlectl_t *ctl, int argc, char **argv);
int bottlectl_repo(bottlectl_t *ctl, int argc, char **argv);


/* ctl_status.c */

int bottlectl_status(bottlectl_t *ctl, int argc, char **argv);


/* ctl_explain.c */

int bottlectl_explain(bottlectl_t *ctl, int argc, char **argv);


#endif /* BOTTLECTL_H */
