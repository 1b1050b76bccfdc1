/*
 * bottle_limits: the defaults, the "name=value" words of
 * bottle_store_limits and bottlectl --limits (sizes with k, m, g; routes a
 * count), their refusals, and the checks' messages, which name the field
 * and never a secret's value.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_limits.h"


static char  err[512];


static int
parse(bottle_limits_t *l, const char *s)
{
    memset(err, 0, sizeof(err));
    bottle_limits_default(l);

    return bottle_limits_parse(l, s, strlen(s), err, sizeof(err));
}


static void
test_parse(void)
{
    char             buf[256];
    bottle_limits_t  l;

    bottle_limits_default(&l);
    bottle_limits_print(&l, buf, sizeof(buf));
    is_str(buf, "policy=1048576 routes=4096 secret=16384 store=268435456",
           "defaults");

    is_int(parse(&l, ""), 0, "nothing: the defaults");
    ok(l.policy == 1048576 && l.routes == 4096, "nothing: unchanged");

    is_int(parse(&l, "policy=4m routes=20000"), 0, "two words");
    ok(l.policy == 4 * 1048576 && l.routes == 20000 && l.secret == 16384
       && l.store == 268435456, "two words: the others kept");

    is_int(parse(&l, "secret=2k,store=1g"), 0, "commas, k and g");
    ok(l.secret == 2048 && l.store == 1073741824, "commas: values");

    is_int(parse(&l, "  policy=123 ,, "), 0, "spaces and empty words");
    ok(l.policy == 123, "bytes without a suffix");

    is_int(parse(&l, "policy=2M"), 0, "upper-case suffix");
    ok(l.policy == 2 * 1048576, "upper-case suffix: value");
}


static void
test_refused(void)
{
    size_t           i;
    bottle_limits_t  l;

    static const char  *bad[] = {
        "policy", "policy=", "policy=0", "policy=4x", "policy=-1",
        "policy=k", "routes=4k", "routes=0", "colour=red", "=5",
        "store=99999999999999g", "policy=4m routes"
    };

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bottle_limits_default(&l);
        l.routes = 7;

        is_int(bottle_limits_parse(&l, bad[i], strlen(bad[i]), err,
                                   sizeof(err)), -1, "refused: '%s'", bad[i]);
        ok(err[0] != '\0', "refused: '%s': a reason", bad[i]);
        ok(l.routes == 7 && l.policy == 1048576,
           "refused: '%s': nothing changed", bad[i]);
    }

    parse(&l, "colour=red");
    ok(strstr(err, "policy, routes, secret and store") != NULL,
       "unknown: the known names");
}


static void
test_checks(void)
{
    bottle_limits_t  l;

    bottle_limits_default(&l);

    is_int(bottle_limits_check_policy(&l, "f.json", "a", 1048576, err,
                                      sizeof(err)), 0, "policy: at the limit");
    is_int(bottle_limits_check_policy(&l, "f.json", "a", 1048577, err,
                                      sizeof(err)), -1, "policy: over");
    is_str(err, "f.json: bottle \"a\": policy: 1048577 bytes, over the limit "
           "of 1048576 (raise \"policy\" with bottle_store_limits and "
           "bottlectl --limits)", "policy: the message");

    is_int(bottle_limits_check_secret(&l, "s", "b", "egress_tokens.K", 16385,
                                      err, sizeof(err)), -1, "secret: over");
    is_str(err, "s: bottle \"b\": egress_tokens.K: 16385 bytes, over the "
           "limit of 16384 for a secret (raise \"secret\" with "
           "bottle_store_limits and bottlectl --limits)",
           "secret: the message names the field");

    is_int(bottle_limits_check_store(&l, "s", "c", 268435456, err,
                                     sizeof(err)), 0, "store: at the limit");
    is_int(bottle_limits_check_store(&l, "s", "c", 268435457, err,
                                     sizeof(err)), -1, "store: over");
    ok(strstr(err, "the store would hold 268435457 bytes") != NULL,
       "store: the message");
}


int
main(void)
{
    test_parse();
    test_refused();
    test_checks();

    return done_testing();
}
