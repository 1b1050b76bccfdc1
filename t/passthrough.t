#!/usr/bin/perl

# Passthrough tunnels carry TLS only: the front reads the whole ClientHello
# and checks every length in it before it relays a byte (issue 11, item 6).
# A TLS record header followed by plaintext, a truncated or inconsistent
# ClientHello: closed, logged, and the upstream gets nothing, not even a
# connection.  Real TLS, a ClientHello sent a byte at a time, split over
# records or larger than the head buffer still goes through untouched.

###############################################################################

use warnings;
use strict;

use Test::More;
use IO::Select;
use IO::Socket::IP;
use Socket qw/ AF_UNIX SOCK_STREAM PF_UNSPEC /;
use Time::HiRes qw/ time sleep /;
use POSIX qw/ WNOHANG /;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream bottle/)
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
        bottle_head_timeout 3s;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass $bottle_upstream;
    }
}

EOF

my $ca = gen_ca($t, 'ca');
my $crt = gen_cert($t, $ca, 'tls', 'tls.allowed.test');

my $TOKEN = 'alice-token-0123456789';

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [
		{ host => 'tls.allowed.test', port => port(8443),
			passthrough => JSON::PP::true, internal => JSON::PP::true },
		{ host => 'raw.allowed.test', port => port(8444),
			passthrough => JSON::PP::true, internal => JSON::PP::true },
	] },
] });

dns_start($t, port => port(8053), hosts => {
	'tls.allowed.test' => '127.0.0.1',
	'raw.allowed.test' => '127.0.0.1',
});

fake_upstream($t, port => 8443, name => 'tls', tls => 1,
	cert => $crt->{cert}, key => $crt->{key});

# raw.allowed.test: records every connection and every byte it is sent

my $RAW = $t->testdir() . '/raw.log';
$t->run_daemon(\&raw_recorder, port(8444), $RAW);
$t->waitforsocket('127.0.0.1:' . port(8444)) or die "no raw recorder\n";

$t->run()->plan(40);

###############################################################################

my $auth = basic('agent', $TOKEN);
my $RAW_TARGET = 'raw.allowed.test:' . port(8444);
my $TLS_TARGET = 'tls.allowed.test:' . port(8443);

# a ClientHello openssl s_client sent (fuzz/corpus/hello)
my $HELLO = slurp("$FindBin::Bin/../fuzz/corpus/hello/openssl_tls13");

sub slurp {
	my ($path) = @_;
	open my $fh, '<:raw', $path or die "$path: $!\n";
	local $/;
	return scalar <$fh>;
}

sub connect_req {
	my ($target) = @_;
	return "CONNECT $target HTTP/1.1\r\nHost: $target\r\n"
		. "Proxy-Authorization: $auth\r\n\r\n";
}

sub tunnel {
	my ($target) = @_;
	my $s = proxy_session(8080);
	$s->send(connect_req($target));
	my $r = $s->read_response();
	return $r =~ /^HTTP\/1\.1 200 / ? $s : undef;
}

sub refusals {
	my ($re) = @_;
	return grep { /bottle refused: .*$re/ }
		split /\n/, $t->read_file('error.log');
}

sub raw_log {
	return -e $RAW ? $t->read_file('raw.log') : '';
}

# the handshake message of a one-record ClientHello, framed in records of
# the sizes given, the last one repeated
sub reframe {
	my ($hello, @sizes) = @_;
	return frame(substr($hello, 5), @sizes);
}

sub frame {
	my ($msg, @sizes) = @_;
	my $out = '';
	while (length $msg) {
		my $frag = @sizes > 1 ? shift @sizes : $sizes[0];
		my $part = substr($msg, 0, $frag, '');
		$out .= pack('Cnn', 0x16, 0x0301, length $part) . $part;
	}
	return $out;
}

# the ClientHello with a padding extension (21) of $n more bytes
sub padded {
	my ($hello, $n) = @_;
	my $msg = substr($hello, 9);
	my $ext = pack('nn', 21, $n) . ("\0" x $n);
	my $sid = unpack('C', substr($msg, 34, 1));
	my $at = 35 + $sid;
	$at += 2 + unpack('n', substr($msg, $at, 2));
	$at += 1 + unpack('C', substr($msg, $at, 1));
	substr($msg, $at, 2, pack('n', unpack('n', substr($msg, $at, 2))
		+ length $ext));
	$msg .= $ext;
	return frame(pack('N', 0x01000000 | length $msg) . $msg, 16384);
}

# the test's ClientHello must be what the front expects to pass
is(length $HELLO, unpack('n', substr($HELLO, 3, 2)) + 5,
	'the openssl ClientHello is one whole record');

###############################################################################

# the issue's reproduction: a record header, the client_hello type byte,
# then plaintext

my $log0 = raw_log();
my $s = tunnel($RAW_TARGET);
ok($s, 'fake header: tunnel opens');
$s->send("\x16\x03\x01\x00\x05\x01" . "GET /secret-fake HTTP/1.1\r\n"
	. "Host: raw.allowed.test\r\n\r\n") if $s;
is($s ? $s->read_all(3) : 'x', '', 'fake header: nothing comes back');
ok($s && $s->eof, 'fake header: connection closed');

my @r = refusals('rule="raw_tcp"');
is(scalar @r, 1, 'fake header: one log line');
like($r[0] // '', qr/bottle="alice" host="raw\.allowed\.test" rule="raw_tcp"/,
	'fake header: the line names bottle, host and rule');
like($r[0] // '', qr/reason="[^"]*not a valid TLS ClientHello/,
	'fake header: the line gives the reason');

# the same, sent with the CONNECT (read, not peeked)

$s = proxy_session(8080);
$s->send(connect_req($RAW_TARGET) . "\x16\x03\x01\x00\x05\x01"
	. "GET /secret-pipelined HTTP/1.1\r\n\r\n");
like($s->read_all(3), qr/^HTTP\/1\.1 200 [^\n]*\n\r\n\z/,
	'fake header with the CONNECT: closed after the 200');

# consistent record and handshake framing around plaintext

$s = tunnel($RAW_TARGET);
my $plain = "GET /secret-framed HTTP/1.1\r\nHost: x\r\n\r\n";
$s->send(pack('Cnn', 0x16, 0x0301, 4 + length $plain)
	. pack('N', 0x01000000 | length $plain) . $plain) if $s;
is($s ? $s->read_all(3) : 'x', '', 'framed plaintext: closed');

# an inconsistent ClientHello: the extensions block one byte too long

my $bad = $HELLO;
{
	my $at = 9 + 34;
	$at += 1 + unpack('C', substr($bad, $at, 1));
	$at += 2 + unpack('n', substr($bad, $at, 2));
	$at += 1 + unpack('C', substr($bad, $at, 1));
	substr($bad, $at, 2, pack('n', unpack('n', substr($bad, $at, 2)) + 1));
}
$s = tunnel($RAW_TARGET);
$s->send($bad) if $s;
is($s ? $s->read_all(3) : 'x', '', 'inconsistent extensions: closed');

# a record that goes on after the ClientHello

$bad = $HELLO . "X";
substr($bad, 3, 2, pack('n', length($HELLO) - 4));
$s = tunnel($RAW_TARGET);
$s->send($bad) if $s;
is($s ? $s->read_all(3) : 'x', '',
	'bytes after the ClientHello in its record: closed');

# a ClientHello over 16 KiB

$s = tunnel($RAW_TARGET);
$s->send(padded($HELLO, 16384)) if $s;
is($s ? $s->read_all(3) : 'x', '', 'a ClientHello over 16 KiB: closed');

@r = refusals('rule="raw_tcp"');
is(scalar @r, 6, 'one line per refusal');
like(join("\n", @r), qr/extension lengths are inconsistent/,
	'inconsistent extensions: the reason says so');
like(join("\n", @r), qr/bytes follow the ClientHello in its record/,
	'trailing bytes: the reason says so');
like(join("\n", @r), qr/ClientHello larger than the gateway accepts/,
	'too large: the reason says so');

# a truncated ClientHello: nothing goes out while the rest is awaited,
# and the front gives up at bottle_head_timeout

$s = tunnel($RAW_TARGET);
$s->send(substr($HELLO, 0, 100)) if $s;
is($s ? $s->read_all(5) : 'x', '', 'truncated ClientHello: closed');
ok($s && $s->eof, 'truncated ClientHello: closed by the gateway');
is(scalar refusals('host="raw\.allowed\.test" rule="timeout"'), 1,
	'truncated ClientHello: logged as a timeout');

$s = proxy_session(8080);
$s->send(connect_req($RAW_TARGET) . substr($HELLO, 0, 100));
like($s->read_all(5), qr/^HTTP\/1\.1 200 [^\n]*\n\r\n\z/,
	'truncated ClientHello with the CONNECT: closed after the 200');

my $after = substr(raw_log(), length $log0);
is($after, '', 'refused tunnels: the upstream got no connection and no byte')
	or diag(scalar(() = $after =~ /^connect/mg) . ' connections, '
		. length(join '', $after =~ /^data (\S+)/mg) / 2 . ' bytes');

###############################################################################

# what passes reaches the upstream byte for byte

for my $case (
	[ 'one record', $HELLO ],
	[ 'split over records of 1, 2 and 3 bytes', reframe($HELLO, 1, 2, 3) ],
	[ 'split over 100-byte records', reframe($HELLO, 100) ],
	[ 'of 12000 bytes (over the 9 KiB head buffer)',
		padded($HELLO, 11600) ],
	[ 'of 16384 bytes', padded($HELLO, 16384 - length($HELLO) + 5 - 4) ],
)
{
	my ($what, $bytes) = @$case;

	for my $with (0, 1) {
		my $before = raw_log();
		my $name = "ClientHello $what"
			. ($with ? ', with the CONNECT' : '');

		$s = proxy_session(8080);
		if ($with) {
			$s->send(connect_req($RAW_TARGET) . $bytes);
			like($s->read_response(), qr/^HTTP\/1\.1 200 /, "$name: 200");
		} else {
			$s->send(connect_req($RAW_TARGET));
			$s->read_response();
			$s->send($bytes);
		}

		my $got = wait_raw($before, length $bytes);
		ok($got eq $bytes, "$name: relayed untouched")
			or diag(length($got) . ' of ' . length($bytes) . ' bytes');
		$s->close();
	}
}

###############################################################################

# real TLS through the tunnel, and the same with the ClientHello sent a byte
# at a time

$s = tunnel($TLS_TARGET);
ok($s && $s->start_ssl(SSL_hostname => 'tls.allowed.test',
	SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
	SSL_ca_file => $ca->{cert}), 'real TLS: handshake through the tunnel');
$s->send("GET /real HTTP/1.1\r\nHost: tls.allowed.test\r\n"
	. "Connection: close\r\n\r\n") if $s;
like($s ? $s->read_response() : '', qr/upstream tls ok/, 'real TLS: answered');

my $answer = dribbled_tls($TLS_TARGET, '/dribbled');
like($answer, qr/upstream tls ok/,
	'real TLS, the ClientHello a byte at a time: answered');

my ($req) = grep { $_->{target} eq '/dribbled' }
	@{upstream_requests($t, 'tls')};
is($req && $req->{sni}, 'tls.allowed.test', 'dribbled: the upstream got it');

###############################################################################

# the recorder's log since $before, once $n bytes are in (or 5 s)

sub wait_raw {
	my ($before, $n) = @_;
	my $deadline = time() + 5;
	my $got = '';
	while (time() < $deadline) {
		my $log = raw_log();
		$got = join '', map { pack('H*', $_) }
			substr($log, length $before) =~ /^data (\S+)$/mg;
		last if length $got >= $n;
		sleep 0.05;
	}
	return $got;
}

# A TLS client in a child process, on one end of a socketpair; the test
# relays between the other end and the tunnel, the first flight one byte
# at a time with a pause after each.

sub dribbled_tls {
	my ($target, $path) = @_;

	my $gw = tunnel($target) or return 'no tunnel';
	my $sock = $gw->{sock};

	socketpair(my $mine, my $theirs, AF_UNIX, SOCK_STREAM, PF_UNSPEC)
		or die "socketpair: $!\n";

	my $pid = fork();
	die "fork: $!\n" unless defined $pid;

	if ($pid == 0) {
		# the relay may be gone when the TLS layer says goodbye
		$SIG{PIPE} = 'IGNORE';
		close $mine;
		my $ok = IO::Socket::SSL->start_SSL($theirs,
			SSL_hostname => 'tls.allowed.test',
			SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
			SSL_ca_file => $ca->{cert}, Timeout => 15);
		if (!$ok) {
			print STDERR "dribbled client: $IO::Socket::SSL::SSL_ERROR\n";
			POSIX::_exit(1);
		}
		print $theirs "GET $path HTTP/1.1\r\nHost: tls.allowed.test\r\n"
			. "Connection: close\r\n\r\n";
		my $all = '';
		while (defined(my $l = <$theirs>)) {
			$all .= $l;
		}
		open my $out, '>', $t->testdir() . '/dribbled.out';
		print $out $all;
		close $out;
		POSIX::_exit(0);
	}

	close $theirs;

	my $sel = IO::Select->new($mine, $sock);
	my $first = 1;
	my $deadline = time() + 20;
	my $open = 2;

	while ($open == 2 && time() < $deadline) {
		for my $h ($sel->can_read(0.5)) {
			my $buf;
			my $n = sysread($h, $buf, 65536);
			if (!$n) {
				$open--;
				next;
			}
			if ($h == $mine) {
				if ($first) {
					$first = 0;
					for my $byte (split //, $buf) {
						syswrite($sock, $byte);
						sleep 0.002;
					}
				} else {
					syswrite($sock, $buf);
				}
			} else {
				syswrite($mine, $buf);
			}
		}
	}

	close $mine;
	$gw->close();
	waitpid($pid, 0);

	my $f = $t->testdir() . '/dribbled.out';
	return -e $f ? $t->read_file('dribbled.out') : 'no answer';
}

# the raw upstream: "connect" and "data <hex>" lines, appended

sub raw_recorder {
	my ($port, $log) = @_;

	my $listen = IO::Socket::IP->new(LocalAddr => '127.0.0.1',
		LocalPort => $port, Listen => 16, ReuseAddr => 1)
		or die "raw recorder: $!\n";

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
		append($log, "connect\n");
		while (sysread($c, my $buf, 65536)) {
			append($log, 'data ' . unpack('H*', $buf) . "\n");
		}
		POSIX::_exit(0);
	}
}

sub append {
	my ($log, $line) = @_;
	open my $fh, '>>', $log or die "$log: $!\n";
	syswrite $fh, $line;
	close $fh;
}

###############################################################################
