#!/usr/bin/perl

# Tests for a store behind Redis Sentinel (docs/control-plane.md, "Running
# Redis for more than one host"): one primary, one replica and three
# sentinels on loopback; the gateway, bottlectl and the journal reach the
# store through a redis-sentinel:// URL.  The primary is killed while
# agents make requests: the gateway serves its snapshot, attaches to the
# promoted replica within the failover's time + 2 s (printed), applies a
# change bottlectl makes through the sentinels after the failover, and no
# first contact acknowledged to a delivery: "required" request is lost
# (WAIT 1: with the replica's link cut, such a request is refused).
# supervise-helper follows too; then a failover asked of Sentinel, and a
# primary made a replica by hand (READONLY, then ROLE) are followed.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;
use Test::Bottle::Store;

use JSON::PP qw/ decode_json /;
use POSIX qw/ WNOHANG /;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $ALICE = 'alice-token-0123456789';
my $CAROL = 'carol-token-0123456789ab';
my $BOB = 'bob-token-9876543210xyz';

my $PA = port(8090);
my $PB = port(8091);
my @PS = (port(8092), port(8093), port(8094));
my $P1 = port(8081);

my $SURL = 'redis-sentinel://' . join(',', map { "127.0.0.1:$_" } @PS)
	. '/bottlestore';

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	main => 'worker_processes 1;',
	policy => $SURL,
	global => "bottle_audit_timeout 1s;"));

fake_upstream($t, port => $P1, name => 'one');

###############################################################################

# a redis-server of ours: a primary, a replica or a sentinel (its config
# file is written here: a sentinel rewrites it)

sub server {
	my ($name, $port, @conf) = @_;
	my $d = $t->testdir();
	my $sentinel = grep { /^sentinel / } @conf;

	open my $fh, '>', "$d/$name.conf" or die "$name.conf: $!\n";
	print $fh join("\n", "port $port", 'bind 127.0.0.1',
		'protected-mode no', "dir $d", "logfile $d/$name.log",
		$sentinel ? () : ('save ""', 'appendonly no',
			"dbfilename $name.rdb", 'repl-diskless-sync no'),
		@conf), "\n";
	close $fh;

	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', "$d/$name.stderr";
		open STDERR, '>&', \*STDOUT;
		exec($Test::Bottle::REDIS, "$d/$name.conf",
			$sentinel ? '--sentinel' : ()) or die "exec: $!\n";
	});
	my $pid = $t->last_daemon_pid();

	my $deadline = time() + 10;
	while (time() < $deadline) {
		my $log = -e "$d/$name.log" ? $t->read_file("$name.log") : '';
		return $pid if $log =~ /Ready to accept connections|monitor master/;
		die "$name exited\n" if waitpid($pid, WNOHANG) != 0;
		sleep 0.05;
	}
	die "$name does not start\n";
}

sub cli {
	my ($port, @args) = @_;
	open my $fh, '-|', $Test::Bottle::REDIS_CLI, '--raw', '-h',
		'127.0.0.1', '-p', $port, @args or die "redis-cli: $!\n";
	local $/;
	my $out = <$fh> // '';
	close $fh;
	return $out;
}

sub primary_of {
	my ($port) = @_;
	my ($h, $p) = split /\n/, cli($port, 'SENTINEL',
		'get-master-addr-by-name', 'bottlestore');
	return $p // '';
}

# what the sentinels did (their logs' events), for a failure's diagnosis

sub sentinel_events {
	my $d = $t->testdir();
	return join '', map {
		my $n = $_;
		map { "sentinel$n: $_" } grep {
			/[+-](tilt|failover|switch-master|convert-to-slave|promoted|
				elected|try-failover|selected-slave|role-change)/x
		} split /^/m, (-e "$d/sentinel$n.log"
			? $t->read_file("sentinel$n.log") : '')
	} 0 .. 2;
}

sub carol {
	my ($n) = @_;
	return proxy_request(8080, "GET http://127.0.0.$n:$P1/c HTTP/1.1\r\n"
		. "Host: 127.0.0.$n:$P1\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $CAROL) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

# supervise-helper on the sentinel URL: an MCP initialize for a bottle,
# which the helper looks up in the store (its status code)

my $HELPER = $ENV{SUPERVISE_HELPER} // "$FindBin::Bin/../build/supervise-helper";
$HELPER = "$FindBin::Bin/../$HELPER" if $HELPER !~ m!^/!;

sub helper {
	my $d = $t->testdir();
	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', "$d/helper.stderr";
		open STDERR, '>&', \*STDOUT;
		exec($HELPER, '--listen', "unix:$d/helper.sock",
			'--store', $SURL) or die "exec: $!\n";
	});
	for (1 .. 100) {
		last if -S "$d/helper.sock";
		sleep 0.05;
	}
}

sub initialize {
	my ($bottle) = @_;
	my $d = $t->testdir();
	open my $fh, '-|', 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}',
		'--max-time', '20', '--unix-socket', "$d/helper.sock",
		'-H', 'Accept: application/json, text/event-stream',
		'-H', 'Content-Type: application/json', '-H', "X-Bottle-Id: $bottle",
		'--data-binary', '{"jsonrpc":"2.0","id":1,"method":"initialize",'
		. '"params":{"protocolVersion":"2025-06-18","capabilities":{},'
		. '"clientInfo":{"name":"t","version":"1"}}}',
		'http://supervise/' or die "curl: $!\n";
	my $status = <$fh> // '';
	close $fh;
	return $status;
}

sub contacts {
	my ($port) = @_;
	my %seen;
	for my $l (split /\n/, cli($port, 'XRANGE', 'bottle:audit', '-', '+')) {
		next unless $l =~ /^\{/;
		my $e = eval { decode_json($l) } or next;
		$seen{$e->{host}} = 1 if $e->{type} eq 'egress.first_contact'
			&& $e->{bottle} eq 'carol';
	}
	return \%seen;
}

###############################################################################

my $pa = server('primary', $PA);
my $rb = server('replica', $PB, "replicaof 127.0.0.1 $PA");
for my $i (0 .. 2) {
	server("sentinel$i", $PS[$i],
		"sentinel monitor bottlestore 127.0.0.1 $PA 2",
		'sentinel down-after-milliseconds bottlestore 1000',
		'sentinel failover-timeout bottlestore 4000',
		'sentinel parallel-syncs bottlestore 1');
}

# the replica in sync, the sentinels know it and each other before the
# test starts

my $deadline = time() + 20;
while (time() < $deadline) {
	last if cli($PB, 'INFO', 'replication') =~ /master_link_status:up/;
	sleep 0.1;
}
while (time() < $deadline) {
	my $ready = grep {
		my $m = cli($_, 'SENTINEL', 'master', 'bottlestore');
		$m =~ /num-slaves\n1\n/ && $m =~ /num-other-sentinels\n2\n/
	} @PS;
	last if $ready == 3;
	sleep 0.2;
}

# bottlectl and redis_cli() of Test::Bottle: through the sentinels, and
# straight to the primary

$t->{_bottle_redis} = { port => $PA, url => $SURL, name => 'redis',
	pid => $pa };

$t->run()->plan(25);

store_setup($t, { port => $PA }, $P1, $ALICE);

###############################################################################

ok(wait_for(sub { $t->read_file('error.log') }, qr/primary "bottlestore" at 127\.0\.0\.1:$PA/)
	=~ qr/store \S+ connection up, primary "bottlestore" at 127\.0\.0\.1:$PA/,
	'gateway: the primary a sentinel named');

store_put($t,
	{ id => 'alice', token => $ALICE,
		routes => [ { host => '127.0.0.1', port => $P1 } ] },
	{ id => 'carol', token => $CAROL, audit => { delivery => 'required' },
		routes => [ map { { host => "127.0.0.$_", port => $P1 } }
			1 .. 200 ] });

like(wait_for(sub { get($ALICE, '/') }, qr/ 200 /), qr/^HTTP\/1\.1 200 /,
	'bottlectl through the sentinels: alice served');

helper();
is(initialize('alice'), 200, 'supervise-helper through the sentinels');

# first contacts acknowledged before the failover

my (%acked, %refused);
my $host = 1;
for (1 .. 5) {
	my $r = carol($host);
	($r =~ /X-Bottle-Rule: audit/ ? $refused{$host} : $acked{$host}) = 1;
	$host++;
}
is(scalar keys %acked, 5, 'required: first contacts acknowledged');

# the replica stopped, and its link cut (what the primary sent before
# would still be read from the socket): a first contact the primary has
# alone is not acknowledged (WAIT 1 times out), and the request is refused

kill 'STOP', $rb;
cli($PA, 'CLIENT', 'KILL', 'TYPE', 'replica');
my $r = carol($host);
like($r, qr/^HTTP\/1\.1 503 .*X-Bottle-Rule: audit/s,
	'required, no replica: refused');
ok($t->read_file('error.log') =~
	qr/host="127\.0\.0\.$host" rule="audit" status=503 reason="[^"]*no replica acknowledged it in time"/,
	'required, no replica: the reason logged');
($r =~ /X-Bottle-Rule: audit/ ? $refused{$host} : $acked{$host}) = 1;
$host++;

# the primary killed: alice served from the snapshot, carol's new hosts
# acknowledged or refused, until the gateway is on the promoted replica

my $t0 = time();
kill 'KILL', $pa;
waitpid($pa, 0);
$t->{_daemons} = [ grep { $_ != $pa } @{$t->{_daemons}} ];
kill 'CONT', $rb;

# the agents in a process of their own, so that the switch and the
# attachment are seen to within a poll (a required request may wait 1 s)

my $agents = $t->testdir() . '/agents';
my $kid = fork() // die "fork: $!\n";
if ($kid == 0) {
	open my $fh, '>', $agents or die;
	$fh->autoflush(1);
	my ($i, $stop) = (0, 0);
	$SIG{TERM} = sub { $stop = 1 };
	while (!$stop) {
		$i++;
		print $fh 'alice ', (get($ALICE, "/a$i") =~ /^HTTP\/1\.1 200 /
			? 'ok' : 'bad'), "\n";
		my $h = $host + $i;
		next if $h >= 200;
		print $fh "carol $h ", (carol($h) =~ /X-Bottle-Rule: audit/
			? 'refused' : 'acked'), "\n";
		sleep 0.05;
	}
	POSIX::_exit(0);
}

my ($switched, $attached) = (0, 0);
my $re = qr/connection up again, primary "bottlestore" at 127\.0\.0\.1:$PB/;

# 60 s: a sentinel stalled 2 s on a loaded machine stops acting for 30 s
# (TILT), and one that gives up a failover tries again 8 s on

while (time() < $t0 + 60 && !($switched && $attached)) {
	$switched ||= time() if grep { primary_of($_) eq $PB } @PS;
	$attached ||= time() if $t->read_file('error.log') =~ $re;
	sleep 0.02;
}

sleep 0.5;
kill 'TERM', $kid;
waitpid($kid, 0);

my ($n, $bad) = (0, 0);
for (split /\n/, $t->read_file('agents')) {
	if (/^alice (\w+)/) {
		$n++;
		$bad++ if $1 ne 'ok';
	} elsif (/^carol (\d+) (\w+)/) {
		($2 eq 'refused' ? $refused{$1} : $acked{$1}) = 1;
		$host = $1 + 1 if $1 >= $host;
	}
}

ok($switched, 'the sentinels promoted the replica') or diag(sentinel_events());
ok($attached, 'gateway: on the promoted replica');

my $failover = ($switched || time()) - $t0;
my $late = ($attached || time()) - ($switched || time());
diag(sprintf('failover %.2f s after the kill; gateway attached %.2f s '
	. 'after the switch', $failover, $late));

# the switch and the attachment are seen by polls every 20 ms (and the
# time they take): 2 s, and as much again for a loaded machine

cmp_ok($late, '<', 4, 'attached within 2 s of the switch (and slack)');
is($bad, 0, "alice served all along ($n requests)");

# a change made through the sentinels after the failover

$t->{_bottle_redis}{port} = $PB;

store_put($t, { id => 'bob', token => $BOB,
	routes => [ { host => '127.0.0.1', port => $P1 } ] });
like(wait_for(sub { get($BOB, '/') }, qr/ 200 /), qr/^HTTP\/1\.1 200 /,
	'a bottle put after the failover: served');
is(initialize('bob'), 200, 'supervise-helper: on the new primary');

# every acknowledged first contact is in the promoted replica's journal

my $new = contacts($PB);
my @lost = grep { !$new->{"127.0.0.$_"} } sort { $a <=> $b } keys %acked;
is("@lost", '', 'no acknowledged first contact lost ('
	. (keys %acked) . ' acknowledged, ' . (keys %refused) . ' refused)');

# the old primary back: Sentinel makes it the new one's replica, and a
# required first contact is acknowledged again

server('primary', $PA);
$deadline = time() + 20;
while (time() < $deadline) {
	last if cli($PA, 'INFO', 'replication') =~ /master_link_status:up/;
	sleep 0.2;
}

$r = carol($host);
unlike($r, qr/X-Bottle-Rule: audit/, 'required: acknowledged after');
ok(contacts($PB)->{"127.0.0.$host"}, 'required: in the new journal');

# bottlectl reads through the sentinels too

# a failover asked of Sentinel: the old primary stays up, demoted to a
# replica (Sentinel closes its clients); the gateway follows to the old
# one promoted again, and no READONLY reaches an agent

# Sentinel gives up a failover that outlasts failover-timeout (4 s here),
# as one may on a loaded machine: the primary stays, and the request is
# made again (Sentinel's answer and the event in its log shown)

my $from = length($t->read_file('error.log'));
my $asked = time();
my $tries = 0;
$switched = 0;
while (time() < $asked + 90) {
	if (primary_of($PS[1]) eq $PA) {
		$switched = time();
		last;
	}
	if ($tries < 4 && cli($PS[1], 'SENTINEL', 'master', 'bottlestore')
		!~ /failover_in_progress/)
	{
		my $said = cli($PS[1], 'SENTINEL', 'FAILOVER', 'bottlestore');
		$said =~ s/\s+$//;
		diag("asked failover: asked again (Sentinel said \"$said\")")
			if $tries++ || $said ne 'OK';
	}
	sleep 0.1;
}
ok($switched, 'asked failover: the sentinels switched')
	or diag(sentinel_events());
my $back = qr/connection up again, primary "bottlestore" at 127\.0\.0\.1:$PA/;
ok(wait_for(sub { substr($t->read_file('error.log'), $from) }, $back, 45)
	=~ $back, 'asked failover: gateway on the new primary')
	or diag(sentinel_events());
diag(sprintf('asked failover: switched %.2f s after the request, gateway '
	. 'on the new primary %.2f s after it', ($switched || time()) - $asked,
	time() - $asked));
$t->{_bottle_redis}{port} = $PA;

store_put($t, { id => 'dave', token => 'dave-token-0123456789',
	routes => [ { host => '127.0.0.1', port => $P1 } ] });
like(wait_for(sub { get('dave-token-0123456789', '/') }, qr/ 200 /, 30),
	qr/^HTTP\/1\.1 200 /, 'asked failover: a bottle put after it served');

$host++;
$r = wait_for(sub {
	my $r = carol($host);
	($r =~ /X-Bottle-Rule: audit/ ? $refused{$host} : $acked{$host}) = 1;
	$host++;
	return $r;
}, qr/^HTTP\/1\.1 (200|502) /, 20);
unlike($r, qr/X-Bottle-Rule: audit/,
	'asked failover: a required first contact acknowledged');

$new = contacts($PA);
@lost = grep { !$new->{"127.0.0.$_"} } sort { $a <=> $b } keys %acked;
is("@lost", '', 'asked failover: no acknowledged first contact lost ('
	. (keys %acked) . ' acknowledged, ' . (keys %refused) . ' refused)');
unlike(substr($t->read_file('error.log'), $from), qr/READONLY.*refused an event|refused an event.*READONLY/,
	'asked failover: no journal event refused READONLY');

# the primary made a replica behind the sentinels' back (of nothing that
# answers): the journal's next write is answered READONLY, the connection
# goes, and a primary that ROLE says is a replica is not taken; once it is
# a primary again, the gateway is back on it

$from = length($t->read_file('error.log'));
cli($PA, 'REPLICAOF', '127.0.0.1', '1');
proxy_request(8080, "GET http://127.0.0.9:$P1/ HTTP/1.1\r\n"
	. "Host: 127.0.0.9:$P1\r\n"
	. 'Proxy-Authorization: ' . basic('agent', $ALICE) . "\r\n"
	. "Connection: close\r\n\r\n");
my $ro = qr/store audit connection lost \(the primary is not writable \(READONLY or LOADING\)\)/;
ok(wait_for(sub { substr($t->read_file('error.log'), $from) }, $ro, 10)
	=~ $ro, 'READONLY: the journal connection dropped');
my $role = qr/127\.0\.0\.1:$PA is not the primary any more/;
ok(wait_for(sub { substr($t->read_file('error.log'), $from) }, $role, 10)
	=~ $role, 'a replica by ROLE: not taken');
cli($PA, 'REPLICAOF', 'NO', 'ONE');
my $again = qr/is not the primary any more(?s:.*)store audit connection up again, primary "bottlestore" at 127\.0\.0\.1:$PA/;
ok(wait_for(sub { substr($t->read_file('error.log'), $from) }, $again, 10)
	=~ $again, 'a primary again: the gateway back on it');

like(Test::Bottle::bottlectl($t, $t->{_bottle_redis}, 'policy', 'get', 'bob'),
	qr/"id"\s*:\s*"bob"/, 'bottlectl get: the new primary');

###############################################################################
