#!/usr/bin/perl

# Outbound DLP, always-on part: the bottle's canary anywhere in a request to
# an allowlisted host (hostname, path, query, headers, body; raw and
# percent-encoded; in a body that spills to a temporary file; split across
# body buffers), and line breaks smuggled into header values.  Nothing of a
# refused request reaches the upstream.

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

        location / {
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
		egress_tokens => { API => 'secret-api-value-1' },
		routes => [
		{ host => 'api.allowed.test', port => port(8081), internal => $T,
			methods => [ '*' ], dlp => JSON::PP::false,
			auth => { type => 'header', name => 'x-api-key',
				value => 'secret:API' } },
	] },
] });

dns_start($t, port => port(8053),
	hosts => { 'api.allowed.test' => '127.0.0.1' });

fake_upstream($t, port => 8081, name => 'api');

$t->run()->plan(17);

###############################################################################

my $auth = 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n";
my $URL = 'http://api.allowed.test:' . port(8081);

sub req {
	my ($method, $path, %o) = @_;
	my $r = "$method $URL$path HTTP/1.1\r\nHost: api.allowed.test:"
		. port(8081) . "\r\nConnection: close\r\n$auth";
	$r .= join '', map { "$_\r\n" } @{$o{headers} || []};
	if (defined $o{body}) {
		$r .= "Content-Length: " . length($o{body}) . "\r\n\r\n$o{body}";
	} else {
		$r .= "\r\n";
	}
	return proxy_request(8080, $r);
}

sub nreqs {
	return scalar @{upstream_requests($t, 'api')};
}

(my $pct = $CANARY) =~ s/(.)/sprintf('%%%02X', ord $1)/ge;
(my $pct2 = $pct) =~ s/%/%25/g;

like(req('GET', '/clean'), qr/^HTTP\/1\.1 200 /, 'clean request passes');

my $n = nreqs();

like(req('GET', "/x/$CANARY"), qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: canary/s,
	'canary in the path: 403, even with dlp: false');
like(req('GET', "/x?q=$CANARY"), qr/^HTTP\/1\.1 403 .*canary in the query/s,
	'canary in the query');
like(req('GET', "/x?q=$pct"), qr/^HTTP\/1\.1 403 .*canary/s,
	'percent-encoded canary');
like(req('GET', "/x?q=$pct2"), qr/^HTTP\/1\.1 403 .*canary/s,
	'twice percent-encoded canary');
like(req('GET', '/x', headers => [ "X-Note: a $CANARY b" ]),
	qr/^HTTP\/1\.1 403 .*canary in the header X-Note/s,
	'canary in a header');
like(req('GET', '/x', headers => [ "Authorization: Bearer $CANARY" ]),
	qr/^HTTP\/1\.1 403 .*canary/s,
	'canary in a stripped header still refused');
like(req('POST', '/x', body => "{\"a\": \"$CANARY\"}"),
	qr/^HTTP\/1\.1 403 .*canary in the body/s, 'canary in the body');

my $big = ('a' x 70000) . $CANARY . ('b' x 70000);
like(req('POST', '/x', body => $big), qr/^HTTP\/1\.1 403 .*canary in the body/s,
	'canary deep in a body kept in a temporary file');

$big = ('a' x (65536 - 5)) . $CANARY . ('b' x 1000);
like(req('POST', '/x', body => $big), qr/^HTTP\/1\.1 403 .*canary in the body/s,
	'canary split across body chunks');

is(nreqs(), $n, 'refused requests never reached the upstream');

# the agent's value of the injected header would be replaced: carrying the
# canary there is still the attempt

like(req('GET', '/x', headers => [ "X-Api-Key: $CANARY" ]),
	qr/^HTTP\/1\.1 403 .*canary in the header X-Api-Key/s,
	'canary in the injected header: 403');
isnt(header_value(upstream_requests($t, 'api')->[-1], 'X-Api-Key'), $CANARY,
	'the canary did not go out');

# line breaks in header values

$n = nreqs();

like(req('GET', '/x', headers => [ 'X-Inject: a%0d%0aEvil: yes' ]),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: crlf/s,
	'encoded CRLF in a header value: 403');
is(nreqs(), $n, 'CRLF refusal never reached the upstream');

like(req('POST', '/x', body => 'a' x 100000), qr/^HTTP\/1\.1 200 /,
	'large clean body passes');
is(length(upstream_requests($t, 'api')->[-1]{body}), 100000,
	'large body forwarded whole');

###############################################################################
