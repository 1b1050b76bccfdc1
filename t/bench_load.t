#!/usr/bin/perl

# bench/load.c, the bench's load generator (bottle-load): built with the
# command its head comment gives, run against t/e2e/load_peer.py (a TLS and
# a plain HTTP/1.1 server and a CONNECT proxy on loopback, which count what
# they see).  Keep-alive really keeps connections, the proxy gets CONNECT
# with the credentials, every way a response can end is read, the counts
# and the phases are right, and bad usage exits 2.  Standalone: no nginx.

###############################################################################

use warnings;
use strict;

use Test::More;

use File::Temp qw/ tempdir /;
use FindBin;
use IO::Socket::INET;
use JSON::PP qw/ decode_json /;
use MIME::Base64 qw/ encode_base64 /;
use Time::HiRes qw/ time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $SRC = "$FindBin::Bin/../bench/load.c";
my $PEER = "$FindBin::Bin/e2e/load_peer.py";

plan(skip_all => 'no cc') unless `cc --version 2>/dev/null`;
plan(skip_all => 'no python3') unless `python3 --version 2>&1` =~ /^Python 3/;
plan(skip_all => 'no openssl') unless `openssl version 2>/dev/null`;
plan(skip_all => 'no OpenSSL headers')
	unless grep { -f "$_/openssl/ssl.h" } qw{ /usr/include /usr/local/include };

my $d = tempdir('bench_load_XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $bin = "$d/bottle-load";

my $cc = `cc -std=gnu99 -O2 -Wall -Wextra -Werror -o $bin $SRC -lssl -lcrypto 2>&1`;
is($?, 0, 'builds warning-free with the documented command') or diag($cc);
BAIL_OUT('bottle-load did not build') unless -x $bin;

system('openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 '
	. "-nodes -keyout $d/key.pem -out $d/crt.pem -days 1 -subj /CN=localhost "
	. '>/dev/null 2>&1') == 0 or die "openssl req failed\n";

# a global handle: a file-scoped lexical one would be closed, waiting for
# the peer, before END can stop it
our $peer;
my $peer_pid = open($peer, '-|', 'python3', $PEER, '--cert', "$d/crt.pem",
	'--key', "$d/key.pem", '--proxy-auth', 'agent:s3cret',
	'--lifetime', 60) or die "cannot start $PEER: $!\n";
my $ports = decode_json(scalar(<$peer>) // die "$PEER said nothing\n");

END {
	local $?;
	# the peer's own pid: python3 may be a wrapper that runs it
	kill 'TERM', $ports->{pid} if $ports && $ports->{pid};
	if ($peer_pid) {
		kill 'TERM', $peer_pid;
		waitpid($peer_pid, 0);
	}
}

my $TLS = "127.0.0.1:$ports->{tls}";
my $PLAIN = "127.0.0.1:$ports->{plain}";
my @PROXY = ('-x', "http://agent:s3cret\@127.0.0.1:$ports->{proxy}");

###############################################################################

# usage errors and setup failures

is(load_rc(), 2, 'no arguments: exit 2');
is(load_rc('-c', 0, "http://$PLAIN/cl"), 2, '-c 0: exit 2');
is(load_rc('-c', 2, "ftp://$PLAIN/cl"), 2, 'an ftp URL: exit 2');
is(load_rc('-c', 2, '--bogus', "http://$PLAIN/cl"), 2, 'unknown option: exit 2');
is(load_rc('-c', 2, '-z', 'soon', "http://$PLAIN/cl"), 2, 'bad -z: exit 2');
is(load_rc('-c', 2, '-D', "$d/none", "http://$PLAIN/cl"), 1,
	'unreadable body file: exit 1');

# keep-alive over TLS, straight to the server

peer('reset');
my $r = load('-c', 4, '-z', 1, '-H', 'X-Test: one', "https://$TLS/cl");
my $s = peer('stats');
is($r->{rc}, 0, 'keep-alive: exit 0');
is_deeply($r->{lines}, [qw/ window end /], 'window and end, then the JSON');
is($s->{connections}{tls}, 4, 'keep-alive: 4 connections at the server');
is($r->{j}{connections}, 4, 'keep-alive: 4 connections counted');
is($r->{j}{connections_total}, 4, 'keep-alive: 4 connections in all');
cmp_ok($r->{j}{requests}, '>', 4, 'keep-alive: requests made');
is($s->{requests}, $r->{j}{requests_total},
	'keep-alive: the server counted every request the client made');
cmp_ok($r->{j}{requests_total} - $r->{j}{requests}, '<=', 4,
	'keep-alive: at most one request per connection after the window');
is($r->{j}{status}{200}, $r->{j}{requests}, 'keep-alive: all 200');
is($r->{j}{errors}, 0, 'keep-alive: no errors');
is($r->{j}{rps}, sprintf('%.1f', $r->{j}{requests} / $r->{j}{seconds}) + 0,
	'keep-alive: rps');
ok($r->{j}{p50_ms} > 0 && $r->{j}{p50_ms} <= $r->{j}{p90_ms}
	&& $r->{j}{p90_ms} <= $r->{j}{p99_ms}
	&& $r->{j}{p99_ms} <= $r->{j}{max_ms}, 'keep-alive: percentiles');
cmp_ok($r->{j}{bytes_in}, '>=', 1024 * $r->{j}{requests},
	'keep-alive: bytes in');
is_deeply($s->{sni}, [(undef) x 4], 'no SNI for an IP address');
my $head = $s->{first}[0]{head};
like($head, qr{^GET /cl HTTP/1\.1\r\nHost: \Q$TLS\E\r\n}, 'request line, Host');
like($head, qr{\r\nUser-Agent: bottle-load\r\n}, 'User-Agent');
like($head, qr{\r\nX-Test: one\r\n}, '-H header');
unlike($head, qr{Connection:|Content-Length:}i, 'no Connection, no length');

# warm-up: the connections stay open across the boundary

peer('reset');
my $t0 = time();
$r = load('-c', 4, '-w', 0.5, '-z', 0.5, "http://$PLAIN/cl");
$s = peer('stats');
cmp_ok(time() - $t0, '>=', 1, 'warm-up and window both ran');
is_deeply($r->{lines}, [qw/ window end /], 'warm-up: window, end, JSON');
is($r->{j}{connections}, 0, 'warm-up: no connection opened in the window');
is($r->{j}{connections_total}, 4, 'warm-up: 4 connections in all');
is($s->{connections}{plain}, 4, 'warm-up: 4 connections at the server');
is($s->{requests}, $r->{j}{requests_total}, 'warm-up: requests in all');
cmp_ok($r->{j}{requests_total}, '>', $r->{j}{requests} + 4,
	'warm-up: its requests are not in the window');

# through the proxy, credentials, SNI

peer('reset');
$r = load('-c', 4, '-z', 0.5, @PROXY, "https://localhost:$ports->{tls}/cl");
$s = peer('stats');
my $basic = 'Basic ' . encode_base64('agent:s3cret', '');
is(scalar @{$s->{connects}}, 4, 'proxy: 4 CONNECTs');
is_deeply([ map { $_->{line} } @{$s->{connects}} ],
	[ ("CONNECT localhost:$ports->{tls} HTTP/1.1") x 4 ], 'proxy: CONNECT line');
is_deeply([ map { $_->{auth} } @{$s->{connects}} ], [ ($basic) x 4 ],
	'proxy: Proxy-Authorization');
is_deeply($s->{sni}, [ ('localhost') x 4 ], 'proxy: SNI is the host');
like($s->{first}[0]{head}, qr{\r\nHost: localhost:$ports->{tls}\r\n},
	'proxy: Host');
is($r->{j}{errors}, 0, 'proxy: no errors');
cmp_ok($r->{j}{status}{200}, '>', 4, 'proxy: requests kept alive');
is($s->{requests}, $r->{j}{requests_total}, 'proxy: requests in all');

peer('reset');
$r = load('-c', 2, '-z', 0.5, @PROXY, "http://$PLAIN/cl");
$s = peer('stats');
is(scalar @{$s->{connects}}, 2, 'proxy, http URL: CONNECT too');
is($s->{connections}{plain}, 2, 'proxy, http URL: plain in the tunnel');
ok($r->{j}{status}{200} && !$r->{j}{errors}, 'proxy, http URL: requests');

peer('reset');
$r = load('-c', 2, '-z', 0.5, '-x', "http://agent:wrong\@127.0.0.1:$ports->{proxy}",
	"https://$TLS/cl");
is($r->{rc}, 0, 'wrong credentials: exit 0');
is($r->{j}{requests}, 0, 'wrong credentials: no responses');
cmp_ok($r->{j}{errors}, '>', 0, 'wrong credentials: errors');
is($r->{j}{error_kinds}{'CONNECT 407'}, $r->{j}{errors},
	'wrong credentials: CONNECT 407');

# every way a response ends

for my $u ("https://$TLS/chunked", "http://$PLAIN/chunked") {
	peer('reset');
	$r = load('-c', 4, '-z', 0.5, $u);
	$s = peer('stats');
	ok($r->{j}{requests} > 4 && $r->{j}{status}{200} == $r->{j}{requests},
		"chunked ($u): read");
	is($r->{j}{errors}, 0, "chunked ($u): no errors");
	is($s->{connections}{tls} + $s->{connections}{plain}, 4,
		"chunked ($u): kept alive");
}

peer('reset');
$r = load('-c', 4, '-z', 0.5, "https://$TLS/eof");
$s = peer('stats');
ok($r->{j}{requests} > 4 && $r->{j}{status}{200} == $r->{j}{requests},
	'body until close: read');
is($r->{j}{errors}, 0, 'body until close: no errors');
is($s->{connections}{tls}, $s->{requests}, 'body until close: a connection each');

peer('reset');
$r = load('-c', 4, '-z', 0.5, "https://$TLS/close");
$s = peer('stats');
is($r->{j}{errors}, 0, 'Connection: close: no errors');
is($s->{connections}{tls}, $s->{requests}, 'Connection: close: a connection each');
is($r->{j}{connections_total}, $r->{j}{requests_total},
	'Connection: close: counted');

peer('reset');
$r = load('-c', 4, '-z', 0.5, '--no-keepalive', "https://$TLS/cl");
$s = peer('stats');
ok($r->{j}{requests} > 4 && !$r->{j}{errors}, '--no-keepalive: requests');
is($s->{connections}{tls}, $s->{requests}, '--no-keepalive: a connection each');
is($r->{j}{connections_total}, $r->{j}{requests_total},
	'--no-keepalive: counted');
like($s->{first}[0]{head}, qr{\r\nConnection: close\r\n},
	'--no-keepalive: Connection: close');

# a body, a status

my $body = join('', map { chr(32 + ($_ * 7) % 90) } 1 .. 70001);
open my $fh, '>', "$d/body.json" or die; print $fh $body; close $fh;
peer('reset');
$r = load('-c', 4, '-z', 0.5, '-m', 'POST', '-D', "$d/body.json",
	"https://$TLS/cl");
$s = peer('stats');
ok($r->{j}{requests} > 4 && !$r->{j}{errors}, 'POST: requests');
is_deeply($s->{body_lengths}, { 70001 => $s->{requests} },
	'POST: every body arrived whole');
like($s->{first}[0]{head}, qr{^POST /cl HTTP/1\.1\r\n}, 'POST: method');
like($s->{first}[0]{head},
	qr{\r\nContent-Type: application/json\r\nContent-Length: 70001\r\n},
	'POST: Content-Type, Content-Length');

peer('reset');
$r = load('-c', 2, '-z', 0.5, "https://$TLS/status/503");
cmp_ok($r->{j}{status}{503}, '>', 0, '503 counted');
is($r->{j}{status}{503}, $r->{j}{requests}, '503: all the requests');
is($r->{j}{rps}, 0, '503: not in rps');

# a timeout

$r = load('-c', 2, '-z', 0.6, '-t', 0.2, "https://$TLS/hang");
cmp_ok($r->{j}{error_kinds}{timeout} // 0, '>', 0, 'timeouts counted');

# no memory errors or leaks, under valgrind

SKIP: {
	skip 'no valgrind', 2 unless `valgrind --version 2>/dev/null`;

	$r = load_cmd('valgrind', '-q', '--error-exitcode=9', '--leak-check=full',
		$bin, '-c', 2, '-w', 0.3, '-z', 1, '-t', 5, @PROXY,
		"https://localhost:$ports->{tls}/chunked");
	isnt($r->{rc}, 9, 'valgrind: no errors, no leaks') or diag($r->{err});
	ok($r->{j} && $r->{j}{status}{200} && !$r->{j}{errors},
		'valgrind: it ran');
}

done_testing();

###############################################################################

# Run bottle-load; its exit status, its lines before the JSON, the JSON
sub load {
	return load_cmd($bin, @_);
}

sub load_cmd {
	my $cmd = join ' ', map { my $a = $_; $a =~ s/'/'\\''/g; "'$a'" } @_;
	my @out = `$cmd 2>$d/stderr`;
	my %r = (rc => $? >> 8);
	chomp @out;
	$r{j} = eval { decode_json($out[-1]) } if @out && $out[-1] =~ /^\{/;
	pop @out if $r{j};
	$r{lines} = \@out;
	$r{err} = do { local (@ARGV, $/) = "$d/stderr"; <> };
	return \%r;
}

sub load_rc {
	return load(@_)->{rc};
}

# A command to the peer's control port: "reset", or "stats" (decoded)
sub peer {
	my ($cmd) = @_;
	my $c = IO::Socket::INET->new("127.0.0.1:$ports->{control}")
		or die "peer control: $!\n";
	print $c "$cmd\n";
	local $/;
	my $a = <$c>;
	return $cmd eq 'stats' ? decode_json($a) : $a;
}

###############################################################################
