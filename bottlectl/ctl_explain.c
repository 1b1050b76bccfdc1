/*
 * bottlectl explain: a placeholder until the explain command lands (this
 * file is replaced by it).
 */

#include "bottlectl.h"


int
bottlectl_explain(bottlectl_t *ctl, int argc, char **argv)
{
    (void) ctl;
    (void) argc;
    (void) argv;

    bottlectl_error("explain: not built yet");

    return BOTTLECTL_USAGE;
}
