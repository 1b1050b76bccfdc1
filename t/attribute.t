#!/usr/bin/perl

# bottle_attribute: the caller of a sidecar (git-gate's :9420, supervise's
# :9100) is attributed as egress attributes it, from its identity token and
# its source address; the helper behind gets the bottle's id and never the
# credential.  A call that resolves to no bottle never reaches the helper.

###############################################################################

use warnings;
use strict;

use Test::More;
use MIME::Base64 qw/ encode_base64 /;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy bottle/);

$t->write_file_expand('nginx.conf', <<'EOF');

%%TEST_GLOBALS%%

daemon off;

bottle_policy %%TESTDIR%%/policy.json;

events {
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen 127.0.0.1:%%PORT_8090%%;

        location / {
            bottle_attribute mcp;
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
            proxy_set_header X-Bottle-Id $bottle_id;
            proxy_set_header X-Bottle-Request-Id $request_id;
        }

        location /git/ {
            bottle_attribute git;
            bottle_realm git-gate;
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
            proxy_set_header X-Bottle-Id $bottle_id;
        }

        location /open/ {
            proxy_pass http://127.0.0.1:%%PORT_8081%%;
            proxy_set_header X-Bottle-Id $bottle_id;
        }
    }
}

EOF

my $TOKEN = 'alice-token-0123456789';
my $BOB = 'bob-token-0123456789';
my $FAR = 'far-token-0123456789';

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [] },
	{ id => 'bob', token => $BOB, routes => [] },
	{ id => 'far', token => $FAR, source_ips => [ '10.9.9.9/32' ],
		routes => [] },
] });

fake_upstream($t, port => 8081, name => 'helper');

$t->run()->plan(31);

###############################################################################

my $P = port(8090);

sub get {
	my ($uri, @h) = @_;
	my $extra = join '', map { "$_\r\n" } @h;
	return http("GET $uri HTTP/1.1\r\nHost: 127.0.0.1:$P\r\n$extra"
		. "Connection: close\r\n\r\n", PeerAddr => "127.0.0.1:$P");
}

sub cred { return 'Authorization: Basic ' . encode_base64("x:$_[0]", '') }

sub seen { return scalar @{upstream_requests($t, 'helper')} }

sub last_req { return upstream_requests($t, 'helper')->[-1] }

# no credentials: the challenge, nothing logged

my $r = get('/mcp');
like($r, qr!^HTTP/1\.1 401 !, 'mcp: no credentials is 401');
like($r, qr!^WWW-Authenticate: Bearer realm="bottle gateway"\r$!m,
	'mcp: a Bearer challenge');
$r = get('/git/o/r.git/info/refs?service=git-upload-pack');
like($r, qr!^WWW-Authenticate: Basic realm="git-gate"\r$!m,
	'git: a Basic challenge with the location\'s realm');
unlike($t->read_file('error.log'), qr/bottle refused/,
	'the bare challenge is not logged as a refusal');
is(seen(), 0, 'the helper got nothing');

# a good token

$r = get('/mcp', "Authorization: Bearer $TOKEN", 'X-Bottle-Id: bob',
	'X-Bottle-Other: 1', "Proxy-Authorization: Basic "
	. encode_base64("x:$TOKEN", ''));
like($r, qr!^HTTP/1\.1 200 !, 'mcp: a Bearer token passes');
my $req = last_req();
is(header_value($req, 'X-Bottle-Id'), 'alice',
	'the helper is told the bottle, not what the agent said');
is(scalar(() = header_value($req, 'X-Bottle-Id')), 1, 'one X-Bottle-Id');
is(header_value($req, 'Authorization'), undef, 'no Authorization');
is(header_value($req, 'Proxy-Authorization'), undef,
	'no Proxy-Authorization');
is(header_value($req, 'X-Bottle-Other'), undef, 'no X-Bottle-* of the agent');
like(header_value($req, 'X-Bottle-Request-Id'), qr/^[0-9a-f]{32}$/,
	'the request id');
unlike(join(' ', map { "@$_" } @{$req->{headers}}), qr/\Q$TOKEN\E/,
	'the token is nowhere in what the helper got');

$r = get('/mcp', cred($BOB));
like($r, qr!^HTTP/1\.1 200 !, 'mcp: Basic passes too');
is(header_value(last_req(), 'X-Bottle-Id'), 'bob', 'bob is bob');

$r = get('/git/o/r.git/info/refs', cred($TOKEN));
like($r, qr!^HTTP/1\.1 200 !, 'git: Basic passes');
is(header_value(last_req(), 'X-Bottle-Id'), 'alice', 'git: alice');

# refusals: logged once, the helper gets nothing

my $n = seen();

$r = get('/git/x', "Authorization: Bearer $TOKEN");
like($r, qr!^HTTP/1\.1 401 !, 'git: a Bearer token is not git\'s');

$r = get('/mcp', 'Authorization: Bearer wrong-token-0123456789');
like($r, qr!^HTTP/1\.1 401 !, 'a wrong token is 401');
like($r, qr/no bottle has this token/, 'with the reason');
like($r, qr!^X-Bottle-Rule: identity\r$!m, 'rule identity');

$r = get('/mcp', 'Authorization: Bearer ' . $FAR);
like($r, qr!^HTTP/1\.1 401 !, 'a token from an address it is not bound to');
like($r, qr/not valid from this address/, 'says so');

$r = get('/mcp', "Authorization: Bearer $TOKEN", "Authorization: Bearer $BOB");
like($r, qr!^HTTP/1\.1 400 !, 'two Authorization headers: nginx\'s 400');

$r = get('/mcp', 'Authorization: Basic !!!');
like($r, qr!^HTTP/1\.1 401 .*malformed credentials!s,
	'malformed Basic is refused');

is(seen(), $n, 'no refused call reached the helper');

my @lines = grep { /bottle refused/ } split /\n/, $t->read_file('error.log');
is(scalar @lines, 4, 'one log line per refusal') or diag(join "\n", @lines);
like($lines[1], qr/bottle="-" host="supervise" rule="identity" status=401 /,
	'the line names the sidecar and the rule');
unlike(join("\n", grep { /^\S+ \S+ \[(?!debug)/ }
		split /\n/, $t->read_file('error.log')),
	qr/\Q$TOKEN\E|wrong-token/,
	'no token in the error log');

# a location without bottle_attribute names no bottle

$r = get('/open/x', "Authorization: Bearer $TOKEN");
is(header_value(last_req(), 'X-Bottle-Id'), undef, 'no attribution, no id');

# bottle on and bottle_attribute in one location

my $conf = $t->read_file('nginx.conf');
$conf =~ s/bottle_attribute mcp;/bottle_attribute mcp; bottle on;/;
$t->write_file('both.conf', $conf);
like(($t->nginx_t('both.conf'))[1],
	qr/"bottle on" and "bottle_attribute" in one location/,
	'bottle on and bottle_attribute cannot share a location');

###############################################################################
