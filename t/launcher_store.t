#!/usr/bin/perl

# Launching the shipped nginx-conf/ against a control plane's store
# (issue 27, item 7): `scripts/bottle-gateway start --store URL`,
# `make run POLICY=redis://... LISTEN=ADDR:PORT`, and a --module path
# relative to the caller's directory.  Each gateway serves a bottle the
# store holds, through curl as an agent would use it, and is stopped.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Cwd qw//;
use File::Spec;
use POSIX qw//;
use Time::HiRes qw/ time sleep /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle dnsmasq/)
	->has_daemon('curl')->has_daemon('redis-server');

my $d = $t->testdir();
my $REPO = $Test::Nginx::REPO;
my $SCRIPT = "$REPO/scripts/bottle-gateway";

my $TOKEN = 'agent-token-0123456789';
my $FTOKEN = 'file-token-0123456789';
my $UP = port(8081);
my $DNS = port(8053);
my $RP = port(8090);

my %gw;		# dir => port, for the gateways this test started

$SIG{INT} = $SIG{TERM} = $SIG{HUP} = sub { exit 1; };

END {
	local ($?, $@, $!);
	kill_gateway($_) for keys %gw;
}

plan(skip_all => "no $SCRIPT") unless -x $SCRIPT;

fake_upstream($t, port => $UP, name => 'api');
dns_start($t, port => $DNS, hosts => { 'api.internal.test' => '127.0.0.1' });

my $redis = redis_start($t, port => $RP);

store_put($t, { id => 'agent', token => $TOKEN,
	routes => [ { host => 'api.internal.test', port => $UP,
		internal => JSON::PP::true(), methods => [ 'GET' ] } ] });

# a policy file, for the relative --module alone
my $policy = write_policy($t, 'policy.json', { bottles => [ { id => 'file',
	token => $FTOKEN, routes => [ { host => 'api.internal.test',
		port => $UP, internal => JSON::PP::true(),
		methods => [ 'GET' ] } ] } ] });

# the module as a path relative to this directory (t/)
my $REL = File::Spec->abs2rel(Cwd::abs_path($Test::Nginx::MODULE));

plan(tests => 16);

###############################################################################

# bottle-gateway start --store URL, with a relative --module

my ($rc, $out) = start('gw1', '--store', $redis->{url},
	'--module', $REL);

is($rc, 0, '--store: start exit 0') or diag($out);
like($out, qr/^proxy: http:\/\/127\.0\.0\.1:$gw{"$d\/gw1"}$/m,
	'--store: the proxy URL');
like($t->read_file('gw1/conf/bottle-main.conf'),
	qr/^bottle_policy +\Q$redis->{url}\E zone=/m,
	'--store: bottle_policy is the store');
like(via('gw1', $TOKEN, '/s1'), qr/^HTTP\/1\.1 200 .*upstream api ok/s,
	'--store: the store\'s bottle served');
is((upstream_requests($t, 'api')->[-1] // {})->{target}, '/s1',
	'--store: reached the upstream');

# a bottle put later is served without a reload

store_put($t, { id => 'later', token => 'later-token-0123456789',
	routes => [ { host => 'api.internal.test', port => $UP,
		internal => JSON::PP::true(), methods => [ 'GET' ] } ] });
ok(wait_for(sub { via('gw1', 'later-token-0123456789', '/s2')
	=~ /^HTTP\/1\.1 200 /s }), '--store: a bottle put later is served');

($rc, $out) = gateway('stop', '--dir', "$d/gw1");
is($rc, 0, '--store: stopped');

# --policy with a relative --module

($rc, $out) = start('gw2', '--policy', $policy, '--module', $REL);
is($rc, 0, 'relative --module: start exit 0') or diag($out);
like(via('gw2', $FTOKEN, '/f1'), qr/^HTTP\/1\.1 200 /,
	'relative --module: served');
($rc, $out) = gateway('stop', '--dir', "$d/gw2");
is($rc, 0, 'relative --module: stopped');

# a --store that is not a store URL

($rc, $out) = start('gw3', '--store', "$d/nothing.json");
isnt($rc, 0, '--store FILE: refused');
like($out, qr/--store: '\Q$d\E\/nothing\.json' is not a store URL/,
	'--store FILE: says why');

###############################################################################

# make run POLICY=redis://... LISTEN=ADDR:PORT

my $port = port(8084);
$gw{"$d/gw4"} = $port;

($rc, $out) = make('-o', 'module', 'run', "POLICY=$redis->{url}",
	"LISTEN=127.0.0.1:$port", "RUN_DIR=$d/gw4", "RESOLVER=127.0.0.1:$DNS",
	"RUN_OPTS=--module $Test::Nginx::MODULE --nginx $Test::Nginx::NGINX");

is($rc, 0, 'make run POLICY=redis://: exit 0') or diag($out);
like($out, qr/^proxy: http:\/\/127\.0\.0\.1:$port$/m,
	'make run LISTEN=: the proxy URL');
like(via('gw4', $TOKEN, '/m1'), qr/^HTTP\/1\.1 200 .*upstream api ok/s,
	'make run: the store\'s bottle served on LISTEN');

($rc, $out) = make('stop', "RUN_DIR=$d/gw4");
is($rc, 0, 'make stop') or diag($out);

###############################################################################

# start a gateway in DIR on a fresh port; (exit status, output)

sub start {
	my ($name, @args) = @_;
	my ($rc, $out);

	for my $try (1 .. 4) {
		my $port = port(8082 + $try * 10 + length $name);
		$gw{"$d/$name"} = $port;
		($rc, $out) = gateway('start', '--dir', "$d/$name",
			'--listen', "127.0.0.1:$port",
			'--resolver', "127.0.0.1:$DNS",
			'--nginx', $Test::Nginx::NGINX,
			(grep({ $_ eq '--module' } @args) ? ()
				: ('--module', $Test::Nginx::MODULE)), @args);
		last if $rc == 0 || $out !~ /bind\(\) to \S+ failed \(98: /;
	}

	return ($rc, $out);
}

# a request through gateway DIR with a bottle's token

sub via {
	my ($name, $token, $path) = @_;
	my $port = $gw{"$d/$name"};
	my ($rc, $out) = run_cmd('curl', '-q', '-s', '-i', '--noproxy', '',
		'--max-time', '10', '-x', "http://u:$token\@127.0.0.1:$port",
		"http://api.internal.test:$UP$path");
	return $out;
}

sub wait_for {
	my ($cond, $secs) = @_;
	my $end = time() + ($secs // 10);
	while (time() < $end) {
		return 1 if $cond->();
		sleep 0.1;
	}
	return $cond->();
}

# a program's stdout and stderr to a file (a daemon it leaves behind
# cannot hold a pipe of ours open); (exit status, output)

sub run_cmd {
	my (@cmd) = @_;
	my $file = "$d/cmd.out";
	my $pid = fork() // die "fork: $!\n";

	if ($pid == 0) {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>', $file;
		open STDERR, '>&', \*STDOUT;
		exec(@cmd) or POSIX::_exit(127);
	}

	waitpid($pid, 0);
	return ($? >> 8, $t->read_file($file));
}

sub gateway {
	my (@args) = @_;
	local $ENV{LD_PRELOAD} = $ENV{TEST_NGINX_PRELOAD}
		if $ENV{TEST_NGINX_PRELOAD};
	local $ENV{ASAN_OPTIONS} = $ENV{ASAN_OPTIONS} // 'detect_leaks=0'
		if $ENV{TEST_NGINX_PRELOAD};
	return run_cmd($SCRIPT, @args);
}

sub make {
	my (@args) = @_;
	local $ENV{LD_PRELOAD} = $ENV{TEST_NGINX_PRELOAD}
		if $ENV{TEST_NGINX_PRELOAD};
	local $ENV{ASAN_OPTIONS} = $ENV{ASAN_OPTIONS} // 'detect_leaks=0'
		if $ENV{TEST_NGINX_PRELOAD};
	return run_cmd('make', '-s', '--no-print-directory', '-C', $REPO, @args);
}

# the master of gateway DIR, and its workers, stopped whatever happened

sub kill_gateway {
	my ($dir) = @_;
	my $f = "$dir/run/nginx.pid";
	return unless -s $f;
	open my $fh, '<', $f or return;
	my $pid = <$fh> // return;
	chomp $pid;
	return unless $pid =~ /^\d+$/ && kill(0, $pid);

	open my $c, '<', "/proc/$pid/cmdline" or return;
	my $cmd = do { local $/; <$c> // '' };
	return unless $cmd =~ /^nginx: master process .*\Q$dir\E/;

	kill 'TERM', $pid;
	my $end = time() + 5;
	sleep 0.05 while kill(0, $pid) && time() < $end;
	kill 'KILL', $pid if kill(0, $pid);
}

###############################################################################
