#!/usr/bin/perl

# git-gate's resident scanner (issue 34, docs/gitgate.md "The resident
# scanner"): the gate's pre-receive hook is build/gitgate-hook, a client
# that hands the push to `gitgate-cgi --scand GITGATE_DIR` on
# <GITGATE_DIR>/.scand/sock (started by the first push, gone after
# GITGATE_SCAND_IDLE seconds).  A push with a secret is refused through it
# with the remote: lines the in-process hook (GITGATE_SCAND=off) gives; a
# clean push is accepted; a policy change applies to the next push; the
# scanner killed mid-push, or the scan's child killed, never lets a push
# through; a hostile local client gets nothing, another uid cannot
# connect; the scanner exits when idle.
#
# GITGATE_CGI=path runs another build (its gitgate-hook next to it).

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
use Socket qw/ AF_UNIX SOCK_SEQPACKET pack_sockaddr_un /;
use Time::HiRes qw/ sleep time /;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $CGI = gitgate_cgi();
(my $HOOK = $CGI) =~ s{[^/]+$}{gitgate-hook};
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)
	->has_daemon($Test::Bottle::REDIS);
my $d = $t->testdir();

my $FORGE_TOKEN = 'forge-' . 'scand-token-0451';
my $ALICE = 'alice-token-0123456789';
my $HELD = 'held-' . 'scand-value-31337';
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);

###############################################################################

my $redis = redis_start($t, port => 8091);
my $forge = forge_start($t, port => 8092, token => $FORGE_TOKEN);
my $GP = port(8093);
my $OP = port(8094);
my $SP = port(8095);
my $sock = "$d/gate-fcgi.sock";
my $gate = "$d/gate";

my %P = (GITGATE_DIR => $gate, GITGATE_STORE => $redis->{url},
	GITGATE_REFRESH => 0, GITGATE_SCAND_IDLE => 10);
my $GATE = gitgate_fastcgi($sock, %P);
# the same gate, its hook in-process
my $GATE_OFF = gitgate_fastcgi($sock, %P, GITGATE_SCAND => 'off');
# the same gate, each scan's child waiting 4 s first (test only)
my $GATE_SLOW = gitgate_fastcgi($sock, %P, GITGATE_SCAND_TEST_DELAY => 4);
# and 10 s
my $GATE_SLOWER = gitgate_fastcgi($sock, %P, GITGATE_SCAND_TEST_DELAY => 10);
my $WP = port(8096);
# the same gate, the client waiting 1 s for a scan of 4 s
my $GATE_OVER = gitgate_fastcgi($sock, %P, GITGATE_SCAND_TEST_DELAY => 4,
	GITGATE_SCAND_WAIT => 1);
my $VP = port(8097);
# the same gate, a push's memory budget 1 MB
my $GATE_SMALL = gitgate_fastcgi($sock, %P, GITGATE_SCAN_MEMORY_MB => 1);
my $MP = port(8098);

$t->write_file_expand('nginx.conf', gitgate_conf(policy => $redis->{url},
	port => $GP, gate => $GATE, servers => <<"EOF"));
server {
    listen 127.0.0.1:$OP;
    client_max_body_size 0;

    location / {
        bottle_attribute git;

$GATE_OFF
    }
}

server {
    listen 127.0.0.1:$SP;
    client_max_body_size 0;

    location / {
        bottle_attribute git;

$GATE_SLOW
    }
}

server {
    listen 127.0.0.1:$WP;
    client_max_body_size 0;

    location / {
        bottle_attribute git;

$GATE_SLOWER
    }
}

server {
    listen 127.0.0.1:$VP;
    client_max_body_size 0;

    location / {
        bottle_attribute git;

$GATE_OVER
    }
}

server {
    listen 127.0.0.1:$MP;
    client_max_body_size 0;

    location / {
        bottle_attribute git;

$GATE_SMALL
    }
}
EOF

gitgate_fcgiwrap($t, $sock, children => 4);
mkdir $gate;

forge_repo($t, 'acme/widgets', commits => 1);

sub put_alice {
	store_put($t, { id => 'alice', token => $ALICE,
		held_secrets => { @_ },
		repos => [ 'github.com/acme/widgets:write' ], routes => [] });
}
put_alice(DB => $HELD);

$t->write_file('forge-token', "$FORGE_TOKEN\n");
Test::Bottle::bottlectl($t, $redis, 'forge', 'connect', 'github.com',
	'--kind', 'github', '--url', "$forge->{url}/", '--token-file',
	"$d/forge-token");

$t->run()->plan(68);

###############################################################################

sub agent {
	my ($port, @args) = @_;
	my $base = "http://x:$ALICE\@127.0.0.1:$port/github.com/";
	return run_git($t, { dir => -d "$d/work" ? "$d/work" : $d },
		'-c', "url.$base.insteadOf=https://github.com/", @args);
}

sub git_in { return run_git($t, { dir => "$d/work" }, @_); }

sub head_of {
	my (undef, $h) = git_in('rev-parse', $_[0] // 'HEAD');
	chomp $h;
	return $h;
}

sub commit_file {
	my ($file, $text) = @_;
	$t->write_file("work/$file", $text);
	git_in('add', $file);
	git_in('commit', '-q', '-m', "add $file");
	return head_of();
}

sub forge_main { return forge_refs($t, 'acme/widgets')->{'refs/heads/main'}; }

sub remote_lines { return join '', grep { /^remote: / } split /^/m, $_[0]; }

# the processes of the scanner of $gate (it and its children): pid =>
# parent pid, from /proc
sub scand_procs {
	my ($prog, $dir) = @_;
	$prog //= $CGI;
	$dir //= $gate;
	my %p;
	for my $f (glob '/proc/[0-9]*/cmdline') {
		open my $fh, '<', $f or next;
		local $/;
		my $c = <$fh> // '';
		next unless $c eq "$prog\0--scand\0$dir\0"
			&& $f =~ m{/proc/(\d+)/};
		my $pid = $1;
		open my $st, '<', "/proc/$pid/stat" or next;
		my $s = <$st> // '';
		$p{$pid} = $2 if $s =~ /^\d+ \(.*\) ([^Z]) (\d+) /;
	}
	return %p;
}

# the scanner's pid: the one whose parent is not one of them
sub scand_pid {
	my %p = scand_procs(@_);
	my @s = grep { !exists $p{$p{$_}} } keys %p;
	return @s == 1 ? $s[0] : undef;
}

sub children_of {
	my ($pid) = @_;
	my @k;
	for my $f (glob '/proc/[0-9]*/stat') {
		open my $fh, '<', $f or next;
		my $s = <$fh> // '';
		# (not a zombie: one the scanner has not reaped yet)
		push @k, $1 if $s =~ /^(\d+) \(.*\) ([^Z]) (\d+) / && $3 == $pid;
	}
	return @k;
}

sub wait_for {
	my ($cond, $s) = @_;
	for (1 .. ($s // 20) * 20) { return 1 if $cond->(); sleep 0.05; }
	return 0;
}

# a push in the background: its pid, its output in $file
sub push_bg {
	my ($port, $file, @args) = @_;
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		my ($rc, $out) = agent($port, 'push', 'origin', @args);
		open my $fh, '>', "$d/$file" or POSIX::_exit(1);
		print $fh "rc=$rc\n$out";
		close $fh;
		POSIX::_exit(0);
	}
	return $pid;
}

my ($rc, $out) = agent($GP, 'clone', '-q', 'https://github.com/acme/widgets',
	'work');
is($rc, 0, 'clone') or diag($out);

###############################################################################
# the first push starts the scanner; the hook is the client

is(readlink("$gate/.hooks/pre-receive"), $HOOK,
	'the gate\'s pre-receive hook is gitgate-hook');

my $h1 = commit_file('a.txt', "hello\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
is($rc, 0, 'first clean push accepted') or diag($out);
is(forge_main(), $h1, 'first push: on the forge');

ok(wait_for(sub { -S "$gate/.scand/sock" && scand_pid() }),
	'the scanner started, its socket in .scand');
is(sprintf('%o', (stat "$gate/.scand")[2] & 07777), '700',
	'.scand is 0700');
my $spid = scand_pid() // 0;

my $h2 = commit_file('b.txt', "clean again\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
is($rc, 0, 'clean push through the scanner') or diag($out);
is(forge_main(), $h2, 'clean push: on the forge');

###############################################################################
# a secret: the same remote: lines as the in-process hook's

commit_file('s.txt', "token = $GHP\n");
my $c = forge_connections($t);
my ($rc1, $out1) = agent($GP, 'push', 'origin', 'main');
my ($rc2, $out2) = agent($OP, 'push', 'origin', 'main');
isnt($rc1, 0, 'secret: refused through the scanner');
like($out1, qr/^remote: git-gate refused this push \(rule: github/m,
	'secret: remote: names the rule');
is(remote_lines($out1), remote_lines($out2),
	'secret: remote: lines as the in-process hook\'s');
isnt($rc2, 0, 'secret: refused in-process');
is(forge_connections($t), $c, 'secret: forge untouched');
is(scand_pid() // 0, $spid, 'the same scanner served it');
git_in('reset', '-q', '--hard', $h2);

###############################################################################
# a policy change applies to the next push

my $h3 = commit_file('p.txt', "db = rotated-$HELD\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
isnt($rc, 0, 'held secret: refused');
like($out, qr/^remote: git-gate refused this push \(rule: held_secret:DB/m,
	'held secret: remote: names it');

put_alice(OTHER => 'other-' . 'value-000000001');
($rc, $out) = agent($GP, 'push', 'origin', 'main');
is($rc, 0, 'the secret no longer held: the same push accepted')
	or diag($out);
is(forge_main(), $h3, 'policy change: on the forge');
is(scand_pid() // 0, $spid, 'policy change: the same scanner');
put_alice(DB => $HELD);

###############################################################################
# the scanner killed while its child scans: the child's verdict stands

commit_file('k.txt', "db = $HELD\n");
$c = forge_connections($t);
my $bg = push_bg($SP, 'push-k.out', 'main');
ok(wait_for(sub { children_of($spid) }), 'slow push: the scan\'s child runs');
kill 'KILL', $spid;
waitpid($bg, 0);
$out = $t->read_file('push-k.out');
like($out, qr/^rc=[1-9]/, 'scanner killed mid-push: refused');
like($out, qr/^remote: git-gate refused this push \(rule: held_secret:DB/m,
	'scanner killed mid-push: its rule, from the child');
is(forge_connections($t), $c, 'scanner killed mid-push: forge untouched');

# no scanner (its socket left behind): the hook runs in-process, and a
# new scanner starts
($rc, $out) = agent($GP, 'push', 'origin', 'main');
like($out, qr/^remote: git-gate refused this push \(rule: held_secret:DB/m,
	'no scanner: refused in-process');
ok(wait_for(sub { my $p = scand_pid(); $p && $p != $spid }),
	'no scanner: a new one started');
$spid = scand_pid() // 0;
git_in('reset', '-q', '--hard', $h3);

###############################################################################
# the scan's child killed: refused, rule internal

my $h4 = commit_file('c.txt', "clean\n");
$c = forge_connections($t);
$bg = push_bg($SP, 'push-c.out', 'main');
my @kids;
ok(wait_for(sub { @kids = children_of($spid) }),
	'slow clean push: the scan\'s child runs');
# (past its "started": killed before it, the client would scan itself)
sleep 1.5;
kill 'KILL', @kids;
waitpid($bg, 0);
$out = $t->read_file('push-c.out');
like($out, qr/^rc=[1-9]/, 'child killed: the push refused');
like($out, qr/^remote: \s git-gate \s refused \s this \s push \s
	\(rule: \s internal\) \s* \n remote: \s+ why: \s the \s scan \s ended \s without \s a \s verdict/mx,
	'child killed: rule internal, why');
is(forge_connections($t), $c, 'child killed: forge untouched');

# a lost scan in the journal all the same: the client kept the ref
# updates and gitgate-cgi refused and recorded the push

sub lost_record {
	my ($why) = @_;
	my ($ev) = grep { ($_->{reason} // '') eq $why }
		@{journal_events($t, 'git.push')};
	return 'none' unless $ev;
	return join(' ', map { $ev->{$_} // '' }
		qw/ bottle repo verdict rule /) . ' '
		. join(',', map { "$_->{old}:$_->{new}" } @{$ev->{refs} || []});
}

is(lost_record('the scan ended without a verdict'),
	"alice github.com/acme/widgets refused internal $h3:$h4",
	'child killed: in the journal, refused, rule internal, its ref');

# a scan over the client's wait (GITGATE_SCAND_WAIT): the child killed,
# the push refused and recorded
($rc, $out) = agent($VP, 'push', 'origin', 'main');
like($out, qr/^remote: \s git-gate \s refused \s this \s push \s
	\(rule: \s internal\) \s* \n remote: \s+ why: \s the \s scan \s ran \s
	over \s its \s time/mx, 'scan over its wait: refused, why') or diag($out);
is(lost_record('the scan ran over its time (GITGATE_SCAND_WAIT)'),
	"alice github.com/acme/widgets refused internal $h3:$h4",
	'scan over its wait: in the journal, refused, its ref');
is(forge_connections($t), $c, 'scan over its wait: forge untouched');

###############################################################################
# a hostile local client gets nothing

sub hostile {
	my ($msg) = @_;
	socket(my $s, AF_UNIX, SOCK_SEQPACKET, 0) or return "socket: $!";
	connect($s, pack_sockaddr_un("$gate/.scand/sock")) or return "connect: $!";
	send($s, $msg, 0);
	my $got = '';
	my $rin = '';
	vec($rin, fileno($s), 1) = 1;
	select(my $rout = $rin, undef, undef, 15) or return 'no answer, open';
	recv($s, $got, 1024, 0);
	return "got '$got'";
}

my $repo = "$gate/github.com/acme/widgets.git";
is(join(' | ', map { hostile($_) } 'garbage',
	"ggscand1\0gate\0$repo\0" . "22\0" . "0\0" . "999\0",
	"ggscand1\0gate\0$repo\0" . "22\0" . "0\0" . "1\0GITGATE_FORGE=github.com\0",
	"ggscand1\0scan\0/\0" . "22\0" . "0\0" . "0\0"),
	"got '' | got '' | got '' | got ''",
	'bad requests, a request without descriptors: closed, nothing said');

# one with descriptors but another directory than the repo's (python3
# passes them)
my $py = <<'EOF';
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
env = ["GITGATE_FORGE=github.com", "GITGATE_OWNER=acme",
       "GITGATE_REPO=widgets", "GIT_QUARANTINE_PATH=/tmp"]
parts = ["ggscand1", "gate", sys.argv[2], "22", "0", str(len(env))] + env
socket.send_fds(s, [("\0".join(parts) + "\0").encode()], [0, 1, 2])
s.settimeout(15)
print("got '%s'" % s.recv(1024).decode())
EOF
$t->write_file('hostile.py', $py);
my $res = join ' | ', map {
	my $o = `python3 $d/hostile.py $gate/.scand/sock $_ 2>&1`; chomp $o; $o
} $d, $repo;
is($res, "got '' | got ''",
	'another directory, a quarantine outside the repo: nothing runs');

SKIP: {
	skip 'not root: another uid not tried', 1 if $> != 0;
	my $o = `setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect("$gate/.scand/sock"); print("connected")
except OSError as e:
    print("refused", e.errno)
' 2>&1`;
	like($o, qr/^refused 13/, 'another uid cannot connect');
}

my $h5 = commit_file('d.txt', "after the hostile ones\n");
git_in('reset', '-q', '--hard', $h5);
($rc, $out) = agent($GP, 'push', 'origin', 'main');
is($rc, 0, 'the scanner still serves after them') or diag($out);

###############################################################################
# a bottle's warm child: alice's next pushes in one process, one after
# another, none of another bottle's

# the scanner's one child, idle between pushes
sub warm_pid {
	my %p = scand_procs();
	my $s = scand_pid() // return undef;
	my @w = grep { $p{$_} == $s } keys %p;
	return @w == 1 ? $w[0] : undef;
}

ok(wait_for(sub { -S "$gate/.scand/w-alice" && warm_pid() }),
	'warm: alice\'s child waits on .scand/w-alice');
my $wpid = warm_pid() // 0;

my $h6 = commit_file('w1.txt', "warm one\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
is($rc, 0, 'warm: a clean push accepted') or diag($out);
commit_file('w2.txt', "token = $GHP\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
like($out, qr/^remote: git-gate refused this push \(rule: github/m,
	'warm: a secret refused');
git_in('reset', '-q', '--hard', $h6);
commit_file('w3.txt', "db = $HELD\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
like($out, qr/^remote: git-gate refused this push \(rule: held_secret:DB/m,
	'warm: a held secret refused');
git_in('reset', '-q', '--hard', $h6);
my $h8 = commit_file('w4.txt', "clean after them\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
is($rc, 0, 'warm: the clean push after them accepted') or diag($out);
is(forge_main(), $h8, 'warm: on the forge');
ok(wait_for(sub { -S "$gate/.scand/w-alice" })
	&& (warm_pid() // -1) == $wpid, 'warm: the same child ran them all');

# the warm child keeps the mirror's packs mapped between pushes: repacked
# under it, a secret appended to a file whose old version is only in the
# new pack is still found, and the packs gone are let go
sub deleted_packs {
	open(my $fh, '<', "/proc/$wpid/maps") or return 'no maps';
	return join ' ', grep { m{objects/pack/.*\(deleted\)} } <$fh>;
}
like(deleted_packs(), qr/^$/, 'kept: no pack gone before the repack');
run_git($t, { dir => $repo }, 'repack', '-a', '-d', '-q');
commit_file('w1.txt', "warm one\ntoken = $GHP\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
like($out, qr/^remote: git-gate refused this push \(rule: github.*\n.*file w1\.txt line 2\s*$/m,
	'kept: repacked, a secret appended to a file refused (its line)')
	or diag($out);
git_in('reset', '-q', '--hard', $h8);
ok(wait_for(sub { -S "$gate/.scand/w-alice" })
	&& (warm_pid() // -1) == $wpid, 'kept: by the same warm child');
is(deleted_packs(), '', 'kept: the packs the repack removed, unmapped');

# a request of another bottle on alice's socket: nothing runs there;
# alice's own runs there (python3 passes the descriptors; stdin empty)
$py = <<'EOF';
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
env = ["GITGATE_FORGE=github.com", "GITGATE_OWNER=acme",
       "GITGATE_REPO=widgets", "GITGATE_BOTTLE=" + sys.argv[3]]
parts = ["ggscand1", "gate", sys.argv[2], "22", "0", str(len(env))] + env
socket.send_fds(s, [("\0".join(parts) + "\0").encode()], [0, 1, 2])
s.settimeout(15)
got = []
while True:
    m = s.recv(1024).decode()
    if not m:
        break
    w = m.split()
    got.append(w[0] if w[0] == "done" else " ".join(w[:2]))
    if w[0] == "done":
        break
print("got '%s'" % " ".join(got))
EOF
$t->write_file('warm.py', $py);
$res = `python3 $d/warm.py $gate/.scand/w-alice $repo bob </dev/null 2>&1`;
chomp $res;
is($res, "got ''", 'warm: another bottle\'s request, nothing runs');
ok(wait_for(sub { -S "$gate/.scand/w-alice" }), 'warm: it waits again');
$res = `python3 $d/warm.py $gate/.scand/w-alice $repo alice </dev/null 2>/dev/null`;
chomp $res;
is($res, "got 'started $wpid done'", 'warm: alice\'s own, run by it');

# busy (a push of 10 s): not listening, the next push goes to the scanner
# at once; then it waits again
commit_file('w5.txt', "slow\n");
$bg = push_bg($WP, 'push-w.out', 'main');
ok(wait_for(sub { !-e "$gate/.scand/w-alice" }),
	'busy: the warm child no longer waits');
($rc, $out) = agent($GP, 'push', 'origin', 'HEAD:refs/heads/side');
is($rc, 0, 'busy: another push of alice accepted') or diag($out);
is(waitpid($bg, POSIX::WNOHANG()), 0, 'busy: while the slow one runs');
waitpid($bg, 0);
like($t->read_file('push-w.out'), qr/^rc=0/, 'busy: the slow one accepted');
ok(wait_for(sub { -S "$gate/.scand/w-alice" })
	&& (warm_pid() // -1) == $wpid, 'busy: the same child waits again');

# a push whose memory budget's quarter (GITGATE_SCAN_MEMORY_MB=1: 256 KB)
# the child's peak RSS has outgrown since it started: the child runs it,
# then leaves (the next push may not find what malloc kept counted in its
# budget); alice's next push has a new warm child
commit_file('w6.txt', "budget\n");
agent($MP, 'push', 'origin', 'main');
# (at once: 3 s, where its idle time is 10 s)
ok(wait_for(sub { my %p = scand_procs(); !exists $p{$wpid} }, 3),
	'peak RSS over a quarter of the push\'s budget: the warm child leaves');
# (accepted or over its budget: on from what the forge has)
agent($GP, 'fetch', '-q', 'origin');
git_in('reset', '-q', '--hard', 'origin/main');
commit_file('w7.txt', "after it\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
is($rc, 0, 'after it: a push of alice accepted') or diag($out);
# (the scanner may have left meanwhile, idle while the warm child served:
# then that push ran in the hook and started a new one, whose child of
# the next push stays warm)
commit_file('w8.txt', "and another\n");
($rc, $out) = agent($GP, 'push', 'origin', 'main');
sub new_child {
	my %p = scand_procs();
	my $s = scand_pid() // return 0;
	return grep { $_ != $wpid && $p{$_} == $s } keys %p;
}
ok($rc == 0 && wait_for(sub { -S "$gate/.scand/w-alice" && new_child() }),
	'after it: a new warm child')
	or diag($out, 'scanner and children: ', join(' ', %{{ scand_procs() }}),
		'; .scand: ', join(' ', map { s{.*/}{}r } glob("$gate/.scand/*")));

###############################################################################
# gitgate-scan's client: a scanner directory whose <dir>/sock would not fit
# a socket's address (108 bytes) is none, the hook runs gitgate-scan itself
# and creates nothing; one byte shorter, it starts a scanner there

# gitgate-scan's hook with the scanner directory dir: its status and
# output (a policy it cannot open: "cannot open", status 1)
sub hook_scan {
	my ($dir, $idle, $bottle) = @_;
	my $out = `GITGATE_SCAND_DIR=$dir GITGATE_SCAND_IDLE=$idle $HOOK --policy $d/no-such-policy --bottle $bottle </dev/null 2>&1`;
	return ($? >> 8, $out);
}

{
	my $base = "$d/long-";
	my $short = $base . ('s' x (102 - length($base)));
	my $long = $base . ('l' x (103 - length($base)));
	my ($rc1, $out1) = hook_scan($long, 1, 'b1');
	ok($rc1 == 1 && $out1 =~ /no-such-policy: cannot open/ && !-e $long,
		'a scanner directory of 103 bytes: gitgate-scan runs in the hook, nothing created')
		or diag("rc $rc1: $out1");
	my ($rc2, $out2) = hook_scan($short, 1, 'b1');
	ok($rc2 == 1 && wait_for(sub { -S "$short/sock" }, 10),
		'of 102 bytes: a scanner started there')
		or diag("rc $rc2: $out2");
}

# a client gone before the child says "started" (a hook that gave up
# waiting and refused): nothing runs for it.  gitgate-scan's scanner, a
# request that writes "cannot open" to the stdout and stderr it passes;
# the same request from a client that waits runs.  The one that leaves
# sends it while the scanner is stopped, so it is gone before any child
# can answer

{
	my $sd = "$d/sc2";
	hook_scan($sd, 30, 'b2');
	my $py = <<'EOF';
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
out = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
parts = ["ggscand1", "scan", "/", "22", "4", "--policy", sys.argv[3],
         "--bottle", "b2", "0"]
socket.send_fds(s, [("\0".join(parts) + "\0").encode()], [0, out, out])
if sys.argv[4] == "leave":
    s.close()
    os._exit(0)
s.settimeout(15)
said = []
while True:
    m = s.recv(1024)
    if not m:
        break
    said.append(m.decode().split()[0])
print(" ".join(said))
EOF
	$t->write_file('gone.py', $py);
	my $ready = wait_for(sub { -S "$sd/sock" }, 10);
	my $said = `python3 $d/gone.py $sd/sock $d/gone-wait.out $d/no-such-policy wait </dev/null 2>&1`;
	chomp $said;
	my $scanner = scand_pid($HOOK =~ s{gitgate-hook$}{gitgate-scan}r, $sd);
	kill 'STOP', $scanner if $scanner;
	`python3 $d/gone.py $sd/sock $d/gone-leave.out $d/no-such-policy leave </dev/null 2>&1`;
	kill 'CONT', $scanner if $scanner;
	sleep 2;
	ok($ready && $scanner && $said eq 'started done'
		&& $t->read_file('gone-wait.out') =~ /no-such-policy: cannot open/
		&& -e "$d/gone-leave.out" && -z "$d/gone-leave.out",
		'a client gone before "started": nothing runs for it')
		or diag("ready $ready, scanner ", $scanner // 'none',
			", said '$said', wait: ",
			$t->read_file('gone-wait.out'), ', leave: ',
			-s "$d/gone-leave.out" ? $t->read_file('gone-leave.out') : '');
}

# a warm child leaves after 1000 pushes (docs/gitgate.md): gitgate-scan's
# scanner, its fresh child's first push by the hook, then requests on the
# child's own socket until it binds it no more; each one answered
# "started <pid>" then "done"

{
	my $sd = "$d/sc3";
	hook_scan($sd, 60, 'b3');
	my $ready = wait_for(sub { -S "$sd/sock" }, 10);
	hook_scan($sd, 60, 'b3');
	my $py = <<'EOF';
import os, socket, sys, time
path, policy = sys.argv[1], sys.argv[2]
parts = ["ggscand1", "scan", "/", "22", "4", "--policy", policy,
         "--bottle", "b3", "0"]
msg = ("\0".join(parts) + "\0").encode()
null = os.open("/dev/null", os.O_RDWR)
served, pids, odd = 0, set(), ""
while served < 1100:
    t = time.time()
    while not os.path.exists(path) and time.time() - t < 5:
        time.sleep(0.001)
    if not os.path.exists(path):
        break
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
    except ConnectionRefusedError:
        # bound, not yet listening (a hook then asks the scanner)
        s.close()
        time.sleep(0.001)
        continue
    socket.send_fds(s, [msg], [null, null, null])
    s.settimeout(15)
    said = []
    while True:
        m = s.recv(1024)
        if not m:
            break
        said.append(m.decode())
    s.close()
    if len(said) != 2 or not said[0].startswith("started ") \
       or not said[1].startswith("done "):
        odd = repr(said)
        break
    served += 1
    pids.add(said[0].split()[1])
print(served, " ".join(sorted(pids)), odd)
EOF
	$t->write_file('warm1000.py', $py);
	my $wait = wait_for(sub { -S "$sd/w-b3" }, 10);
	my ($served, $pid, $odd) = split(/ /,
		`python3 $d/warm1000.py $sd/w-b3 $d/no-such-policy 2>&1`, 3);
	chomp($odd //= '');
	ok($ready && $wait && $served == 999 && $pid =~ /^\d+$/ && $odd eq ''
		&& wait_for(sub { !kill(0, $pid) }, 5) && !-e "$sd/w-b3",
		'a warm child: its first push and 999 more, then it leaves')
		or diag("ready $ready, wait $wait, served $served, pids $pid, $odd");
}

# the gate's hook keeps git's ref updates in a memfd (for a scan that
# dies); when it cannot keep them whole (here a file size limit of a few
# hundred bytes, its signal ignored, and 64 KB of updates) it refuses the
# push before it asks any scanner: a hook that read the rest itself would
# check some updates and git would make them all

{
	$t->write_file('updates.txt',
		join('', (('0' x 40) . ' ' . ('1' x 40) . " refs/heads/x\n") x 800));
	my $out = `GITGATE_DIR=$d/gd sh -c 'trap "" XFSZ; ulimit -f 1; exec $HOOK' <$d/updates.txt 2>&1`;
	my $rc = $? >> 8;
	ok($rc == 1
		&& $out =~ /\(rule: internal\)\n  why: the ref updates could not be kept\n/
		&& !-e "$d/gd/.scand",
		'ref updates not kept whole: refused, no scanner asked')
		or diag("rc $rc: $out");
}

###############################################################################
# idle: gone, its socket too

ok(wait_for(sub { !scand_pid() && !-e "$gate/.scand/sock" }, 40),
	'idle: the scanner exits, its socket removed');

###############################################################################
# a scanner that says nothing for 30 s (here, with none left, a socket
# that holds the request and its descriptors for 32 s): refused after 30
# s, and recorded all the same

{
	my $py = <<'EOF';
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen(8)
c, _ = s.accept()
msg, fds, flags, addr = socket.recv_fds(c, 65536, 8)
time.sleep(float(sys.argv[2]))
for f in fds:
    os.close(f)
c.close()
EOF
	$t->write_file('mute.py', $py);
	my $old = forge_main();
	my $new = commit_file('m.txt', "mute\n");
	system("python3 $d/mute.py $gate/.scand/sock 32 >/dev/null 2>&1 &");
	my $up = wait_for(sub { -S "$gate/.scand/sock" }, 10);
	my $c = forge_connections($t);
	my $t0 = time();
	my ($rc, $out) = agent($GP, 'push', 'origin', 'main');
	my $took = time() - $t0;
	like($out, qr/^remote: \s git-gate \s refused \s this \s push \s
		\(rule: \s internal\) \s* \n remote: \s+ why: \s the \s scanner \s
		did \s not \s start \s the \s scan \s in \s time/mx,
		'a mute scanner: refused, why') or diag($out);
	is(($up && $took >= 29 ? 'after 30 s ' : "up $up, after $took s ")
		. lost_record('the scanner did not start the scan in time'),
		"after 30 s alice github.com/acme/widgets refused internal $old:$new",
		'a mute scanner: refused after 30 s, in the journal with its ref');
	is(forge_connections($t), $c, 'a mute scanner: forge untouched');
}

###############################################################################
