
/*
 * libFuzzer target for the policy parser: the JSON an operator or a control
 * plane writes.  Whatever it is given, bottle_policy_parse() must either
 * build a policy whose lookups are safe or fail with a message, and never
 * read or write out of bounds.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bottle_policy.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t            i, j;
    char              err[1024];
    const bottle_t   *b;
    bottle_policy_t  *p;

    if (bottle_policy_parse(&p, (const char *) data, size, "fuzz.json", err,
                            sizeof(err))
        != 0)
    {
        /* a failure always says why */
        if (err[0] == '\0' || memchr(err, '\0', sizeof(err)) == NULL) {
            __builtin_trap();
        }

        return 0;
    }

    for (i = 0; i < bottle_policy_count(p); i++) {
        b = bottle_policy_at(p, i);

        for (j = 0; j < b->nroutes; j++) {
            if (bottle_find_route(b, b->routes[j].host.data,
                                  b->routes[j].host.len)
                != &b->routes[j])
            {
                __builtin_trap();
            }

            (void) bottle_route_port_ok(&b->routes[j], 443, 1);
        }
    }

    /* lookups with the input itself as the key */
    (void) bottle_policy_find_token(p, data, size);

    if (bottle_policy_count(p)) {
        (void) bottle_find_route(bottle_policy_at(p, 0), (const char *) data,
                                 size);
    }

    bottle_policy_free(p);

    return 0;
}
