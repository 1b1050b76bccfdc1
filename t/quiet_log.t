#!/usr/bin/perl

# The shipped configuration's error log is quiet (nginx-conf/nginx.conf,
# docs/refusals.md): started by scripts/bottle-gateway at the shipped
# level, a normal run (start, an allowed request, a refused one, a reload
# by SIGHUP, stop) writes no line to error.log: nginx's notices (start worker
# process, SIGCHLD, ...) and the refusal's info line are below it.  The
# refusal is still recorded once, with its bottle, host and rule, in
# access.log and stream.log.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/)
	->has_daemon('curl');

my $d = $t->testdir();
my $gw = "$d/gw";
my $SCRIPT = "$Test::Nginx::REPO/scripts/bottle-gateway";

my $TOKEN = 'agent-token-0123456789';
my $GWPORT = port(8080);
my $UP = port(8081);
my $DNS = port(8053);

END {
	local ($?, $@, $!);
	system($SCRIPT, 'stop', '--dir', $gw) if -e "$gw/run/nginx.pid";
}

plan(skip_all => "no $SCRIPT") unless -x $SCRIPT;

fake_upstream($t, port => $UP, name => 'api');

my $policy = write_policy($t, 'policy.json', { bottles => [
	{ id => 'agent', token => $TOKEN, routes => [
		{ host => '127.0.0.1', port => $UP } ] },
] });

plan(tests => 9);

###############################################################################

sub gateway {
	my (@args) = @_;
	local $ENV{LD_PRELOAD} = $ENV{TEST_NGINX_PRELOAD}
		if $ENV{TEST_NGINX_PRELOAD};
	local $ENV{ASAN_OPTIONS} = $ENV{ASAN_OPTIONS} // 'detect_leaks=0'
		if $ENV{TEST_NGINX_PRELOAD};
	my $out = `$SCRIPT @args 2>&1`;
	return ($? >> 8, $out);
}

sub curl {
	my (@args) = @_;
	return scalar `curl -q -s -i --noproxy '' --max-time 10 @args 2>&1`;
}

sub read_log {
	my ($name) = @_;
	my $f = "$gw/logs/$name";
	return -e $f ? $t->read_file($f) : '';
}

sub wait_for_log {
	my ($name, $re) = @_;
	my $deadline = time() + 10;
	while (time() < $deadline) {
		return 1 if read_log($name) =~ $re;
		sleep 0.2;
	}
	return 0;
}

###############################################################################

my ($rc, $out) = gateway('start', '--dir', $gw, '--policy', $policy,
	'--listen', "127.0.0.1:$GWPORT", '--resolver', "127.0.0.1:$DNS",
	'--module', $Test::Nginx::MODULE, '--nginx', $Test::Nginx::NGINX);
is($rc, 0, 'start') or diag($out);
$t->waitforsocket("127.0.0.1:$GWPORT");

like(curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT",
	"http://127.0.0.1:$UP/ok"), qr/^HTTP\/1\.1 200 /, 'allowed');
like(curl('-x', "http://u:$TOKEN\@127.0.0.1:$GWPORT", '-X', 'DELETE',
	"http://127.0.0.1:$UP/no"), qr/^HTTP\/1\.1 403 /, 'refused');

ok(wait_for_log('access.log',
	qr/"DELETE 127\.0\.0\.1\/no" 403 bottle=agent host=127\.0\.0\.1 verdict=refused rule=method /),
	'the refusal in access.log');
ok(wait_for_log('stream.log',
	qr/ verdict=refused rule=method refused=1 /),
	'the refusal in stream.log');

# a reload by signal, as a service manager sends it (nginx -s reload, the
# launcher's, writes its own "signal process started" notice)

chomp(my $pid = $t->read_file("$gw/run/nginx.pid"));
ok(kill('HUP', $pid), 'reload');
sleep 1;

($rc, $out) = gateway('stop', '--dir', $gw);
is($rc, 0, 'stop') or diag($out);

my $log = read_log('error.log');

# with the sanitizers preloaded their malloc() takes no mallopt()
$log =~ s/^.*\[warn\] .*bottle: mallopt\(\) failed.*\n//mg
	if $ENV{TEST_NGINX_PRELOAD};
is($log, '', 'error.log: nothing at the shipped level');
unlike($log, qr/\[(?:notice|info|error)\]/, 'no notice, info or error');

###############################################################################
