/*
 * bottle_ip: every spelling of an address, refusals, canonical output,
 * internal ranges and networks.
 */

#define _POSIX_C_SOURCE  200809L

#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "tap.h"
#include "bottle_ip.h"


/* canonical form of s, or "(invalid)" */
static const char *
canon(const char *s)
{
    static char  buf[BOTTLE_IP_STRLEN];
    bottle_ip_t  ip;

    if (bottle_ip_parse(&ip, s, strlen(s)) != 0) {
        return "(invalid)";
    }

    if (bottle_ip_format(buf, sizeof(buf), &ip) == 0) {
        return "(unformattable)";
    }

    return buf;
}


static int
internal(const char *s)
{
    bottle_ip_t  ip;

    if (bottle_ip_parse(&ip, s, strlen(s)) != 0) {
        return -1;
    }

    return bottle_ip_is_internal(&ip);
}


static int
in_net(const char *net, const char *addr)
{
    bottle_net_t  n;
    bottle_ip_t   ip;

    if (bottle_net_parse(&n, net, strlen(net)) != 0
        || bottle_ip_parse(&ip, addr, strlen(addr)) != 0)
    {
        return -1;
    }

    return bottle_net_contains(&n, &ip);
}


static int
net_ok(const char *s)
{
    bottle_net_t  n;

    return bottle_net_parse(&n, s, strlen(s)) == 0;
}


static void
test_ipv4_spellings(void)
{
    size_t       i;
    const char  *loopback[] = {
        "127.0.0.1", "127.1", "0x7f000001", "017700000001", "2130706433",
        "0177.0.0.1", "0x7f.1", "0x7F.0.0.1", "127.0.1", "0x7f.0.0x0.1",
        "127.0.0.1.", "0000177.0.0.01"
    };

    for (i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
        is_str(canon(loopback[i]), "127.0.0.1", "\"%s\" is 127.0.0.1",
               loopback[i]);
    }

    is_str(canon("0"), "0.0.0.0", "\"0\" is 0.0.0.0");
    is_str(canon("4294967295"), "255.255.255.255", "32-bit maximum");
    is_str(canon("1.2.65535"), "1.2.255.255", "16-bit last part");
    is_str(canon("10.0x10000"), "10.1.0.0", "24-bit hex last part");
    is_str(canon("0x00000000000000000000001"), "0.0.0.1", "long zero run");
}


static void
test_ipv4_invalid(void)
{
    size_t       i;
    bottle_ip_t  ip;
    const char  *bad[] = {
        "256.1.1.1", "1.2.3.4.5", "0x", "08", "1..2", "", ".1.2.3",
        "4294967296", "1.2.3.256", "1.2.65536", "0x100.1", "1.2.3.4..",
        "09.1.1.1", "1.2.3.-4", "+1.2.3.4", " 1.2.3.4", "1.2.3.4 ",
        "1.2.3.0x", "0xg", "example.com", "1.2.3.4/8", "."
    };

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        is_str(canon(bad[i]), "(invalid)", "\"%s\" refused", bad[i]);
    }

    ok(bottle_ip_parse(&ip, "1.2.3.4\0" "5", 9) != 0, "embedded NUL refused");
    ok(bottle_ip_parse(&ip, "::1\0" "1", 5) != 0, "embedded NUL in v6 refused");
}


static void
test_ipv6(void)
{
    bottle_ip_t  ip;

    is_str(canon("::1"), "::1", "::1");
    is_str(canon("::"), "::", "::");
    is_str(canon("0:0:0:0:0:0:0:1"), "::1", "long ::1 compressed");
    is_str(canon("::ffff:127.0.0.1"), "::ffff:127.0.0.1", "v4-mapped");
    is_str(canon("::FFFF:7F00:1"), "::ffff:127.0.0.1", "v4-mapped in hex");
    is_str(canon("64:ff9b::7f00:1"), "64:ff9b::7f00:1", "NAT64");
    is_str(canon("2001:DB8:0:0:1:0:0:1"), "2001:db8::1:0:0:1",
           "first longest run compressed");
    is_str(canon("2001:db8:0:1:1:1:1:1"), "2001:db8:0:1:1:1:1:1",
           "single zero group not compressed");
    is_str(canon("fe80::1%eth0"), "(invalid)", "zone id refused");
    is_str(canon("[::1]"), "(invalid)", "brackets refused");
    is_str(canon("1:2:3:4:5:6:7:8:9"), "(invalid)", "nine groups refused");
    is_str(canon("::ffff:127.1"), "(invalid)", "short embedded IPv4 refused");
    is_str(canon("12345::"), "(invalid)", "five-digit group refused");
    is_str(canon(":::"), "(invalid)", "::: refused");

    ok(bottle_ip_parse(&ip, "::1", 3) == 0 && ip.family == AF_INET6,
       "::1 is AF_INET6");
    ok(bottle_ip_parse(&ip, "127.0.0.1xyz", 9) == 0 && ip.addr[3] == 1,
       "length bounds the input");
}


static void
test_looks_numeric(void)
{
    is_int(bottle_ip_looks_numeric("1.2.3.4.5", 9), 1, "1.2.3.4.5 numeric");
    is_int(bottle_ip_looks_numeric("foo.0x", 6), 1, "foo.0x numeric");
    is_int(bottle_ip_looks_numeric("foo.08", 6), 1, "foo.08 numeric");
    is_int(bottle_ip_looks_numeric("foo.123.", 8), 1, "trailing dot numeric");
    is_int(bottle_ip_looks_numeric("0x7f.1", 6), 1, "0x7f.1 numeric");
    is_int(bottle_ip_looks_numeric("1.2.3.com", 9), 0, "1.2.3.com not");
    is_int(bottle_ip_looks_numeric("foo.0xg", 7), 0, "foo.0xg not");
    is_int(bottle_ip_looks_numeric("example.com", 11), 0, "example.com not");
    is_int(bottle_ip_looks_numeric(".", 1), 0, "dot alone not");
}


static void
test_internal(void)
{
    size_t       i;
    const char  *in[] = {
        "0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.255.254", "10.1.2.3",
        "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1",
        "100.127.255.255", "169.254.169.254", "169.254.0.1", "192.0.0.8",
        "198.18.0.1", "198.19.255.255", "224.0.0.1", "239.255.255.250",
        "240.0.0.1", "255.255.255.255", "::", "::1", "fc00::1", "fd12::1",
        "fe80::1", "febf::1", "fec0::1", "ff02::1", "::ffff:127.0.0.1",
        "::ffff:169.254.169.254", "::10.0.0.1", "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:7f00:1::",
        "2002:c0a8:101::1", "2001:0:4136:e378:8000:63bf:f5ff:fffe",
        "::ffff:0:a00:1", "100::1", "0x7f.1"
    };
    const char  *pub[] = {
        "8.8.8.8", "1.1.1.1", "192.0.2.1", "198.51.100.7", "203.0.113.9",
        "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255",
        "169.253.1.1", "198.20.0.1", "223.255.255.255", "192.0.1.1",
        "2606:4700::1111", "2001:db8::1", "::ffff:8.8.8.8",
        "64:ff9b::808:808", "2002:808:808::1",
        "2001:0:4136:e378:8000:63bf:f7f7:f7f7", "fbff::1"
    };
    bottle_ip_t  odd;

    for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        is_int(internal(in[i]), 1, "%s is internal", in[i]);
    }

    for (i = 0; i < sizeof(pub) / sizeof(pub[0]); i++) {
        is_int(internal(pub[i]), 0, "%s is public", pub[i]);
    }

    memset(&odd, 0, sizeof(odd));
    odd.family = 12345;
    is_int(bottle_ip_is_internal(&odd), 1, "unknown family is internal");
}


static void
test_sockaddr(void)
{
    struct sockaddr_in   sin;
    struct sockaddr_in6  sin6;
    bottle_ip_t          ip;
    char                 buf[BOTTLE_IP_STRLEN];

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.5", &sin.sin_addr);
    ok(bottle_ip_from_sockaddr(&ip, (struct sockaddr *) &sin) == 0
       && ip.family == AF_INET
       && bottle_ip_format(buf, sizeof(buf), &ip) > 0
       && strcmp(buf, "192.0.2.5") == 0, "sockaddr_in");

    memset(&sin6, 0, sizeof(sin6));
    sin6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::ffff:10.0.0.7", &sin6.sin6_addr);
    ok(bottle_ip_from_sockaddr(&ip, (struct sockaddr *) &sin6) == 0
       && ip.family == AF_INET
       && bottle_ip_format(buf, sizeof(buf), &ip) > 0
       && strcmp(buf, "10.0.0.7") == 0, "v4-mapped sockaddr_in6 is IPv4");

    inet_pton(AF_INET6, "2001:db8::7", &sin6.sin6_addr);
    ok(bottle_ip_from_sockaddr(&ip, (struct sockaddr *) &sin6) == 0
       && ip.family == AF_INET6
       && bottle_ip_format(buf, sizeof(buf), &ip) > 0
       && strcmp(buf, "2001:db8::7") == 0, "sockaddr_in6");

    is_int(bottle_ip_format(buf, 5, &ip), 0, "format refuses a short buffer");
}


static void
test_nets(void)
{
    is_int(in_net("10.0.0.0/8", "10.200.1.2"), 1, "10/8 contains 10.200.1.2");
    is_int(in_net("10.0.0.0/8", "11.0.0.1"), 0, "10/8 lacks 11.0.0.1");
    is_int(in_net("fd00::/8", "fd12:3456::1"), 1, "fd00::/8 contains fd12::");
    is_int(in_net("fd00::/8", "fe00::1"), 0, "fd00::/8 lacks fe00::1");
    is_int(in_net("192.0.2.7", "192.0.2.7"), 1, "bare address matches itself");
    is_int(in_net("192.0.2.7", "192.0.2.8"), 0, "bare address is /32");
    is_int(in_net("0.0.0.0/0", "203.0.113.1"), 1, "/0 contains everything");
    is_int(in_net("172.16.0.0/12", "172.31.1.1"), 1, "/12 partial byte in");
    is_int(in_net("172.16.0.0/12", "172.32.1.1"), 0, "/12 partial byte out");
    is_int(in_net("10.0.0.0/8", "::ffff:10.1.1.1"), 1, "v4 net, mapped ip");
    is_int(in_net("10.0.0.0/8", "fd00::1"), 0, "family mismatch");
    is_int(in_net("2001:db8::/33", "2001:db8:7fff::1"), 1, "/33 in");
    is_int(in_net("2001:db8::/33", "2001:db8:8000::1"), 0, "/33 out");

    ok(!net_ok("10.0.0.1/8"), "host bits set refused");
    ok(!net_ok("10.0.0.0/33"), "prefix too long refused");
    ok(!net_ok("fd00::/129"), "IPv6 prefix too long refused");
    ok(!net_ok("10.0.0.0/08"), "leading zero prefix refused");
    ok(!net_ok("10.0.0.0/"), "empty prefix refused");
    ok(!net_ok("10.0.0.0/-1"), "negative prefix refused");
    ok(!net_ok("10.0.0.0/8/8"), "two slashes refused");
    ok(!net_ok("foo/8"), "non-address refused");
    ok(net_ok("::/0"), "::/0 accepted");
}


int
main(void)
{
    test_ipv4_spellings();
    test_ipv4_invalid();
    test_ipv6();
    test_looks_numeric();
    test_internal();
    test_sockaddr();
    test_nets();

    return done_testing();
}
