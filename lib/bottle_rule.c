/*
 * The refusal rules' table (bottle_rule.h).
 */

#include <string.h>

#include "bottle_rule.h"


static const bottle_rule_t  bottle_rules[BOTTLE_RULE_COUNT] = {
    { 200, "none", "" },
    { 400, "bad_request",
      "Send a well-formed HTTP/1.1 proxy request." },
    { 407, "identity",
      "Use the proxy URL you were given: its password is this "
      "bottle's token." },
    { 403, "no_route",
      "This host is not on this bottle's egress allowlist. "
      "If you need it, ask the operator to allow it "
      "(supervise: egress-allow)." },
    { 403, "port",
      "This port is not allowed for this host. If you need it, "
      "ask the operator to add it to the route "
      "(supervise: egress-allow)." },
    { 403, "address",
      "This host resolves to an internal address, which routes "
      "may reach only when the operator allows it explicitly." },
    { 502, "resolve",
      "The gateway could not resolve this host. Check the name; "
      "retrying later may help." },
    { 403, "inspect",
      "This route is inspected, and TLS interception is not "
      "available on this gateway. Ask the operator." },
    { 403, "raw_tcp",
      "Only HTTP, or TLS carrying HTTP, may pass the gateway." },
    { 403, "host_mismatch",
      "The Host header must name the host you connect to." },
    { 403, "git",
      "git does not go out through egress: use git-gate with "
      "the repository's usual URL." },
    { 403, "method",
      "This method is not allowed on this route. If you need it, "
      "ask the operator to allow it (supervise: egress-allow)." },
    { 403, "allow",
      "No allow rule of this route matches this request. If you "
      "need it, ask the operator (supervise: egress-allow)." },
    { 408, "timeout",
      "Send the whole request head promptly." },
    { 502, "upstream",
      "The upstream could not be reached; retrying later may "
      "help." },
    { 403, "websocket",
      "WebSocket upgrades are refused on this route; its frames "
      "would not be inspected. Ask the operator if you need "
      "them." },
    { 403, "canary",
      "The request carries this bottle's canary secret, which "
      "must never leave the bottle." },
    { 403, "crlf",
      "Header values may not carry line breaks." },
    { 403, "dlp",
      "The request carries what looks like a secret. If it must "
      "go to this host, ask the operator to approve it "
      "(supervise: egress-token-allow)." },
    { 413, "too_large",
      "Send a smaller request body, or ask the operator to raise "
      "the gateway's limit." },
    { 415, "encoding",
      "Send the request body uncompressed, or with gzip or "
      "deflate: the gateway must read it before it goes out." },
    { 500, "internal",
      "The gateway could not check this request, so it refused "
      "it. Tell the operator." },
    { 503, "audit",
      "This bottle's first request to a host must be recorded in "
      "the audit journal first, and it could not be. Retrying "
      "later may help; tell the operator if it persists." },
    { 403, "revoked",
      "The policy that let this connection open changed: its bottle, "
      "token or route was removed, or the gateway lost its policy "
      "store. Connect again; ask the operator if it is refused." }
};


const bottle_rule_t *
bottle_rule(bottle_rule_e rule)
{
    if ((unsigned) rule >= BOTTLE_RULE_COUNT) {
        rule = BOTTLE_RULE_INTERNAL;
    }

    return &bottle_rules[rule];
}


int
bottle_rule_by_name(const char *name, size_t len)
{
    int  i;

    for (i = 0; i < BOTTLE_RULE_COUNT; i++) {
        if (strlen(bottle_rules[i].name) == len
            && memcmp(bottle_rules[i].name, name, len) == 0)
        {
            return i;
        }
    }

    return -1;
}
