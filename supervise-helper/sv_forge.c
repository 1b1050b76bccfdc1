/*
 * What supervise asks a connected forge before it queues a proposal
 * (docs/supervise.md, "Asked of the forge first"): a create-repo the forge
 * could never make (the repo exists; an owner the forge token cannot
 * create under) is refused at once, before an operator sees a card.
 * Blocking calls (libcurl, bounded by BOTTLE_FORGE_API_TIMEOUT) on the
 * tool call's thread of the HTTP pool, as a create-repo the bottle's
 * policy allows makes its repo (sv_create_allowed()).
 */

#define _POSIX_C_SOURCE  200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>

#include <curl/curl.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

#include "supervise.h"
#include "bottle_forge.h"
#include "bottle_forge_client.h"
#include "bottle_ip.h"


/*
 * 0: nothing against it (or the forge could not be asked), queue it;
 * else refused, err says why (the forge's answer).
 */

int
sv_forge_create_check(const bottle_repo_t *repo, char *err, size_t errlen)
{
    int            rc, lost;
    char           why[1024];
    redisContext  *c;

    c = sv_store(err, errlen);
    if (c == NULL) {
        return -1;
    }

    rc = bottle_forge_create_check(c, repo, &lost, why, sizeof(why));

    if (lost) {
        sv_store_lost();
    }

    if (rc < 0) {
        /*
         * The forge could not be asked (down, a bad token): the card is
         * queued as before, the operator's Create meets the same error.
         */

        sv_log("create-repo %s/%s/%s: cannot ask the forge, queued "
               "unchecked: %s", repo->forge, repo->owner, repo->repo, why);
        return 0;
    }

    if (rc == 0) {
        return 0;
    }

    snprintf(err, errlen, "the forge cannot create %s/%s/%s: %s",
             repo->forge, repo->owner, repo->repo, why);

    return -1;
}


/*
 * forge-connect's probe (docs/supervise.md, "forge-connect's probe"): a
 * host of no known kind is asked what it runs before a card is queued,
 * Gitea's GET /api/v1/version, then GitHub Enterprise's GET /api/v3/meta,
 * and refused at once when it answers as neither.  The agent chooses the
 * host, so the probe is kept from being a way into the operator's
 * network: the name is resolved once and only that address is dialled;
 * an internal address (bottle_ip_is_internal()) is not probed at all
 * unless --forge-probe-allow lists its network (the card is queued
 * unprobed, as before); https only, fixed paths, no credentials, no
 * redirects, no proxy, SV_PROBE_TIMEOUT in all, SV_PROBE_BODY_MAX of an
 * answer; the answer decides the kind and nothing of it reaches the agent.
 * Nothing secret is sent, so the certificate is not verified here: the
 * operator's Connect verifies it.
 */

#define SV_PROBE_TIMEOUT   5L           /* seconds, one request */
#define SV_PROBE_BODY_MAX  (64 * 1024)


static const char  *sv_known_forges[] = {
    "github.com", "gitea.com", "codeberg.org", NULL
};


/* 1 if GET https://<forge><path> (dialled at addr) answers 200 with a JSON
 * object holding a string or boolean field key; 0 if not; -1 if it cannot
 * be reached (err) */

static int
sv_probe_get(const char *forge, const char *host, const char *port,
    const char *addr, const char *path, const char *key, char *err,
    size_t errlen)
{
    int                 rc;
    char                url[BOTTLE_FORGE_NAME_MAX + 64];
    char                pin[BOTTLE_FORGE_NAME_MAX + 128];
    long                status;
    CURL               *h;
    CURLcode            cc;
    json_t             *o, *v;
    struct curl_slist  *resolve;
    bottle_forge_body_t     b;

    snprintf(url, sizeof(url), "https://%s%s", forge, path);
    snprintf(pin, sizeof(pin), "%s:%s:%s", host, port, addr);

    memset(&b, 0, sizeof(b));
    b.max = SV_PROBE_BODY_MAX;
    resolve = curl_slist_append(NULL, pin);
    h = curl_easy_init();
    rc = -1;

    if (resolve == NULL || h == NULL
        || curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_RESOLVE, resolve) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_NOPROXY, "*") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_TIMEOUT, SV_PROBE_TIMEOUT) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, SV_PROBE_TIMEOUT)
           != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_USERAGENT, "ngx-bottle") != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bottle_forge_body_write)
           != CURLE_OK
        || curl_easy_setopt(h, CURLOPT_WRITEDATA, &b) != CURLE_OK)
    {
        snprintf(err, errlen, "cannot set up libcurl");
        goto cleanup;
    }

    cc = curl_easy_perform(h);

    if (cc != CURLE_OK && !b.over) {
        snprintf(err, errlen, "%s cannot be reached: %s", forge,
                 curl_easy_strerror(cc));
        goto cleanup;
    }

    status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);

    rc = 0;

    if (status == 200 && !b.over && b.data) {
        o = json_loads(b.data, 0, NULL);
        v = json_object_get(o, key);
        rc = json_is_string(v) || json_is_boolean(v);
        json_decref(o);
    }

cleanup:

    curl_slist_free_all(resolve);
    curl_easy_cleanup(h);
    free(b.data);

    return rc;
}


int
sv_forge_probe(const char *forge, char *err, size_t errlen)
{
    int               rc, gai, internal;
    char              host[BOTTLE_FORGE_NAME_MAX + 1], addr[BOTTLE_IP_STRLEN];
    char              shown[BOTTLE_IP_STRLEN + 2];
    const char       *port, *colon;
    size_t            i, n;
    bottle_ip_t       ip, first;
    struct addrinfo   hints, *res, *a;

    for (i = 0; sv_known_forges[i]; i++) {
        if (strcmp(forge, sv_known_forges[i]) == 0) {
            return 0;
        }
    }

    /* host and port: a forge name is "host[:port]", never an IPv6 literal */

    colon = strchr(forge, ':');
    n = colon ? (size_t) (colon - forge) : strlen(forge);
    memcpy(host, forge, n);
    host[n] = '\0';
    port = colon ? colon + 1 : "443";

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;

    gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "%s cannot be resolved (%s): the gateway "
                 "connects Gitea and GitHub forges it can reach", host,
                 gai_strerror(gai));
        return -1;
    }

    /* every address it resolves to: one internal and not allowed, and no
       probe goes anywhere */

    internal = 0;
    n = 0;

    for (a = res; a; a = a->ai_next) {
        if (bottle_ip_from_sockaddr(&ip, a->ai_addr) != 0) {
            continue;
        }

        if (n++ == 0) {
            first = ip;
        }

        if (!bottle_ip_is_internal(&ip)) {
            continue;
        }

        for (i = 0; i < sv_conf.nprobe_allow; i++) {
            if (bottle_net_contains(&sv_conf.probe_allow[i], &ip)) {
                break;
            }
        }

        if (i == sv_conf.nprobe_allow) {
            internal = 1;
        }
    }

    freeaddrinfo(res);

    if (n == 0) {
        snprintf(err, errlen, "%s has no address", host);
        return -1;
    }

    if (internal) {
        sv_log("forge-connect %s: an internal address, not probed "
               "(--forge-probe-allow): queued for the operator", forge);
        return 0;
    }

    bottle_ip_format(addr, sizeof(addr), &first);
    snprintf(shown, sizeof(shown), first.family == AF_INET6 ? "[%s]" : "%s",
             addr);

    rc = sv_probe_get(forge, host, port, shown, "/api/v1/version",
                      "version", err, errlen);

    if (rc == 0) {
        rc = sv_probe_get(forge, host, port, shown, "/api/v3/meta",
                          "verifiable_password_authentication", err,
                          errlen);
    }

    if (rc < 0) {
        return -1;
    }

    if (rc == 0) {
        snprintf(err, errlen, "%s answers as neither Gitea (GET "
                 "/api/v1/version) nor GitHub (GET /api/v3/meta): the "
                 "gateway serves Gitea and GitHub forges only", forge);
        return -1;
    }

    return 0;
}
