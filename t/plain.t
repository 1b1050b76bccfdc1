#!/usr/bin/perl

# The per-request pipeline on plain-HTTP proxy requests: identity, host
# check, introspection, git boundary, route policy (methods, allow entries),
# credential stripping and injection, addresses.  Each refusal is checked on
# both sides: what the agent sees, and that the upstream got nothing.

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
    resolver_timeout 3s;

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://$bottle_upstream$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            error_page 502 504 = @failed;
        }

        location @failed {
            bottle_upstream_failed;
        }
    }
}

EOF

my $TOKEN = 'alice-token-0123456789';
my $API = 'secret-api-value-1';
my $KEY = 'secret-key-value-2';
my $P = port(8081);
my $T = JSON::PP::true;

sub route { return { host => shift, port => $P, internal => $T, @_ } }

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN,
		egress_tokens => { API => $API, KEY => $KEY },
		routes => [
		route('api.allowed.test', methods => [ 'GET', 'POST' ],
			auth => { type => 'bearer', value => 'secret:API' }),
		route('hdr.allowed.test',
			auth => { type => 'header', name => 'X-Api-Key',
				value => 'secret:${KEY}' }),
		route('keep.allowed.test', preserve_auth => $T,
			auth => { type => 'token', value => 'secret:API' }),
		route('ro.allowed.test'),
		route('any.allowed.test', methods => [ '*' ]),
		route('allow.allowed.test', allow => [
			{ path => '/repos/*', methods => [ 'GET', 'POST' ] },
			{ path => '/public', headers => {
				accept => 'application/json' } } ]),
		route('git.allowed.test', methods => [ '*' ]),
		route('fetch.allowed.test', methods => [ 'GET', 'POST' ],
			git => { fetch => $T }),
		route('other.allowed.test'),
		{ host => 'pub.allowed.test', port => $P },
		{ host => 'down.allowed.test', port => port(8082), internal => $T },
		{ host => '127.0.0.1', port => $P },
	] },
] });

my %names = map { $_ => '127.0.0.1' } qw/api hdr keep ro any allow git fetch
	other pub x.api down/;
dns_start($t, port => port(8053),
	hosts => { map { ("$_.allowed.test" => $names{$_}) } keys %names });

fake_upstream($t, port => 8081, name => 'api');

$t->run()->plan(74);

###############################################################################

my $auth = 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n";

# a request through the front; $host names the target, %h more headers

sub req {
	my ($method, $url, %o) = @_;
	my ($hostport) = $url =~ m!^\w+://([^/?]+)!;
	my $r = "$method $url HTTP/1.1\r\nHost: " . ($o{host} // $hostport)
		. "\r\nConnection: close\r\n";
	$r .= $auth unless $o{noauth};
	$r .= join '', map { "$_\r\n" } @{$o{headers} || []};
	if (defined $o{body}) {
		$r .= "Content-Length: " . length($o{body}) . "\r\n\r\n$o{body}";
	} else {
		$r .= "\r\n";
	}
	return proxy_request(8080, $r);
}

sub last_req {
	my $reqs = upstream_requests($t, 'api');
	return $reqs->[-1];
}

sub nreqs {
	return scalar @{upstream_requests($t, 'api')};
}

sub status {
	my ($r) = @_;
	return $r =~ m!^HTTP/1\.1 (\d+)! ? $1 : 0;
}

# allowed: credentials stripped, the route's injected

my $r = req('GET', "http://api.allowed.test:$P/p?access_token=a&%61pi_key=b"
	. "&keep=1&TOKEN=c&tokens=2&Key=d",
	headers => [ 'Authorization: Bearer agent-own', 'X-Api-Key: agentkey',
		'Cookie: session=attacker', 'Private-Token: pt',
		'X-Goog-Api-Key: g', 'Proxy-Connection: keep-alive',
		'X-Other: kept' ]);

is(status($r), 200, 'allowed request');
like($r, qr/upstream api ok/, 'upstream answer');

my $q = last_req();
is($q->{target}, '/p?keep=1&tokens=2', 'credential query parameters stripped');
is(header_value($q, 'Authorization'), "Bearer $API", 'bearer injected');
is(header_count($q, 'Authorization'), 1, 'one Authorization');
is(header_value($q, 'X-Api-Key'), undef, 'agent X-Api-Key stripped');
is(header_value($q, 'Cookie'), undef, 'agent cookie stripped');
is(header_value($q, 'Private-Token'), undef, 'Private-Token stripped');
is(header_value($q, 'X-Goog-Api-Key'), undef, 'X-Goog-Api-Key stripped');
is(header_value($q, 'Proxy-Authorization'), undef,
	'Proxy-Authorization never upstream');
is(header_value($q, 'Proxy-Connection'), undef, 'Proxy-Connection dropped');
is(header_value($q, 'X-Other'), 'kept', 'other headers kept');
is(header_value($q, 'Host'), "api.allowed.test:$P", 'Host is the target');

$r = req('POST', "http://api.allowed.test:$P/upload", body => 'hello body');
is(status($r), 200, 'POST on a route listing it');
is(last_req()->{body}, 'hello body', 'body reached the upstream');

# named header and token auth; preserve_auth

$r = req('GET', "http://hdr.allowed.test:$P/",
	headers => [ 'X-Api-Key: agentkey', 'Authorization: Basic YTpi' ]);
$q = last_req();
is(status($r), 200, 'header auth route');
is(header_value($q, 'X-Api-Key'), $KEY, 'raw token in the named header');
is(header_count($q, 'X-Api-Key'), 1, 'agent value of it replaced');
is(header_value($q, 'Authorization'), undef, 'agent Authorization stripped');

$r = req('GET', "http://keep.allowed.test:$P/?key=k",
	headers => [ 'X-Api-Key: agentkey', 'Cookie: a=b',
		'Authorization: Bearer agent-own' ]);
$q = last_req();
is(status($r), 200, 'preserve_auth route');
is(header_value($q, 'X-Api-Key'), 'agentkey', 'preserve_auth keeps agent key');
is(header_value($q, 'Cookie'), 'a=b', 'preserve_auth keeps cookies');
is($q->{target}, '/?key=k', 'preserve_auth keeps the query');
is(header_value($q, 'Authorization'), "token $API",
	'injected header still replaced');

# the cookie jar: only cookies the host set for this bottle go back to it

$r = req('GET', "http://ro.allowed.test:$P/set-cookie?sid=s3cr3t&theme=dark");
like($r, qr/^Set-Cookie: sid=s3cr3t\r$/m, 'host sets cookies');

req('GET', "http://ro.allowed.test:$P/c1",
	headers => [ 'Cookie: sid=s3cr3t; evil=attacker; theme=light' ]);
is(header_value(last_req(), 'Cookie'), 'sid=s3cr3t',
	'only the cookie the host set, with its value, goes out');

req('GET', "http://any.allowed.test:$P/c2",
	headers => [ 'Cookie: sid=s3cr3t' ]);
is(header_value(last_req(), 'Cookie'), undef,
	'the jar is per host: not sent to another host');

req('GET', "http://ro.allowed.test:$P/set-cookie?sid=gone%3B%20Max-Age%3D0");
req('GET', "http://ro.allowed.test:$P/c3",
	headers => [ 'Cookie: sid=s3cr3t; theme=dark' ]);
is(header_value(last_req(), 'Cookie'), 'theme=dark',
	'Max-Age=0 deleted the cookie');

# refusals, with nothing reaching the upstream

my $n = nreqs();

$r = req('GET', "http://unlisted.test:$P/leak?secret=s");
is(status($r), 403, 'unlisted host: 403');
like($r, qr/X-Bottle-Rule: no_route/, 'unlisted: rule');
like($r, qr/not on this bottle's allowlist/, 'unlisted: reason');

$r = req('GET', "http://x.api.allowed.test:$P/");
is(status($r), 403, 'subdomain of a listed host: 403');

$r = req('GET', "http://unlisted.test:$P/", host => "api.allowed.test:$P");
is(status($r), 403, 'URI unlisted, Host names a listed host: 403');

$r = req('GET', "http://api.allowed.test:$P/", host => "other.allowed.test:$P");
like($r, qr/^HTTP\/1\.1 403 .*host_mismatch/s,
	'Host names another listed host: 403');

$r = req('GET', "http://api.allowed.test:$P/", host => 'api.allowed.test:1');
like($r, qr/^HTTP\/1\.1 403 .*host_mismatch/s, 'Host names another port: 403');

$r = req('GET', "http://api.allowed.test:$P/", noauth => 1);
like($r, qr/^HTTP\/1\.1 407 .*Proxy-Authenticate: Basic/s, 'no token: 407');

$r = req('POST', "http://ro.allowed.test:$P/", body => 'x');
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: method/s,
	'route without methods is read-only: POST 403');

$r = req('GET', "https://api.allowed.test:$P/");
is(status($r), 400, 'https:// in the clear: 400');

$r = req('GET', "http://pub.allowed.test:$P/");
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: address/s,
	'loopback without "internal": 403');

$r = req('GET', "http://127.0.0.2:$P/");
is(status($r), 403, 'unlisted IP literal: 403');

$r = req('GET', 'http://down.allowed.test:' . port(8082) . '/');
like($r, qr/^HTTP\/1\.1 502 .*X-Bottle-Rule: upstream.*failed \(\d+\): unreachable/s,
	'unreachable upstream: 502 with a reason');

is(nreqs(), $n, 'refused requests never reached the upstream');
ok(!grep({ /unlisted/ } dns_queries($t)), 'unlisted host never resolved');

# IP literals, canonicalised

is(status(req('GET', "http://127.0.0.1:$P/ip")), 200, 'IP literal route');
is(status(req('GET', "http://0x7f.1:$P/ip")), 200, 'hex spelling of it');
is(status(req('GET', "http://0177.0.0.1:$P/ip")), 200, 'octal spelling of it');

# methods

is(status(req('GET', "http://ro.allowed.test:$P/")), 200, 'read-only: GET');
is(status(req('HEAD', "http://ro.allowed.test:$P/")), 200, 'read-only: HEAD');
is(status(req('DELETE', "http://any.allowed.test:$P/")), 200,
	'methods ["*"]: DELETE');
is(status(req('DELETE', "http://api.allowed.test:$P/")), 403,
	'method not listed: 403');

# allow entries

is(status(req('GET', "http://allow.allowed.test:$P/repos/a/b")), 200,
	'allow: path glob');
is(status(req('POST', "http://allow.allowed.test:$P/repos/a", body => '')),
	200, 'allow: entry methods');
like(req('DELETE', "http://allow.allowed.test:$P/repos/a"),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: method/s, 'allow: other method 403');
like(req('GET', "http://allow.allowed.test:$P/admin"),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: allow/s, 'allow: other path 403');
is(status(req('GET', "http://allow.allowed.test:$P/public",
	headers => [ 'Accept: application/json' ])), 200,
	'allow: header filter matches');
is(status(req('GET', "http://allow.allowed.test:$P/public",
	headers => [ 'Accept: text/html' ])), 403,
	'allow: header filter does not match');
is(status(req('GET', "http://allow.allowed.test:$P/repos/../admin")), 400,
	'dot segment: 400');
is(status(req('GET', "http://allow.allowed.test:$P/repos/%2e%2E/admin")), 400,
	'encoded dot segment: 400');
is(status(req('GET', "http://allow.allowed.test:$P/repos/x%2f..%2fadmin")),
	400, 'dot segment behind an encoded slash: 400');

# the git boundary

$n = nreqs();

like(req('GET', "http://git.allowed.test:$P/r.git/info/refs"
	. "?service=git-receive-pack"),
	qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: git/s, 'receive-pack refs: 403');
is(status(req('POST', "http://git.allowed.test:$P/r.git/git-receive-pack",
	body => '0000')), 403, 'receive-pack: 403');
is(status(req('POST', "http://git.allowed.test:$P/r.git/git-receive%2Dpack",
	body => '0000')), 403, 'encoded receive-pack: 403');
is(status(req('GET', "http://git.allowed.test:$P/r.git/info/refs"
	. "?service=git-upload-pack")), 403, 'fetch without git.fetch: 403');
is(status(req('POST', "http://fetch.allowed.test:$P/r.git/git-receive-pack",
	body => '0000')), 403, 'receive-pack with git.fetch: still 403');
is(nreqs(), $n, 'git refusals never reached the upstream');

is(status(req('GET', "http://fetch.allowed.test:$P/r.git/info/refs"
	. "?service=git-upload-pack")), 200, 'git.fetch: refs');
is(status(req('POST', "http://fetch.allowed.test:$P/r.git/git-upload-pack",
	body => '0000')), 200, 'git.fetch: upload-pack');

# 407, then the retry on the same kept-alive connection

my $s = proxy_session(8080);
$s->send("GET http://ro.allowed.test:$P/ka HTTP/1.1\r\n"
	. "Host: ro.allowed.test:$P\r\n\r\n");
like($s->read_response(), qr/^HTTP\/1\.1 407 /, 'keep-alive: 407 first');
$s->send("GET http://ro.allowed.test:$P/ka HTTP/1.1\r\n"
	. "Host: ro.allowed.test:$P\r\n$auth\r\n");
like($s->read_response(), qr/^HTTP\/1\.1 200 .*upstream api ok/s,
	'keep-alive: retry with credentials on the same connection');
$s->close();

# introspection: the caller's own routes, never a secret

$r = req('GET', 'http://_egress.local/allowlist');
is(status($r), 200, 'allowlist');
like($r, qr/"host": "api.allowed.test"/, 'allowlist lists routes');
unlike($r, qr/\Q$API\E|\Q$KEY\E|\Q$TOKEN\E/, 'allowlist holds no secret');

# the log: one line per refusal, never a credential

my $log = $t->read_file('error.log');
is(scalar(() = $log =~ /bottle refused: bottle="alice" host="unlisted.test"/g),
	2, 'one log line per refusal');
# nginx's own debug lines print whole requests; the operator's choice
$log = join "\n", grep { /^\S+ \S+ \[(?!debug)/ } split /\n/, $log;
unlike($log, qr/\Q$TOKEN\E|\Q$API\E|agent-own/, 'no credential in the log');

###############################################################################
