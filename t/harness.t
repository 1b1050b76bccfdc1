#!/usr/bin/perl

# Self-test of the test harness (t/lib): Test::Nginx with plain nginx
# (no ngx_bottle needed), fake upstreams, dnsmasq, certificates, reload,
# sessions, and that every daemon is gone afterwards.

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

my $t = Test::Nginx->new()->has(qw/http proxy rewrite ssl/)
	->has(qw/dnsmasq openssl socket_ssl_sni/);

my $conf = <<'EOF';

%%TEST_GLOBALS%%

daemon off;

events {
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%% valid=1s ipv6=off;
    resolver_timeout 3s;

    server {
        listen       127.0.0.1:8080;
        server_name  localhost;

        location / {
            proxy_pass http://127.0.0.1:8081;
            proxy_set_header X-Test yes;
            proxy_buffering off;
        }

        location /dns/ {
            set $backend api.allowed.test;
            proxy_pass http://$backend:%%PORT_8081%%;
        }

        location /nxdomain/ {
            set $backend nope.test;
            proxy_pass http://$backend:%%PORT_8081%%;
        }

        location /tls/ {
            proxy_pass https://127.0.0.1:8082;
            proxy_ssl_server_name on;
            proxy_ssl_name secure.test;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate %%TESTDIR%%/ca.crt;
        }

        location /two/ {
            proxy_pass http://127.0.0.2:%%PORT_8083%%;
        }

        location /version {
            return 200 "config one\n";
        }
    }
}

EOF

$t->write_file_expand('nginx.conf', $conf);

my $ca = gen_ca($t, 'ca');
my $cert = gen_cert($t, $ca, 'secure.test', 'secure.test', '127.0.0.1');

fake_upstream($t, port => port(8081), name => 'api');
fake_upstream($t, port => port(8082), name => 'secure', tls => 1,
	cert => $cert->{cert}, key => $cert->{key});
fake_upstream($t, port => port(8083), name => 'two', addr => '127.0.0.2');

dns_start($t, port => port(8053, udp => 1), hosts => {
	'api.allowed.test' => '127.0.0.1',
	'v6.test' => '::1',
	'multi.test' => [ '127.0.0.3', '127.0.0.4' ],
});

$t->run()->plan(53);

###############################################################################

# plain proxying

my $r = http_get('/hello?x=1');
like($r, qr!^HTTP/1\.1 200 OK\r?\n!, 'proxied GET');
like($r, qr/^X-Upstream: api\r?$/m, 'upstream name header');
is(http_content($r), "upstream api ok\n", 'upstream body');

my $reqs = upstream_requests($t, 'api');
is(scalar @$reqs, 1, 'one request recorded');
is($reqs->[0]{method}, 'GET', 'recorded method');
is($reqs->[0]{target}, '/hello?x=1', 'recorded target');
is($reqs->[0]{version}, 'HTTP/1.0', 'recorded version');
is(header_value($reqs->[0], 'x-test'), 'yes', 'recorded proxy_set_header');
is(header_value($reqs->[0], 'Host'), '127.0.0.1:' . port(8081),
	'recorded Host');
is(header_value($reqs->[0], 'X-Absent'), undef, 'absent header is undef');

# POST with Content-Length and chunked, through nginx

$r = http("POST /post HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
	. "Content-Length: 11\r\n\r\nhello world");
like($r, qr/200 OK/, 'POST content-length');
is(upstream_requests($t, 'api')->[-1]{body}, 'hello world',
	'POST body recorded');

$r = http("POST /chunked HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
	. "Transfer-Encoding: chunked\r\n\r\n"
	. "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
like($r, qr/200 OK/, 'POST chunked');
is(upstream_requests($t, 'api')->[-1]{body}, 'hello world',
	'chunked POST body recorded');

# the fake upstream itself: chunked body, header order and case kept

my $before = upstream_connects($t, 'api');

$r = proxy_request(8081, "PUT /direct HTTP/1.1\r\nHost: a.test\r\n"
	. "X-CaSe: one\r\nx-case: two\r\nX-Empty:\r\n"
	. "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
	. "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n");
like($r, qr/^HTTP\/1\.1 200 .*Connection: close/s, 'direct chunked PUT');

my $req = upstream_requests($t, 'api')->[-1];
is($req->{body}, 'abcde', 'chunked body decoded');
is_deeply([ map { $_->[0] } @{$req->{headers}} ],
	[ 'Host', 'X-CaSe', 'x-case', 'X-Empty', 'Transfer-Encoding',
		'Connection' ],
	'header order and case kept');
is_deeply([ header_value($req, 'X-CASE') ], [ 'one', 'two' ],
	'header_value list');
is(header_count($req, 'x-case'), 2, 'header_count');
is($req->{chunked}, 1, 'chunked flagged');
is_deeply($req->{trailers}, [ [ 'X-Trailer', 't' ] ], 'trailers recorded');
is(upstream_connects($t, 'api'), $before + 1, 'connect event recorded');

# keep-alive sessions: to the upstream directly, and to nginx

$before = upstream_connects($t, 'api');
my $n = @{upstream_requests($t, 'api')};

my $s = proxy_session(8081);
$s->send("GET /ka1 HTTP/1.1\r\nHost: a.test\r\n\r\n");
like($s->read_response(), qr/^HTTP\/1\.1 200 .*upstream api ok\n\z/s,
	'upstream keep-alive 1');
$s->send("HEAD /ka2 HTTP/1.1\r\nHost: a.test\r\n\r\n");
like($s->read_response(), qr/^HTTP\/1\.1 200 .*Content-Length: 16\r\n\r\n\z/s,
	'upstream keep-alive 2 (HEAD, no body read)');
$s->send("GET /status/204 HTTP/1.1\r\nHost: a.test\r\n\r\n"
	. "GET /ka3 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
like($s->read_response(), qr/^HTTP\/1\.1 204 /, 'pipelined 1');
like($s->read_response(), qr/Connection: close\r\n\r\nupstream api ok\n\z/,
	'pipelined 2');
is($s->read_raw(), undef, 'closed after Connection: close');
$s->close();

is(upstream_connects($t, 'api'), $before + 1, 'one connection');
is_deeply([ map { $_->{target} } @{upstream_requests($t, 'api')}[$n .. $n + 3] ],
	[ '/ka1', '/ka2', '/status/204', '/ka3' ], 'four requests on it');

$s = proxy_session(8080);
$s->send("GET /k1 HTTP/1.1\r\nHost: localhost\r\n\r\n");
my $r1 = $s->read_response();
$s->send("GET /k2 HTTP/1.1\r\nHost: localhost\r\n\r\n");
my $r2 = $s->read_response();
$s->close();
ok($r1 =~ /200 OK/ && http_content($r1) eq "upstream api ok\n"
	&& $r2 =~ /200 OK/ && http_content($r2) eq "upstream api ok\n",
	'nginx keep-alive: two requests on one connection');

# special paths

like(http_get('/status/404'), qr!^HTTP/1\.1 404 !, 'status path');
like(http_get('/set-cookie?sid=abc'), qr/^Set-Cookie: sid=abc\r?$/m,
	'set-cookie path');

$r = http("GET /sse?n=3&gap_ms=50 HTTP/1.1\r\nHost: localhost\r\n"
	. "Connection: close\r\n\r\n");
like($r, qr/Content-Type: text\/event-stream/, 'sse content type');
is(http_content($r), join('', map { "id: $_\ndata: event $_\n\n" } 1 .. 3),
	'sse events');

# two-phase exchange

$s = http_start("GET /two-phase HTTP/1.0\r\n");
select undef, undef, undef, 0.1;
print $s "Host: localhost\r\n\r\n";
like(http_end($s), qr/upstream api ok/, 'http_start/http_end');

# TLS upstream (gen_ca/gen_cert; nginx verifies the chain and sends SNI)

like(http_get('/tls/x'), qr/upstream secure ok/, 'TLS upstream');
my $tls = upstream_requests($t, 'secure')->[-1];
ok($tls->{tls} && ($tls->{sni} // '') eq 'secure.test', 'TLS and SNI recorded');

# another loopback address

like(http_get('/two/y'), qr/upstream two ok/, 'upstream on 127.0.0.2');
like(upstream_requests($t, 'two')->[-1]{peer}, qr/^127\.0\.0\.1:\d+$/,
	'peer recorded');

# DNS

my $a = dns_lookup(port(8053), 'api.allowed.test');
is_deeply($a && $a->{answers}, [ '127.0.0.1' ], 'dns A');
is_deeply(dns_lookup(port(8053), 'v6.test', 'AAAA')->{answers}, [ '::1' ],
	'dns AAAA');
$a = dns_lookup(port(8053), 'multi.test');
is_deeply([ sort @{$a->{answers}} ], [ '127.0.0.3', '127.0.0.4' ],
	'dns two addresses');
is(dns_lookup(port(8053), 'nope.test')->{rcode_name}, 'NXDOMAIN',
	'dns unknown name NXDOMAIN');

like(http_get('/dns/z'), qr/upstream api ok/, 'nginx resolved a name');
like(http_get('/nxdomain/z'), qr!^HTTP/1\.1 502 !, 'nginx: unknown name 502');

my @q = dns_queries($t);
ok((grep { $_ eq 'api.allowed.test' } @q)
	&& (grep { $_ eq 'nope.test' } @q)
	&& !(grep { /probe/ } @q), 'queries logged');

dns_update($t, hosts => { 'late.test' => '127.0.0.9' });
ok(dns_lookup(port(8053), 'late.test')->{answers}[0] eq '127.0.0.9'
	&& dns_lookup(port(8053), 'api.allowed.test')->{rcode_name} eq 'NXDOMAIN',
	'dns_update');

# more special paths

is(length(http_content(http_get('/bytes?n=100000'))), 100000, 'bytes path');
like(http_get('/drop'), qr!^HTTP/1\.1 502 !, 'drop path');

# reload

(my $conf2 = $conf) =~ s/config one/config two/;
$t->write_file_expand('nginx.conf', $conf2);
ok($t->reload(), 'reload');
like(http_get('/version'), qr/config two/, 'new configuration in effect');

# stopping

my $master = $t->nginx_pid();
my @daemons = $t->daemon_pids();
$t->stop();
$t->stop_daemons();
ok(!kill(0, $master), 'nginx stopped');
ok(!(grep { kill(0, $_) || kill(0, -$_) } @daemons),
	'daemons and their children stopped');

###############################################################################
