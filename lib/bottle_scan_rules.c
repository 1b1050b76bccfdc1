/*
 * The vendor rules (token_patterns) and the injection phrases, written
 * from the vendors' published token formats; docs/dlp.md has the table and
 * t/unit/scan_test.c a positive and negative sample of each.
 *
 * A rule is a token regex, the characters a token is made of at its ends
 * (so "xghp_..." or a 37th character is not a token) and the longest
 * match, which bounds the confirm window.  bottle_scan_db_create() builds
 * from each one vectorscan pattern (boundaries as consumed characters, no
 * start of match) and one PCRE2 pattern (boundaries as lookarounds, ending
 * at \z) that finds the exact start from a reported end.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bottle_scan_int.h"


#define LEAD_CTX   "(?:[^%s]|\\\\[a-z]|%%[0-9A-Fa-f]{2})"
#define TRAIL_HS   "(?:[^%s]|\\z)"
#define LEAD_PCRE  "(?:(?<![%s])|(?<=\\\\[a-z])|(?<=%%[0-9A-Fa-f]{2}))"

#define PATTERN_MAX  1024


#define TP   BOTTLE_DETECT_TOKEN_PATTERNS
#define INJ  BOTTLE_DETECT_INJECTION

/* the secret key has upper and lower case letters and a digit or / + */
#define MIXED40                                                              \
    "(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"               \
    "(?=[A-Za-z0-9/+]{0,39}[0-9/+])"
#define MIXED24                                                              \
    "(?=s\\.[A-Za-z0-9]{0,23}[A-Z])(?=s\\.[A-Za-z0-9]{0,23}[a-z])"           \
    "(?=s\\.[A-Za-z0-9]{0,23}[0-9])"

/* whitespace between words of a phrase, or a JSON escape of it */
#define S  "(?:\\s|\\\\[nrt])+"

#define AKID  "(?:AKIA|ASIA|ABIA|ACCA)"

/* a space in a PEM header line, form-encoded too */
#define PK_SP  "(?:[ +]|%20)"


const bottle_scan_rule_t  bottle_scan_rules[] = {

    { "aws_access_key_id", "AWS",
      "`AKIA`, `ASIA`, `ABIA` or `ACCA` + 16 `[A-Z0-9]`", TP,
      "A-Za-z0-9", NULL, AKID "[A-Z0-9]{16}", NULL, 20, 0, 0, 0, 0, 0, 0 },

    { "aws_secret_access_key", "AWS",
      "40 `[A-Za-z0-9/+]` with upper, lower and digit, up to 40 characters"
      " after `aws` or `secret` (any case) or up to 100 after an access key"
      " id, on the same line", TP,
      "A-Za-z0-9/+",
      "(?:(?i:aws|secret)[^\\n]{0,40}|" AKID "[A-Z0-9]{16}[^\\n]{0,100})",
      "[A-Za-z0-9/+]{40}", MIXED40, 168, 0, 0, 0, 0, 0, 0 },

    { "github_pat_classic", "GitHub", "`ghp_` + 36 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "ghp_[A-Za-z0-9]{36}", NULL, 40, 0, 0, 0, 0, 0, 0 },

    { "github_oauth_token", "GitHub", "`gho_` + 36 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "gho_[A-Za-z0-9]{36}", NULL, 40, 0, 0, 0, 0, 0, 0 },

    { "github_user_token", "GitHub", "`ghu_` + 36 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "ghu_[A-Za-z0-9]{36}", NULL, 40, 0, 0, 0, 0, 0, 0 },

    { "github_app_token", "GitHub", "`ghs_` + 36 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "ghs_[A-Za-z0-9]{36}", NULL, 40, 0, 0, 0, 0, 0, 0 },

    { "github_refresh_token", "GitHub", "`ghr_` + 36 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "ghr_[A-Za-z0-9]{36}", NULL, 40, 0, 0, 0, 0, 0, 0 },

    { "github_pat_fine_grained", "GitHub",
      "`github_pat_` + 22 `[A-Za-z0-9]` + `_` + 59 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}",
      NULL, 93, 0, 0, 0, 0, 0, 0 },

    { "gitlab_pat", "GitLab", "`glpat-` + 20 or more `[A-Za-z0-9_-]`", TP,
      "A-Za-z0-9_-", NULL, "glpat-[A-Za-z0-9_-]{20,}", NULL, 512, 1, 0, 0, 0, 0, 0 },

    { "gitlab_token", "GitLab",
      "`gldt-`, `glrt-`, `glcbt-`, `glptt-`, `glft-`, `glimt-`, `glagent-`,"
      " `glsoat-`, `gloas-` or `glffct-` + 20 or more `[A-Za-z0-9_-]`", TP,
      "A-Za-z0-9_-", NULL,
      "(?:gldt|glrt|glcbt|glptt|glft|glimt|glagent|glsoat|gloas|glffct)-"
      "[A-Za-z0-9_-]{20,}", NULL, 512, 1, 0, 0, 0, 0, 0 },

    { "gitlab_runner_registration_token", "GitLab",
      "`GR1348941` + 20 or more `[A-Za-z0-9_-]`", TP,
      "A-Za-z0-9_-", NULL, "GR1348941[A-Za-z0-9_-]{20,}", NULL, 512, 1, 0,
      0, 0, 0, 0 },

    { "anthropic_api_key", "Anthropic",
      "`sk-ant-api03-` + 93 `[A-Za-z0-9_-]` + `AA`", TP,
      "A-Za-z0-9_-", NULL, "sk-ant-api03-[A-Za-z0-9_-]{93}AA", NULL, 108,
      0, 0, 0, 0, 0, 0 },

    { "anthropic_admin_key", "Anthropic",
      "`sk-ant-admin01-` + 93 `[A-Za-z0-9_-]` + `AA`", TP,
      "A-Za-z0-9_-", NULL, "sk-ant-admin01-[A-Za-z0-9_-]{93}AA", NULL, 110,
      0, 0, 0, 0, 0, 0 },

    { "openai_project_key", "OpenAI",
      "`sk-proj-` + 20+ `[A-Za-z0-9_-]` + `T3BlbkFJ` + 20+ more", TP,
      "A-Za-z0-9_-", NULL,
      "sk-proj-[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}", NULL, 512, 1,
      0, 0, 0, 0, 0 },

    { "openai_service_account_key", "OpenAI",
      "`sk-svcacct-` + 20+ `[A-Za-z0-9_-]` + `T3BlbkFJ` + 20+ more", TP,
      "A-Za-z0-9_-", NULL,
      "sk-svcacct-[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}", NULL, 512,
      1, 0, 0, 0, 0, 0 },

    { "openai_admin_key", "OpenAI",
      "`sk-admin-` + 20+ `[A-Za-z0-9_-]` + `T3BlbkFJ` + 20+ more", TP,
      "A-Za-z0-9_-", NULL,
      "sk-admin-[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}", NULL, 512, 1,
      0, 0, 0, 0, 0 },

    { "openai_legacy_key", "OpenAI", "`sk-` + 48 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_-", NULL, "sk-[A-Za-z0-9]{48}", NULL, 51, 0, 0, 0, 0, 0, 0 },

    { "stripe_secret_key", "Stripe", "`sk_live_` + 24 or more `[A-Za-z0-9]`",
      TP, "A-Za-z0-9_", NULL, "sk_live_[A-Za-z0-9]{24,}", NULL, 256, 1, 0,
      0, 0, 0, 0 },

    { "stripe_restricted_key", "Stripe",
      "`rk_live_` + 24 or more `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "rk_live_[A-Za-z0-9]{24,}", NULL, 256, 1, 0, 0, 0, 0, 0 },

    { "huggingface_token", "Hugging Face", "`hf_` + 34 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "hf_[A-Za-z0-9]{34}", NULL, 37, 0, 0, 0, 0, 0, 0 },

    { "databricks_token", "Databricks",
      "`dapi` + 32 `[a-f0-9]`, optional `-` + 1-3 digits", TP,
      "A-Za-z0-9_", NULL, "dapi[a-f0-9]{32}(?:-[0-9]{1,3})?", NULL, 40, 0, 0,
      0, 1, 0, 0 },

    { "slack_bot_token", "Slack",
      "`xoxb-` + 8-14 digits + `-` + 8-14 digits + `-` + 20-40"
      " `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_-", NULL,
      "xoxb-[0-9]{8,14}-[0-9]{8,14}-[A-Za-z0-9]{20,40}", NULL, 80, 0, 0, 0, 0, 0, 0 },

    { "slack_user_token", "Slack",
      "`xoxp-` + three groups of 8-14 digits + `-` + 32 `[a-f0-9]`", TP,
      "A-Za-z0-9_-", NULL,
      "xoxp-[0-9]{8,14}-[0-9]{8,14}-[0-9]{8,14}-[a-f0-9]{32}", NULL, 96, 0,
      0, 0, 0, 0, 0 },

    { "slack_workspace_token", "Slack",
      "`xoxa-` + 1-2 digits + `-` + 20 or more `[A-Za-z0-9-]`", TP,
      "A-Za-z0-9_-", NULL, "xoxa-[0-9]{1,2}-[A-Za-z0-9-]{20,}", NULL, 256,
      1, 0, 0, 0, 0, 0 },

    { "slack_app_token", "Slack",
      "`xapp-` + digit + `-` + 9-12 `[A-Z0-9]` + `-` + 10-14 digits + `-` +"
      " 64 `[a-f0-9]`", TP,
      "A-Za-z0-9_-", NULL,
      "xapp-[0-9]-[A-Z0-9]{9,12}-[0-9]{10,14}-[a-f0-9]{64}", NULL, 100, 0,
      0, 0, 0, 0, 0 },

    { "slack_webhook_url", "Slack",
      "`hooks.slack.com/services/T` + 8-12 `[A-Z0-9]` + `/B` + 8-12"
      " `[A-Z0-9]` + `/` + 24 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9", NULL,
      "hooks\\.slack\\.com/services/T[A-Z0-9]{8,12}/B[A-Z0-9]{8,12}/"
      "[A-Za-z0-9]{24}", NULL, 90, 0, 0, 0, 1, 0, 0 },

    { "npm_token", "npm", "`npm_` + 36 `[A-Za-z0-9]`", TP,
      "A-Za-z0-9_", NULL, "npm_[A-Za-z0-9]{36}", NULL, 40, 0, 0, 0, 0, 0, 0 },

    { "sendgrid_api_key", "SendGrid",
      "`SG.` + 22 `[A-Za-z0-9_-]` + `.` + 43 `[A-Za-z0-9_-]`", TP,
      "A-Za-z0-9_-", NULL, "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}",
      NULL, 69, 0, 0, 0, 1, 0, 0 },

    { "pypi_token", "PyPI",
      "`pypi-AgEIcHlwaS5vcmc` + 50 or more `[A-Za-z0-9_-]`", TP,
      "A-Za-z0-9_-", NULL, "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", NULL,
      512, 1, 0, 0, 0, 0, 0 },

    { "vault_service_token", "HashiCorp Vault",
      "`hvs.` + 24 or more `[A-Za-z0-9_-]`", TP,
      "A-Za-z0-9_-", NULL, "hvs\\.[A-Za-z0-9_-]{24,}", NULL, 512, 1, 0, 0, 1, 0, 0 },

    { "vault_batch_token", "HashiCorp Vault",
      "`hvb.` + 24 or more `[A-Za-z0-9_-]`", TP,
      "A-Za-z0-9_-", NULL, "hvb\\.[A-Za-z0-9_-]{24,}", NULL, 512, 1, 0, 0, 1, 0, 0 },

    { "vault_legacy_token", "HashiCorp Vault",
      "`s.` + 24 `[A-Za-z0-9]` with upper, lower and digit, up to 40"
      " characters after `vault` or `token` (any case)", TP,
      "A-Za-z0-9_", "(?i:vault|token)[^\\n]{0,40}", "s\\.[A-Za-z0-9]{24}",
      MIXED24, 80, 0, 0, 0, 1, 1, 0 },

    /*
     * The header line and the first character of the key: a key block
     * that goes on (a line break in any of its spellings, then base64 or
     * an encrypted key's header), not code that merely names the header.
     * Refused, never redacted: the rest of the block would go out.
     */
    { "private_key", "PEM, OpenSSH, PGP",
      "`-----BEGIN` (`RSA`, `DSA`, `EC`, `OPENSSH`, `ENCRYPTED`, `PGP`)"
      " `PRIVATE KEY` (`BLOCK`) `-----`, a line break (raw, `\\n` escaped"
      " once to three times, `%0A`, or a space) and a key character;"
      " words separated by a space, `+` or `%20`", TP,
      NULL, NULL,
      "-----BEGIN" PK_SP "(?:(?:RSA|DSA|EC|OPENSSH|ENCRYPTED|PGP)" PK_SP ")?"
      "PRIVATE" PK_SP "KEY(?:" PK_SP "BLOCK)?-----"
      "(?:\\r?\\n|\\\\{1,3}r\\\\{1,3}n|\\\\{1,3}n|%0[Dd]%0[Aa]|%0[Aa]|[ +])"
      "{1,2}[A-Za-z0-9+/]", NULL, 128, 0, 0, 0, 0, 0, 1 },

    { "jwt", "JSON Web Token",
      "`eyJ` + 12+ `[A-Za-z0-9_-]` + `.eyJ` + 12+ + `.` + 22+"
      " (three base64url parts, 54 characters or more)", TP,
      "A-Za-z0-9_-", NULL,
      "eyJ[A-Za-z0-9_-]{12,}\\.eyJ[A-Za-z0-9_-]{12,}\\.[A-Za-z0-9_-]{22,}",
      NULL, BOTTLE_SCAN_LOOKBACK, 1, 0, 1, 1, 0, 0 },

    /* inbound: naive prompt-injection phrases (flag only) */

    { "ignore_previous_instructions", "-",
      "ignore / disregard / forget / override (all) (the) previous / prior"
      " / above ... instructions / prompts / rules", INJ, NULL, NULL,
      "(?:ignore|disregard|forget|override)" S "(?:all" S ")?"
      "(?:(?:the|your|any|my)" S ")?"
      "(?:previous|prior|above|earlier|preceding|system)" S
      "(?:instructions|prompts?|directions|directives|rules)", NULL, 160, 1,
      1, 0, 0, 0, 0 },

    { "new_instructions", "-", "new / updated / real (system) instructions:",
      INJ, NULL, NULL,
      "(?:new|updated|revised|real)" S "(?:system" S ")?instructions"
      "(?:\\s|\\\\[nrt])*:", NULL, 160, 1, 1, 0, 0, 0, 0 },

    { "mode_switch", "-", "you are now (in) developer / DAN / ... mode", INJ,
      NULL, NULL,
      "you" S "are" S "now" S "(?:in" S ")?"
      "(?:developer|dan|jailbreak|god|unrestricted)" S "mode", NULL, 160, 1,
      1, 0, 0, 0, 0 },

    { "exfiltration_request", "-",
      "send / post / upload / leak ... api keys / secrets / credentials /"
      " tokens / environment variables to", INJ, NULL, NULL,
      "(?:send|post|upload|exfiltrate|leak|email)" S
      "(?:(?:the|your|all|any)" S ")*"
      "(?:api" S "keys?|secrets|credentials|tokens|passwords|"
      "env(?:ironment)?" S "variables)" S "to", NULL, 160, 1, 1, 0, 0, 0, 0 },

    { "conceal_from_user", "-", "do not tell / inform / notify the user",
      INJ, NULL, NULL,
      "do" S "not" S "(?:tell|inform|alert|notify)" S "the" S "user", NULL,
      160, 1, 1, 0, 0, 0, 0 },
};

const size_t  bottle_scan_nrules =
    sizeof(bottle_scan_rules) / sizeof(bottle_scan_rules[0]);


size_t
bottle_scan_rule_count(void)
{
    return bottle_scan_nrules;
}


int
bottle_scan_rule_info(size_t i, const char **name, const char **vendor,
    const char **shape, int *detector)
{
    if (i >= bottle_scan_nrules) {
        return -1;
    }

    *name = bottle_scan_rules[i].name;
    *vendor = bottle_scan_rules[i].vendor;
    *shape = bottle_scan_rules[i].shape;
    *detector = bottle_scan_rules[i].detector;
    return 0;
}


static int
bottle_scan_jwt_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
           || (c >= '0' && c <= '9') || c == '_' || c == '-';
}


static int
bottle_scan_hex_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
           || (c >= 'A' && c <= 'F');
}


/*
 * The JWT ending at b + e, found backwards: its parts are separated by
 * dots that no part contains, so the start is fixed by the last three
 * runs.  A regex searched forwards would retry from every "eyJ" of a long
 * chain of parts; this is linear in the token.  b[ws] is the first byte
 * that may be looked at; at_start says nothing comes before it.  Returns
 * 1 and the start, 0 if there is no JWT ending there, -1 if the token may
 * begin before ws.
 */

int
bottle_scan_jwt(const unsigned char *b, size_t ws, size_t e, int at_start,
    size_t *start)
{
    size_t  p, q, k;

    p = e;

    for (k = 0; k < 3; k++) {
        q = p;
        while (p > ws && bottle_scan_jwt_char(b[p - 1])) {
            p--;
        }

        if (p == ws && !at_start) {
            return -1;
        }

        if (k == 0) {
            if (q - p < 22 || p == ws || b[p - 1] != '.') {
                return 0;
            }
            p--;
            continue;
        }

        if (k == 1) {
            if (q - p < 15 || memcmp(b + p, "eyJ", 3) != 0
                || p == ws || b[p - 1] != '.')
            {
                return 0;
            }
            p--;
            continue;
        }
    }

    /* the header: "eyJ" at the run's start, or after an escape */

    if (q - p >= 15 && memcmp(b + p, "eyJ", 3) == 0) {
        *start = p;
        return 1;
    }

    if (p > ws && b[p - 1] == '\\' && q - p >= 16 && b[p] >= 'a'
        && b[p] <= 'z' && memcmp(b + p + 1, "eyJ", 3) == 0)
    {
        *start = p + 1;
        return 1;
    }

    if (p > ws && b[p - 1] == '%' && q - p >= 17
        && bottle_scan_hex_char(b[p]) && bottle_scan_hex_char(b[p + 1])
        && memcmp(b + p + 2, "eyJ", 3) == 0)
    {
        *start = p + 2;
        return 1;
    }

    return 0;
}


/* placeholders and documentation examples */

/*
 * The public documentation values that have a real token's shape and are
 * not caught by the rules below: jwt.io's example tokens (the classic one
 * and the current one).  AWS's example key pair contains "EXAMPLE".
 */
static const char  *bottle_scan_examples[] = {
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5"
    "MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiYWRtaW4iOnRydWUs"
    "ImlhdCI6MTUxNjIzOTAyMn0.KMUFsIDTnFmyG3nMiGM6H9FNFUROf3wh7SmqJp-QV30",
};

/* a variable part shorter than this is no evidence either way */
#define BOTTLE_SCAN_VAR_MIN   16
/* at most this many distinct characters: "ghp_xxxx...", "npm_0000..." */
#define BOTTLE_SCAN_VAR_FEW   4


static int
bottle_scan_has_example(const unsigned char *t, size_t n)
{
    size_t  i, k;

    /* 'm' is the rarest letter of the word in tokens: look for it first */
    for (i = 3; i + 4 <= n; i++) {
        if ((t[i] | 0x20) != 'm') {
            continue;
        }
        for (k = 0; k < 7 && (t[i - 3 + k] | 0x20) == "example"[k]; k++) {
            /* void */
        }
        if (k == 7) {
            return 1;
        }
    }

    return 0;
}


/* distinct bytes of t[0, n), counted up to max */
static size_t
bottle_scan_distinct(const unsigned char *t, size_t n, size_t max)
{
    size_t    i, d;
    unsigned  seen[256 / (8 * sizeof(unsigned))];

    memset(seen, 0, sizeof(seen));

    for (i = 0, d = 0; i < n && d < max; i++) {
        if (!(seen[t[i] / 32] & (1u << (t[i] % 32)))) {
            seen[t[i] / 32] |= 1u << (t[i] % 32);
            d++;
        }
    }

    return d;
}


/* a JWT's parts after their "eyJ" (the third has none), dots left out */
static int
bottle_scan_jwt_few(const unsigned char *t, size_t n)
{
    size_t    i, nvar, d, part;
    unsigned  seen[256 / (8 * sizeof(unsigned))];

    memset(seen, 0, sizeof(seen));
    nvar = 0;
    d = 0;
    part = 0;

    for (i = 3; i < n; i++) {
        if (t[i] == '.') {
            part++;
            i += part == 1 ? 3 : 0;
            continue;
        }
        nvar++;
        if (!(seen[t[i] / 32] & (1u << (t[i] % 32)))) {
            seen[t[i] / 32] |= 1u << (t[i] % 32);
            if (++d > BOTTLE_SCAN_VAR_FEW) {
                return 0;
            }
        }
    }

    return nvar >= BOTTLE_SCAN_VAR_MIN;
}


/*
 * The token's variable part is what its character classes matched (the
 * var regex captures each one): a fixed prefix ("sk-ant-api03-"), infix
 * ("T3BlbkFJ") or separator is not part of it.
 */
int
bottle_scan_placeholder(const bottle_scan_db_t *db,
    const bottle_scan_crule_t *cr, const unsigned char *t, size_t n,
    pcre2_match_data *md)
{
    int          rc, i;
    size_t       k, j, nvar, ndist;
    PCRE2_SIZE  *ov;
    unsigned     seen[256 / (8 * sizeof(unsigned))];

    for (k = 0; k < sizeof(bottle_scan_examples) / sizeof(char *); k++) {
        if (strlen(bottle_scan_examples[k]) == n
            && memcmp(bottle_scan_examples[k], t, n) == 0)
        {
            return 1;
        }
    }

    if (bottle_scan_has_example(t, n)) {
        return 1;
    }

    if (cr->var == NULL) {
        return 0;
    }

    /*
     * Most matches are real tokens: a token with more distinct characters
     * than 4 and all of its rule's literal characters has more than 4 in
     * its variable part, and the regex is left out.  A JWT's variable
     * part is its three parts after "eyJ", counted here: a chain of JWT
     * parts would run the regex at every dot.
     */
    if (cr->r->jwt) {
        return bottle_scan_jwt_few(t, n);
    }
    if (bottle_scan_distinct(t, n, BOTTLE_SCAN_VAR_FEW + cr->nlit + 1)
        > BOTTLE_SCAN_VAR_FEW + cr->nlit)
    {
        return 0;
    }

    rc = cr->jit_var
         ? pcre2_jit_match(cr->var, t, n, 0, 0, md, db->mctx)
         : pcre2_match(cr->var, t, n, 0, 0, md, db->mctx);
    if (rc <= 1) {
        return 0;
    }

    ov = pcre2_get_ovector_pointer(md);
    memset(seen, 0, sizeof(seen));
    nvar = 0;
    ndist = 0;

    for (i = 1; i < rc; i++) {
        if (ov[2 * i] == PCRE2_UNSET) {
            continue;
        }
        for (j = ov[2 * i]; j < ov[2 * i + 1]; j++) {
            nvar++;
            if (!(seen[t[j] / 32] & (1u << (t[j] % 32)))) {
                seen[t[j] / 32] |= 1u << (t[j] % 32);
                ndist++;
            }
        }
    }

    return nvar >= BOTTLE_SCAN_VAR_MIN && ndist <= BOTTLE_SCAN_VAR_FEW;
}


/*
 * The token regex with each character class and its quantifier captured:
 * "ghp_[A-Za-z0-9]{36}" -> "ghp_([A-Za-z0-9]{36})".  NULL-free: writes
 * an empty pattern when there is no class.
 */
static void
var_pattern(const char *tok, char *out, size_t cap, unsigned *nlit)
{
    size_t          o;
    const char     *p, *q;
    unsigned char   lit[256];

    o = 0;
    memset(lit, 0, sizeof(lit));
    *nlit = 0;

    for (p = tok; *p && o + 8 < cap; /* void */ ) {
        if (*p == '\\' && p[1]) {
            if (!lit[(unsigned char) p[1]]) {
                lit[(unsigned char) p[1]] = 1;
                (*nlit)++;
            }
            out[o++] = *p++;
            out[o++] = *p++;
            continue;
        }
        if (*p != '[') {
            /* an upper bound of the literal characters: metacharacters
             * and quantifier digits are counted too */
            if (!lit[(unsigned char) *p]) {
                lit[(unsigned char) *p] = 1;
                (*nlit)++;
            }
            out[o++] = *p++;
            continue;
        }

        /* the class, "]" first is a member, then a quantifier */
        q = p + 1;
        if (*q == ']') {
            q++;
        }
        while (*q && *q != ']') {
            q += (*q == '\\' && q[1]) ? 2 : 1;
        }
        if (*q == ']') {
            q++;
        }
        if (*q == '{') {
            while (*q && *q != '}') {
                q++;
            }
            q += *q == '}';
        } else if (*q == '+' || *q == '*' || *q == '?') {
            q++;
        }

        if (o + (size_t) (q - p) + 8 >= cap) {
            break;
        }
        out[o++] = '(';
        memcpy(out + o, p, (size_t) (q - p));
        o += (size_t) (q - p);
        out[o++] = ')';
        p = q;
    }

    out[o] = '\0';
}


/* the database */

static void
cs_bitmap(unsigned char *bm, const char *cs)
{
    unsigned  c, a, b;

    memset(bm, 0, 32);

    while (*cs) {
        a = (unsigned char) cs[0];
        b = a;
        if (cs[1] == '-' && cs[2] != '\0') {
            b = (unsigned char) cs[2];
            cs += 3;
        } else {
            cs++;
        }
        for (c = a; c <= b; c++) {
            bm[c >> 3] |= (unsigned char) (1 << (c & 7));
        }
    }
}


static void
rule_patterns(const bottle_scan_rule_t *r, char *hs, char *pc)
{
    char  lead[128], trail[64], plead[128];

    if (r->cs == NULL) {
        snprintf(hs, PATTERN_MAX, "(?:%s)", r->token);
        snprintf(pc, PATTERN_MAX, "(%s)\\z", r->token);
        return;
    }

    /*
     * vectorscan checks the boundary after the token only; the one before
     * is the confirm's (lookbehinds).  A boundary before, with its escape
     * alternatives, halves vectorscan's speed on a repeated prefix
     * ("AKIAAKIA..."), and a start that isn't a token's start costs only a
     * confirm.  After a context, a boundary character is cheap and keeps
     * the gap from running into the token.
     */
    lead[0] = '\0';
    if (r->ctx && !r->ctx_apart) {
        snprintf(lead, sizeof(lead), LEAD_CTX, r->cs);
    }
    snprintf(trail, sizeof(trail), TRAIL_HS, r->cs);
    snprintf(plead, sizeof(plead), LEAD_PCRE, r->cs);

    snprintf(hs, PATTERN_MAX, "%s%s(?:%s)%s",
             r->ctx && !r->ctx_apart ? r->ctx : "", lead, r->token, trail);
    snprintf(pc, PATTERN_MAX, "%s%s(%s)\\z", plead,
             r->extra ? r->extra : "", r->token);
}


static pcre2_code *
pcre_compile_jit(const char *pat, uint32_t opts, int *jit)
{
    int          ec;
    size_t       size;
    PCRE2_SIZE   eo;
    pcre2_code  *re;

    *jit = 0;
    re = pcre2_compile((PCRE2_SPTR) pat, PCRE2_ZERO_TERMINATED, opts, &ec,
                       &eo, NULL);
    if (re && pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0
        && pcre2_pattern_info(re, PCRE2_INFO_JITSIZE, &size) == 0)
    {
        *jit = size > 0;
    }
    return re;
}


static int
db_compile(hs_database_t **out, const char *cache, const char *name,
    const char **pats, const unsigned *flags, const unsigned *ids, size_t n,
    char *err, size_t errlen)
{
    hs_compile_error_t  *ce;

    if (bottle_scan_cache_compile(out, cache, name, pats, flags, ids, n,
                                  HS_MODE_STREAM, &ce)
        != HS_SUCCESS)
    {
        snprintf(err, errlen, "cannot compile rule \"%s\": %s",
                 ce->expression >= 0
                 ? bottle_scan_rules[ids[ce->expression]].name : "-",
                 ce->message);
        hs_free_compile_error(ce);
        *out = NULL;
        return -1;
    }

    return 0;
}


/*
 * The fewest bytes any of the patterns matches: a whole field shorter than
 * that cannot hold a match of theirs, as the streams start over with each
 * field (bottle_scan_field() leaves them out).
 */
static int
min_width(size_t *out, const char **pats, const unsigned *flags, size_t n,
    char *err, size_t errlen)
{
    size_t               i;
    hs_expr_info_t      *info;
    hs_compile_error_t  *ce;

    *out = (size_t) -1;

    for (i = 0; i < n; i++) {
        if (hs_expression_info(pats[i], flags[i], &info, &ce)
            != HS_SUCCESS)
        {
            snprintf(err, errlen, "cannot analyse rule \"%s\": %s",
                     bottle_scan_rules[i].name, ce->message);
            hs_free_compile_error(ce);
            return -1;
        }

        if (info->min_width < *out) {
            *out = info->min_width;
        }

        free(info);
    }

    if (n == 0) {
        *out = 0;
    }

    return 0;
}


int
bottle_scan_db_create(bottle_scan_db_t **out, char *err, size_t errlen)
{
    return bottle_scan_db_create_cached(out, NULL, err, errlen);
}


int
bottle_scan_db_create_cached(bottle_scan_db_t **out, const char *cache,
    char *err, size_t errlen)
{
    int                  rc;
    uint32_t             opts;
    size_t               i, nv, ni;
    char                *hs, *pc;
    unsigned            *flags, *ids;
    const char         **pats;
    bottle_scan_db_t    *db;
    bottle_scan_crule_t *cr;

    *out = NULL;
    rc = -1;
    nv = 0;

    bottle_scan_decode_init();
    ni = bottle_scan_nrules;

    db = calloc(1, sizeof(*db));
    hs = malloc(bottle_scan_nrules * PATTERN_MAX);
    pc = malloc(PATTERN_MAX);
    pats = malloc(bottle_scan_nrules * sizeof(*pats));
    flags = malloc(bottle_scan_nrules * sizeof(*flags));
    ids = malloc(bottle_scan_nrules * sizeof(*ids));

    if (db == NULL || hs == NULL || pc == NULL || pats == NULL
        || flags == NULL || ids == NULL)
    {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }

    db->rules = calloc(bottle_scan_nrules, sizeof(*db->rules));
    db->mctx = pcre2_match_context_create(NULL);
    if (db->rules == NULL || db->mctx == NULL) {
        snprintf(err, errlen, "out of memory");
        goto cleanup;
    }
    pcre2_set_match_limit(db->mctx, BOTTLE_SCAN_MATCH_LIMIT);
    pcre2_set_depth_limit(db->mctx, BOTTLE_SCAN_MATCH_LIMIT);
    db->nrules = bottle_scan_nrules;

    /* vendor rules get the ids [0, nv), phrases [nv, n), in table order */
    for (i = 0; i < bottle_scan_nrules; i++) {
        cr = &db->rules[i];
        cr->r = &bottle_scan_rules[i];
        if (cr->r->cs) {
            cs_bitmap(cr->cs, cr->r->cs);
        }

        rule_patterns(cr->r, hs + i * PATTERN_MAX, pc);

        /* the token and its context are confirmed apart: one regex with a
         * gap before a fixed token backtracks through every gap length */
        /* a plain token is tried anchored at its run's start (see
         * bottle_scan_confirm_run()); PCRE2_ANCHORED at match time would
         * leave the JIT out */
        opts = cr->r->caseless ? PCRE2_CASELESS : 0;
        if (cr->r->cs && !cr->r->dotted && !cr->r->jwt) {
            opts |= PCRE2_ANCHORED;
        }
        cr->re = pcre_compile_jit(pc, opts, &cr->jit);
        if (cr->r->ctx) {
            snprintf(pc, PATTERN_MAX, "(?:%s)\\z", cr->r->ctx);
            cr->ctx = pcre_compile_jit(pc, cr->r->caseless ? PCRE2_CASELESS
                                                           : 0, &cr->jit_ctx);
        }
        if (cr->r->detector == BOTTLE_DETECT_TOKEN_PATTERNS) {
            var_pattern(cr->r->token, pc, PATTERN_MAX, &cr->nlit);
            cr->var = pcre_compile_jit(pc, PCRE2_ANCHORED, &cr->jit_var);
            if (cr->var == NULL) {
                snprintf(err, errlen, "cannot compile rule \"%s\" for "
                         "placeholders", cr->r->name);
                goto cleanup;
            }
        }
        if (cr->re == NULL || (cr->r->ctx && cr->ctx == NULL)) {
            snprintf(err, errlen, "cannot compile rule \"%s\" for PCRE2",
                     cr->r->name);
            goto cleanup;
        }

        pats[i] = hs + i * PATTERN_MAX;
        flags[i] = cr->r->caseless ? HS_FLAG_CASELESS : 0;
        ids[i] = (unsigned) i;
        if (cr->r->detector == BOTTLE_DETECT_TOKEN_PATTERNS) {
            nv = i + 1;
        }
    }
    ni = bottle_scan_nrules - nv;

    if (min_width(&db->vendor_min, pats, flags, nv, err, errlen) != 0) {
        goto cleanup;
    }

    if (db_compile(&db->vendor, cache, "vendor", pats, flags, ids, nv, err,
                   errlen) != 0
        || db_compile(&db->inject, cache, "inject", pats + nv, flags + nv,
                      ids + nv, ni, err, errlen) != 0)
    {
        goto cleanup;
    }

    if (hs_alloc_scratch(db->vendor, &db->proto) != HS_SUCCESS
        || hs_alloc_scratch(db->inject, &db->proto) != HS_SUCCESS)
    {
        snprintf(err, errlen, "cannot allocate scratch space");
        goto cleanup;
    }

    *out = db;
    db = NULL;
    rc = 0;

cleanup:

    bottle_scan_db_free(db);
    free(hs);
    free(pc);
    free(pats);
    free(flags);
    free(ids);
    return rc;
}


void
bottle_scan_db_free(bottle_scan_db_t *db)
{
    size_t  i;

    if (db == NULL) {
        return;
    }

    for (i = 0; db->rules && i < db->nrules; i++) {
        pcre2_code_free(db->rules[i].re);
        pcre2_code_free(db->rules[i].ctx);
        pcre2_code_free(db->rules[i].var);
    }
    free(db->rules);
    pcre2_match_context_free(db->mctx);
    hs_free_database(db->vendor);
    hs_free_database(db->inject);
    hs_free_scratch(db->proto);
    free(db);
}
void rule_patterns_pub(const bottle_scan_rule_t *r, char *hs, char *pc);
void rule_patterns_pub(const bottle_scan_rule_t *r, char *hs, char *pc) { rule_patterns(r, hs, pc); }
