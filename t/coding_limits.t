#!/usr/bin/perl

# Outbound DLP of compressed request bodies (issue 11, items 2 and 5): what
# a compressed body's wrapper carries (gzip FNAME, FCOMMENT, FEXTRA in every
# member, brotli metadata blocks) is scanned or refused; the decoded size is
# bounded by bottle_dlp_decoded_max and bottle_dlp_decoded_ratio, so a small
# bomb is refused at once, with its reason, logged once; a body within the
# limits goes out byte for byte; redaction still works, decoded once.  The
# same with the decoding in a thread (the default) and in the event loop
# (bottle_dlp_thread_pool off).

###############################################################################

use warnings;
use strict;

use Test::More;
use Time::HiRes qw/ time /;
use Digest::SHA qw/ sha256_hex /;
use IO::Compress::Gzip qw/ gzip $GzipError /;
use IO::Uncompress::Gunzip qw/ gunzip /;
use IO::Socket::INET;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy bottle/)
	->has(qw/dnsmasq/);

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
        proxy_pass $bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;

    upstream bottle_plain {
        bottle_upstream;
    }

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;
        client_body_buffer_size 4k;
        client_max_body_size 100m;

        location / {
            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection $bottle_connection;
        }

        location /tight/ {
            bottle_dlp_decoded_max 64k;
            bottle_dlp_decoded_ratio 10;

            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection $bottle_connection;
        }

        location /inline/ {
            bottle_dlp_thread_pool off;

            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection $bottle_connection;
        }

        # no bounds but client_max_body_size: a long decode
        location /big/ {
            bottle_dlp_decoded_max 0;
            bottle_dlp_decoded_ratio 0;

            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection $bottle_connection;
        }

        location /big-inline/ {
            bottle_dlp_decoded_max 0;
            bottle_dlp_decoded_ratio 0;
            bottle_dlp_thread_pool off;

            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection $bottle_connection;
        }
    }
}

EOF

my $TOKEN = 'alice-token-0123456789';
my $CANARY = 'CANARY-7f3a9c2e5b1d4086';
my $T = JSON::PP::true;

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, canary => $CANARY,
		routes => [
		{ host => 'api.allowed.test', port => port(8081), internal => $T,
			methods => [ '*' ], dlp => { on_match => 'block' } },
		{ host => 'llm.allowed.test', port => port(8081), internal => $T,
			methods => [ '*' ], agent_provider => $T },
	] },
] });

dns_start($t, port => port(8053), hosts => { map { ("$_.allowed.test"
	=> '127.0.0.1') } qw/api llm/ });

fake_upstream($t, port => 8081, name => 'api');

$t->run()->plan(46);

###############################################################################

my $auth = 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n";

sub req {
	my ($path, %o) = @_;
	my $host = ($o{host} // 'api') . '.allowed.test:' . port(8081);
	my $r = "POST http://$host$path HTTP/1.1\r\nHost: $host"
		. "\r\nConnection: close\r\n$auth";
	$r .= join '', map { "$_\r\n" } @{$o{headers} || []};
	$r .= "Content-Length: " . length($o{body}) . "\r\n\r\n$o{body}";
	return proxy_request(8080, $r);
}

sub gzreq {
	my ($path, $body, %o) = @_;
	return req($path, %o, body => $body,
		headers => [ 'Content-Encoding: ' . ($o{coding} // 'gzip') ]);
}

sub gz {
	my ($in, %opts) = @_;
	my $o;
	gzip(\$in => \$o, Minimal => 0, %opts) or die $GzipError;
	return $o;
}

sub nreqs {
	return scalar @{upstream_requests($t, 'api')};
}

sub last_body {
	return upstream_requests($t, 'api')->[-1]{body};
}

my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);

# text that compresses about 2:1, under any ratio limit here
sub hexfill { substr(join('', map { sha256_hex("f$_") } 0 .. $_[0] / 64), 0,
	$_[0]) }

###############################################################################

# the wrapper: gzip header fields carry the canary or a token

my $n = nreqs();

like(gzreq('/x', gz('{"a": 1}', Comment => "note $CANARY")),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: canary.*canary in the body's gzip header/s,
	'canary in FCOMMENT: 403');
like(gzreq('/x', gz('{"a": 1}', Name => "$CANARY.json")),
	qr/^HTTP\/1\.1 403 .*canary in the body's gzip header/s,
	'canary in FNAME: 403');
like(gzreq('/x', gz('{"a": 1}', ExtraField => [ [ 'Bx' => $CANARY ] ])),
	qr/^HTTP\/1\.1 403 .*canary in the body's gzip header/s,
	'canary in FEXTRA: 403');
like(gzreq('/x', gz('{"a": 1}') . gz('{"b": 2}', Comment => $CANARY)),
	qr/^HTTP\/1\.1 403 .*canary in the body's gzip header/s,
	'canary in the second member\'s FCOMMENT: 403');
like(gzreq('/x', gz(gz('{"a": 1}', Name => $CANARY)),
	coding => 'gzip, gzip'),
	qr/^HTTP\/1\.1 403 .*canary in the body's gzip header/s,
	'canary in the inner gzip\'s FNAME (gzip, gzip): 403');
like(gzreq('/x', gz('{"a": 1}', Name => "x-$GHP")),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: dlp.*github_pat_classic\) in the body's gzip header/s,
	'a token in FNAME: blocked on a block route');
like(gzreq('/v1', gz('{"a": 1}', Comment => $GHP), host => 'llm'),
	qr/^HTTP\/1\.1 403 .*github_pat_classic.*cannot be removed/s,
	'a token in FCOMMENT on a redact route: refused, it cannot be redacted');
like(gzreq('/x', gz('{"a": 1}', Comment => 'c' x 5000)),
	qr/^HTTP\/1\.1 415 .*X-Bottle-Rule: encoding.*gzip header field is longer/s,
	'an FCOMMENT longer than the scanner reads: refused');
# 6 free bytes a member (MTIME, XFL, OS): the canary cut over 4 members
my $cut = '';
for my $k (unpack('(a6)*', "${CANARY}x")) {
	$cut .= gz('{}', Time => unpack('V', substr($k, 0, 4)),
		ExtraFlags => ord(substr($k, 4, 1)),
		OS_Code => ord(substr($k, 5, 1)));
}
like(gzreq('/x', $cut),
	qr/^HTTP\/1\.1 403 .*canary in the body's gzip header/s,
	'canary cut over 4 members\' MTIME, XFL and OS: 403');
like(gzreq('/x', gz('{}') x 1025),
	qr/^HTTP\/1\.1 415 .*gzip headers are longer than the scanner reads/s,
	'more gzip members than the scanner reads the headers of: refused');
like(gzreq('/inline/x', gz('{"a": 1}', Comment => $CANARY)),
	qr/^HTTP\/1\.1 403 .*canary in the body's gzip header/s,
	'canary in FCOMMENT, decoded in the event loop: 403');

# a brotli metadata block: libbrotlidec skips it unseen, so br is refused

my $meta = "meta $CANARY";
my $br = pack('CC', 0x2c | (((length($meta) - 1) & 1) << 7),
	(length($meta) - 1) >> 1) . $meta . "\x03";
$t->write_file('meta.br', $br);
my $f = $t->testdir() . '/meta.br';
SKIP: {
	skip 'no brotli command', 1 unless -x '/usr/bin/brotli';
	is(scalar `brotli -dc $f 2>&1`, '',
		'the metadata stream is valid brotli, decoding to nothing');
}
like(gzreq('/x', $br, coding => 'br'),
	qr/^HTTP\/1\.1 415 .*X-Bottle-Rule: encoding.*br metadata blocks cannot be seen/s,
	'brotli metadata block with the canary: refused');

is(nreqs(), $n, 'none of the wrapper refusals reached the upstream');

my $named = gz('{"messages": []}', Name => 'request.json',
	Comment => 'made by a client');
like(gzreq('/x', $named), qr/^HTTP\/1\.1 200 /,
	'clean gzip header fields pass');
is(last_body(), $named, 'and the body goes out byte for byte');

# the bomb: 343 bytes, gzip of gzip of 63 MB

my $bomb = gz(gz("\0" x (63 << 20), -Level => 9), -Level => 9);
ok(length($bomb) < 1024, 'the bomb is small (' . length($bomb) . ' bytes)');

$n = nreqs();

my $t0 = time();
my $r = gzreq('/x', $bomb, coding => 'gzip, gzip');
my $took = time() - $t0;
like($r, qr/^HTTP\/1\.1 413 .*X-Bottle-Rule: too_large.*the gzip request body decodes to more than the size limit of \d+ bytes, 100 times its \d+ bytes \(bottle_dlp_decoded_ratio\)/s,
	'gzip, gzip bomb: refused by the ratio, with the reason');
ok($took < 0.15, sprintf('and quickly (%.3f s)', $took));

$r = gzreq('/inline/x', $bomb, coding => 'gzip, gzip');
like($r, qr/^HTTP\/1\.1 413 .*bottle_dlp_decoded_ratio/s,
	'gzip, gzip bomb decoded in the event loop: refused too');

# bottle_dlp_decoded_max; a body of higher entropy so that the ratio holds

my $big = hexfill(9 << 20);
$r = gzreq('/x', gz($big));
like($r, qr/^HTTP\/1\.1 413 .*more than the size limit of 8388608 bytes \(bottle_dlp_decoded_max\)/s,
	'9 MB decoded: over the default bottle_dlp_decoded_max (8m)');

# /tight/: bottle_dlp_decoded_max 64k, bottle_dlp_decoded_ratio 10

my $under = hexfill(65536);
my $over = hexfill(65537);
# about 50 times smaller compressed: over 10, under 100
my $rep = hexfill(2000) . ('a' x 60000);

like(gzreq('/tight/x', gz($over)),
	qr/^HTTP\/1\.1 413 .*more than the size limit of 65536 bytes \(bottle_dlp_decoded_max\)/s,
	'one byte over bottle_dlp_decoded_max: refused');
like(gzreq('/tight/x', gz($rep)),
	qr/^HTTP\/1\.1 413 .*10 times its \d+ bytes \(bottle_dlp_decoded_ratio\)/s,
	'over bottle_dlp_decoded_ratio: refused');

is(nreqs(), $n, 'none of the size refusals reached the upstream');

my $ok = gz($under);
like(gzreq('/tight/x', $ok), qr/^HTTP\/1\.1 200 /,
	'exactly bottle_dlp_decoded_max decoded: passes');
is(last_body(), $ok, 'and reaches the upstream intact');
my $plain;
gunzip(\last_body() => \$plain);
is($plain, $under, 'which decodes to what was sent');

like(gzreq('/x', gz($rep)), qr/^HTTP\/1\.1 200 /,
	sprintf('the same body (ratio %.0f) under the default limit (100): '
	. 'passes', length($rep) / length(gz($rep))));

like(gzreq('/inline/x', gz($under)), qr/^HTTP\/1\.1 200 /,
	'decoded in the event loop: passes too');

# redaction of a normal compressed body still works

my $body = "{\"messages\": [{\"content\": \"use $GHP please\"}]}";
(my $want = $body) =~ s/\Q$GHP\E/[REDACTED]/;

like(gzreq('/v1', gz($body), host => 'llm'), qr/^HTTP\/1\.1 200 /,
	'redact in a gzip body: forwarded');
my $q = upstream_requests($t, 'api')->[-1];
my $got;
gunzip(\$q->{body} => \$got);
is($got, $want, 'the token replaced in the decoded body');
is(header_value($q, 'Content-Length'), length($q->{body}),
	'Content-Length fixed');
is(header_value($q, 'Content-Encoding'), 'gzip', 'still gzip');

like(gzreq('/v1', gz(gz($body)), host => 'llm', coding => 'gzip, gzip'),
	qr/^HTTP\/1\.1 200 /, 'redact in a gzip, gzip body: forwarded');
my $inner;
gunzip(\last_body() => \$inner);
gunzip(\$inner => \$got);
is($got, $want, 'the token replaced, encoded twice again');

like(gzreq('/inline/v1', gz($body), host => 'llm'), qr/^HTTP\/1\.1 200 /,
	'redact in a gzip body, in the event loop: forwarded');
gunzip(\last_body() => \$got);
is($got, $want, 'the token replaced');

# redaction in a body decoded in the thread, bigger than a chunk

my $long = hexfill(100000) . " $GHP " . hexfill(1000);
(my $longwant = $long) =~ s/\Q$GHP\E/[REDACTED]/;
like(gzreq('/v1', gz($long), host => 'llm'), qr/^HTTP\/1\.1 200 /,
	'redact in a 100 KB gzip body: forwarded');
gunzip(\last_body() => \$got);
ok($got eq $longwant, 'the token replaced, the rest intact');

# a long decode (the limits off) runs in a thread: a GET of another
# request is answered meanwhile, not after it

sub during_bomb {
	my ($path) = @_;
	my $host = 'api.allowed.test:' . port(8081);
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . port(8080))
		or die "connect: $!";
	my $t0 = time();
	print $s "POST http://$host$path HTTP/1.1\r\nHost: $host\r\n"
		. "Connection: close\r\n$auth"
		. "Content-Encoding: gzip, gzip\r\n"
		. 'Content-Length: ' . length($bomb) . "\r\n\r\n$bomb";
	select(undef, undef, undef, 0.03);
	my $t1 = time();
	my $get = proxy_request(8080, "GET http://$host/get HTTP/1.1\r\n"
		. "Host: $host\r\nConnection: close\r\n$auth\r\n");
	my $get_took = time() - $t1;
	local $/;
	my $reply = <$s>;
	return ($reply, $get, $get_took, time() - $t0);
}

my ($bomb_reply, $get, $get_took, $bomb_took) = during_bomb('/big/x');
like($bomb_reply, qr/^HTTP\/1\.1 200 /,
	'63 MiB decoded where the limits are off: passes');
like($get, qr/^HTTP\/1\.1 200 /, 'a GET meanwhile: 200');
ok($get_took < $bomb_took / 2, sprintf('answered while the bomb decodes in '
	. 'a thread (GET %.3f s, bomb %.3f s)', $get_took, $bomb_took));

($bomb_reply, $get, $get_took, $bomb_took) = during_bomb('/big-inline/x');
like($bomb_reply, qr/^HTTP\/1\.1 200 /,
	'the same decoded in the event loop: passes');
diag(sprintf('in the event loop: GET %.3f s, bomb %.3f s', $get_took,
	$bomb_took));

# the agent goes away while its body decodes in a thread: the request is
# kept until the thread is done, then closed; the worker goes on

my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . port(8080))
	or die "connect: $!";
my $bhost = 'api.allowed.test:' . port(8081);
print $s "POST http://$bhost/big/x HTTP/1.1\r\nHost: $bhost\r\n"
	. "Connection: close\r\n$auth"
	. "Content-Encoding: gzip, gzip\r\n"
	. 'Content-Length: ' . length($bomb) . "\r\n\r\n$bomb";
select(undef, undef, undef, 0.03);
close $s;
select(undef, undef, undef, 0.6);
like(gzreq('/x', gz('{"a": 1}')), qr/^HTTP\/1\.1 200 /,
	'the agent closed during a threaded decode: the next request passes');

# logged once

my $log = $t->read_file('error.log');
my @lines = grep { /bottle refused: .*bottle_dlp_decoded_ratio/ }
	split /\n/, $log;
is(scalar @lines, 3, 'each ratio refusal logged once');
unlike($log, qr/\Q$CANARY\E|\Q$GHP\E/, 'no canary or token in the log');

###############################################################################
