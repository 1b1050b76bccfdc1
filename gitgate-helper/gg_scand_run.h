/*
 * The resident scanner's server side (gg_scand.c): what gitgate-cgi and
 * gitgate-scan give it to run per push.
 */

#ifndef GG_SCAND_RUN_H
#define GG_SCAND_RUN_H

#include "gg_scand.h"


/* one push in the child: the hook's exit status (argv[0] is the hook's
 * name, argv[1..] the client's arguments) */
typedef int (*gg_scand_run_pt)(int argc, char **argv, void *data);

/*
 * Serves <dir>/sock until idle; root is GITGATE_DIR for the gate's hook
 * (every path checked to be the pushed repo's), NULL for gitgate-scan's.
 * data (the rule databases read once) is passed to run.  Returns the
 * program's exit status: 0 after the idle time, 1 when it cannot serve
 * (another scanner holds dir).
 */
int gg_scand_serve(const char *root, const char *dir, gg_scand_run_pt run,
    void *data);


#endif /* GG_SCAND_RUN_H */
