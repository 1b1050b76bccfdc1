/*
 * bottle_store: store URLs in every form (TCP, IPv6, credentials with
 * percent-encoding, databases, unix sockets), the refusals, whose text
 * never holds the password, the URL printed for logs, and the change
 * messages of the bottle:changes channel.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_store.h"


#define PW  "hunter2"

static char  err[512];


static int
parse(bottle_store_url_t *u, const char *s)
{
    memset(err, 0, sizeof(err));

    return bottle_store_url_parse(u, s, err, sizeof(err));
}


static const char *
printed(const bottle_store_url_t *u)
{
    static char  buf[512];

    bottle_store_url_print(u, buf, sizeof(buf));

    return buf;
}


static void
test_tcp(void)
{
    bottle_store_url_t  u;

    is_int(parse(&u, "redis://localhost"), 0, "host alone");
    is_str(u.host, "localhost", "host alone: host");
    is_int(u.port, 6379, "host alone: port 6379");
    is_int(u.db, 0, "host alone: db 0");
    ok(!u.is_unix && !u.has_password && u.user[0] == '\0'
       && u.password[0] == '\0', "host alone: no credentials");
    is_str(printed(&u), "redis://localhost:6379/0", "host alone: printed");

    is_int(parse(&u, "redis://10.0.0.5:6380/3"), 0, "address, port, db");
    is_str(u.host, "10.0.0.5", "address");
    is_int(u.port, 6380, "port");
    is_int(u.db, 3, "db");

    is_int(parse(&u, "redis://h/"), 0, "empty path");
    is_int(u.db, 0, "empty path: db 0");

    is_int(parse(&u, "redis://h:65535/1000000"), 0, "largest port and db");
    is_int(u.port, 65535, "port 65535");
    is_int(u.db, 1000000, "db 1000000");

    is_int(parse(&u, "redis://[::1]:6390/2"), 0, "IPv6");
    is_str(u.host, "::1", "IPv6: unbracketed");
    is_int(u.port, 6390, "IPv6: port");
    is_int(u.db, 2, "IPv6: db");
    is_str(printed(&u), "redis://[::1]:6390/2", "IPv6: printed bracketed");

    is_int(parse(&u, "redis://[fd00:88::5]"), 0, "IPv6 without port");
    is_str(u.host, "fd00:88::5", "IPv6 without port: host");
    is_int(u.port, 6379, "IPv6 without port: 6379");
}


static void
test_credentials(void)
{
    bottle_store_url_t  u;

    is_int(parse(&u, "redis://:" PW "@gw:6379/0"), 0, "password");
    ok(u.has_password, "password: has_password");
    is_str(u.password, PW, "password: value");
    is_str(u.user, "", "password: no user");
    is_str(u.host, "gw", "password: host");
    ok(strstr(printed(&u), PW) == NULL, "password: not printed");
    is_str(printed(&u), "redis://gw:6379/0", "password: printed");

    is_int(parse(&u, "redis://ops:s%40c%3Ar%2Fet%25@[::1]:1/2"), 0,
           "ACL user, percent-encoded password");
    is_str(u.user, "ops", "ACL user: user");
    is_str(u.password, "s@c:r/et%", "ACL user: password decoded");
    is_str(u.host, "::1", "ACL user: IPv6 host");
    is_int(u.port, 1, "ACL user: port");

    is_int(parse(&u, "redis://us%65r:pw@h"), 0, "percent-encoded user");
    is_str(u.user, "user", "user decoded");

    is_int(parse(&u, "redis://:p@ss@h"), 0, "an '@' in the password");
    is_str(u.password, "p@ss", "the last '@' ends the credentials");
    is_str(u.host, "h", "host after the last '@'");
}


static void
test_unix(void)
{
    bottle_store_url_t  u;

    is_int(parse(&u, "unix:/run/redis/redis.sock"), 0, "unix socket");
    ok(u.is_unix, "unix: is_unix");
    is_str(u.path, "/run/redis/redis.sock", "unix: path");
    is_int(u.db, 0, "unix: db 0");
    ok(!u.has_password, "unix: no password");
    is_str(printed(&u), "unix:/run/redis/redis.sock?db=0", "unix: printed");

    is_int(parse(&u, "unix:/r.sock?db=4&user=ops&password=" PW "%26x"), 0,
           "unix with db, user, password");
    is_int(u.db, 4, "unix: db");
    is_str(u.user, "ops", "unix: user");
    is_str(u.password, PW "&x", "unix: password decoded");
    ok(strstr(printed(&u), PW) == NULL, "unix: password not printed");

    is_int(parse(&u, "unix:/r.sock?password=" PW), 0, "unix: password alone");
    ok(u.has_password && u.user[0] == '\0', "unix: no user");
}


static void
test_errors(void)
{
    size_t              i;
    char                small[8], longpw[300];
    bottle_store_url_t  u;

    static const struct {
        const char  *url;
        const char  *want;
    } bad[] = {
        { "http://h", "a store is" },
        { "redis:/h", "a store is" },
        { "", "a store is" },
        { "redis://", "no host" },
        { "redis://" PW "@h", "credentials are" },
        { "redis://:" PW "@", "no host" },
        { "redis://:" PW "@/0", "no host" },
        { "redis://:" PW "@[::1", "no \"]\"" },
        { "redis://:" PW "@[::1]x", "bad port" },
        { "redis://:" PW "@h:", "bad port" },
        { "redis://:" PW "@h:0", "bad port" },
        { "redis://:" PW "@h:65536", "bad port" },
        { "redis://:" PW "@h:63a", "bad port" },
        { "redis://:" PW "@h:1:2", "bad port" },
        { "redis://:" PW "@h/x", "database number" },
        { "redis://:" PW "@h/1000001", "database number" },
        { "redis://:" PW "@h/0/1", "database number" },
        { "redis://:" PW "@h h", "bad character" },
        { "redis://:" PW "@h?x", "bad character" },
        { "redis://:" PW "@h#x", "bad character" },
        { "redis://:" PW "@h\x7f", "bad character" },
        { "redis://:" PW "@caf\xc3\xa9", "bad character" },
        { "redis://:" PW "%zz@h", "percent-encoding" },
        { "redis://:" PW "%00@h", "percent-encoding" },
        { "redis://:" PW "%4@h", "percent-encoding" },
        { "unix:", "absolute" },
        { "unix:run/redis.sock", "absolute" },
        { "unix:/r.sock?db=x", "bad db" },
        { "unix:/r.sock?db=", "bad db" },
        { "unix:/r.sock?password=" PW "&bogus=1", "unknown query" },
        { "unix:/r.sock?password", "bad query" },
        { "unix:/r.sock?", "bad query" },
        { "unix:/r.sock?db=1&", "bad query" },
        { "unix:/r.sock?user=ops", "needs a password" },
        { "unix:/r.sock?user=ops&password=" PW "%", "bad password" },
    };

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        is_int(parse(&u, bad[i].url), -1, "refused: '%s'", bad[i].url);
        ok(strstr(err, bad[i].want) != NULL, "'%s': \"%s\" (%s)", bad[i].url,
           bad[i].want, err);
        ok(strstr(err, PW) == NULL, "'%s': no password in the error",
           bad[i].url);
    }

    /* too long: host, credentials, socket path */

    memset(longpw, 'a', sizeof(longpw));
    memcpy(longpw, "redis://", 8);
    longpw[sizeof(longpw) - 1] = '\0';
    is_int(parse(&u, longpw), -1, "host of 291 characters refused");

    memcpy(longpw, "redis://:", 9);
    memcpy(longpw + sizeof(longpw) - 3, "@h", 3);
    is_int(parse(&u, longpw), -1, "password of 288 characters refused");
    ok(strstr(err, "aaaa") == NULL, "long password: not in the error");

    memset(longpw, 'a', sizeof(longpw));
    memcpy(longpw, "unix:/", 6);
    longpw[5 + 108] = '\0';
    is_int(parse(&u, longpw), -1, "socket path of 108 characters refused");
    longpw[5 + 107] = '\0';
    is_int(parse(&u, longpw), 0, "socket path of 107 characters accepted");

    /* a short error buffer is cut, still terminated */

    memset(small, 'x', sizeof(small));
    is_int(bottle_store_url_parse(&u, "http://h", small, sizeof(small)), -1,
           "short error buffer");
    ok(memchr(small, '\0', sizeof(small)) != NULL, "short error buffer: NUL");
    is_int(bottle_store_url_parse(&u, "http://h", NULL, 0), -1,
           "no error buffer");
}


static void
test_url_is(void)
{
    ok(bottle_store_url_is("redis://h"), "redis:// is a store");
    ok(bottle_store_url_is("unix:/r.sock"), "unix: is a store");
    ok(!bottle_store_url_is("/etc/bottle/policy.json"), "a path is not");
    ok(!bottle_store_url_is("policy.json"), "a relative path is not");
}


static void
test_change(void)
{
    size_t               i, id_len;
    const char          *id;
    unsigned long long   v;

    static const char  *bad[] = {
        "", "alice", "alice ", " 1", "alice 1x", "alice -1", "alice  1",
        "a b 1", "alice 1 ", "a 18446744073709551616",
        "a 123456789012345678901",
    };

    is_int(bottle_store_change_parse("alice 12", 8, &id, &id_len, &v), 0,
           "change: alice 12");
    ok(id_len == 5 && memcmp(id, "alice", 5) == 0, "change: id");
    ok(v == 12, "change: version");

    is_int(bottle_store_change_parse("bob 0", 5, &id, &id_len, &v), 0,
           "change: removed");
    ok(v == 0 && id_len == 3, "change: version 0");

    is_int(bottle_store_change_parse("a 18446744073709551615", 22, &id,
                                     &id_len, &v), 0, "change: largest");
    ok(v == 18446744073709551615ULL, "change: 2^64-1");

    is_int(bottle_store_change_parse("carol 7XYZ", 7, &id, &id_len, &v), 0,
           "change: not NUL-terminated");
    ok(v == 7 && id_len == 5, "change: only len bytes read");

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v = 99;
        is_int(bottle_store_change_parse(bad[i], strlen(bad[i]), &id, &id_len,
                                         &v), -1, "change refused: '%s'",
               bad[i]);
    }
}


int
main(void)
{
    test_tcp();
    test_credentials();
    test_unix();
    test_errors();
    test_url_is();
    test_change();

    return done_testing();
}
