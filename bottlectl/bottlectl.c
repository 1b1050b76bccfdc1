/*
 * bottlectl: main, the global options, the command table and the help.
 *
 *   bottlectl [--store URL] [--policy FILE] [--json] COMMAND ...
 *
 * Global options may stand anywhere before "--" (which is dropped: what
 * follows it is the command's, "policy put -- --odd-name.json");
 * -h/--help anywhere prints the manual, or after a command that command's
 * part of it (bottlectl_help()).  Each command returns the exit
 * status itself (bottlectl.h): 0 ok, 1 refused, 2 usage, 3 store
 * unreachable, 4 a proposal answered already, 5 a write's outcome
 * unknown, 6 a component stale or missing (status).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottlectl.h"


#define BOTTLECTL_DEFAULT_STORE  "redis://127.0.0.1:6379"


typedef int (*bottlectl_cmd_pt)(bottlectl_t *ctl, int argc, char **argv);

typedef struct {
    const char         *name;
    bottlectl_cmd_pt    handler;
} bottlectl_cmd_t;


static int bottlectl_options(bottlectl_t *ctl, int *argc, char **argv,
    int *help, int *version);
static const char *bottlectl_option_value(int argc, char **argv, int *i,
    const char *name);
static int bottlectl_help(int argc, char **argv);
static int bottlectl_help_match(const char *s, const char *cmd,
    const char *sub);


static const bottlectl_cmd_t  bottlectl_commands[] = {
    { "policy", bottlectl_policy },
    { "bottles", bottlectl_bottles },
    { "audit", bottlectl_audit },
    { "firehose", bottlectl_firehose },
    { "explain", bottlectl_explain },
    { "proposals", bottlectl_proposals },
    { "show", bottlectl_show },
    { "approve", bottlectl_approve },
    { "deny", bottlectl_deny },
    { "modify", bottlectl_modify },
    { "propose", bottlectl_propose },
    { "check", bottlectl_check },
    { "forge", bottlectl_forge },
    { "forges", bottlectl_forges },
    { "repo", bottlectl_repo },
    { "status", bottlectl_status },
    { NULL, NULL }
};


static const char  bottlectl_manual[] =
"NAME\n"
"    bottlectl - the operator CLI of ngx_bottle's Redis control plane\n"
"\n"
"SYNOPSIS\n"
"    bottlectl [--store URL] policy put FILE|DIR|- [--operator NAME]\n"
"    bottlectl [--store URL] policy get BOTTLE\n"
"    bottlectl [--store URL] policy rm BOTTLE [--operator NAME]\n"
"    bottlectl [--store URL] policy status WRITE-ID\n"
"    bottlectl [--limits LIMITS] policy check FILE|DIR|-\n"
"    bottlectl [--store URL] policy diff FILE|DIR|-\n"
"    bottlectl [--store URL | --policy FILE] [--json] bottles\n"
"    bottlectl [--store URL] audit tail [-f] [--bottle BOTTLE] [-n N]\n"
"    bottlectl [--store URL] audit verify [--from ID]\n"
"        [--against FILE --pubkey PUB]\n"
"    bottlectl [--store URL] audit forward --to TARGET --state FILE [-f]\n"
"        [--max-size BYTES] [--key KEY.pem]\n"
"    bottlectl [--store URL] firehose [--bottle BOTTLE] [-n N]\n"
"    bottlectl [--store URL | --policy FILE] explain BOTTLE METHOD URL\n"
"        [-H 'Name: value']...\n"
"    bottlectl [--store URL] [--json] proposals [-f] [--bottle BOTTLE]\n"
"        [--all]\n"
"    bottlectl [--store URL] [--json] show ID\n"
"    bottlectl [--store URL] approve ID [--note TEXT]\n"
"    bottlectl [--store URL] deny ID [--note TEXT]\n"
"    bottlectl [--store URL] modify ID FILE|- [--note TEXT]\n"
"    bottlectl [--store URL] propose BOTTLE KIND ARGS-JSON\n"
"        [--justification TEXT] [--producer NAME]\n"
"    bottlectl [--store URL] check BOTTLE ID\n"
"    bottlectl [--store URL] forge connect FORGE --kind gitea|github\n"
"        --url URL [--api URL] --token-file FILE [--account NAME]\n"
"    bottlectl [--store URL] forge connect --proposal ID\n"
"        --kind gitea|github --token-file FILE [--api URL] [--account NAME]\n"
"        [--note TEXT]\n"
"    bottlectl [--store URL] forge rm FORGE\n"
"    bottlectl [--store URL] repo create --proposal ID [--note TEXT]\n"
"    bottlectl [--store URL] [--json] forges\n"
"    bottlectl [--store URL] [--json] status [--expect KIND=N[,KIND=N]...]\n"
"    bottlectl [COMMAND [SUBCOMMAND]] -h | --help\n"
"    bottlectl --version\n"
"\n"
"DESCRIPTION\n"
"    Every gateway whose bottle_policy is a Redis store serves the bottles\n"
"    that store holds; bottlectl writes them, reads them back and reads\n"
"    the audit journal (docs/control-plane.md).  A change takes effect on\n"
"    every gateway without a reload.  Policy is validated by the\n"
"    gateway's own parser before anything is written, and identity tokens\n"
"    reach the store only as SHA-256 digests.  Operators answer the\n"
"    bottles' proposals (egress-allow, ...) here too: the first answer\n"
"    stands, and every answer is journalled.\n"
"\n"
"COMMANDS\n"
"    policy put FILE|DIR|- [--operator NAME]\n"
"        Validate a policy document (a {\"bottles\": [...]} document or one\n"
"        bottle object; - reads standard input; a directory is read as the\n"
"        gateway reads one: its *.json files by name) and write all its\n"
"        bottles at once, or none.  A plaintext \"token\" is replaced by\n"
"        its \"token_sha256\".  Prints \"<id> version <v>\" per bottle.\n"
"        Bottles over the limits (--limits) are refused.  Bottles the\n"
"        document does not name are left as they are.  Each bottle's\n"
"        policy.changed event (operator, versions, what changed) is\n"
"        journalled in the same write: no journal, no put.\n"
"    policy get BOTTLE\n"
"        Print the bottle's stored JSON.\n"
"    policy rm BOTTLE [--operator NAME]\n"
"        Remove the bottle, its token digest and its first-contact set;\n"
"        journalled as policy.changed in the same write.\n"
"    policy status WRITE-ID\n"
"        Whether the put or rm of that write id (exit status 5) was\n"
"        applied; once answered, a write not applied never will be.\n"
"    policy check FILE|DIR|-\n"
"        The gateway's parser and the limits of policy put (--limits) on\n"
"        the document, without a store: one line \"<file>: bottle\n"
"        \"<id>\": OK\" per valid bottle, the parser's line for each\n"
"        error.  Nothing is written.  Exit 0 valid, 1 not.\n"
"    policy diff FILE|DIR|-\n"
"        What policy put would change, bottle by bottle: added, changed\n"
"        (with a unified diff of the JSON, secrets redacted as show\n"
"        redacts them), unchanged, and the stored bottles the document\n"
"        does not name (kept).  Nothing is written.  Exit 0 no change,\n"
"        1 changes, 2 an error, 3 the store cannot be reached.\n"
"    bottles\n"
"        One line per bottle, sorted by id: id, number of routes, version\n"
"        (version \"-\" with --policy).\n"
"    audit tail [-f] [--bottle BOTTLE] [-n N]\n"
"        Print the last N (default 10) events of the audit journal, oldest\n"
"        first, one JSON object per line; --bottle keeps that bottle's\n"
"        events; -f then prints new events as they come, until\n"
"        interrupted.\n"
"    audit verify [--from ID]\n"
"        Walk the audit journal's hash chain (from entry ID), recompute\n"
"        every digest and link, and name the first edited, removed or\n"
"        reordered event: exit 1; whole: exit 0.  With --against, also\n"
"        the store against a copy audit forward wrote with --key: a chain\n"
"        rewritten in the store is named.\n"
"    audit forward --to TARGET --state FILE [-f] [--max-size BYTES]\n"
"        [--key KEY.pem]\n"
"        Ship the chain to file:PATH (fsync'd, rotated past --max-size),\n"
"        syslog:unix:PATH, syslog:udp:HOST:PORT (RFC 5424) or an\n"
"        http(s):// URL (POST, 2xx acknowledges), resuming after the last\n"
"        acknowledged event (--state); a possible duplicate is marked\n"
"        \"resend\", events trimmed unsent a \"gap\".  -f follows.  --key\n"
"        (Ed25519 PEM) adds signed checkpoints.\n"
"    firehose [--bottle BOTTLE] [-n N]\n"
"        Attach to the request firehose and print one OCSF HTTP Activity\n"
"        record per request as the gateways send them, one JSON object\n"
"        per line, until interrupted (or N records); --bottle keeps one\n"
"        bottle's.  Gateways snapshot requests only while a consumer is\n"
"        attached, and drop records rather than wait (docs/firehose.md).\n"
"    explain BOTTLE METHOD URL [-H 'Name: value']...\n"
"        The verdict the gateway would give this request of BOTTLE, and\n"
"        the rule that decides it, from the gateway's own decision code:\n"
"        https://host[:port]/path is a request in a CONNECT tunnel,\n"
"        http://host[:port]/path a plain proxy request; -H adds a header\n"
"        the agent would send.  Exit 0 allowed, 1 refused.  The body, DLP,\n"
"        the cookie jar, the resolved address and the token are not\n"
"        checked, and it says so.\n"
"    proposals [-f] [--bottle BOTTLE] [--all]\n"
"        The pending proposals, oldest first, one line each: id, bottle,\n"
"        kind, state, age, summary (the agent's words, untrusted);\n"
"        --bottle keeps one bottle's, --all shows answered ones too; -f\n"
"        then prints new ones as they are queued, until interrupted.\n"
"    show ID\n"
"        The proposal, its state and its decision as JSON; for a pending\n"
"        egress-allow, egress-block or add-repo, the diff an approval would\n"
"        make to the bottle's policy, after a warning line for each thing\n"
"        it takes away or widens (not with --json).\n"
"    approve ID [--note TEXT]\n"
"        The first answer stands: approve it.  An egress-allow adds its\n"
"        route to the bottle's stored policy (replacing the route of the\n"
"        same host), an egress-block removes the host's route; the whole\n"
"        bottle is checked by the gateway's parser first, and written with\n"
"        the next version, so every gateway applies it on its next\n"
"        request.  egress-token-allow and gitleaks-allow are recorded\n"
"        only.  forge-connect, add-repo, launch-bottle and create-repo are\n"
"        never approved plainly: refused, saying what answers them.\n"
"    deny ID [--note TEXT]\n"
"        The first answer stands: deny it; nothing changes.\n"
"    modify ID FILE|- [--note TEXT]\n"
"        Approve an egress-allow with the operator's own route object\n"
"        (FILE, - for standard input) instead of the agent's; grant an\n"
"        add-repo ({\"repo\"}); launch a launch-bottle with a launch spec\n"
"        ({\"bottles\"}: the proposal's, maybe fewer).\n"
"    propose BOTTLE KIND ARGS-JSON [--justification TEXT]\n"
"        Queue a proposal as a producer would (for operators and tests);\n"
"        prints its id.  KIND: egress-allow (ARGS a route), egress-block\n"
"        ({\"host\"}), forge-connect, add-repo, launch-bottle,\n"
"        create-repo, egress-token-allow, gitleaks-allow.\n"
"    check BOTTLE ID\n"
"        The proposal as its bottle sees it (the supervise helper's\n"
"        check-proposal): another bottle's is \"no proposal\".\n"
"    forge connect FORGE --kind gitea|github --url URL [--api URL]\n"
"        --token-file FILE [--account NAME]\n"
"        Connect a forge to git-gate (docs/gitgate.md): FORGE is the\n"
"        name the agents' URLs use (github.com), URL where its git really\n"
"        is, the token (read from FILE, one line) what git-gate fetches\n"
"        and pushes with.  Replaces an earlier connection of FORGE.\n"
"    forge connect --proposal ID --kind gitea|github --token-file FILE\n"
"        Answer an agent's forge-connect: connect the forge of its URL\n"
"        with the token (checked on the forge's API first), then modify\n"
"        the proposal with the account.  A failure leaves it pending.\n"
"    repo create --proposal ID [--note TEXT]\n"
"        Answer an agent's create-repo: make the repo on its forge, then\n"
"        grant it with write.  A forge error leaves it pending.\n"
"    forge rm FORGE\n"
"        Disconnect it: git-gate refuses its repos from the next request.\n"
"    forges\n"
"        One line per connected forge: name, kind, url, account.  The\n"
"        token is never printed.\n"
"    status [--expect KIND=N[,KIND=N]...]\n"
"        The store's health (PING's round trip, role, replicas, memory),\n"
"        its policy version, the pending proposals by kind and bottle,\n"
"        and every gateway worker, supervise-helper and git-gate from\n"
"        its heartbeat: state (up, stale past 3 periods, idle for\n"
"        git-gate), age, the policy version it applied, bottles, seconds\n"
"        since its last sync, pid, workers, uptime.  --expect names how\n"
"        many must be up (gateway=N counts instances, supervise=N,\n"
"        git-gate=N); a stale or missing component exits 6.\n"
"\n"
"OPTIONS\n"
"    --store URL\n"
"        The store: redis://[[user]:password@]host[:port][/db] or\n"
"        unix:/path/redis.sock[?db=N][&user=U&password=P].\n"
"    --policy FILE\n"
"        Read bottles from a policy file or directory instead of the\n"
"        store (bottles, explain); policy put and rm refuse it.\n"
"    --json\n"
"        Machine-readable output (bottles, proposals, show, forges,\n"
"        status).\n"
"    --limits LIMITS\n"
"        Raise or lower the limits policy put enforces, as the gateway's\n"
"        bottle_store_limits: \"policy=1m routes=4096 secret=16k\n"
"        store=256m\" (the defaults; names not given keep theirs).\n"
"    -h, --help\n"
"        This manual; after a command (policy put --help), that\n"
"        command's synopsis and description only.\n"
"    --operator NAME\n"
"        Who puts or removes (policy put, policy rm), in the journal;\n"
"        else as BOTTLE_OPERATOR below.\n"
"    --version\n"
"        The version.\n"
"\n"
"ENVIRONMENT\n"
"    BOTTLE_STORE\n"
"        The store when --store is not given; else\n"
"        " BOTTLECTL_DEFAULT_STORE ".\n"
"    BOTTLE_OPERATOR\n"
"        Who answers or changes policy, in the decision and the journal;\n"
"        else $USER@host.\n"
"    BOTTLE_LIMITS\n"
"        The limits when --limits is not given.\n"
"\n"
"EXIT STATUS\n"
"    0   success\n"
"    1   refused: an invalid policy, a token already another bottle's,\n"
"        no such bottle\n"
"    2   usage error\n"
"    3   the store cannot be reached\n"
"    4   the proposal was answered already (409): this answer changed\n"
"        nothing, and is journalled as decision.late\n"
"    5   outcome unknown: a policy put or rm was sent and the store did\n"
"        not answer; bottlectl policy status WRITE-ID tells whether it\n"
"        was applied\n"
"    6   status: a component is stale, or fewer are up than --expect\n"
"        says\n"
"\n"
"EXAMPLES\n"
"    bottlectl --store redis://:secret@10.0.0.5:6379/0 policy put team.json\n"
"    bottlectl policy get alice\n"
"    bottlectl bottles\n"
"    bottlectl audit tail -f --bottle alice\n"
"    bottlectl policy rm alice\n"
"    bottlectl proposals -f\n"
"    bottlectl status --expect gateway=2,supervise=1\n"
"    bottlectl approve 1796133400101-5d55b7e2 --note 'for the release'\n";


int
main(int argc, char **argv)
{
    int                     rc, help, version;
    bottlectl_t             ctl;
    const bottlectl_cmd_t  *cmd;

    memset(&ctl, 0, sizeof(ctl));

    rc = bottlectl_options(&ctl, &argc, argv, &help, &version);
    if (rc != BOTTLECTL_OK) {
        return rc;
    }

    if (help) {
        return bottlectl_help(argc, argv);
    }

    if (version) {
        printf("bottlectl %s\n", BOTTLECTL_VERSION);
        return BOTTLECTL_OK;
    }

    if (argc < 2) {
        bottlectl_error("no command (bottlectl --help lists them)");
        return BOTTLECTL_USAGE;
    }

    for (cmd = bottlectl_commands; cmd->name; cmd++) {
        if (strcmp(cmd->name, argv[1]) == 0) {
            break;
        }
    }

    if (cmd->name == NULL) {
        bottlectl_error("unknown command '%s' (bottlectl --help lists them)",
                        argv[1]);
        return BOTTLECTL_USAGE;
    }

    rc = cmd->handler(&ctl, argc - 1, argv + 1);

    bottlectl_disconnect(&ctl);

    if (fflush(stdout) != 0 && rc == BOTTLECTL_OK) {
        rc = BOTTLECTL_REFUSED;
    }

    return rc;
}


/*
 * Takes the global options out of argv wherever they stand before "--",
 * leaving the command and its own arguments in place.
 */

static int
bottlectl_options(bottlectl_t *ctl, int *argc, char **argv, int *help,
    int *version)
{
    int          i, n, rest;
    char         err[256];
    const char  *v, *limits;

    *help = 0;
    *version = 0;
    limits = NULL;
    n = 1;
    rest = 0;

    for (i = 1; i < *argc; i++) {
        if (rest) {
            argv[n++] = argv[i];
            continue;
        }

        if (strcmp(argv[i], "--") == 0) {
            rest = 1;
            continue;
        }

        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            *help = 1;
            continue;
        }

        if (strcmp(argv[i], "--version") == 0) {
            *version = 1;
            continue;
        }

        if (strcmp(argv[i], "--json") == 0) {
            ctl->json = 1;
            continue;
        }

        if (strncmp(argv[i], "--store", 7) == 0
            && (argv[i][7] == '\0' || argv[i][7] == '='))
        {
            v = bottlectl_option_value(*argc, argv, &i, "--store");
            if (v == NULL) {
                return BOTTLECTL_USAGE;
            }
            ctl->store = v;
            continue;
        }

        if (strncmp(argv[i], "--limits", 8) == 0
            && (argv[i][8] == '\0' || argv[i][8] == '='))
        {
            v = bottlectl_option_value(*argc, argv, &i, "--limits");
            if (v == NULL) {
                return BOTTLECTL_USAGE;
            }
            limits = v;
            continue;
        }

        if (strncmp(argv[i], "--policy", 8) == 0
            && (argv[i][8] == '\0' || argv[i][8] == '='))
        {
            v = bottlectl_option_value(*argc, argv, &i, "--policy");
            if (v == NULL) {
                return BOTTLECTL_USAGE;
            }
            ctl->policy = v;
            continue;
        }

        argv[n++] = argv[i];
    }

    argv[n] = NULL;
    *argc = n;

    if (*help || *version) {
        return BOTTLECTL_OK;
    }

    bottle_limits_default(&ctl->limits);

    if (limits == NULL) {
        limits = getenv("BOTTLE_LIMITS");
    }

    if (limits
        && bottle_limits_parse(&ctl->limits, limits, strlen(limits), err,
                               sizeof(err))
           != 0)
    {
        bottlectl_error("--limits: %s", err);
        return BOTTLECTL_USAGE;
    }

    if (ctl->store == NULL) {
        ctl->store = getenv("BOTTLE_STORE");
        if (ctl->store == NULL || ctl->store[0] == '\0') {
            ctl->store = BOTTLECTL_DEFAULT_STORE;
        }
    }

    if (bottle_store_url_parse(&ctl->url, ctl->store, err, sizeof(err))
        != 0)
    {
        bottlectl_error("invalid store URL: %s", err);
        return BOTTLECTL_USAGE;
    }

    bottle_store_url_print(&ctl->url, ctl->url_text, sizeof(ctl->url_text));

    return BOTTLECTL_OK;
}


/* "--name VALUE" or "--name=VALUE" */

static const char *
bottlectl_option_value(int argc, char **argv, int *i, const char *name)
{
    size_t  len;

    len = strlen(name);

    if (argv[*i][len] == '=') {
        return argv[*i] + len + 1;
    }

    if (*i + 1 >= argc) {
        bottlectl_error("option '%s' needs a value", name);
        return NULL;
    }

    (*i)++;

    return argv[*i];
}


/*
 * -h after a command: the manual's SYNOPSIS lines and COMMANDS entries of
 * that command (and subcommand), so the help and the manual are one
 * text.  Without a known command, the whole manual.
 */

static int
bottlectl_help(int argc, char **argv)
{
    int                     section, found, entry;
    const char             *line, *end, *cmd, *sub;
    const bottlectl_cmd_t  *c;

    cmd = argc >= 2 ? argv[1] : NULL;
    sub = argc >= 3 ? argv[2] : NULL;

    for (c = bottlectl_commands; cmd && c->name; c++) {
        if (strcmp(c->name, cmd) == 0) {
            break;
        }
    }

    if (cmd == NULL || c->name == NULL) {
        fputs(bottlectl_manual, stdout);
        return BOTTLECTL_OK;
    }

    /* a subcommand only when the manual has one of that name */

    if (sub) {
        found = 0;
        for (line = bottlectl_manual; *line; line = end + 1) {
            end = strchr(line, '\n');
            if (strncmp(line, "    ", 4) == 0 && line[4] != ' '
                && bottlectl_help_match(line + 4, cmd, sub))
            {
                found = 1;
            }
        }

        if (!found) {
            sub = NULL;
        }
    }

    for (section = 0; section < 2; section++) {
        fputs(section == 0 ? "SYNOPSIS\n" : "\nDESCRIPTION\n", stdout);

        found = 0;
        entry = 0;

        for (line = bottlectl_manual; *line; line = end + 1) {
            end = strchr(line, '\n');

            if (line[0] != ' ' && line != end) {
                /* a section's heading */
                found = strncmp(line, section == 0 ? "SYNOPSIS\n"
                                                   : "COMMANDS\n",
                                (size_t) (end - line + 1)) == 0;
                entry = 0;
                continue;
            }

            if (!found) {
                continue;
            }

            if (strncmp(line, "    ", 4) == 0 && line[4] != ' ') {
                entry = section == 0
                        ? strncmp(line + 4, "bottlectl ", 10) == 0
                          && bottlectl_help_match(line + 14, cmd, sub)
                        : bottlectl_help_match(line + 4, cmd, sub);

            } else if (line == end) {
                entry = 0;
            }

            if (entry) {
                fwrite(line, 1, (size_t) (end - line + 1), stdout);
            }
        }
    }

    return BOTTLECTL_OK;
}


/* s, after any "[...]" options, starts with "cmd[ sub]" and a space or \n */

static int
bottlectl_help_match(const char *s, const char *cmd, const char *sub)
{
    size_t  len;

    while (*s == '[') {
        s = strchr(s, ']');
        if (s == NULL) {
            return 0;
        }
        s++;
        while (*s == ' ') {
            s++;
        }
    }

    len = strlen(cmd);

    if (strncmp(s, cmd, len) != 0 || (s[len] != ' ' && s[len] != '\n')) {
        return 0;
    }

    if (sub == NULL) {
        return 1;
    }

    s += len + 1;
    len = strlen(sub);

    return strncmp(s, sub, len) == 0 && (s[len] == ' ' || s[len] == '\n');
}
