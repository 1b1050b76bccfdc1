/*
 * supervise-helper --listen unix:/path|ADDRESS:PORT --store URL
 *     [--response-timeout SECONDS] [--log FILE]
 *     [--heartbeat SECONDS] [--name NAME]
 *     [--operator-credential FILE [--operator-listen ADDRESS:PORT]]
 *
 * The MCP server behind nginx's `bottle_attribute mcp` (docs/supervise.md).
 * SIGTERM or SIGINT: waiting calls are answered "pending", then it stops.
 */

#define _POSIX_C_SOURCE  200809L

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <microhttpd.h>

#include "bottle_heartbeat.h"
#include "supervise.h"
#include "sv_operator.h"


sv_conf_t  sv_conf;


static int sv_usage(void);
static int sv_timeout(const char *s, int *out);


int
main(int argc, char **argv)
{
    int                 i, sig;
    char                err[512], host[128];
    size_t              n;
    sigset_t            set;
    const char         *listen_on, *store, *log, *env;
    struct MHD_Daemon  *d;
    sv_operator_t      *op;
    sv_operator_conf_t  opc;

    listen_on = NULL;
    store = NULL;
    log = NULL;
    op = NULL;
    memset(&opc, 0, sizeof(opc));
    sv_conf.timeout = SV_TIMEOUT_DEFAULT;
    sv_conf.stream_max = BOTTLE_PROPOSAL_STREAM_MAX;
    sv_conf.heartbeat = BOTTLE_HEARTBEAT_PERIOD_MS / 1000;

    /* before any thread: forge-connect's probe and the forge API use it */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, SV_NAME ": failure: cannot start libcurl\n");
        return 2;
    }

    env = getenv("SUPERVISE_RESPONSE_TIMEOUT_SECONDS");
    if (env && env[0] && sv_timeout(env, &sv_conf.timeout) != 0) {
        fprintf(stderr, SV_NAME ": failure "
                "'SUPERVISE_RESPONSE_TIMEOUT_SECONDS': not a number of "
                "seconds (0 to 3600)\n");
        return 2;
    }

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            listen_on = argv[++i];

        } else if (strcmp(argv[i], "--store") == 0 && i + 1 < argc) {
            store = argv[++i];

        } else if (strcmp(argv[i], "--log") == 0 && i + 1 < argc) {
            log = argv[++i];

        } else if (strcmp(argv[i], "--heartbeat") == 0 && i + 1 < argc) {
            if (sv_timeout(argv[++i], &sv_conf.heartbeat) != 0) {
                fprintf(stderr, SV_NAME ": failure '--heartbeat': not a "
                        "number of seconds (0 to 3600)\n");
                return 2;
            }

        } else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            if (argv[++i][0] == '\0'
                || strlen(argv[i]) >= sizeof(sv_conf.name))
            {
                fprintf(stderr, SV_NAME ": failure '--name': 1 to %zu "
                        "bytes\n", sizeof(sv_conf.name) - 1);
                return 2;
            }

            strcpy(sv_conf.name, argv[i]);

        } else if (strcmp(argv[i], "--operator-listen") == 0
                   && i + 1 < argc)
        {
            opc.listen = argv[++i];

        } else if (strcmp(argv[i], "--operator-credential") == 0
                   && i + 1 < argc)
        {
            opc.credential = argv[++i];

        } else if (strcmp(argv[i], "--response-timeout") == 0
                   && i + 1 < argc)
        {
            if (sv_timeout(argv[++i], &sv_conf.timeout) != 0) {
                fprintf(stderr, SV_NAME ": failure '--response-timeout': "
                        "not a number of seconds (0 to 3600)\n");
                return 2;
            }

        } else if (strcmp(argv[i], "--forge-probe-allow") == 0
                   && i + 1 < argc)
        {
            i++;
            if (sv_conf.nprobe_allow == SV_PROBE_NETS_MAX
                || bottle_net_parse(&sv_conf.probe_allow[sv_conf.nprobe_allow],
                                    argv[i], strlen(argv[i]))
                   != 0)
            {
                fprintf(stderr, SV_NAME ": failure '--forge-probe-allow': "
                        "not a network (10.0.0.0/8, fd00::/8), or more than "
                        "%d\n", SV_PROBE_NETS_MAX);
                return 2;
            }
            sv_conf.nprobe_allow++;

        } else if (strcmp(argv[i], "--help") == 0
                   || strcmp(argv[i], "-h") == 0)
        {
            sv_usage();
            return 0;

        } else {
            return sv_usage();
        }
    }

    if (listen_on == NULL || store == NULL
        || (opc.listen && opc.credential == NULL))
    {
        return sv_usage();
    }

    if (bottle_store_url_parse(&sv_conf.store, store, err, sizeof(err))
        != 0)
    {
        fprintf(stderr, SV_NAME ": failure '--store': %s\n", err);
        return 2;
    }

    bottle_store_url_print(&sv_conf.store, sv_conf.store_text,
                           sizeof(sv_conf.store_text));

    if (log && sv_log_open(log) != 0) {
        fprintf(stderr, SV_NAME ": failure '%s': %s\n", log,
                strerror(errno));
        return 1;
    }

    if (gethostname(host, sizeof(host)) != 0) {
        strcpy(host, "supervise");
    }

    host[sizeof(host) - 1] = '\0';
    snprintf(sv_conf.gateway, sizeof(sv_conf.gateway), "%s:%ld", host,
             (long) getpid());

    /* every thread started from here on leaves the signals to sigwait() */

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (sv_wait_start() != 0) {
        return 1;
    }

    if (sv_http_start(&d, listen_on) != 0) {
        sv_wait_stop();
        return 1;
    }

    /* the operator page, on a listener of its own (sv_operator.h) */

    if (opc.credential) {
        opc.store = store;
        opc.logf = sv_log;

        if (sv_operator_start(&op, &opc, err, sizeof(err)) != 0) {
            fprintf(stderr, SV_NAME ": failure 'operator page': %s\n", err);
            sv_http_stop(d, listen_on);
            sv_wait_stop();
            return 1;
        }
    }

    if (sv_heartbeat_start() != 0) {
        sv_operator_stop(op);
        sv_http_stop(d, listen_on);
        sv_wait_stop();
        return 1;
    }

    sv_log("listening on %s, store %s, response timeout %d s", listen_on,
           sv_conf.store_text, sv_conf.timeout);

    sig = 0;
    while (sigwait(&set, &sig) != 0 || (sig != SIGTERM && sig != SIGINT)) {
        /* nothing else is waited for */
    }

    /* waiting calls answer "pending"; then the server stops */

    n = sv_wait_release_all();
    if (n) {
        struct timespec  ts = { 0, 200 * 1000 * 1000 };

        nanosleep(&ts, NULL);
    }

    sv_heartbeat_stop();
    sv_operator_stop(op);
    sv_http_stop(d, listen_on);
    sv_wait_stop();

    sv_log("stopped (signal %d, %zu waiting call%s answered pending)", sig,
           n, n == 1 ? "" : "s");

    sv_log_close();

    return 0;
}


static int
sv_usage(void)
{
    fprintf(stderr,
            "usage: " SV_NAME " --listen unix:/path|ADDRESS:PORT "
            "--store URL\n"
            "           [--response-timeout SECONDS] [--log FILE]\n"
            "           [--heartbeat SECONDS] [--name NAME]\n"
            "           [--forge-probe-allow NET]...\n"
            "           [--operator-credential FILE "
            "[--operator-listen ADDRESS:PORT]]\n"
            "\n"
            "The MCP server an agent calls to ask the operator for more\n"
            "(docs/supervise.md).  nginx's `bottle_attribute mcp` fronts it\n"
            "and names the bottle in X-Bottle-Id.\n"
            "\n"
            "    --listen             a unix socket (created mode 0660) or "
            "an IPv4\n"
            "                         address and port\n"
            "    --store              the control plane: redis://... or "
            "unix:...\n"
            "    --response-timeout   how long a call waits for the "
            "operator (30;\n"
            "                         SUPERVISE_RESPONSE_TIMEOUT_SECONDS)\n"
            "    --log                log here, not to stderr\n"
            "    --heartbeat          write the heartbeat `bottlectl "
            "status` reads\n"
            "                         this often (5; 0: never)\n"
            "    --name               the heartbeat's id (the host "
            "name)\n"
            "    --operator-credential  serve the operator page; the "
            "password\n"
            "                         (user \"operator\") is this file's "
            "first line\n"
            "    --operator-listen    the page's own address and port\n"
            "    --forge-probe-allow  an internal network forge-connect "
            "may probe\n"
            "                         for a forge's kind (none: only "
            "public ones)\n"
            "                         (127.0.0.1:9101), never on the "
            "bottles' network\n");

    return 2;
}


static int
sv_timeout(const char *s, int *out)
{
    long   v;
    char  *end;

    errno = 0;
    v = strtol(s, &end, 10);

    if (errno || end == s || *end != '\0' || v < 0 || v > 3600) {
        return -1;
    }

    *out = (int) v;

    return 0;
}
