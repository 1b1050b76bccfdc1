#!/usr/bin/perl

# Tests for bottle_policy: the policy at configuration load and reload.
# An invalid policy fails "nginx -t" with a message naming the file, the
# bottle and the field, and never the token; a policy directory loads
# every bottle; a reload picks up a changed policy, and a broken one is
# refused while the old policy keeps serving.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP qw//;
use POSIX qw//;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $d = $t->testdir();

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';
my $SECRET = 'secret-api-value-1';

# the gateway, as in docs/directives.md; %%POLICY%% is a file or directory

my $conf = <<'EOF';

%%TEST_GLOBALS%%

daemon off;

bottle_policy %%POLICY%%;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;
    resolver_timeout 3s;

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
}

EOF

(my $running = $conf) =~ s/%%POLICY%%/%%TESTDIR%%\/policies/;
$t->write_file_expand('nginx.conf', $running);

my $P1 = port(8081);
my $P2 = port(8082);

fake_upstream($t, port => $P1, name => 'one');
fake_upstream($t, port => $P2, name => 'two', addr => '127.0.0.2');

# a policy directory: two files, one bottle each, in the two shapes a file
# may have; an editor's temporary file and a file not named *.json, both
# skipped

sub alice {
	my (@routes) = @_;
	return {
		id => 'alice',
		token => $ALICE,
		egress_tokens => { API => $SECRET },
		routes => [ @routes ],
	};
}

sub route_one {
	return { host => '127.0.0.1', port => $P1,
		auth => { type => 'bearer', value => 'secret:API' } };
}

sub route_two {
	return { host => '127.0.0.2', port => $P2 };
}

mkdir "$d/policies" or die "mkdir: $!\n";
write_policy($t, 'policies/10-alice.json', alice(route_one(),
	{ host => '127.0.0.3', passthrough => JSON::PP::true() }));
write_policy($t, 'policies/20-bob.json', { bottles => [ {
	id => 'bob',
	token => $BOB,
	routes => [ { host => '127.0.0.1', port => $P1 } ],
} ] });
write_policy($t, 'policies/.10-alice.json', '{ "not": json');
write_policy($t, 'policies/notes.txt', 'not a policy');

$t->run()->plan(88);

###############################################################################

# nginx -t, on a configuration of its own (check.conf, check.json); what
# nginx prints on stderr and its exit status

(my $check = $conf) =~ s/%%POLICY%%/%%TESTDIR%%\/check.json/;
write_check_conf('check.conf', $check);

my $CHECK = "$d/check.json";

my ($rc, $out);

write_policy($t, 'check.json', { bottles => [ alice(route_one()) ] });
($rc, $out) = $t->nginx_t('check.conf');
ok($rc == 0 && $out =~ /test is successful/, 'valid policy: nginx -t ok')
	or diag($out);

bad_policy('unknown field',
	{ bottles => [ alice({ host => 'a.example', colour => 1 }) ] },
	qr/\Q$CHECK\E: bottle "alice": routes\[0\]: unknown field "colour"/);

bad_policy('wrong type',
	{ bottles => [ alice(route_one(),
		{ host => 'a.example', passthrough => 'yes' }) ] },
	qr/\Q$CHECK\E: bottle "alice": routes\[1\]\.passthrough: must be a boolean/);

bad_policy('duplicate token',
	{ bottles => [ alice(route_one()),
		{ id => 'bob', token => $ALICE, routes => [] } ] },
	qr/\Q$CHECK\E: bottle "bob": token: same token as bottle "alice"/);

bad_policy('host with a space',
	{ bottles => [ alice({ host => 'exa mple.com' }) ] },
	qr/\Q$CHECK\E: bottle "alice": routes\[0\]\.host: "exa mple\.com" is not a valid host name/);

bad_policy('host with five numbers',
	{ bottles => [ alice({ host => '1.2.3.4.5' }) ] },
	qr/\Q$CHECK\E: bottle "alice": routes\[0\]\.host: "1\.2\.3\.4\.5" looks like an IPv4 address/);

bad_policy('auth header cookie',
	{ bottles => [ alice({ host => 'a.example', auth => { type => 'header',
		name => 'cookie', value => 'secret:API' } }) ] },
	qr/\Q$CHECK\E: bottle "alice": routes\[0\]\.auth\.name: "cookie" may not carry credentials/);

bad_policy('missing secret',
	{ bottles => [ alice({ host => 'a.example', auth => { type => 'bearer',
		value => 'secret:NOPE' } }) ] },
	qr/\Q$CHECK\E: bottle "alice": routes\[0\]\.auth\.value: secret "NOPE" is not in egress_tokens/);

# levels the records do not know (every field is acted on in this build:
# none is refused as not supported yet)

bad_policy('firehose level',
	{ bottles => [ { %{alice({ host => 'a.example' })},
		audit => { firehose => 'loud' } } ] },
	qr/\Q$CHECK\E: bottle "alice": audit\.firehose: /);

# audit.delivery: "required" with the journal off (no store: the default)

bad_policy('audit delivery required',
	{ bottles => [ { %{alice(route_one())},
		audit => { delivery => 'required' } } ] },
	qr/\Q$CHECK\E: bottle "alice": audit\.delivery: "required" needs the audit journal, which is off on this gateway \(bottle_audit\)/);

# held_secrets and repos: served by git-gate (docs/gitgate.md)

write_policy($t, 'check.json', { bottles => [ { %{alice(route_one())},
	held_secrets => { DEPLOY => $SECRET },
	repos => [ 'github.com/acme/widgets:write' ] } ] });
($rc, $out) = $t->nginx_t('check.conf');
is($rc, 0, 'held secrets and repos: nginx -t passes') or diag($out);
unlike($out, qr/\Q$SECRET\E/, 'held secrets: no secret');

# a parent and its child (docs/policy.md, "Parent and children"): a child
# within its parent loads; one beyond it, or whose parent is not in the
# policy, is refused at load, naming the child and what exceeds

write_policy($t, 'check.json', { bottles => [ alice(route_one()),
	{ id => 'kid', token => $BOB, parent => 'alice',
		routes => [ { host => '127.0.0.1', port => $P1 } ] } ] });
($rc, $out) = $t->nginx_t('check.conf');
is($rc, 0, 'a child within its parent: nginx -t passes') or diag($out);

bad_policy('a child beyond its parent',
	{ bottles => [ alice(route_one()),
		{ id => 'kid', token => $BOB, parent => 'alice',
			egress_tokens => { API => 'x' x 20 },
			routes => [ route_one(), route_two() ] } ] },
	qr/\Q$CHECK\E: bottle "kid": routes\[1\]: "127\.0\.0\.2" exceeds its parent "alice": the parent has no route to it/);

bad_policy('a child of no bottle in the policy',
	{ bottles => [ alice(route_one()),
		{ id => 'kid', token => $BOB, parent => 'nobody', routes => [] } ] },
	qr/\Q$CHECK\E: bottle "kid": parent: no bottle "nobody" in the policy/);

# the syntax error right after the token: jansson's "near ..." excerpt
# would quote it

bad_policy('invalid JSON',
	'{"bottles": [{"id": "alice", "token": "' . $ALICE . '" "routes": [],'
	. ' "egress_tokens": {"API": "' . $SECRET . '"}}]}',
	qr/\Q$CHECK\E: line 1 column \d+: invalid JSON/);

# a broken file in a directory is named by its own path

mkdir "$d/checkdir" or die "mkdir: $!\n";
write_policy($t, 'checkdir/a.json', alice(route_one()));
write_policy($t, 'checkdir/b.json', { id => 'bob', token => $BOB,
	routes => [ { host => 'b.example', methods => [ 'FETCH' ] } ] });
(my $checkdir = $conf) =~ s/%%POLICY%%/%%TESTDIR%%\/checkdir/;
write_check_conf('checkdir.conf', $checkdir);
($rc, $out) = $t->nginx_t('checkdir.conf');
isnt($rc, 0, 'broken file in a directory: nginx -t fails');
like($out, qr/\Q$d\E\/checkdir\/b\.json: bottle "bob": routes\[0\]\.methods\[0\]: "FETCH" is not a known method/,
	'broken file in a directory: file, bottle and field named');

# the directives that need a policy, without one (or with one that comes
# too late)

(my $nopolicy = $conf) =~ s/^bottle_policy .*$//m;
write_check_conf('nopolicy.conf', $nopolicy);
($rc, $out) = $t->nginx_t('nopolicy.conf');
isnt($rc, 0, 'bottle_front without bottle_policy: nginx -t fails');
like($out, qr/\[emerg\] "bottle_front" needs "bottle_policy"/,
	'bottle_front without bottle_policy: message');

(my $http_only = $nopolicy) =~ s/^stream \{.*?^\}$//ms;
write_check_conf('nopolicy-http.conf', $http_only);
($rc, $out) = $t->nginx_t('nopolicy-http.conf');
isnt($rc, 0, 'bottle without bottle_policy: nginx -t fails');
like($out, qr/\[emerg\] "bottle" needs "bottle_policy"/,
	'bottle without bottle_policy: message');

(my $late = $nopolicy) =~ s/^(http \{)/bottle_policy %%TESTDIR%%\/check.json;\n\n$1/m;
write_policy($t, 'check.json', { bottles => [ alice(route_one()) ] });
write_check_conf('late.conf', $late);
($rc, $out) = $t->nginx_t('late.conf');
isnt($rc, 0, 'bottle_policy after the stream block: nginx -t fails');
like($out, qr/\[emerg\] "bottle_front" needs "bottle_policy" at the top level, before the "stream" block/,
	'bottle_policy after the stream block: message');

###############################################################################

# the directory: both bottles' tokens work

like(get('alice', $ALICE, '127.0.0.1', $P1, '/alice'), qr/^HTTP\/1\.1 200 .*upstream one ok\n\z/s,
	'directory: alice allowed');
my $req = upstream_requests($t, 'one')->[-1];
is($req && $req->{target}, '/alice', 'directory: alice reached upstream');
is(header_value($req, 'Authorization'), "Bearer $SECRET",
	'directory: alice\'s route auth injected');

like(get('bob', $BOB, '127.0.0.1', $P1, '/bob'), qr/^HTTP\/1\.1 200 .*upstream one ok\n\z/s,
	'directory: bob allowed');
$req = upstream_requests($t, 'one')->[-1];
is($req && $req->{target}, '/bob', 'directory: bob reached upstream');
is(header_value($req, 'Authorization'), undef,
	'directory: bob\'s route has no auth');

like(get('nobody', 'nobody-token-000000000', '127.0.0.1', $P1, '/x'),
	qr/^HTTP\/1\.1 407 /, 'directory: unknown token 407');

like(connect_to('alice', $ALICE, '127.0.0.3:443'),
	qr/^HTTP\/1\.1 200 /, 'directory: alice\'s passthrough route');

my $r = get('alice', $ALICE, '127.0.0.2', $P2, '/two');
like($r, qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: no_route\r$/ms,
	'alice: no route to 127.0.0.2 yet');
is(upstream_connects($t, 'two'), 0, 'alice: nothing reached 127.0.0.2');

###############################################################################

# reload: a route removed

write_policy($t, 'policies/10-alice.json', alice());
ok($t->reload(), 'reload: route removed');

my $n = scalar @{upstream_requests($t, 'one')};
my $log = log_mark();

$r = get('alice', $ALICE, '127.0.0.1', $P1, '/removed');
like($r, qr/^HTTP\/1\.1 403 /, 'route removed: 403');
like($r, qr/^X-Bottle-Rule: no_route\r$/m, 'route removed: rule no_route');
like(http_content($r), qr/rule: no_route/, 'route removed: rule in body');
is(scalar @{upstream_requests($t, 'one')}, $n,
	'route removed: nothing reached upstream');
is(refusals($log), 'bottle="alice" host="127.0.0.1" rule="no_route" status=403',
	'route removed: one refusal logged');

like(connect_to('alice', $ALICE, '127.0.0.3:443'),
	qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: no_route\r$/ms,
	'route removed: CONNECT refused by the front');

like(get('bob', $BOB, '127.0.0.1', $P1, '/bob2'), qr/^HTTP\/1\.1 200 /,
	'route removed: the other file still serves bob');

# reload: a route added

write_policy($t, 'policies/10-alice.json', alice(route_two()));
ok($t->reload(), 'reload: route added');

like(get('alice', $ALICE, '127.0.0.2', $P2, '/added'),
	qr/^HTTP\/1\.1 200 .*upstream two ok\n\z/s, 'route added: allowed');
$req = upstream_requests($t, 'two')->[-1];
is($req && $req->{target}, '/added', 'route added: reached upstream');

# a new bottle in a new file

write_policy($t, 'policies/30-carol.json', { id => 'carol',
	token => 'carol-token-0123456789',
	routes => [ { host => '127.0.0.1', port => $P1 } ] });
ok($t->reload(), 'reload: file added');
like(get('carol', 'carol-token-0123456789', '127.0.0.1', $P1, '/carol'),
	qr/^HTTP\/1\.1 200 /, 'file added: new bottle allowed');

# a token replaced

write_policy($t, 'policies/30-carol.json', { id => 'carol',
	token => 'carol-token-rotated-0123',
	routes => [ { host => '127.0.0.1', port => $P1 } ] });
ok($t->reload(), 'reload: token replaced');
like(get('carol', 'carol-token-0123456789', '127.0.0.1', $P1, '/old-token'),
	qr/^HTTP\/1\.1 407 .*^X-Bottle-Rule: identity\r$/ms,
	'token replaced: old token 407');
like(get('carol', 'carol-token-rotated-0123', '127.0.0.1', $P1, '/new-token'),
	qr/^HTTP\/1\.1 200 /, 'token replaced: new token allowed');

###############################################################################

# reload with a broken policy: refused, the old policy keeps serving

$t->allow_alerts(qr/\[emerg\].*bottle_policy: \Q$d\E\/policies\/10-alice\.json: /);

write_policy($t, 'policies/10-alice.json',
	alice(route_two(), { host => '127.0.0.1', port => $P1, colour => 1 }));

$log = log_mark();
is($t->reload(), undef, 'broken policy: reload refused');

my $text = log_since($log);
like($text, qr/\[emerg\] .*bottle_policy: \Q$d\E\/policies\/10-alice\.json: bottle "alice": routes\[1\]: unknown field "colour"/,
	'broken policy: error log names file, bottle and field');
unlike($text, qr/\Q$ALICE\E|\Q$BOB\E|\Q$SECRET\E/,
	'broken policy: no secret in the error log');

like(get('alice', $ALICE, '127.0.0.2', $P2, '/still'),
	qr/^HTTP\/1\.1 200 .*upstream two ok\n\z/s, 'broken policy: old route still allowed');
$req = upstream_requests($t, 'two')->[-1];
is($req && $req->{target}, '/still', 'broken policy: old route reached upstream');

like(get('alice', $ALICE, '127.0.0.1', $P1, '/not-yet'),
	qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: no_route\r$/ms,
	'broken policy: its new route not in effect');
like(get('carol', 'carol-token-rotated-0123', '127.0.0.1', $P1, '/carol2'),
	qr/^HTTP\/1\.1 200 /, 'broken policy: other bottles still served');

# a file that is not JSON at all

write_policy($t, 'policies/10-alice.json', "{\"id\": \"alice\", \"token\": \"$ALICE\",");
$log = log_mark();
is($t->reload(), undef, 'invalid JSON: reload refused');
$text = log_since($log);
like($text, qr/\[emerg\] .*bottle_policy: \Q$d\E\/policies\/10-alice\.json: line \d+ column \d+: invalid JSON/,
	'invalid JSON: error log names the file');
unlike($text, qr/\Q$ALICE\E/, 'invalid JSON: no token in the error log');
like(get('alice', $ALICE, '127.0.0.2', $P2, '/still2'), qr/^HTTP\/1\.1 200 /,
	'invalid JSON: old policy still serves');

# fixed again: reloads

write_policy($t, 'policies/10-alice.json', alice(route_one()));
ok($t->reload(), 'fixed policy: reload');
like(get('alice', $ALICE, '127.0.0.1', $P1, '/fixed'), qr/^HTTP\/1\.1 200 /,
	'fixed policy: new route allowed');
like(get('alice', $ALICE, '127.0.0.2', $P2, '/gone'),
	qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: no_route\r$/ms,
	'fixed policy: old route gone');

###############################################################################

# a plain-HTTP request through the front: absolute URI, the bottle's token

sub get {
	my ($user, $token, $host, $port, $path) = @_;
	return proxy_request(8080, "GET http://$host:$port$path HTTP/1.1\r\n"
		. "Host: $host:$port\r\n"
		. 'Proxy-Authorization: ' . basic($user, $token) . "\r\n"
		. "Connection: close\r\n\r\n");
}

# CONNECT through the front: its answer (the tunnel is not used)

sub connect_to {
	my ($user, $token, $target) = @_;
	my $s = proxy_session(8080) or return undef;
	$s->send("CONNECT $target HTTP/1.1\r\nHost: $target\r\n"
		. 'Proxy-Authorization: ' . basic($user, $token) . "\r\n\r\n");
	my $r = $s->read_response();
	$s->close();
	return $r;
}

# error.log from a mark on

sub log_mark {
	return -s "$d/error.log" || 0;
}

sub log_since {
	my ($mark) = @_;
	return substr($t->read_file('error.log'), $mark);
}

# the refusal lines logged since a mark, without their reasons

sub refusals {
	my ($mark) = @_;
	my @l = log_since($mark) =~ /bottle refused: (.*?) reason=/g;
	return join "\n", @l;
}

# a configuration for nginx -t only: its own error log and pid file, so
# nothing it does shows in the running nginx's files

sub write_check_conf {
	my ($name, $text) = @_;
	$t->write_file_expand($name, $text);
	my $c = $t->read_file($name);
	$c =~ s!\Q$d\E/error\.log!$d/check-error.log!g;
	$c =~ s!\Q$d\E/nginx\.pid!$d/check.pid!g;
	$t->write_file($name, $c);
}

# nginx -t: (exit status, stderr and stdout)


# an invalid policy: nginx -t fails, the message names the file, the
# bottle and the field, and no secret

sub bad_policy {
	my ($what, $policy, $re) = @_;

	write_policy($t, 'check.json', $policy);
	my ($rc, $out) = $t->nginx_t('check.conf');

	isnt($rc, 0, "$what: nginx -t fails");
	like($out, qr/\[emerg\] bottle_policy: $re/, "$what: message");
	unlike($out, qr/\Q$ALICE\E|\Q$BOB\E|\Q$SECRET\E/, "$what: no secret");
}

###############################################################################
