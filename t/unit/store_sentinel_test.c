/*
 * bottle_store: Sentinel store URLs (redis-sentinel://): sentinels with
 * and without ports, IPv6, the primary's and the sentinels' credentials,
 * the db, the URL printed for logs, and the refusals, whose text never
 * holds a password.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "bottle_store.h"


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
    static char  buf[2048];

    bottle_store_url_print(u, buf, sizeof(buf));

    return buf;
}


static void
test_forms(void)
{
    bottle_store_url_t  u;

    is_int(parse(&u, "redis-sentinel://s1/mymaster"), 0, "one sentinel");
    is_int(u.nsentinels, 1, "one sentinel: counted");
    is_str(u.sentinel[0].host, "s1", "one sentinel: host");
    is_int(u.sentinel[0].port, 26379, "one sentinel: port 26379");
    is_str(u.master, "mymaster", "one sentinel: primary's name");
    ok(!u.is_unix && !u.has_password && !u.has_sentinel_password
       && u.db == 0, "one sentinel: no credentials, db 0");
    is_str(printed(&u), "redis-sentinel://s1:26379/mymaster?db=0",
           "one sentinel: printed");

    is_int(parse(&u, "redis-sentinel://10.0.0.1:26380,s2,[::1]:5000/m-1.x_y"),
           0, "three sentinels");
    is_int(u.nsentinels, 3, "three sentinels: counted");
    is_str(u.sentinel[0].host, "10.0.0.1", "first: address");
    is_int(u.sentinel[0].port, 26380, "first: port");
    is_str(u.sentinel[1].host, "s2", "second: name");
    is_int(u.sentinel[1].port, 26379, "second: default port");
    is_str(u.sentinel[2].host, "::1", "third: IPv6 unbracketed");
    is_int(u.sentinel[2].port, 5000, "third: port");
    is_str(u.master, "m-1.x_y", "name with . _ -");
    is_str(printed(&u),
           "redis-sentinel://10.0.0.1:26380,s2:26379,[::1]:5000/m-1.x_y?db=0",
           "three sentinels: printed");

    is_int(parse(&u, "redis-sentinel://ops:s%40cret@s1,s2/m?db=3"
                     "&sentinel_user=watch&sentinel_password=p%26w"),
           0, "credentials of both");
    is_str(u.user, "ops", "primary's user");
    is_str(u.password, "s@cret", "primary's password decoded");
    ok(u.has_password, "primary's password set");
    is_str(u.sentinel_user, "watch", "sentinels' user");
    is_str(u.sentinel_password, "p&w", "sentinels' password decoded");
    ok(u.has_sentinel_password, "sentinels' password set");
    is_int(u.db, 3, "db from the query");
    ok(strstr(printed(&u), "cret") == NULL
       && strstr(printed(&u), "p&w") == NULL
       && strstr(printed(&u), "watch") == NULL, "printed: no credentials");

    is_int(parse(&u, "redis-sentinel://:pw@s1/m?sentinel_password=x"), 0,
           "passwords without users");
    ok(u.user[0] == '\0' && u.sentinel_user[0] == '\0',
       "passwords without users: no users");

    is_int(parse(&u, "redis-sentinel://a,b,c,d,e,f,g,h/m"), 0,
           "eight sentinels");
    is_int(u.nsentinels, 8, "eight sentinels: counted");

    ok(bottle_store_url_is("redis-sentinel://s/m"),
       "redis-sentinel:// is a store");

    is_int(parse(&u, "redis://h:1/2"), 0, "redis:// still parsed");
    is_int(u.nsentinels, 0, "redis://: no sentinels");
}


static void
test_refused(void)
{
    size_t              i;
    bottle_store_url_t  u;

    static const char  *bad[] = {
        "redis-sentinel://",
        "redis-sentinel://s1",
        "redis-sentinel://s1/",
        "redis-sentinel:///m",
        "redis-sentinel://s1,/m",
        "redis-sentinel://,s1/m",
        "redis-sentinel://s1,,s2/m",
        "redis-sentinel://s1:0/m",
        "redis-sentinel://s1:65536/m",
        "redis-sentinel://s1:x/m",
        "redis-sentinel://s1:/m",
        "redis-sentinel://[::1/m",
        "redis-sentinel://[::1]x/m",
        "redis-sentinel://a,b,c,d,e,f,g,h,i/m",
        "redis-sentinel://s1/m/1",
        "redis-sentinel://s1/m y",
        "redis-sentinel://s1/m?x=1",
        "redis-sentinel://s1/m?db=x",
        "redis-sentinel://s1/m?db=",
        "redis-sentinel://s1/m?db",
        "redis-sentinel://s1/m?user=a&password=b",
        "redis-sentinel://s1/m?sentinel_user=a",
        "redis-sentinel://s1/m?sentinel_password=%4",
        "redis-sentinel://s1/m?sentinel_password=%00",
        "redis-sentinel://user@s1/m",
        "redis-sentinel://s\x01/m",
        "redis-sentinel://s\xc3\xa9/m",
        "redis-sentinel://s1/"
            "a123456789a123456789a123456789a123456789a123456789a1234567890123",
        "redis-sentinel:/s1/m",
        "sentinel://s1/m",
    };

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        is_int(parse(&u, bad[i]), -1, "refused: '%s'", bad[i]);
        ok(err[0] != '\0', "refused with a reason: %s", err);
    }

    is_int(parse(&u, "redis-sentinel://s1/"
                 "a123456789a123456789a123456789a123456789a123456789a123456789"
                 "012"), 0, "a name of 63 characters accepted");

    is_int(parse(&u, "redis-sentinel://:hunter2@s1,,s2/m"), -1,
           "bad URL with a password");
    ok(strstr(err, "hunter2") == NULL, "the password is not in the error");

    is_int(parse(&u, "redis-sentinel://s1/m?sentinel_password=hunter2&x=1"),
           -1, "bad query with a sentinel password");
    ok(strstr(err, "hunter2") == NULL,
       "the sentinel password is not in the error");
}


int
main(void)
{
    test_forms();
    test_refused();

    return done_testing();
}
