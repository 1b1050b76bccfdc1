#!/usr/bin/perl

# nginx 1.31's ngx_http_tunnel_module (native CONNECT in http, tunnel_pass)
# next to the module (docs/install.md "Which nginx"): the gateway's CONNECT
# is the stream front's (bottle_front), an http server of the module's
# refuses CONNECT as before, a server of the operator's own with
# tunnel_pass tunnels in the same nginx, and tunnel_pass where "bottle" is
# on is refused at configuration time (the tunnel would bypass the policy).
# Skipped where nginx has no tunnel module.

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

my $t = Test::Nginx->new()->has(qw/stream http proxy bottle/)
	->has(qw/openssl socket_ssl_sni/);

my $d = $t->testdir();

# nginx -t on a server with tunnel_pass (and the module): whether this
# nginx has the tunnel module, and whether "bottle" next to it is taken

sub nginx_t {
	my ($name, $server) = @_;
	my $stream = $t->_dynamic_module('stream', 'ngx_stream_module');
	my $load = defined $stream ? "load_module $stream;\n" : '';
	$t->write_file("$name.conf", <<"EOF");
${load}load_module $Test::Nginx::MODULE;
bottle_policy $d/policy.json;
pid $d/$name.pid;
error_log $d/$name.log;
events {}
http {
    access_log off;
    server {
        listen 127.0.0.1:1;
$server
    }
}
EOF
	local $ENV{LD_PRELOAD} = $ENV{TEST_NGINX_PRELOAD}
		if $ENV{TEST_NGINX_PRELOAD};
	my $out = `$Test::Nginx::NGINX -t -p $d/ -c $d/$name.conf -e $d/$name.log 2>&1`;
	return ($? >> 8, $out);
}

my $TOKEN = 'alice-token-0123456789';

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [
		{ host => '127.0.0.1', port => port(8443),
			passthrough => JSON::PP::true },
	] },
] });

my ($rc, $out) = nginx_t('probe', '        tunnel_pass;');
plan(skip_all => 'nginx has no tunnel module')
	if $out =~ /unknown directive "tunnel_pass"/;

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

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;
        location / {
            proxy_pass http://$bottle_upstream$bottle_uri;
        }
    }

    # the module's http side reached directly
    server {
        listen 127.0.0.1:8082;
        bottle on;
        location / {
            proxy_pass http://$bottle_upstream$bottle_uri;
        }
    }

    # the operator's own CONNECT proxy, no bottle
    server {
        listen 127.0.0.1:8081;
        tunnel_pass;
    }
}

EOF

my $ca = gen_ca($t, 'ca');
my $crt = gen_cert($t, $ca, 'tls', 'tls.allowed.test', '127.0.0.1');

fake_upstream($t, port => 8443, name => 'tls', tls => 1,
	cert => $crt->{cert}, key => $crt->{key});

$t->run()->plan(13);

###############################################################################

my $auth = basic('agent', $TOKEN);
my $up = '127.0.0.1:' . port(8443);

sub connect_req {
	my ($target, %h) = @_;
	my $r = "CONNECT $target HTTP/1.1\r\nHost: $target\r\n";
	$r .= "Proxy-Authorization: $h{auth}\r\n" if $h{auth};
	return $r . "\r\n";
}

sub tls_through {
	my ($s) = @_;
	return $s->start_ssl(SSL_hostname => 'tls.allowed.test',
		SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
		SSL_ca_file => $ca->{cert});
}

# the stream front: the policy's, the tunnel module's nowhere in it

my $connects = upstream_connects($t, 'tls');

my $s = proxy_session(8080);
$s->send(connect_req($up));
like($s->read_response(), qr/^HTTP\/1\.1 407 /, 'front: no token, 407');

$s->send(connect_req($up, auth => $auth));
like($s->read_response(), qr/^HTTP\/1\.1 200 /, 'front: allowed route, 200');
ok(tls_through($s), 'front: TLS to the upstream through the tunnel');
$s->close();

my $r = proxy_request(8080, connect_req('127.0.0.1:' . port(8444),
	auth => $auth));
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: port/s,
	'front: a port the route lacks, 403');

# the module's http server: CONNECT is not its (no tunnel_pass there),
# refused by nginx (405) or by the pipeline (400: no absolute URI)

$r = proxy_request(8082, connect_req($up, auth => $auth));
like($r, qr/^HTTP\/1\.1 4\d\d /, 'bottle http server: CONNECT refused');

is(upstream_connects($t, 'tls'), $connects + 1,
	'upstream: only the front\'s tunnel reached it');

# the operator's tunnel_pass server tunnels in the same nginx

$s = proxy_session(8081);
$s->send(connect_req($up));
like($s->read_response(), qr/^HTTP\/1\.1 200 /, 'tunnel_pass server: 200');
ok(tls_through($s), 'tunnel_pass server: TLS through');
$s->close();

# tunnel_pass where "bottle" is on: refused by nginx -t

($rc, $out) = nginx_t('bottle', "        bottle on;");
is($rc, 0, 'bottle alone: nginx -t passes') or diag($out);

($rc, $out) = nginx_t('both', "        bottle on;\n        tunnel_pass;");
isnt($rc, 0, 'bottle and tunnel_pass in one server: nginx -t fails');
like($out, qr/"tunnel_pass" .*"bottle" is on/,
	'bottle and tunnel_pass: the error says why');

($rc, $out) = nginx_t('loc', "        location /a/ { bottle on; }\n"
	. "        location /b/ { tunnel_pass; }");
isnt($rc, 0, 'bottle in one location, tunnel_pass in another: refused');
like($out, qr/"tunnel_pass" .*"bottle" is on/,
	'bottle in a location, tunnel_pass in another: the error says why');

###############################################################################
