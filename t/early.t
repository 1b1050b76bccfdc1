#!/usr/bin/perl

# nginx's own answers inside a bottle server, and nginx's own log lines:
# requests nginx refuses before the pipeline runs (a malformed or oversized
# head, a duplicate header, a body over client_max_body_size) get a reason,
# X-Bottle-Rule and one refusal line; no query value reaches the error log
# on an early exit (413, 400, 408, the client going away).

###############################################################################

use warnings;
use strict;

use Test::More;
use Time::HiRes qw/ sleep /;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl bottle/)
	->has(qw/dnsmasq openssl/);

$t->write_file_expand('nginx.conf', <<'EOF');

%%TEST_GLOBALS%%

daemon off;

bottle_policy %%TESTDIR%%/policy.json;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:8080;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        bottle_tls_pass unix:%%TESTDIR%%/tls.sock;
        proxy_pass $bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;
    client_header_timeout 2s;
    client_body_timeout 2s;

    upstream bottle_plain {
        bottle_upstream;
    }

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }

    server {
        listen unix:%%TESTDIR%%/tls.sock ssl proxy_protocol;
        bottle on;
        bottle_ca %%TESTDIR%%/gwca.crt %%TESTDIR%%/gwca.key;

        location / {
            proxy_pass https://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_ssl_verify off;
        }
    }

    # not a bottle server: nginx's own page and context, untouched
    server {
        listen 127.0.0.1:8090;

        location / {
            return 200 "plain\n";
        }
    }
}

EOF

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'tls.allowed.test');

my $TOKEN = 'alice-token-0123456789';
my $CANARY = 'CANARY-1b2c3d4e5f607182';
my $QTOKEN = 'qcred7f3a9c2e5b1d4086';
my $T = JSON::PP::true;

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, canary => $CANARY,
		routes => [
		{ host => 'api.allowed.test', port => port(8081), internal => $T,
			methods => [ '*' ] },
		{ host => 'tls.allowed.test', port => port(8443), internal => $T,
			methods => [ '*' ] },
	] },
] });

dns_start($t, port => port(8053), hosts => { map { ("$_.allowed.test"
	=> '127.0.0.1') } qw/api tls/ });

fake_upstream($t, port => 8081, name => 'api');
fake_upstream($t, port => 8443, name => 'tls', tls => 1,
	cert => $up->{cert}, key => $up->{key});

$t->run()->plan(28);

###############################################################################

my $auth = 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n";
my $HOST = 'api.allowed.test:' . port(8081);
my $THOST = 'tls.allowed.test:' . port(8443);
my $Q = "access_token=$QTOKEN&x=$CANARY";

# one request through the front, then the test's on the same connection:
# the front checks the first head itself, nginx parses the ones after it

sub keepalive {
	my ($bytes, %o) = @_;
	my $s = proxy_session(8080);
	$s->send("GET http://$HOST/first HTTP/1.1\r\nHost: $HOST\r\n$auth\r\n");
	my $r = $s->read_response();
	return "first failed: " . ($r // '') unless $r && $r =~ /^HTTP\/1\.1 200/;
	$s->send($bytes);
	$r = $s->read_response(%o);
	$s->close();
	return $r // '';
}

# inside an intercepted tunnel: every request is parsed by nginx

sub in_tunnel {
	my ($bytes, %o) = @_;
	my $s = proxy_session(8080);
	$s->send("CONNECT $THOST HTTP/1.1\r\nHost: $THOST\r\n$auth\r\n");
	my $r = $s->read_response();
	return "connect failed" unless $r && $r =~ /^HTTP\/1\.1 200/;
	return "tls failed" unless $s->start_ssl(SSL_hostname =>
		'tls.allowed.test', SSL_ca_file => $gwca->{cert});
	$s->send($bytes);
	return $s if $o{session};
	$r = $s->read_response(%o);
	$s->close();
	return $r // '';
}

sub refusals {
	my @l = grep { /bottle refused: / } split /\n/, $t->read_file('error.log');
	return scalar @l;
}

sub tail_log {
	my ($from) = @_;
	my $log = $t->read_file('error.log');
	return substr($log, $from);
}

sub log_size { return length $t->read_file('error.log'); }

my $GET = "GET /x HTTP/1.1\r\nHost: $THOST\r\n";
my $n = @{upstream_requests($t, 'tls')};
my $before = refusals();

my $r = in_tunnel($GET . "Authorization: a\r\nAuthorization: b\r\n\r\n");
like($r, qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'duplicate Authorization: 400 with the rule');
like($r, qr/bottle gateway refused this request \(rule: bad_request\).*parser refused the request/s,
	'a reason the agent can read');
unlike($r, qr/<html>/, 'not nginx\'s stock page');
is(refusals(), $before + 1, 'one refusal line');
like($t->read_file('error.log'),
	qr/bottle refused: bottle="alice" host="tls.allowed.test" rule="bad_request" status=400/,
	'the line names the tunnel\'s bottle and host');

like(in_tunnel($GET . "X-A: a\rb\r\n\r\n"),
	qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'a bare CR in a header: 400 with the rule');
like(in_tunnel($GET . "X-A: a\0b\r\n\r\n"),
	qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'a NUL in a header: 400 with the rule');
like(in_tunnel($GET . "X-A: a\r\n folded\r\n\r\n"),
	qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'obs-fold: 400 with the rule');
like(in_tunnel($GET . 'X-Big: ' . ('a' x 65536) . "\r\n\r\n"),
	qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'a 64 KiB header: 400 with the rule');
unlike(in_tunnel($GET . "X-Echo-$CANARY: a\rb\r\n\r\n"), qr/\Q$CANARY\E/,
	'the offending header is not echoed');
like(in_tunnel("GET /\r\n"),
	qr/\Abottle gateway refused this request \(rule: bad_request\).*HTTP\/0\.9/s,
	'HTTP/0.9: refused, with a reason the agent can read');

like(keepalive("GET http://$HOST/x HTTP/1.1\r\nHost: $HOST\r\nHost: $HOST\r\n"
	. "$auth\r\n"),
	qr/^HTTP\/1\.1 400 .*X-Bottle-Rule: bad_request/s,
	'plain, a later request with two Host headers: 400 with the rule');

is(scalar @{upstream_requests($t, 'tls')}, $n,
	'nothing of them reached the upstream');

# early exits leave no query value in the error log

my $from = log_size();

$r = in_tunnel("POST /up?$Q HTTP/1.1\r\nHost: $THOST\r\n"
	. "Content-Length: 100000000\r\n\r\n");
like($r, qr/^HTTP\/1\.1 413 .*X-Bottle-Rule: too_large/s,
	'TLS: a body over client_max_body_size: 413 too_large');
$r = keepalive("POST http://$HOST/up?$Q HTTP/1.1\r\nHost: $HOST\r\n$auth"
	. "Content-Length: 100000000\r\n\r\n");
like($r, qr/^HTTP\/1\.1 413 .*X-Bottle-Rule: too_large/s,
	'plain: a body over client_max_body_size: 413 too_large');
$r = proxy_request(8080, "POST http://$HOST/up?$Q HTTP/1.1\r\nHost: $HOST"
	. "\r\n${auth}Content-Length: 100000000\r\nConnection: close\r\n\r\n");
like($r, qr/^HTTP\/1\.1 413 /, 'plain, first request: 413');

my $log = tail_log($from);
like($log, qr/client intended to send too large body.*request: "POST \/up\?x+ HTTP\/1\.1"/,
	'nginx\'s 413 line is there, without the query');

in_tunnel("GET /bad?$Q HTTP/1.1\r\nHost: $THOST\r\nX-A: a\rb\r\n\r\n");
keepalive("GET http://$HOST/bad?$Q HTTP/1.1\r\nHost: $HOST\r\n"
	. "X-A: a\0b\r\n$auth\r\n");

# 408: half a head, then silence until client_header_timeout

my $s = in_tunnel("GET /slow?$Q HTTP/1.1\r\nHost: $THOST\r\n", session => 1);
ok(ref $s && !defined $s->read_response(timeout => 4),
	'TLS: an unfinished head is closed after client_header_timeout');
$s = proxy_session(8080);
$s->send("GET http://$HOST/first HTTP/1.1\r\nHost: $HOST\r\n$auth\r\n");
$s->read_response();
$s->send("GET http://$HOST/slow?$Q HTTP/1.1\r\nHost: $HOST\r\n");
ok(!defined $s->read_response(timeout => 4),
	'plain: an unfinished head is closed after client_header_timeout');
$s->close();

# the client goes away in the middle of its body

$s = in_tunnel("POST /abort?$Q HTTP/1.1\r\nHost: $THOST\r\n"
	. "Content-Length: 1000\r\n\r\n0123456789", session => 1);
sleep(0.5);
$s->close() if ref $s;
$s = proxy_session(8080);
$s->send("POST http://$HOST/abort?$Q HTTP/1.1\r\nHost: $HOST\r\n$auth"
	. "Content-Length: 1000\r\n\r\n0123456789");
sleep(0.5);
$s->close();
sleep(1);

$log = join "\n", grep { !/\[debug\]/ } split /\n/, tail_log($from);

like($log, qr/client sent invalid header line: "x+$/m,
	'400: nginx\'s line is there, without the query');
like($log, qr/client timed out.*request: "GET http:\S+\/slow\?x+ HTTP/,
	'408: nginx\'s line is there, without the query');
like($log, qr/client prematurely closed connection.*request: "POST \/abort\?x+ HTTP/,
	'client abort: nginx\'s line is there, without the query');
unlike($log, qr/\Q$QTOKEN\E/, 'no query credential in the error log');
unlike(join("\n", grep { !/\[debug\]/ } split /\n/, $t->read_file('error.log')),
	qr/Authorization: [ab]|X-Big: a|X-Echo-CANARY/,
	'no header nginx quoted');
unlike($log, qr/\Q$CANARY\E/, 'no canary in the error log');
unlike($log, qr/(?:GET|POST) [^"]*\?(?!x+[ "])/,
	'every logged request line has its query blanked');

# a server without bottle keeps nginx's own behaviour

like(http("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", port => 8090),
	qr/^HTTP\/1\.1 400 .*<html>/s, 'a non-bottle server: nginx\'s page');
unlike(http("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", port => 8090),
	qr/X-Bottle-Rule/, 'and no bottle header');
