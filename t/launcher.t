#!/usr/bin/perl

# Tests for scripts/bottle-gateway: the shipped nginx-conf/ started as a
# throwaway gateway, used with curl as an agent would, reloaded and
# stopped.  The launcher runs nginx as a daemon of its own, so the test
# stops it itself at the end, whatever happened.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use File::Path qw/ rmtree /;
use IO::Socket::INET;
use JSON::PP qw//;
use POSIX qw//;
use Time::HiRes qw/ time sleep /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

# only for its test directory, ports and daemons: nginx is the launcher's

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle dnsmasq/)
	->has_daemon('curl');

my $d = $t->testdir();
my $gw = "$d/gw";
my $SCRIPT = "$Test::Nginx::REPO/scripts/bottle-gateway";

my $TOKEN = 'agent-token-0123456789';
my $SECRET = 'secret-api-value-1';

my $GWPORT = port(8080);
my $UP = port(8081);
my $DNS = port(8053);

my $gw_pid;		# the master the launcher started, once known

# whatever happens, the gateway goes: END blocks run on die and exit (a
# signal becomes an exit), before Test::Nginx removes the directory

$SIG{INT} = $SIG{TERM} = $SIG{HUP} = sub { exit 1; };

END {
	local ($?, $@, $!);
	kill_gateway();
}

plan(skip_all => "no $SCRIPT") unless -x $SCRIPT;

fake_upstream($t, port => $UP, name => 'api');
dns_start($t, port => $DNS, hosts => {
	'api.internal.test' => '127.0.0.1',
	'later.internal.test' => '127.0.0.1',
});

my $policy = write_policy($t, 'policy.json', policy());

plan(tests => 60);

###############################################################################

# start

# when another program took the port since port() handed it out, the
# launcher fails with EADDRINUSE: a new port and a fresh directory

my ($rc, $out);

for my $try (1 .. 4) {
	($rc, $out) = gateway('start', '--dir', $gw, '--policy', $policy,
		'--listen', "127.0.0.1:$GWPORT", '--resolver', "127.0.0.1:$DNS",
		'--module', $Test::Nginx::MODULE, '--nginx', $Test::Nginx::NGINX,
		'--log-level', 'info');

	last if $rc == 0 || $try == 4
		|| $out !~ /bind\(\) to \S+:$GWPORT failed \(98: /;

	$GWPORT = Test::Nginx::renew_port($GWPORT);
	rmtree($gw);
}

$gw_pid = $1 if $out =~ /^pid: (\d+)$/m;

is($rc, 0, 'start: exit status 0') or diag($out);
like($out, qr/^proxy: http:\/\/127\.0\.0\.1:$GWPORT$/m, 'start: proxy URL');
ok(defined $gw_pid, 'start: pid printed');
like(cmdline($gw_pid), qr/^nginx: master process /, 'start: pid is a live master');
is(pidfile(), $gw_pid, 'start: pid file');
ok($t->waitforsocket("127.0.0.1:$GWPORT"), 'start: listening');

###############################################################################

# an allowed request: the route's credential instead of the agent's

my $r = curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
	'-H', 'Authorization: Bearer agent-own',
	"http://api.internal.test:$UP/x?q=1");

like($r, qr/^HTTP\/1\.1 200 /, 'allowed: 200');
like($r, qr/\r\n\r\nupstream api ok\n\z/, 'allowed: upstream body');

my $req = upstream_requests($t, 'api')->[-1] // {};
is($req->{target}, '/x?q=1', 'allowed: reached upstream');
is_deeply([ header_value($req, 'Authorization') ], [ "Bearer $SECRET" ],
	'allowed: route\'s Authorization only');
is(header_value($req, 'Host'), "api.internal.test:$UP", 'allowed: Host');
ok(!defined header_value($req, 'Proxy-Authorization')
	&& !defined header_value($req, 'Proxy-Connection'),
	'allowed: no proxy headers upstream');

ok(wait_for_log('access.log',
	qr/"GET api\.internal\.test\/x" 200 bottle=agent host=api\.internal\.test verdict=allowed rule=none /),
	'allowed: access.log');
ok(wait_for_log('stream.log',
	qr/ 200 bottle=\S+ host=api\.internal\.test verdict=handoff rule=none refused=0 up=unix:\Q$gw\E\/run\/plain\.sock /),
	'allowed: stream.log');

# an unlisted host (with a credential of the agent's in the query)

my $connects = upstream_connects($t, 'api');
my $mark = log_mark();

$r = curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
	'http://unlisted.test/y?access_token=agent-query-secret');

like($r, qr/^HTTP\/1\.1 403 /, 'unlisted: 403');
like($r, qr/^X-Bottle-Rule: no_route\r$/m, 'unlisted: rule header');
like($r, qr/\r\n\r\n.*rule: no_route.*host: unlisted\.test\n.*the host is not on this bottle's allowlist/s,
	'unlisted: reason in the body');

my @lines = refusal_lines($mark);
is(scalar @lines, 1, 'unlisted: one refusal logged');
like($lines[0] // '', qr/^\Qbottle="agent" host="unlisted.test" rule="no_route" status=403 reason="the host is not on this bottle's allowlist" client=127.0.0.1\E$/,
	'unlisted: refusal line');

unlike(substr(read_log('error.log'), $mark), qr/agent-query-secret/,
	'unlisted: agent\'s query credential not in the error log');

# the route's secret in a refused path, as it is and in hex: the access
# log writes the path with the secret masked, as the full log does

my $HEX = unpack('H*', $SECRET);

like(curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
	"http://api.internal.test:$UP/leak/$SECRET"),
	qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: dlp\r$/ms, 'secret in the path: 403 dlp');
like(curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
	"http://api.internal.test:$UP/hex/$HEX"),
	qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: dlp\r$/ms, 'its hex in the path: 403 dlp');

ok(wait_for_log('access.log',
	qr/"GET api\.internal\.test\/leak\/\*{18}" 403 bottle=agent .*verdict=refused rule=dlp /),
	'secret in the path: masked in access.log');
ok(wait_for_log('access.log',
	qr/"GET api\.internal\.test\/hex\/\*{36}" 403 bottle=agent .*verdict=refused rule=dlp /),
	'its hex in the path: masked in access.log');
unlike(read_log('access.log'), qr/\Q$SECRET\E|\Q$HEX\E/i,
	'access.log: neither the secret nor its hex');

# no token

$mark = log_mark();
$r = curl('-x', "http://127.0.0.1:$GWPORT", "http://api.internal.test:$UP/z");

like($r, qr/^HTTP\/1\.1 407 /, 'no token: 407');
like($r, qr/^Proxy-Authenticate: Basic realm="bottle gateway"\r$/m,
	'no token: challenge');
like($r, qr/^X-Bottle-Rule: identity\r$/m, 'no token: rule header');
like(refusals($mark), qr/^bottle="-" host="api\.internal\.test" rule="identity" status=407 /,
	'no token: refusal logged');

# a wrong token

$r = curl('-x', "http://u:wrong-token-0123456789\@127.0.0.1:$GWPORT",
	"http://api.internal.test:$UP/z");
like($r, qr/^HTTP\/1\.1 407 .*^X-Bottle-Rule: identity\r$/ms, 'wrong token: 407');

is(upstream_connects($t, 'api'), $connects, 'refused: nothing upstream');

###############################################################################

# request bodies: one of up to 512 KiB (over HTTP/1.1 nginx takes a
# quarter more) is scanned in memory, a larger one from a temporary file
# (nginx warns when it writes one); both reach the upstream whole

for my $kib (300, 1000) {
	my $body = join('', map { "{\"role\": \"user\", \"n\": $_}\n" }
		1 .. 60000);
	$body = substr($body, 0, $kib * 1024);
	$t->write_file("body$kib.json", $body);

	$mark = log_mark();
	$r = curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
		'--data-binary', "\@$d/body$kib.json",
		"http://api.internal.test:$UP/body$kib");
	like($r, qr/^HTTP\/1\.1 200 /, "body $kib KiB: 200");

	$req = upstream_requests($t, 'api')->[-1] // {};
	ok(($req->{target} // '') eq "/body$kib"
		&& ($req->{body} // '') eq $body, "body $kib KiB: upstream got it whole");

	my $temp = substr(read_log('error.log'), $mark)
		=~ /a client request body is buffered to a temporary file/;
	ok($kib > 512 ? $temp : !$temp, "body $kib KiB: "
		. ($kib > 512 ? 'from a temporary file' : 'in memory'));
}

###############################################################################

# reload: a route added

$r = curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
	"http://later.internal.test:$UP/later");
like($r, qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: no_route\r$/ms,
	'before reload: later.internal.test refused');

write_policy($t, 'policy.json', policy({ host => 'later.internal.test',
	port => $UP, internal => JSON::PP::true() }));

$mark = log_mark();
my @old = children($gw_pid);

($rc, $out) = gateway('reload', '--dir', $gw);
is($rc, 0, 'reload: exit status 0') or diag($out);
like($out, qr/^reloaded$/m, 'reload: says so');
ok(wait_reload($mark, @old), 'reload: new workers, old ones retired');
is(pidfile(), $gw_pid, 'reload: same master');

$r = curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
	"http://later.internal.test:$UP/later");
like($r, qr/^HTTP\/1\.1 200 /, 'after reload: route added');
$req = upstream_requests($t, 'api')->[-1] // {};
is($req->{target}, '/later', 'after reload: reached upstream');
is(header_value($req, 'Authorization'), undef,
	'after reload: no auth on that route');

# reload with a broken policy: refused, the gateway keeps serving

write_policy($t, 'policy.json', policy({ host => 'later.internal.test',
	port => $UP, internal => JSON::PP::true(), colour => 1 }));

$mark = log_mark();
@old = children($gw_pid);

($rc, $out) = gateway('reload', '--dir', $gw);
isnt($rc, 0, 'broken reload: exit status');
like($out, qr/\Q$policy\E: bottle "agent": routes\[1\]: unknown field "colour"/,
	'broken reload: file, bottle and field named');
unlike($out, qr/\Q$TOKEN\E|\Q$SECRET\E/, 'broken reload: no secret');
unlike($out, qr/^reloaded$/m, 'broken reload: not reloaded');
my %before = map { $_ => 1 } @old;
is(join(' ', grep { !$before{$_} } children($gw_pid)), '',
	'broken reload: no new workers');

$r = curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
	"http://later.internal.test:$UP/still");
like($r, qr/^HTTP\/1\.1 200 /, 'broken reload: old policy still serves');

###############################################################################

# stop

my @last = children($gw_pid);

($rc, $out) = gateway('stop', '--dir', $gw);
is($rc, 0, 'stop: exit status 0') or diag($out);
like($out, qr/^stopped$/m, 'stop: says so');
ok(!alive($gw_pid), 'stop: master gone');
ok(@last && !(grep { alive($_) } @last), 'stop: workers gone');
ok(!gateway_answers(), 'stop: port closed');
ok(!-e "$gw/run/nginx.pid", 'stop: pid file removed');

($rc, $out) = gateway('stop', '--dir', $gw);
ok($rc == 0 && $out =~ /not running/, 'stop again: not running');

# nothing worse than the refusals and the broken reload in the error log
# (and nginx's tries at start on a port another program held for a
# moment, 5 of them 500 ms apart, when a later one got it)

my @alerts = grep { !/bottle_policy: \Q$policy\E: bottle "agent": routes\[1\]: unknown field/
		&& !/\[emerg\] .*bind\(\) to 127\.0\.0\.1:$GWPORT failed \(98: / }
	read_log('error.log') =~ /^.*\[(?:alert|crit|emerg)\].*$/gm;
is(join("\n", @alerts), '', 'no alerts');

unlike(read_log('error.log') . read_log('access.log') . read_log('stream.log'),
	qr/\Q$TOKEN\E|\Q$SECRET\E/, 'no secret in the logs');

###############################################################################

sub policy {
	my (@more) = @_;
	return { bottles => [ {
		id => 'agent',
		token => $TOKEN,
		egress_tokens => { API => $SECRET },
		routes => [
			{ host => 'api.internal.test', port => $UP,
				internal => JSON::PP::true(),
				methods => [ 'GET', 'POST' ],
				auth => { type => 'bearer',
					value => 'secret:API' } },
			@more,
		],
	} ] };
}

# run a program, stdout and stderr to a file (a daemon it leaves behind
# cannot hold a pipe of ours open); (exit status, output)

sub run_cmd {
	my (@cmd) = @_;

	my $file = "$d/cmd.out";
	my $pid = fork();
	die "fork: $!\n" unless defined $pid;

	if ($pid == 0) {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>', $file;
		open STDERR, '>&', \*STDOUT;
		exec(@cmd) or POSIX::_exit(127);
	}

	waitpid($pid, 0);
	my $rc = $? >> 8;

	return ($rc, $t->read_file($file));
}

# the gateway answers on its port: a refusal with X-Bottle-Rule (another
# program may listen there once the gateway let go of it)

sub gateway_answers {
	my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$GWPORT",
		Timeout => 2) or return 0;
	my $r = proxy_request("127.0.0.1:$GWPORT",
		"CONNECT x.test:443 HTTP/1.1\r\nHost: x.test:443\r\n\r\n",
		socket => $c, timeout => 2) // '';
	return $r =~ /^X-Bottle-Rule:/mi ? 1 : 0;
}

sub gateway {
	my (@args) = @_;
	local $ENV{LD_PRELOAD} = $ENV{TEST_NGINX_PRELOAD}
		if $ENV{TEST_NGINX_PRELOAD};
	local $ENV{ASAN_OPTIONS} = $ENV{ASAN_OPTIONS} // 'detect_leaks=0'
		if $ENV{TEST_NGINX_PRELOAD};
	my ($rc, $out) = run_cmd($SCRIPT, @args);
	log_in("bottle-gateway @args: exit $rc\n$out");
	return ($rc, $out);
}

# curl as an agent runs it (no ~/.curlrc, no NO_PROXY); the response
# with its headers

sub curl {
	my (@args) = @_;
	my ($rc, $out) = run_cmd('curl', '-q', '-s', '-i', '--noproxy', '',
		'--max-time', '10', @args);
	log_in("curl @args: exit $rc\n$out");
	return $out;
}

sub read_log {
	my ($name) = @_;
	my $f = "$gw/logs/$name";
	return -e $f ? $t->read_file($f) : '';
}

sub log_mark {
	return -s "$gw/logs/error.log" || 0;
}

sub refusal_lines {
	my ($mark) = @_;
	return substr(read_log('error.log'), $mark)
		=~ /bottle refused: (.*)$/mg;
}

sub refusals {
	my ($mark) = @_;
	return join "\n", refusal_lines($mark);
}

# a log line is written when the request or session ends, which may be
# just after curl has its answer

sub wait_for_log {
	my ($name, $re) = @_;
	my $deadline = time() + 5;
	while (time() < $deadline) {
		return 1 if read_log($name) =~ $re;
		sleep 0.05;
	}
	diag("$name:\n" . read_log($name));
	return 0;
}

# after "bottle-gateway reload": the master re-read the configuration,
# started new workers, and every old one stopped accepting

sub wait_reload {
	my ($mark, @old) = @_;
	my $deadline = time() + 10;

	while (time() < $deadline) {
		my $log = substr(read_log('error.log'), $mark);
		return 0 if $log =~ /\[emerg\]/;

		if ($log =~ /reconfiguring.*start worker process/s) {
			my @pending = grep {
				my $p = $_;
				$log !~ /\b$p#\d+: (?:gracefully shutting down|exiting)/
				&& alive($p);
			} @old;
			return 1 unless @pending;
		}

		sleep 0.05;
	}

	diag("reload did not finish:\n" . substr(read_log('error.log'), $mark));
	return 0;
}

sub pidfile {
	my $f = "$gw/run/nginx.pid";
	return undef unless -e $f;
	my $p = $t->read_file($f);
	$p =~ s/\s+//g;
	return $p;
}

sub cmdline {
	my ($pid) = @_;
	return '' unless defined $pid;
	open my $fh, '<', "/proc/$pid/cmdline" or return '';
	local $/;
	my $c = <$fh> // '';
	$c =~ s/\0+$//;
	$c =~ s/\0/ /g;
	return $c;
}

# alive, and not a zombie

sub alive {
	my ($pid) = @_;
	return 0 unless defined $pid && kill(0, $pid);
	open my $fh, '<', "/proc/$pid/stat" or return 0;
	my $stat = <$fh> // return 0;
	return $stat !~ /\)\s+Z\s/;
}

sub children {
	my ($pid) = @_;
	return () unless defined $pid;
	my @kids;
	opendir my $dh, '/proc' or return ();
	for my $p (grep { /^\d+$/ } readdir $dh) {
		open my $fh, '<', "/proc/$p/stat" or next;
		my $stat = <$fh> // next;
		push @kids, $p if $stat =~ /\)\s+[^Z]\s+(\d+)/ && $1 == $pid;
	}
	return sort { $a <=> $b } @kids;
}

# stop the gateway this test started: the launcher first, then signals to
# that master and its workers only

sub kill_gateway {
	my $pid = $gw_pid // pidfile();
	return unless defined $pid && $pid =~ /^\d+$/;
	return unless alive($pid) && cmdline($pid) =~ /^nginx: master process .*\Q$gw\E/;

	my @kids = children($pid);

	eval { run_cmd($SCRIPT, 'stop', '--dir', $gw); };

	for my $sig ('TERM', 'KILL') {
		last unless alive($pid);
		kill $sig, $pid;
		my $deadline = time() + 5;
		sleep 0.05 while alive($pid) && time() < $deadline;
	}

	for my $k (@kids) {
		kill 'KILL', $k if alive($k);
	}
}

###############################################################################
