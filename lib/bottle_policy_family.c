/*
 * Parents and children (docs/policy.md#parent-and-children): a child's
 * access compared with its parent's, element by element, and a policy's
 * children checked against the parents it holds.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bottle_policy_int.h"
#include "bottle_util.h"


typedef struct {
    char                field[64];
    long                index;
    char                what[BOTTLE_FORGE_NAME_MAX
                             + 2 * BOTTLE_REPO_SEGMENT_MAX + 16];
    const char         *why;
    long                n;
} bottle_first_t;


static int bottle_cmp_name(const void *a, const void *b);
static int bottle_cmp_repo(const void *a, const void *b);
static int bottle_cmp_family(const void *a, const void *b);
static int bottle_pattern_covers(const bottle_repo_pattern_t *q,
    const bottle_repo_pattern_t *p);
static void bottle_first(void *data, const char *field, long index,
    const char *what, const char *why);


static int
bottle_cmp_name(const void *a, const void *b)
{
    return strcmp(((const bottle_secret_t *const *) a)[0]->name.data,
                  ((const bottle_secret_t *const *) b)[0]->name.data);
}


/* as bottle_repo_same() compares: forge exactly, owner and repo in any case */

static int
bottle_cmp_repo(const void *a, const void *b)
{
    int                   rc;
    const bottle_repo_t  *x, *y;

    x = *(const bottle_repo_t *const *) a;
    y = *(const bottle_repo_t *const *) b;

    rc = strcmp(x->forge, y->forge);

    if (rc == 0) {
        rc = strcasecmp(x->owner, y->owner);
    }

    if (rc == 0) {
        rc = strcasecmp(x->repo, y->repo);
    }

    return rc;
}


/* 1 if every repo pattern p allows, q allows too */

static int
bottle_pattern_covers(const bottle_repo_pattern_t *q,
    const bottle_repo_pattern_t *p)
{
    size_t  n;

    if (strcmp(q->forge, p->forge) != 0
        || strcasecmp(q->owner, p->owner) != 0
        || (p->public_ok && !q->public_ok))
    {
        return 0;
    }

    if (!q->prefix) {
        return !p->prefix && strcasecmp(q->name, p->name) == 0;
    }

    n = strlen(q->name);

    return strlen(p->name) >= n && strncasecmp(q->name, p->name, n) == 0;
}


long
bottle_child_beyond(const bottle_t *child, const bottle_t *parent,
    bottle_beyond_pt fn, void *data)
{
    long                            n;
    char                            what[BOTTLE_FORGE_NAME_MAX
                                         + 2 * BOTTLE_REPO_SEGMENT_MAX + 16];
    size_t                          i, j, k;
    const bottle_repo_t           **repos, *want, **hit;
    const bottle_secret_t         **names, *name, **found;
    const bottle_repo_pattern_t    *p;

    n = 0;
    repos = NULL;
    names = NULL;

    /* egress hosts: a host the parent has no route to */

    for (i = 0; i < child->nroutes; i++) {
        if (bottle_find_route(parent, child->routes[i].host.data,
                              child->routes[i].host.len)
            == NULL)
        {
            fn(data, "routes", (long) i, child->routes[i].host.data,
               "the parent has no route to it");
            n++;
        }
    }

    /* repos: not granted to the parent, or written where it only reads */

    if (child->nrepos) {
        repos = malloc((parent->nrepos + 1) * sizeof(bottle_repo_t *));
        if (repos == NULL) {
            return -1;
        }

        for (i = 0; i < parent->nrepos; i++) {
            repos[i] = &parent->repos[i];
        }

        qsort(repos, parent->nrepos, sizeof(bottle_repo_t *),
              bottle_cmp_repo);
    }

    for (i = 0; i < child->nrepos; i++) {
        want = &child->repos[i];
        hit = parent->nrepos
              ? bsearch(&want, repos, parent->nrepos,
                        sizeof(bottle_repo_t *), bottle_cmp_repo)
              : NULL;

        snprintf(what, sizeof(what), "%s/%s/%s%s", want->forge, want->owner,
                 want->repo, want->write ? ":write" : "");

        if (hit == NULL) {
            fn(data, "repos", (long) i, what,
               "the parent is not granted it");
            n++;
            continue;
        }

        if (!want->write) {
            continue;
        }

        /* any grant of the same repo that writes: the equal run */

        j = (size_t) (hit - repos);
        while (j > 0 && bottle_cmp_repo(&repos[j - 1], &want) == 0) {
            j--;
        }

        for (k = j; k < parent->nrepos
                    && bottle_cmp_repo(&repos[k], &want) == 0; k++)
        {
            if (repos[k]->write) {
                break;
            }
        }

        if (k == parent->nrepos || bottle_cmp_repo(&repos[k], &want) != 0) {
            fn(data, "repos", (long) i, what,
               "the parent may only read it");
            n++;
        }
    }

    free(repos);

    /* env names: an egress token the parent does not have */

    if (child->negress_tokens) {
        names = malloc((parent->negress_tokens + 1)
                       * sizeof(bottle_secret_t *));
        if (names == NULL) {
            return -1;
        }

        for (i = 0; i < parent->negress_tokens; i++) {
            names[i] = &parent->egress_tokens[i];
        }

        qsort(names, parent->negress_tokens, sizeof(bottle_secret_t *),
              bottle_cmp_name);
    }

    for (i = 0; i < child->negress_tokens; i++) {
        name = &child->egress_tokens[i];
        found = parent->negress_tokens
                ? bsearch(&name, names, parent->negress_tokens,
                          sizeof(bottle_secret_t *), bottle_cmp_name)
                : NULL;

        if (found == NULL) {
            fn(data, "egress_tokens", -1, name->name.data,
               "the parent has no egress token of that name");
            n++;
        }
    }

    free(names);

    /* repos made without asking: at most BOTTLE_CREATE_MAX each */

    for (i = 0; i < child->ncreate; i++) {
        p = &child->create[i];

        for (j = 0; j < parent->ncreate; j++) {
            if (bottle_pattern_covers(&parent->create[j], p)) {
                break;
            }
        }

        if (j == parent->ncreate) {
            snprintf(what, sizeof(what), "%s/%s/%s%s%s", p->forge, p->owner,
                     p->name, p->prefix ? "*" : "",
                     p->public_ok ? ":public" : "");
            fn(data, "git_gate.actions.create", (long) i, what,
               "no pattern of the parent allows it");
            n++;
        }
    }

    return n;
}


static void
bottle_first(void *data, const char *field, long index, const char *what,
    const char *why)
{
    bottle_first_t  *f = data;

    if (f->n++ > 0) {
        return;
    }

    if (index < 0) {
        snprintf(f->field, sizeof(f->field), "%s", field);
    } else {
        snprintf(f->field, sizeof(f->field), "%s[%ld]", field, index);
    }

    f->index = index;
    snprintf(f->what, sizeof(f->what), "%s", what);
    f->why = why;
}


int
bottle_child_check(const bottle_t *child, const bottle_t *parent,
    char *err, size_t errlen)
{
    long            n;
    char            more[48];
    bottle_first_t  f;

    memset(&f, 0, sizeof(f));

    n = bottle_child_beyond(child, parent, bottle_first, &f);

    if (n < 0) {
        return bottle_errf(err, errlen, "%s: bottle \"%s\": out of memory",
                           child->source.data, child->id.data);
    }

    if (n == 0) {
        return 0;
    }

    more[0] = '\0';
    if (n > 1) {
        snprintf(more, sizeof(more), " (and %ld more)", n - 1);
    }

    return bottle_errf(err, errlen, "%s: bottle \"%s\": %s: \"%s\" exceeds "
                       "its parent \"%s\": %s%s", child->source.data,
                       child->id.data, f.field, f.what, parent->id.data,
                       f.why, more);
}


static int
bottle_cmp_family(const void *a, const void *b)
{
    return strcmp((*(const bottle_t *const *) a)->id.data,
                  (*(const bottle_t *const *) b)->id.data);
}


int
bottle_policy_check_family(const bottle_policy_t *p, int need_parent,
    char *err, size_t errlen)
{
    int              rc;
    size_t           i, n;
    bottle_t         key;
    const bottle_t  **sorted, **hit, *b, *kp, *parent;

    n = bottle_policy_count(p);

    for (i = 0; i < n; i++) {
        if (bottle_policy_at(p, i)->parent.len) {
            break;
        }
    }

    if (i == n) {
        return 0;                           /* no child */
    }

    sorted = malloc(n * sizeof(bottle_t *));
    if (sorted == NULL) {
        return bottle_errf(err, errlen, "out of memory");
    }

    for (i = 0; i < n; i++) {
        sorted[i] = bottle_policy_at(p, i);
    }

    qsort(sorted, n, sizeof(bottle_t *), bottle_cmp_family);

    rc = 0;
    memset(&key, 0, sizeof(key));
    kp = &key;

    for (i = 0; i < n; i++) {
        b = bottle_policy_at(p, i);

        if (b->parent.len == 0) {
            continue;
        }

        key.id = b->parent;
        hit = bsearch(&kp, sorted, n, sizeof(bottle_t *), bottle_cmp_family);

        if (hit == NULL) {
            if (!need_parent) {
                continue;
            }

            rc = bottle_errf(err, errlen, "%s: bottle \"%s\": parent: no "
                             "bottle \"%s\" in the policy", b->source.data,
                             b->id.data, b->parent.data);
            break;
        }

        parent = *hit;

        if (parent->parent.len) {
            rc = bottle_errf(err, errlen, "%s: bottle \"%s\": parent: "
                             "\"%s\" is itself a child (of \"%s\"): depth "
                             "is 1", b->source.data, b->id.data,
                             parent->id.data, parent->parent.data);
            break;
        }

        rc = bottle_child_check(b, parent, err, errlen);
        if (rc != 0) {
            break;
        }
    }

    free(sorted);

    return rc;
}
