#!/usr/bin/perl

# Tests for bottlectl's dry runs and journalled policy changes
# (docs/bottlectl.md, docs/control-plane.md "Audit events"): policy check
# on good and bad files and directories, without a store; policy diff
# against a store, its output and exit statuses; policy put DIR read as
# the gateway reads it; the policy.changed event of every put and rm
# (operator, versions, summary), written in the put's own script (no
# journal, no put); help per command; every error line starting
# "bottlectl: ".  No nginx needed.
#
# BOTTLECTL=path runs another build (build-asan/bottlectl).

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP qw//;

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
	->has_daemon('redis-cli')->plan(74);
my $d = $t->testdir();
my $json = JSON::PP->new;

my $SECRET = 'ghp_egress-secret-value-1';
my $SECRET2 = 'ghp_egress-secret-value-2';

sub ctl { return ctl_run($t, @_); }

sub alice {
	return { id => 'alice', token => 'alice-token-0123456789',
		egress_tokens => { GH => $SECRET },
		routes => [ { host => 'api.github.com',
				auth => { type => 'bearer', value => 'secret:GH' } },
			{ host => 'example.org' } ], @_ };
}

sub bob {
	return { id => 'bob', token => 'bob-token-9876543210xyz',
		routes => [ { host => 'example.com' } ], @_ };
}

sub events {
	return map { $json->decode($_) } grep { /^\{/ } split /\n/,
		redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
}

sub changed { return grep { $_->{type} eq 'policy.changed' } events(); }

sub stored {
	my $v = redis_cli($t, 'HGET', 'bottle:bottles', $_[0]);
	chomp $v;
	return $v;
}

# every line on stderr is "bottlectl: ..."

sub prefixed {
	my ($res) = @_;
	return $res->{err} ne '' && $res->{err} !~ /^(?!bottlectl: ).*$/m;
}

mkdir "$d/pol";
write_policy($t, 'pol/10-alice.json', { bottles => [ alice() ] });
write_policy($t, 'pol/20-bob.json', bob());
write_policy($t, 'pol/.hidden.json', '{ not json');
write_policy($t, 'pol/notes.txt', 'not policy');

###############################################################################

# policy check: no store needed (none is running yet)

$ENV{BOTTLE_STORE} = 'redis://127.0.0.1:1';

my $res = ctl('policy', 'check', "$d/pol");
is($res->{rc}, 0, 'check dir: exit 0') or diag($res->{err});
is($res->{out}, "$d/pol/10-alice.json: bottle \"alice\": OK\n"
	. "$d/pol/20-bob.json: bottle \"bob\": OK\n$d/pol: OK\n",
	'check dir: each bottle OK, dot files and *.txt skipped as the gateway does');
is($res->{err}, '', 'check dir: nothing on stderr');

$res = ctl('policy', 'check', "$d/pol/10-alice.json");
is($res->{rc}, 0, 'check file: exit 0');
is($res->{out}, "$d/pol/10-alice.json: bottle \"alice\": OK\n",
	'check file: the bottle OK');

$res = ctl({ stdin => "$d/pol/20-bob.json" }, 'policy', 'check', '-');
is($res->{out}, "stdin: bottle \"bob\": OK\n", 'check stdin: OK');

# bad: the parser's message with the file, every bad file named

mkdir "$d/bad";
write_policy($t, 'bad/a.json', { bottles => [ alice(), bob(
	routes => [ { host => 'example.com', methods => [ 'FETCH' ] } ]) ] });
write_policy($t, 'bad/b.json', '{"id": "carol", "token": "carol-token-abcdefghij",');
write_policy($t, 'bad/c.json', { id => 'dave', token => 'dave-token-0000000000',
	routes => [] });

$res = ctl('policy', 'check', "$d/bad");
is($res->{rc}, 1, 'check bad dir: exit 1');
like($res->{err}, qr/^bottlectl: \Q$d\E\/bad\/a\.json: bottle "bob": routes\[0\]\.methods.*FETCH/m,
	'check bad dir: the parser\'s message, with the file');
like($res->{err}, qr/^bottlectl: \Q$d\E\/bad\/b\.json: line \d+ column \d+: invalid JSON/m,
	'check bad dir: the next bad file too');
is($res->{out}, "$d/bad/c.json: bottle \"dave\": OK\n",
	'check bad dir: the good file\'s bottle OK');
ok(prefixed($res), 'check bad dir: every error line starts "bottlectl: "');
unlike($res->{err} . $res->{out}, qr/token-|\Q$SECRET\E/,
	'check: no token or secret printed');

# across files: one id twice is the gateway's error too

mkdir "$d/dup";
write_policy($t, 'dup/a.json', bob());
write_policy($t, 'dup/b.json', bob(token => 'bob-other-token-0123456'));
$res = ctl('policy', 'check', "$d/dup");
is($res->{rc}, 1, 'check dir, an id in two files: exit 1');
like($res->{err}, qr/^bottlectl: .*"bob".*/m, 'check dir, an id twice: said');

# the limits of put (--limits)

$res = ctl('--limits', 'routes=1', 'policy', 'check', "$d/pol");
is($res->{rc}, 1, 'check --limits routes=1: exit 1');
like($res->{err}, qr/^bottlectl: .*bottle "alice".*routes/m,
	'check --limits: alice over it');
like($res->{out}, qr/^\Q$d\E\/pol\/20-bob\.json: bottle "bob": OK$/m,
	'check --limits: bob within it');

$res = ctl('policy', 'check', "$d/nothing");
is($res->{rc}, 1, 'check, no such file: exit 1');
ok(prefixed($res), 'check, no such file: bottlectl: ...');

###############################################################################

my $r = redis_start($t, port => 8111);
$ENV{BOTTLE_STORE} = $r->{url};
$ENV{BOTTLE_OPERATOR} = 'env-operator';

# diff against an empty store: everything added, exit 1

$res = ctl('policy', 'diff', "$d/pol");
is($res->{rc}, 1, 'diff, empty store: exit 1 (changes)');
like($res->{out}, qr/^bottle "alice": added \(routes: 2\)\n--- \/dev\/null\n\+\+\+ b\/bottle:policy:alice\n/m,
	'diff: alice added, a diff from nothing');
like($res->{out}, qr/^bottle "bob": added \(routes: 1\)$/m, 'diff: bob added');
like($res->{out}, qr/^\+    "GH": "<redacted>"$/m, 'diff: the secret redacted');
unlike($res->{out}, qr/\Q$SECRET\E|alice-token/, 'diff: no secret, no token');
is(stored('alice'), '', 'diff: nothing written');

# put DIR: read as the gateway reads it

$res = ctl('policy', 'put', "$d/pol", '--operator', 'ops@example');
is($res->{rc}, 0, 'put dir: exit 0') or diag($res->{err});
is($res->{out}, "alice version 1\nbob version 2\n", 'put dir: both bottles');

my @e = changed();
is(scalar @e, 2, 'put dir: two policy.changed events');
my ($ea) = grep { $_->{bottle} eq 'alice' } @e;
is($ea->{operator}, 'ops@example', 'event: --operator');
is($ea->{operator_action}, 'put', 'event: operator_action put');
is($ea->{producer}, 'bottlectl', 'event: producer');
ok(!defined $ea->{old_version} && $ea->{new_version} == 1,
	'event: old_version null, new_version 1');
is($ea->{summary}, 'bottle added', 'event: summary');
is_deeply($ea->{routes_added}, [ 'api.github.com', 'example.org' ],
	'event: the routes added');
like($ea->{correlation_id}, qr/^[0-9a-f]{32}$/, 'event: the write id');
unlike(redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+'),
	qr/\Q$SECRET\E|alice-token/, 'events: no secret, no token');

# diff, unchanged: exit 0

$res = ctl('policy', 'diff', "$d/pol");
is($res->{rc}, 0, 'diff, same: exit 0') or diag($res->{err});
is($res->{out}, "bottle \"alice\": unchanged (version 1)\n"
	. "bottle \"bob\": unchanged (version 2)\n", 'diff, same: unchanged');

# a change: route added, removed, changed, a field, a secret

my $alice2 = alice(egress_tokens => { GH => $SECRET2 },
	audit => { delivery => 'required' },
	routes => [ { host => 'api.github.com', methods => [ 'GET' ],
			auth => { type => 'bearer', value => 'secret:GH' } },
		{ host => 'new.example' } ]);
my $f2 = write_policy($t, 'alice2.json', $alice2);

redis_cli($t, 'HSET', 'bottle:bottles', 'carol', 9);
$res = ctl('policy', 'diff', $f2);
is($res->{rc}, 1, 'diff, changed: exit 1');
like($res->{out}, qr/^bottle "alice": changed \(version 1\): routes added: new\.example; routes removed: example\.org; routes changed: api\.github\.com; fields changed: audit, egress_tokens$/m,
	'diff, changed: the summary');
like($res->{out}, qr/^--- a\/bottle:policy:alice \(version 1\)\n\+\+\+ b\/bottle:policy:alice\n@@ /m,
	'diff, changed: a unified diff');
like($res->{out}, qr/^-      "host": "example\.org"\n\+      "host": "new\.example"$/m,
	'diff, changed: the route\'s lines');
unlike($res->{out}, qr/\Q$SECRET2\E|\Q$SECRET\E/, 'diff, changed: no secret');
like($res->{out}, qr/^bottle "bob": not in \Q$f2\E, kept \(policy put removes no bottle; policy rm does\)$/m,
	'diff: a bottle the file does not name is kept, as put keeps it');
like($res->{out}, qr/^bottle "carol": not in /m, 'diff: every such bottle');
redis_cli($t, 'HDEL', 'bottle:bottles', 'carol');

$res = ctl('policy', 'diff', "$d/bad");
is($res->{rc}, 2, 'diff, invalid policy: exit 2');
ok(prefixed($res), 'diff, invalid policy: bottlectl: ...');

# put the change: its event

$res = ctl('policy', 'put', $f2);
is($res->{rc}, 0, 'put change: exit 0') or diag($res->{err});
@e = changed();
my $ec = $e[-1];
is($ec->{operator}, 'env-operator', 'event: the operator from BOTTLE_OPERATOR');
ok($ec->{old_version} == 1 && $ec->{new_version} == 3,
	'event: old_version 1, new_version 3');
is_deeply([ $ec->{routes_added}, $ec->{routes_removed},
	$ec->{routes_changed}, $ec->{fields_changed} ],
	[ [ 'new.example' ], [ 'example.org' ], [ 'api.github.com' ],
	[ 'audit', 'egress_tokens' ] ], 'event: what changed');
is(scalar @e, 3, 'put change: one event for the one bottle');
is(ctl('policy', 'diff', $f2)->{rc}, 0, 'diff after the put: exit 0');

# no journal, no put: nothing written

redis_cli($t, 'RENAME', 'bottle:audit', 'saved:audit');
redis_cli($t, 'SET', 'bottle:audit', 'x');
$res = ctl('policy', 'put', "$d/pol/20-bob.json");
is($res->{rc}, 1, 'journal broken: put refused');
like($res->{err}, qr/^bottlectl: cannot journal the policy change: bottle:audit is a string, not a stream: nothing written$/m,
	'journal broken: the message');
is(stored('bob'), 2, 'journal broken: bob not written');
$res = ctl('policy', 'rm', 'bob');
is($res->{rc}, 1, 'journal broken: rm refused');
is(stored('bob'), 2, 'journal broken: bob not removed');
redis_cli($t, 'DEL', 'bottle:audit');
redis_cli($t, 'RENAME', 'saved:audit', 'bottle:audit');

# rm: its event

$res = ctl('policy', 'rm', 'bob', '--operator=remover');
is($res->{rc}, 0, 'rm: exit 0');
$ec = (changed())[-1];
ok($ec->{bottle} eq 'bob' && $ec->{operator_action} eq 'rm'
	&& $ec->{operator} eq 'remover', 'rm event: bottle, action, operator');
ok($ec->{old_version} == 2 && !defined $ec->{new_version},
	'rm event: old_version 2, new_version null');
is_deeply($ec->{routes_removed}, [ 'example.com' ], 'rm event: routes removed');
is(ctl('policy', 'rm', 'bob')->{rc}, 1, 'rm again: no bottle');
is(scalar(changed()), 4, 'rm of no bottle: no event');

is(ctl('policy', 'get', 'alice', '--operator', 'x')->{rc}, 2,
	'--operator on get: usage');

###############################################################################

# help per command: the manual's part for it

$res = ctl('policy', 'put', '--help');
is($res->{rc}, 0, 'policy put --help: exit 0');
like($res->{out}, qr/\ASYNOPSIS\n    bottlectl \[--store URL\] policy put FILE\|DIR\|- \[--operator NAME\]\n\nDESCRIPTION\n    policy put FILE\|DIR\|- \[--operator NAME\]\n        Validate/,
	'policy put --help: its synopsis and description');
unlike($res->{out}, qr/policy rm|NAME\n|EXIT STATUS/, 'policy put --help: nothing else');

$res = ctl('audit', '--help');
like($res->{out}, qr/\ASYNOPSIS\n    bottlectl \[--store URL\] audit tail .*DESCRIPTION\n    audit tail /s,
	'audit --help: audit\'s part');
$res = ctl('approve', '-h');
like($res->{out}, qr/\ASYNOPSIS\n    bottlectl \[--store URL\] approve ID \[--note TEXT\]\n\nDESCRIPTION\n    approve ID/,
	'approve -h: approve\'s part');
unlike($res->{out}, qr/deny|modify ID/, 'approve -h: not deny\'s');

# the same text as the manual's

my $manual = ctl('--help')->{out};
my ($desc) = $res->{out} =~ /DESCRIPTION\n(.*)\z/s;
ok(index($manual, $desc) >= 0, 'approve -h: the manual\'s own text');

# errors: "bottlectl: " on every line, explain's included

my @errs = (
	[ 'explain' ], [ 'explain', 'nobody', 'GET', 'https://a/' ],
	[ 'explain', 'alice', 'GET', 'ftp://a/' ],
	[ 'explain', 'alice', 'GET', 'https://a/', '-H', 'nocolon' ],
	[ 'policy', 'frob', 'x' ], [ 'nocommand' ], [ 'policy', 'check' ],
);
my @bad = grep { !prefixed(ctl(@$_)) } @errs;
is(join(' | ', map { "@$_" } @bad), '', 'every error line starts "bottlectl: "');

# sanitizers (BOTTLECTL=build-asan/bottlectl): every stderr is kept

unlike($t->read_file('stderr.log'), qr/AddressSanitizer|runtime error|LeakSanitizer/,
	'no sanitizer reports');

###############################################################################
