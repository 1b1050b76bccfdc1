#!/usr/bin/perl

# Tests for scripts/bottle-init, the image's PID 1 (docs/install.md, "The
# image's PID 1"), run here as a child of the test rather than as PID 1:
# each daemon's lines on its stdout with the daemon's name in front, a
# killed daemon started again with a growing backoff, SIGTERM and SIGINT
# stopping every daemon before it exits 0, BOTTLE_GATEWAY_DAEMONS choosing
# which run, the health check, and the refusals before anything starts.
#
# The three daemons are the real ones (scripts/daemons/*: nginx on the
# shipped nginx-conf/ with this build's module, build/supervise-helper,
# fcgiwrap running build/gitgate-cgi; SUPERVISE_HELPER and GITGATE_CGI
# name others), on a Redis store of the test's own, next to a fourth,
# "stubborn", a stand-in that prints its pid, a line on stderr and a tick,
# and ignores SIGTERM.  As root, the test runs it all as nobody, as the
# image runs as its own user.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use MIME::Base64 qw//;
use POSIX qw/ WNOHANG /;
use Time::HiRes qw/ time sleep /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http stream bottle/)
	->has_daemon('s6-svscan')->has_daemon('curl');

my $d = $t->testdir();
my $REPO = $Test::Nginx::REPO;
my $INIT = "$REPO/scripts/bottle-init";
my $GW = port(8080);
my $SV = port(8081);
my $TOKEN = 'agent-token-0123456789';

# as the image: not root (nobody when the test is root)
my @AS = $> == 0 ? ('s6-setuidgid', 'nobody') : ();
my $UID = $> == 0 ? (getpwnam('nobody'))[2] : $>;
# a relative path is the repository's (make test-asan gives build-asan/...)
my $HELPER = $ENV{SUPERVISE_HELPER} // 'build/supervise-helper';
my $CGI = $ENV{GITGATE_CGI} // 'build/gitgate-cgi';
$_ = m!^/! ? $_ : "$REPO/$_" for $HELPER, $CGI;
my $GG = port(8082);

my @running;		# entrypoints started, for the END block

$SIG{INT} = $SIG{TERM} = $SIG{HUP} = sub { exit 1; };

END {
	local ($?, $@, $!);
	stop_all();
}

plan(skip_all => "no $INIT") unless -x $INIT;
for ([ SUPERVISE_HELPER => $HELPER, 'make supervise' ],
		[ GITGATE_CGI => $CGI, 'make gitgate' ]) {
	my ($var, $path, $make) = @$_;
	next if -x $path;
	# named and missing: a failure, not a skip
	BAIL_OUT("$var=$path is not built") if $ENV{$var};
	plan(skip_all => "no $path ($make)");
}
plan(skip_all => 'no fcgiwrap') unless -x '/usr/sbin/fcgiwrap';

my $store = redis_start($t, port => 8131);
store_put($t, { id => 'agent', token => $TOKEN, routes => [] });

system("$REPO/scripts/bottle-ca create $d/ca >/dev/null") == 0
	or die "bottle-ca create failed";
my $policy = write_policy($t, 'policy.json', { bottles => [ {
	id => 'agent', token => $TOKEN, routes => [],
} ] });

# what the gateway's user writes, and its CA key
for my $dir (map { ($_, "$_-log", "$_-state") } qw/ run run2 once /) {
	mkdir "$d/$dir" or die "$d/$dir: $!";
	chown $UID, -1, "$d/$dir";
}
chown $UID, -1, "$d/ca/ca.key";
chmod 0711, $d;

# the daemons: the real nginx, stand-ins for the helpers

mkdir "$d/daemons" or die;
symlink("$REPO/scripts/daemons/$_", "$d/daemons/$_") or die
	for qw/ nginx supervise gitgate /;
stand_in('stubborn');

plan(tests => 60);

###############################################################################

# all three

my $gw = start('nginx,supervise,gitgate,stubborn', 'run');

ok(wait_for($gw, qr/^\[init\] starting nginx,supervise,gitgate,stubborn /m),
	'init says what it starts');
ok(wait_for($gw, qr/^\[nginx\] .*start worker process \d+/m),
	'nginx: its error log, prefixed');
ok(wait_for($gw, qr/^\[supervise\] \S+ supervise-helper: listening on unix:\Q$d\E\/run\/supervise.sock, store \Q$store->{url}\E/m),
	'supervise: its log, prefixed');
ok(wait_for($gw, qr/^\[stubborn\] stand-in ready pid \d+$/m),
	'stubborn: its stdout, prefixed');
ok(wait_for($gw, qr/^\[stubborn\] stand-in says on stderr$/m),
	'stubborn: its stderr, prefixed');
ok(wait_for($gw, qr/^\[stubborn\] tick 3$/m), 'a later line, prefixed');

my @bare = grep { !/^\[(init|nginx|supervise|gitgate|stubborn)\] / }
	lines($gw);
is(join("\n", @bare), '', 'every line has a daemon\'s name');

is(proxy_status(), 407, 'nginx answers: no credentials, 407');
ok(wait_for($gw, qr/^\[nginx\] 127\.0\.0\.1 \[[^]]+\] "GET example\.invalid\/" 407 /m),
	'nginx: its access log on stdout, prefixed');
is(supervise_status("$d/run"), 405, 'supervise answers on its socket');

my $res = mcp_initialize("Bearer $TOKEN");
is($res->{status}, 200, 'supervise through nginx on :9100 with the token');
like($res->{headers}, qr/^Mcp-Session-Id: [0-9a-f]{32}\r?$/mi,
	'an MCP session from the helper');
is(mcp_initialize(undef)->{status}, 401, ':9100 without a token: 401');

my $master = file("$d/run/nginx/nginx.pid");
is((stat "/proc/$master")[4], $UID, 'nginx runs as the gateway\'s user')
	or diag("uid of $master");

my ($rc, $out) = run_init($gw, 'health');
is($rc, 0, 'health: 0');
like($out, qr/^ok: nginx,supervise,gitgate,stubborn$/m, 'health: all four');

like(gate_post(), qr/^HTTP\/1\.1 403 .*rule: repo_not_granted/s,
	'git-gate through nginx on :9420: gitgate-cgi answers');

# a second one on the same directories refuses
($rc, $out) = once('nginx', BOTTLE_RUN_DIR => "$d/run");
is($rc, 1, 'a second bottle-init on the same run directory: exit 1');
like($out, qr/a gateway already runs in '\Q$d\E\/run'/, 'and says so');

# a daemon killed: started again, prefix intact

my $pid = file("$d/run/s6/supervise/pid");
kill 'KILL', $pid;
ok(wait_until(sub { my $p = file("$d/run/s6/supervise/pid");
		$p && $p != $pid && supervise_status("$d/run") == 405 }),
	'supervise killed: a new one answers');
like(text($gw), qr/^\[supervise\] supervise killed by signal 9 after \d+s; restarting in 1s$/m,
	'the death said, prefixed');
ok(wait_for($gw, qr/restarting in 1s\n(?:.*\n)*\[supervise\] \S+ supervise-helper: listening/m),
	'the restarted daemon\'s lines prefixed');

$pid = file("$d/run/s6/gitgate/pid");
kill 'KILL', $pid;
ok(wait_until(sub { my $p = file("$d/run/s6/gitgate/pid");
		$p && $p != $pid && gate_post() =~ /^HTTP\/1\.1 403 /; }),
	'fcgiwrap killed: a new one, git-gate answers');
like(text($gw), qr/^\[gitgate\] gitgate killed by signal 9 after \d+s; restarting in 1s$/m,
	'its death said, prefixed');

# one that keeps dying: 1 s, 2 s, then 4 s (BOTTLE_GATEWAY_BACKOFF_MAX=4)
# and 4 s

my @gaps;
for (1 .. 4) {
	$pid = ready_pid($gw, 'stubborn');
	kill 'KILL', $pid;
	push @gaps, restarted($gw, 'stubborn', $pid);
}
ok(!grep(!defined, @gaps), 'stubborn: restarted each time');
@gaps = map { $_ // 0 } @gaps;
like(text($gw), qr/^\[stubborn\] .* restarting in 1s\n(?:.*\n)*?\[stubborn\] .* restarting in 2s\n(?:.*\n)*?\[stubborn\] .* restarting in 4s\n(?:.*\n)*?\[stubborn\] .* restarting in 4s$/m,
	'backoff said: 1 s, 2 s, 4 s, 4 s (the maximum)');
ok($gaps[0] < 4, 'first restart within 4 s') or diag("@gaps");
ok($gaps[1] >= 1.8, 'the second waited 2 s') or diag("@gaps");
ok($gaps[2] >= 3.8 && $gaps[3] >= 3.8, 'then 4 s') or diag("@gaps");
ok($gaps[3] < 7, 'no more than the maximum') or diag("@gaps");
isnt(ready_pid($gw, 'stubborn'), $pid, 'a new pid');

# nginx's master killed: its workers go with it, a new master binds

$master = file("$d/run/nginx/nginx.pid");
my @workers = worker_pids($master);
ok(@workers, 'nginx workers') or diag("master $master");
kill 'KILL', $master;
ok(wait_until(sub { my $m = file("$d/run/nginx/nginx.pid");
		$m && $m != $master && kill(0, $m) && proxy_status() == 407 }),
	'nginx killed: a new master answers');
ok(!grep(kill(0, $_), @workers), 'the old workers are gone');

# reload: the same master, reconfigured

$master = file("$d/run/nginx/nginx.pid");
($rc, $out) = run_init($gw, 'reload');
is($rc, 0, 'reload: 0') or diag($out);
ok(wait_for($gw, qr/^\[nginx\] .*signal 1 \(SIGHUP\) received.*reconfiguring/m),
	'reload: nginx reconfigures');
is(file("$d/run/nginx/nginx.pid"), $master, 'reload: the same master');

# a bottle-ca.conf in the CA directory is used instead (a rotation): a
# broken one fails the reload, and the running nginx keeps serving

open my $fh, '>', "$d/ca/bottle-ca.conf" or die;
print $fh "bottle_ca $d/ca/nope.crt $d/ca/nope.key;\n";
close $fh;
($rc, $out) = run_init($gw, 'reload');
is($rc, 1, 'reload with a broken bottle-ca.conf: refused');
like($out, qr/nope\.crt/, 'reload refused: nginx -t says why');
is(proxy_status(), 407, 'the running nginx still answers');
unlink "$d/ca/bottle-ca.conf";

# SIGTERM: everything stops, then it exits 0 (the stubborn stand-in
# ignores SIGTERM: killed after BOTTLE_GATEWAY_STOP_TIMEOUT=2)

my @pids = ($master, worker_pids($master),
	file("$d/run/s6/supervise/pid"), file("$d/run/s6/gitgate/pid"),
	ready_pid($gw, 'stubborn'));
my ($status, $took) = stop($gw, 'TERM');
is($status, 0, 'SIGTERM: exit 0');
ok(defined $took && $took < 8, 'SIGTERM: within 8 s')
	or diag('took ' . ($took // 'forever'));
is(join(' ', grep { kill 0, $_ } @pids), '', 'SIGTERM: every daemon gone');
like(text($gw), qr/^\[stubborn\] stubborn stopped \(killed by signal 9\)$/m,
	'the one that ignored SIGTERM killed');
like(text($gw), qr/^\[gitgate\] gitgate stopped \((exited with status 0|killed by signal 15)\)$/m,
	'fcgiwrap stopped');
like(text($gw), qr/^\[nginx\] nginx stopped \(exited with status 0\)$/m,
	'nginx stopped');
like(text($gw), qr/^\[supervise\] supervise stopped \(exited with status 0\)$/m,
	'supervise stopped');
is(proxy_status(), '000', 'nothing listens');

# BOTTLE_GATEWAY_DAEMONS=nginx: nginx alone; SIGINT

$gw = start('nginx', 'run2');
ok(wait_for($gw, qr/^\[nginx\] .*start worker process/m), 'nginx alone runs');
is(proxy_status(), 407, 'nginx alone answers');
sleep 1;
is(join(',', map { /^\[(\w+)\]/ } grep { !/^\[(init|nginx)\]/ } lines($gw)),
	'', 'nothing but nginx');
opendir(my $dh, "$d/run2/s6") or die;
is(join(',', sort grep { !/^\./ } readdir $dh), 'nginx', 'one service');
($status, $took) = stop($gw, 'INT');
is($status, 0, 'SIGINT: exit 0');

# refused before anything starts

($rc, $out) = once('nginx,bogus');
is($rc, 2, 'unknown daemon: exit 2');
like($out, qr/unknown daemon 'bogus'/, 'unknown daemon: said');

($rc, $out) = once('nginx', BOTTLE_CA_DIR => "$d/no-ca");
is($rc, 1, 'no CA: exit 1');
like($out, qr/^\[nginx\] nginx: no CA in '\Q$d\E\/no-ca'/m, 'no CA: said');

($rc, $out) = once('nginx,supervise', BOTTLE_STORE => '');
is($rc, 1, 'supervise without a store: exit 1');
like($out, qr/^\[supervise\] supervise: supervise needs the control plane: set BOTTLE_STORE$/m,
	'supervise without a store: said');

# the sanitizers (make test-asan) found nothing in any daemon

my $all = join '', map { text({ out => $_ }) } glob("$d/*.out");
unlike($all, qr/AddressSanitizer|LeakSanitizer|runtime error:/,
	'no sanitizer report');

###############################################################################

sub stand_in {
	my ($name) = @_;
	my $f = "$d/daemons/$name";
	open my $fh, '>', $f or die "$f: $!";
	print $fh <<"EOF";
#!/usr/bin/perl
# a stand-in daemon for t/pid1.t
exit 0 if \@ARGV;		# check, health
\$SIG{TERM} = 'IGNORE';
\$| = 1;
print "stand-in ready pid \$\$\\n";
print STDERR "stand-in says on stderr\\n";
for (my \$i = 1; ; \$i++) { print "tick \$i\\n"; select undef, undef, undef, 0.2; }
EOF
	close $fh;
	chmod 0755, $f;
}

sub env {
	my ($daemons, $run, %more) = @_;
	return (
		BOTTLE_GATEWAY_DAEMONS => $daemons,
		BOTTLE_GATEWAY_DAEMON_DIR => "$d/daemons",
		BOTTLE_GATEWAY_BACKOFF_MAX => 4,
		BOTTLE_GATEWAY_STABLE => 60,
		BOTTLE_GATEWAY_STOP_TIMEOUT => 2,
		BOTTLE_RUN_DIR => "$d/$run",
		BOTTLE_LOG_DIR => "$d/$run-log",
		BOTTLE_STATE_DIR => "$d/$run-state",
		BOTTLE_NGINX_CONF_DIR => "$REPO/nginx-conf",
		BOTTLE_POLICY => $policy,
		BOTTLE_STORE => $store->{url},
		BOTTLE_SUPERVISE_HELPER => $HELPER,
		BOTTLE_GITGATE_CGI => $CGI,
		BOTTLE_GITGATE_LISTEN => "127.0.0.1:$GG",
		BOTTLE_CA_DIR => "$d/ca",
		BOTTLE_LISTEN => "127.0.0.1:$GW",
		BOTTLE_SUPERVISE_LISTEN => "127.0.0.1:$SV",
		BOTTLE_RESOLVER => '127.0.0.1',
		BOTTLE_WORKERS => 1,
		# the access logs on stdout, as the image has them; nginx's
		# start lines (notice) to see it start
		BOTTLE_ACCESS_LOG => 'stdout',
		BOTTLE_ERROR_LOG_LEVEL => 'notice',
		BOTTLE_MODULE => $Test::Nginx::MODULE,
		BOTTLE_NGINX_PRELOAD => $ENV{TEST_NGINX_PRELOAD} // '',
		# as Test::Nginx runs nginx with the sanitizers: nginx does
		# not free its cycle at exit
		$ENV{TEST_NGINX_PRELOAD} ? (
			ASAN_OPTIONS => $ENV{ASAN_OPTIONS} // 'detect_leaks=0',
			UBSAN_OPTIONS => $ENV{UBSAN_OPTIONS}
				// 'print_stacktrace=1',
		) : (),
		%more,
	);
}

# the entrypoint, its stdout and stderr to a file of its own
sub start {
	my ($daemons, $run) = @_;
	my $gw = { out => "$d/$run.out", run => "$d/$run",
		env => { env($daemons, $run) } };
	my $pid = fork() // die "fork: $!";
	if ($pid == 0) {
		%ENV = (%ENV, %{$gw->{env}});
		open STDOUT, '>', $gw->{out} or die;
		open STDERR, '>&', \*STDOUT or die;
		exec @AS, $INIT or die "exec: $!";
	}
	$gw->{pid} = $pid;
	push @running, $gw;
	return $gw;
}

# bottle-init with a command, next to a running one
sub run_init {
	my ($gw, @args) = @_;
	local %ENV = (%ENV, %{$gw->{env}});
	my $out = `@AS $INIT @args 2>&1`;
	return ($? >> 8, $out);
}

# bottle-init started and expected to refuse at once
sub once {
	my ($daemons, %more) = @_;
	local %ENV = (%ENV, env($daemons, 'once', %more));
	my $out = `timeout 20 @AS $INIT 2>&1`;
	return ($? >> 8, $out);
}

sub stop {
	my ($gw, $sig) = @_;
	kill $sig, $gw->{pid};
	my $t0 = time();
	while (time() - $t0 < 20) {
		my $r = waitpid($gw->{pid}, WNOHANG);
		if ($r == $gw->{pid}) {
			my $st = $?;
			@running = grep { $_ != $gw } @running;
			return ($st >> 8 | ($st & 127), time() - $t0);
		}
		sleep 0.05;
	}
	return (undef, undef);
}

sub stop_all {
	for my $gw (@running) {
		kill 'TERM', $gw->{pid};
	}
	for my $gw (@running) {
		my $t0 = time();
		while (time() - $t0 < 10) {
			last if waitpid($gw->{pid}, WNOHANG) == $gw->{pid};
			sleep 0.1;
		}
		next unless kill 0, $gw->{pid};
		kill 'KILL', $gw->{pid};
		# the supervisors' daemons, each its own process group
		for my $f (glob("$gw->{run}/s6/*/pid")) {
			my $p = file($f);
			kill 'KILL', -$p if $p;
		}
	}
	@running = ();
}

sub text {
	my ($gw) = @_;
	open my $fh, '<', $gw->{out} or return '';
	local $/;
	return <$fh> // '';
}

sub lines {
	my ($gw) = @_;
	return grep { length } split /\n/, text($gw);
}

sub wait_for {
	my ($gw, $re) = @_;
	return wait_until(sub { text($gw) =~ $re });
}

sub wait_until {
	my ($cond, $secs) = @_;
	my $t0 = time();
	while (time() - $t0 < ($secs // 15)) {
		return 1 if $cond->();
		sleep 0.1;
	}
	return 0;
}

# the pid of the stand-in's last start
sub ready_pid {
	my ($gw, $name) = @_;
	my @p = text($gw) =~ /^\[$name\] stand-in ready pid (\d+)$/mg;
	return $p[-1];
}

# seconds from now until a stand-in other than $old is ready
sub restarted {
	my ($gw, $name, $old) = @_;
	my $t0 = time();
	while (time() - $t0 < 15) {
		my $p = ready_pid($gw, $name);
		return time() - $t0 if $p && $p != $old && kill(0, $p);
		sleep 0.05;
	}
	return undef;
}

sub file {
	my ($f) = @_;
	open my $fh, '<', $f or return undef;
	my $v = <$fh> // '';
	chomp $v;
	return $v;
}

sub worker_pids {
	my ($master) = @_;
	my $c = file("/proc/$master/task/$master/children") // '';
	return grep { /^\d+$/ } split ' ', $c;
}

# a push of a repo the bottle has no grant for, refused by gitgate-cgi
sub gate_post {
	my $auth = 'Basic ' . MIME::Base64::encode_base64("x:$TOKEN", '');
	return `curl -s -i --max-time 10 -H 'Authorization: $auth' -H 'Content-Type: application/x-git-receive-pack-request' --data-binary 0000 http://127.0.0.1:$GG/github.com/acme/widgets.git/git-receive-pack 2>/dev/null` // '';
}

sub mcp_initialize {
	my ($auth) = @_;
	my $body = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
		. '{"protocolVersion":"2025-06-18","capabilities":{},'
		. '"clientInfo":{"name":"pid1.t","version":"1"}}}';
	my @h = ('-H', 'Accept: application/json, text/event-stream',
		'-H', 'Content-Type: application/json',
		$auth ? ('-H', "Authorization: $auth") : ());
	open my $fh, '-|', 'curl', '-s', '-o', '/dev/null', '-D', "$d/mcp.h",
		'-w', '%{http_code}', '--max-time', '10', @h,
		'--data-binary', $body, "http://127.0.0.1:$SV/"
		or die "curl: $!";
	my $status = <$fh> // '';
	close $fh;
	return { status => $status + 0, headers => $t->read_file('mcp.h') };
}

sub supervise_status {
	my ($run) = @_;
	return `curl -s -o /dev/null -w '%{http_code}' --max-time 5 --unix-socket $run/supervise.sock http://supervise/ 2>/dev/null`;
}

sub proxy_status {
	my $code = `curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://127.0.0.1:$GW http://example.invalid/ 2>/dev/null`;
	return $code;
}

###############################################################################
