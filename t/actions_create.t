#!/usr/bin/perl

# Tests for create-repo without a card (docs/supervise.md, "create-repo
# without a card"; docs/policy.md, git_gate): a repo the bottle's
# git_gate.actions.create allows is made at once on the fake forge's API
# (the forge records the call), granted with write in a new policy
# version, journalled as an approved create answered by
# "policy:git_gate.actions.create", and answered to the agent as one; a
# push through git-gate lands on it; no card is left for the operator.
# A repo outside the patterns (another owner, a name without the prefix,
# public without ":public") is a proposal as before; a repo the forge
# refuses (it exists) is the forge's message and nothing granted, also
# for calls racing to create the same repo; a policy change reaches the
# running helper; a bottle at its 32 pending proposals still gets the
# repos its policy allows; bad git_gate fields are refused by bottlectl
# policy put with the parser's message.
#
# SUPERVISE_HELPER, BOTTLECTL and GITGATE_CGI run other builds
# (build-asan/); the helper's and bottlectl's stderr are read for
# sanitizer reports at the end.

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

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $HELPER = $ENV{SUPERVISE_HELPER} // 'build/supervise-helper';
$HELPER = "$Test::Nginx::REPO/$HELPER" if $HELPER !~ m{^/};
my $BOTTLECTL = $ENV{BOTTLECTL} // 'build/bottlectl';
$BOTTLECTL = "$Test::Nginx::REPO/$BOTTLECTL" if $BOTTLECTL !~ m{^/};
my $CGI = gitgate_cgi();
plan(skip_all => "$HELPER not built (make supervise)") unless -x $HELPER;
plan(skip_all => "$BOTTLECTL not built (make ctl)") unless -x $BOTTLECTL;
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon('curl')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)
	->has_daemon($Test::Bottle::REDIS);
my $d = $t->testdir();
my $json = JSON::PP->new->canonical;

my $FORGE_TOKEN = 'forge-' . 'operator-token-c7ea7e00';
my $DEV = 'dev-token-0123456789abc';
my $POLICY_OP = 'policy:git_gate.actions.create';

###############################################################################

my $redis = redis_start($t, port => 8211);
my $forge = forge_start($t, port => 8212, token => $FORGE_TOKEN,
	user => 'forge-user', orgs => { 'acme-org' => 1, 'make-org' => 1, 'view-org' => 0 });
my $GP = port(8213);
my $sock = "$d/gate-fcgi.sock";
my $FORGE = "127.0.0.1:$forge->{port}";

my $GATE = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_STORE => $redis->{url},
	GITGATE_REFRESH => 0);

$t->write_file_expand('nginx.conf', gitgate_conf(policy => $redis->{url},
	port => $GP, gate => $GATE));

gitgate_fcgiwrap($t, $sock, children => 2);
mkdir "$d/gate";

my @PATTERNS = ("$FORGE/forge-user/agent-*", "$FORGE/acme-org/*:public",
	"$FORGE/forge-user/exact.git");

sub dev {
	my (@create) = @_;
	return { id => 'dev', token => $DEV, routes => [],
		git_gate => { actions => { create => [ @create ] } } };
}

store_put($t, dev(@PATTERNS));

$ENV{BOTTLE_STORE} = $redis->{url};
$ENV{BOTTLE_OPERATOR} = 'op-create';

$t->write_file('forge-token', "$FORGE_TOKEN\n");

# ctl(@args): { rc, out, err }; stderr kept in stderr.log

sub ctl { return ctl_run($t, @_); }

my $res = ctl('forge', 'connect', $FORGE, '--kind', 'gitea', '--url',
	"http://$FORGE/", '--token-file', "$d/forge-token");
die "forge connect: $res->{err}" if $res->{rc} != 0;

# the helper answers pending at once: a queued proposal is seen at once

$t->run_daemon(sub {
	open STDIN, '<', '/dev/null';
	open STDOUT, '>>', "$d/helper.stderr";
	open STDERR, '>&', \*STDOUT;
	exec($HELPER, '--listen', "unix:$d/sv.sock", '--store', $redis->{url},
		'--response-timeout', '0', '--log', "$d/helper.log")
		or die "exec: $!\n";
});

$t->run()->plan(83);

for (1 .. 100) {
	last if -S "$d/sv.sock";
	sleep 0.05;
}

###############################################################################

# MCP over the helper's socket, with the header nginx would set

my $rn = 0;
my $rpc_id = 0;

sub req {
	my ($h, $body) = @_;
	$rn++;
	my %h = ('Accept' => 'application/json, text/event-stream',
		'Content-Type' => 'application/json', 'X-Bottle-Id' => 'dev', %$h);
	open my $fh, '>', "$d/req$rn" or die;
	print $fh $json->encode($body);
	close $fh;
	my @cmd = ('curl', '-s', '-o', "$d/b$rn", '-D', "$d/h$rn",
		'--unix-socket', "$d/sv.sock",
		'-X', 'POST', '--max-time', '40',
		(map { ('-H', "$_: $h{$_}") } sort keys %h),
		'--data-binary', "\@$d/req$rn", 'http://supervise/');
	return ($rn, @cmd);
}

sub response {
	my ($k) = @_;
	my $res = { body => $t->read_file("b$k"), headers => $t->read_file("h$k") };
	$res->{json} = eval { $json->decode($res->{body}) };
	return $res;
}

sub run_req {
	my ($h, $body) = @_;
	my ($k, @cmd) = req($h, $body);
	system(@cmd) == 0 or die "curl: $?\n";
	return response($k);
}

my ($S) = run_req({}, { jsonrpc => '2.0', id => ++$rpc_id,
	method => 'initialize', params => { protocolVersion => '2025-06-18',
	capabilities => {}, clientInfo => { name => 't', version => '1' } } })
	->{headers} =~ /^Mcp-Session-Id: (\S+)/mi;

sub tool_result {
	my ($res) = @_;
	my $c = $res->{json}{result} // {};
	my $text = $c->{content}[0]{text} // '';
	return { text => $text, error => $c->{isError} ? 1 : 0,
		answer => eval { $json->decode($text) } // {} };
}

sub call_body {
	my ($args) = @_;
	return { jsonrpc => '2.0', id => ++$rpc_id, method => 'tools/call',
		params => { name => 'create-repo', arguments => {
		justification => 'a repo for the work', %$args } } };
}

my %MCP = ('Mcp-Session-Id' => $S, 'MCP-Protocol-Version' => '2025-06-18');

sub create {
	my (%args) = @_;
	return tool_result(run_req(\%MCP, call_body(\%args)));
}

# the store and the forge

sub pending {
	my $c = redis_cli($t, 'ZCARD', 'bottle:proposals:pending');
	chomp $c;
	return $c;
}

sub all_proposals {
	my $c = redis_cli($t, 'ZCARD', 'bottle:proposals:all');
	chomp $c;
	return $c;
}

sub proposal {
	my ($id) = @_;
	my %h = split /\n/, redis_cli($t, 'HGETALL', "bottle:proposal:$id");
	$h{decision} = $json->decode($h{decision}) if $h{decision};
	$h{proposal} = $json->decode($h{json}) if $h{json};
	return \%h;
}

sub stored {
	my %h = split /\n/, redis_cli($t, 'HGETALL', 'bottle:policy:dev');
	return { version => $h{version}, json => $json->decode($h{json}) };
}

sub repos_of {
	return join ' ', sort @{stored()->{json}{repos} || []};
}

sub api_calls {
	my ($from) = @_;
	my @l = @{forge_log($t)};
	return join ' ', map { "$_->{method} $_->{uri} $_->{status} $_->{auth}" }
		grep { $_->{uri} =~ m{^/api/} } @l[$from .. $#l];
}

sub events {
	my ($id) = @_;
	return map { $_->[1] } sort { $a->[0] cmp $b->[0] }
		grep { ($_->[1]{correlation_id} // '') eq $id }
		map { [ $_->[0], $json->decode($_->[1]) ] }
		_stream();
}

sub _stream {
	my @l = split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
	my @out;
	for (my $i = 0; $i < @l; $i++) {
		push @out, [ $l[$i - 2], $l[$i] ]
			if $l[$i] =~ /^\{/ && $i >= 2 && $l[$i - 1] eq 'event';
	}
	return @out;
}

###############################################################################
# allowed: made at once, granted with write, journalled, no card

my $v0 = stored()->{version};
my $all0 = all_proposals();
my $nlog = @{forge_log($t)};

my $c = create(repo => "$FORGE/forge-user/agent-tools");
is($c->{error}, 0, 'allowed: a result') or diag($c->{text});
is(join(' ', map { $_ . '=' . ($c->{answer}{$_} // '') }
	qw/ status kind action notes /),
	"status=modified kind=create-repo action=modify "
	. "notes=created http://$FORGE/forge-user/agent-tools",
	'allowed: answered as an approved create');
my $id = $c->{answer}{id} // '';
like($id, qr/^\d+-[0-9a-f]{8}$/, 'allowed: the proposal id');

is(api_calls($nlog), 'GET /api/v1/user 200 ok POST /api/v1/user/repos 201 ok',
	'allowed: the forge made it, with the forge\'s token');
ok(-d "$forge->{root}/forge-user/agent-tools.git", 'the forge has the repo');

is(repos_of(), "$FORGE/forge-user/agent-tools:write",
	'the bottle has the write grant');
cmp_ok(stored()->{version}, '>', $v0, 'a new policy version');

is(pending(), 0, 'no card pending for the operator');
is(all_proposals(), $all0 + 1, 'one proposal, answered');

my $p = proposal($id);
is(join(' ', $p->{state}, $p->{decision}{operator}, $p->{decision}{action},
	$p->{decision}{grant}{repo}, $p->{decision}{created}),
	"modified $POLICY_OP modify $FORGE/forge-user/agent-tools:write "
	. "http://$FORGE/forge-user/agent-tools",
	'the decision: the policy\'s, the grant, the repo made');
is($p->{proposal}{justification}, 'a repo for the work',
	'the proposal keeps the justification');

my @ev = events($id);
is(join(' ', map { $_->{type} } @ev), 'decision.proposed decision.resolved',
	'journal: decision.proposed, then decision.resolved');
is(join(' ', map { $_->{producer} } @ev), 'supervise supervise',
	'journal: produced by supervise');
is($ev[1]{operator}, $POLICY_OP, 'journal: decision.resolved names the policy');
is($ev[1]{operator_action}, 'modify', 'journal: the action');
like($ev[1]{'untrusted.diff'} // '', qr{^\+.*\Q$FORGE/forge-user/agent-tools:write\E}m,
	'journal: the policy change, diffed');

like($t->read_file('helper.log'),
	qr{proposal \Q$id\E bottle=dev tool=create-repo request=-: created http://\Q$FORGE\E/forge-user/agent-tools, granted \Q$FORGE\E/forge-user/agent-tools:write by git_gate\.actions\.create "\Q$FORGE\E/forge-user/agent-\*"},
	'the helper\'s log names the pattern');

# the agent pushes to it through git-gate

my $base = "http://x:$DEV\@127.0.0.1:$GP/$FORGE/";
mkdir "$d/work";
run_git($t, { dir => "$d/work" }, 'init', '-q');
$t->write_file('work/hello.txt', "a repo made without a card\n");
run_git($t, { dir => "$d/work" }, 'add', 'hello.txt');
run_git($t, { dir => "$d/work" }, 'commit', '-q', '-m', 'first');
my (undef, $head) = run_git($t, { dir => "$d/work" }, 'rev-parse', 'HEAD');
chomp $head;

my ($rc, $out) = run_git($t, { dir => "$d/work" }, 'push',
	"${base}forge-user/agent-tools.git", 'HEAD:refs/heads/main');
is($rc, 0, 'push through the gate to the new repo') or diag($out);
is(forge_refs($t, 'forge-user/agent-tools')->{'refs/heads/main'}, $head,
	'the push landed on the forge');

# an org's, public: ":public" allows it

$nlog = @{forge_log($t)};
$c = create(repo => "$FORGE/acme-org/site", public => JSON::PP::true);
is($c->{answer}{status}, 'modified', 'an org\'s public repo, allowed')
	or diag($c->{text});
is(api_calls($nlog),
	'GET /api/v1/user 200 ok POST /api/v1/orgs/acme-org/repos 201 ok',
	'the org\'s path');
is(repos_of(), "$FORGE/acme-org/site:write $FORGE/forge-user/agent-tools:write",
	'both grants');

# a literal name; an org pattern allows a private one too

$c = create(repo => "$FORGE/forge-user/Exact");
is($c->{answer}{status}, 'modified', 'a literal name, any case')
	or diag($c->{text});
$c = create(repo => "$FORGE/ACME-org/private-one");
is($c->{answer}{status}, 'modified', 'a private repo by a :public pattern')
	or diag($c->{text});
is(pending(), 0, 'still no card');

###############################################################################
# not allowed: a proposal, as before

$nlog = @{forge_log($t)};
my $v1 = stored()->{version};

my @asks = (
	[ { repo => "$FORGE/make-org/agent-x" }, 'another owner' ],
	[ { repo => "$FORGE/forge-user/tools" }, 'a name without the prefix' ],
	[ { repo => "$FORGE/forge-user/agent-pub", public => JSON::PP::true },
		'public without :public' ],
	[ { repo => "$FORGE/forge-user/exactly" }, 'a longer literal name' ],
);

my $np = 0;
for my $a (@asks) {
	my ($args, $what) = @$a;
	$c = create(%$args);
	is($c->{answer}{status}, 'pending', "$what: pending") or diag($c->{text});
	$p = proposal($c->{answer}{id} // 'none');
	is(join(' ', $p->{state} // '', $p->{proposal}{args}{repo} // ''),
		"pending $args->{repo}", "$what: a card for the operator");
	$np++;
}

is(pending(), $np, 'the cards are pending');
is(api_calls($nlog), join(' ',
	'GET /api/v1/user 200 ok GET /api/v1/repos/make-org/agent-x 404 ok',
	'GET /api/v1/users/forge-user/orgs/make-org/permissions 200 ok',
	map { "GET /api/v1/user 200 ok GET /api/v1/repos/forge-user/$_ 404 ok" }
		qw/ tools agent-pub exactly /),
	'the forge was asked whether it can, nothing made');
is(stored()->{version}, $v1, 'the policy did not change');
ok(!-e "$forge->{root}/make-org", 'nothing made');

# one the forge could never make: refused before a card

forge_repo($t, 'forge-user/old-one');
my $all2 = all_proposals();
for my $a (
	[ "$FORGE/forge-user/old-one", 'an existing repo',
		qr/the forge cannot create \Q$FORGE\E\/forge-user\/old-one: forge-user\/old-one exists already on the forge/ ],
	[ "$FORGE/Forge-User/Old-One.git", 'an existing repo, another spelling',
		qr/the forge cannot create .*: Forge-User\/Old-One exists already/ ],
	[ "$FORGE/other-user/x", 'an owner neither the user nor its org',
		qr/the forge cannot create \Q$FORGE\E\/other-user\/x: other-user is neither the forge token's account \(forge-user\) nor an organization it belongs to/ ],
	[ "$FORGE/view-org/x", 'an org the token may not create in',
		qr/the forge cannot create .*: the forge token's account \(forge-user\) may not create repos in view-org/ ],
) {
	my ($repo, $what, $re) = @$a;
	$c = create(repo => $repo);
	is($c->{error}, 1, "$what: an error");
	like($c->{text}, qr/^refused, nothing was queued: $re/, "$what: says why");
}
is(all_proposals(), $all2, 'none of them queued');

# the same through GitHub's API shapes (api/v3): the forge connected again
# under another name, as a GitHub Enterprise

my $GH = "localhost:$forge->{port}";
$res = ctl('forge', 'connect', $GH, '--kind', 'github', '--url',
	"http://$FORGE/", '--api', "http://$FORGE/api/v3", '--token-file',
	"$d/forge-token");
die "forge connect: $res->{err}" if $res->{rc} != 0;
$nlog = @{forge_log($t)};
$c = create(repo => "$GH/forge-user/old-one");
like($c->{text}, qr/^refused, nothing was queued: the forge cannot create \Q$GH\E\/forge-user\/old-one: forge-user\/old-one exists already/,
	'github: an existing repo refused');
$c = create(repo => "$GH/view-org/x");
like($c->{text}, qr/^refused, nothing was queued: .*may not create repos in view-org/,
	'github: a member of an org that lets members create nothing: refused');
$c = create(repo => "$GH/make-org/y");
is($c->{answer}{status}, 'pending', 'github: an admin of the org: a card')
	or diag($c->{text});
is(api_calls($nlog), join(' ', 'GET /api/v3/user 200 ok',
	'GET /api/v3/repos/forge-user/old-one 200 ok GET /api/v3/user 200 ok',
	'GET /api/v3/repos/view-org/x 404 ok',
	'GET /api/v3/user/memberships/orgs/view-org 200 ok',
	'GET /api/v3/orgs/view-org 200 ok GET /api/v3/user 200 ok',
	'GET /api/v3/repos/make-org/y 404 ok',
	'GET /api/v3/user/memberships/orgs/make-org 200 ok'),
	"github: GitHub's endpoints asked");
ctl('deny', $c->{answer}{id}) if $c->{answer}{id};

###############################################################################
# the forge refuses: its message, nothing granted or queued

$nlog = @{forge_log($t)};
my $all1 = all_proposals();

$c = create(repo => "$FORGE/forge-user/agent-tools");
is($c->{error}, 1, 'an existing repo: an error');
like($c->{text}, qr/^refused, nothing was queued: cannot create \Q$FORGE\E\/forge-user\/agent-tools: .*409: The repository with the same name already exists/,
	'an existing repo: the forge\'s message');
is(api_calls($nlog), 'GET /api/v1/user 200 ok POST /api/v1/user/repos 409 ok',
	'an existing repo: the forge was asked');
is(all_proposals(), $all1, 'an existing repo: nothing queued');
is(stored()->{version}, $v1, 'an existing repo: the policy did not change');

# calls racing to create one repo: one is made, the others get the 409

my @kids;
for my $i (1 .. 4) {
	my ($k, @cmd) = req(\%MCP, call_body({
		repo => "$FORGE/forge-user/agent-race" }));
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		open STDOUT, '>', '/dev/null';
		exec(@cmd) or POSIX::_exit(127);
	}
	push @kids, [ $pid, $k ];
}

my @race;
for my $kid (@kids) {
	waitpid($kid->[0], 0);
	push @race, tool_result(response($kid->[1]));
}

is(join(',', sort map { $_->{error} ? 'error' : $_->{answer}{status} } @race),
	'error,error,error,modified', 'a race: one made, three errors');
is(scalar(grep { $_->{text} =~ /already exists/ } @race), 3,
	'a race: the others get the forge\'s message');
is(repos_of(), join(' ', sort "$FORGE/acme-org/site:write",
	"$FORGE/forge-user/agent-tools:write", "$FORGE/forge-user/Exact:write",
	"$FORGE/ACME-org/private-one:write", "$FORGE/forge-user/agent-race:write"),
	'a race: granted once');
is(stored()->{version}, $v1 + 1, 'a race: one new policy version');
is(all_proposals(), $all1 + 1, 'a race: one proposal');
is(pending(), $np, 'a race: no card');

###############################################################################
# a policy change reaches the running helper

store_put($t, dev("$FORGE/forge-user/later-*"));

$c = create(repo => "$FORGE/forge-user/agent-after");
is($c->{answer}{status}, 'pending', 'a pattern removed: a card again');
$c = create(repo => "$FORGE/forge-user/later-one");
is($c->{answer}{status}, 'modified', 'a pattern added: made at once')
	or diag($c->{text});

store_put($t, { id => 'dev', token => $DEV, routes => [] });
$c = create(repo => "$FORGE/forge-user/later-two");
is($c->{answer}{status}, 'pending', 'no git_gate: a card');

###############################################################################
# at the bound of 32 pending proposals: a card is refused, the policy's
# repos are not (they wait for no operator)

store_put($t, dev(@PATTERNS));

for my $i (pending() + 1 .. 32) {
	$res = ctl('propose', 'dev', 'egress-block',
		$json->encode({ host => "h$i.example" }));
	die "propose: $res->{err}" if $res->{rc} != 0;
}

$c = create(repo => "$FORGE/forge-user/not-a-pattern");
like($c->{text}, qr/^refused, nothing was queued: this bottle has 32 proposals waiting/,
	'at the bound: a card refused');
$c = create(repo => "$FORGE/forge-user/agent-at-bound");
is($c->{answer}{status}, 'modified', 'at the bound: the policy\'s repo made')
	or diag($c->{text});
is(pending(), 32, 'at the bound: no card added');

###############################################################################
# bad git_gate fields: refused by bottlectl policy put, with the message

my $vbad = stored()->{version};

my @bad = (
	[ { git_gate => { merge => 1 } },
		qr/bottle "dev": git_gate: unknown field "merge"/, 'an unknown key' ],
	[ { git_gate => { actions => { delete => [] } } },
		qr/bottle "dev": git_gate\.actions: unknown field "delete"/,
		'an unknown action' ],
	[ { git_gate => [] }, qr/bottle "dev": git_gate: must be an object/,
		'git_gate not an object' ],
	[ { git_gate => { actions => { create => "$FORGE/o/*" } } },
		qr/git_gate\.actions\.create: must be an array/,
		'create not an array' ],
	[ { git_gate => { actions => { create => [ 7 ] } } },
		qr/git_gate\.actions\.create\[0\]: must be a string/,
		'an entry not a string' ],
	[ { git_gate => { actions => { create => [ "$FORGE/*/x" ] } } },
		qr/git_gate\.actions\.create\[0\]: ".*": the owner of a pattern is literal/,
		'an owner wildcard' ],
	[ { git_gate => { actions => { create => [ "$FORGE/o/a*b" ] } } },
		qr/create\[0\]: ".*": '\*' only as a pattern's whole name or at its end/,
		'a star inside a name' ],
	[ { git_gate => { actions => { create => [ "$FORGE/o/x:write" ] } } },
		qr/create\[0\]: ".*": the only mode of a pattern is ":public"/,
		'a mode other than :public' ],
	[ { git_gate => { actions => { create => [ "bad_host/o/x" ] } } },
		qr/create\[0\]: ".*": "bad_host" is not a forge's host name/,
		'a bad forge name' ],
	[ { git_gate => { actions => { create => [ "$FORGE/o" ] } } },
		qr/create\[0\]: ".*": a pattern is "<forge>\/<owner>\/<name>\[:public\]"/,
		'two segments' ],
	[ { git_gate => { actions => { create => [ "$FORGE/o/x*", "$FORGE/o/y",
		"$FORGE/o/x*" ] } } },
		qr/create\[2\]: ".*" is already git_gate\.actions\.create\[0\]/,
		'a pattern twice' ],
	[ { git_gate => { actions => { create => [ map { "$FORGE/o/r$_" }
		1 .. 65 ] } } },
		qr/git_gate\.actions\.create: at most 64 patterns/,
		'too many patterns' ],
);

for my $b (@bad) {
	my ($fields, $re, $what) = @$b;
	$t->write_file('bad.json', $json->encode({ id => 'dev', token => $DEV,
		routes => [], %$fields }));
	$res = ctl('policy', 'put', "$d/bad.json");
	like($res->{err}, $re, "policy put refuses $what");
}

is(stored()->{version}, $vbad, 'nothing written');

$t->write_file('ok.json', $json->encode({ id => 'dev', token => $DEV,
	routes => [], git_gate => { actions => { create => [] } } }));
$res = ctl('policy', 'put', "$d/ok.json");
is($res->{rc}, 0, 'an empty create list is a policy') or diag($res->{err});
$t->write_file('ok.json', $json->encode({ id => 'dev', token => $DEV,
	routes => [], git_gate => { actions => { create => [ map {
	"$FORGE/o/r$_" } 1 .. 64 ] } } }));
$res = ctl('policy', 'put', "$d/ok.json");
is($res->{rc}, 0, '64 patterns are a policy') or diag($res->{err});

###############################################################################

$t->stop();

unlike($t->read_file('helper.stderr') . $t->read_file('stderr.log'),
	qr/AddressSanitizer|LeakSanitizer|runtime error/,
	'no sanitizer report');

###############################################################################
