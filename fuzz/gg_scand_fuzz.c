/*
 * libFuzzer target for the resident scanner's request parser
 * (gitgate-helper/gg_scand_msg.c), which reads what any local process of
 * the gate's uid sends to <GITGATE_DIR>/.scand/sock.  Beyond "no crash, no
 * sanitizer report": a parsed request keeps every bound (arguments,
 * variables, each string), its working directory is absolute, every
 * variable is NAME=value of a name the client passes, and building it
 * again parses to the same request; a warm child's socket name made of
 * its bottle is one path component.  The input is an exact-size copy.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gg_scand.h"
#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char            err[256], *in, *again,
                    name[GG_SCAND_WARM_ID_MAX + 8];
    const char     *b;
    size_t          i;
    ssize_t         n;
    gg_scand_msg_t  m, m2;
    int             st;
    long            pid;
    long long       u, k;

    in = malloc(size ? size : 1);
    CHECK(in != NULL);
    if (size) {
        memcpy(in, data, size);
    }

    /* the answers' parsers on the same bytes */
    if (gg_scand_reply_started(in, size, &pid) == 0) {
        CHECK(pid >= 2);
    }
    if (gg_scand_reply_done(in, size, &st, &u, &k) == 0) {
        CHECK(st >= 0 && st <= 255 && u >= 0 && k >= 0);
    }

    if (gg_scand_msg_parse(&m, in, size, err, sizeof(err)) != 0) {
        CHECK(err[0] != '\0');
        free(in);
        return 0;
    }

    CHECK(size <= GG_SCAND_MSG_MAX);
    CHECK(m.nargs <= GG_SCAND_ARGS_MAX && m.nenv <= GG_SCAND_ENV_MAX);
    CHECK(m.cwd[0] == '/' && m.umask <= 0777);
    CHECK(strcmp(m.mode, "gate") == 0 || strcmp(m.mode, "scan") == 0);
    for (i = 0; i < m.nargs; i++) {
        CHECK(strlen(m.args[i]) <= GG_SCAND_STR_MAX);
    }
    for (i = 0; i < m.nenv; i++) {
        CHECK(strlen(m.env[i]) <= GG_SCAND_STR_MAX);
        CHECK(strchr(m.env[i], '=') != NULL && m.env[i][0] != '=');
        CHECK(gg_scand_env_passed(m.env[i]));
    }

    /* the bottle a request is for, and its warm child's socket name: a
     * name is "w-" and the id, one path component, never "." or ".." */
    b = gg_scand_bottle(m.mode, (int) m.nargs, m.args, m.nargs ? m.args[0]
                                                                : NULL);
    if (gg_scand_warm_name(name, sizeof(name), b) == 0) {
        CHECK(strncmp(name, "w-", 2) == 0 && strcmp(name + 2, b) == 0);
        CHECK(strchr(name, '/') == NULL && b[0] != '.');
    }

    again = malloc(GG_SCAND_MSG_MAX);
    CHECK(again != NULL);
    n = gg_scand_msg_build(again, GG_SCAND_MSG_MAX, &m);
    /* the umask's and counts' spelling may differ ("022" for "22"): the
     * request built again parses to the same fields */
    CHECK(n > 0);
    CHECK(gg_scand_msg_parse(&m2, again, (size_t) n, err, sizeof(err)) == 0);
    CHECK(strcmp(m2.mode, m.mode) == 0 && strcmp(m2.cwd, m.cwd) == 0);
    CHECK(m2.umask == m.umask && m2.nargs == m.nargs && m2.nenv == m.nenv);
    for (i = 0; i < m.nargs; i++) {
        CHECK(strcmp(m2.args[i], m.args[i]) == 0);
    }
    for (i = 0; i < m.nenv; i++) {
        CHECK(strcmp(m2.env[i], m.env[i]) == 0);
    }

    free(again);
    free(in);
    return 0;
}
