/*
 * The lookups the gateway makes per request: a bottle by token or by id,
 * whether a source address may use it, the route for a host, a route's
 * ports, and path globs.
 */

#include <string.h>

#include <openssl/crypto.h>

#include "bottle_policy_int.h"


/* lookups: read-only, safe from any thread or process sharing the policy */

size_t
bottle_policy_count(const bottle_policy_t *p)
{
    return p ? p->nbottles : 0;
}


size_t
bottle_policy_bytes(const bottle_policy_t *p)
{
    size_t                 n;
    const bottle_block_t  *b;

    n = sizeof(bottle_policy_t);

    for (b = p->blocks; b != NULL; b = b->next) {
        n += sizeof(bottle_block_t) + b->size;
    }

    return n;
}


const bottle_t *
bottle_policy_at(const bottle_policy_t *p, size_t i)
{
    return (p != NULL && i < p->nbottles) ? &p->bottles[i] : NULL;
}


const bottle_t *
bottle_policy_find_token(const bottle_policy_t *p, const unsigned char *token,
    size_t len)
{
    size_t           h;
    unsigned char    digest[32];
    const bottle_t  *b;

    if (p == NULL || p->token_slots == NULL || token == NULL || len == 0) {
        return NULL;
    }

    if (bottle_sha256(digest, token, len) != 0) {
        return NULL;
    }

    /* the digest is uniform already: its first bytes are the hash */
    memcpy(&h, digest, sizeof(h));

    for (h &= p->token_mask; p->token_slots[h]; h = (h + 1) & p->token_mask) {
        b = &p->bottles[p->token_slots[h] - 1];

        if (CRYPTO_memcmp(b->token_sha256, digest, 32) == 0) {
            return b;
        }
    }

    return NULL;
}


/*
 * By id: how the http side finds again the bottle a CONNECT resolved, once
 * per tunnel.  Ids are unique; a linear scan over the bottles of one gateway
 * is cheaper than the TLS handshake it accompanies.
 */

const bottle_t *
bottle_policy_find_id(const bottle_policy_t *p, const char *id, size_t len)
{
    size_t  i;

    if (p == NULL || id == NULL) {
        return NULL;
    }

    for (i = 0; i < p->nbottles; i++) {
        if (p->bottles[i].id.len == len
            && memcmp(p->bottles[i].id.data, id, len) == 0)
        {
            return &p->bottles[i];
        }
    }

    return NULL;
}


int
bottle_source_allowed(const bottle_t *b, const bottle_ip_t *src)
{
    size_t  i;

    if (b->nsources == 0) {
        return 1;
    }

    for (i = 0; i < b->nsources; i++) {
        if (bottle_net_contains(&b->sources[i], src)) {
            return 1;
        }
    }

    return 0;
}


static const bottle_route_t *
bottle_lookup_host(const bottle_t *b, const char *host, size_t len)
{
    size_t                 h;
    const bottle_route_t  *r;

    h = bottle_hash_host(host, len) & b->host_mask;

    for ( /* void */ ; b->host_slots[h]; h = (h + 1) & b->host_mask) {
        r = &b->routes[b->host_slots[h] - 1];

        if (bottle_eq_nocase(r->host.data, r->host.len, host, len)) {
            return r;
        }
    }

    return NULL;
}


const bottle_route_t *
bottle_find_route(const bottle_t *b, const char *host, size_t len)
{
    char         buf[BOTTLE_IP_STRLEN];
    size_t       n;
    bottle_ip_t  ip;

    if (b == NULL || b->host_slots == NULL || host == NULL || len == 0) {
        return NULL;
    }

    /* a name a client would read as an address is only ever an address */
    if (host[0] == '[') {
        if (len < 2 || host[len - 1] != ']'
            || bottle_ip_parse(&ip, host + 1, len - 2) != 0
            || ip.family != AF_INET6)
        {
            return NULL;
        }

    } else if (memchr(host, ':', len) != NULL
               || bottle_ip_looks_numeric(host, len))
    {
        if (bottle_ip_parse(&ip, host, len) != 0) {
            return NULL;
        }

    } else {
        if (host[len - 1] == '.') {
            len--;
        }

        if (len == 0 || len > BOTTLE_HOST_MAX) {
            return NULL;
        }

        return bottle_lookup_host(b, host, len);
    }

    n = bottle_ip_format(buf, sizeof(buf), &ip);

    return n ? bottle_lookup_host(b, buf, n) : NULL;
}


int
bottle_route_port_ok(const bottle_route_t *r, unsigned port, int is_connect)
{
    size_t  i;

    if (r->nports == 0) {
        return port == (is_connect ? 443u : 80u);
    }

    for (i = 0; i < r->nports; i++) {
        if (r->ports[i] == port) {
            return 1;
        }
    }

    return 0;
}


int
bottle_glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
    size_t  p, i, star, mark;

    /*
     * On a mismatch, let the last '*' swallow one more character and retry
     * from there; earlier stars never need revisiting, so no recursion.
     */
    p = 0;
    i = 0;
    star = (size_t) -1;
    mark = 0;

    while (i < slen) {
        if (p < plen && pat[p] == '*') {
            star = p++;
            mark = i;

        } else if (p < plen && pat[p] == s[i]) {
            p++;
            i++;

        } else if (star != (size_t) -1) {
            p = star + 1;
            i = ++mark;

        } else {
            return 0;
        }
    }

    while (p < plen && pat[p] == '*') {
        p++;
    }

    return p == plen;
}


const bottle_repo_t *
bottle_find_repo(const bottle_t *b, const bottle_repo_t *want)
{
    size_t                i;
    const bottle_repo_t  *found;

    found = NULL;

    for (i = 0; i < b->nrepos; i++) {
        if (bottle_repo_same(&b->repos[i], want)
            && (found == NULL || b->repos[i].write))
        {
            found = &b->repos[i];
        }
    }

    return found;
}


int
bottle_trailer_required(const bottle_t *b, const bottle_repo_t *repo)
{
    size_t  i;

    for (i = 0; i < b->ntrailer_required; i++) {
        if (bottle_repo_same(&b->trailer_required[i], repo)) {
            return 1;
        }
    }

    return 0;
}


const bottle_repo_pattern_t *
bottle_create_allowed(const bottle_t *b, const bottle_repo_t *repo,
    int public_repo)
{
    size_t  i;

    for (i = 0; i < b->ncreate; i++) {
        if (bottle_repo_pattern_match(&b->create[i], repo, public_repo)) {
            return &b->create[i];
        }
    }

    return NULL;
}
