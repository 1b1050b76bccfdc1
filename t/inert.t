#!/usr/bin/perl

# Tests for ngx_bottle being inert where it is not used: loading the module
# changes nothing in servers that do not use its directives, or that turn
# them off, even when other servers of the same nginx use them.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use IO::Select;
use IO::Socket::INET;
use POSIX qw//;
use Time::HiRes qw/ time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $d = $t->testdir();

# 1: the module loaded (%%TEST_GLOBALS%%), none of its directives

$t->write_file_expand('nginx.conf', <<'EOF');

%%TEST_GLOBALS%%

daemon off;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:8082;
        proxy_pass 127.0.0.1:8083;
    }

    server {
        listen 127.0.0.1:8085;
        proxy_pass 127.0.0.1:8086;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen 127.0.0.1:8080;
        server_name localhost;

        location / {
            proxy_pass http://127.0.0.1:8081;
        }
    }
}

EOF

fake_upstream($t, port => port(8081), name => 'api');
echo_daemon($t, port(8083));
banner_daemon($t, port(8086));

$t->run()->plan(50);

###############################################################################

like($t->read_file('nginx.conf'),
	qr/^load_module \Q$Test::Nginx::MODULE\E;$/m, 'module loaded');

inert_checks('no directives');

unlike($t->read_file('error.log'), qr/bottle refused/,
	'no directives: nothing refused');

###############################################################################

# 2: the same servers, with the module's directives turned off explicitly,
# next to a front and a pipeline that use them (so its handlers are
# installed and must decline there)

$t->stop();

my $SECRET = 'secret-api-value-1';

write_policy($t, 'policy.json', { bottles => [ {
	id => 'alice',
	token => 'alice-token-0123456789',
	egress_tokens => { API => $SECRET },
	routes => [ { host => '127.0.0.1', port => port(8081),
		auth => { type => 'bearer', value => 'secret:API' } } ],
} ] });

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
        listen 127.0.0.1:8084;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass $bottle_upstream;
    }

    server {
        listen 127.0.0.1:8082;
        bottle_front off;
        proxy_pass 127.0.0.1:8083;
    }

    server {
        listen 127.0.0.1:8085;
        proxy_pass 127.0.0.1:8086;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://$bottle_upstream$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }

    server {
        listen 127.0.0.1:8080;
        server_name localhost;
        bottle off;

        location / {
            proxy_pass http://127.0.0.1:8081;
        }
    }
}

EOF

$t->run();

# the module is active in this nginx: the front answers

my $r = proxy_request(8084, "GET http://127.0.0.1:" . port(8081)
	. "/front HTTP/1.1\r\nHost: 127.0.0.1:" . port(8081) . "\r\n"
	. "Proxy-Authorization: " . basic('a', 'alice-token-0123456789') . "\r\n"
	. "Authorization: Bearer agent-own\r\n"
	. "Connection: close\r\n\r\n");
like($r, qr/^HTTP\/1\.1 200 /, 'front in use: allowed');
is(header_value(upstream_requests($t, 'api')->[-1], 'Authorization'),
	"Bearer $SECRET", 'front in use: pipeline replaced the credential');
like(proxy_request(8084, "GET http://127.0.0.1:" . port(8081)
	. "/front HTTP/1.1\r\nHost: 127.0.0.1:" . port(8081) . "\r\n"
	. "Connection: close\r\n\r\n"),
	qr/^HTTP\/1\.1 407 .*^X-Bottle-Rule: identity\r$/ms,
	'front in use: no token 407');

my $mark = -s "$d/error.log";

inert_checks('turned off');

unlike(substr($t->read_file('error.log'), $mark), qr/bottle refused/,
	'turned off: nothing refused');

###############################################################################

# what a server that does not use the module must do: exactly what nginx
# does without it

sub inert_checks {
	my ($what) = @_;

	my $up = port(8081);
	my $n = scalar @{upstream_requests($t, 'api')};
	my $proxy_auth = basic('agent', 'alice-token-0123456789');

	# a request with every kind of credential the pipeline would strip

	my $r = http("GET /path/x?access_token=tok123&key=k&x=1 HTTP/1.1\r\n"
		. "Host: localhost\r\n"
		. "Authorization: Bearer agent-own\r\n"
		. "Cookie: session=abc; theme=dark\r\n"
		. "Proxy-Authorization: $proxy_auth\r\n"
		. "Proxy-Connection: keep-alive\r\n"
		. "X-Api-Key: agent-key\r\n"
		. "Connection: close\r\n\r\n");

	like($r, qr/^HTTP\/1\.1 200 /, "$what: proxied");
	is(http_content($r), "upstream api ok\n", "$what: upstream body");
	unlike($r, qr/^X-Bottle-Rule:/mi, "$what: no X-Bottle-Rule");

	my $reqs = upstream_requests($t, 'api');
	is(scalar @$reqs, $n + 1, "$what: one request upstream");

	my $req = $reqs->[-1] // {};
	is($req->{target}, '/path/x?access_token=tok123&key=k&x=1',
		"$what: query unchanged");
	is_deeply([ header_value($req, 'Authorization') ],
		[ 'Bearer agent-own' ], "$what: Authorization unchanged");
	is_deeply([ header_value($req, 'Cookie') ],
		[ 'session=abc; theme=dark' ], "$what: Cookie unchanged");
	is_deeply([ header_value($req, 'Proxy-Authorization') ],
		[ $proxy_auth ], "$what: Proxy-Authorization unchanged");
	is_deeply([ header_value($req, 'Proxy-Connection') ],
		[ 'keep-alive' ], "$what: Proxy-Connection unchanged");
	is_deeply([ header_value($req, 'X-Api-Key') ],
		[ 'agent-key' ], "$what: X-Api-Key unchanged");
	is(header_value($req, 'Host'), "127.0.0.1:$up",
		"$what: Host as proxy_pass sets it");

	# an absolute URI: nginx takes the path, the module does nothing

	$r = http("GET http://example.org/abs?y=2 HTTP/1.1\r\n"
		. "Host: example.org\r\nConnection: close\r\n\r\n");
	like($r, qr/^HTTP\/1\.1 200 /, "$what: absolute URI proxied");
	is(upstream_requests($t, 'api')->[-1]{target}, '/abs?y=2',
		"$what: absolute URI's path upstream");

	# CONNECT: nginx's own answers, no challenge, nothing upstream.
	# nginx 1.22 without the module: an authority-form target does not
	# parse (400), CONNECT with an origin-form target is 405 (1.21.1+)

	my $c = upstream_connects($t, 'api');

	$r = http("CONNECT example.org:443 HTTP/1.1\r\n"
		. "Host: example.org:443\r\n"
		. "Proxy-Authorization: $proxy_auth\r\n\r\n");
	like($r, qr/^HTTP\/1\.1 400 Bad Request\r\n.*<center>nginx\//s,
		"$what: CONNECT host:port: nginx's 400");
	unlike($r, qr/^(?:X-Bottle-Rule|Proxy-Authenticate):/mi,
		"$what: CONNECT host:port: no bottle headers");

	$r = http("CONNECT /x HTTP/1.1\r\nHost: example.org:443\r\n\r\n");
	like($r, qr/^HTTP\/1\.1 405 Not Allowed\r\n.*<center>nginx\//s,
		"$what: CONNECT /x: nginx's 405");
	unlike($r, qr/^(?:X-Bottle-Rule|Proxy-Authenticate):/mi,
		"$what: CONNECT /x: no bottle headers");

	is(upstream_connects($t, 'api'), $c, "$what: CONNECT: nothing upstream");

	# stream: bytes through unchanged, also those that look like a
	# proxy request

	my @payloads = (
		"CONNECT x:1 HTTP/1.1\r\n\r\n",
		"GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n",
		"CONNECT x:1 HTTP/1.1\r\n\r\n\x00\x01\x02\xff" . ("z" x 20000),
	);

	my @names = ('CONNECT head', 'absolute-URI head', 'CONNECT + binary');

	for my $i (0 .. $#payloads) {
		my $got = echo(8082, $payloads[$i]) // '(undef)';
		ok($got eq $payloads[$i],
			"$what: stream: $names[$i] echoed unchanged")
			or diag(sprintf('sent %d bytes, got %d: %s',
				length $payloads[$i], length $got,
				substr(printable($got), 0, 200)));
	}

	# a server that speaks first: nothing waits for the client's bytes

	my $s = proxy_session(8085);
	is($s && $s->read_raw(3), "220 banner\r\n",
		"$what: stream: server speaks first");
	$s->close() if $s;
}

sub printable {
	my ($s) = @_;
	$s =~ s/([^\x20-\x7e])/sprintf('\\x%02x', ord($1))/ge;
	return $s;
}

# a TCP server that greets first, then closes when the client does

sub banner_daemon {
	my ($t, $port) = @_;

	my $listen = IO::Socket::INET->new(LocalAddr => "127.0.0.1:$port",
		Listen => 16, ReuseAddr => 1, Proto => 'tcp')
		or die "banner: can't listen on $port: $!\n";

	$t->run_daemon(sub {
		$SIG{CHLD} = 'IGNORE';
		while (my $c = $listen->accept()) {
			my $pid = fork();
			next if !defined $pid;
			if ($pid) {
				close $c;
				next;
			}
			close $listen;
			syswrite($c, "220 banner\r\n");
			my $buf;
			1 while sysread($c, $buf, 65536);
			close $c;
			POSIX::_exit(0);
		}
	});

	close $listen;
}

# a TCP echo server: everything read is written back; closes at EOF

sub echo_daemon {
	my ($t, $port) = @_;

	my $listen = IO::Socket::INET->new(LocalAddr => "127.0.0.1:$port",
		Listen => 16, ReuseAddr => 1, Proto => 'tcp')
		or die "echo: can't listen on $port: $!\n";

	$t->run_daemon(sub {
		$SIG{CHLD} = 'IGNORE';
		while (my $c = $listen->accept()) {
			my $pid = fork();
			next if !defined $pid;
			if ($pid) {
				close $c;
				next;
			}
			close $listen;
			my $buf;
			while (sysread($c, $buf, 65536)) {
				my $off = 0;
				while ($off < length $buf) {
					my $w = syswrite($c, $buf, length($buf) - $off,
						$off);
					last unless $w;
					$off += $w;
				}
			}
			close $c;
			POSIX::_exit(0);
		}
	});

	close $listen;
}

# send bytes, read until as many came back (or the timeout): nginx 1.22's
# stream proxy has no half-close, so the connection stays open

sub echo {
	my ($port, $bytes) = @_;

	my $s = proxy_session($port) or return undef;
	$s->send($bytes);

	my $got = '';
	my $deadline = time() + 5;
	while (length($got) < length($bytes) && time() < $deadline) {
		my $chunk = $s->read_raw($deadline - time());
		last unless defined $chunk;
		$got .= $chunk;
	}
	$s->close();

	return $got;
}

###############################################################################
