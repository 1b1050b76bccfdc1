/*
 * The audit chain's Lua SHA-256 (lib/bottle_audit_chain_lua.h), run by a
 * real Redis (its socket in $BOTTLE_TEST_REDIS_SOCK, started by chain.t),
 * against OpenSSL's: every length from 0 to 300 bytes (one, two, five
 * blocks and every padding boundary), random bytes of all values; and the
 * append script's link against bottle_audit_link().
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "tap.h"
#include "bottle_audit_chain.h"


int
main(void)
{
    int           same, n;
    char          want[BOTTLE_AUDIT_HEX_LEN], link[BOTTLE_AUDIT_HEX_LEN];
    char          digest[BOTTLE_AUDIT_HEX_LEN], *script;
    size_t        len, argvlen[4], i;
    const char   *sock, *argv[4];
    redisReply   *r;
    redisContext *c;
    unsigned char buf[300];

    static const char  zeros[] =
        "0000000000000000000000000000000000000000000000000000000000000000";

    sock = getenv("BOTTLE_TEST_REDIS_SOCK");
    c = sock ? redisConnectUnix(sock) : NULL;

    if (c == NULL || c->err) {
        printf("1..0 # SKIP no Redis at $BOTTLE_TEST_REDIS_SOCK\n");
        return 0;
    }

    len = strlen(bottle_audit_chain_lua);
    script = malloc(len + 64);
    if (script == NULL) {
        return 1;
    }

    memcpy(script, bottle_audit_chain_lua, len);
    strcpy(script + len, "return bottle_sha256(ARGV[1])\n");

    same = 0;

    for (n = 0; n <= (int) sizeof(buf); n++) {
        if (RAND_bytes(buf, sizeof(buf)) != 1) {
            return 1;
        }

        bottle_audit_sha256_hex(want, buf, (size_t) n);

        argv[0] = "EVAL";
        argv[1] = script;
        argv[2] = "0";
        argv[3] = (const char *) buf;
        argvlen[0] = 4;
        argvlen[1] = strlen(script);
        argvlen[2] = 1;
        argvlen[3] = (size_t) n;

        r = redisCommandArgv(c, 4, argv, argvlen);

        if (r && r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0) {
            same++;
        } else {
            printf("# length %d: Lua %s, OpenSSL %s\n", n,
                   r && r->str ? r->str : "(none)", want);
        }

        if (r) {
            freeReplyObject(r);
        }
    }

    is_int(same, sizeof(buf) + 1,
           "Lua SHA-256 = OpenSSL SHA-256, lengths 0..300, random bytes");

    /* the append script's first link, recomputed in C */

    r = redisCommand(c, "DEL bottle:audit bottle:audit:chain");
    freeReplyObject(r);

    r = bottle_audit_append(c, "", "{\"x\":1}", 7);
    ok(r && r->type == REDIS_REPLY_STRING, "append: an entry id");
    if (r) {
        freeReplyObject(r);
    }

    r = redisCommand(c, "XRANGE bottle:audit - +");
    ok(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1
       && r->element[0]->element[1]->elements == 8, "append: one entry, "
       "four fields");

    bottle_audit_sha256_hex(digest, "{\"x\":1}", 7);
    bottle_audit_link(link, zeros, 1, digest);

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
        redisReply  *f = r->element[0]->element[1];

        for (i = 0; i + 1 < f->elements; i += 2) {
            if (strcmp(f->element[i]->str, "hash") == 0) {
                is_str(f->element[i + 1]->str, link,
                       "append: the Lua link = bottle_audit_link()");
            }
            if (strcmp(f->element[i]->str, "seq") == 0) {
                is_str(f->element[i + 1]->str, "1", "append: seq 1");
            }
            if (strcmp(f->element[i]->str, "prev") == 0) {
                is_str(f->element[i + 1]->str, zeros, "append: genesis prev");
            }
        }
    }

    if (r) {
        freeReplyObject(r);
    }

    r = bottle_audit_append(c, "", "not chained", 11);
    ok(r && r->type == REDIS_REPLY_STRING, "append: second entry");
    if (r) {
        freeReplyObject(r);
    }

    r = redisCommand(c, "HGET bottle:audit:chain seq");
    is_str(r && r->type == REDIS_REPLY_STRING ? r->str : NULL, "2",
           "append: the head is seq 2");
    if (r) {
        freeReplyObject(r);
    }

    r = redisCommand(c, "EVAL %s 0 %s %s", bottle_audit_append_script, "",
                     "{\"x\":1}");
    ok(r && r->type == REDIS_REPLY_ERROR && strstr(r->str, "CHAIN"),
       "append: a plain event refused (not a chained argument)");
    if (r) {
        freeReplyObject(r);
    }

    free(script);
    redisFree(c);

    return done_testing();
}
