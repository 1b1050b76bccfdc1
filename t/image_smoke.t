#!/usr/bin/perl

# The image, built and started (docs/install.md, "The image"): the
# Dockerfile built with buildah in docker format from a debootstrapped
# debian:12-slim (scripts/bootstrap-base-image), as "Building without a
# registry" says, then the gateway run from it with `buildah run` (chroot
# isolation, the host's network; the image's user, uid 9099) with all
# three daemons on a Redis store of the test's own: the proxy answers 407,
# an MCP initialize through supervise's listener answers 200, a push
# through git-gate's listener is refused for want of a grant, the image's
# HEALTHCHECK command passes, every log line reaches bottle-init's stdout
# with its daemon's name, and SIGTERM stops it all.  Also: the image is
# at most 200 MB, its /lib is still the base's link to usr/lib, it keeps
# its HEALTHCHECK, and holds neither systemd nor perl's modules.
#
# The listeners are on random ports of 127.0.0.1 (BOTTLE_LISTEN...), not
# the image's 9099, 9100 and 9420, which other tests may use.  Needs root,
# buildah and debootstrap (scripts/install-deps.sh installs both); the
# base image is kept in build/image/ (the test's own buildah storage) for
# the next run.  Not run in the sanitizer pass: the image builds its own
# binaries.

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

my $t = Test::Nginx->new()->has_daemon('curl');
my $d = $t->testdir();
my $REPO = $Test::Nginx::REPO;

plan(skip_all => 'the sanitizer pass: the image builds its own binaries')
	if $ENV{TEST_NGINX_PRELOAD};
plan(skip_all => 'not root: buildah and debootstrap need root') if $> != 0;
for my $tool (qw/ buildah debootstrap /) {
	plan(skip_all => "no $tool: the image is not built "
		. "(scripts/install-deps.sh installs it)")
		unless `sh -c 'PATH=\$PATH:/usr/sbin:/sbin command -v $tool'`;
}

my $CACHE = "$REPO/build/image";
my $BASE = 'docker.io/library/debian:12-slim';
my $IMAGE = "localhost/ngx-bottle-test:$$";
my $TOKEN = 'image-token-0123456789';
my $GW = port(8080);
my $SV = port(8081);
my $GG = port(8082);
my $UID = 9099;

# the test's own buildah storage, vfs as docs/install.md says
system('mkdir', '-p', "$CACHE/storage", "$CACHE/runroot") == 0 or die;
open my $fh, '>', "$CACHE/storage.conf" or die "$CACHE/storage.conf: $!";
print $fh "[storage]\ndriver = \"vfs\"\n"
	. "graphroot = \"$CACHE/storage\"\nrunroot = \"$CACHE/runroot\"\n";
close $fh;
$ENV{CONTAINERS_STORAGE_CONF} = "$CACHE/storage.conf";
delete $ENV{BUILDAH_STORAGE_DRIVER};
$ENV{PATH} .= ':/usr/sbin:/sbin';

my ($ctr, $gw_pid, @ctrs, @procs);

END {
	local ($?, $!);
	stop_gateway('KILL') if $gw_pid;
	kill 'KILL', @procs, gw_procs() if $GW;
	system("buildah rm $_ >/dev/null 2>&1") for @ctrs;
	system("buildah rmi -f $IMAGE >/dev/null 2>&1");
}

$SIG{INT} = $SIG{TERM} = $SIG{HUP} = sub { exit 1; };

plan(tests => 26);

###############################################################################

# the base, debootstrapped once

my $t0 = time();
my $base_made = 0;
if (!`buildah images -q $BASE 2>/dev/null`) {
	my ($rc, $out) = run("$REPO/scripts/bootstrap-base-image --tool buildah");
	$base_made = 1;
	is($rc, 0, 'scripts/bootstrap-base-image') or diag($out);
} else {
	pass("the base from an earlier run (rm -rf $CACHE to make it again)");
}
my $t_base = time() - $t0;

# the image, as docs/install.md builds it

$t0 = time();
my ($rc, $out) = run("buildah bud --format docker --isolation chroot "
	. "--pull-never -t $IMAGE $REPO");
my $t_build = time() - $t0;
is($rc, 0, 'buildah bud --format docker: the image builds')
	or diag(join("\n", (split /\n/, $out)[-30 .. -1]));
diag(sprintf("base %s %.0f s, image built in %.0f s",
	$base_made ? 'made in' : 'cached,', $t_base, $t_build));

BAIL_OUT('no image') if $rc;

my ($irc, undef, $insp) = run("buildah inspect --type image $IMAGE");
my $cfg = eval { JSON::PP::decode_json($insp) } // {};
ok(!$irc && $cfg->{Docker}, 'buildah inspect: the image\'s configuration')
	or diag("exit $irc, " . substr($insp, 0, 2000));
my $docker = $cfg->{Docker}{config} // $cfg->{Docker}{Config} // {};
my $hc = $docker->{Healthcheck} // {};
is(join(' ', @{ $hc->{Test} // [] }), 'CMD /usr/local/bin/bottle-init health',
	'the HEALTHCHECK is kept (docker format)');
my @entry = @{ $docker->{Entrypoint} // [] };
is("@entry", '/usr/local/bin/bottle-init', 'the entrypoint: bottle-init');

$ctr = `buildah from --pull-never $IMAGE`;
chomp $ctr;
push @ctrs, $ctr;
my $mnt = `buildah mount $ctr`;
chomp $mnt;
ok($mnt && -d "$mnt/usr/local/bin", 'the image\'s file system') or diag($mnt);

my $bytes = (split ' ', `du -sxb $mnt`)[0] // 0;
diag(sprintf('the image: %.1f MB', $bytes / 1e6));
ok($bytes > 50e6 && $bytes <= 200e6, 'the image: 200 MB at most')
	or diag(`du -xm -d 3 $mnt | sort -n | tail -25`);
is(readlink("$mnt/lib"), 'usr/lib', '/lib is still the link to usr/lib');
ok(-f "$mnt/usr/lib/systemd/system/ngx-bottle-supervise.service",
	'the units under /usr/lib/systemd/system');
ok(!-e "$mnt/usr/lib/systemd/systemd" && !-d "$mnt/usr/share/perl/5.36",
	'neither systemd nor perl\'s modules');
system("buildah umount $ctr >/dev/null");

###############################################################################

# the gateway: all three daemons, the store of the test's own

my $store = redis_start($t, port => 8131);

# one directory of the test's, /srv/gw in the container, for the CA, the
# bottle and the run directory (which `bottle-init health`, a second
# buildah run, must see).  One: buildah run's chroot isolation mounts a
# second bind mount over the image's VOLUMEs wrongly
mkdir "$d/$_" or die "$d/$_: $!" for qw/ gw gw\/run /;
system("$REPO/scripts/bottle-ca create $d/gw/ca >/dev/null") == 0
	or die "bottle-ca create failed";
$t->write_file('gw/policy.json', JSON::PP->new->canonical->encode({
	bottles => [ { id => 'agent', token => $TOKEN, routes => [] } ] }));
system('chown', '-R', "$UID:$UID", "$d/gw") == 0 or die;

my @ENV = (
	BOTTLE_GATEWAY_DAEMONS => 'nginx,supervise,gitgate',
	BOTTLE_STORE => $store->{url},
	BOTTLE_LISTEN => "127.0.0.1:$GW",
	BOTTLE_SUPERVISE_LISTEN => "127.0.0.1:$SV",
	BOTTLE_GITGATE_LISTEN => "127.0.0.1:$GG",
	BOTTLE_RESOLVER => '127.0.0.1',
	BOTTLE_WORKERS => 1,
	BOTTLE_CA_DIR => '/srv/gw/ca',
	BOTTLE_POLICY => '/srv/gw/policy.json',
	BOTTLE_RUN_DIR => '/srv/gw/run',
);
my @RUN = ('buildah', 'run', '--isolation', 'chroot', '-v', "$d/gw:/srv/gw",
	(map { ('-e', "$ENV[$_]=$ENV[$_ + 1]") } grep { !($_ % 2) } 0 .. $#ENV),
	$ctr, '--');

# the bottle, put in the store by the image's own bottlectl
($rc, $out) = run(join(' ', @RUN,
	"bottlectl --store $store->{url} policy put /srv/gw/policy.json"));
is($rc, 0, 'the image\'s bottlectl puts the bottle in the store')
	or diag($out);

$gw_pid = fork() // die "fork: $!";
if ($gw_pid == 0) {
	open STDOUT, '>', "$d/gw.out" or die;
	open STDERR, '>&', \*STDOUT or die;
	setpgrp(0, 0);
	exec @RUN, @entry or die "exec: $!";
}

ok(wait_until(sub { proxy_status() eq '407' }, 60),
	'the proxy answers a request without credentials: 407')
	or diag(text());

my $mcp = mcp_initialize("Bearer $TOKEN");
is($mcp->{status}, 200, 'an MCP initialize through supervise\'s listener: 200');
like($mcp->{headers}, qr/^Mcp-Session-Id: [0-9a-f]{32}\r?$/mi,
	'an MCP session from supervise-helper');

like(gate_post(), qr/^HTTP\/1\.1 403 .*rule: repo_not_granted/s,
	'a push through git-gate\'s listener: refused, no grant');

($rc, $out) = run(join(' ', @RUN, @{ $hc->{Test} }[1 .. $#{ $hc->{Test} }]));
is($rc, 0, 'the HEALTHCHECK command passes');
like($out, qr/^ok: nginx,supervise,gitgate$/m, 'all three daemons up');

my $master = file("$d/gw/run/nginx/nginx.pid");
is((stat "/proc/" . ($master // 0))[4], $UID, 'nginx runs as the image\'s user');

# the logs: bottle-init's stdout, each line with its daemon's name, the
# access logs too; nginx's error log at the shipped warn

ok(wait_until(sub { text() =~ /^\[nginx\] 127\.0\.0\.1 \[[^]]+\] "GET example\.invalid\/" 407 /m }),
	'the access log on stdout, prefixed') or diag(text());
my @bare = grep { length && !/^\[(init|nginx|supervise|gitgate)\] / }
	split /\n/, text();
is(join("\n", @bare), '', 'every line has a daemon\'s name');
like($t->read_file('gw/run/nginx/conf/nginx.conf'),
	qr/^error_log\s+stderr warn;$/m, 'nginx\'s error log: stderr, warn');
unlike(text(), qr/\[notice\].*start worker process/,
	'no notice lines once running (the configuration\'s own are before it applies)');

# SIGTERM to bottle-init, as docker stop sends it to PID 1 (buildah run
# would kill its child, not pass a signal on)

@procs = gw_procs();
my ($init) = grep { comm($_) eq 's6-svscan' } @procs;
ok($init, 'bottle-init runs (as s6-svscan)') or diag("@procs");
kill 'TERM', $init if $init;
my ($st, $secs) = stop_gateway();
is($st, 0, 'SIGTERM: exit 0') or diag(text());
like(text(), qr/^\[nginx\] nginx stopped/m, 'nginx stopped');
1 while waitpid(-1, WNOHANG) > 0;	# buildah's runtime: the test's child
wait_until(sub { !grep { alive($_) } @procs }, 10);
is(join(' ', map { "$_ " . comm($_) } grep { alive($_) } @procs), '',
	'every daemon gone');

###############################################################################

sub run {
	my ($cmd) = @_;
	my $stdout = `$cmd 2>$d/run.err`;
	my $rc = $? >> 8;
	my $out = $stdout . $t->read_file('run.err');
	$t->write_file('run.log', "$cmd: exit $rc\n$out");
	return ($rc, $out, $stdout);
}

sub text {
	open my $fh, '<', "$d/gw.out" or return '';
	local $/;
	return <$fh> // '';
}

sub file {
	my ($f) = @_;
	open my $fh, '<', $f or return undef;
	my $v = <$fh> // '';
	chomp $v;
	return $v;
}

sub wait_until {
	my ($cond, $secs) = @_;
	my $t0 = time();
	while (time() - $t0 < ($secs // 15)) {
		return 1 if $cond->();
		sleep 0.2;
	}
	return 0;
}

# wait for the buildah run of the gateway to exit; KILL: kill it and
# what it started
sub stop_gateway {
	my ($sig) = @_;
	if ($sig) {
		kill $sig, $gw_pid, descendants($gw_pid), gw_procs();
	}
	my $t0 = time();
	while (time() - $t0 < 30) {
		if (waitpid($gw_pid, WNOHANG) == $gw_pid) {
			my $st = $?;
			undef $gw_pid;
			return ($st >> 8 | ($st & 127), time() - $t0);
		}
		sleep 0.1;
	}
	kill 'KILL', $gw_pid, descendants($gw_pid), gw_procs();
	waitpid($gw_pid, 0);
	undef $gw_pid;
	return (undef, undef);
}

# the processes under $pid, from /proc
sub descendants {
	my ($pid) = @_;
	my %kids;
	for my $stat (glob('/proc/[0-9]*/stat')) {
		open my $fh, '<', $stat or next;
		my $l = <$fh> // next;
		push @{ $kids{$2} }, $1 if $l =~ /^(\d+) \(.*\) \S (\d+) /s;
	}
	my (@all, @queue) = ((), $pid);
	while (defined(my $p = shift @queue)) {
		for my $k (@{ $kids{$p} // [] }) {
			push @all, $k;
			push @queue, $k;
		}
	}
	return @all;
}

# the gateway's processes: buildah's chroot runtime is not buildah run's
# child, but they all have the environment given
sub gw_procs {
	my @p;
	for my $env (glob('/proc/[0-9]*/environ')) {
		open my $fh, '<', $env or next;
		local $/;
		my $e = <$fh> // next;
		push @p, $env =~ m{^/proc/(\d+)/} if $e =~ /(?:^|\0)BOTTLE_LISTEN=127\.0\.0\.1:$GW\0/;
	}
	return @p;
}

# running: not gone, nor a zombie
sub alive {
	my ($pid) = @_;
	my $st = file("/proc/$pid/stat") // return 0;
	return $st !~ /^\d+ \(.*\) Z /s;
}

sub comm {
	my ($pid) = @_;
	return file("/proc/$pid/comm") // '';
}

sub proxy_status {
	return `curl -s -o /dev/null -w '%{http_code}' --noproxy '' --max-time 5 -x http://127.0.0.1:$GW http://example.invalid/ 2>/dev/null`;
}

sub gate_post {
	my $auth = 'Basic ' . MIME::Base64::encode_base64("x:$TOKEN", '');
	return `curl -s -i --max-time 10 -H 'Authorization: $auth' -H 'Content-Type: application/x-git-receive-pack-request' --data-binary 0000 http://127.0.0.1:$GG/github.com/acme/widgets.git/git-receive-pack 2>/dev/null` // '';
}

sub mcp_initialize {
	my ($auth) = @_;
	my $body = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
		. '{"protocolVersion":"2025-06-18","capabilities":{},'
		. '"clientInfo":{"name":"image_smoke.t","version":"1"}}}';
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

###############################################################################
