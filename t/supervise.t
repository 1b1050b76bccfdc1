#!/usr/bin/perl

# Tests for supervise-helper, the agent's MCP server (docs/supervise.md),
# spoken to directly on its unix socket with the header nginx would set
# (X-Bottle-Id): initialize, sessions, the transport's refusals (no
# bottle, Accept, Content-Type, body cap, bad JSON, unknown methods),
# tools/list, every tool, every refusal before queueing (nothing queued),
# a call that waits and then answers pending, an approval and a denial
# during the wait, check-proposal later, another bottle's proposal, the
# journal's decision.proposed, the log lines, SIGTERM with a call waiting.
#
# SUPERVISE_HELPER=path runs another build (build-asan/supervise-helper);
# its stderr is read for sanitizer reports at the end.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP qw//;
use POSIX qw/ WNOHANG /;
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

my $t = Test::Nginx->new()->has_daemon('redis-server')
	->has_daemon('redis-cli')->has_daemon('curl')->plan(115);
my $d = $t->testdir();
my $json = JSON::PP->new->canonical;

my $r = redis_start($t, port => 8131, persist => 1);
$ENV{BOTTLE_STORE} = $r->{url};
$ENV{BOTTLE_OPERATOR} = 'op-sv';

store_put($t,
	{ id => 'alice', token => 'alice-token-0123456789',
		children => { agents => [ 'claude' ] },
		egress_tokens => { GH => 'ghp_s3cr3t-value-0001' },
		routes => [ { host => 'api.github.com', methods => [ 'GET' ],
			auth => { type => 'bearer', value => 'secret:GH' } } ] },
	{ id => 'bob', token => 'bob-token-9876543210xyz', routes => [] },
	{ id => 'dave', token => 'dave-token-0000000000', routes => [] },
	{ id => 'dev', token => 'dev-token-00000000000', routes => [] });

# a child (parent set) and a parent whose children.max is 1, written as
# the launcher would
my $KID = 'a1' x 32;
my $ERIN = 'b2' x 32;
store_raw($t, 'kid', qq{{"id":"kid","parent":"alice","token_sha256":"$KID","routes":[]}}, $KID);
store_raw($t, 'erin', qq{{"id":"erin","children":{"max":1,"agents":["a"]},"token_sha256":"$ERIN","routes":[]}}, $ERIN);

redis_cli($t, 'SADD', 'bottle:forges', 'git.example.org');

# two helpers: "fast" answers pending at once (--response-timeout 0),
# "slow" waits 4 s (the environment's SUPERVISE_RESPONSE_TIMEOUT_SECONDS)

sub helper {
	my ($name, $env, @args) = @_;
	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', "$d/$name.stderr";
		open STDERR, '>&', \*STDOUT;
		@ENV{keys %$env} = values %$env;
		exec($HELPER, '--listen', "unix:$d/$name.sock",
			'--store', $r->{url}, @args) or die "exec: $!\n";
	});
	my $pid = $t->last_daemon_pid();
	for (1 .. 100) {
		last if -S "$d/$name.sock";
		sleep 0.05;
	}
	return $pid;
}

helper('fast', {}, '--response-timeout', '0', '--log', "$d/fast.log");
my $slow_pid = helper('slow', { SUPERVISE_RESPONSE_TIMEOUT_SECONDS => 4 });

# req($sock, { headers }, $body, method => 'POST'): { status, headers, body,
# json }; the usual MCP headers unless given

my $n = 0;

sub req {
	my ($sock, $h, $body, %o) = @_;
	$n++;
	my %h = ('Accept' => 'application/json, text/event-stream',
		'Content-Type' => 'application/json', %$h);
	my @cmd = ('curl', '-s', '-o', "$d/b$n", '-D', "$d/h$n",
		'-w', '%{http_code}', '--unix-socket', "$d/$sock.sock",
		'-X', $o{method} // 'POST', '--max-time', '20');
	push @cmd, '-H', $_ eq 'X-Bottle-Id' && !defined $h{$_} ? ''
		: "$_: $h{$_}" for grep { defined $h{$_} } sort keys %h;
	if (defined $body) {
		open my $fh, '>', "$d/req$n" or die;
		print $fh ref $body ? $json->encode($body) : $body;
		close $fh;
		push @cmd, '--data-binary', "\@$d/req$n";
	}
	push @cmd, 'http://supervise/' . ($o{path} // '');
	open my $fh, '-|', @cmd or die "curl: $!\n";
	my $status = <$fh> // '';
	close $fh;
	my $res = { status => $status + 0, body => $t->read_file("b$n"),
		headers => $t->read_file("h$n") };
	$res->{json} = eval { $json->decode($res->{body}) };
	return $res;
}

my $id = 0;

sub session {
	my ($sock, $bottle, $version) = @_;
	my $res = req($sock, { 'X-Bottle-Id' => $bottle },
		{ jsonrpc => '2.0', id => ++$id, method => 'initialize',
		params => { protocolVersion => $version // '2025-06-18',
		capabilities => {}, clientInfo => { name => 't', version => '1' } } });
	my ($s) = $res->{headers} =~ /^Mcp-Session-Id: (\S+)/mi;
	return wantarray ? ($s, $res) : $s;
}

sub rpc {
	my ($sock, $bottle, $s, $method, $params) = @_;
	return req($sock, { 'X-Bottle-Id' => $bottle, 'Mcp-Session-Id' => $s,
		'MCP-Protocol-Version' => '2025-06-18' },
		{ jsonrpc => '2.0', id => ++$id, method => $method,
		defined $params ? (params => $params) : () });
}

# call(...): the tool's result { text, error, answer (the text's JSON) }

sub call {
	my ($sock, $bottle, $s, $tool, $args) = @_;
	my $res = rpc($sock, $bottle, $s, 'tools/call',
		{ name => $tool, arguments => $args });
	my $c = $res->{json}{result} // {};
	my $text = $c->{content}[0]{text} // '';
	return { status => $res->{status}, text => $text,
		error => $c->{isError} ? 1 : 0,
		answer => eval { $json->decode($text) } // {}, res => $res };
}

sub queued {
	my $c = redis_cli($t, 'ZCARD', 'bottle:proposals:all');
	chomp $c;
	return $c;
}

sub proposal {
	my ($pid) = @_;
	my $j = redis_cli($t, 'HGET', "bottle:proposal:$pid", 'json');
	return eval { $json->decode($j) } // {};
}

sub events {
	my ($type) = @_;
	return grep { $_->{type} eq $type } map { $json->decode($_) }
		grep { /^\{/ } split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit',
			'-', '+');
}

###############################################################################

# the socket

my @st = stat("$d/fast.sock");
is(sprintf('%o', $st[2] & 0777), '660', 'the unix socket is mode 0660');

# initialize and sessions

my ($A, $res) = session('fast', 'alice');
is($res->{status}, 200, 'initialize: 200');
like($A // '', qr/^[0-9a-f]{32}$/, 'initialize: an Mcp-Session-Id');
is($res->{json}{result}{protocolVersion}, '2025-06-18',
	'initialize: protocol 2025-06-18');
is_deeply($res->{json}{result}{capabilities}, { tools => {} },
	'initialize: capabilities tools');
is($res->{json}{result}{serverInfo}{name}, 'supervise-helper',
	'initialize: serverInfo');
like($res->{json}{result}{instructions},
	qr/git never goes out through egress.*git-gate.*no key or token.*add-repo/s,
	'initialize: instructions say git goes through git-gate, add-repo');

my (undef, $old) = session('fast', 'alice', '2025-03-26');
is($old->{json}{result}{protocolVersion}, '2025-03-26',
	'initialize: 2025-03-26 is accepted');
my (undef, $odd) = session('fast', 'alice', '1999-01-01');
is($odd->{json}{result}{protocolVersion}, '2025-06-18',
	'initialize: an unknown version gets the latest');

my $before = queued();

$res = req('fast', {}, { jsonrpc => '2.0', id => 1, method => 'initialize',
	params => {} });
is($res->{status}, 401, 'no X-Bottle-Id: 401');
is($res->{json}{error}{code}, -32000, 'no X-Bottle-Id: a JSON-RPC error');
$res = req('fast', { 'Mcp-Session-Id' => $A }, { jsonrpc => '2.0', id => 2,
	method => 'tools/call', params => { name => 'egress-block',
	arguments => { host => 'x.org', justification => 'j' } } });
is($res->{status}, 401, 'no X-Bottle-Id on tools/call: 401');
$res = req('fast', { 'X-Bottle-Id' => "ali ce" }, { jsonrpc => '2.0',
	id => 1, method => 'ping' });
is($res->{status}, 401, 'an invalid X-Bottle-Id: 401');

my (undef, $nob) = session('fast', 'mallory');
is($nob->{status}, 403, 'a bottle not in the store: 403');
unlike($nob->{headers}, qr/Mcp-Session-Id/i, 'a bottle not in the store: no session');

$res = req('fast', { 'X-Bottle-Id' => 'alice' },
	{ jsonrpc => '2.0', id => 3, method => 'tools/list' });
is($res->{status}, 400, 'no session id after initialize: 400');
$res = rpc('fast', 'alice', 'f' x 32, 'tools/list');
is($res->{status}, 404, 'an unknown session: 404');
$res = rpc('fast', 'bob', $A, 'tools/list');
is($res->{status}, 404, "another bottle's session: 404");

$res = req('fast', { 'X-Bottle-Id' => 'alice', 'Mcp-Session-Id' => $A },
	{ jsonrpc => '2.0', method => 'notifications/initialized' });
is($res->{status}, 202, 'notifications/initialized: 202');
is($res->{body}, '', 'notifications/initialized: no body');

$res = rpc('fast', 'alice', $A, 'ping');
is($res->{status}, 200, 'ping: 200');
is_deeply($res->{json}{result}, {}, 'ping: an empty result');

$res = req('fast', { 'X-Bottle-Id' => 'alice', 'Mcp-Session-Id' => $A,
	'MCP-Protocol-Version' => '2024-01-01' },
	{ jsonrpc => '2.0', id => 4, method => 'ping' });
is($res->{status}, 400, 'an unsupported MCP-Protocol-Version: 400');

$res = req('fast', { 'X-Bottle-Id' => 'alice', 'Mcp-Session-Id' => $A },
	undef, method => 'GET');
is($res->{status}, 405, 'GET: 405');
like($res->{headers}, qr/^Allow: POST, DELETE/mi, 'GET: Allow');

$res = req('fast', { 'X-Bottle-Id' => 'alice' }, { jsonrpc => '2.0',
	id => 1, method => 'ping' }, path => 'other');
is($res->{status}, 404, 'another path: 404');

my $B = session('fast', 'alice');
$res = req('fast', { 'X-Bottle-Id' => 'alice', 'Mcp-Session-Id' => $B },
	undef, method => 'DELETE');
is($res->{status}, 200, 'DELETE: the session ends');
$res = rpc('fast', 'alice', $B, 'ping');
is($res->{status}, 404, 'DELETE: then its id is 404');
$res = rpc('fast', 'alice', $A, 'ping');
is($res->{status}, 200, 'DELETE: another session lives on');

# transport and JSON-RPC errors

my %h = ('X-Bottle-Id' => 'alice', 'Mcp-Session-Id' => $A);

$res = req('fast', { %h, Accept => 'application/json' },
	{ jsonrpc => '2.0', id => 5, method => 'ping' });
is($res->{status}, 406, 'Accept without text/event-stream: 406');
$res = req('fast', { %h, 'Content-Type' => 'text/plain' },
	{ jsonrpc => '2.0', id => 5, method => 'ping' });
is($res->{status}, 415, 'Content-Type text/plain: 415');

$res = req('fast', \%h, '{"jsonrpc": "2.0", "id": 6, "method": ');
is($res->{status}, 400, 'bad JSON: 400');
is($res->{json}{error}{code}, -32700, 'bad JSON: -32700');
# jansson quotes the bad escape up to its first byte, half a character
$res = req('fast', \%h, '{"jsonrpc": "2.0", "id": 6, "method": "\\'
	. "\xce\xa3" . '"}');
is($res->{json}{error}{code}, -32700,
	'bad JSON cut inside a character: -32700');
like($res->{json}{error}{message} // '', qr/^parse error: invalid escape near '"\\\?'/,
	'bad JSON cut inside a character: quoted, "?" for the half');
$res = req('fast', \%h, '[{"jsonrpc":"2.0","id":7,"method":"ping"}]');
is($res->{json}{error}{code}, -32600, 'a batch: -32600');
$res = req('fast', \%h, '{"jsonrpc":"1.0","id":8,"method":"ping"}');
is($res->{json}{error}{code}, -32600, 'jsonrpc 1.0: -32600');
is($res->{json}{id}, 8, 'invalid request: the id is echoed');
$res = rpc('fast', 'alice', $A, 'resources/list');
is($res->{json}{error}{code}, -32601, 'unknown method: -32601');
$res = rpc('fast', 'alice', $A, 'tools/call', { name => 'rm-rf' });
is($res->{json}{error}{code}, -32602, 'unknown tool: -32602');
$res = req('fast', { %h, 'MCP-Protocol-Version' => '2025-06-18' },
	'{"jsonrpc":"2.0","id":90,"method":"tools/call","params":{"name":"a'
	. ("\xc3\xa9" x 40) . '"}}');
is($res->{json}{error}{code}, -32602,
	'unknown tool, its name quoted cut inside a character: -32602');
$res = rpc('fast', 'alice', $A, 'tools/call', { name => 'egress-block',
	arguments => [ 1 ] });
is($res->{json}{error}{code}, -32602, 'arguments not an object: -32602');

$res = req('fast', \%h, '{"jsonrpc":"2.0","id":9,"method":"tools/call",'
	. '"params":{"name":"egress-block","arguments":{"host":"big.example",'
	. '"justification":"' . ('a' x (1024 * 1024 + 10)) . '"}}}');
is($res->{status}, 413, 'a body over 1 MiB: 413');

is(queued(), $before, 'no proposal from any of the above');

# tools/list

$res = rpc('fast', 'alice', $A, 'tools/list');
my @tools = map { $_->{name} } @{$res->{json}{result}{tools} // []};
is(join(',', @tools), 'egress-allow,egress-block,list-egress-routes,'
	. 'forge-connect,add-repo,launch-bottle,create-repo,check-proposal',
	'tools/list: the eight tools');
is(scalar(grep { $_->{inputSchema}{type} eq 'object' }
	@{$res->{json}{result}{tools}}), 8, 'tools/list: an input schema each');
like($res->{json}{result}{tools}[0]{description}, qr/git-gate/,
	'tools/list: egress-allow says git goes through git-gate');

# list-egress-routes: from the policy, no operator, no token

my $c = call('fast', 'alice', $A, 'list-egress-routes', {});
is($c->{error}, 0, 'list-egress-routes: a result');
like($c->{text}, qr/api\.github\.com/, 'list-egress-routes: the route');
unlike($c->{text}, qr/ghp_s3cr3t/, 'list-egress-routes: never the token');

# refusals before queueing

my @refusals = (
	[ 'egress-allow', { route => { host => 'x.example', bogus => 1 },
		justification => 'j' }, qr/unknown field/, 'a route field policy.md does not have' ],
	[ 'egress-allow', { route => { host => 'x.example',
		methods => [ 'FETCH' ] }, justification => 'j' }, qr/methods/,
		'an unknown method' ],
	[ 'egress-allow', { route => 'x.example', justification => 'j' },
		qr/route: an object/, 'a route that is not an object' ],
	[ 'egress-allow', { route => { host => 'x.example' }, host => 'y',
		justification => 'j' }, qr/not both/, 'a route and a host' ],
	[ 'egress-allow', { host => 'x.example' }, qr/justification/,
		'no justification' ],
	[ 'egress-allow', { route => { host => 'api.github.com',
		methods => [ 'GET' ], auth => { type => 'bearer',
		value => 'secret:GH' } }, justification => 'j' }, qr/already/,
		'a route the bottle has' ],
	[ 'egress-block', { justification => 'j' }, qr/host/, 'egress-block without host' ],
	[ 'forge-connect', { url => 'http://git.example.net/',
		justification => 'j' }, qr/https/, 'forge-connect: not https' ],
	[ 'forge-connect', { url => 'https://gitlab.com/',
		justification => 'j' }, qr/GitLab/, 'forge-connect: a host of another kind' ],
	[ 'forge-connect', { url => 'https://me:tok@git.example.net/',
		justification => 'j' }, qr/no user or token/, 'forge-connect: credentials in the URL' ],
	[ 'add-repo', { repo => 'git.example.net/o/r', justification => 'j' },
		qr/not connected.*forge-connect/, 'add-repo: forge not connected' ],
	[ 'add-repo', { repo => 'git.example.org/o', justification => 'j' },
		qr/repo:/, 'add-repo: a bad grant' ],
	[ 'add-repo', { repo => 'bitbucket.org/o/r', justification => 'j' },
		qr/Bitbucket/, 'add-repo: a forge of another kind' ],
	[ 'create-repo', { repo => 'git.example.net/o/new', justification => 'j' },
		qr/not connected.*forge-connect/, 'create-repo: forge not connected' ],
	[ 'create-repo', { repo => 'git.example.org/o/new:write',
		justification => 'j' }, qr/repo:/, 'create-repo: a mode is a bad name' ],
	[ 'create-repo', { repo => 'git.example.org/o/new', public => 'yes',
		justification => 'j' }, qr/public/, 'create-repo: public not a boolean' ],
	[ 'launch-bottle', { prompt => 'p', justification => 'j' }, qr/agent/,
		'launch-bottle: no agent' ],
	[ 'check-proposal', { id => 'nope' }, qr/proposal id/, 'check-proposal: a bad id' ],
);

for my $x (@refusals) {
	my ($tool, $args, $re, $name) = @$x;
	$c = call('fast', 'alice', $A, $tool, $args);
	ok($c->{error} && $c->{text} =~ /^refused, nothing was queued: / && $c->{text} =~ $re,
		"refused: $name") or diag($c->{text});
}

my $K = session('fast', 'kid');
$c = call('fast', 'kid', $K, 'launch-bottle', { agent => 'claude',
	prompt => 'p', justification => 'j' });
like($c->{text}, qr/child cannot launch/, 'refused: launch-bottle from a child');

is(queued(), $before, 'refused: nothing queued');

my $log = $t->read_file('fast.log');
my @lines = $log =~ /^.* refused bottle=\S+ tool=\S+ /mg;
is(scalar @lines, @refusals + 1, 'refused: one log line each');

# every tool queues (fast: pending at once)

my %queue = (
	'egress-allow' => [ { host => 'api.example.org', methods => [ 'GET', 'POST' ] },
		{ host => 'api.example.org', methods => [ 'GET', 'POST' ] } ],
	'egress-block' => [ { host => 'api.github.com' }, { host => 'api.github.com' } ],
	'forge-connect' => [ { url => 'https://localhost:9/' },
		{ url => 'https://localhost:9/' } ],
	'add-repo' => [ { repo => 'git.example.org/team/app:write' },
		{ repo => 'git.example.org/team/app', write => JSON::PP::true } ],
	'create-repo' => [ { repo => 'git.example.org/team/new', public => JSON::PP::true },
		{ repo => 'git.example.org/team/new', public => JSON::PP::true } ],
	'launch-bottle' => [ { agent => 'claude', prompt => 'fix it',
		bottles => [ 'dev' ], label => 'fixer' }, { agent => 'claude',
		prompt => 'fix it', bottles => [ 'dev' ], label => 'fixer' } ],
);

my %ids;

for my $tool (sort keys %queue) {
	my ($in, $want) = @{$queue{$tool}};
	my $t0 = time();
	$c = call('fast', 'alice', $A, $tool, { %$in, justification => "for $tool" });
	my $pid = $c->{answer}{id} // '';
	$ids{$tool} = $pid;
	ok(!$c->{error} && $c->{answer}{status} eq 'pending'
		&& $pid =~ /^\d{13}-[0-9a-f]{8}$/, "$tool: queued, pending")
		or diag($c->{text});
	my $p = proposal($pid);
	is_deeply([ $p->{bottle}, $p->{kind}, $p->{producer}, $p->{args} ],
		[ 'alice', $tool, 'supervise', $want ],
		"$tool: the stored proposal") or diag($json->encode($p));
}

is(queued(), $before + 6, 'six proposals queued');

my @ev = grep { $_->{producer} eq 'supervise' } events('decision.proposed');
is(scalar @ev, 6, 'decision.proposed for each, producer supervise');
is(join(',', sort map { $_->{correlation_id} } @ev), join(',', sort values %ids),
	'decision.proposed: correlation id is the proposal id');
is($ev[0]{bottle}, 'alice', 'decision.proposed: the bottle');

@lines = $t->read_file('fast.log') =~ /^.* proposal \S+ bottle=alice /mg;
is(scalar @lines, 6, 'one log line per proposal');

# check-proposal, later; bob cannot see alice's

$c = call('fast', 'alice', $A, 'check-proposal', { id => $ids{'egress-allow'} });
is($c->{answer}{status}, 'pending', 'check-proposal: pending');
system("$Test::Bottle::BOTTLECTL approve $ids{'egress-allow'} --note 'go ahead' >/dev/null 2>&1");
$c = call('fast', 'alice', $A, 'check-proposal', { id => $ids{'egress-allow'} });
is_deeply([ @{$c->{answer}}{qw/status action notes/} ],
	[ 'approved', 'approve', 'go ahead' ], 'check-proposal: approved, action and notes');

# an add-repo granted: the agent is told the repo's URL

system("echo '{\"repo\":\"git.example.org/team/app:write\"}' | $Test::Bottle::BOTTLECTL modify $ids{'add-repo'} - >/dev/null 2>&1");
$c = call('fast', 'alice', $A, 'check-proposal', { id => $ids{'add-repo'} });
is_deeply([ @{$c->{answer}}{qw/status action notes/} ],
	[ 'modified', 'modify', 'granted https://git.example.org/team/app with write' ],
	"check-proposal: an add-repo's grant names the repo's URL")
	or diag($c->{text});

my $Bob = session('fast', 'bob');
$c = call('fast', 'bob', $Bob, 'check-proposal', { id => $ids{'egress-allow'} });
ok($c->{error} && $c->{text} =~ /no proposal/, "bob cannot check alice's proposal");
unlike($c->{text}, qr/approved|go ahead/, "bob: nothing of alice's answer");

# launch-bottle's children.max (erin: 1)

my $E = session('fast', 'erin');
$c = call('fast', 'erin', $E, 'launch-bottle', { agent => 'a', prompt => 'p',
	justification => 'j' });
is($c->{answer}{status}, 'pending', 'launch-bottle: the first child of erin');
my $q = queued();
$c = call('fast', 'erin', $E, 'launch-bottle', { agent => 'a', prompt => 'p',
	justification => 'j' });
like($c->{text}, qr/children\.max \(1/, 'refused: launch-bottle at children.max');
system("$Test::Bottle::BOTTLECTL deny $c->{answer}{id} >/dev/null 2>&1")
	if $c->{answer}{id};
is(queued(), $q, 'children.max: nothing queued');

# latency: a call that queues is answered as soon as it is queued (fast:
# its wait is over at once), not on a polling tick (it was 250 ms); bob's
# calls, timed against calls that queue nothing, 20 of each

sub p50 {
	my @v = sort { $a <=> $b } @_;
	return $v[int(@v / 2)];
}

my (@queue_ms, @plain_ms);
for my $i (1 .. 20) {
	my $t0 = time();
	$c = call('fast', 'bob', $Bob, 'egress-block',
		{ host => "lat$i.example", justification => 'latency' });
	push @queue_ms, (time() - $t0) * 1000;
	$t0 = time();
	call('fast', 'bob', $Bob, 'list-egress-routes', {});
	push @plain_ms, (time() - $t0) * 1000;
}
is($c->{answer}{status}, 'pending', 'latency: the calls queued');
# curl's own start-up, on a loaded machine, is most of a call: what the
# queuing adds is the median of each pair's difference (the tick's was
# uniform in 0-250 ms, its median about 125 ms)
my ($pq, $pp) = (p50(@queue_ms), p50(@plain_ms));
my $extra = p50(map { $queue_ms[$_] - $plain_ms[$_] } 0 .. $#queue_ms);
note(sprintf('p50 %.1f ms queuing, %.1f ms not queuing, %.1f ms more',
	$pq, $pp, $extra));
ok($extra < 60, sprintf('latency: a queuing call takes under 60 ms more '
	. 'than one that queues nothing (p50 %.1f ms more)', $extra));
system("$Test::Bottle::BOTTLECTL deny $_ >/dev/null 2>&1")
	for split /\n/, redis_cli($t, 'ZRANGE', 'bottle:proposals:of:bob', 0, -1);

# the pending bound (32 per bottle)

my $D = session('fast', 'dave');
for my $i (1 .. 32) {
	Test::Bottle::bottlectl($t, $r, 'propose', 'dave', 'egress-block',
		qq{{"host":"h$i.example"}});
}
$q = queued();
$c = call('fast', 'dave', $D, 'egress-block', { host => 'h0.example',
	justification => 'j' });
like($c->{text}, qr/32 proposals waiting/, 'refused: 32 pending already');
is(queued(), $q, 'pending bound: nothing queued');

# the bound is counted by the script that queues: eight calls at once for
# the one place a denial frees queue one proposal, never more

my ($first) = split /\n/, redis_cli($t, 'ZRANGE', 'bottle:proposals:of:dave',
	0, 0);
system("$Test::Bottle::BOTTLECTL deny $first >/dev/null 2>&1");
$q = queued();
my @racers;
for my $i (1 .. 8) {
	my $pid = fork() // die;
	if ($pid == 0) {
		$n = 1000 * $i;
		my $c = call('fast', 'dave', $D, 'egress-block',
			{ host => "race$i.example", justification => 'j' });
		$t->write_file("race$i", $c->{answer}{status}
			// ($c->{text} =~ /32 proposals waiting/ ? 'bound' : $c->{text}));
		POSIX::_exit(0);
	}
	push @racers, $pid;
}
waitpid($_, 0) for @racers;
my %race;
$race{$t->read_file("race$_")}++ for 1 .. 8;
is_deeply(\%race, { pending => 1, bound => 7 },
	'racing calls: one queued, seven refused at the bound');
is(queued(), $q + 1, 'racing calls: one proposal queued');

# waiting (slow: 4 s): pending after the wait; approved and denied during it

my $S = session('slow', 'alice');

my $t0 = time();
$c = call('slow', 'alice', $S, 'egress-block', { host => 'api.github.com',
	justification => 'wait for it' });
my $took = time() - $t0;
is($c->{answer}{status}, 'pending', 'slow: pending after the wait');
ok($took >= 3.5 && $took < 8, 'slow: waited about 4 s') or diag($took);

sub during {
	my ($tool, $args, $answer, @note) = @_;
	my $pid = fork() // die;
	if ($pid == 0) {
		my $res = call('slow', 'alice', $S, $tool, $args);
		open my $fh, '>', "$d/during.json" or die;
		print $fh $json->encode($res->{answer});
		close $fh;
		POSIX::_exit(0);
	}
	my $pending;
	for (1 .. 60) {
		($pending) = redis_cli($t, 'ZRANGE', 'bottle:proposals:pending',
			'0', '-1') =~ /^(\S+)\n\z/;
		last if $pending;
		sleep 0.05;
	}
	my $t0 = time();
	system("$Test::Bottle::BOTTLECTL $answer $pending "
		. join(' ', map { "'$_'" } @note) . " >>$d/during.log 2>&1")
		if $pending;
	waitpid($pid, 0);
	return ($json->decode($t->read_file('during.json')), time() - $t0,
		$pending);
}

# the pending bottles' proposals leave the pending index first

for my $p (split /\n/, redis_cli($t, 'ZRANGE', 'bottle:proposals:pending', '0', '-1')) {
	system("$Test::Bottle::BOTTLECTL deny $p >/dev/null 2>&1");
}

my ($ans, $after, $pid) = during('egress-allow', { route => { host => 'b.example',
	methods => [ 'GET' ] }, justification => 'approve me' }, 'approve',
	'--note', 'ok');
is_deeply([ @$ans{qw/status id action notes/} ], [ 'approved', $pid, 'approve', 'ok' ],
	'an approval during the wait: approved');
ok($after < 2, 'an approval during the wait: answered at once') or diag($after);
like(redis_cli($t, 'HGET', 'bottle:policy:alice', 'json'), qr/b\.example/,
	'the approval changed the policy');

($ans, $after, $pid) = during('forge-connect', { url => 'https://localhost:9/',
	justification => 'deny me' }, 'deny', '--note', 'not now');
is_deeply([ @$ans{qw/status action notes/} ], [ 'denied', 'deny', 'not now' ],
	'a denial during the wait: denied with the notes');

# the store lost and back during a wait: the subscriber subscribes again,
# the call checks the store, waits on, and gets the answer given after

my $l = fork() // die;
if ($l == 0) {
	my $res = call('slow', 'alice', $S, 'egress-block', { host => 'd.example',
		justification => 'j' });
	open my $fh, '>', "$d/lost.json" or die;
	print $fh $json->encode($res->{answer});
	close $fh;
	POSIX::_exit(0);
}
my $lost;
for (1 .. 60) {
	($lost) = redis_cli($t, 'ZRANGE', 'bottle:proposals:pending', '0', '-1')
		=~ /^(\S+)\n\z/;
	last if $lost;
	sleep 0.05;
}
redis_stop($t);
sleep 0.3;
redis_start($t);
sleep 1.5;
system("$Test::Bottle::BOTTLECTL deny $lost --note back >/dev/null 2>&1")
	if $lost;
waitpid($l, 0);
my $back = eval { $json->decode($t->read_file('lost.json')) } // {};
is_deeply([ @$back{qw/status notes/} ], [ 'denied', 'back' ],
	'the store lost and back during a wait: the answer still comes');
like($t->read_file('slow.stderr'), qr/subscriber': lost the store/,
	'the subscriber logged the store lost');

# SIGTERM with a call waiting: it is answered, the socket goes

my $w = fork() // die;
if ($w == 0) {
	my $res = call('slow', 'alice', $S, 'egress-block', { host => 'c.example',
		justification => 'j' });
	open my $fh, '>', "$d/term.json" or die;
	print $fh $json->encode($res->{answer});
	close $fh;
	POSIX::_exit(0);
}
sleep 1;
kill 'TERM', $slow_pid;
waitpid($w, 0);
my $term = eval { $json->decode($t->read_file('term.json')) } // {};
is($term->{status}, 'pending', 'SIGTERM: a waiting call is answered pending');
my $gone = 0;
for (1 .. 50) {
	$gone = waitpid($slow_pid, WNOHANG) == $slow_pid;
	last if $gone;
	sleep 0.1;
}
ok($gone, 'SIGTERM: the helper exits');
ok(!-e "$d/slow.sock", 'SIGTERM: the socket is removed');
like($t->read_file('slow.stderr'), qr/stopped \(signal 15, 1 waiting call/,
	'SIGTERM: logged');

# sanitizers

$t->stop_daemons();
my $errors = join '', map { -e "$d/$_" ? $t->read_file($_) : '' }
	qw/ fast.stderr slow.stderr /;
unlike($errors, qr/AddressSanitizer|runtime error|LeakSanitizer/,
	'no sanitizer reports');

###############################################################################
