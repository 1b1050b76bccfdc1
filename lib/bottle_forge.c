/*
 * Forges and repo grants: the grammar of a grant and the forges the
 * gateway cannot serve (bottle_forge.h).
 */

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "bottle_forge.h"
#include "bottle_util.h"


static int bottle_forge_name(char *out, const char *s, size_t len);
static int bottle_repo_segment(char *out, const char *s, size_t len);


int
bottle_forge_name_parse(char *out, const char *s, size_t len)
{
    return bottle_forge_name(out, s, len);
}


int
bottle_forge_url_name(char *out, const char *url, char *err, size_t errlen)
{
    size_t       n;
    const char  *a;

    if (strncasecmp(url, "https://", 8) == 0) {
        a = url + 8;

    } else if (strncasecmp(url, "http://", 7) == 0) {
        a = url + 7;

    } else {
        return bottle_errf(err, errlen, "url: not an http:// or https:// "
                           "URL");
    }

    n = strcspn(a, "/?#");

    if (memchr(a, '@', n) != NULL) {
        return bottle_errf(err, errlen, "url: a user or token in the URL");
    }

    if (bottle_forge_name(out, a, n) != 0) {
        return bottle_errf(err, errlen, "url: no forge host in it");
    }

    return 0;
}


/* public hosts known to run another kind of forge */
static const struct {
    const char  *host;
    const char  *kind;
} bottle_forge_others[] = {
    { "gitlab.com", "GitLab" },
    { "bitbucket.org", "Bitbucket" },
    { "sr.ht", "SourceHut" },
    { "git.sr.ht", "SourceHut" },
    { "dev.azure.com", "Azure DevOps" },
    { "ssh.dev.azure.com", "Azure DevOps" },
    { "sourceforge.net", "SourceForge" },
    { "launchpad.net", "Launchpad" },
    { "git.launchpad.net", "Launchpad" },
    { "gitee.com", "Gitee" },
    { "salsa.debian.org", "GitLab" },
    { "gitlab.gnome.org", "GitLab" },
    { "gitlab.freedesktop.org", "GitLab" },
    { "invent.kde.org", "GitLab" },
    { NULL, NULL }
};


/*
 * "<forge>/<owner>/" at the start of [s, end): the forge's name and the
 * owner checked into forge and owner, *rest after the second '/'.  0; 1
 * when [s, end) is not three segments; -1 and err when one is bad (a
 * pattern's owner is literal: a '*' in it says so).
 */

static int
bottle_repo_head(char *forge, char *owner, const char **rest, const char *s,
    const char *end, int pattern, char *err, size_t errlen)
{
    const char  *p;

    p = memchr(s, '/', (size_t) (end - s));
    if (p == NULL) {
        return 1;
    }

    if (bottle_forge_name(forge, s, (size_t) (p - s)) != 0) {
        return bottle_errf(err, errlen, "\"%.*s\" is not a forge's host name",
                           (int) ((p - s) > 300 ? 300 : (p - s)), s);
    }

    s = p + 1;
    p = memchr(s, '/', (size_t) (end - s));
    if (p == NULL || memchr(p + 1, '/', (size_t) (end - p - 1)) != NULL) {
        return 1;
    }

    if (pattern && memchr(s, '*', (size_t) (p - s)) != NULL) {
        return bottle_errf(err, errlen, "the owner of a pattern is literal: "
                           "no '*' (one pattern per account or org)");
    }

    if (bottle_repo_segment(owner, s, (size_t) (p - s)) != 0) {
        return bottle_errf(err, errlen, "the owner of a repo is 1 to %d of "
                           "[A-Za-z0-9._-], not \".\" or \"..\" or starting "
                           "with '.'", BOTTLE_REPO_SEGMENT_MAX);
    }

    *rest = p + 1;

    return 0;
}


/* a repo's name, [s, end), into name: its ".git" dropped */

static int
bottle_repo_name(char *name, const char *s, const char *end, char *err,
    size_t errlen)
{
    size_t  n;

    n = (size_t) (end - s);

    if (n > 4 && memcmp(end - 4, ".git", 4) == 0) {
        n -= 4;
    }

    if (bottle_repo_segment(name, s, n) != 0) {
        return bottle_errf(err, errlen, "the name of a repo is 1 to %d of "
                           "[A-Za-z0-9._-], not \".\" or \"..\" or starting "
                           "with '.'", BOTTLE_REPO_SEGMENT_MAX);
    }

    return 0;
}


int
bottle_repo_parse(bottle_repo_t *out, const char *s, size_t len,
    int with_mode, char *err, size_t errlen)
{
    int          rc;
    size_t       n;
    const char  *p, *end, *slash, *colon;

    memset(out, 0, sizeof(*out));

    end = s + len;

    if (memchr(s, '\0', len) != NULL) {
        return bottle_errf(err, errlen, "a repo holds a NUL byte");
    }

    /* the mode: ":write" after the last '/' */

    slash = NULL;
    for (p = s; p < end; p++) {
        if (*p == '/') {
            slash = p;
        }
    }

    colon = NULL;
    for (p = slash ? slash : s; p < end; p++) {
        if (*p == ':') {
            colon = p;
            break;
        }
    }

    if (colon != NULL) {
        if (!with_mode) {
            return bottle_errf(err, errlen, "\"%.*s\": a repo here takes no "
                               "\":mode\"", (int) (len > 300 ? 300 : len), s);
        }

        n = (size_t) (end - colon - 1);
        if (n != 5 || memcmp(colon + 1, "write", 5) != 0) {
            return bottle_errf(err, errlen, "the only mode of a repo is "
                               "\":write\"");
        }

        out->write = 1;
        end = colon;
    }

    rc = bottle_repo_head(out->forge, out->owner, &p, s, end, 0, err,
                          errlen);
    if (rc == 1) {
        goto shape;
    }

    if (rc != 0) {
        return rc;
    }

    return bottle_repo_name(out->repo, p, end, err, errlen);

shape:

    return bottle_errf(err, errlen, "a repo is \"<forge>/<owner>/<repo>%s\"",
                       with_mode ? "[:write]" : "");
}


int
bottle_repo_pattern_parse(bottle_repo_pattern_t *out, const char *s,
    size_t len, char *err, size_t errlen)
{
    int          rc;
    size_t       n;
    const char  *p, *end, *slash, *colon, *star;

    memset(out, 0, sizeof(*out));

    end = s + len;

    if (memchr(s, '\0', len) != NULL) {
        return bottle_errf(err, errlen, "a pattern holds a NUL byte");
    }

    /* the mode: ":public" after the last '/' (a forge's port is before) */

    slash = NULL;
    for (p = s; p < end; p++) {
        if (*p == '/') {
            slash = p;
        }
    }

    colon = slash ? memchr(slash, ':', (size_t) (end - slash)) : NULL;

    if (colon != NULL) {
        n = (size_t) (end - colon - 1);
        if (n != 6 || memcmp(colon + 1, "public", 6) != 0) {
            return bottle_errf(err, errlen, "the only mode of a pattern is "
                               "\":public\"");
        }

        out->public_ok = 1;
        end = colon;
    }

    rc = bottle_repo_head(out->forge, out->owner, &s, s, end, 1, err,
                          errlen);
    if (rc == 1) {
        goto shape;
    }

    if (rc != 0) {
        return rc;
    }

    n = (size_t) (end - s);
    star = memchr(s, '*', n);

    if (star != NULL && star != end - 1) {
        return bottle_errf(err, errlen, "'*' only as a pattern's whole name "
                           "or at its end (a prefix)");
    }

    if (star != NULL) {
        out->prefix = 1;
        n--;

        if (n == 0) {
            return 0;       /* "*": any name */
        }

        if (bottle_repo_segment(out->name, s, n) != 0) {
            return bottle_errf(err, errlen, "the prefix of a name is 1 to "
                               "%d of [A-Za-z0-9._-], not starting with '.'",
                               BOTTLE_REPO_SEGMENT_MAX);
        }

        return 0;
    }

    return bottle_repo_name(out->name, s, end, err, errlen);

shape:

    return bottle_errf(err, errlen, "a pattern is \"<forge>/<owner>/"
                       "<name>[:public]\", <name> a name, \"*\" or a prefix "
                       "and '*'");
}


int
bottle_repo_pattern_match(const bottle_repo_pattern_t *p,
    const bottle_repo_t *repo, int public_repo)
{
    size_t  n;

    if (public_repo && !p->public_ok) {
        return 0;
    }

    if (strcmp(p->forge, repo->forge) != 0
        || strcasecmp(p->owner, repo->owner) != 0)
    {
        return 0;
    }

    if (!p->prefix) {
        return strcasecmp(p->name, repo->repo) == 0;
    }

    n = strlen(p->name);

    return strlen(repo->repo) >= n && strncasecmp(p->name, repo->repo, n) == 0;
}


int
bottle_repo_same(const bottle_repo_t *a, const bottle_repo_t *b)
{
    return strcmp(a->forge, b->forge) == 0
           && strcasecmp(a->owner, b->owner) == 0
           && strcasecmp(a->repo, b->repo) == 0;
}


const char *
bottle_forge_other_kind(const char *forge)
{
    size_t  i, n;

    /* the port is not part of the comparison */
    n = strcspn(forge, ":");

    for (i = 0; bottle_forge_others[i].host; i++) {
        if (strlen(bottle_forge_others[i].host) == n
            && strncasecmp(bottle_forge_others[i].host, forge, n) == 0)
        {
            return bottle_forge_others[i].kind;
        }
    }

    return NULL;
}


int
bottle_forge_kind_valid(const char *kind)
{
    return (strcmp(kind, "gitea") == 0 || strcmp(kind, "github") == 0)
           ? 0 : -1;
}


/* a host name, lowercased into out, with an optional ":port" (1-65535) */

static int
bottle_forge_name(char *out, const char *s, size_t len)
{
    size_t    i, label;
    unsigned  port;
    int       c, prev, in_port;

    if (len == 0 || len > BOTTLE_FORGE_NAME_MAX) {
        return -1;
    }

    label = 0;
    prev = '.';
    in_port = 0;
    port = 0;

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];

        if (in_port) {
            if (c < '0' || c > '9' || (port == 0 && c == '0')) {
                return -1;
            }

            port = port * 10 + (unsigned) (c - '0');
            if (port > 65535) {
                return -1;
            }

            out[i] = (char) c;
            continue;
        }

        if (c >= 'A' && c <= 'Z') {
            c |= 0x20;
        }

        if (c == ':') {
            if (prev == '.' || prev == '-' || i + 1 == len) {
                return -1;
            }

            in_port = 1;

        } else if (c == '.') {
            if (prev == '.' || prev == '-') {
                return -1;
            }

            label = 0;

        } else if (c == '-') {
            if (prev == '.') {
                return -1;
            }

        } else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
            return -1;
        }

        if (c != '.' && c != ':' && ++label > 63) {
            return -1;
        }

        out[i] = (char) c;
        prev = c;
    }

    if (!in_port && (prev == '.' || prev == '-')) {
        return -1;
    }

    out[len] = '\0';

    return 0;
}


static int
bottle_repo_segment(char *out, const char *s, size_t len)
{
    size_t  i;
    int     c;

    if (len == 0 || len > BOTTLE_REPO_SEGMENT_MAX || s[0] == '.') {
        return -1;
    }

    for (i = 0; i < len; i++) {
        c = (unsigned char) s[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
        {
            return -1;
        }

        out[i] = (char) c;
    }

    out[len] = '\0';

    return 0;
}
