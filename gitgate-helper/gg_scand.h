/*
 * git-gate's resident push scanner (docs/gitgate.md, "The resident
 * scanner"): the pre-receive hook is a small client (gitgate-hook.c)
 * that hands the push to a resident process (gg_scand.c) over a unix
 * socket in <dir>/.scand; the process forks a child per push, which runs
 * the same hook code as a process of its own would, with the libraries
 * already loaded and the rule databases already read.
 *
 * One request per connection (SOCK_SEQPACKET), the client's stdin, stdout
 * and stderr passed with it (SCM_RIGHTS):
 *
 *   "ggscand1" NUL mode NUL cwd NUL umask NUL nargs NUL arg NUL ...
 *   nenv NUL NAME=value NUL ...
 *
 * mode is "gate" (the gate's hook, gg_hook()) or "scan" (gitgate-scan's
 * arguments); umask in octal; nargs and nenv in decimal.  The child
 * answers "started PID" once it runs, then "done STATUS UTIME_US
 * STIME_US" (its exit status, its CPU and its children's) as it ends.
 * A connection that closes before "started" ran nothing; one that closes
 * after it without "done" is a scan that died.
 */

#ifndef GG_SCAND_H
#define GG_SCAND_H

#include <stddef.h>
#include <sys/types.h>


#define GG_SCAND_MAGIC     "ggscand1"
/* a request's bounds: the whole, each string, the arguments, the
 * variables */
#define GG_SCAND_MSG_MAX   65536
#define GG_SCAND_STR_MAX   4096
#define GG_SCAND_ARGS_MAX  16
#define GG_SCAND_ENV_MAX   64
/* an answer's longest */
#define GG_SCAND_REPLY_MAX 128

/* seconds without a request after which the scanner exits */
#define GG_SCAND_IDLE      60
/* seconds the client waits for a scan's end, by default */
#define GG_SCAND_WAIT      900

/* what a hook's stdin may hold (the ref updates): every ref of
 * GG_MAX_UPDATES at the longest; the client keeps as much of it
 * (gitgate-hook.c) */
#define GG_MAX_INPUT       (64 * 1024 * 1024)


typedef struct {
    const char  *mode;
    const char  *cwd;
    unsigned     umask;
    size_t       nargs;
    const char  *args[GG_SCAND_ARGS_MAX + 1];
    size_t       nenv;
    const char  *env[GG_SCAND_ENV_MAX + 1];
} gg_scand_msg_t;


/* a variable the client passes on: 1 if name (up to '=' or the end) is
 * one */
int gg_scand_env_passed(const char *name);

/*
 * A request parsed in place (buf must end with NUL: each string points
 * into it); 0, or -1 and err.  Every bound above checked; the variables
 * only those gg_scand_env_passed() names, each NAME=value.
 */
int gg_scand_msg_parse(gg_scand_msg_t *out, const char *buf, size_t len,
    char *err, size_t errlen);

/* a request built into buf; its length, or -1 when over a bound */
ssize_t gg_scand_msg_build(char *buf, size_t size, const gg_scand_msg_t *m);

/*
 * A bottle's warm child (gg_scand.c): after its first push, a child of
 * the scanner serves that bottle's next pushes one after another in the
 * same process, on <dir>/w-ID while it waits for one.  The name, "w-" and
 * the bottle's id, into out: 0; -1 when the id is not 1 to
 * GG_SCAND_WARM_ID_MAX of [A-Za-z0-9._:@-] (a bottle id's characters) not
 * starting with '.' (no warm child for it; nor for one whose path is too
 * long for a socket's).
 */
#define GG_SCAND_WARM_ID_MAX  128
int gg_scand_warm_name(char *out, size_t size, const char *bottle);

/* the bottle a request is for: gate_bottle (GITGATE_BOTTLE) for mode
 * "gate", the argument after "--bottle" for "scan"; NULL */
const char *gg_scand_bottle(const char *mode, int nargs,
    const char *const *args, const char *gate_bottle);

/* "started PID": 0 and *pid, or -1 */
int gg_scand_reply_started(const char *buf, size_t len, long *pid);

/* "done STATUS UTIME_US STIME_US": 0, or -1 */
int gg_scand_reply_done(const char *buf, size_t len, int *status,
    long long *utime_us, long long *stime_us);


#endif /* GG_SCAND_H */
