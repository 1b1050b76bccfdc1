/*
 * The control plane's contract: store URLs, the change messages and the
 * scripts that write policy (docs/control-plane.md).
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_store.h"
#include "bottle_audit_chain_lua.h"
#include "bottle_store_lua.h"
#include "bottle_util.h"


static int bottle_store_decode(char *dst, size_t cap, const char *s,
    size_t len);
static int bottle_store_number(const char *s, size_t len, unsigned max,
    unsigned *out);
static int bottle_store_unix(bottle_store_url_t *u, const char *s,
    char *err, size_t errlen);
static int bottle_store_userinfo(bottle_store_url_t *u, const char **p,
    const char *slash, char *err, size_t errlen);
static int bottle_store_hostport(const char *p, const char *end, char *out,
    unsigned *port, char *err, size_t errlen);
static int bottle_store_sentinel(bottle_store_url_t *u, const char *s,
    char *err, size_t errlen);
static int bottle_store_query(bottle_store_url_t *u, const char *q,
    int sentinel, char *err, size_t errlen);


int
bottle_store_url_is(const char *s)
{
    return strncmp(s, "redis://", 8) == 0 || strncmp(s, "unix:", 5) == 0
           || strncmp(s, "redis-sentinel://", 17) == 0;
}


int
bottle_store_url_parse(bottle_store_url_t *u, const char *s, char *err,
    size_t errlen)
{
    const char  *p, *end, *slash;

    memset(u, 0, sizeof(*u));
    u->port = 6379;

    if (strncmp(s, "unix:", 5) == 0) {
        return bottle_store_unix(u, s + 5, err, errlen);
    }

    if (strncmp(s, "redis-sentinel://", 17) == 0) {
        return bottle_store_sentinel(u, s + 17, err, errlen);
    }

    if (strncmp(s, "redis://", 8) != 0) {
        return bottle_errf(err, errlen,
                                 "a store is \"redis://host[:port][/db]\", "
                                 "\"redis-sentinel://host[:port],.../name\" "
                                 "or \"unix:/path\"");
    }

    p = s + 8;
    end = p + strlen(p);

    slash = strchr(p, '/');
    if (slash == NULL) {
        slash = end;
    }

    if (bottle_store_userinfo(u, &p, slash, err, errlen) != 0
        || bottle_store_hostport(p, slash, u->host, &u->port, err, errlen)
           != 0)
    {
        return -1;
    }

    if (slash < end) {
        if (slash + 1 < end
            && bottle_store_number(slash + 1, (size_t) (end - slash - 1),
                                   1000000, &u->db) != 0)
        {
            return bottle_errf(err, errlen,
                                     "the path is a database number");
        }
    }

    return 0;
}


/*
 * "[[user]:password@]": the last '@' before the path (a password may hold
 * '@' only percent-encoded, but be lenient with the split); *p moves past
 */

static int
bottle_store_userinfo(bottle_store_url_t *u, const char **p,
    const char *slash, char *err, size_t errlen)
{
    const char  *at, *colon;

    at = NULL;
    for (const char *q = *p; q < slash; q++) {
        if (*q == '@') {
            at = q;
        }
    }

    if (at == NULL) {
        return 0;
    }

    colon = memchr(*p, ':', (size_t) (at - *p));

    if (colon == NULL) {
        return bottle_errf(err, errlen,
                                 "credentials are \"[user]:password@\"");
    }

    if (bottle_store_decode(u->user, sizeof(u->user), *p,
                            (size_t) (colon - *p)) != 0
        || bottle_store_decode(u->password, sizeof(u->password),
                               colon + 1, (size_t) (at - colon - 1)) != 0)
    {
        return bottle_errf(err, errlen,
                                 "bad user name or password (too long or "
                                 "bad percent-encoding)");
    }

    u->has_password = 1;
    *p = at + 1;

    return 0;
}


/* "host[:port]" or "[v6][:port]" from p to end; *port kept if not given */

static int
bottle_store_hostport(const char *p, const char *end, char *out,
    unsigned *port, char *err, size_t errlen)
{
    const char  *host, *host_end;

    if (p >= end) {
        return bottle_errf(err, errlen, "no host, or a host too long");
    }

    if (*p == '[') {
        host = p + 1;
        host_end = memchr(host, ']', (size_t) (end - host));
        if (host_end == NULL) {
            return bottle_errf(err, errlen, "no \"]\" after the IPv6 "
                                     "address");
        }
        p = host_end + 1;

    } else {
        host = p;
        host_end = memchr(host, ':', (size_t) (end - host));
        if (host_end == NULL) {
            host_end = end;
        }
        p = host_end;
    }

    if (host_end == host || (size_t) (host_end - host) > BOTTLE_STORE_HOST_MAX)
    {
        return bottle_errf(err, errlen, "no host, or a host too long");
    }

    /* unsigned: a byte over 0x7f is refused whatever char's sign */

    for (const unsigned char *q = (const unsigned char *) host;
         q < (const unsigned char *) host_end; q++)
    {
        if (*q <= ' ' || *q >= 0x7f || *q == '@' || *q == '?' || *q == '#'
            || *q == ',' || *q == '/')
        {
            return bottle_errf(err, errlen, "bad character in the host");
        }
    }

    memcpy(out, host, (size_t) (host_end - host));
    out[host_end - host] = '\0';

    if (p < end) {
        if (*p != ':'
            || bottle_store_number(p + 1, (size_t) (end - p - 1), 65535,
                                   port) != 0
            || *port == 0)
        {
            return bottle_errf(err, errlen, "bad port");
        }
    }

    return 0;
}


/*
 * "[[user]:password@]host[:port][,host[:port]...]/master[?db=N]
 * [&sentinel_user=U][&sentinel_password=P]"
 */

static int
bottle_store_sentinel(bottle_store_url_t *u, const char *s, char *err,
    size_t errlen)
{
    size_t               n;
    const char          *p, *slash, *comma, *q;
    bottle_store_node_t *node;

    p = s;

    slash = strchr(p, '/');
    if (slash == NULL) {
        return bottle_errf(err, errlen, "a Sentinel URL ends in "
                                 "\"/name\", the primary's name");
    }

    if (bottle_store_userinfo(u, &p, slash, err, errlen) != 0) {
        return -1;
    }

    while (p < slash) {
        if (u->nsentinels == BOTTLE_STORE_SENTINELS_MAX) {
            return bottle_errf(err, errlen, "more than %d sentinels",
                                     BOTTLE_STORE_SENTINELS_MAX);
        }

        comma = memchr(p, ',', (size_t) (slash - p));
        if (comma == NULL) {
            comma = slash;
        }

        node = &u->sentinel[u->nsentinels];
        node->port = BOTTLE_STORE_SENTINEL_PORT;

        if (bottle_store_hostport(p, comma, node->host, &node->port, err,
                                  errlen)
            != 0)
        {
            return -1;
        }

        u->nsentinels++;
        p = (comma < slash) ? comma + 1 : slash;

        if (comma + 1 == slash) {
            return bottle_errf(err, errlen, "no host, or a host too long");
        }
    }

    if (u->nsentinels == 0) {
        return bottle_errf(err, errlen, "no sentinel");
    }

    q = strchr(slash, '?');
    n = q ? (size_t) (q - slash - 1) : strlen(slash + 1);

    if (n == 0 || n > BOTTLE_STORE_MASTER_MAX) {
        return bottle_errf(err, errlen, "no primary's name, or a name too "
                                 "long");
    }

    for (size_t i = 0; i < n; i++) {
        char  c = slash[1 + i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
        {
            return bottle_errf(err, errlen, "bad character in the "
                                     "primary's name");
        }
    }

    memcpy(u->master, slash + 1, n);

    if (bottle_store_query(u, q, 1, err, errlen) != 0) {
        return -1;
    }

    u->host[0] = '\0';
    u->port = 0;

    return 0;
}


/* "/path[?db=N][&user=U][&password=P]" */

static int
bottle_store_unix(bottle_store_url_t *u, const char *s, char *err,
    size_t errlen)
{
    size_t       n;
    const char  *q;

    u->is_unix = 1;
    u->port = 0;

    q = strchr(s, '?');
    n = q ? (size_t) (q - s) : strlen(s);

    if (n == 0 || s[0] != '/') {
        return bottle_errf(err, errlen, "a unix socket path is absolute");
    }

    if (n > BOTTLE_STORE_PATH_MAX) {
        return bottle_errf(err, errlen, "the socket path is too long");
    }

    memcpy(u->path, s, n);

    return bottle_store_query(u, q, 0, err, errlen);
}


static int
bottle_store_param(const char *q, size_t n, const char *name)
{
    size_t  len = strlen(name);

    return n > len && q[len] == '=' && memcmp(q, name, len) == 0;
}


/*
 * The query from its '?' (q NULL: none): db, and user and password for a
 * unix socket, or sentinel_user and sentinel_password for Sentinel
 */

static int
bottle_store_query(bottle_store_url_t *u, const char *q, int sentinel,
    char *err, size_t errlen)
{
    int          *has;
    size_t        n, cap;
    char         *user, *password;
    const char   *amp, *eq, *pw_name;

    user = sentinel ? u->sentinel_user : u->user;
    password = sentinel ? u->sentinel_password : u->password;
    has = sentinel ? &u->has_sentinel_password : &u->has_password;
    cap = sizeof(u->user);
    pw_name = sentinel ? "sentinel_password" : "password";

    while (q && *q) {
        q++;
        amp = strchr(q, '&');
        n = amp ? (size_t) (amp - q) : strlen(q);
        eq = memchr(q, '=', n);

        if (eq == NULL) {
            return bottle_errf(err, errlen, "bad query parameter");
        }

        if (bottle_store_param(q, n, "db")) {
            if (bottle_store_number(eq + 1, n - 3, 1000000, &u->db) != 0) {
                return bottle_errf(err, errlen, "bad db");
            }

        } else if (bottle_store_param(q, n, sentinel ? "sentinel_user"
                                                     : "user"))
        {
            if (bottle_store_decode(user, cap, eq + 1,
                                    n - (size_t) (eq + 1 - q))
                != 0)
            {
                return bottle_errf(err, errlen, "bad user name");
            }

        } else if (bottle_store_param(q, n, pw_name)) {
            if (bottle_store_decode(password, cap, eq + 1,
                                    n - (size_t) (eq + 1 - q))
                != 0)
            {
                return bottle_errf(err, errlen, "bad password");
            }

            *has = 1;

        } else {
            return bottle_errf(err, errlen, sentinel
                                     ? "unknown query parameter (db, "
                                       "sentinel_user and sentinel_password "
                                       "are known)"
                                     : "unknown query parameter "
                                       "(db, user and password are known)");
        }

        q = amp;
    }

    if (user[0] && !*has) {
        return bottle_errf(err, errlen, "a user needs a password");
    }

    return 0;
}


void
bottle_store_url_print(const bottle_store_url_t *u, char *buf, size_t size)
{
    int       n;
    size_t    len;
    unsigned  i;

    if (u->nsentinels) {
        len = 0;
        n = snprintf(buf, size, "redis-sentinel://");

        for (i = 0; n >= 0 && (size_t) n < size - len && i < u->nsentinels;
             i++)
        {
            len += (size_t) n;
            n = snprintf(buf + len, size - len, "%s%s%s%s:%u", i ? "," : "",
                         strchr(u->sentinel[i].host, ':') ? "[" : "",
                         u->sentinel[i].host,
                         strchr(u->sentinel[i].host, ':') ? "]" : "",
                         u->sentinel[i].port);
        }

        if (n >= 0 && (size_t) n < size - len) {
            len += (size_t) n;
            snprintf(buf + len, size - len, "/%s?db=%u", u->master, u->db);
        }

        return;
    }

    if (u->is_unix) {
        snprintf(buf, size, "unix:%s?db=%u", u->path, u->db);
        return;
    }

    snprintf(buf, size, "redis://%s%s%s:%u/%u",
             strchr(u->host, ':') ? "[" : "", u->host,
             strchr(u->host, ':') ? "]" : "", u->port, u->db);
}


int
bottle_store_reply_demoted(const char *str, size_t len)
{
    return (len >= 8 && memcmp(str, "READONLY", 8) == 0)
           || (len >= 7 && memcmp(str, "LOADING", 7) == 0)
           || (len >= 10 && memcmp(str, "MASTERDOWN", 10) == 0);
}


int
bottle_store_change_parse(const char *msg, size_t len, const char **id,
    size_t *id_len, unsigned long long *version)
{
    size_t               i;
    const char          *sp;
    unsigned long long   v;

    sp = memchr(msg, ' ', len);

    if (sp == NULL || sp == msg || sp + 1 == msg + len
        || (size_t) (msg + len - sp - 1) > 20)
    {
        return -1;
    }

    v = 0;

    for (i = 1; sp + i < msg + len; i++) {
        if (sp[i] < '0' || sp[i] > '9'
            || v > (~0ULL - (unsigned) (sp[i] - '0')) / 10)
        {
            return -1;
        }
        v = v * 10 + (unsigned) (sp[i] - '0');
    }

    *id = msg;
    *id_len = (size_t) (sp - msg);
    *version = v;

    return 0;
}


static int
bottle_store_decode(char *dst, size_t cap, const char *s, size_t len)
{
    int     hi, lo;
    size_t  i, n;

    n = 0;

    for (i = 0; i < len; i++) {
        if (n + 1 >= cap) {
            return -1;
        }

        if (s[i] == '%') {
            if (i + 2 >= len) {
                return -1;
            }
            hi = bottle_hexval((unsigned char) s[i + 1]);
            lo = bottle_hexval((unsigned char) s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return -1;
            }
            dst[n++] = (char) (hi << 4 | lo);
            i += 2;
            continue;
        }

        dst[n++] = s[i];
    }

    dst[n] = '\0';

    return 0;
}


static int
bottle_store_number(const char *s, size_t len, unsigned max, unsigned *out)
{
    size_t    i;
    unsigned  v;

    if (len == 0 || len > 7) {
        return -1;
    }

    v = 0;

    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (unsigned) (s[i] - '0');
    }

    if (v > max) {
        return -1;
    }

    *out = v;

    return 0;
}


/*
 * The writers' scripts.  Redis runs a script atomically: a gateway reading
 * between two of its commands cannot happen.
 */

#define BOTTLE_STORE_RM_LUA                                                   \
    "local id = ARGV[1]\n" \
    "local key = '" BOTTLE_STORE_POLICY_PREFIX "' .. id\n" \
    "local digest = redis.call('HGET', key, '" BOTTLE_STORE_F_TOKEN "')\n" \
    "local had = redis.call('HDEL', '" BOTTLE_STORE_BOTTLES "', id)\n" \
    "if digest and redis.call('HGET', '" BOTTLE_STORE_TOKENS "', digest)" \
    " == id then\n" \
    "  redis.call('HDEL', '" BOTTLE_STORE_TOKENS "', digest)\n" \
    "end\n" \
    "redis.call('DEL', key, '" BOTTLE_STORE_CONTACTS_PREFIX "' .. id)\n" \
    "if had == 1 or digest then\n" \
    "  redis.call('PUBLISH', '" BOTTLE_STORE_CHANGES "', id .. ' 0')\n" \
    "  return 1\n" \
    "end\n" \
    "return 0\n"

const char  bottle_store_put_script[] = BOTTLE_STORE_PUT_LUA;

const char  bottle_store_rm_script[] = BOTTLE_STORE_RM_LUA;


#define BOTTLE_STORE_ONCE_HEAD(wid, ttl)                                      \
    "local wkey = '" BOTTLE_STORE_WRITE_PREFIX "' .. " wid "\n"                \
    "local ttl = tonumber(" ttl ")\n"                                         \
    "local was = redis.call('GET', wkey)\n"                                   \
    "if was then\n"                                                           \
    "  return redis.error_reply('WRITTEN ' .. was)\n"                         \
    "end\n"

/*
 * policy.changed (bottle_store.h): each bottle's stored version must
 * still be the one its event was built against, and the journal must be
 * writable, before anything is written; the event's "new_version":0 is
 * the version the put gives.
 */

#define BOTTLE_STORE_POLICY_JOURNAL_LUA                                       \
    BOTTLE_AUDIT_CHAIN_LUA                                                    \
    "local function unchanged(id, want)\n"                                    \
    "  local v = redis.call('HGET', '" BOTTLE_STORE_BOTTLES "', id) or ''\n"  \
    "  if v ~= want then\n"                                                   \
    "    return redis.error_reply('CHANGED bottle \"' .. id .. '\" changed'"  \
    " .. ' meanwhile (version ' .. (v == '' and 'none' or v) .. ')')\n"       \
    "  end\n"                                                                 \
    "end\n"                                                                   \
    "local function journal_ok()\n"                                           \
    "  local t = redis.call('TYPE', '" BOTTLE_STORE_AUDIT "')\n"              \
    "  t = type(t) == 'table' and t.ok or t\n"                                \
    "  if t ~= 'stream' and t ~= 'none' then\n"                               \
    "    return redis.error_reply('JOURNAL " BOTTLE_STORE_AUDIT " is a '"     \
    " .. t .. ', not a stream: nothing written')\n"                           \
    "  end\n"                                                                 \
    "end\n"                                                                   \
    "local function policy_journal(ev, v, max)\n"                             \
    "  if ev == '' then return end\n"                                         \
    "  local at = string.find(ev, ',\"new_version\":0,', 1, true)\n"          \
    "  if at and v then\n"                                                    \
    "    ev = string.sub(ev, 1, at - 1) .. ',\"new_version\":' .. v .. ','"   \
    " .. string.sub(ev, at + 17)\n"                                           \
    "  end\n"                                                                 \
    "  local r = bottle_chain_append(max, bottle_sha256(ev) .. ':' .. ev)\n" \
    "  if type(r) == 'table' and r.err then error(r.err) end\n"               \
    "end\n"

const char  bottle_store_put_once_script[] =
    BOTTLE_STORE_ONCE_HEAD("ARGV[#ARGV - 3]", "ARGV[#ARGV - 2]")
    BOTTLE_STORE_POLICY_JOURNAL_LUA
    "local n = tonumber(ARGV[1])\n"
    "local ev0 = 2 + 3 * n\n"
    "local skip, total = {}, 0\n"
    "for i = 0, n - 1 do\n"
    "  skip[ARGV[2 + 3 * i]] = true\n"
    "  total = total + #ARGV[3 + 3 * i]\n"
    "end\n"
    "for _, id in ipairs(redis.call('HKEYS', '" BOTTLE_STORE_BOTTLES "')) do\n"
    "  if not skip[id] then\n"
    "    total = total + redis.call('HSTRLEN', '" BOTTLE_STORE_POLICY_PREFIX
    "' .. id, '" BOTTLE_STORE_F_JSON "')\n"
    "  end\n"
    "end\n"
    "if total > tonumber(ARGV[#ARGV - 1]) then\n"
    "  return redis.error_reply('LIMIT ' .. total)\n"
    "end\n"
    "for i = 0, n - 1 do\n"
    "  local e = unchanged(ARGV[2 + 3 * i], ARGV[ev0 + 2 * i])\n"
    "  if e then return e end\n"
    "end\n"
    "local je = journal_ok()\n"
    "if je then return je end\n"
    "local function bottle_put(ARGV)\n"
    BOTTLE_STORE_PUT_LUA
    "end\n"
    "local out = bottle_put(ARGV)\n"
    "if out.err then\n"
    "  return out\n"
    "end\n"
    "local rec = {'applied'}\n"
    "for i = 1, #out do\n"
    "  rec[#rec + 1] = ARGV[2 + 3 * (i - 1)] .. ' version ' .. out[i]\n"
    "  policy_journal(ARGV[ev0 + 2 * (i - 1) + 1], out[i], ARGV[#ARGV])\n"
    "end\n"
    "redis.call('SET', wkey, table.concat(rec, '\\n'), 'EX', ttl)\n"
    "return out\n";

const char  bottle_store_rm_once_script[] =
    BOTTLE_STORE_ONCE_HEAD("ARGV[2]", "ARGV[3]")
    BOTTLE_STORE_POLICY_JOURNAL_LUA
    "local e = unchanged(ARGV[1], ARGV[4]) or journal_ok()\n"
    "if e then return e end\n"
    "local function bottle_rm(ARGV)\n"
    BOTTLE_STORE_RM_LUA
    "end\n"
    "local out = bottle_rm(ARGV)\n"
    "if out == 1 then\n"
    "  policy_journal(ARGV[5], nil, ARGV[6])\n"
    "end\n"
    "redis.call('SET', wkey, 'applied\\n' .. ARGV[1] .. ' ' .."
    " (out == 1 and 'removed' or 'none'), 'EX', ttl)\n"
    "return out\n";

const char  bottle_store_settle_script[] =
    "local wkey = '" BOTTLE_STORE_WRITE_PREFIX "' .. ARGV[1]\n"
    "local was = redis.call('GET', wkey)\n"
    "if was then\n"
    "  return was\n"
    "end\n"
    "redis.call('SET', wkey, 'void', 'EX', tonumber(ARGV[2]))\n"
    "return 'void'\n";

const char  bottle_store_fetch_script[] =
    "local key = '" BOTTLE_STORE_POLICY_PREFIX "' .. ARGV[1]\n"
    "local v = redis.call('HGET', key, '" BOTTLE_STORE_F_VERSION "')\n"
    "local n = redis.call('HSTRLEN', key, '" BOTTLE_STORE_F_JSON "')\n"
    "if n > tonumber(ARGV[2]) then\n"
    "  return {n, v}\n"
    "end\n"
    "return {redis.call('HGET', key, '" BOTTLE_STORE_F_JSON "'), v}\n";

