
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


static void
fuzz_count(void *data, const char *field, long index, const char *what,
    const char *why)
{
    (void) field;
    (void) index;

    if (what == NULL || why == NULL) {
        __builtin_trap();
    }

    (*(long *) data)++;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t                        i, j;
    char                          err[1024];
    const bottle_t               *b;
    bottle_policy_t              *p;
    bottle_repo_t                 repo;
    const bottle_repo_pattern_t  *c;

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

        /* every create pattern allows a private repo of its own shape */

        for (j = 0; j < b->ncreate; j++) {
            c = &b->create[j];
            memset(&repo, 0, sizeof(repo));
            memcpy(repo.forge, c->forge, sizeof(repo.forge));
            memcpy(repo.owner, c->owner, sizeof(repo.owner));
            memcpy(repo.repo, c->name, sizeof(repo.repo));

            if (c->prefix && repo.repo[0] == '\0') {
                repo.repo[0] = 'x';
            }

            if (bottle_create_allowed(b, &repo, 0) == NULL
                || (bottle_create_allowed(b, &repo, 1) == NULL
                    && c->public_ok))
            {
                __builtin_trap();
            }
        }
    }

    /*
     * parents and children: a bottle is within itself; a child the parser
     * accepted is within its parent, when the parent is in the document,
     * and launches nothing
     */

    for (i = 0; i < bottle_policy_count(p); i++) {
        long             n;
        const bottle_t  *parent;

        b = bottle_policy_at(p, i);
        n = 0;

        if (bottle_child_beyond(b, b, fuzz_count, &n) != 0 || n != 0) {
            __builtin_trap();
        }

        if (b->parent.len == 0) {
            continue;
        }

        if (b->children_max != 0 || b->nchild_agents != 0) {
            __builtin_trap();
        }

        parent = bottle_policy_find_id(p, b->parent.data, b->parent.len);

        if (parent != NULL
            && (parent->parent.len != 0
                || bottle_child_beyond(b, parent, fuzz_count, &n) != 0))
        {
            __builtin_trap();
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
