#!/usr/bin/perl

# The CONNECT front (stream preread): identity and the 407 challenge,
# routes and ports, IP literal spellings, passthrough of TLS only, raw TCP,
# inspected routes, internal addresses, malformed, oversized and slow heads.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy bottle/)
	->has(qw/dnsmasq openssl socket_ssl_sni/);

$t->write_file_expand('nginx.conf', <<'EOF');

%%TEST_GLOBALS%%

daemon off;

bottle_policy %%TESTDIR%%/policy.json;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;
    resolver_timeout 3s;

    server {
        listen 127.0.0.1:8080;
        bottle_front on;
        bottle_head_timeout 1s;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass $bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;
        location / {
            proxy_pass http://$bottle_upstream$bottle_uri;
        }
    }
}

EOF

my $ca = gen_ca($t, 'ca');
my $crt = gen_cert($t, $ca, 'tls', 'tls.allowed.test', '127.0.0.1');

my $TOKEN = 'alice-token-0123456789';
my $BOB = 'bob-token-0123456789abc';

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [
		{ host => 'tls.allowed.test', port => port(8443),
			passthrough => JSON::PP::true, internal => JSON::PP::true },
		{ host => 'pub.allowed.test', port => port(8443),
			passthrough => JSON::PP::true },
		{ host => '127.0.0.1', port => port(8443),
			passthrough => JSON::PP::true },
		{ host => '::1', port => port(8443),
			passthrough => JSON::PP::true },
		{ host => 'api.allowed.test', internal => JSON::PP::true },
	] },
	{ id => 'bob', token => $BOB, source_ips => [ '10.9.9.9' ],
		routes => [ { host => '127.0.0.1', port => port(8443),
			passthrough => JSON::PP::true } ] },
] });

dns_start($t, port => port(8053), hosts => {
	'tls.allowed.test' => '127.0.0.1',
	'pub.allowed.test' => '127.0.0.1',
	'api.allowed.test' => '127.0.0.1',
	'x.tls.allowed.test' => '127.0.0.1',
	'unlisted.test' => '127.0.0.1',
});

fake_upstream($t, port => 8443, name => 'tls', tls => 1,
	cert => $crt->{cert}, key => $crt->{key});

$t->run()->plan(47);

###############################################################################

my $auth = basic('agent', $TOKEN);

sub connect_req {
	my ($target, %h) = @_;
	my $r = "CONNECT $target HTTP/1.1\r\nHost: $target\r\n";
	$r .= "Proxy-Authorization: $h{auth}\r\n" if $h{auth};
	return $r . "\r\n";
}

sub refusals {
	my ($re) = @_;
	return scalar grep { /bottle refused: .*$re/ }
		split /\n/, $t->read_file('error.log');
}

# identity: the 407 challenge, and the retry on the same connection

my $s = proxy_session(8080);
$s->send(connect_req('tls.allowed.test:' . port(8443)));
my $r = $s->read_response();

like($r, qr/^HTTP\/1\.1 407 Proxy Authentication Required/, 'no token: 407');
like($r, qr/^Proxy-Authenticate: Basic realm="bottle gateway"\r$/m,
	'407 challenge');
like($r, qr/^X-Bottle-Rule: identity\r$/m, '407 names the rule');
like($r, qr/rule: identity/, '407 body gives the reason');

$s->send(connect_req('tls.allowed.test:' . port(8443), auth => $auth));
$r = $s->read_response();
like($r, qr/^HTTP\/1\.1 200 Connection established/,
	'retry on the same connection: 200');

ok($s->start_ssl(SSL_hostname => 'tls.allowed.test',
	SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
	SSL_ca_file => $ca->{cert}), 'TLS through the tunnel, upstream verified');
$s->send("GET /through HTTP/1.1\r\nHost: tls.allowed.test\r\n"
	. "Connection: close\r\n\r\n");
like($s->read_response(), qr/upstream tls ok/, 'passthrough answer');
$s->close();

my ($req) = grep { $_->{target} eq '/through' }
	@{upstream_requests($t, 'tls')};
ok($req, 'upstream got the tunnelled request');
is($req && $req->{sni}, 'tls.allowed.test', 'SNI untouched');

# a new connection with the token at once

$r = proxy_request(8080, connect_req('tls.allowed.test:' . port(8443),
	auth => $auth), timeout => 2);
like($r, qr/^HTTP\/1\.1 200 /, 'token on a new connection: 200');

$r = proxy_request(8080, connect_req('tls.allowed.test:' . port(8443),
	auth => basic('agent', 'wrong-token-0123456789')));
like($r, qr/^HTTP\/1\.1 407 /, 'unknown token: 407');

$r = proxy_request(8080, connect_req('127.0.0.1:' . port(8443),
	auth => basic('agent', $BOB)));
like($r, qr/^HTTP\/1\.1 407 .*not valid from this address/s,
	'token from an address its bottle does not list: 407');

# routes and ports: refused before any upstream contact

my $connects = upstream_connects($t, 'tls');

$r = proxy_request(8080, connect_req('unlisted.test:443', auth => $auth));
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: no_route/s, 'unlisted host: 403');
like($r, qr/not on this bottle's allowlist/, 'unlisted: reason in the body');

$r = proxy_request(8080, connect_req('x.tls.allowed.test:' . port(8443),
	auth => $auth));
like($r, qr/^HTTP\/1\.1 403 .*no_route/s, 'subdomain of a listed host: 403');

$r = proxy_request(8080, connect_req('TLS.Allowed.Test.:' . port(8443),
	auth => $auth), timeout => 2);
like($r, qr/^HTTP\/1\.1 200 /, 'host matched case-insensitively, trailing dot');

$r = proxy_request(8080, connect_req('tls.allowed.test:443', auth => $auth));
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: port/s,
	'listed host, other port: 403');

is(upstream_connects($t, 'tls'), $connects, 'refused: no upstream contact');
ok(!grep({ $_ eq 'unlisted.test' } dns_queries($t)),
	'refused host never resolved');
is(refusals('host="unlisted.test" rule="no_route"'), 1,
	'one log line per refusal');
unlike(join("\n", grep { /^\S+ \S+ \[(?!debug)/ } split /\n/, $t->read_file('error.log')),
	qr/\Q$TOKEN\E/, 'token never logged');

# IP literals in every spelling a client accepts

for my $spelling ('127.0.0.1', '0x7f.0.0.1', '0177.0.0.1', '2130706433',
	'127.1')
{
	$r = proxy_request(8080, connect_req("$spelling:" . port(8443),
		auth => $auth), timeout => 2);
	like($r, qr/^HTTP\/1\.1 200 /, "IP literal $spelling matches 127.0.0.1");
}

for my $spelling ('127.0.0.2', '0x7f.0.0.2', '017700000002') {
	$r = proxy_request(8080, connect_req("$spelling:" . port(8443),
		auth => $auth));
	like($r, qr/^HTTP\/1\.1 403 .*host: 127\.0\.0\.2\r?\n/s,
		"IP literal $spelling is 127.0.0.2: refused");
}

$r = proxy_request(8080, connect_req('[::2]:443', auth => $auth));
like($r, qr/^HTTP\/1\.1 403 .*no_route/s, 'unlisted IPv6 literal: 403');

$r = proxy_request(8080, connect_req('[0:0::1]:9', auth => $auth));
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: port/s,
	'IPv6 literal canonicalised before matching');

$r = proxy_request(8080, connect_req('1.2.3.4.5:443', auth => $auth));
like($r, qr/^HTTP\/1\.1 400 /, 'numeric host that is no address: 400');

# internal addresses: only where the route allows them

$r = proxy_request(8080, connect_req('pub.allowed.test:' . port(8443),
	auth => $auth));
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: address/s,
	'name resolving to loopback without "internal": 403');

# inspected routes fail closed until TLS interception lands

$r = proxy_request(8080, connect_req('api.allowed.test:443', auth => $auth));
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: inspect/s,
	'inspected route: 403');

# only a TLS ClientHello passes a passthrough tunnel

$connects = upstream_connects($t, 'tls');

$s = proxy_session(8080);
$s->send(connect_req('tls.allowed.test:' . port(8443), auth => $auth));
like($s->read_response(), qr/^HTTP\/1\.1 200 /, 'raw tcp: tunnel opens');
$s->send("GET / HTTP/1.1\r\nHost: tls.allowed.test\r\n\r\n");
is($s->read_all(3), '', 'raw tcp: nothing comes back');
ok($s->eof, 'raw tcp: connection closed');

$s = proxy_session(8080);
$s->send(connect_req('tls.allowed.test:' . port(8443), auth => $auth)
	. "SSH-2.0-OpenSSH_9.2\r\n");
like($s->read_all(3), qr/^HTTP\/1\.1 200 [^\n]*\n\r\n\z/,
	'raw tcp sent with the CONNECT: closed after the 200');

is(upstream_connects($t, 'tls'), $connects, 'raw tcp: upstream never dialled');
is(refusals('rule="raw_tcp"'), 2, 'raw tcp refusals logged');

# malformed, oversized and slow heads

$r = proxy_request(8080, "CONNECT tls.allowed.test HTTP/1.1\r\n\r\n");
like($r, qr/^HTTP\/1\.1 400 .*bad_request/s, 'CONNECT without port: 400');

$r = proxy_request(8080, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
like($r, qr/^HTTP\/1\.1 400 .*absolute/s, 'origin-form request: 400');

$r = proxy_request(8080, "CONNECT a.test:443 HTTP/1.1\r\n"
	. ("X-Pad: " . ('a' x 3000) . "\r\n") x 4 . "\r\n");
like($r, qr/^HTTP\/1\.1 400 /, 'head over the size limit: 400');

$r = proxy_request(8080, "CONNECT a.test:443 HTTP/1.1\nHost: a\n\n");
like($r, qr/^HTTP\/1\.1 400 /, 'bare LF line endings: 400');

$r = proxy_request(8080, "CONNECT a.test:443 HTTP/1.1\r\nHost: a\r\n"
	. "Content-Length: 5\r\n\r\nhello");
like($r, qr/^HTTP\/1\.1 400 /, 'CONNECT with a body: 400');

$s = proxy_session(8080);
$s->send("CONNECT tls.allowed.test:443 HTTP/1.1\r\nHost: x");
$r = $s->read_all(4);
like($r, qr/^HTTP\/1\.1 408 .*X-Bottle-Rule: timeout/s,
	'slow client: 408 after bottle_head_timeout');
ok($s->eof, 'slow client: closed');

###############################################################################
