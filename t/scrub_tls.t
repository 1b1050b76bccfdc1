#!/usr/bin/perl

# Held secrets scrubbed from responses on an intercepted TLS route
# (docs/dlp.md, "Held secrets in responses"): the upstream, behind TLS,
# echoes the Authorization the gateway injected in a response header and
# its body; the agent (curl through the tunnel, HTTP/2 and HTTP/1.1) gets
# [held:credential:API], never the value.

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

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl http_v2 bottle/)
	->has(qw/dnsmasq openssl/)->has_daemon('curl');

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
        bottle_upstream;
    }

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
        }
    }

    server {
        listen unix:%%TESTDIR%%/tls.sock ssl http2 proxy_protocol;
        bottle on;
        bottle_ca %%TESTDIR%%/gwca.crt %%TESTDIR%%/gwca.key;

        location / {
            proxy_pass https://bottle_tls$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection $bottle_connection;
            proxy_ssl_server_name on;
            proxy_ssl_name $bottle_host;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate %%TESTDIR%%/upca.crt;
        }
    }
}
EOF

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'api.allowed.test', 'off.allowed.test');

my $TOKEN = 'alice-token-0123456789';
my $API = 'secret-api-value-1';
my $T = JSON::PP::true;

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, egress_tokens => { API => $API },
		routes => [
		{ host => 'api.allowed.test', port => port(8443), internal => $T,
			auth => { type => 'bearer', value => 'secret:API' } },
		{ host => 'off.allowed.test', port => port(8443), internal => $T,
			auth => { type => 'bearer', value => 'secret:API' },
			dlp => { scrub => [] } },
	] },
] });

dns_start($t, port => port(8053), hosts => { map { ($_ => '127.0.0.1') }
	qw/api.allowed.test off.allowed.test/ });

fake_upstream($t, port => 8443, name => 'api', tls => 1,
	cert => $up->{cert}, key => $up->{key});

$t->run()->plan(8);

###############################################################################

my $PROXY = 'http://agent:' . $TOKEN . '@127.0.0.1:' . port(8080);

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

# the value (18 bytes) is shorter than [held:credential:API]: the
# placeholder is shortened to its length
my $M = qr/\[held\*{12}\]/;

my $r = curl('https://api.allowed.test:' . port(8443) . '/echo');
like($r, qr/^HTTP\/2 200 /m, 'h2: 200');
like($r, qr/^x-echo-auth: Bearer $M\r$/mi, 'h2: header scrubbed');
like($r, qr/^Authorization: Bearer $M$/m, 'h2: body scrubbed');
unlike($r, qr/\Q$API\E/, 'h2: the value nowhere');

$r = curl('--http1.1', 'https://api.allowed.test:' . port(8443) . '/echo');
like($r, qr/^x-echo-auth: Bearer $M\r$/mi, 'http/1.1: header scrubbed');
unlike($r, qr/\Q$API\E/, 'http/1.1: the value nowhere');

# scrub [] on the route: off

$r = curl('https://off.allowed.test:' . port(8443) . '/echo');
like($r, qr/^Authorization: Bearer \Q$API\E$/m, 'scrub []: the value passes');

like($t->read_file('error.log'),
	qr/bottle dlp: bottle="alice" host="api.allowed.test" detector=held_scrub held="credential:API" location="header,body" encoding="plain" action=scrubbed/,
	'logged once per response, by name');

###############################################################################
