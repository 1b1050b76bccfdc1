/*
 * bottle_heartbeat: the record's key (bytes other than printable ASCII
 * less space as '_', an id cut at BOTTLE_HEARTBEAT_ID_MAX, within
 * BOTTLE_HEARTBEAT_KEY_LEN), its expiry, and its JSON (what is not known
 * is null).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tap.h"
#include "bottle_heartbeat.h"


static void
test_key(void)
{
    char    key[BOTTLE_HEARTBEAT_KEY_LEN], id[1024];
    size_t  n;

    n = bottle_heartbeat_key(key, BOTTLE_HEARTBEAT_GATEWAY, "gw1/0");
    is_str(key, "bottle:heartbeat:gateway:gw1/0", "key: kind and id");
    is_int(n, strlen(key), "key: its length");

    bottle_heartbeat_key(key, BOTTLE_HEARTBEAT_SUPERVISE, "a b\n\x7f\xffz");
    is_str(key, "bottle:heartbeat:supervise:a_b___z",
           "key: space, control and non-ASCII bytes as _");

    memset(id, 'x', sizeof(id) - 1);
    id[sizeof(id) - 1] = '\0';

    n = bottle_heartbeat_key(key, BOTTLE_HEARTBEAT_SUPERVISE, id);
    is_int(n, sizeof("bottle:heartbeat:supervise:") - 1
              + BOTTLE_HEARTBEAT_ID_MAX, "key: a long id cut");
    ok(n < sizeof(key), "key: within BOTTLE_HEARTBEAT_KEY_LEN");
}


static void
test_ttl(void)
{
    is_int(bottle_heartbeat_ttl(5000), 300000, "ttl: 60 periods");
    is_int(bottle_heartbeat_ttl(0), 24 * 3600 * 1000,
           "ttl: per request (git-gate): a day");
}


static void
test_json(void)
{
    char                *s;
    json_t              *o;
    bottle_heartbeat_t   hb;

    bottle_heartbeat_init(&hb);
    hb.kind = BOTTLE_HEARTBEAT_GATEWAY;
    hb.id = "gw1/1";
    hb.host = "gw1";
    hb.instance = "gw1";
    hb.store = "up";
    hb.pid = 4242;
    hb.period_ms = 5000;
    hb.ttl_ms = 300000;
    hb.policy_version = 0;

    s = bottle_heartbeat_json(&hb);
    ok(s != NULL, "json: made");

    o = json_loads(s ? s : "", 0, NULL);
    ok(json_is_object(o), "json: an object");
    is_str(json_string_value(json_object_get(o, "kind")), "gateway",
           "json: kind");
    is_int(json_integer_value(json_object_get(o, "pid")), 4242, "json: pid");
    is_int(json_integer_value(json_object_get(o, "policy_version")), 0,
           "json: a version 0 is kept");
    ok(json_is_null(json_object_get(o, "bottles"))
       && json_is_null(json_object_get(o, "worker")),
       "json: what is not known is null");
    is_str(json_string_value(json_object_get(o, "version")),
           BOTTLE_HEARTBEAT_VERSION, "json: the version");

    json_decref(o);
    free(s);
}


int
main(void)
{
    test_key();
    test_ttl();
    test_json();

    return done_testing();
}
