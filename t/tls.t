#!/usr/bin/perl

# TLS interception, end to end with real TLS on both sides: CONNECT to an
# inspected route, the leaf minted for the target and signed by the gateway
# CA, the pipeline inside the tunnel (HTTP/1.1 and HTTP/2), the Host,
# :authority and SNI checks, the verified upstream, streaming, plain HTTP
# inside a tunnel, and the CONNECT records of the zone.

###############################################################################

use warnings;
use strict;

use Test::More;
use Time::HiRes qw/ time sleep /;
use IO::Socket::UNIX;
use MIME::Base64 qw//;
use IO::Compress::Gzip qw//;
use IO::Uncompress::Gunzip qw//;
use Digest::SHA qw//;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl http_v2 bottle/)
	->has(qw/dnsmasq openssl socket_ssl_sni/)->has_daemon('curl');

$t->write_file_expand('nginx.conf', <<'EOF');

%%TEST_GLOBALS%%

daemon off;

bottle_policy %%TESTDIR%%/policy.json;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    log_format front '$remote_port verdict=$bottle_verdict up=$upstream_addr';
    access_log %%TESTDIR%%/stream.log front;

    server {
        listen 127.0.0.1:8080;
        listen [::1]:%%PORT_8086%%;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        bottle_tls_pass unix:%%TESTDIR%%/tls.sock;
        proxy_pass $bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;
    resolver_timeout 3s;

    upstream bottle_plain {
        bottle_upstream;
    }

    upstream bottle_tls {
        bottle_upstream max=8 max_per_target=2 idle_timeout=30s;
    }

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            error_page 502 504 = @failed;
        }

        location @failed {
            bottle_upstream_failed;
        }
    }

    server {
        listen unix:%%TESTDIR%%/tls.sock ssl http2 proxy_protocol;
        bottle on;
        bottle_ca %%TESTDIR%%/gwca.crt %%TESTDIR%%/gwca.key;
        ssl_session_cache shared:bottle_tls:1m;

        location / {
            proxy_pass https://bottle_tls$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection $bottle_connection;
            proxy_set_header Upgrade $bottle_upgrade;
            proxy_buffering off;
            proxy_ssl_server_name on;
            proxy_ssl_name $bottle_host;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate %%TESTDIR%%/upca.crt;
            error_page 502 504 = @failed;
        }

        location @failed {
            bottle_upstream_failed;
        }
    }

    server {
        listen 127.0.0.1:8090;

        location /tunnels {
            return 200 "tunnels=$bottle_tunnels\n";
        }

        location = /approve {
            bottle_safelist_approve;
        }
    }
}

EOF

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'api.allowed.test', 'other.allowed.test',
	'dlp.allowed.test');
my $self = gen_cert($t, undef, 'self', 'bad.allowed.test');

my $TOKEN = 'alice-token-0123456789';
my $CANARY = 'CANARY-5e1d77c0a3b94f28';
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);
my $API = 'secret-api-value-1';
my $T = JSON::PP::true;

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, egress_tokens => { API => $API },
		canary => $CANARY,
		routes => [
		{ host => 'api.allowed.test', port => port(8443), internal => $T,
			methods => [ 'GET', 'POST' ],
			auth => { type => 'bearer', value => 'secret:API' } },
		{ host => 'other.allowed.test', port => port(8443),
			internal => $T, websocket => $T, methods => [ '*' ],
			agent_provider => $T },
		{ host => 'bad.allowed.test', port => port(8444),
			internal => $T },
		{ host => 'dlp.allowed.test', port => port(8443),
			internal => $T, methods => [ 'GET', 'POST' ],
			dlp => { outbound => [ 'known_secrets', 'entropy' ],
				inbound => [ 'naive_injection_detection' ],
				on_match => 'block' } },
		{ host => '127.0.0.1', port => port(8443) },
		{ host => 'plain.allowed.test', port => port(8081),
			internal => $T,
			auth => { type => 'bearer', value => 'secret:API' } },
	] },
] });

dns_start($t, port => port(8053), hosts => { map { ($_ => '127.0.0.1') }
	qw/api.allowed.test other.allowed.test bad.allowed.test
	plain.allowed.test dlp.allowed.test/ });

fake_upstream($t, port => 8443, name => 'api', tls => 1,
	cert => $up->{cert}, key => $up->{key});
fake_upstream($t, port => 8444, name => 'bad', tls => 1,
	cert => $self->{cert}, key => $self->{key});
fake_upstream($t, port => 8081, name => 'plain');

$t->run()->plan(95);

###############################################################################

my $auth = basic('agent', $TOKEN);
my $PROXY = 'http://agent:' . $TOKEN . '@127.0.0.1:' . port(8080);
my $API_URL = 'https://api.allowed.test:' . port(8443);

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

sub last_req {
	my ($name) = @_;
	return upstream_requests($t, $name)->[-1];
}

sub tunnel {
	my ($target, %o) = @_;
	my $s = proxy_session(8080);
	$s->send("CONNECT $target HTTP/1.1\r\nHost: $target\r\n"
		. "Proxy-Authorization: $auth\r\n\r\n");
	my $r = $s->read_response();
	return undef unless $r =~ /^HTTP\/1\.1 200 /;
	return $s;
}

# curl through the tunnel, HTTP/2 by ALPN, the gateway CA trusted

my $r = curl('-H', 'Authorization: Bearer agent-own',
	'-H', 'X-Api-Key: agent-key', "$API_URL/hello?access_token=x&a=1");
like($r, qr/^HTTP\/2 200 /m, 'HTTPS through an inspected route: 200');
like($r, qr/upstream api ok/, 'the upstream answered');

my $q = last_req('api');
is($q->{target}, '/hello?a=1', 'query credential stripped inside TLS');
is(header_value($q, 'Authorization'), "Bearer $API",
	'route credential injected inside TLS');
is(header_count($q, 'Authorization'), 1, 'agent Authorization replaced');
is(header_value($q, 'X-Api-Key'), undef, 'agent X-Api-Key stripped');
is(header_value($q, 'Host'), 'api.allowed.test:' . port(8443),
	'Host is the target');
is($q->{sni}, 'api.allowed.test', 'upstream SNI is the target');

$r = curl('--http1.1', "$API_URL/one");
like($r, qr/^HTTP\/1\.1 200 .*upstream api ok/ms, 'HTTP/1.1 inside TLS');

$r = curl('-X', 'POST', '--data-binary', 'the body', "$API_URL/post");
like($r, qr/^HTTP\/2 200 /m, 'POST through the tunnel');
is(last_req('api')->{body}, 'the body', 'body reached the upstream');

# upstream connections kept alive per target, across agent connections

curl("$API_URL/ka$_") for 1 .. 5;
my @ka = grep { $_->{target} =~ m!^/ka\d$! } @{upstream_requests($t, 'api')};
my %conns = map { ($_->{conn} => 1) } @ka;
is(scalar @ka, 5, 'five requests over five agent connections');
is(scalar keys %conns, 1, 'all five over one upstream connection');

curl('https://other.allowed.test:' . port(8443) . '/o');
$q = last_req('api');
is($q->{sni}, 'other.allowed.test', 'another host at the same address');
ok(!$conns{$q->{conn}}, 'never over a connection verified for another name');

# the minted certificate

my $pem = `openssl s_client -connect api.allowed.test:@{[ port(8443) ]} -proxy 127.0.0.1:@{[ port(8080) ]} -proxy_user agent -proxy_pass pass:$TOKEN -servername api.allowed.test -CAfile $gwca->{cert} -verify_return_error -showcerts </dev/null 2>&1`;
like($pem, qr/Verify return code: 0 \(ok\)/, 'openssl s_client through CONNECT verifies');
like($pem, qr/ 0 s:CN\s*=\s*api\.allowed\.test.*\n\s*i:CN\s*=\s*gwca.*\n.*BEGIN CERT.*1 s:CN\s*=\s*gwca/s,
	'chain served: leaf, then the gateway CA');

# session resumption for an agent that reconnects

my $sess = $t->testdir() . '/session.pem';
my $sc = "openssl s_client -connect api.allowed.test:@{[ port(8443) ]} -proxy 127.0.0.1:@{[ port(8080) ]} -proxy_user agent -proxy_pass pass:$TOKEN -servername api.allowed.test -CAfile $gwca->{cert} -tls1_2";
like(`$sc -sess_out $sess </dev/null 2>&1`, qr/^New, TLSv1\.2/m,
	'first handshake: new session');
like(`$sc -sess_in $sess </dev/null 2>&1`, qr/^Reused, TLSv1\.2/m,
	'reconnect: session resumed');

my $s = tunnel('api.allowed.test:' . port(8443));
ok($s && $s->start_ssl(SSL_hostname => 'api.allowed.test',
	SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
	SSL_ca_file => $gwca->{cert}, SSL_verifycn_name => 'api.allowed.test',
	SSL_verifycn_scheme => 'http'),
	'minted leaf verifies against the gateway CA');

my $cert = $s && $s->{sock}->peer_certificate();
my $subject = $cert ? Net::SSLeay::X509_NAME_oneline(
	Net::SSLeay::X509_get_subject_name($cert)) : '';
my $issuer = $cert ? Net::SSLeay::X509_NAME_oneline(
	Net::SSLeay::X509_get_issuer_name($cert)) : '';
like($subject, qr/CN\s*=\s*api\.allowed\.test/, 'leaf subject names the target');
like($issuer, qr/CN\s*=\s*gwca/, 'leaf issued by the gateway CA');
my @san = $cert ? Net::SSLeay::X509_get_subjectAltNames($cert) : ();
is_deeply([ @san[0, 1] ], [ 2, 'api.allowed.test' ], 'leaf SAN DNS name');

$s->send("GET /keep HTTP/1.1\r\nHost: api.allowed.test:" . port(8443)
	. "\r\n\r\n") if $s;
like($s ? $s->read_response() : '', qr/upstream api ok/,
	'request on the verified tunnel');

# Host, :authority and SNI must name the CONNECT target

my $n = @{upstream_requests($t, 'api')};

$r = curl('--http1.1', '-H', 'Host: other.allowed.test:' . port(8443),
	"$API_URL/x");
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: host_mismatch/msi,
	'Host names another listed host inside the tunnel: 403');

$r = curl('--http2', '-H', 'Host: other.allowed.test:' . port(8443),
	"$API_URL/x");
like($r, qr/^HTTP\/2 403 .*x-bottle-rule: host_mismatch/msi,
	'HTTP/2 :authority names another host: 403');

$s = tunnel('api.allowed.test:' . port(8443));
ok($s && $s->start_ssl(SSL_hostname => 'other.allowed.test'),
	'TLS with SNI naming another host');
$s->send("GET /sni HTTP/1.1\r\nHost: api.allowed.test:" . port(8443)
	. "\r\nConnection: close\r\n\r\n") if $s;
like($s ? $s->read_response() : '', qr/^HTTP\/1\.1 403 .*SNI/s,
	'SNI names another host: 403');

# an SNI of "host:port" (Go's hey, tools that set ServerName from Host)
# passes when it is exactly the CONNECT target, and nothing looser

sub sni_get {
	my ($sni, $path) = @_;
	my $s = tunnel('api.allowed.test:' . port(8443));
	return 'no tunnel' unless $s;
	return 'no TLS' unless $s->start_ssl(SSL_hostname => $sni,
		SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
		SSL_ca_file => $gwca->{cert},
		SSL_verifycn_name => 'api.allowed.test',
		SSL_verifycn_scheme => 'http');
	$s->send("GET $path HTTP/1.1\r\nHost: api.allowed.test:" . port(8443)
		. "\r\nConnection: close\r\n\r\n");
	return $s->read_response() // '';
}

like(sni_get('api.allowed.test:' . port(8443), '/sniport'),
	qr/^HTTP\/1\.1 200 .*upstream api ok/s,
	'SNI host:port of the CONNECT target: 200');
is(last_req('api')->{target}, '/sniport', 'and it reached the upstream');
like(sni_get('API.allowed.test.:' . port(8443), '/sniport'),
	qr/^HTTP\/1\.1 200 /, 'SNI host:port, another spelling of the host: 200');

$n = @{upstream_requests($t, 'api')};

like(sni_get('api.allowed.test:' . port(8444), '/x'),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: host_mismatch/msi,
	'SNI host:port, another port: 403');
like(sni_get('api.allowed.test:', '/x'),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: host_mismatch/msi,
	'SNI "host:" without a port: 403');
like(sni_get('api.allowed.test:0' . port(8443), '/x'),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: host_mismatch/msi,
	'SNI port with a leading zero: 403');
like(sni_get('api.allowed.test:' . port(8443) . ':' . port(8443), '/x'),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: host_mismatch/msi,
	'SNI with two ports: 403');
like(sni_get('other.allowed.test:' . port(8443), '/x'),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: host_mismatch/msi,
	'SNI host:port of another host, the right port: 403');

is(scalar @{upstream_requests($t, 'api')}, $n,
	'mismatches never reached the upstream');

# outbound DLP inside TLS

$n = @{upstream_requests($t, 'api')};

$r = curl("$API_URL/x?q=$CANARY");
like($r, qr/^HTTP\/2 403 .*x-bottle-rule: canary/msi, 'canary inside TLS: 403');
$r = curl('--http2', '-H', "$CANARY: x", "$API_URL/x");
like($r, qr/^HTTP\/2 403 .*x-bottle-rule: canary.*name of header/msi,
	'HTTP/2: the canary as a header name: 403');
$r = curl('--http1.1', '-H', "x-$CANARY: x", "$API_URL/x");
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: canary/msi,
	'HTTP/1.1 in TLS: the canary in a header name: 403');
$r = curl('-X', 'POST', '--data-binary', "{\"k\": \"$GHP\"}", "$API_URL/x");
like($r, qr/^HTTP\/2 403 .*x-bottle-rule: dlp.*github_pat_classic/msi,
	'token inside TLS, supervise route: 403');
is(scalar @{upstream_requests($t, 'api')}, $n,
	'DLP refusals inside TLS never reached the upstream');

$r = curl('-X', 'POST', '--data-binary', "{\"k\": \"$GHP\"}",
	'https://other.allowed.test:' . port(8443) . '/v1');
like($r, qr/^HTTP\/2 200 /m, 'token inside TLS, provider route: forwarded');
is(last_req('api')->{body}, '{"k": "[REDACTED]"}', 'redacted inside TLS');

# the other detectors and policies inside TLS

$r = curl('--http1.1', '-H', 'X-Inject: a%0d%0aEvil: yes', "$API_URL/x");
like($r, qr/^HTTP\/1\.1 403 .*x-bottle-rule: crlf/msi,
	'an encoded CRLF in a header inside TLS: 403');

my $DLP_URL = 'https://dlp.allowed.test:' . port(8443);
(my $b64 = MIME::Base64::encode_base64($API, '')) =~ s/=+$//;

$n = @{upstream_requests($t, 'api')};

$r = curl("$DLP_URL/x?d=$b64");
like($r, qr/^HTTP\/2 403 .*x-bottle-rule: dlp.*known_secrets/msi,
	'known_secrets inside TLS: the egress token base64-encoded, 403');

my $gz;
my $hexbody = 'hex=' . unpack('H*', $API);
IO::Compress::Gzip::gzip(\$hexbody => \$gz) or die;
$t->write_file('body.gz', $gz);
$r = curl('-X', 'POST', '-H', 'Content-Encoding: gzip', '--data-binary',
	'@' . $t->testdir() . '/body.gz', "$DLP_URL/x");
like($r, qr/^HTTP\/2 403 .*known_secrets.*in the body/msi,
	'a gzip body inside TLS: scanned decoded');
is(scalar @{upstream_requests($t, 'api')}, $n,
	'neither reached the upstream');

my $ENT = 'eYKEDvEoUcElGjHM2Oue7m8Xg40BVgRPLdy0uWJDQhatKrqQ';
$r = curl('-X', 'POST', '--data-binary', "k=$ENT", "$DLP_URL/x");
like($r, qr/^HTTP\/2 200 /m, 'entropy inside TLS: passes');
like($t->read_file('error.log'),
	qr/bottle dlp: bottle="alice" host="dlp.allowed.test" detector=entropy rule=high_entropy location="body" value=sha256:[0-9a-f]{16} action=warn/,
	'entropy inside TLS: warned');

$r = curl("$DLP_URL/say?text=ignore+all+previous+instructions");
like($r, qr/^HTTP\/2 200 .*ignore all previous instructions/msi,
	'inbound inside TLS: the response passes unchanged');
like($t->read_file('error.log'),
	qr/host="dlp.allowed.test" detector=naive_injection_detection rule=ignore_previous_instructions location="response body" at=0-32 action=flag/,
	'inbound inside TLS: flagged');

IO::Compress::Gzip::gzip(\"{\"k\": \"$GHP\"}" => \$gz);
$t->write_file('body.gz', $gz);
$r = curl('-X', 'POST', '-H', 'Content-Encoding: gzip', '--data-binary',
	'@' . $t->testdir() . '/body.gz',
	'https://other.allowed.test:' . port(8443) . '/v1');
like($r, qr/^HTTP\/2 200 /m, 'redact in a gzip body inside TLS: forwarded');
my $got;
IO::Uncompress::Gunzip::gunzip(\last_req('api')->{body} => \$got);
is($got, '{"k": "[REDACTED]"}', 'redact in a gzip body inside TLS: redacted');

$r = curl('-X', 'POST', '--data-binary', "{\"k\": \"$GHP\"}", "$API_URL/x");
my $digest = Digest::SHA::sha256_hex($GHP);
like($r, qr/value sha256:${\substr($digest, 0, 16)}: held for the operator/,
	'supervise inside TLS: held, the digest\'s short prefix named');
like(http_post('/approve',
	"bottle=alice&host=api.allowed.test&sha256=" . ($digest // ''),
	port => 8090),
	qr/^HTTP\/1\.1 204 /, 'approved');
$r = curl('-X', 'POST', '--data-binary', "{\"k\": \"$GHP\"}", "$API_URL/x");
like($r, qr/^HTTP\/2 200 /m, 'supervise inside TLS: the approved value passes');
is(last_req('api')->{body}, "{\"k\": \"$GHP\"}", 'forwarded as it was');

# WebSocket: only where the route opts in

$r = curl('--http1.1', '-H', 'Upgrade: websocket', '-H', 'Connection: Upgrade',
	"$API_URL/ws");
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: websocket/msi,
	'WebSocket upgrade refused on a route without "websocket"');

curl('--http1.1', '-H', 'Upgrade: websocket', '-H', 'Connection: Upgrade',
	'https://other.allowed.test:' . port(8443) . '/ws');
$q = last_req('api');
is($q->{target}, '/ws', 'WebSocket route: upgrade passed upstream');
is(header_value($q, 'Upgrade'), 'websocket', 'Upgrade header sent');
like(header_value($q, 'Connection') // '', qr/upgrade/i,
	'Connection: upgrade sent');

# the upstream is verified

$r = curl('https://bad.allowed.test:' . port(8444) . '/');
like($r, qr/^HTTP\/2 502 .*x-bottle-rule: upstream/msi,
	'untrusted upstream certificate: 502 with a reason');
is(scalar @{upstream_requests($t, 'bad')}, 0,
	'nothing sent to the untrusted upstream');

# the policy inside the tunnel

$r = curl('-X', 'DELETE', "$API_URL/x");
like($r, qr/^HTTP\/2 403 .*x-bottle-rule: method/msi, 'method refused in TLS');

$r = curl("$API_URL/r.git/info/refs?service=git-receive-pack");
like($r, qr/^HTTP\/2 403 .*x-bottle-rule: git/msi, 'git push refused in TLS');

$r = curl('https://_egress.local/allowlist');
like($r, qr/^HTTP\/2 200 .*"host": "api.allowed.test"/ms,
	'allowlist inside TLS');
unlike($r, qr/\Q$API\E|\Q$TOKEN\E/, 'allowlist holds no secret');

# a client that sends its ClientHello with the CONNECT, in one write: the
# tunnel cannot be adopted by the http side in process (bytes were read
# past the head), it goes through the internal listener; same result

my $pipelined = <<'PY';
import socket, ssl, sys
proxy, port, target, ca, auth = sys.argv[1:6]
ctx = ssl.create_default_context(cafile=ca)
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_hostname=target.split(":")[0])
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
s = socket.create_connection((proxy, int(port)), timeout=10)
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: %s"
           "\r\n\r\n" % (target, target, auth)).encode() + out.read())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
head, rest = head.split(b"\r\n\r\n", 1)
print(head.split(b"\r\n")[0].decode())
inc.write(rest)
def pump():
    data = s.recv(65536)
    if not data:
        raise SystemExit("closed")
    inc.write(data)
while True:
    try:
        tls.do_handshake()
        break
    except ssl.SSLWantReadError:
        s.sendall(out.read())
        pump()
s.sendall(out.read())
tls.write(("GET /pipelined HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
           % target).encode())
s.sendall(out.read())
resp = b""
while True:
    try:
        chunk = tls.read(65536)
        if not chunk:
            break
        resp += chunk
    except ssl.SSLWantReadError:
        try:
            pump()
        except SystemExit:
            break
    except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
        break
print(resp.split(b"\r\n")[0].decode())
PY

$r = do {
	open my $fh, '-|', 'python3', '-c', $pipelined, '127.0.0.1', port(8080),
		'api.allowed.test:' . port(8443), $gwca->{cert}, $auth
		or die "python3: $!";
	local $/;
	<$fh> // '';
};
like($r, qr/^HTTP\/1\.1 200 Connection established\nHTTP\/1\.1 200 OK$/m,
	'ClientHello sent with the CONNECT: the tunnel works');
is(last_req('api')->{target}, '/pipelined', 'and the request reached the upstream');

# an agent on IPv6: the tunnel is adopted all the same

$r = do {
	open my $fh, '-|', 'curl', '-s', '-S', '-i', '--max-time', '10',
		'--proxy', 'http://agent:' . $TOKEN . '@[::1]:' . port(8086),
		'--cacert', $gwca->{cert}, "$API_URL/over-v6"
		or die "curl: $!";
	local $/;
	<$fh> // '';
};
like($r, qr/^HTTP\/2 200 /m, 'an agent on IPv6: HTTPS through an adopted tunnel');
is(last_req('api')->{target}, '/over-v6', 'an agent on IPv6: reached the upstream');

# the stream log: a tunnel the http side adopted in process, and the one
# that went through the internal listener

my $slog = $t->read_file('stream.log');
like($slog, qr/verdict=adopted up=-/,
	'stream log: tunnels adopted by the http side in process');
like($slog, qr/verdict=handoff up=unix:\S+tls\.sock/,
	'stream log: the pipelined ClientHello went through tls.sock');

# plain HTTP inside a tunnel of an inspected route

$s = tunnel('plain.allowed.test:' . port(8081));
$s->send("GET /in-tunnel?token=x HTTP/1.1\r\nHost: plain.allowed.test:"
	. port(8081) . "\r\nAuthorization: Basic YTpi\r\n"
	. "Connection: close\r\n\r\n") if $s;
like($s ? $s->read_response() : '', qr/^HTTP\/1\.1 200 .*upstream plain ok/s,
	'plain HTTP inside CONNECT: through the pipeline');
$q = last_req('plain');
is($q && $q->{target}, '/in-tunnel', 'plain in tunnel: query stripped');
is($q && header_value($q, 'Authorization'), "Bearer $API",
	'plain in tunnel: credential injected');

# the requests of a tunnel go to the address its first request resolved
# and checked until the resolver's answer expires (dnsmasq gives TTL 0
# here: the rest of the second); the next one then resolves anew

my %hosts = map { ($_ => '127.0.0.1') } qw/api.allowed.test
	other.allowed.test bad.allowed.test plain.allowed.test dlp.allowed.test/;

$s = tunnel('plain.allowed.test:' . port(8081));

sub in_tunnel {
	my ($path) = @_;
	return '' unless $s;
	$s->send("GET $path HTTP/1.1\r\nHost: plain.allowed.test:" . port(8081)
		. "\r\n\r\n");
	return $s->read_response() // '';
}

like(in_tunnel('/dns1'), qr/^HTTP\/1\.1 200 .*upstream plain ok/s,
	'tunnel: the first request resolves its target');
dns_update($t, hosts => { %hosts, 'plain.allowed.test' => '127.0.0.3' });
select undef, undef, undef, 1.1;
like(in_tunnel('/dns2'), qr/^HTTP\/1\.1 502 .*X-Bottle-Rule: upstream/s,
	'tunnel: once the answer expired, the next request resolves anew '
	. '(nothing listens on the new address)');
dns_update($t, hosts => \%hosts);
select undef, undef, undef, 1.1;
like(in_tunnel('/dns3'), qr/^HTTP\/1\.1 200 .*upstream plain ok/s,
	'tunnel: and again');

$s = tunnel('plain.allowed.test:' . port(8081));
$s->send("GET http://other.allowed.test/ HTTP/1.1\r\n"
	. "Host: other.allowed.test\r\nConnection: close\r\n\r\n") if $s;
like($s ? $s->read_response() : '', qr/^HTTP\/1\.1 403 .*host_mismatch/s,
	'absolute URI to another host inside a tunnel: 403');

# an IP target gets a leaf with an IP SAN

$s = tunnel('127.0.0.1:' . port(8443));
ok($s && $s->start_ssl(SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
	SSL_ca_file => $gwca->{cert}, SSL_verifycn_name => '127.0.0.1',
	SSL_verifycn_scheme => 'http'), 'IP target: leaf verifies for the IP');
$cert = $s && $s->{sock}->peer_certificate();
@san = $cert ? Net::SSLeay::X509_get_subjectAltNames($cert) : ();
is($san[0], 7, 'IP target: the SAN is an IP address');
$s->close() if $s;

# inside TLS only HTTP

$s = tunnel('api.allowed.test:' . port(8443));
$s->start_ssl(SSL_hostname => 'api.allowed.test') if $s;
$s->send("\x00\x01 not http\r\n\r\n") if $s;
like($s ? $s->read_all(3) : '', qr/^HTTP\/1\.1 400 /, 'non-HTTP inside TLS: 400');

$s = tunnel('api.allowed.test:' . port(8443));
$s->send("\x00\x01raw bytes\r\n") if $s;
is($s ? $s->read_all(3) : 'x', '', 'raw TCP inside an inspected tunnel: closed');

# a TLS record header is no ClientHello: the front reads the whole
# ClientHello before the tunnel goes to the TLS listener

$s = tunnel('api.allowed.test:' . port(8443));
$s->send("\x16\x03\x01\x00\x05\x01GET / HTTP/1.1\r\n\r\n") if $s;
is($s ? $s->read_all(3) : 'x', '',
	'fake TLS record header in an inspected tunnel: closed, no answer');
is(scalar(grep { /bottle refused: .*host="api\.allowed\.test" rule="raw_tcp"/
		&& /not a valid TLS ClientHello/ }
	split /\n/, $t->read_file('error.log')), 1,
	'fake TLS record header in an inspected tunnel: logged as raw TCP');

# streaming: a server-sent event arrives before the next is sent

$s = tunnel('api.allowed.test:' . port(8443));
$s->start_ssl(SSL_hostname => 'api.allowed.test') if $s;
my $start = time();
$s->send("GET /sse?n=3&gap_ms=1000 HTTP/1.1\r\nHost: api.allowed.test:"
	. port(8443) . "\r\nConnection: close\r\n\r\n") if $s;
my ($first, $all) = ('', '');
while ($s && time() - $start < 8) {
	my $chunk = $s->read_raw(1) // '';
	$all .= $chunk;
	if (!$first && $all =~ /data:/) {
		$first = time() - $start;
	}
	last if $s->eof;
}
ok($first && $first < 1.5, 'first event arrives before the next is sent')
	or diag("first event after $first s");
is(() = $all =~ /data:/g, 3, 'all events arrive');

# the CONNECT records live exactly as long as their tunnels

like(http_get('/tunnels', port => 8090), qr/tunnels=0/,
	'no records left after the tunnels closed');

for (1 .. 1000) {
	my $c = tunnel('plain.allowed.test:' . port(8081)) or last;
	$c->send("GET /n HTTP/1.1\r\nHost: plain.allowed.test:"
		. port(8081) . "\r\nConnection: close\r\n\r\n");
	$c->read_response();
	$c->close();
}

my $left;
for (1 .. 20) {
	($left) = http_get('/tunnels', port => 8090) =~ /tunnels=(\d+)/;
	last if defined $left && $left == 0;
	sleep 0.1;
}
is($left, 0, 'no record growth over 1000 tunnels');

# an internal listener refuses a connection with no record

my $u = IO::Socket::UNIX->new(Peer => $t->testdir() . '/tls.sock');
print $u "PROXY TCP4 10.1.1.1 127.0.0.1 1234 443\r\n" if $u;
ok($u && !IO::Socket::SSL->start_SSL($u, SSL_hostname => 'api.allowed.test',
	SSL_verify_mode => 0, Timeout => 3),
	'TLS without a CONNECT record: no handshake');

like($t->read_file('error.log'),
	qr/TLS on an internal listener without a CONNECT record/,
	'refusal logged');

# other clients

my $py = `SSL_CERT_FILE=$gwca->{cert} python3 -c '
import urllib.request as u
h = u.ProxyHandler({"https": "$PROXY"})
print(u.build_opener(h).open("$API_URL/py").read().decode())' 2>&1`;
like($py, qr/upstream api ok/, 'Python urllib through the gateway');

my $tls_log = join "\n", grep { /^\S+ \S+ \[(?!debug)/ }
	split /\n/, $t->read_file('error.log');
unlike($tls_log, qr/\Q$TOKEN\E|\Q$API\E|agent-own/, 'no credential logged');

###############################################################################
