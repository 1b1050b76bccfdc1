#!/usr/bin/perl

# Paths that upstreams read differently from the policy, and credentials in
# the query under other spellings (issue 11, items 7 and 8): dot segments
# behind matrix parameters, double encoding or encoded whitespace are
# refused; '#' is refused in every request (keep-alive, inside a tunnel,
# HTTP/2 :path); query credentials are stripped after ';' and under the
# names frameworks make of them.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl http_v2 bottle/)
	->has(qw/dnsmasq openssl socket_ssl_sni/)->has_daemon('curl');

$t->write_file_expand('nginx.conf', gateway_conf());

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'sec.allowed.test');

my $TOKEN = 'alice-token-0123456789';
my $P = port(8081);
my $S = port(8443);
my $T = JSON::PP::true;
my $PROXY;
my @ALLOW = ({ path => '/public/*' }, { path => '/repos/*/issues' });

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [
		{ host => 'pub.allowed.test', port => $P, internal => $T,
			allow => [ @ALLOW ] },
		{ host => 'q.allowed.test', port => $P, internal => $T },
		{ host => 'sec.allowed.test', port => $S, internal => $T,
			allow => [ @ALLOW ] },
	] },
] });

dns_start($t, port => port(8053), hosts => { map { ($_ => '127.0.0.1') }
	qw/pub.allowed.test q.allowed.test sec.allowed.test/ });

fake_upstream($t, port => 8081, name => 'plain');
fake_upstream($t, port => 8443, name => 'tls', tls => 1,
	cert => $up->{cert}, key => $up->{key});

my @BAD = (
	'/public/..;/admin',
	'/public/..%3b/admin',
	'/public/..%3B/admin',
	'/public/.;/..;/admin',
	'/public/..;jsessionid=1/admin',
	'/public/%252e%252e/admin',
	'/public/%25252e%25252e/admin',
	'/public/..%09/admin',
	'/public/..%2509/admin',
	'/public/%20..%20/admin',
	'/public/.%2e/admin',
	'/public/..%2fadmin',
	'/public/..%252fadmin',
	'/public/..%5cadmin',
	'/public/..\\admin',
	'/public/x\\..\\..\\admin',
	'/public/%c0%ae%c0%ae/admin',
	'/public/%2525252e%2525252e/admin',
	'/public/...;v=1/admin',
);

my @GOOD = (
	'/public/a..b/x',
	'/public/.well-known/x',
	'/public/x;v=1',
	'/public/%2e%2e.x/y',
	'/public/x%20y/z',
	'/public/main...feature',
);

# query: what the agent sends, what the upstream must receive
my @QUERY = (
	[ 'x=1;access_token=K', 'x=1' ],
	[ 'access_token=K;x=1', 'x=1' ],
	[ 'x=1;token=K&y=2', 'x=1&y=2' ],
	[ 'access.token=K&x=1', 'x=1' ],
	[ 'access+token=K&x=1', 'x=1' ],
	[ 'access%20token=K&x=1', 'x=1' ],
	[ '%20access_token=K&x=1', 'x=1' ],
	[ '++access_token=K&x=1', 'x=1' ],
	[ 'access_token[]=K&x=1', 'x=1' ],
	[ 'access_token%5B%5D=K&x=1', 'x=1' ],
	[ 'Access_Token[a]=K&x=1', 'x=1' ],
	[ 'access[token=K&x=1', 'x=1' ],
	[ 'API.KEY=K&private+token=K&Private.Token[0]=K&x=1', 'x=1' ],
	[ ('%20' x 40) . 'apikey=K&x=1', 'x=1' ],
	[ 'x=1;y=2&z=%3B', 'x=1;y=2&z=%3B' ],
	[ 'tokens=1&my_key=2&key_id=3&a.b=4', 'tokens=1&my_key=2&key_id=3&a.b=4' ],
);

$t->run()->plan(2 * @BAD + 2 * @GOOD + @QUERY + 19);

###############################################################################

my $auth = 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n";
my $PUB = "http://pub.allowed.test:$P";

sub req {
	my ($url, %o) = @_;
	my ($hostport) = $url =~ m!^\w+://([^/?]+)!;
	return proxy_request(8080, "GET $url HTTP/1.1\r\nHost: $hostport\r\n"
		. "Connection: close\r\n$auth\r\n");
}

sub status {
	my ($r) = @_;
	return $r =~ m!^HTTP/[\d.]+ (\d+)! ? $1 : 0;
}

sub targets {
	my ($name) = @_;
	return [ map { $_->{target} } @{upstream_requests($t, $name)} ];
}

# item 7: dot segments in every spelling, plain HTTP

for my $path (@BAD) {
	my $r = req("$PUB$path");
	like($r, qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
		"$path: 400 bad_request");
	ok(!grep({ index($_, $path) >= 0 } @{targets('plain')}),
		"$path: nothing upstream");
}

for my $path (@GOOD) {
	my $r = req("$PUB$path");
	is(status($r), 200, "$path: allowed");
	is(targets('plain')->[-1], $path, "$path: upstream got it as sent");
}

# '#' on a keep-alive connection's second request

my $n = @{targets('plain')};
my $s = proxy_session(8080);
$s->send("GET $PUB/repos/x/issues HTTP/1.1\r\nHost: pub.allowed.test:$P\r\n"
	. "$auth\r\n");
like($s->read_response(), qr/^HTTP\/1\.1 200 /, 'keep-alive: first request');
$s->send("GET $PUB/repos/x/admin#/issues HTTP/1.1\r\n"
	. "Host: pub.allowed.test:$P\r\n$auth\r\n");
like($s->read_response() // '',
	qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'keep-alive: # in the second request refused');
$s->close();
is(@{targets('plain')}, $n + 1, 'keep-alive: only the first went upstream');

$s = proxy_session(8080);
$s->send("GET $PUB/public/x HTTP/1.1\r\nHost: pub.allowed.test:$P\r\n"
	. "$auth\r\n");
$s->read_response();
$s->send("GET $PUB/public/x?a=1#frag HTTP/1.1\r\n"
	. "Host: pub.allowed.test:$P\r\n$auth\r\n");
like($s->read_response() // '', qr/^HTTP\/1\.1 400 /,
	'keep-alive: # in the query refused');
$s->close();

# '#' and dot segments inside an HTTPS tunnel, HTTP/1.1 and HTTP/2

sub tunnel {
	my $s = proxy_session(8080);
	$s->send("CONNECT sec.allowed.test:$S HTTP/1.1\r\n"
		. "Host: sec.allowed.test:$S\r\n$auth\r\n");
	return undef unless ($s->read_response() // '') =~ /^HTTP\/1\.1 200 /;
	return undef unless $s->start_ssl(SSL_hostname => 'sec.allowed.test',
		SSL_verify_mode => 0);
	return $s;
}

$s = tunnel();
$s->send("GET /repos/x/issues HTTP/1.1\r\nHost: sec.allowed.test:$S\r\n\r\n")
	if $s;
like($s ? $s->read_response() : '', qr/^HTTP\/1\.1 200 /,
	'tunnel: allowed path');
$s->send("GET /repos/x/admin#/issues HTTP/1.1\r\n"
	. "Host: sec.allowed.test:$S\r\n\r\n") if $s;
like($s ? $s->read_response() // '' : '',
	qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'tunnel: # refused');
$s->close() if $s;

$s = tunnel();
$s->send("GET /repos/x/admin#/issues HTTP/1.1\r\n"
	. "Host: sec.allowed.test:$S\r\n\r\n") if $s;
like($s ? $s->read_response() // '' : '', qr/^HTTP\/1\.1 400 /,
	'tunnel: # in the first request refused');
$s->close() if $s;

$s = tunnel();
$s->send("GET /public/..;/admin HTTP/1.1\r\n"
	. "Host: sec.allowed.test:$S\r\nConnection: close\r\n\r\n") if $s;
like($s ? $s->read_response() // '' : '', qr/^HTTP\/1\.1 400 /,
	'tunnel: matrix dot segment refused');
$s->close() if $s;

# plain HTTP inside a tunnel of an inspected route: the second request

$n = @{targets('plain')};
$s = proxy_session(8080);
$s->send("CONNECT pub.allowed.test:$P HTTP/1.1\r\n"
	. "Host: pub.allowed.test:$P\r\n$auth\r\n");
$s->read_response();
$s->send("GET /public/x?a=1;access_token=K HTTP/1.1\r\n"
	. "Host: pub.allowed.test:$P\r\n\r\n");
like($s->read_response() // '', qr/^HTTP\/1\.1 200 /,
	'plain tunnel: first request');
$s->send("GET /repos/x/admin#/issues HTTP/1.1\r\n"
	. "Host: pub.allowed.test:$P\r\n\r\n");
like($s->read_response() // '',
	qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'plain tunnel: # in the second request refused');
$s->close();
is(join(' ', @{targets('plain')}[$n .. $#{targets('plain')}]),
	'/public/x?a=1', 'plain tunnel: credential after ; stripped, no admin');

$PROXY = "http://agent:$TOKEN\@127.0.0.1:" . port(8080);

sub curl {
	my (@args) = @_;
	open my $fh, '-|', 'curl', '-s', '-S', '-i', '--max-time', '10',
		'--proxy', $PROXY, '--cacert', $gwca->{cert}, @args
		or die "curl: $!";
	local $/;
	my $out = <$fh>;
	close $fh;
	return $out // '';
}

my $SEC = "https://sec.allowed.test:$S";

like(curl('--http2', "$SEC/repos/x/issues"), qr/^HTTP\/2 200 /m,
	'HTTP/2: allowed path');
like(curl('--http2', '--request-target', '/repos/x/admin#/issues',
	"$SEC/"), qr/^HTTP\/2 400 .*x-bottle-rule: bad_request/msi,
	'HTTP/2: # in :path refused');
like(curl('--http2', '--path-as-is', "$SEC/public/..;/admin"),
	qr/^HTTP\/2 400 /m, 'HTTP/2: matrix dot segment refused');
ok(!grep({ /admin/ } @{targets('tls')}), 'tunnels: nothing for admin upstream');

# the refusal is logged once, without the path

my $log = $t->read_file('error.log');
my @lines = grep { /bottle refused: .*rule="bad_request"/ } split /\n/, $log;
# @BAD, two on keep-alive, four in HTTP/1.1 tunnels, two over HTTP/2
is(scalar @lines, @BAD + 8, 'each refusal logged once');
ok(!grep({ /admin/ } @lines), 'the refused path is not in the log line');

# item 8: query credentials after ';' and under mangled names

for my $c (@QUERY) {
	my ($sent, $want) = @$c;
	req("http://q.allowed.test:$P/q?$sent");
	is(targets('plain')->[-1], "/q?$want", "query $sent");
}

like(curl('--http2', "$SEC/public/q?x=1;access.token=K&y=2"),
	qr/^HTTP\/2 200 /m, 'HTTP/2: query with a mangled credential');
is(targets('tls')->[-1], '/public/q?x=1&y=2',
	'HTTP/2: mangled credential stripped');

###############################################################################
