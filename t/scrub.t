#!/usr/bin/perl

# Held secrets scrubbed from responses (docs/dlp.md, "Held secrets in
# responses"): an upstream that echoes what it received (the credential the
# gateway injected) in its response headers and body, plain, gzip'd,
# deflate'd, streamed slowly in small chunks, as SSE, and in base64, hex and
# URL encodings; the agent gets [held:NAME], never the value.  Egress
# tokens and the canary with dlp.scrub; a response with no held value passes
# byte-identical; dlp.reflected in the journal; scrub [] turns it off.

###############################################################################

use warnings;
use strict;

use Test::More;
use MIME::Base64 qw/ encode_base64 decode_base64 /;
use IO::Compress::Gzip qw/ gzip /;
use IO::Compress::Deflate qw/ deflate /;
use IO::Socket::INET;
use POSIX qw//;
use Time::HiRes qw/ sleep time /;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $TOKEN = 'alice-token-0123456789';
my $CANARY = 'CANARY-5e8d2a7c19b3';
my $SECRET = 'sk-held-Zx81/Qw+value=42';      # reserved chars: url form differs
my $OTHER = 'other-egress-token-77aa';
my $RP = port(8090);
my $P1 = port(8081);

$t->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;

bottle_policy redis://127.0.0.1:$RP/2;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

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
}

EOF

# the echo upstream: its answers carry what it received

my $echo_pid = echo_start($P1);

redis_start($t, port => $RP, persist => 1, db => 2);

my $T = JSON::PP::true;

store_put($t,
	{ id => 'alice', token => $TOKEN, canary => $CANARY,
		egress_tokens => { API => $SECRET, OTHER => $OTHER },
		routes => [
		{ host => '127.0.0.1', port => $P1, methods => [ '*' ],
			auth => { type => 'header', name => 'x-api-key',
				value => 'secret:API' } },
		{ host => '127.0.0.2', port => $P1, methods => [ '*' ],
			auth => { type => 'header', name => 'x-api-key',
				value => 'secret:API' },
			dlp => { scrub => [ 'credential', 'egress_tokens',
				'canary' ] } },
		{ host => '127.0.0.3', port => $P1, methods => [ '*' ],
			auth => { type => 'header', name => 'x-api-key',
				value => 'secret:API' },
			dlp => { scrub => [] } },
	] });

$t->run()->plan(42);

###############################################################################

my $auth = 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n";
my $MARK = '[held:credential:API]';
# placeholders are padded with '*' to the length of what they replace
my $M = qr/\Q$MARK\E\**/;

sub req {
	my ($path, %o) = @_;
	my $host = ($o{host} // '127.0.0.1') . ":$P1";
	my $r = "GET http://$host$path HTTP/1.1\r\nHost: $host"
		. "\r\nConnection: close\r\n$auth";
	$r .= join '', map { "$_\r\n" } @{$o{headers} || []};
	$r .= "\r\n";
	return proxy_request(port(8080), $r);
}

# the body of a response, chunked or not
sub body {
	my ($r) = @_;
	my ($h, $b) = split /\r\n\r\n/, $r, 2;
	return undef unless defined $b;
	return $b unless $h =~ /^Transfer-Encoding: chunked/mi;
	my $out = '';
	while ($b =~ s/^([0-9a-fA-F]+)\r\n//) {
		my $n = hex $1;
		last if $n == 0;
		$out .= substr($b, 0, $n);
		substr($b, 0, $n + 2) = '';
	}
	return $out;
}

sub hexof { return unpack('H*', $_[0]); }
sub pctof { return join '', map { sprintf('%%%02X', ord) } split //, $_[0]; }
sub urlof {
	(my $v = $_[0]) =~ s/([^A-Za-z0-9\-._~])/sprintf('%%%02X', ord $1)/ge;
	return $v;
}

my @forms = ($SECRET, encode_base64($SECRET, ''), hexof($SECRET),
	uc hexof($SECRET), pctof($SECRET), urlof($SECRET));

sub leaks {
	my ($r) = @_;
	$r .= "\n" . (body($r) // '');
	for my $f (@forms) {
		return $f if index($r, $f) >= 0;
	}
	(my $b64u = encode_base64($SECRET, '')) =~ tr!+/!-_!;
	return $b64u if index($r, $b64u) >= 0;
	return undef;
}

# plain: the injected header echoed in a response header and the body

my $r = req('/echo');
like($r, qr/^HTTP\/1\.1 200 /, 'plain: 200');
like($r, qr/^X-Echo-Key: \Q$MARK\E\*{3}\r$/m,
	'plain: header value scrubbed, as long as the value');
like(body($r), qr/x-api-key: $M\n/, 'plain: body scrubbed');
is(leaks($r), undef, 'plain: the value nowhere in the response');
like($r, qr/^Content-Length: (\d+)\r$/mi, 'plain: Content-Length kept');
is(length(body($r)), ($r =~ /^Content-Length: (\d+)/mi)[0],
	'plain: the scrubbed body is as long as it says');

# the upstream was asked only for codings the gateway decodes

like(body(req('/echo', headers => [ 'Accept-Encoding: zstd, gzip' ])),
	qr/^accept-encoding: gzip, deflate, br$/m,
	'the request asks for gzip, deflate, br only');

# Range is not sent on: a value read a few bytes at a time would not be
# found in any one response

$r = req('/echo', headers => [ 'Range: bytes=20-30', 'If-Range: "x"' ]);
like($r, qr/^HTTP\/1\.1 200 /, 'range: the whole response');
unlike(body($r), qr/^(range|if-range):/mi, 'range: Range and If-Range dropped');

# encodings of the value

$r = req('/echo?enc=1');
is(leaks($r), undef, 'encodings: base64, base64url, hex, %XX, url-encoding '
	. 'all scrubbed');
my $b = body($r);
is(scalar(() = $b =~ /$M/g), 8, 'encodings: each form replaced');
like($b, qr/^b64: $M=*$/m, 'encodings: base64 replaced');
like($b, qr/^hex: $M$/m, 'encodings: hex replaced');
like($b, qr/^url: $M$/m, 'encodings: url-encoded replaced');

# compressed: decoded, scrubbed, sent identity

for my $ce (qw/gzip deflate/) {
	$r = req("/echo?ce=$ce");
	like($r, qr/^HTTP\/1\.1 200 /, "$ce: 200");
	unlike($r, qr/^Content-Encoding:/mi, "$ce: sent decoded");
	like(body($r), qr/x-api-key: $M\n/, "$ce: scrubbed");
	is(leaks($r), undef, "$ce: the value nowhere");
}

# streamed slowly in 5-byte chunks: the value split across chunks

$r = req('/slow');
like(body($r), qr/^head\nx-api-key: $M\ntail\n$/s,
	'slow stream: scrubbed across chunk boundaries');
is(leaks($r), undef, 'slow stream: the value nowhere');

$r = req('/slow?ce=gzip');
like(body($r), qr/^head\nx-api-key: $M\ntail\n$/s,
	'slow gzip stream: scrubbed');

# SSE: events arrive one by one, the value inside one

my $t0 = time();
$r = req('/sse');
like(body($r), qr/^data: 1\n\ndata: $M\n\ndata: 3\n\n$/s,
	'sse: the value in an event scrubbed');
is(leaks($r), undef, 'sse: the value nowhere');

# a stream is not held back: the first event arrives before the last is
# sent (the upstream waits 2 s between them)

my $first = first_event_delay('/sse?gap=2');
ok(defined $first && $first < 1.5, 'sse: the first event is not held back')
	or diag("first event after " . ($first // 'never'));

# no held value: byte-identical

my $clean = req('/clean');
my $want = join '', map { chr(($_ * 37) % 256) } 0 .. 4999;
is(body($clean), $want, 'clean: the body passes byte-identical');
like($clean, qr/^X-Clean: nothing here\r$/m, 'clean: headers as sent');

# egress tokens and the canary, with dlp.scrub listing them

$r = req('/say-held', host => '127.0.0.2');
like(body($r), qr/^other: \[held\*{17}\]\ncanary: \[held:canary\]\*{6}\n/,
	'scrub list: egress token and canary scrubbed (a placeholder longer '
	. 'than the value shortened)');
unlike($r, qr/\Q$OTHER\E|\Q$CANARY\E/, 'scrub list: neither value reaches the agent');

$r = req('/say-held');
like(body($r), qr/^other: \Q$OTHER\E\n/,
	'default: only the injected credential is scrubbed');

# scrub [] turns it off

$r = req('/echo', host => '127.0.0.3');
like(body($r), qr/x-api-key: \Q$SECRET\E\n/, 'scrub []: off');

# the journal: one dlp.reflected per response, never the value

my $ev = wait_events(sub { grep { $_->{type} eq 'dlp.reflected' } @_ }, 10);
my @refl = grep { $_->{type} eq 'dlp.reflected' } @$ev;
ok(scalar @refl >= 10, 'journal: dlp.reflected events');
my ($enc) = grep { grep { $_ eq 'hex' } @{$_->{encodings}} } @refl;
ok($enc, 'journal: an event names the hex encoding');
is_deeply($enc && $enc->{held}, [ 'credential:API' ], 'journal: held by name');
is_deeply($enc && $enc->{held_kinds}, [ 'credential' ], 'journal: kind');
my ($plain) = grep { grep { $_ eq 'header' } @{$_->{where}} } @refl;
is_deeply($plain && $plain->{where}, [ 'header', 'body' ],
	'journal: where: header and body');
is($plain && $plain->{host}, '127.0.0.1', 'journal: host');
is($plain && $plain->{bottle}, 'alice', 'journal: bottle');
ok(!grep({ index($_->{raw}, $SECRET) >= 0 } @$ev),
	'journal: the value is in no event');

###############################################################################

sub events {
	my $out = redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
	my @e;
	for my $l (split /\n/, $out) {
		next unless $l =~ /^\{/;
		my $e = eval { decode_json($l) } or next;
		$e->{raw} = $l;
		push @e, $e;
	}
	return \@e;
}

sub wait_events {
	my ($cond, $n) = @_;
	my $deadline = time() + 10;
	my $e;
	while (time() < $deadline) {
		$e = events();
		last if scalar(() = $cond->(@$e)) >= $n;
		sleep 0.2;
	}
	return $e;
}

# seconds until the first SSE event's data reaches the agent
sub first_event_delay {
	my ($path) = @_;
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . port(8080))
		or return undef;
	my $host = "127.0.0.1:$P1";
	my $t0 = time();
	print $s "GET http://$host$path HTTP/1.1\r\nHost: $host\r\n"
		. "Connection: close\r\n$auth\r\n";
	my $buf = '';
	while (time() - $t0 < 10) {
		my $n = sysread($s, $buf, 4096, length $buf);
		last unless $n;
		return time() - $t0 if $buf =~ /data: 1\n/;
	}
	return undef;
}

sub echo_start {
	my ($port) = @_;
	my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
		Listen => 16, ReuseAddr => 1) or die "listen $port: $!";
	my $l2 = IO::Socket::INET->new(LocalAddr => '127.0.0.2', LocalPort => $port,
		Listen => 16, ReuseAddr => 1) or die "listen 2 $port: $!";
	my $l3 = IO::Socket::INET->new(LocalAddr => '127.0.0.3', LocalPort => $port,
		Listen => 16, ReuseAddr => 1) or die "listen 3 $port: $!";
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	return $pid if $pid;
	$SIG{CHLD} = 'IGNORE';
	my $sel = '';
	vec($sel, fileno($_), 1) = 1 for $l, $l2, $l3;
	while (1) {
		my $rd = $sel;
		next unless select($rd, undef, undef, 1) > 0;
		for my $ls ($l, $l2, $l3) {
			next unless vec($rd, fileno($ls), 1);
			my $c = $ls->accept() or next;
			my $k = fork();
			if (defined $k && $k == 0) {
				echo_serve($c);
				POSIX::_exit(0);
			}
			close $c;
		}
	}
}

sub echo_serve {
	my ($c) = @_;
	my $head = '';
	while ($head !~ /\r\n\r\n/) {
		my $n = sysread($c, $head, 4096, length $head);
		return unless $n;
	}
	my ($line, @h) = split /\r\n/, (split /\r\n\r\n/, $head)[0];
	my ($path) = $line =~ /^\S+ (\S+)/;
	my %q = $path =~ /[?&]([^=&]+)=([^&]*)/g;
	my %hv = map { my ($k, $v) = split /:\s*/, $_, 2; (lc $k, $v) } @h;
	my $key = $hv{'x-api-key'} // '';
	my $echo = join '', map { my ($k, $v) = split /:\s*/, $_, 2;
		lc($k) . ": $v\n" } @h;

	my @rh = ("X-Echo-Key: $key");
	my $body = $echo;

	if ($path =~ m!^/echo! && $q{enc}) {
		(my $b64u = encode_base64($key, '')) =~ tr!+/!-_!;
		$b64u =~ s/=+$//;
		$body = "b64: " . encode_base64($key, '') . "\n"
			. "b64url: $b64u\n"
			. "b64off1: " . encode_base64("x$key", '') . "\n"
			. "hex: " . hexof($key) . "\n"
			. "HEX: " . uc(hexof($key)) . "\n"
			. "pct: " . pctof($key) . "\n"
			. "url: " . urlof($key) . "\n"
			. "json: {\"k\":\"$key\"}\n";
	}

	if ($path =~ m!^/clean!) {
		@rh = ('X-Clean: nothing here');
		$body = join '', map { chr(($_ * 37) % 256) } 0 .. 4999;
	}

	if ($path =~ m!^/say-held!) {
		$body = "other: $OTHER\ncanary: $CANARY\n";
	}

	if ($path =~ m!^/slow! || $path =~ m!^/sse!) {
		my @parts;
		my $ct = 'text/plain';
		if ($path =~ m!^/sse!) {
			$ct = 'text/event-stream';
			@parts = ("data: 1\n\n", "data: $key\n\n", "data: 3\n\n");
		} else {
			my $all = "head\nx-api-key: $key\ntail\n";
			if (($q{ce} // '') eq 'gzip') {
				my $z;
				gzip(\$all => \$z);
				$all = $z;
			}
			@parts = unpack('(a5)*', $all);
		}
		my $r = "HTTP/1.1 200 OK\r\nContent-Type: $ct\r\n"
			. (($q{ce} // '') eq 'gzip' ? "Content-Encoding: gzip\r\n" : '')
			. "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
		syswrite($c, $r);
		for my $p (@parts) {
			syswrite($c, sprintf("%x\r\n%s\r\n", length $p, $p));
			sleep($q{gap} // 0.05);
		}
		syswrite($c, "0\r\n\r\n");
		return;
	}

	if (($q{ce} // '') eq 'gzip') {
		my $z;
		gzip(\$body => \$z);
		$body = $z;
		push @rh, 'Content-Encoding: gzip';
	} elsif (($q{ce} // '') eq 'deflate') {
		my $z;
		deflate(\$body => \$z);
		$body = $z;
		push @rh, 'Content-Encoding: deflate';
	}

	my $r = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		. join('', map { "$_\r\n" } @rh)
		. 'Content-Length: ' . length($body) . "\r\n"
		. "Connection: close\r\n\r\n" . $body;
	my $off = 0;
	while ($off < length $r) {
		my $n = syswrite($c, $r, length($r) - $off, $off) or last;
		$off += $n;
	}
}

END {
	kill 'TERM', $echo_pid if $echo_pid;
}

###############################################################################
