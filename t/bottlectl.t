#!/usr/bin/perl

# Tests for bottlectl, the control plane's CLI (docs/bottlectl.md) against
# a Redis of the test's own: policy put validates with the gateway's
# parser and messages and stores only token digests, all bottles in one
# script; get, rm, bottles; audit tail, its filter and -f; the store's
# URL forms (password, ACL user, db, unix socket) and an unreachable store
# named without its password.  No nginx needed.
#
# BOTTLECTL=path runs another build (build-asan/bottlectl); every stderr
# of it is kept in stderr.log, which the "no sanitizer errors" test reads.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Digest::SHA qw/ sha256_hex /;
use IO::Select;
use IO::Socket::INET;
use JSON::PP qw//;
use POSIX qw/ WNOHANG /;
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

my $t = Test::Nginx->new()->has_daemon('redis-server')
	->has_daemon('redis-cli')->plan(130);
my $d = $t->testdir();

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';
my $CAROL = 'carol-token-abcdefghij';
my $SECRET = 'ghp_egress-secret-value-1';

my $r = redis_start($t, port => 8101);
$ENV{BOTTLE_STORE} = $r->{url};
delete $ENV{$_} for qw/ BOTTLECTL_DEBUG /;

# ctl([{ stdin => file, env => {...} }], @args): { rc, out, err }

sub ctl { return ctl_run($t, @_); }

sub policy {
	my ($name, $data) = @_;
	return write_policy($t, $name, $data);
}

sub alice {
	return { id => 'alice', token => $ALICE,
		egress_tokens => { GH => $SECRET },
		routes => [ { host => 'api.github.com',
				auth => { type => 'bearer', value => 'secret:GH' } },
			{ host => 'example.org' } ], @_ };
}

sub bob {
	return { id => 'bob', token => $BOB,
		routes => [ { host => 'example.com' } ], @_ };
}

# a subscriber to bottle:changes, speaking RESP

my $sub = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$r->{port}")
	or die "subscriber: $!\n";
print $sub "*2\r\n\$9\r\nSUBSCRIBE\r\n\$14\r\nbottle:changes\r\n";
my $subbuf = '';

sub changes {
	my $sel = IO::Select->new($sub);
	my $end = time() + 1;
	while (time() < $end && $sel->can_read(0.2)) {
		sysread($sub, $subbuf, 65536, length $subbuf) or last;
	}
	my @m = $subbuf =~ /\$7\r\nmessage\r\n\$14\r\nbottle:changes\r\n\$\d+\r\n([^\r]*)\r\n/g;
	$subbuf = '';
	return join(',', @m);
}

changes();

###############################################################################

# put: two bottles, plaintext tokens

my $file = policy('two.json', { bottles => [ alice(), bob() ] });
my $res = ctl('policy', 'put', $file);

is($res->{rc}, 0, 'put: exit 0') or diag($res->{err});
is($res->{out}, "alice version 1\nbob version 2\n", 'put: versions printed');
is($res->{err}, '', 'put: nothing on stderr');

my %h = split /\n/, redis_cli($t, 'HGETALL', 'bottle:policy:alice');
is($h{token_sha256}, sha256_hex($ALICE), 'alice: token digest stored');
is($h{version}, 1, 'alice: version stored');

my $json = JSON::PP->new->decode($h{json} // '{}');
is($json->{token_sha256}, sha256_hex($ALICE), 'alice json: token_sha256');
ok(!exists $json->{token}, 'alice json: no token field');
is($json->{egress_tokens}{GH}, $SECRET, 'alice json: egress tokens kept');
is(scalar @{$json->{routes}}, 2, 'alice json: routes kept');
is($h{json}, JSON::PP->new->canonical->encode($json),
	'alice json: compact, sorted keys');

my $all = join("\n", map { redis_cli($t, 'HGETALL', $_) }
	qw/ bottle:policy:alice bottle:policy:bob bottle:tokens bottle:bottles /);
unlike($all, qr/\Q$ALICE\E|\Q$BOB\E/, 'no plaintext token in the store');

%h = split /\n/, redis_cli($t, 'HGETALL', 'bottle:tokens');
is_deeply(\%h, { sha256_hex($ALICE) => 'alice', sha256_hex($BOB) => 'bob' },
	'bottle:tokens maps digests to ids');

%h = split /\n/, redis_cli($t, 'HGETALL', 'bottle:bottles');
is_deeply(\%h, { alice => 1, bob => 2 }, 'bottle:bottles holds versions');

is(changes(), 'alice 1,bob 2', 'changes published');

# put again: new versions

$res = ctl('policy', 'put', $file);
is($res->{out}, "alice version 3\nbob version 4\n", 'put again: versions up');
is(changes(), 'alice 3,bob 4', 'put again: changes published');

# one bottle from stdin, token_sha256 given in upper case

my $one = policy('one.json', bob(token => undef,
	token_sha256 => uc sha256_hex($BOB), routes => []));
$t->write_file('one.json', $t->read_file('one.json') =~ s/"token" : null,?//r);
$res = ctl({ stdin => $one }, 'policy', 'put', '-');
is($res->{rc}, 0, 'put from stdin: exit 0') or diag($res->{err});
is($res->{out}, "bob version 5\n", 'put from stdin: one bottle');
is(redis_cli($t, 'HGET', 'bottle:policy:bob', 'token_sha256'),
	sha256_hex($BOB) . "\n", 'token_sha256 stored in lower case');
like(redis_cli($t, 'HGET', 'bottle:policy:bob', 'json'),
	qr/"routes":\[\].*"token_sha256":"${\ sha256_hex($BOB)}"/,
	'stored json: the digest in lower case');
changes();

# invalid documents: the gateway's messages, nothing stored

my @bad = (
	[ 'unknown field', { bottles => [ alice(colour => 'red') ] },
		'bottle "alice": unknown field "colour"' ],
	[ 'short token', { bottles => [ alice(token => 'short') ] },
		'bottle "alice": token: must be at least 16 characters' ],
	[ 'duplicate id', { bottles => [ alice(), alice() ] },
		'bottle "alice": id: duplicate: also defined in %F' ],
	[ 'unknown firehose level',
		{ bottles => [ alice(audit => { firehose => 'loud' }) ] },
		undef ],
	[ 'unknown log level',
		{ bottles => [ bob(routes => [ { host => 'a.example',
			log => 'everything' } ]) ] },
		undef ],
	[ 'one token, two bottles',
		{ bottles => [ alice(), bob(token => $ALICE) ] },
		undef ],
);

for my $i (0 .. $#bad) {
	my ($what, $doc, $msg) = @{$bad[$i]};
	my $f = policy("bad$i.json", $doc);
	$res = ctl('policy', 'put', $f);
	is($res->{rc}, 1, "$what: exit 1");
	if (defined $msg) {
		$msg =~ s/%F/$f/g;
		is($res->{err}, "bottlectl: $f: $msg\n", "$what: the gateway's message");
	} else {
		like($res->{err}, qr/^bottlectl: \Q$f\E: bottle "\w+": .*\n\z/,
			"$what: one line naming the file");
	}
	unlike($res->{err}, qr/\Q$ALICE\E|\Q$SECRET\E/, "$what: no secret echoed");
}

$t->write_file('syntax.json', '{"bottles": [ {"id": "alice", ');
$res = ctl('policy', 'put', "$d/syntax.json");
is($res->{rc}, 1, 'invalid JSON: exit 1');
like($res->{err}, qr/^bottlectl: \Q$d\E\/syntax.json: line 1 .*invalid JSON/,
	'invalid JSON: the parser\'s message');

$res = ctl('policy', 'put', "$d/nothing.json");
is($res->{rc}, 1, 'missing file: exit 1');
like($res->{err}, qr/^bottlectl: cannot open '.*nothing.json': /,
	'missing file: named');

is(redis_cli($t, 'GET', 'bottle:version'), "5\n",
	'refused documents: version unchanged');
is(changes(), '', 'refused documents: nothing published');

# a token already another bottle's: refused by the script, naming both

$res = ctl('policy', 'put', policy('carol.json',
	{ id => 'carol', token => $ALICE, routes => [] }));
is($res->{rc}, 1, 'token of another bottle: exit 1');
is($res->{err}, 'bottlectl: bottle "carol": token: already the identity '
	. "of bottle \"alice\"\n", 'token of another bottle: names both');
is(redis_cli($t, 'EXISTS', 'bottle:policy:carol'), "0\n",
	'token of another bottle: carol not stored');
is(redis_cli($t, 'HGET', 'bottle:tokens', sha256_hex($ALICE)), "alice\n",
	'token of another bottle: the token stays alice\'s');
is(redis_cli($t, 'GET', 'bottle:version'), "5\n",
	'token of another bottle: version unchanged');

# all or none: a new bottle next to a conflicting one

$res = ctl('policy', 'put', policy('two-bad.json', { bottles => [
	{ id => 'dave', token => 'dave-token-0123456789', routes => [] },
	{ id => 'carol', token => $BOB, routes => [] } ] }));
is($res->{rc}, 1, 'all or none: exit 1');
is(redis_cli($t, 'EXISTS', 'bottle:policy:dave'), "0\n",
	'all or none: dave not stored');

# get

$res = ctl('policy', 'get', 'alice');
is($res->{rc}, 0, 'get: exit 0');
is_deeply(JSON::PP->new->decode($res->{out} || '{}'), $json,
	'get: the stored bottle');
like($res->{out}, qr/^\{\n  "egress_tokens": \{/, 'get: pretty, sorted');

my $back = policy('back.json', JSON::PP->new->decode($res->{out} || '{}'));
$res = ctl('policy', 'put', $back);
is($res->{out}, "alice version 6\n", 'get output puts back');
is(redis_cli($t, 'HGET', 'bottle:tokens', sha256_hex($ALICE)), "alice\n",
	'put back: same token digest');
changes();

$res = ctl('policy', 'get', 'nobody');
is($res->{rc}, 1, 'get absent: exit 1');
is($res->{err}, "bottlectl: no bottle \"nobody\"\n", 'get absent: message');

# bottles

$res = ctl('policy', 'put', policy('carol2.json',
	{ id => 'carol', token => $CAROL, routes => [] }));
is($res->{out}, "carol version 7\n", 'carol put');
changes();

$res = ctl('bottles');
is($res->{rc}, 0, 'bottles: exit 0');
is($res->{out}, "BOTTLE  ROUTES  VERSION\n"
	. "alice        2  6\n"
	. "bob          0  5\n"
	. "carol        0  7\n", 'bottles: sorted by id');

$res = ctl('--json', 'bottles');
is_deeply(JSON::PP->new->decode($res->{out} || '[]'), [
	{ id => 'alice', routes => 2, version => 6 },
	{ id => 'bob', routes => 0, version => 5 },
	{ id => 'carol', routes => 0, version => 7 } ], 'bottles --json');

$res = ctl('--store', 'redis://127.0.0.1:' . port(8102), '--policy', $file,
	'bottles');
is($res->{out}, "BOTTLE  ROUTES  VERSION\nalice        2  -\n"
	. "bob          1  -\n", 'bottles --policy: the file, no store');

# rm

$res = ctl('policy', 'rm', 'bob');
is($res->{rc}, 0, 'rm: exit 0');
is($res->{out}, "bob removed\n", 'rm: said');
is(changes(), 'bob 0', 'rm: "bob 0" published');
is(redis_cli($t, 'HGET', 'bottle:tokens', sha256_hex($BOB)), "\n",
	'rm: the digest is gone from bottle:tokens');
is(redis_cli($t, 'HEXISTS', 'bottle:bottles', 'bob'), "0\n",
	'rm: gone from bottle:bottles');

$res = ctl('policy', 'get', 'bob');
is($res->{rc}, 1, 'rm then get: exit 1');

$res = ctl('policy', 'rm', 'bob');
is($res->{rc}, 1, 'rm absent: exit 1');
is($res->{err}, "bottlectl: no bottle \"bob\"\n", 'rm absent: message');

# usage

$res = ctl('--policy', $file, 'policy', 'put', $file);
is($res->{rc}, 2, 'put with --policy: usage error');
$res = ctl();
is($res->{rc}, 2, 'no command: exit 2');
$res = ctl('frobnicate');
is($res->{rc}, 2, 'unknown command: exit 2');
like($res->{err}, qr/^bottlectl: unknown command 'frobnicate'/,
	'unknown command: named');
$res = ctl('policy', 'get');
is($res->{rc}, 2, 'policy get without a bottle: exit 2');
$res = ctl('audit', 'tail', '-n', 'x');
is($res->{rc}, 2, 'audit tail -n x: exit 2');
$res = ctl('--store', 'http://x', 'bottles');
is($res->{rc}, 2, 'bad store URL: exit 2');

$res = ctl('--help');
is($res->{rc}, 0, '--help: exit 0');
like($res->{out}, qr/^NAME\n.*^SYNOPSIS\n.*^DESCRIPTION\n.*^COMMANDS\n.*
	^OPTIONS\n.*^ENVIRONMENT\n.*^EXIT\ STATUS\n.*^EXAMPLES\n/msx,
	'--help: the manual\'s sections');
my @missing = grep { $res->{out} !~ /^    \Q$_\E/m } ('policy put',
	'policy get', 'policy rm', 'bottles', 'audit tail', 'explain');
is("@missing", '', '--help: every command');
$res = ctl('policy', '--help');
like($res->{out}, qr/^SYNOPSIS\n    bottlectl .*policy put .*^DESCRIPTION\n    policy put /ms,
	'policy --help: the policy commands\' part of the manual');
unlike($res->{out}, qr/^NAME|audit tail/m, 'policy --help: not the whole manual');

$t->write_file('--odd.json', '{"bottles": []}');
$res = ctl('policy', 'put', '--', "--odd.json");
is($res->{rc}, 1, '-- then a file named like an option: read as a file');
like($res->{err}, qr/cannot open '--odd.json'/, '-- : the name kept');
$res = ctl('policy', 'put', '--', "$d/--odd.json");
is($res->{rc}, 0, '-- : an empty document puts nothing');

$res = ctl('--version');
like($res->{out}, qr/^bottlectl \S+\n\z/, '--version');

# explain, from the store: the gateway's verdict and rule

$res = ctl('explain', 'alice');
is($res->{rc}, 2, 'explain: usage, exit 2');
$res = ctl('explain', 'nobody', 'GET', 'https://example.com/');
is($res->{rc}, 2, 'explain: unknown bottle, exit 2');

$res = ctl('explain', 'alice', 'GET', 'https://api.github.com/user',
	'-H', 'Authorization: Bearer agent-own');
is($res->{rc}, 0, 'explain allowed: exit 0');
like($res->{out}, qr/^verdict: allowed\nroute: api\.github\.com\n/,
	'explain allowed: verdict and route');
like($res->{out}, qr/^inject: authorization .*GH/m,
	'explain allowed: the injected header, by token name');
unlike($res->{out}, qr/\Q$SECRET\E/, 'explain: never the token value');
like($res->{out}, qr/^stripped: Authorization$/m,
	'explain: the agent\'s credential stripped');

$res = ctl('explain', 'alice', 'GET', 'https://nope.example/');
is($res->{rc}, 1, 'explain refused: exit 1');
like($res->{out}, qr/^verdict: refused\nrule: no_route\nstatus: 403\n/,
	'explain refused: rule and status');

$res = ctl('explain', 'alice', 'GET', 'https://example.org:8443/');
like($res->{out}, qr/^rule: port$/m, 'explain: the port rule');

$res = ctl('--policy', policy('explain.json', { bottles => [ alice() ] }),
	'explain', 'alice', 'POST', 'http://EXAMPLE.org./x');
like($res->{out}, qr/^rule: method$/m,
	'explain from a file: the method rule, host canonicalised');

###############################################################################

# audit tail

sub xadd {
	my ($bottle, $k) = @_;
	redis_cli($t, 'XADD', 'bottle:audit', '*', 'event',
		qq({"bottle":"$bottle","k":$k}));
}

# the puts above journalled their policy.changed events (t/policy_check.t)
redis_cli($t, 'DEL', 'bottle:audit');

$res = ctl('audit', 'tail');
is($res->{rc}, 0, 'audit tail, no stream: exit 0');
is($res->{out}, '', 'audit tail, no stream: nothing');

xadd('alice', 1);
xadd('bob', 2);
xadd('alice', 3);
redis_cli($t, 'XADD', 'bottle:audit', '*', 'other', 'x');
xadd('carol', 4);

sub ks { join ',', map { /"k":(\d+)/ ? $1 : '?' } split /\n/, $_[0]->{out} }

$res = ctl('audit', 'tail');
is(ks($res), '1,2,3,4', 'audit tail: all, oldest first');
like($res->{out}, qr/^\{"bottle":"alice","k":1\}\n/, 'audit tail: the JSON');
is(ks(ctl('audit', 'tail', '-n', '2')), '3,4', 'audit tail -n 2');
is(ks(ctl('audit', 'tail', '-n1')), '4', 'audit tail -n1');
is(ks(ctl('audit', 'tail', '--bottle', 'alice')), '1,3',
	'audit tail --bottle');
is(ks(ctl('audit', 'tail', '--bottle=alice', '-n', '1')), '3',
	'audit tail --bottle -n 1');
is(ks(ctl('audit', 'tail', '--bottle', 'nobody')), '',
	'audit tail --bottle nobody');

# more than a batch after the bottle's event

redis_cli($t, 'EVAL', "for i = 1, 600 do redis.call('XADD', 'bottle:audit',"
	. " '*', 'event', '{\"bottle\":\"bob\",\"k\":' .. (100 + i) .. '}') end",
	'0');
is(ks(ctl('audit', 'tail', '--bottle', 'carol')), '4',
	'audit tail --bottle: found behind 600 others');
is(ks(ctl('audit', 'tail', '-n', '3')), '698,699,700', 'audit tail -n 3');
is(scalar(() = ctl('audit', 'tail', '-n', '1000')->{out} =~ /\n/g), 604,
	'audit tail -n 1000: the whole stream');

# -f

my $fpid = fork() // die;
if ($fpid == 0) {
	open STDOUT, '>', "$d/follow.out" or die;
	open STDERR, '>>', "$d/stderr.log" or die;
	exec($BOTTLECTL, 'audit', 'tail', '-f', '-n', '1', '--bottle', 'alice')
		or POSIX::_exit(127);
}

sub wait_for {
	my ($file, $re) = @_;
	my $end = time() + 5;
	while (time() < $end) {
		my $s = -e "$d/$file" ? $t->read_file($file) : '';
		return $s if $s =~ $re;
		sleep 0.05;
	}
	return -e "$d/$file" ? $t->read_file($file) : '';
}

like(wait_for('follow.out', qr/"k":3/), qr/^\{"bottle":"alice","k":3\}\n\z/,
	'audit tail -f: the backlog first');
xadd('bob', 901);
xadd('alice', 902);
like(wait_for('follow.out', qr/"k":902/), qr/"k":3\}\n\{"bottle":"alice","k":902\}\n\z/,
	'audit tail -f: a new event, filtered');
xadd('alice', 903);
like(wait_for('follow.out', qr/"k":903/), qr/"k":903\}\n\z/,
	'audit tail -f: and the next');

kill 'INT', $fpid;
my $end = time() + 5;
sleep 0.05 while waitpid($fpid, WNOHANG) == 0 && time() < $end;
is($?, 0, 'audit tail -f: SIGINT ends it with exit 0');

###############################################################################

# an unreachable store: exit 3, named without its password

my $closed = port(8102);
$res = ctl('--store', "redis://:hunter2secret\@127.0.0.1:$closed/3",
	'policy', 'get', 'alice');
is($res->{rc}, 3, 'unreachable: exit 3');
is($res->{err}, "bottlectl: cannot reach the store redis://127.0.0.1:$closed/3"
	. ": Connection refused\n", 'unreachable: one line, the URL');
unlike($res->{err}, qr/hunter2/, 'unreachable: no password');

$res = ctl({ env => { BOTTLE_STORE => "redis://127.0.0.1:$closed" } },
	'bottles');
is($res->{rc}, 3, 'BOTTLE_STORE is the default store');

# a password, an ACL user, a database

my $a = redis_start($t, port => 8103, name => 'auth', password => 'pw:@/1');
my $aurl = "redis://:pw%3A%40%2F1\@127.0.0.1:$a->{port}";

$res = ctl('--store', "$aurl/2", 'policy', 'put', $file);
is($res->{rc}, 0, 'password: put') or diag($res->{err});
is(redis_cli($t, { name => 'auth' }, '-n', '2', 'HGET', 'bottle:bottles',
	'alice'), "1\n", 'password: written to db 2');
is(ctl('--store', "$aurl/2", 'policy', 'get', 'bob')->{rc}, 0,
	'password: get');

$res = ctl('--store', "redis://:wrong-pw\@127.0.0.1:$a->{port}", 'bottles');
is($res->{rc}, 3, 'wrong password: exit 3');
like($res->{err}, qr/^bottlectl: cannot reach the store redis:\/\/127.0.0.1:\d+\/0: authentication failed/,
	'wrong password: said');
unlike($res->{err}, qr/wrong-pw/, 'wrong password: not echoed');

$res = ctl('--store', "redis://127.0.0.1:$a->{port}", 'bottles');
is($res->{rc}, 3, 'no password: exit 3');

redis_cli($t, { name => 'auth' }, 'ACL', 'SETUSER', 'ops', 'on', '>ops-pw',
	'~*', '&*', '+@all');
$res = ctl('--store', "redis://ops:ops-pw\@127.0.0.1:$a->{port}/2",
	'bottles');
is($res->{rc}, 0, 'ACL user: exit 0') or diag($res->{err});
like($res->{out}, qr/^alice +2 +1\n/m, 'ACL user: db 2 read');

# a unix socket

my $u = redis_start($t, port => 8104, name => 'sock', unix => 1,
	password => 'sock pw&');
$res = ctl('--store', $u->{unix_url}, 'policy', 'put', $file);
is($res->{rc}, 0, 'unix socket: put') or diag("$u->{unix_url}: $res->{err}");
is(redis_cli($t, { name => 'sock' }, 'HGET', 'bottle:bottles', 'bob'), "2\n",
	'unix socket: written');
$res = ctl('--store', "$u->{unix_url}&db=0", 'bottles');
like($res->{out}, qr/^bob +1 +2\n/m, 'unix socket with db: bottles');

###############################################################################
