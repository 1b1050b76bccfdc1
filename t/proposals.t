#!/usr/bin/perl

# Tests for proposals and decisions on the control plane
# (docs/control-plane.md, "Proposals and decisions"; docs/bottlectl.md):
# a proposal is queued, listed and shown; an approved egress-allow is
# written into the bottle's stored policy with the next version, and the
# gateway serves the new route on its next request; deny changes nothing;
# two operators answering at once: exactly one wins, the other gets the
# 409 status and a decision.late naming the winner; the journal's
# decision.proposed and decision.resolved (operator, notes, untrusted.diff,
# cut at 64 KiB with its digest); modify applies the operator's route; no
# plain approval of forge-connect, add-repo, launch-bottle, create-repo;
# an invalid route is refused; with audit.delivery "required" a decision
# that cannot be journalled is not applied; a proposal of one bottle
# cannot be checked as another's.
#
# BOTTLECTL=path runs another build (build-asan/bottlectl); its stderr is
# kept in stderr.log, which the last test reads for sanitizer reports.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use Digest::SHA qw/ sha256_hex /;
use IO::Select;
use IO::Socket::INET;
use JSON::PP qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $BOTTLECTL = $ENV{BOTTLECTL} // "$FindBin::Bin/../build/bottlectl";
$BOTTLECTL = "$FindBin::Bin/../$BOTTLECTL"
	if $BOTTLECTL !~ m!^/! && !-x $BOTTLECTL;

if (!-x $BOTTLECTL) {
	BAIL_OUT("BOTTLECTL=$BOTTLECTL is not built") if $ENV{BOTTLECTL};
	plan(skip_all => 'build/bottlectl not built (make ctl)');
}

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/)
	->has_daemon('redis-server')->has_daemon('redis-cli');
my $d = $t->testdir();

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';
my $CAROL = 'carol-token-abcdefghij';
my $RACES = 20;

my $RP = port(8111);

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	main => 'worker_processes 1;', policy => "redis://127.0.0.1:$RP"));

my $P1 = port(8081);
fake_upstream($t, port => $P1, name => 'one');

my $r = redis_start($t, port => $RP);
$ENV{BOTTLE_STORE} = $r->{url};
$ENV{BOTTLE_OPERATOR} = 'op-main';

$t->run()->plan(112 + 3 * $RACES);

my $json = JSON::PP->new->canonical;

# ctl([{ env => {...} }], @args): { rc, out, err }

my $n = 0;

sub ctl {
	my $o = ref $_[0] ? shift : {};
	my @args = @_;
	my $pid = ctl_start($o, @args);
	return ctl_wait($pid);
}

my %running;

sub ctl_start {
	my ($o, @args) = @_;
	$n++;
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		open STDIN, '<', '/dev/null' or die;
		open STDOUT, '>', "$d/ctl$n.out" or die;
		open STDERR, '>', "$d/ctl$n.err" or die;
		@ENV{keys %{$o->{env}}} = values %{$o->{env}} if $o->{env};
		sleep($o->{at} - time()) if $o->{at} && $o->{at} > time();
		exec($BOTTLECTL, @args) or POSIX::_exit(127);
	}
	$running{$pid} = $n;
	return $pid;
}

sub ctl_wait {
	my ($pid) = @_;
	waitpid($pid, 0);
	my $rc = $? >> 8;
	my $k = delete $running{$pid};

	my $err = $t->read_file("ctl$k.err");
	open my $log, '>>', "$d/stderr.log" or die;
	print $log $err;
	close $log;

	return { rc => $rc, out => $t->read_file("ctl$k.out"), err => $err };
}

sub propose {
	my ($bottle, $kind, $args, @more) = @_;
	my $res = ctl('propose', $bottle, $kind, $json->encode($args), @more);
	die "propose: $res->{err}" if $res->{rc} != 0;
	chomp $res->{out};
	return $res->{out};
}

sub policy_of {
	my ($id) = @_;
	my %h = split /\n/, redis_cli($t, 'HGETALL', "bottle:policy:$id");
	$h{policy} = $json->decode($h{json} // '{}');
	return \%h;
}

sub state_of {
	my ($id) = @_;
	my $s = redis_cli($t, 'HGET', "bottle:proposal:$id", 'state');
	chomp $s;
	return $s;
}

sub events {
	my ($type) = @_;
	my @e = map { $json->decode($_) }
		grep { /^\{/ } split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit',
			'-', '+');
	return grep { $_->{type} eq $type } @e if defined $type;
	return @e;
}

sub get {
	my ($token, $host, $port, $path) = @_;
	return proxy_request(8080, "GET http://$host:$port$path HTTP/1.1\r\n"
		. "Host: $host:$port\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

sub wait_for {
	my ($code, $re, $max) = @_;
	my $deadline = time() + ($max // 5);
	my $res;
	while (time() < $deadline) {
		$res = $code->();
		return $res if $res =~ $re;
		sleep 0.05;
	}
	return $res;
}

# a subscriber to bottle:changes and bottle:decisions, speaking RESP

my $sub = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$r->{port}")
	or die "subscriber: $!\n";
print $sub "*3\r\n\$9\r\nSUBSCRIBE\r\n\$14\r\nbottle:changes\r\n"
	. "\$16\r\nbottle:decisions\r\n";
my $subbuf = '';

sub messages {
	my $sel = IO::Select->new($sub);
	my $end = time() + 1;
	while (time() < $end && $sel->can_read(0.2)) {
		sysread($sub, $subbuf, 65536, length $subbuf) or last;
	}
	my @m = $subbuf =~ /\$7\r\nmessage\r\n\$\d+\r\n(bottle:\w+)\r\n\$\d+\r\n([^\r]*)\r\n/g;
	$subbuf = '';
	my @out;
	push @out, shift(@m) . ' ' . shift(@m) while @m;
	return join(',', @out);
}

###############################################################################

my $file = write_policy($t, 'team.json', { bottles => [
	{ id => 'alice', token => $ALICE, egress_tokens => { GH => 'ghp_s3cr3t-value-0001' },
		canary => 'CANARY-a1b2c3d4e5',
		routes => [ { host => 'example.org' } ] },
	{ id => 'bob', token => $BOB, routes => [] },
	{ id => 'carol', token => $CAROL, audit => { delivery => 'required' },
		routes => [] },
] });
my $res = ctl('policy', 'put', $file);
is($res->{rc}, 0, 'put the bottles') or diag($res->{err});
messages();

wait_for(sub { $t->read_file('error.log') =~ /policy store \S+ read:/ ? 1 : 0 },
	qr/1/);
like(wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 403 /),
	qr/^HTTP\/1\.1 403 .*allowlist/s, 'before: no route, 403');

# propose, list, show

my $id = propose('alice', 'egress-allow',
	{ host => '127.0.0.1', port => $P1 + 0, methods => [ 'GET', 'POST' ] },
	'--justification', 'the tests need it');
like($id, qr/^\d{13}-[0-9a-f]{8}$/, 'propose: prints the id');

$res = ctl('proposals');
is($res->{rc}, 0, 'proposals: exit 0');
like($res->{out}, qr/^\Q$id\E +alice +egress-allow +pending +\d+s +127\.0\.0\.1 GET,POST$/m,
	'proposals: one line, id bottle kind state age summary');

$res = ctl('show', $id);
is($res->{rc}, 0, 'show: exit 0');
my ($shown) = $res->{out} =~ /^(\{.*?^\})/ms;
my $s = $json->decode($shown // '{}');
is($s->{state}, 'pending', 'show: pending');
is($s->{proposal}{justification}, 'the tests need it', 'show: justification');
like($res->{out}, qr/approving it changes.*^\+ +"host": "127\.0\.0\.1",$/ms,
	'show: the change an approval would make');
unlike($res->{out}, qr/ghp_s3cr3t|CANARY-a1b2/, 'show: no secret in the diff');

my ($ev) = grep { $_->{correlation_id} eq $id } events('decision.proposed');
ok($ev, 'journal: decision.proposed, correlation id = the proposal id');
is($ev && $ev->{bottle}, 'alice', 'decision.proposed: bottle');
is($ev && $ev->{kind}, 'egress-allow', 'decision.proposed: kind');
is($ev && $ev->{'untrusted.justification'}, 'the tests need it',
	'decision.proposed: the justification, as untrusted');

# approve: the policy changes, every gateway sees it

my $v0 = policy_of('alice')->{version};
$res = ctl('approve', $id, '--note', 'for the test run');
is($res->{rc}, 0, 'approve: exit 0') or diag($res->{err});
like($res->{out}, qr/^\Q$id\E approved: bottle alice version (\d+)$/m,
	'approve: the new version printed');

my $p = policy_of('alice');
ok($p->{version} > $v0, 'approve: version bumped');
my ($route) = grep { $_->{host} eq '127.0.0.1' } @{$p->{policy}{routes}};
is_deeply($route, { host => '127.0.0.1', port => $P1 + 0,
	methods => [ 'GET', 'POST' ] }, 'approve: the route stored');
is(scalar @{$p->{policy}{routes}}, 2, 'approve: the other route kept');
is($p->{policy}{egress_tokens}{GH}, 'ghp_s3cr3t-value-0001',
	'approve: the egress tokens kept');
is(messages(), "bottle:changes alice $p->{version},bottle:decisions $id approved",
	'approve: the change and the decision published');

like(wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/after') }, qr/ 200 /),
	qr/^HTTP\/1\.1 200 /, 'after: the gateway serves the new route');

is(state_of($id), 'approved', 'approve: state approved');
unlike(ctl('proposals')->{out}, qr/\Q$id\E/, 'approve: no longer pending');
like(ctl('proposals', '--all')->{out}, qr/^\Q$id\E +alice +egress-allow +approved /m,
	'proposals --all: listed as approved');

my ($rv) = grep { $_->{correlation_id} eq $id } events('decision.resolved');
ok($rv, 'journal: decision.resolved, correlation id = the proposal id');
is($rv->{operator_action}, 'approve', 'decision.resolved: operator_action');
is($rv->{operator_notes}, 'for the test run', 'decision.resolved: operator_notes');
is($rv->{operator}, 'op-main', 'decision.resolved: operator');
like($rv->{'untrusted.diff'}, qr/^--- a\/bottle:policy:alice \(version $v0\)\n\+\+\+ b\/bottle:policy:alice\n@@ /,
	'decision.resolved: a unified diff');
like($rv->{'untrusted.diff'}, qr/^\+ +"port": $P1$/m, 'untrusted.diff: the added route');
unlike($rv->{'untrusted.diff'}, qr/ghp_s3cr3t|CANARY-a1b2/, 'untrusted.diff: no secret');
ok(JSON::PP::is_bool($rv->{diff_truncated}) && !$rv->{diff_truncated},
	'decision.resolved: diff_truncated false');
is($rv->{diff_digest}, 'sha256:' . substr(sha256_hex($rv->{'untrusted.diff'}), 0, 16),
	'decision.resolved: diff_digest of the whole diff');

# a second answer: 409, nothing changed, decision.late names the winner

$res = ctl({ env => { BOTTLE_OPERATOR => 'op-late' } }, 'deny', $id,
	'--note', 'too late');
is($res->{rc}, 4, 'a later answer: exit 4 (409)');
like($res->{err}, qr/answered already: approve by op-main .*\(409\)/,
	'a later answer: says who answered');
is(state_of($id), 'approved', 'a later answer: the state stands');
is(policy_of('alice')->{version}, $p->{version}, 'a later answer: policy unchanged');
my ($late) = grep { $_->{correlation_id} eq $id } events('decision.late');
is($late && $late->{lost_to}, $rv->{decision}, 'decision.late: names the winning decision');
is($late && $late->{operator}, 'op-late', 'decision.late: the late operator');
is($late && $late->{operator_action}, 'deny', 'decision.late: its action');

# deny: nothing changes

my $v1 = policy_of('alice')->{version};
$id = propose('alice', 'egress-allow', { host => 'deny.example.com' });
$res = ctl('deny', $id, '--note', 'no');
is($res->{rc}, 0, 'deny: exit 0');
is(state_of($id), 'denied', 'deny: state denied');
is(policy_of('alice')->{version}, $v1, 'deny: version unchanged');
ok(!grep({ $_->{host} eq 'deny.example.com' } @{policy_of('alice')->{policy}{routes}}),
	'deny: no route');
($rv) = grep { $_->{correlation_id} eq $id } events('decision.resolved');
ok($rv && !exists $rv->{'untrusted.diff'}, 'deny: resolved without a diff');

# two operators at once, many times: exactly one wins

for my $i (1 .. $RACES) {
	my $pid = propose('bob', 'egress-allow', { host => "race$i.example.com" });
	my $at = time() + 0.1;
	my $first = $i % 2 ? 'approve' : 'deny';
	my $second = $i % 2 ? 'deny' : 'approve';
	my $a = ctl_start({ at => $at, env => { BOTTLE_OPERATOR => 'op-a' } },
		$first, $pid);
	my $b = ctl_start({ at => $at, env => { BOTTLE_OPERATOR => 'op-b' } },
		$second, $pid);
	my ($ra, $rb) = (ctl_wait($a), ctl_wait($b));

	my @rc = sort($ra->{rc}, $rb->{rc});
	is("@rc", '0 4', "race $i: one wins, the other gets 409");

	my $win = $ra->{rc} == 0 ? $first : $second;
	my $wop = $ra->{rc} == 0 ? 'op-a' : 'op-b';
	is(state_of($pid), $win eq 'approve' ? 'approved' : 'denied',
		"race $i: the winner's state");

	my ($wr) = grep { $_->{correlation_id} eq $pid } events('decision.resolved');
	my ($lt) = grep { $_->{correlation_id} eq $pid } events('decision.late');
	ok($wr && $lt && $lt->{lost_to} eq $wr->{decision}
		&& $wr->{operator} eq $wop && $lt->{operator} ne $wop,
		"race $i: decision.late names the winner");
}

my %routes = map { $_->{host} => 1 } @{policy_of('bob')->{policy}{routes}};
is(scalar(grep { $routes{"race$_.example.com"} } 1 .. $RACES),
	scalar(grep { $_ =~ /^approved$/ } map { state_of($_) }
		grep { /\S/ } split /\n/, redis_cli($t, 'ZRANGE',
			'bottle:proposals:of:bob', 0, -1)),
	'races: a route for every approval, none for a denial');

# modify: the operator's route, not the agent's

$id = propose('alice', 'egress-allow',
	{ host => 'mod.example.com', methods => [ 'GET', 'POST', 'DELETE' ] });
my $mod = write_policy($t, 'route.json',
	{ host => 'mod.example.com', methods => [ 'GET' ] });
$res = ctl('modify', $id, $mod, '--note', 'read-only');
is($res->{rc}, 0, 'modify: exit 0') or diag($res->{err});
($route) = grep { $_->{host} eq 'mod.example.com' }
	@{policy_of('alice')->{policy}{routes}};
is_deeply($route, { host => 'mod.example.com', methods => [ 'GET' ] },
	"modify: the operator's route stored");
is(state_of($id), 'modified', 'modify: state modified');
($rv) = grep { $_->{correlation_id} eq $id } events('decision.resolved');
is($rv && $rv->{operator_action}, 'modify', 'modify: operator_action');
my $dec = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$id", 'decision'));
is_deeply($dec->{route}, { host => 'mod.example.com', methods => [ 'GET' ] },
	"modify: the decision records the operator's route");

# no plain allow

for my $k ([ 'forge-connect', { url => 'https://git.example.com' } ],
	[ 'add-repo', { repo => 'gitea/acme/widgets', write => JSON::PP::true } ],
	[ 'launch-bottle', { agent => 'claude' } ],
	[ 'create-repo', { repo => 'gitea/acme/new' } ])
{
	my $pid = propose('alice', @$k);
	$res = ctl('approve', $pid);
	is($res->{rc}, 1, "approve $k->[0]: refused");
	like($res->{err}, {
		'add-repo' => qr/cannot approve a add-repo proposal: .*never plainly: grant it with modify/,
		'forge-connect' => qr/cannot approve a forge-connect proposal: .*never plainly: connect it with bottlectl forge connect --proposal ID/,
		'launch-bottle' => qr/cannot approve a launch-bottle proposal: .*never plainly: launch it with modify and the launch spec/,
		'create-repo' => qr/cannot approve a create-repo proposal: .*never plainly: create it with bottlectl repo create --proposal ID/,
		}->{$k->[0]},
		"approve $k->[0]: says why and what instead");
	is(state_of($pid), 'pending', "approve $k->[0]: still pending");
	$id = $pid;
}

$res = ctl('deny', $id);
is($res->{rc}, 0, 'deny create-repo: exit 0');

# add-repo: granted by modify with a repo grant, read-only or as asked;
# the grant goes into the bottle's `repos`, which git-gate serves

my $rp = propose('alice', 'add-repo',
	{ repo => 'gitea/acme/widgets', write => JSON::PP::true });
my $gfile = "$d/grant.json";
$t->write_file('grant.json', $json->encode({ repo => 'gitea/acme/other' }));
$res = ctl('modify', $rp, $gfile);
is($res->{rc}, 1, 'add-repo: another repo refused');
like($res->{err}, qr/a grant names the repo the agent asked for \(gitea\/acme\/widgets\)/,
	'add-repo: says which repo');
is(state_of($rp), 'pending', 'add-repo: still pending after a refused grant');
$t->write_file('grant.json', $json->encode({ repo => 'gitea/acme/widgets' }));
$res = ctl('modify', $rp, $gfile, '--note', 'read-only');
is($res->{rc}, 0, 'add-repo: a read-only grant of the repo asked for')
	or diag($res->{err});
is_deeply($json->decode(policy_of('alice')->{json})->{repos},
	[ 'gitea/acme/widgets' ], 'add-repo: the grant is in the bottle, read-only');
is(state_of($rp), 'modified', 'add-repo: answered');
my $rdec = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$rp",
	'decision') || '{}');
is($rdec->{notes}, 'read-only; granted https://gitea/acme/widgets read-only',
	"add-repo: the decision's note gives the repo's URL");
my ($rres) = grep { $_->{correlation_id} eq $rp } events('decision.resolved');
is($rres && $rres->{operator_notes},
	'read-only; granted https://gitea/acme/widgets read-only',
	'add-repo: decision.resolved says it too');

# an invalid route: refused, nothing changes

my $v2 = policy_of('alice')->{version};
$id = propose('alice', 'egress-allow', { host => 'bad.example.com', colour => 'red' });
$res = ctl('approve', $id);
is($res->{rc}, 1, 'invalid route: approval refused');
like($res->{err}, qr/would be invalid: bottle:policy:alice: bottle "alice": routes\[\d+\]: unknown field "colour"/,
	"invalid route: the gateway's message");
is(policy_of('alice')->{version}, $v2, 'invalid route: policy unchanged');
is(state_of($id), 'pending', 'invalid route: still pending');

# egress-block removes the route: 403 again

$id = propose('alice', 'egress-block', { host => '127.0.0.1' });
$res = ctl('approve', $id);
is($res->{rc}, 0, 'egress-block: approved') or diag($res->{err});
ok(!grep({ $_->{host} eq '127.0.0.1' } @{policy_of('alice')->{policy}{routes}}),
	'egress-block: the route removed');
like(wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/blocked') }, qr/ 403 /),
	qr/^HTTP\/1\.1 403 /, 'egress-block: the gateway refuses again');

# egress-token-allow: recorded only

my $v3 = policy_of('alice')->{version};
$id = propose('alice', 'egress-token-allow', { host => 'api.example.com',
	detector => 'token_patterns', location => 'body',
	digest => 'sha256:0123456789abcdef' });
$res = ctl('approve', $id);
is($res->{rc}, 0, 'egress-token-allow: approved');
is(policy_of('alice')->{version}, $v3, 'egress-token-allow: no policy change');
$res = ctl('propose', 'alice', 'egress-token-allow', $json->encode({
	host => 'a.example', detector => 'd', location => 'body',
	digest => 'sha256:0', value => 'ghp_x' }));
is($res->{rc}, 1, 'egress-token-allow: a value is refused');

# a diff over 64 KiB: cut, with the whole diff's digest

$id = propose('alice', 'egress-allow', { host => 'big.example.com',
	allow => [ map { { path => "/some/rather/long/path/number/$_/*",
		methods => [ 'GET', 'POST' ] } } 1 .. 1500 ] });
$res = ctl('approve', $id);
is($res->{rc}, 0, 'huge route: approved') or diag($res->{err});
($rv) = grep { $_->{correlation_id} eq $id } events('decision.resolved');
ok($rv && $rv->{diff_truncated}, 'huge route: diff_truncated');
ok($rv && length($rv->{'untrusted.diff'}) <= 65536
	&& length($rv->{'untrusted.diff'}) > 60000, 'huge route: cut at 64 KiB');
like($rv && $rv->{'untrusted.diff'}, qr/\n\z/, 'huge route: cut at a line end');
like($rv && $rv->{diff_digest}, qr/^sha256:[0-9a-f]{16}$/, 'huge route: diff_digest');
isnt($rv && $rv->{diff_digest},
	'sha256:' . substr(sha256_hex($rv->{'untrusted.diff'} // ''), 0, 16),
	"huge route: the digest is the whole diff's, not the cut one's");

# audit.delivery "required": no journal, no decision

$id = propose('carol', 'egress-allow', { host => 'carol.example.com' });
my $cv = policy_of('carol')->{version};
redis_cli($t, 'RENAME', 'bottle:audit', 'bottle:audit:kept');
redis_cli($t, 'SET', 'bottle:audit', 'x');

$res = ctl('approve', $id);
is($res->{rc}, 1, 'required, journal broken: approval refused');
like($res->{err}, qr/cannot journal the decision.*nothing applied/,
	'required, journal broken: says so');
is(policy_of('carol')->{version}, $cv, 'required, journal broken: policy unchanged');
is(state_of($id), 'pending', 'required, journal broken: still pending');
$res = ctl('propose', 'carol', 'egress-block', '{"host":"x.example"}');
is($res->{rc}, 1, 'required, journal broken: a proposal is refused too');

my $aid = propose('alice', 'egress-allow', { host => 'alice2.example.com' });
$res = ctl('approve', $aid);
is($res->{rc}, 0, 'best effort, journal broken: applied');
like($res->{err}, qr/warning: decision.resolved is not in the audit journal/,
	'best effort, journal broken: warns');

redis_cli($t, 'DEL', 'bottle:audit');
redis_cli($t, 'RENAME', 'bottle:audit:kept', 'bottle:audit');
$res = ctl('approve', $id);
is($res->{rc}, 0, 'required, journal back: approved');
ok(policy_of('carol')->{version} > $cv, 'required, journal back: applied');

# a proposal of bottle A is not bottle B's

$id = propose('alice', 'egress-allow', { host => 'mine.example.com' });
$res = ctl('check', 'alice', $id);
is($res->{rc}, 0, 'check as its bottle: found');
is($json->decode($res->{out})->{state}, 'pending', 'check: its state');
$res = ctl('check', 'bob', $id);
is($res->{rc}, 1, 'check as another bottle: not found');
is($res->{err}, "bottlectl: no proposal \"$id\" of bottle \"bob\"\n",
	'check as another bottle: the same answer as no proposal');
is(ctl('check', 'bob', '1-00000000')->{err},
	"bottlectl: no proposal \"1-00000000\" of bottle \"bob\"\n",
	'check: no such proposal');

# statuses and the manual

is(ctl('approve')->{rc}, 2, 'approve without an id: usage, 2');
is(ctl('approve', '1-deadbeef')->{rc}, 1, 'approve an unknown id: 1');
is(ctl('propose', 'nobody', 'egress-block', '{"host":"a.example"}')->{rc}, 1,
	'propose for no bottle: 1');
is(ctl('propose', 'alice', 'frobnicate', '{}')->{rc}, 2, 'unknown kind: 2');
is(ctl({ env => { BOTTLE_STORE => 'redis://127.0.0.1:1' } }, 'proposals')->{rc},
	3, 'store unreachable: 3');
like(ctl('--help')->{out}, qr/approve ID \[--note TEXT\].*^    4 /ms,
	'--help: the commands and exit status 4');

# -f: a new proposal shows up

my $fpid = ctl_start({}, 'proposals', '-f', '--bottle', 'bob');
sleep 0.5;
propose('alice', 'egress-block', { host => 'other.example.com' });
$id = propose('bob', 'egress-block', { host => 'follow.example.com' });
sleep 0.5;
kill 'TERM', $fpid;
$res = ctl_wait($fpid);
like($res->{out}, qr/^\Q$id\E +bob +egress-block +pending +\d+s +follow\.example\.com$/m,
	'proposals -f: the new proposal printed');
unlike($res->{out}, qr/other\.example\.com/, "proposals -f --bottle: not another bottle's");

unlike($t->read_file('stderr.log'),
	qr/AddressSanitizer|LeakSanitizer|runtime error:/,
	'no sanitizer errors');

###############################################################################
