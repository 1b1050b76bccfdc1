#!/usr/bin/perl

# Tests for child bottles (docs/policy.md "Parent and children",
# docs/supervise.md launch-bottle): launch-bottle's refusals before a
# proposal (unknown agent or bottle, a forge not connected, a child that
# launches, a bottle naming no agents), what the named bottles hold beyond
# the parent's live policy listed as removed on the proposal (its args,
# bottlectl proposals' summary, the launch spec an approval gives), a
# parent and a child put with bottlectl and served by the gateway (the
# child's token decided by the child's policy), a child beyond its parent
# refused at put, naming the bottle and what exceeds.
#
# SUPERVISE_HELPER=path runs another build (build-asan/supervise-helper).

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use JSON::PP qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $HELPER = $ENV{SUPERVISE_HELPER} // "$FindBin::Bin/../build/supervise-helper";
$HELPER = "$FindBin::Bin/../$HELPER" if $HELPER !~ m!^/! && !-x $HELPER;

if (!-x $HELPER) {
	BAIL_OUT("SUPERVISE_HELPER=$HELPER is not built")
		if $ENV{SUPERVISE_HELPER};
	plan(skip_all => 'build/supervise-helper not built (make supervise)');
}

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/)
	->has_daemon('redis-server')->has_daemon('redis-cli')
	->has_daemon('curl');
my $d = $t->testdir();
my $json = JSON::PP->new->canonical;

my $RP = port(8090);
my $P1 = port(8081);
my $P2 = port(8082);

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	main => 'worker_processes 1;',
	policy => "redis://127.0.0.1:$RP"));

fake_upstream($t, port => $P1, name => 'one');
fake_upstream($t, port => $P2, name => 'two', addr => '127.0.0.2');

$t->run()->plan(37);

my $r = redis_start($t, port => $RP);
$ENV{BOTTLE_STORE} = $r->{url};
$ENV{BOTTLE_OPERATOR} = 'op-launch';

my $ALICE = 'alice-token-0123456789';
my $KID = 'kid-token-01234567890';

sub route { return { host => $_[0], port => $_[1] }; }

# alice, the parent: both upstreams, two repos, one egress token; "dev",
# a bottle the agent may name, holds more than alice; "far" has a repo on
# a forge that is not connected

my $alice = { id => 'alice', token => $ALICE,
	children => { max => 2, agents => [ 'claude' ] },
	egress_tokens => { GH => 'ghp-value-000000001' },
	repos => [ 'git.example.org/team/app:write', 'git.example.org/team/docs' ],
	routes => [ route('127.0.0.1', $P1), route('127.0.0.2', $P2) ] };

store_put($t, $alice,
	{ id => 'dev', token => 'dev-token-0123456789',
		egress_tokens => { GH => 'ghp-value-000000009',
			AWS_KEY => 'aws-value-000000001' },
		repos => [ 'git.example.org/team/app', 'git.example.org/team/docs:write',
			'git.example.org/other/secret' ],
		routes => [ route('127.0.0.1', $P1), route('evil.example', 443) ] },
	{ id => 'far', token => 'far-token-0123456789',
		repos => [ 'git.far.example/o/r' ], routes => [] },
	{ id => 'bob', token => 'bob-token-0123456789', routes => [] });

redis_cli($t, 'SADD', 'bottle:forges', 'git.example.org');

$t->run_daemon(sub {
	open STDIN, '<', '/dev/null';
	open STDOUT, '>>', "$d/sv.stderr";
	open STDERR, '>&', \*STDOUT;
	exec($HELPER, '--listen', "unix:$d/sv.sock", '--store', $r->{url},
		'--response-timeout', '0', '--log', "$d/sv.log")
		or die "exec: $!\n";
});
for (1 .. 100) {
	last if -S "$d/sv.sock";
	sleep 0.05;
}

###############################################################################

# MCP over supervise-helper's socket, with the header nginx sets

my $n = 0;

sub req {
	my ($bottle, $h, $body) = @_;
	$n++;
	open my $fh, '>', "$d/req$n" or die;
	print $fh $json->encode($body);
	close $fh;
	my @cmd = ('curl', '-s', '-o', "$d/b$n", '-D', "$d/h$n",
		'--unix-socket', "$d/sv.sock", '--max-time', '20',
		'-H', 'Accept: application/json, text/event-stream',
		'-H', 'Content-Type: application/json',
		'-H', "X-Bottle-Id: $bottle",
		(map { ('-H', "$_: $h->{$_}") } sort keys %$h),
		'--data-binary', "\@$d/req$n", 'http://supervise/');
	system(@cmd) == 0 or die "curl: $?\n";
	return { headers => $t->read_file("h$n"),
		json => eval { $json->decode($t->read_file("b$n")) } };
}

my %session;

sub call {
	my ($bottle, $args) = @_;
	if (!$session{$bottle}) {
		my $res = req($bottle, {}, { jsonrpc => '2.0', id => 1,
			method => 'initialize', params => {
			protocolVersion => '2025-06-18', capabilities => {},
			clientInfo => { name => 't', version => '1' } } });
		($session{$bottle}) = $res->{headers} =~ /^Mcp-Session-Id: (\S+)/mi;
	}
	my $res = req($bottle, { 'Mcp-Session-Id' => $session{$bottle},
		'MCP-Protocol-Version' => '2025-06-18' },
		{ jsonrpc => '2.0', id => 2, method => 'tools/call',
		params => { name => 'launch-bottle', arguments => {
		justification => 'a helper for the tests', %$args } } });
	my $c = $res->{json}{result} // {};
	my $text = $c->{content}[0]{text} // '';
	return { text => $text, error => $c->{isError} ? 1 : 0,
		answer => eval { $json->decode($text) } // {} };
}

sub queued {
	my $c = redis_cli($t, 'ZCARD', 'bottle:proposals:all');
	chomp $c;
	return $c;
}

sub proposed {
	return scalar grep { /"type":"decision\.proposed"/ }
		split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
}

sub get {
	my ($token, $host, $port) = @_;
	return proxy_request(8080, "GET http://$host:$port/ HTTP/1.1\r\n"
		. "Host: $host:$port\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

sub wait_for {
	my ($code, $re) = @_;
	my $res;
	for (1 .. 200) {
		$res = $code->();
		return $res if $res =~ $re;
		sleep 0.05;
	}
	return $res;
}

###############################################################################

# refused before a proposal: nothing queued, nothing journalled

my $q0 = queued();
my $j0 = proposed();

my @refusals = (
	[ 'alice', { agent => 'codex' },
		qr/unknown agent "codex": not one this bottle's children may run \(children\.agents\)/,
		'an agent children.agents does not list' ],
	[ 'bob', { agent => 'claude' },
		qr/unknown agent "claude": this bottle's policy names no agent/,
		'a bottle whose policy names no agent' ],
	[ 'alice', { agent => 'claude', bottles => [ 'dev', 'nosuch' ] },
		qr/unknown bottle "nosuch": not in the store/, 'an unknown bottle' ],
	[ 'alice', { agent => 'claude', bottles => [ 'far' ] },
		qr/bottle "far" has a repo on forge git\.far\.example, which is not connected to this gateway: ask for it with forge-connect/,
		'a forge not connected' ],
	[ 'alice', { agent => 'claude', bottles => [ 'dev', 'dev' ] },
		qr/"dev" named twice/, 'a bottle named twice' ],
	[ 'alice', { agent => 'claude', bottles => [ map { "b$_" } 1 .. 17 ] },
		qr/17 names, more than 16/, 'too many bottles' ],
	[ 'alice', { agent => "claude\nx" }, qr/agent: a name/,
		'an agent that is no name' ],
);

for my $x (@refusals) {
	my ($bottle, $args, $re, $name) = @$x;
	my $c = call($bottle, $args);
	ok($c->{error} && $c->{text} =~ /^refused, nothing was queued: /
		&& $c->{text} =~ $re, "refused: $name") or diag($c->{text});
}

is(queued(), $q0, 'refused: nothing queued');
is(proposed(), $j0, 'refused: nothing journalled as proposed');

my $log = $t->read_file('sv.log');
is(scalar(() = $log =~ /refused bottle=\S+ tool=launch-bottle /g),
	scalar @refusals, 'refused: one log line each');

# what dev holds beyond alice: listed as removed

my $c = call('alice', { agent => 'claude', prompt => 'fix it',
	bottles => [ 'dev' ], label => 'fixer' });
my $id = $c->{answer}{id} // '';
is($c->{answer}{status}, 'pending', 'a launch within the checks: queued')
	or diag($c->{text});

my $p = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$id", 'json')
	|| '{}');
is_deeply($p->{args}{removed}, { hosts => [ 'evil.example' ],
	repos => [ 'git.example.org/team/docs:write',
		'git.example.org/other/secret' ],
	env => [ 'AWS_KEY' ], create => [] },
	'the proposal lists what is beyond the parent as removed')
	or diag($json->encode($p->{args}));

my $list = ctl_run($t, 'proposals');
like($list->{out}, qr/launch-bottle .*claude bottles dev; beyond the parent, removed: hosts evil\.example repos git\.example\.org\/team\/docs:write,git\.example\.org\/other\/secret env AWS_KEY/,
	'bottlectl proposals: the summary says what is removed')
	or diag($list->{out} . $list->{err});

my $show = ctl_run($t, 'show', $id);
like($show->{out}, qr/"removed":.*"evil\.example"/s,
	'bottlectl show: the removed elements');

# nothing beyond: nothing listed

$c = call('alice', { agent => 'claude', bottles => [ 'alice' ] });
my $id2 = $c->{answer}{id} // '';
$p = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$id2", 'json')
	|| '{}');
ok($id2 && !exists $p->{args}{removed},
	'a launch of the parent\'s own access: nothing removed');
ctl_run($t, 'deny', $id2);

# the approval: the launch spec carries the parent and what is removed

$t->write_file('launch.json', $json->encode({ bottles => [ 'dev' ] }));
my $res = ctl_run($t, 'modify', $id, "$d/launch.json", '--note', 'ok');
is($res->{rc}, 0, 'modify with the launch spec') or diag($res->{err});
my $dec = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$id",
	'decision') || '{}');
is($dec->{launch}{parent}, 'alice', 'the launch spec names the parent');
is_deeply($dec->{launch}{removed}{hosts}, [ 'evil.example' ],
	'the launch spec says what the child does not get');

###############################################################################

# the launcher puts the child: beyond its parent refused, naming it

$t->write_file('kid-wide.json', $json->encode({ id => 'kid', token => $KID,
	parent => 'alice', routes => [ route('127.0.0.1', $P1),
	route('evil.example', 443) ] }));
$res = ctl_run($t, 'policy', 'put', "$d/kid-wide.json");
isnt($res->{rc}, 0, 'put: a child beyond its parent refused');
like($res->{err}, qr/bottle "kid": routes\[1\]: "evil\.example" exceeds its parent "alice": the parent has no route to it/,
	'put: the message names the child, the field and the parent')
	or diag($res->{err});
is(redis_cli($t, 'HEXISTS', 'bottle:policy:kid', 'json') + 0, 0,
	'put: nothing stored');

$t->write_file('kid-env.json', $json->encode({ id => 'kid', token => $KID,
	parent => 'alice', egress_tokens => { AWS_KEY => 'aws-value-000000001' },
	routes => [] }));
$res = ctl_run($t, 'policy', 'put', "$d/kid-env.json");
like($res->{err}, qr/bottle "kid": egress_tokens: "AWS_KEY" exceeds its parent "alice"/,
	'put: an env name beyond the parent refused');

$t->write_file('kid-orphan.json', $json->encode({ id => 'kid', token => $KID,
	parent => 'nobody', routes => [] }));
$res = ctl_run($t, 'policy', 'put', "$d/kid-orphan.json");
like($res->{err}, qr/bottle "kid": parent: no bottle "nobody" in it or in the store/,
	'put: a child of no bottle refused');

$t->write_file('kid-kid.json', $json->encode({ id => 'kid2', token =>
	'kid2-token-0123456789', parent => 'bob', routes => [] }));
store_put($t, { id => 'bob', token => 'bob-token-0123456789', routes => [],
	parent => 'alice' });
$res = ctl_run($t, 'policy', 'put', "$d/kid-kid.json");
like($res->{err}, qr/bottle "kid2": parent: "bob" is itself a child \(of "alice"\): depth is 1/,
	'put: a child of a child refused');

# within: put and served, the child's token decided by the child's policy

$t->write_file('kid.json', $json->encode({ id => 'kid', token => $KID,
	parent => 'alice', egress_tokens => { GH => 'ghp-value-000000001' },
	repos => [ 'git.example.org/team/app' ],
	routes => [ route('127.0.0.1', $P1) ] }));
$res = ctl_run($t, 'policy', 'put', "$d/kid.json");
is($res->{rc}, 0, 'put: a child within its parent') or diag($res->{err});

like(wait_for(sub { get($KID, '127.0.0.1', $P1) }, qr/ 200 /),
	qr/^HTTP\/1\.1 200 /, 'the gateway serves the child: its route');
like(get($KID, '127.0.0.2', $P2), qr/^HTTP\/1\.1 403 .*allowlist/s,
	'the child: a route of the parent only refused');
like(get($ALICE, '127.0.0.2', $P2), qr/^HTTP\/1\.1 200 /,
	'the parent: that route served');

# an approval for the child itself: within its parent or not at all

sub propose_kid {
	my $res = ctl_run($t, 'propose', 'kid', 'egress-allow',
		$json->encode($_[0]));
	chomp $res->{out};
	return $res->{out};
}

my $beyond = propose_kid({ host => 'evil.example' });
$res = ctl_run($t, 'approve', $beyond);
isnt($res->{rc}, 0, 'approve: a route beyond the child\'s parent refused');
like($res->{err}, qr/cannot approve: bottle:policy:kid: bottle "kid": routes\[1\]: "evil\.example" exceeds its parent "alice": the parent has no route to it/,
	'approve: the message names the child and what exceeds')
	or diag($res->{err});
is(redis_cli($t, 'HGET', "bottle:proposal:$beyond", 'state'), "pending\n",
	'approve refused: the proposal stays pending');

my $within = propose_kid(route('127.0.0.2', $P2));
$res = ctl_run($t, 'approve', $within);
is($res->{rc}, 0, 'approve: a route within the parent') or diag($res->{err});
like(wait_for(sub { get($KID, '127.0.0.2', $P2) }, qr/ 200 /),
	qr/^HTTP\/1\.1 200 /, 'the child: the approved route served');

# a parent and a child in one document, as a file holds them

$t->write_file('family.json', $json->encode({ bottles => [
	{ %$alice, routes => [ route('127.0.0.1', $P1) ] },
	{ id => 'kid', token => $KID, parent => 'alice',
		routes => [ route('127.0.0.2', $P2) ] } ] }));
$res = ctl_run($t, 'policy', 'put', "$d/family.json");
like($res->{err}, qr/family\.json: bottle "kid": routes\[0\]: "127\.0\.0\.2" exceeds its parent "alice"/,
	'put: parent and child in one document, the child beyond: refused');
like(get($KID, '127.0.0.1', $P1), qr/^HTTP\/1\.1 200 /,
	'refused put: the child as it was');

# the child launches nothing

$c = call('kid', { agent => 'claude' });
like($c->{text}, qr/child cannot launch/, 'a child cannot launch (depth 1)');

# sanitizers (SUPERVISE_HELPER and BOTTLECTL of build-asan/)

$t->stop_daemons();
my $errors = join '', map { -e "$d/$_" ? $t->read_file($_) : '' }
	qw/ sv.stderr stderr.log /;
unlike($errors, qr/AddressSanitizer|runtime error|LeakSanitizer/,
	'no sanitizer reports');

###############################################################################
