#!/usr/bin/perl

# The helpers' systemd units (docs/install.md, "The helpers under
# systemd"), as make install writes them into a DESTDIR: in
# /usr/lib/systemd/system whatever the PREFIX, naming the installed programs
# under PREFIX and the sockets nginx's pieces name; accepted by
# systemd-analyze verify (with their PREFIX paths moved into the DESTDIR,
# where the programs are); the supervise service's command run as systemd
# would run it (its Environment= and an env file) serving its socket mode
# 0660, and the operator page only when the env file names a credential;
# git-gate's fcgiwrap started on a socket passed as systemd passes it.
# make uninstall removes them.  Nothing is enabled or started by make.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use File::Find qw/ find /;
use IO::Socket::UNIX;
use POSIX qw/ WNOHANG /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has_daemon('redis-server')->has_daemon('curl');

my $REPO = $Test::Nginx::REPO;
plan(skip_all => "no build/ngx_bottle_module.so (make)")
	unless -f "$REPO/build/ngx_bottle_module.so";
plan(skip_all => "no build/$_ (make)") for grep { !-x "$REPO/build/$_" }
	qw/ bottlectl gitgate-scan gitgate-cgi supervise-helper /;

my $d = $t->testdir();
my $D = "$d/destdir";
my $PREFIX = "/opt/bottle";	# not the default: the units follow it
my $U = "/usr/lib/systemd/system";
my @UNITS = qw/ ngx-bottle-supervise.service ngx-bottle-gitgate.socket
	ngx-bottle-gitgate.service /;

sub run_cmd {
	my (@cmd) = @_;
	my $pid = open(my $fh, '-|');
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		open STDERR, '>&', \*STDOUT;
		exec(@cmd) or POSIX::_exit(127);
	}
	local $/;
	my $out = <$fh> // '';
	close $fh;
	log_in("@cmd: exit " . ($? >> 8) . "\n$out");
	return ($? >> 8, $out);
}

sub make {
	return run_cmd('make', '-s', '-C', $REPO, '-o', 'module',
		(map { ('-o', "build/$_") } qw/ bottlectl gitgate-scan
			gitgate-cgi supervise-helper /), @_, "DESTDIR=$D",
		"PREFIX=$PREFIX", 'RESOLVER=127.0.0.1');
}

sub tree {
	my @all;
	return () unless -d $D;
	find({ no_chdir => 1, wanted => sub {
		push @all, substr($File::Find::name, length $D) if $_ ne $D;
	} }, $D);
	return sort @all;
}

# KEY => [values] of a unit file, every section
sub unit {
	my ($file) = @_;
	my %u;
	for (split /\n/, $t->read_file($file)) {
		next if /^\s*(#|;|\[|$)/;
		my ($k, $v) = /^(\w+)=(.*)$/ or next;
		push @{ $u{$k} }, $v;
	}
	return \%u;
}

# Environment= lines of a unit, as systemd reads them (no quoting here)
sub unit_env {
	my ($u) = @_;
	return map { split /=/, $_, 2 } @{ $u->{Environment} // [] };
}

my $redis = redis_start($t, port => port(8081));

plan(tests => 30);

###############################################################################

my ($rc, $out) = make('install');
is($rc, 0, 'make install DESTDIR PREFIX=/opt/bottle: exit 0') or diag($out);

ok(!(grep { !-f "$D$U/$_" } @UNITS), "the units in $U, whatever the PREFIX")
	or diag(join(' ', tree()));
ok(-f "$D/usr/lib/sysusers.d/ngx-bottle.conf",
	'their users in /usr/lib/sysusers.d/ngx-bottle.conf');
like($t->read_file("$D/usr/lib/sysusers.d/ngx-bottle.conf"),
	qr/^u ngx-bottle-supervise .*^u ngx-bottle-gitgate .*^m www-data ngx-bottle-supervise$/ms,
	'a user per helper; nginx\'s workers in supervise\'s group');
ok(!(grep { $t->read_file("$D$U/$_") =~ /@[A-Z]+@/ } @UNITS),
	'no placeholder left');

my $manifest = $t->read_file("$D$PREFIX/share/ngx-bottle/install.manifest");
ok(!(grep { $manifest !~ /^file \S+ \Q$U\/$_\E$/m } @UNITS),
	'the units in the manifest');

my $sv = unit("$D$U/ngx-bottle-supervise.service");
my $gs = unit("$D$U/ngx-bottle-gitgate.socket");
my $gg = unit("$D$U/ngx-bottle-gitgate.service");
my %sv_env = unit_env($sv);

is($sv->{ExecStart}[0], "$PREFIX/lib/ngx-bottle/daemons/supervise",
	'supervise: ExecStart is the installed daemon script under PREFIX');
ok(-x "$D$sv->{ExecStart}[0]", 'which make install wrote');
is($sv_env{BOTTLE_SUPERVISE_HELPER}, "$PREFIX/bin/supervise-helper",
	'it runs the installed supervise-helper under PREFIX');
is($sv->{EnvironmentFile}[0], '-/etc/default/ngx-bottle',
	'its settings from /etc/default/ngx-bottle (optional)');
like($t->read_file("$D/etc/nginx/bottle/bottle-supervise.conf"),
	qr{proxy_pass\s+http://unix:\Q$sv_env{BOTTLE_RUN_DIR}\E/supervise\.sock;},
	'its socket is the one bottle-supervise.conf names');

my ($sock) = $t->read_file("$D/etc/nginx/bottle/bottle-gitgate.conf")
	=~ /fastcgi_pass\s+unix:(\S+);/;
is($gs->{ListenStream}[0], $sock,
	'gitgate.socket: the socket bottle-gitgate.conf names');
is(join(' ', map { $gs->{$_}[0] // '' } qw/ SocketGroup SocketMode /),
	'www-data 0660', 'gitgate.socket: www-data\'s, mode 0660');
like($gg->{ExecStart}[0], qr{^/usr/sbin/fcgiwrap (?!.*-s )},
	'gitgate.service: fcgiwrap on the socket systemd passes');
is($gg->{EnvironmentFile}[0], '-/etc/default/ngx-bottle-gitgate',
	'gitgate.service: an env file of its own, not supervise\'s');
is($gg->{AssertFileIsExecutable}[0], "$PREFIX/lib/ngx-bottle/gitgate-cgi",
	'gitgate.service: the installed gitgate-cgi under PREFIX');
like($t->read_file("$D/etc/nginx/bottle/bottle-gitgate.conf"),
	qr{SCRIPT_FILENAME\s+\Q$gg->{AssertFileIsExecutable}[0]\E;},
	'which bottle-gitgate.conf names');

ok(!(grep { my $u = $_; !(grep { ($u->{$_}[0] // '') eq 'yes' }
	qw/ NoNewPrivileges PrivateTmp /) == 2
	|| ($u->{ProtectSystem}[0] // '') ne 'strict'
	|| ($u->{Restart}[0] // '') ne 'on-failure' } $sv, $gg),
	'both services: Restart=on-failure, NoNewPrivileges, '
	. 'ProtectSystem=strict, PrivateTmp');

###############################################################################

# systemd-analyze verify: the units as installed, their PREFIX paths moved
# into the DESTDIR where the programs are

SKIP: {
skip 'no systemd-analyze (package systemd)', 1
	unless -x '/usr/bin/systemd-analyze';

mkdir "$d/verify";
for my $f (@UNITS) {
	(my $s = $t->read_file("$D$U/$f")) =~ s{\Q$PREFIX\E/}{$D$PREFIX/}g;
	$t->write_file("verify/$f", $s);
}
($rc, $out) = run_cmd('/usr/bin/systemd-analyze', 'verify', '--man=no',
	map { "$d/verify/$_" } @UNITS);
ok($rc == 0 && $out eq '', 'systemd-analyze verify accepts them')
	or diag($out);
}

###############################################################################

# supervise: its ExecStart with its Environment= and an env file, as
# systemd runs it (the run directory moved into the test's)

mkdir "$d/run";

my %exited;	# pid => wait status, of a helper that exited at once

sub supervise {
	my (%file) = @_;
	my %env = (%sv_env, PATH => '/usr/bin:/bin', %file,
		BOTTLE_RUN_DIR => "$d/run");
	$env{$_} =~ s{^\Q$PREFIX\E/}{$D$PREFIX/} for keys %env;
	my $pid = fork() // die "fork: $!";
	if ($pid == 0) {
		%ENV = %env;
		open STDOUT, '>>', "$d/supervise.log";
		open STDERR, '>&', \*STDOUT;
		exec("$D$sv->{ExecStart}[0]") or POSIX::_exit(127);
	}
	for (1 .. 50) {
		last if -S "$d/run/supervise.sock";
		if (waitpid($pid, WNOHANG) == $pid) {
			$exited{$pid} = $?;
			last;
		}
		select undef, undef, undef, 0.1;
	}
	return $pid;
}

sub stop {
	my ($pid) = @_;
	kill 'TERM', $pid;
	waitpid($pid, 0);
	unlink "$d/run/supervise.sock";
}

my $OP = port(8082);

my $pid = supervise(BOTTLE_STORE => $redis->{url});
my @st = stat("$d/run/supervise.sock");
ok(@st && ($st[2] & 0777) == 0660, 'supervise: its socket, mode 0660')
	or diag($t->read_file('supervise.log'));
my $r = `curl -s -o /dev/null -w '%{http_code}' --max-time 5 --unix-socket $d/run/supervise.sock http://supervise/`;
is($r, '405', 'it answers HTTP there (GET: 405)');
$r = `curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:$OP/`;
is($r, '000', 'no credential in the env file: no operator page');
like($t->read_file('supervise.log'), qr/listening on unix:\Q$d\E\/run\/supervise\.sock, store redis:\/\/127\.0\.0\.1:\d+/,
	'listening on the socket, the store of BOTTLE_STORE');
stop($pid);

$t->write_file('operator.pw', "op-secret-0123456789\n");
chmod 0600, "$d/operator.pw";
$pid = supervise(BOTTLE_STORE => $redis->{url},
	BOTTLE_OPERATOR_CREDENTIAL => "$d/operator.pw",
	BOTTLE_OPERATOR_LISTEN => "127.0.0.1:$OP");
$r = '000';
for (1 .. 30) {
	$r = `curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:$OP/`;
	last if $r ne '000';
	select undef, undef, undef, 0.1;
}
is($r, '401', 'BOTTLE_OPERATOR_CREDENTIAL: the operator page, '
	. 'on BOTTLE_OPERATOR_LISTEN (401 without the credential)');
$r = `curl -s -o /dev/null -w '%{http_code}' --max-time 5 -u operator:op-secret-0123456789 http://127.0.0.1:$OP/`;
is($r, '200', 'and 200 with it');
stop($pid);

unlink "$d/supervise.log";
$pid = supervise();
waitpid($pid, 0) == $pid and $exited{$pid} = $? unless exists $exited{$pid};
ok(($exited{$pid} >> 8) != 0
	&& $t->read_file('supervise.log') =~ /set BOTTLE_STORE/,
	'no BOTTLE_STORE: it fails, and says so (Restart=on-failure retries)');

###############################################################################

# git-gate: fcgiwrap as the unit starts it, on a socket passed the way
# systemd passes it (systemd-socket-activate: LISTEN_FDS)

SKIP: {
skip 'no systemd-socket-activate or fcgiwrap', 1
	unless -x '/usr/bin/systemd-socket-activate' && -x '/usr/sbin/fcgiwrap';

my @cmd = split ' ', $gg->{ExecStart}[0];
s/^\$\{BOTTLE_GITGATE_WORKERS\}$/2/ for @cmd;
my $gpid = fork() // die "fork: $!";
if ($gpid == 0) {
	# a group of its own: fcgiwrap's children outlive a TERM to their
	# parent, the group is stopped whole below
	POSIX::setpgid(0, 0);
	open STDOUT, '>>', "$d/gitgate.log";
	open STDERR, '>&', \*STDOUT;
	exec('/usr/bin/systemd-socket-activate', '-l',
		"$d/run/gitgate-fcgi.sock", @cmd) or POSIX::_exit(127);
}
POSIX::setpgid($gpid, $gpid);
for (1 .. 50) {
	last if -S "$d/run/gitgate-fcgi.sock";
	select undef, undef, undef, 0.1;
}

# a FastCGI request (BEGIN_REQUEST, PARAMS, STDIN) for a script that does
# not exist: fcgiwrap answers it, on the passed socket
sub rec {
	my ($type, $body) = @_;
	return pack('CCnnCC', 1, $type, 1, length $body, 0, 0) . $body;
}
sub nv {
	my (%p) = @_;
	return join '', map { pack('CC', length $_, length $p{$_}) . $_
		. $p{$_} } sort keys %p;
}
my $s = IO::Socket::UNIX->new(Peer => "$d/run/gitgate-fcgi.sock");
my $answer = '';
if ($s) {
	print $s rec(1, pack('nCx5', 1, 0)),
		rec(4, nv(SCRIPT_FILENAME => "$d/nothing",
			REQUEST_METHOD => 'GET', GATEWAY_INTERFACE => 'CGI/1.1')),
		rec(4, ''), rec(5, '');
	local $/;
	local $SIG{ALRM} = sub { die "timeout\n" };
	alarm 10;
	$answer = eval { <$s> } // '';
	alarm 0;
}
like($answer, qr/Status: 403/, 'gitgate: fcgiwrap serves the socket '
	. 'systemd passes it (a missing script: 403)')
	or diag($t->read_file('gitgate.log'));
kill 'TERM', -$gpid;
waitpid($gpid, 0);
}

###############################################################################

($rc, $out) = make('uninstall');
is($rc, 0, 'make uninstall: exit 0') or diag($out);
ok(!(grep { -e "$D$U/$_" } @UNITS)
	&& !-e "$D/usr/lib/sysusers.d/ngx-bottle.conf",
	'the units and the sysusers file removed');
is(join(' ', tree()), '', 'nothing left');

###############################################################################
