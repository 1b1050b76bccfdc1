/*
 * Held secrets in a bottle's literal databases (git-gate's push scan):
 * bottle_scan_secrets_create_held() and bottle_scan_secrets_for_git().
 */

#include <stdio.h>
#include <string.h>

#include "bottle_policy.h"
#include "bottle_scan.h"
#include "tap.h"


static bottle_scan_db_t  *db;


/* the rule of the only match of one field, or NULL */
static const char *
scan_one(bottle_scan_secrets_t *sec, const char *text, size_t *nout)
{
    static char                 rule[128];
    size_t                      n;
    bottle_scan_t              *s;
    const bottle_scan_match_t  *m;

    if (bottle_scan_acquire(&s, sec, BOTTLE_DLP_OUTBOUND_DEFAULT) != 0
        || bottle_scan_field(s, 1, text, strlen(text)) != BOTTLE_SCAN_OK)
    {
        return NULL;
    }
    m = bottle_scan_matches(s, &n);
    *nout = n;
    snprintf(rule, sizeof(rule), "%s", n ? m[0].rule : "");
    bottle_scan_release(s);
    return n ? rule : NULL;
}


int
main(void)
{
    static const char  json[] =
        "{\"bottles\":[{\"id\":\"b\",\"token\":\"tok-0123456789abcdef\","
        "\"canary\":\"canary-example-0123456789\","
        "\"egress_tokens\":{\"API\":\"egress-value-0123456789\"},"
        "\"held_secrets\":{\"DB_PASSWORD\":\"held-value-9876543210\","
        "\"SHORT\":\"abc\"},"
        "\"routes\":[]}]}";
    char                    err[256];
    size_t                  n, nraw, nskel, nraw2, nskel2;
    const char             *r;
    bottle_policy_t        *p;
    bottle_scan_secrets_t  *git, *egress;
    bottle_secret_t         held;

    if (bottle_scan_db_create(&db, err, sizeof(err)) != 0) {
        printf("Bail out! %s\n", err);
        return 1;
    }

    ok(bottle_policy_parse(&p, json, sizeof(json) - 1, "t", err,
                           sizeof(err)) == 0, "policy with held_secrets parsed");

    ok(bottle_scan_secrets_for_git(&git, db, bottle_policy_at(p, 0), err,
                                   sizeof(err)) == 0, "secrets for git");
    ok(bottle_scan_secrets_from_bottle(&egress, db, bottle_policy_at(p, 0),
                                       err, sizeof(err)) == 0,
       "secrets for egress");

    r = scan_one(git, "password = held-value-9876543210\n", &n);
    is_str(r, "held_secret:DB_PASSWORD", "git: the held secret, by name");
    r = scan_one(git, "aGVsZC12YWx1ZS05ODc2NTQzMjEw", &n);
    is_str(r, "held_secret:DB_PASSWORD", "git: the held secret in base64");
    r = scan_one(git, "x egress-value-0123456789 y", &n);
    is_str(r, "egress_token:API", "git: the egress token still");
    r = scan_one(git, "CANARY-EXAMPLE-0123456789", &n);
    is_str(r, "canary", "git: the canary still");
    r = scan_one(git, "abc abc abc", &n);
    ok(r == NULL, "git: a held value under 8 characters is not looked for");

    r = scan_one(egress, "password = held-value-9876543210\n", &n);
    ok(r == NULL, "egress: held secrets are not egress DLP's");

    bottle_scan_secrets_stats(git, &nraw, &nskel);
    bottle_scan_secrets_stats(egress, &nraw2, &nskel2);
    ok(nraw + nskel > nraw2 + nskel2, "git has more literals than egress");

    bottle_scan_secrets_free(git);
    bottle_scan_secrets_free(egress);

    /* a multi-line held value (a key) */
    held.name.data = "KEY";
    held.name.len = 3;
    held.value.data = "line-one-abcdef\nline-two-ghijkl";
    held.value.len = strlen(held.value.data);
    ok(bottle_scan_secrets_create_held(&git, db, NULL, NULL, 0, &held, 1,
                                       err, sizeof(err)) == 0,
       "held secret alone, spanning lines");
    r = scan_one(git, "k: line-one-abcdef\nline-two-ghijkl\n", &n);
    is_str(r, "held_secret:KEY", "the multi-line value found");
    bottle_scan_secrets_free(git);

    bottle_policy_free(p);
    bottle_scan_db_free(db);
    return done_testing();
}
