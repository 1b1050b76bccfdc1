/*
 * sv-operator: the operator page alone (sv_operator.h), until
 * supervise-helper's own main serves it with the same flags.
 *
 *   sv-operator --store URL --operator-credential FILE
 *               [--operator-listen ADDR:PORT] [--log FILE]
 *
 * Runs until SIGTERM or SIGINT.
 */

#define _POSIX_C_SOURCE  200809L

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "sv_operator.h"


static int
usage(void)
{
    fprintf(stderr, "usage: sv-operator --store URL --operator-credential "
            "FILE [--operator-listen ADDR:PORT] [--log FILE]\n");
    return 2;
}


int
main(int argc, char **argv)
{
    int                  i, sig;
    char                 err[1024];
    sigset_t             set;
    sv_operator_t       *op;
    sv_operator_conf_t   conf;

    memset(&conf, 0, sizeof(conf));

    for (i = 1; i < argc; i++) {
        if (i + 1 >= argc) {
            return usage();
        }

        if (strcmp(argv[i], "--store") == 0) {
            conf.store = argv[++i];

        } else if (strcmp(argv[i], "--operator-listen") == 0) {
            conf.listen = argv[++i];

        } else if (strcmp(argv[i], "--operator-credential") == 0) {
            conf.credential = argv[++i];

        } else if (strcmp(argv[i], "--log") == 0) {
            conf.log = argv[++i];

        } else {
            return usage();
        }
    }

    /* the signals are waited for here, never delivered to MHD's threads */

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (sv_operator_start(&op, &conf, err, sizeof(err)) != 0) {
        fprintf(stderr, "sv-operator: %s\n", err);
        return 1;
    }

    sigwait(&set, &sig);
    sv_operator_stop(op);

    return 0;
}
