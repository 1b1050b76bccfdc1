/*
 * IP literals and networks: strict parsing of every spelling a client
 * would accept, canonical formatting, and the internal-address test.
 */

#define _POSIX_C_SOURCE  200809L

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "bottle_ip.h"
#include "bottle_util.h"


/* longest IPv6 literal inet_pton() can accept (mixed form, no zone) */
#define BOTTLE_IP6_MAXLEN  45


static int bottle_ip4_part(uint32_t *out, const char *s, size_t len);
static int bottle_ip4_parse(bottle_ip_t *out, const char *s, size_t len);
static int bottle_ip6_parse(bottle_ip_t *out, const char *s, size_t len);
static uint32_t bottle_ip_get32(const unsigned char *p);
static int bottle_ip4_internal(uint32_t a);
static int bottle_ip6_internal(const unsigned char *a);
static size_t bottle_ip6_format(char *out, size_t cap, const unsigned char *a);
static int bottle_ip_is_mapped(const bottle_ip_t *ip);


int
bottle_ip_parse(bottle_ip_t *out, const char *s, size_t len)
{
    if (s == NULL || len == 0) {
        return -1;
    }

    if (memchr(s, ':', len) != NULL) {
        return bottle_ip6_parse(out, s, len);
    }

    return bottle_ip4_parse(out, s, len);
}


/* one part of an IPv4 literal: decimal, octal (leading 0) or hex (0x) */

static int
bottle_ip4_part(uint32_t *out, const char *s, size_t len)
{
    size_t    i;
    uint64_t  v;
    unsigned  base;
    int       d;

    if (len == 0) {
        return -1;
    }

    base = 10;

    if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
        len -= 2;

        /* WHATWG reads a bare "0x" as 0, inet_aton() does not: refuse */
        if (len == 0) {
            return -1;
        }

    } else if (len >= 2 && s[0] == '0') {
        base = 8;
    }

    v = 0;

    for (i = 0; i < len; i++) {
        d = bottle_hexval((unsigned char) s[i]);
        if (d < 0 || (unsigned) d >= base) {
            return -1;
        }

        v = v * base + (unsigned) d;

        /* checked per digit, so long runs of zeros cannot overflow */
        if (v > 0xffffffffULL) {
            return -1;
        }
    }

    *out = (uint32_t) v;

    return 0;
}


static int
bottle_ip4_parse(bottle_ip_t *out, const char *s, size_t len)
{
    size_t    i, start, n;
    uint32_t  parts[4], v, max;

    /* a browser accepts "127.0.0.1." as the same address */
    if (s[len - 1] == '.') {
        len--;
    }

    if (len == 0) {
        return -1;
    }

    n = 0;
    start = 0;

    for (i = 0; i <= len; i++) {
        if (i < len && s[i] != '.') {
            continue;
        }

        if (n == 4 || bottle_ip4_part(&parts[n], s + start, i - start) != 0) {
            return -1;
        }

        n++;
        start = i + 1;
    }

    /* all parts but the last are bytes; the last fills the rest */
    for (i = 0; i + 1 < n; i++) {
        if (parts[i] > 255) {
            return -1;
        }
    }

    max = (n == 1) ? 0xffffffffU : (uint32_t) ((1ULL << (8 * (5 - n))) - 1);
    if (parts[n - 1] > max) {
        return -1;
    }

    v = parts[n - 1];
    for (i = 0; i + 1 < n; i++) {
        v |= parts[i] << (8 * (3 - i));
    }

    memset(out, 0, sizeof(bottle_ip_t));
    out->family = AF_INET;
    out->addr[0] = (unsigned char) (v >> 24);
    out->addr[1] = (unsigned char) (v >> 16);
    out->addr[2] = (unsigned char) (v >> 8);
    out->addr[3] = (unsigned char) v;

    return 0;
}


static int
bottle_ip6_parse(bottle_ip_t *out, const char *s, size_t len)
{
    char    buf[BOTTLE_IP6_MAXLEN + 1];
    size_t  i;

    if (len > BOTTLE_IP6_MAXLEN) {
        return -1;
    }

    /* whitelist first: inet_pton() must never see a zone id or a NUL */
    for (i = 0; i < len; i++) {
        if (s[i] != ':' && s[i] != '.'
            && bottle_hexval((unsigned char) s[i]) < 0)
        {
            return -1;
        }
    }

    memcpy(buf, s, len);
    buf[len] = '\0';

    memset(out, 0, sizeof(bottle_ip_t));

    if (inet_pton(AF_INET6, buf, out->addr) != 1) {
        return -1;
    }

    out->family = AF_INET6;

    return 0;
}


int
bottle_ip_looks_numeric(const char *s, size_t len)
{
    size_t  i, start;

    if (s == NULL || len == 0) {
        return 0;
    }

    if (s[len - 1] == '.') {
        len--;
        if (len == 0) {
            return 0;
        }
    }

    start = len;
    while (start > 0 && s[start - 1] != '.') {
        start--;
    }

    s += start;
    len -= start;

    if (len == 0) {
        return 0;
    }

    if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        for (i = 2; i < len; i++) {
            if (bottle_hexval((unsigned char) s[i]) < 0) {
                return 0;
            }
        }

        return 1;
    }

    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return 0;
        }
    }

    return 1;
}


size_t
bottle_ip_format(char *out, size_t cap, const bottle_ip_t *ip)
{
    char    buf[BOTTLE_IP_STRLEN];
    size_t  n;

    if (ip->family == AF_INET) {
        n = (size_t) snprintf(buf, sizeof(buf), "%u.%u.%u.%u",
                              ip->addr[0], ip->addr[1], ip->addr[2],
                              ip->addr[3]);

    } else if (ip->family == AF_INET6) {
        n = bottle_ip6_format(buf, sizeof(buf), ip->addr);

    } else {
        return 0;
    }

    if (n == 0 || n + 1 > cap) {
        return 0;
    }

    memcpy(out, buf, n + 1);

    return n;
}


/* RFC 5952: first longest run of two or more zero groups becomes "::" */

static size_t
bottle_ip6_format(char *out, size_t cap, const unsigned char *a)
{
    int       i, best, bestlen, run, runlen;
    size_t    n;
    unsigned  g[8];

    for (i = 0; i < 8; i++) {
        g[i] = (unsigned) (a[2 * i] << 8 | a[2 * i + 1]);
    }

    if (g[0] == 0 && g[1] == 0 && g[2] == 0 && g[3] == 0 && g[4] == 0
        && g[5] == 0xffff)
    {
        return (size_t) snprintf(out, cap, "::ffff:%u.%u.%u.%u",
                                 a[12], a[13], a[14], a[15]);
    }

    best = -1;
    bestlen = 1;
    run = -1;
    runlen = 0;

    for (i = 0; i < 8; i++) {
        if (g[i] != 0) {
            run = -1;
            continue;
        }

        if (run < 0) {
            run = i;
            runlen = 0;
        }

        runlen++;

        if (runlen > bestlen) {
            best = run;
            bestlen = runlen;
        }
    }

    n = 0;

    for (i = 0; i < 8; i++) {
        if (i == best) {
            n += (size_t) snprintf(out + n, cap - n, "::");
            i += bestlen - 1;
            continue;
        }

        n += (size_t) snprintf(out + n, cap - n,
                               (n > 0 && out[n - 1] != ':') ? ":%x" : "%x",
                               g[i]);
    }

    return n;
}


int
bottle_ip_from_sockaddr(bottle_ip_t *out, const struct sockaddr *sa)
{
    const struct sockaddr_in   *sin;
    const struct sockaddr_in6  *sin6;

    if (sa == NULL) {
        return -1;
    }

    memset(out, 0, sizeof(bottle_ip_t));

    if (sa->sa_family == AF_INET) {
        sin = (const struct sockaddr_in *) (const void *) sa;
        out->family = AF_INET;
        memcpy(out->addr, &sin->sin_addr, 4);
        return 0;
    }

    if (sa->sa_family != AF_INET6) {
        return -1;
    }

    sin6 = (const struct sockaddr_in6 *) (const void *) sa;
    out->family = AF_INET6;
    memcpy(out->addr, &sin6->sin6_addr, 16);

    /* a dual-stack listener reports IPv4 clients as ::ffff:a.b.c.d */
    if (bottle_ip_is_mapped(out)) {
        memmove(out->addr, out->addr + 12, 4);
        memset(out->addr + 4, 0, 12);
        out->family = AF_INET;
    }

    return 0;
}


static int
bottle_ip_is_mapped(const bottle_ip_t *ip)
{
    static const unsigned char  prefix[12] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
    };

    return ip->family == AF_INET6 && memcmp(ip->addr, prefix, 12) == 0;
}


static uint32_t
bottle_ip_get32(const unsigned char *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16
           | (uint32_t) p[2] << 8 | (uint32_t) p[3];
}


int
bottle_ip_is_internal(const bottle_ip_t *ip)
{
    if (ip->family == AF_INET) {
        return bottle_ip4_internal(bottle_ip_get32(ip->addr));
    }

    if (ip->family == AF_INET6) {
        return bottle_ip6_internal(ip->addr);
    }

    /* fail closed: what cannot be judged is not public */
    return 1;
}


static int
bottle_ip4_internal(uint32_t a)
{
    size_t  i;

    static const struct {
        uint32_t  net;
        unsigned  prefix;
    } ranges[] = {
        { 0x00000000, 8 },      /* 0.0.0.0/8 "this network" */
        { 0x0a000000, 8 },      /* 10/8 */
        { 0x64400000, 10 },     /* 100.64/10 CGNAT */
        { 0x7f000000, 8 },      /* 127/8 loopback */
        { 0xa9fe0000, 16 },     /* 169.254/16 link-local, metadata */
        { 0xac100000, 12 },     /* 172.16/12 */
        { 0xc0000000, 24 },     /* 192.0.0/24 IETF protocol assignments */
        { 0xc0a80000, 16 },     /* 192.168/16 */
        { 0xc6120000, 15 },     /* 198.18/15 benchmarking */
        { 0xe0000000, 4 },      /* 224/4 multicast */
        { 0xf0000000, 4 }       /* 240/4 reserved, broadcast */
    };

    for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        if ((a >> (32 - ranges[i].prefix))
            == (ranges[i].net >> (32 - ranges[i].prefix)))
        {
            return 1;
        }
    }

    return 0;
}


static int
bottle_ip6_internal(const unsigned char *a)
{
    static const unsigned char  zero[12];
    static const unsigned char  nat64[12] = { 0, 0x64, 0xff, 0x9b };

    /* ::/96 (::, ::1, v4-compatible) and ::ffff:0:0/96 (v4-mapped) */
    if (memcmp(a, zero, 10) == 0
        && ((a[10] == 0 && a[11] == 0) || (a[10] == 0xff && a[11] == 0xff)))
    {
        return bottle_ip4_internal(bottle_ip_get32(a + 12));
    }

    /* ::ffff:0:0:0/96 (SIIT) and 64:ff9b::/96 (NAT64) */
    if ((memcmp(a, zero, 8) == 0 && a[8] == 0xff && a[9] == 0xff
         && a[10] == 0 && a[11] == 0)
        || memcmp(a, nat64, 12) == 0)
    {
        return bottle_ip4_internal(bottle_ip_get32(a + 12));
    }

    /* 2002::/16 6to4: the IPv4 address follows the prefix */
    if (a[0] == 0x20 && a[1] == 0x02) {
        return bottle_ip4_internal(bottle_ip_get32(a + 2));
    }

    /* 2001::/32 Teredo: server, then the client obfuscated by XOR */
    if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
        return bottle_ip4_internal(bottle_ip_get32(a + 4))
               || bottle_ip4_internal(~bottle_ip_get32(a + 12));
    }

    /* 64:ff9b:1::/48 local-use NAT64: translated to anything */
    if (memcmp(a, nat64, 4) == 0 && a[4] == 0 && a[5] == 1) {
        return 1;
    }

    /* 100::/64 discard-only */
    if (a[0] == 0x01 && memcmp(a + 1, zero, 7) == 0) {
        return 1;
    }

    /* fc00::/7 ULA, fe80::/10 link-local, fec0::/10 site-local, ff00::/8 */
    return (a[0] & 0xfe) == 0xfc
           || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
           || (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0)
           || a[0] == 0xff;
}


int
bottle_net_parse(bottle_net_t *out, const char *s, size_t len)
{
    size_t        i, alen, bits, max;
    const char   *slash;
    bottle_net_t  net;

    if (s == NULL || len == 0) {
        return -1;
    }

    slash = memchr(s, '/', len);
    alen = slash ? (size_t) (slash - s) : len;

    if (bottle_ip_parse(&net.ip, s, alen) != 0) {
        return -1;
    }

    max = (net.ip.family == AF_INET) ? 32 : 128;
    bits = max;

    if (slash != NULL) {
        s = slash + 1;
        len -= alen + 1;

        /* plain decimal: no sign, no leading zero, at most three digits */
        if (len == 0 || len > 3 || (s[0] == '0' && len > 1)) {
            return -1;
        }

        bits = 0;
        for (i = 0; i < len; i++) {
            if (s[i] < '0' || s[i] > '9') {
                return -1;
            }

            bits = bits * 10 + (size_t) (s[i] - '0');
        }

        if (bits > max) {
            return -1;
        }
    }

    /* host bits set usually means a typo in the prefix length */
    for (i = bits; i < max; i++) {
        if (net.ip.addr[i / 8] & (0x80 >> (i % 8))) {
            return -1;
        }
    }

    net.prefix = (unsigned) bits;
    *out = net;

    return 0;
}


int
bottle_net_contains(const bottle_net_t *net, const bottle_ip_t *ip)
{
    unsigned             full, rest;
    const unsigned char  *a;

    a = ip->addr;

    if (net->ip.family != ip->family) {
        if (net->ip.family != AF_INET || !bottle_ip_is_mapped(ip)) {
            return 0;
        }

        a = ip->addr + 12;
    }

    full = net->prefix / 8;
    rest = net->prefix % 8;

    if (memcmp(net->ip.addr, a, full) != 0) {
        return 0;
    }

    if (rest == 0) {
        return 1;
    }

    return ((net->ip.addr[full] ^ a[full]) & (0xff00 >> rest) & 0xff) == 0;
}
