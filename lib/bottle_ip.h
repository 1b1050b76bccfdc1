/*
 * IP literals and networks for the bottle policy and gateway.
 *
 * Host names reach the gateway from the agent, so an address may be
 * spelled in any way a client library or the OS would accept ("127.1",
 * "0x7f000001", "::ffff:127.0.0.1").  Everything here parses strictly and
 * recognises every such spelling, so that policy compares canonical forms
 * and internal addresses cannot be smuggled past a check.
 *
 * No nginx types: shared by the nginx module and the helper daemons.
 */

#ifndef BOTTLE_IP_H
#define BOTTLE_IP_H

#include <stddef.h>
#include <sys/socket.h>


/* longest canonical form plus NUL, as INET6_ADDRSTRLEN */
#define BOTTLE_IP_STRLEN  46


typedef struct {
    int                 family;     /* AF_INET or AF_INET6 */
    unsigned char       addr[16];   /* network order; AF_INET uses 4 */
} bottle_ip_t;


typedef struct {
    bottle_ip_t         ip;
    unsigned            prefix;     /* 0..32 or 0..128 */
} bottle_net_t;


/*
 * Parses an IP literal as a browser (WHATWG URL) or inet_aton() would:
 * IPv4 in 1-4 parts, each decimal, octal (leading 0) or hex (0x), the last
 * part filling the remaining bytes, one trailing dot allowed ("127.1",
 * "0x7f.0.0.1", "017700000001", "2130706433"); IPv6 without brackets,
 * including "::" and embedded dotted IPv4.  Zone ids ("%eth0"), signs,
 * spaces and empty parts are refused.  Returns 0, or -1 if s is not an IP
 * literal.  s need not be NUL-terminated.
 */
int bottle_ip_parse(bottle_ip_t *out, const char *s, size_t len);

/*
 * 1 if a host name must be treated as an IPv4 literal whether or not it
 * parses (WHATWG "ends in a number": the last label, after one trailing
 * dot, is all digits or "0x" followed by hex digits), else 0.  Such a name
 * that does not parse is refused rather than resolved.
 */
int bottle_ip_looks_numeric(const char *s, size_t len);

/*
 * Writes the canonical form: dotted quad, or RFC 5952 for IPv6 (lowercase,
 * longest zero run as "::", "::ffff:a.b.c.d" for v4-mapped).  Returns the
 * length written without the NUL, or 0 if cap is too small (cap of
 * BOTTLE_IP_STRLEN always suffices) or the family is unknown.
 */
size_t bottle_ip_format(char *out, size_t cap, const bottle_ip_t *ip);

/* AF_INET or AF_INET6 sockaddr; a v4-mapped IPv6 address becomes IPv4 */
int bottle_ip_from_sockaddr(bottle_ip_t *out, const struct sockaddr *sa);

/*
 * 1 if the address is not public: unspecified, loopback, RFC 1918,
 * CGNAT 100.64/10, link-local 169.254/16 (cloud metadata), 0/8,
 * 192.0.0/24, benchmarking 198.18/15, multicast, reserved 240/4 and
 * broadcast; IPv6 ::, ::1, fc00::/7, fe80::/10, fec0::/10, ff00::/8,
 * discard 100::/64, local-use NAT64 64:ff9b:1::/48; and v4-mapped,
 * v4-compatible, SIIT, NAT64 64:ff9b::/96, 6to4 2002::/16 and Teredo
 * 2001::/32 addresses judged by the IPv4 address they embed.
 * Documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24,
 * 2001:db8::/32) count as public.  Unknown families count as internal.
 */
int bottle_ip_is_internal(const bottle_ip_t *ip);

/*
 * "10.0.0.0/8", "fd00::/8"; a bare address is a full-length prefix.  The
 * address part is parsed by bottle_ip_parse.  Returns -1 if the prefix is
 * out of range or not plain decimal, or if host bits are set.
 */
int bottle_net_parse(bottle_net_t *out, const char *s, size_t len);

/* 1 if ip is in net; a v4-mapped IPv6 address is matched as IPv4 */
int bottle_net_contains(const bottle_net_t *net, const bottle_ip_t *ip);


#endif /* BOTTLE_IP_H */
