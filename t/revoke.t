#!/usr/bin/perl

# Revocation reaches every open connection (issue 27, items 1 and 4;
# docs/control-plane.md "Open connections").  With the Redis store and
# bottlectl as an operator runs it: a bottle removed, a route removed, a
# token rotated closes the open passthrough tunnels, intercepted tunnels
# idle between requests and HTTP/2 connections with a stream in flight that
# the change no longer allows, at once, each with one log line (rule
# "revoked"); another bottle's tunnel stays open.  A store lost (SIGSTOP)
# closes them, and refuses new requests, bottle_store_stale_max after the
# store was last heard from.

###############################################################################

use warnings;
use strict;

use Test::More;
use IO::Select;
use IO::Socket::IP;
use POSIX qw/ WNOHANG /;
use Time::HiRes qw/ time sleep /;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl http_v2 bottle/)
	->has(qw/dnsmasq openssl socket_ssl_sni/)->has_daemon('curl');

my $RP = port(8090);

$t->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;

bottle_policy redis://127.0.0.1:$RP/2;
bottle_store_stale_max 3s;
bottle_supervise redis://127.0.0.1:$RP/2;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;
    resolver_timeout 3s;

    server {
        listen 127.0.0.1:8080;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        bottle_tls_pass unix:%%TESTDIR%%/tls.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;
    resolver_timeout 3s;

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
            proxy_http_version 1.1;
            proxy_buffering off;
        }
    }

    server {
        listen unix:%%TESTDIR%%/tls.sock ssl http2 proxy_protocol;
        bottle on;
        bottle_ca %%TESTDIR%%/gwca.crt %%TESTDIR%%/gwca.key;

        location / {
            proxy_pass https://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
            proxy_http_version 1.1;
            proxy_buffering off;
            proxy_ssl_server_name on;
            proxy_ssl_name \$bottle_host;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate %%TESTDIR%%/upca.crt;
        }
    }
}

EOF

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'api.allowed.test', 'other.allowed.test');

my $ALICE = 'alice-token-0123456789';
my $ALICE2 = 'alice-token-rotated-98765';
my $BOB = 'bob-token-9876543210xyz';
my $T = JSON::PP::true;

my $EP = port(8444);
my $AP = port(8443);
my $PASS = "pass.allowed.test:$EP";
my $API = "api.allowed.test:$AP";

dns_start($t, port => port(8053), hosts => { map { ($_ => '127.0.0.1') }
	qw/pass.allowed.test api.allowed.test other.allowed.test
	plain.allowed.test/ });

fake_upstream($t, port => 8443, name => 'api', tls => 1,
	cert => $up->{cert}, key => $up->{key});
fake_upstream($t, port => 8081, name => 'plain');

# pass.allowed.test: echoes every byte back, one process a connection
$t->run_daemon(\&echo, $EP);
$t->waitforsocket("127.0.0.1:$EP") or die "no echo server\n";

$t->run();

redis_start($t, port => $RP, db => 2);
wait_for(sub { $t->read_file('error.log') =~ /policy store \S+ read:/ }, 10);

$t->plan(48);

###############################################################################

my $HELLO = slurp("$FindBin::Bin/../fuzz/corpus/hello/openssl_tls13");

sub pass_route { { host => 'pass.allowed.test', port => $EP, internal => $T,
	passthrough => $T } }
sub api_route { { host => 'api.allowed.test', port => $AP, internal => $T,
	methods => [ 'GET' ] } }
sub plain_route { { host => 'plain.allowed.test', port => port(8081),
	internal => $T } }
sub held_route { { host => 'plain.allowed.test', port => port(8081),
	internal => $T, methods => [ 'GET', 'POST' ],
	dlp => { on_match => 'supervise' } } }
sub other_route { { host => 'other.allowed.test', port => $AP,
	internal => $T } }

sub alice {
	my ($token, @routes) = @_;
	return { id => 'alice', token => $token, routes => [ @routes ] };
}

my $BOB_POLICY = { id => 'bob', token => $BOB, routes => [ pass_route() ] };

store_put($t, alice($ALICE, pass_route(), api_route(), other_route()),
	$BOB_POLICY);

# a passthrough tunnel of each bottle, data flowing both ways

my $a = wait_for(sub { echo_tunnel($ALICE) }, 5);
my $b = wait_for(sub { echo_tunnel($BOB) }, 5);
ok($a && $b, 'passthrough tunnels open, data echoed');

# the bottle removed: alice's tunnel closed, bob's open

my $t0 = time();
store_rm($t, 'alice');
my $gone = wait_eof($a, 5);
ok(defined $gone && $gone - $t0 < 2, 'bottle removed: tunnel closed '
	. sprintf('(%.3f s)', ($gone // time()) - $t0));
ok(echoes($b, 'bob-still'), 'other bottle: tunnel still carries data');
is(grep({ /rule="revoked".*reason="the bottle was removed from the policy"/ }
	revoked('alice', 'pass.allowed.test')), 1,
	'log: one line, bottle, host, rule, reason');
like(proxy_request(8080, connect_req($PASS, $ALICE)), qr/^HTTP\/1\.1 407 /,
	'a new CONNECT: 407');

# a plain proxy connection kept alive, idle between requests: closed too

store_put($t, alice($ALICE, pass_route(), plain_route()));
my $plain = wait_for(sub { plain_session($ALICE) }, 5);
ok($plain, 'plain keep-alive connection: a request served');
$t0 = time();
store_rm($t, 'alice');
$gone = wait_eof($plain->{sock}, 5);
ok(defined $gone && $gone - $t0 < 2, 'plain keep-alive connection: closed');
is(grep({ /reason="the bottle was removed from the policy"/ }
	revoked('alice', 'plain.allowed.test')), 1, 'log: plain connection');

# a plain request in flight, its response streaming from the upstream:
# it ends, its connection closes

store_put($t, alice($ALICE, pass_route(), plain_route()));
wait_for(sub { get($ALICE, '/ready') }, qr/ 200 /, 5);
my $ps = plain_stream($ALICE);
ok($ps, 'plain request in flight: its response started');
$t0 = time();
store_rm($t, 'alice');
$gone = wait_eof($ps, 5);
ok(defined $gone && $gone - $t0 < 2, 'plain request in flight: closed');

# a request held for the operator (a token in its body): its bottle
# removed, the request ends and its connection closes, its proposal is
# withdrawn saying why, nothing reaches the upstream

store_put($t, alice($ALICE, pass_route(), held_route()));
wait_for(sub { get($ALICE, '/ready') }, qr/ 200 /, 5);
my $nplain = @{upstream_requests($t, 'plain')};
my $hs = held_post($ALICE);
my $prop = wait_for(sub { (Test::Bottle::bottlectl($t, $t->{_bottle_redis}, 'proposals',
	'--bottle', 'alice') =~ /^(\d+-[0-9a-f]{8}) /m)[0] }, 10);
ok($prop, 'held: a proposal is pending');
$t0 = time();
store_rm($t, 'alice');
$gone = wait_eof($hs, 5);
ok(defined $gone && $gone - $t0 < 2, 'held request: its connection closed');
like(wait_for(sub { redis_cli($t, 'HGET', "bottle:proposal:$prop", 'state') },
	qr/expired/, 5), qr/^expired/, 'held: its proposal withdrawn');
like(redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+'),
	qr/^\{[^\n]*"type":"decision\.resolved"[^\n]*"correlation_id":"\Q$prop\E"[^\n]*no longer allows[^\n]*revoked/m,
	'held: the withdrawal says why');
is(scalar @{upstream_requests($t, 'plain')}, $nplain,
	'held: nothing reached the upstream');
is(grep({ /reason="the bottle was removed from the policy"/ }
	revoked('alice', 'plain.allowed.test')), 3, 'log: held request');

# the route removed: the tunnel to it closed, the bottle's others open

store_put($t, alice($ALICE, pass_route(), api_route(), other_route()));
$a = wait_for(sub { echo_tunnel($ALICE) }, 5);
my $api = intercepted($ALICE, 'api.allowed.test');
ok($a && $api, 'bottle back: passthrough and intercepted tunnels open');

$t0 = time();
store_put($t, alice($ALICE, api_route(), other_route()));
$gone = wait_eof($a, 5);
ok(defined $gone && $gone - $t0 < 2, 'route removed: tunnel closed');
is(grep({ /rule="revoked".*reason="the host is not on this bottle's allowlist/ }
	revoked('alice', 'pass.allowed.test')), 1,
	'log: route removed');
like(ssl_get($api, '/still'), qr/upstream api ok/,
	'intercepted tunnel of a kept route: still served');

# the intercepted tunnel idle between requests: its route removed

$t0 = time();
store_put($t, alice($ALICE, pass_route(), other_route()));
$gone = wait_eof($api, 5);
ok(defined $gone && $gone - $t0 < 2,
	'intercepted keep-alive tunnel: closed between requests');
is(grep({ /rule="revoked".*allowlist/ } revoked('alice', 'api.allowed.test')),
	1, 'log: intercepted tunnel');

# a token rotated: tunnels opened with the old one close

$a = wait_for(sub { echo_tunnel($ALICE) }, 5);
my $other = intercepted($ALICE, 'other.allowed.test');
ok($a && $other, 'tunnels with the old token open');

$t0 = time();
store_put($t, alice($ALICE2, pass_route(), other_route()));
$gone = wait_eof($a, 5);
ok(defined $gone && $gone - $t0 < 2, 'token rotated: passthrough closed');
my $gone2 = wait_eof($other, 5);
ok(defined $gone2 && $gone2 - $t0 < 2, 'token rotated: intercepted closed');
is(grep({ /reason="the bottle's token was rotated"/ }
	revoked('alice', 'pass.allowed.test')), 1, 'log: token rotated');
ok(echoes($b, 'bob-again'), 'other bottle: still open');

$a = echo_tunnel($ALICE2);
ok($a, 'the new token: tunnel opens');

# HTTP/2: a stream in flight (events 100 ms apart for 20 s); its bottle
# removed, the connection ends at once, and no new stream reaches the
# upstream

store_put($t, alice($ALICE2, pass_route(), api_route()));
my $n0 = sse_count();
my $h2 = curl_bg($ALICE2, '--http2', "https://$API/sse?n=200&gap_ms=100");
my $started = wait_for(sub { sse_count() > $n0 }, 5);
ok($started, 'HTTP/2 stream in flight');
sleep 0.5;

$t0 = time();
store_rm($t, 'alice');
my ($done, $out) = curl_wait($h2, 10);
ok(defined $done && $done - $t0 < 2, 'HTTP/2: connection closed '
	. sprintf('(%.3f s)', ($done // time()) - $t0));
like($out, qr/^HTTP\/2 200/m, 'HTTP/2: the response had started');
unlike($out, qr/data: 199/, 'HTTP/2: the stream did not finish');
is(grep({ /rule="revoked".*removed/ } revoked('alice', 'api.allowed.test')),
	1, 'log: HTTP/2 connection');
ok(defined wait_eof($a, 3), 'passthrough of the removed bottle: closed');

# the bottle whose tunnels were cut: a journal record each

like(redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+'),
	qr/^\{[^\n]*"type":"egress\.refusal"[^\n]*"bottle":"alice"[^\n]*"rule":"revoked"/m,
	'journal: refusal records with rule revoked');

# the store lost (SIGSTOP: it stops answering, as a hung store does):
# tunnels close and requests are refused bottle_store_stale_max (3 s)
# after the store was last heard from, not after the loss is noticed

store_put($t, alice($ALICE, pass_route(), plain_route()));
$a = wait_for(sub { echo_tunnel($ALICE) }, 5);
ok($a, 'tunnel open before the loss');
ok(echoes($b, 'bob-before') || ($b = echo_tunnel($BOB)), 'bob open');

my $pid = $t->{_bottle_redis}{pid};
kill 'STOP', $pid;
my $lost = time();

like(get($ALICE, "/before"), qr/ 200 /, 'store lost: served at first');

my $refused;
while (time() < $lost + 8) {
	if (get($ALICE, '/poll') =~ / 407 /) {
		$refused = time();
		last;
	}
	sleep 0.05;
}
$gone = wait_eof($a, 8);
kill 'CONT', $pid;

ok(defined $refused, 'store lost: requests refused');
ok(defined $gone, 'store lost: tunnel closed');
my $rt = ($refused // time()) - $lost;
my $gt = ($gone // time()) - $lost;
diag(sprintf('store lost: requests refused after %.3f s, tunnel closed '
	. 'after %.3f s (bound 3 s from the last answer)', $rt, $gt));
cmp_ok($rt, '>=', 2, 'refused no sooner than the bound');
cmp_ok($rt, '<', 3.9, 'refused at the bound, counted from the last answer');
cmp_ok($gt, '>=', 2, 'tunnel closed no sooner than the bound');
cmp_ok($gt, '<', 3.9, 'tunnel closed at the bound');
ok(defined wait_eof($b, 3), "other bottles' tunnels too");
like($t->read_file('error.log'), qr/policy store \S+ not heard from for \d+ ms: nothing is served, open connections are closed/,
	'log: store lost past the bound');
is(grep({ /reason="the gateway has lost its policy store"/ }
	revoked('alice', 'pass.allowed.test')), 1, 'log: tunnel closed, reason');

# back: served again

like(wait_for(sub { get($ALICE, '/back') }, qr/ 200 /, 10), qr/ 200 /,
	'store back: served');

###############################################################################

sub slurp {
	my ($path) = @_;
	open my $fh, '<:raw', $path or die "$path: $!\n";
	local $/;
	return scalar <$fh>;
}

sub connect_req {
	my ($target, $token) = @_;
	return "CONNECT $target HTTP/1.1\r\nHost: $target\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n\r\n";
}

# a socket with the CONNECT answered 200, or undef
sub open_tunnel {
	my ($target, $token) = @_;
	my $s = IO::Socket::IP->new(PeerAddr => '127.0.0.1',
		PeerPort => port(8080)) or return undef;
	$s->syswrite(connect_req($target, $token));
	my $head = '';
	while ($head !~ /\r\n\r\n/) {
		my $n = read_some($s, 3) // return undef;
		return undef if $n eq '';
		$head .= $n;
	}
	return $head =~ /^HTTP\/1\.1 200 / ? $s : undef;
}

sub echo_tunnel {
	my ($token) = @_;
	my $s = open_tunnel($PASS, $token) or return undef;
	$s->syswrite($HELLO);
	my $got = '';
	while (length $got < length $HELLO) {
		my $n = read_some($s, 3) // return undef;
		return undef if $n eq '';
		$got .= $n;
	}
	return echoes($s, 'ping') ? $s : undef;
}

sub echoes {
	my ($s, $what) = @_;
	return 0 unless $s && $s->syswrite($what);
	my $got = '';
	while (length $got < length $what) {
		my $n = read_some($s, 3);
		return 0 unless defined $n && $n ne '';
		$got .= $n;
	}
	return $got eq $what;
}

# bytes read within $max s: '' at EOF, undef on a timeout
sub read_some {
	my ($s, $max) = @_;
	my $sel = IO::Select->new($s);
	return undef unless $s->can('pending') && $s->pending
		|| $sel->can_read($max);
	my $n = $s->sysread(my $buf, 65536);
	return defined $n ? $buf : '';
}

# the time the peer closed (EOF or reset), or undef after $max s
sub wait_eof {
	my ($s, $max) = @_;
	my $deadline = time() + $max;
	return undef unless $s;
	while (time() <= $deadline) {
		my $n = read_some($s, $deadline - time());
		return time() if defined $n && $n eq '';
		last unless defined $n;
	}
	return undef;
}

# an intercepted tunnel, TLS to the gateway's leaf, one request served
sub intercepted {
	my ($token, $host) = @_;
	my $s = open_tunnel("$host:$AP", $token) or return undef;
	IO::Socket::SSL->start_SSL($s, SSL_hostname => $host,
		SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
		SSL_ca_file => $gwca->{cert}) or return undef;
	my $r = ssl_get($s, '/first', $host);
	return $r =~ /^HTTP\/1\.1 200 / ? $s : undef;
}

sub ssl_get {
	my ($s, $path, $host) = @_;
	return '' unless $s;
	$host //= 'api.allowed.test';
	$s->syswrite("GET $path HTTP/1.1\r\nHost: $host:$AP\r\n\r\n");
	my $r = '';
	while ($r !~ /\r\n\r\n.*upstream \w+ ok\n/s) {
		my $n = read_some($s, 3);
		last unless defined $n && $n ne '';
		$r .= $n;
	}
	return $r;
}

# a plain proxy connection, one request served on it, kept alive
sub plain_session {
	my ($token) = @_;
	my $h = 'plain.allowed.test:' . port(8081);
	my $s = proxy_session(8080);
	$s->send("GET http://$h/keep HTTP/1.1\r\nHost: $h\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n\r\n");
	my $r = $s->read_response() // '';
	return $r =~ /^HTTP\/1\.1 200 / ? $s : undef;
}

# a plain request whose response streams (events 100 ms apart for 20 s)
sub plain_stream {
	my ($token) = @_;
	my $h = 'plain.allowed.test:' . port(8081);
	my $s = IO::Socket::IP->new(PeerAddr => '127.0.0.1',
		PeerPort => port(8080)) or return undef;
	$s->syswrite("GET http://$h/sse?n=200&gap_ms=100 HTTP/1.1\r\n"
		. "Host: $h\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n\r\n");
	my $r = '';
	while ($r !~ /data: event 1\b/) {
		my $n = read_some($s, 3);
		return undef unless defined $n && $n ne '';
		$r .= $n;
	}
	return $r =~ /^HTTP\/1\.1 200 / ? $s : undef;
}

sub held_post {
	my ($token) = @_;
	my $h = 'plain.allowed.test:' . port(8081);
	my $ghp = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)
		[($_ * 11) % 62] } 1 .. 36);
	my $body = "{\"note\": \"deploy with $ghp please\"}";
	my $s = IO::Socket::IP->new(PeerAddr => '127.0.0.1',
		PeerPort => port(8080)) or return undef;
	$s->syswrite("POST http://$h/held HTTP/1.1\r\nHost: $h\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Content-Type: application/json\r\n"
		. 'Content-Length: ' . length($body) . "\r\n\r\n" . $body);
	return $s;
}

sub get {
	my ($token, $path) = @_;
	my $h = 'plain.allowed.test:' . port(8081);
	return proxy_request(8080, "GET http://$h$path "
		. "HTTP/1.1\r\nHost: $h\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

sub revoked {
	my ($bottle, $host) = @_;
	return grep { /bottle refused: bottle="\Q$bottle\E" host="\Q$host\E" rule="revoked"/ }
		split /\n/, $t->read_file('error.log');
}

sub sse_count {
	return scalar grep { $_->{target} =~ /^\/sse/ }
		@{upstream_requests($t, 'api')};
}

sub curl_bg {
	my ($token, @args) = @_;
	my $out = $t->testdir() . '/curl-' . time() . '.out';
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		open STDOUT, '>', $out or die;
		open STDERR, '>>', $out or die;
		exec('curl', '-s', '-S', '-i', '-N', '--max-time', '30',
			'--proxy', "http://agent:$token\@127.0.0.1:" . port(8080),
			'--cacert', $gwca->{cert}, @args) or POSIX::_exit(127);
	}
	return { pid => $pid, out => $out };
}

# the time curl ended and what it printed, or undef after $max s
sub curl_wait {
	my ($c, $max) = @_;
	my $deadline = time() + $max;
	my $done;
	while (time() < $deadline) {
		if (waitpid($c->{pid}, WNOHANG) == $c->{pid}) {
			$done = time();
			last;
		}
		sleep 0.02;
	}
	unless (defined $done) {
		kill 'KILL', $c->{pid};
		waitpid($c->{pid}, 0);
	}
	open my $fh, '<', $c->{out} or return ($done, '');
	local $/;
	return ($done, scalar <$fh> // '');
}

sub wait_for {
	my ($code, $re, $max) = @_;
	if (!ref $re) {
		($max, $re) = ($re, undef);
	}
	my $deadline = time() + ($max // 5);
	my $r;
	while (time() < $deadline) {
		$r = $code->();
		return $r if $r && (!defined $re || $r =~ $re);
		sleep 0.05;
	}
	return $r;
}

sub echo {
	my ($port) = @_;

	my $listen = IO::Socket::IP->new(LocalAddr => '127.0.0.1',
		LocalPort => $port, Listen => 16, ReuseAddr => 1)
		or die "echo: $!\n";

	$SIG{CHLD} = sub { 1 while waitpid(-1, WNOHANG) > 0; };

	for (;;) {
		my $c = $listen->accept() or next;
		my $pid = fork();
		next unless defined $pid;
		if ($pid) {
			close $c;
			next;
		}
		close $listen;
		while (sysread($c, my $buf, 65536)) {
			syswrite($c, $buf);
		}
		POSIX::_exit(0);
	}
}

###############################################################################
