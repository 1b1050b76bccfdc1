#!/usr/bin/perl

# The front's log line names the connection's final verdict
# (docs/refusals.md, "The front's log line"): a connection handed to the
# plain listener whose request the http side refused says verdict=refused
# with the refusal's rule and refused=1 in stream.log, not "handoff"; one
# with only allowed requests says handoff, refused=0; a keep-alive
# connection with an allowed request then a refused one counts the refusal.
# The front's own refusals are as before.  The shipped log format is used.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use IO::Socket::INET;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy bottle/);

# the shipped stream log format, as nginx-conf/bottle-stream.conf has it

my $conf = $t->read_file("$Test::Nginx::REPO/nginx-conf/bottle-stream.conf");
my ($format) = $conf =~ /^(log_format\s+ngx_bottle_stream\s.*?;)$/ms
	or die "no log format in bottle-stream.conf\n";

$t->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;
worker_processes 2;

bottle_policy %%TESTDIR%%/policy.json;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    $format

    server {
        listen 127.0.0.1:8080;
        access_log %%TESTDIR%%/stream.log ngx_bottle_stream;
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
            proxy_set_header Connection "";
        }
    }
}

EOF

my $ALICE = 'alice-token-0123456789';
my $P1 = port(8081);

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $ALICE, routes => [
		{ host => '127.0.0.1', port => $P1 } ] },
] });

fake_upstream($t, port => $P1, name => 'one');

$t->run()->plan(8);

###############################################################################

sub req {
	my ($method, $path, $close) = @_;
	return "$method http://127.0.0.1:$P1$path HTTP/1.1\r\n"
		. "Host: 127.0.0.1:$P1\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $ALICE) . "\r\n"
		. ($close ? "Connection: close\r\n" : '') . "\r\n";
}

# the requests on one connection; its local port, which the stream log's
# $remote_addr does not show, is matched by the line's order instead

sub conn {
	my (@reqs) = @_;
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . port(8080))
		or die "connect: $!\n";
	my $all = '';
	for my $i (0 .. $#reqs) {
		$s->print($reqs[$i]);
		my $got = '';
		my $deadline = time() + 5;
		while (time() < $deadline) {
			my $n = sysread($s, my $buf, 65536);
			last unless $n;
			$got .= $buf;
			last if $got =~ /\r\n\r\n/
				&& ($got =~ /Content-Length: (\d+)/i
				? length($got) >= index($got, "\r\n\r\n") + 4 + $1
				: 1);
		}
		$all .= $got;
	}
	close $s;
	return $all;
}

sub stream_lines {
	my ($n) = @_;
	my @l;
	my $deadline = time() + 10;
	while (time() < $deadline) {
		@l = grep { length } split /\n/, $t->read_file('stream.log');
		last if @l >= $n;
		sleep 0.1;
	}
	return @l;
}

###############################################################################

like(conn(req('GET', '/ok', 1)), qr/^HTTP\/1\.1 200 /, 'allowed');
my @l = stream_lines(1);
like($l[0], qr/ verdict=handoff rule=none .*refused=0 /,
	'allowed: handoff, none refused');

like(conn(req('DELETE', '/no', 1)), qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: method/s,
	'refused on the http side');
@l = stream_lines(2);
like($l[1], qr/ verdict=refused rule=method refused=1 /,
	'refused: the front\'s line names the refusal');

my $r = conn(req('GET', '/a'), req('POST', '/b', 1));
like($r, qr/ 200 .* 403 /s, 'kept alive: allowed, then refused');
@l = stream_lines(3);
like($l[2], qr/ verdict=refused rule=method .*refused=1 /,
	'kept alive: the refusal named');

# a token no bottle has: refused on the http side for a plain request, at
# the front for a CONNECT

conn("GET http://127.0.0.1:$P1/ HTTP/1.1\r\nHost: 127.0.0.1:$P1\r\n"
	. "Proxy-Authorization: " . basic('agent', 'nope-0123456789') . "\r\n"
	. "Connection: close\r\n\r\n");
@l = stream_lines(4);
like($l[3], qr/ verdict=refused rule=identity refused=1 up=unix:/,
	'unknown token, plain: refused on the http side, named');

conn("CONNECT 127.0.0.1:$P1 HTTP/1.1\r\nHost: 127.0.0.1:$P1\r\n"
	. "Proxy-Authorization: " . basic('agent', 'nope-0123456789') . "\r\n"
	. "\r\n");
@l = stream_lines(5);
like($l[4], qr/ verdict=refused rule=identity refused=1 up=- /,
	'unknown token, CONNECT: the front\'s own refusal, as before');

###############################################################################
