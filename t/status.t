#!/usr/bin/perl

# Tests for heartbeats and `bottlectl status` (docs/bottlectl.md,
# "status"; docs/control-plane.md, "Heartbeats"): a gateway of two workers
# and supervise-helper write their records every second (bottle_heartbeat
# 1s, --heartbeat 1); status lists them with the policy version each
# applied (a put shows within a bound), the store's health and the pending
# proposals, exit 0; a stopped supervise is stale, then missing under
# --expect, exit 6; a store that is down is said so, exit 3.  The
# heartbeat costs the request path nothing: the store's SETs do not follow
# the requests.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use JSON::PP;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $HELPER = $ENV{SUPERVISE_HELPER} // "$FindBin::Bin/../build/supervise-helper";
$HELPER = "$FindBin::Bin/../$HELPER" if $HELPER !~ m!^/! && !-x $HELPER;

plan(skip_all => 'build/supervise-helper not built (make supervise)')
	unless -x $HELPER;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/)
	->has_daemon('redis-server');

my $ALICE = 'alice-token-0123456789';
my $RP = port(8090);
my $P1 = port(8081);

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	main => 'worker_processes 2;',
	policy => "redis://127.0.0.1:$RP",
	global => 'bottle_heartbeat 1s id=gw-test;'));

fake_upstream($t, port => $P1, name => 'one');

my $r = redis_start($t, port => $RP);
$ENV{BOTTLE_STORE} = $r->{url};
my $d = $t->testdir();

sub alice {
	my (@methods) = @_;
	return { id => 'alice', token => $ALICE, routes => [ { host =>
		'127.0.0.1', port => $P1, methods => [ @methods ] } ] };
}

store_put($t, alice('GET'));

$t->run()->plan(33);

$t->run_daemon(sub {
	open STDIN, '<', '/dev/null';
	open STDOUT, '>>', "$d/supervise.stderr";
	open STDERR, '>&', \*STDOUT;
	exec($HELPER, '--listen', "unix:$d/sv.sock", '--store', $r->{url},
		'--heartbeat', '1', '--name', 'sv-test') or die "exec: $!\n";
});
my $sv = $t->last_daemon_pid();

###############################################################################

my $json = JSON::PP->new->canonical;

sub status {
	my (@args) = @_;
	my $res = ctl_run($t, '--json', 'status', @args);
	$res->{json} = eval { $json->decode($res->{out}) };
	return $res;
}

sub component {
	my ($res, $kind, $id) = @_;
	my ($c) = grep { $_->{kind} eq $kind && $_->{id} eq $id }
		@{$res->{json}{components} // []};
	return $c;
}

# status until $cond holds (10 s at most): the last one
sub status_until {
	my ($cond, @args) = @_;
	my $res;
	my $deadline = time() + 10;
	while (time() < $deadline) {
		$res = status(@args);
		return $res if $res->{json} && $cond->($res);
		sleep 0.2;
	}
	return $res;
}

sub get {
	return http_get_proxy('/x');
}

sub http_get_proxy {
	my ($path) = @_;
	return Test::Nginx::proxy_request(8080,
		"GET http://127.0.0.1:$P1$path HTTP/1.1\r\n"
		. "Host: 127.0.0.1:$P1\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $ALICE) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

# everyone up

my $res = status_until(sub {
	component($_[0], 'gateway', 'gw-test/0')
		&& component($_[0], 'gateway', 'gw-test/1')
		&& component($_[0], 'supervise', 'sv-test')
		&& $_[0]{rc} == 0 });

is($res->{rc}, 0, 'status: exit 0 with every component up')
	or diag($res->{out} . $res->{err});

my $g = component($res, 'gateway', 'gw-test/0') // {};
my $s = component($res, 'supervise', 'sv-test') // {};
my $v1 = $res->{json}{policy}{version};

is($g->{state}, 'up', 'gateway worker 0: up');
is($g->{policy_version}, $v1, 'gateway: the policy version it applied');
is($g->{bottles}, 1, 'gateway: bottles served');
is($g->{workers}, 2, 'gateway: workers');
is($g->{instance}, 'gw-test', 'gateway: its instance');
ok(defined $g->{pid} && $g->{pid} > 0 && kill(0, $g->{pid}),
	'gateway: the pid of a live worker');
is($g->{store}, 'up', 'gateway: the store as it sees it');
ok(defined $g->{since_sync} && $g->{since_sync} >= 0,
	'gateway: seconds since its last sync');
ok(defined $g->{age_ms} && $g->{age_ms} <= 3000 && $g->{period_ms} == 1000,
	'gateway: age within its stale window');
ok(defined $g->{uptime} && defined $g->{version} && $g->{host},
	'gateway: uptime, version, host');

my $pttl = redis_cli($t, 'PTTL', 'bottle:heartbeat:gateway:gw-test/0');
ok($pttl > 50000 && $pttl <= 60000,
	'gateway: its key expires 60 periods after it is written');

is($s->{state}, 'up', 'supervise: up');
is($s->{pid}, $sv, 'supervise: its pid');

ok($res->{json}{store}{up} && defined $res->{json}{store}{ping_ms}
	&& $res->{json}{store}{role} eq 'master'
	&& defined $res->{json}{store}{replicas}
	&& $res->{json}{store}{memory_bytes} > 0,
	'store: up, ping, role, replicas, memory');

# a put: the new version reaches every worker's record within a bound

my $before = time();
store_put($t, alice('GET', 'POST'));
my $v2 = $v1 + 1;

$res = status_until(sub {
	(component($_[0], 'gateway', 'gw-test/0') // {})->{policy_version}
		== $v2
	&& (component($_[0], 'gateway', 'gw-test/1') // {})->{policy_version}
		== $v2 });

is($res->{json}{policy}{version}, $v2, 'put: the store\'s version');
is((component($res, 'gateway', 'gw-test/1') // {})->{policy_version}, $v2,
	'put: both workers report the new version');
cmp_ok(time() - $before, '<', 6, 'put: reported within 6 s');

# pending proposals, by kind and by bottle

ctl_run($t, 'propose', 'alice', 'egress-allow',
	'{"host":"api.example.com","methods":["GET"]}');
ctl_run($t, 'propose', 'alice', 'egress-block', '{"host":"127.0.0.1"}');

$res = status();
is($res->{json}{proposals}{pending}, 2, 'proposals: pending');
is_deeply($res->{json}{proposals}{by_kind},
	{ 'egress-allow' => 1, 'egress-block' => 1 }, 'proposals: by kind');
is_deeply($res->{json}{proposals}{by_bottle}, { alice => 2 },
	'proposals: by bottle');

# the text form

my $text = ctl_run($t, 'status');
like($text->{out}, qr/^gateway\s+gw-test\/0\s+up\s+\d+s\s+$v2\s+1\s/m,
	'text: a gateway worker, its state and policy version');
like($text->{out}, qr/^supervise\s+sv-test\s+up\s/m, 'text: supervise');

# --expect: gateways are instances, not workers

is(status('--expect', 'gateway=1,supervise=1')->{rc}, 0, 'expect: met');
$res = status('--expect', 'gateway=2');
is($res->{rc}, 6, 'expect: two gateways, one up: exit 6');
like($res->{err}, qr/missing: 2 gateway expected up, 1 is/,
	'expect: says which');

# requests do not write to the store: its SETs follow the clock only

sub sets {
	my ($n) = redis_cli($t, 'INFO', 'commandstats')
		=~ /cmdstat_set:calls=(\d+)/;
	return $n // 0;
}

my $n0 = sets();
my $t0 = time();
my $ok = 0;
for (1 .. 100) {
	$ok++ if http_get_proxy("/r$_") =~ /^HTTP\/1\.1 200 /;
}
my $n1 = sets();
my $ticks = 3 * (int(time() - $t0) + 2);

is($ok, 100, 'requests: served');
cmp_ok($n1 - $n0, '<=', $ticks, 'requests: no store write per request');

# supervise stopped: stale, then (its key gone) missing under --expect

kill 'STOP', $sv;
my $stopped = time();

$res = status_until(sub { $_[0]{rc} != 0 });
is($res->{rc}, 6, 'supervise stopped: exit 6');
cmp_ok(time() - $stopped, '<', 7,
	'supervise stopped: stale after 3 periods (and a status run)');
like($res->{err}, qr/stale: supervise sv-test: its last heartbeat is \d+ s old/,
	'supervise stopped: named stale');

kill 'CONT', $sv;
kill 'TERM', $sv;
waitpid($sv, 0);
$t->{_daemons} = [ grep { $_ != $sv } @{$t->{_daemons}} ];
redis_cli($t, 'DEL', 'bottle:heartbeat:supervise:sv-test');

$res = status('--expect', 'supervise=1');
ok($res->{rc} == 6 && $res->{err} =~ /missing: 1 supervise expected up, 0 are/,
	'supervise gone: missing under --expect');

# the store down

redis_stop($t);

$res = ctl_run($t, 'status');
ok($res->{rc} == 3 && $res->{out} =~ /DOWN/
	&& $res->{err} =~ /cannot reach the store redis:\/\/127\.0\.0\.1:$RP/,
	'store down: said so, exit 3')
	or diag(explain($res));

###############################################################################
