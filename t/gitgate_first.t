#!/usr/bin/perl

# git-gate's first clone of a repo (gitgate-helper/gg_first.c,
# docs/gitgate.md "First clone"): in protocol v2, the gate's copy is not
# filled before the ref advertisement; the agent's fetch goes to the forge
# (with the gate's token, only heads and tags) and its pack into the copy
# at once.  Same refs and objects as a clone from the forge, one upload-pack
# fetch from the forge for three concurrent first clones, the copy serving
# the next clone, an interrupted clone leaving nothing wrong, no grant no
# forge contact, refs outside heads and tags never shown, protocol v0.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use POSIX qw/ WNOHANG /;
use Time::HiRes qw/ sleep time /;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $CGI = gitgate_cgi();
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP);
my $d = $t->testdir();

my $TOKEN = 'first-token-0123456789';
my $FORGE_TOKEN = 'forge-first-token-0451';

my $forge = forge_start($t, port => 8094, token => $FORGE_TOKEN);
my $GP = port(8095);
my $sock = "$d/gate-fcgi.sock";

write_policy($t, 'policy.json', { bottles => [ { id => 'b', token => $TOKEN,
	repos => [ 'github.com/data/small', 'github.com/data/more',
		'github.com/data/cut', 'github.com/data/old' ],
	routes => [] } ] });
$t->write_file('forge-token', "$FORGE_TOKEN\n");
write_policy($t, 'forges.json', { forges => { 'github.com' => {
	kind => 'github', url => $forge->{url},
	token_file => "$d/forge-token" } } });
mkdir "$d/gate";

my $GATE = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_POLICY => "$d/policy.json",
	GITGATE_FORGES => "$d/forges.json",
	GITGATE_REFRESH => 0);

$t->write_file_expand('nginx.conf', gitgate_conf(policy => "$d/policy.json",
	port => $GP, gate => $GATE, realm => 0));

gitgate_fcgiwrap($t, $sock, children => 6);

my %R;
for my $n (qw/ small more old /) {
	$R{$n} = forge_repo($t, "data/$n", size => '3M', file_size => '256K',
		commits => 3);
}
$R{cut} = forge_repo($t, 'data/cut', size => '40M', file_size => '1M',
	commits => 2);
$R{secret} = forge_repo($t, 'data/secret', commits => 2);

# on data/small: a branch, an annotated tag, and a pull request's ref to
# a commit no head or tag reaches
my $small = $R{small}{path};
my $SECRET = fgit($small, 'commit-tree', '-m', 'a secret', '-p',
	$R{small}{head}, "$R{small}{head}^{tree}");
fgit($small, 'update-ref', 'refs/pull/1/head', $SECRET);
fgit($small, 'branch', 'dev', $R{small}{head} . '~1');
fgit($small, 'tag', '-a', '-m', 'v1', 'v1', $R{small}{head} . '~2');

$t->run()->plan(34);

###############################################################################

my $gate = "http://x:$TOKEN\@127.0.0.1:$GP/github.com/";
my @via = ('-c', "url.$gate.insteadOf=https://github.com/");

# the advertisement of an empty copy: no fill, nothing fetched yet

my $adv = gate_get('/github.com/data/small/info/refs?service=git-upload-pack',
	'Git-Protocol' => 'version=2');
like($adv, qr/version 2/, 'v2 advertisement from an empty copy');
is(fetches(), 0, 'v2 advertisement: no fetch from the forge before the '
	. 'agent asks');

# a hand-made fetch of the pull request's commit: never served

my $body = pkt("command=fetch\n") . '0001' . pkt("ofs-delta\n")
	. pkt("want $SECRET\n") . pkt("done\n") . '0000';
my $r = gate_post('/github.com/data/small/git-upload-pack', $body);
unlike($r, qr/packfile/, 'a want outside heads and tags: no pack');
ok(!has_object("$d/gate/github.com/data/small.git", $SECRET),
	'a want outside heads and tags: not in the copy');

# a first clone (the copy emptied again), against one from the forge

system('rm', '-rf', "$d/gate/github.com/data/small.git");
my $n0 = fetches();
my $l0 = @{forge_log($t)};
my ($rc, $out) = run_git($t, @via, 'clone', '-q', '--mirror',
	'https://github.com/data/small', 'small-gate.git');
is($rc, 0, 'first clone') or diag($out);
is(fetches() - $n0, 1, 'first clone: one fetch from the forge');
($rc, $out) = run_git($t, 'clone', '-q', '--mirror',
	$R{small}{auth_url}, 'small-forge.git');
is($rc, 0, 'clone from the forge') or diag($out);

my %forge = refs("$d/small-forge.git");
my %agent = refs("$d/small-gate.git");
delete $forge{'refs/pull/1/head'};
is(join(',', map { "$_=$agent{$_}" } sort keys %agent),
	join(',', map { "$_=$forge{$_}" } sort keys %forge),
	'first clone: the forge\'s heads and tags');
is(objects("$d/small-gate.git"), objects_reachable("$d/small-forge.git",
	map { $forge{$_} } keys %forge), 'first clone: the same objects');
ok(!has_object("$d/small-gate.git", $SECRET),
	'first clone: no pull request commit');
# the copy's index and refresh finish after the agent's answer
Test::Bottle::Forge::gate_settled($t);
is(refs_line("$d/gate/github.com/data/small.git"),
	join(',', map { "$_=$forge{$_}" } sort keys %forge),
	'first clone: the copy holds the refs');
is(`git --git-dir=$d/gate/github.com/data/small.git fsck 2>&1; echo \$?`,
	"0\n", 'first clone: the copy is whole');
ok(!-e "$d/gate/github.com/data/small.git/gitgate-first.pack",
	'first clone: the streamed pack indexed, its file removed');

# the fetched files' blob tails (docs/gitgate.md, "Appended files"): a
# pass of the gate's after the fill records each file of 1 KB or more at
# the branches' tips, its size and newline count as its bytes say

my $copy = "$d/gate/github.com/data/small.git";
my %want;
for my $tip (qw/ main dev /) {
	for (split /\n/, `git --git-dir=$copy ls-tree -r -l $tip`) {
		$want{$1} = $2 if /^\S+ blob ([0-9a-f]{40}) +(\d+)\t/ && $2 >= 1024;
	}
}
my @missing;
for (1 .. 600) {
	@missing = grep { !gitgate_tail($copy, $_) } sort keys %want;
	last unless @missing;
	sleep 0.1;
}
ok(keys %want >= 12 && !@missing, 'first clone: the files at the tips of '
	. 'main and dev recorded (' . scalar(keys %want) . ' blobs)')
	or diag("no record: @missing");
my @wrong = grep {
	my $b = `git --git-dir=$copy cat-file blob $_`;
	my ($flags, $size, $lines) = gitgate_tail($copy, $_);
	!defined $size || $size != length($b) || $lines != ($b =~ tr/\n//)
		|| ($flags & 1) != (substr($b, -1) eq "\n" ? 1 : 0)
} sort keys %want;
is("@wrong", '', 'first clone: each record\'s size, newlines and last '
	. 'newline those of its blob');

# the gate's own requests (libcurl, its user agent): the token with the
# first request of each, never a 401 round trip
my @own = grep { $_->{user_agent} eq 'git/ngx-bottle' }
	@{forge_log($t, since => $l0)};
is(join(' ', map { "$_->{method}:$_->{status}:$_->{user}" } @own),
	join(' ', ('GET:200:x-access-token POST:200:x-access-token') x 2),
	'first clone: the gate\'s requests carry the token, no 401');

# the second clone is served from the copy

$n0 = fetches();
($rc, $out) = run_git($t, @via, 'clone', '-q', '--no-checkout',
	'https://github.com/data/small', 'small-2');
is($rc, 0, 'second clone') or diag($out);
is(fetches() - $n0, 0, 'second clone: no pack from the forge');

# three first clones at once: one fetch

$n0 = fetches();
my @pids;
for my $i (1 .. 3) {
	my $pid = fork();
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		my ($rc) = run_git($t, @via, 'clone', '-q', '--no-checkout',
			'https://github.com/data/more', "more-$i");
		POSIX::_exit($rc == 0 ? 0 : 1);
	}
	push @pids, $pid;
}
my $ok = 0;
for (@pids) { waitpid($_, 0); $ok++ if $? == 0; }
diag(`cat $d/git-client.*.out 2>/dev/null | tail -20`) if $ok != 3;
is($ok, 3, 'three first clones at once');
is(fetches() - $n0, 1, 'three first clones: one fetch from the forge');
is(join(' ', map { `git --git-dir=$d/more-$_/.git rev-parse HEAD` =~ s/\n//r }
	1 .. 3), join(' ', ($R{more}{head}) x 3),
	'three first clones: the forge\'s head');

# a first clone cut short (the client killed mid-pack), then another

my $pid = fork();
die "fork: $!\n" unless defined $pid;
if ($pid == 0) {
	my ($rc) = run_git($t, @via, 'clone', '-q', '--no-checkout',
		'https://github.com/data/cut', 'cut-1');
	POSIX::_exit(0);
}
my $seen = 0;
for (1 .. 600) {
	$seen = glob("$d/cut-1/.git/objects/pack/tmp_pack_*") ? 1 : 0;
	last if $seen || waitpid($pid, WNOHANG) == $pid;
	sleep 0.05;
}
kill 'KILL', $pid;
system("pkill -KILL -P $pid 2>/dev/null");
waitpid($pid, 0);
ok($seen, 'cut clone: killed while the pack came');
forge_log($t, wait => 30);

($rc, $out) = run_git($t, @via, 'clone', '-q', '--no-checkout',
	'https://github.com/data/cut', 'cut-2');
is($rc, 0, 'clone after a cut one') or diag($out);
is(`git --git-dir=$d/cut-2/.git rev-parse HEAD` =~ s/\n//r, $R{cut}{head},
	'clone after a cut one: the forge\'s head');
is(`git --git-dir=$d/gate/github.com/data/cut.git fsck 2>&1; echo \$?`,
	"0\n", 'clone after a cut one: the copy is whole');

# no grant: refused before the forge hears of it

my $c = forge_connections($t);
($rc, $out) = run_git($t, @via, 'clone', '-q',
	'https://github.com/data/secret', 'secret');
isnt($rc, 0, 'no grant: refused');
like($out, qr/rule: repo_not_granted/, 'no grant: the rule');
is(forge_connections($t), $c, 'no grant: forge untouched');

# protocol v0: the copy filled first, then served

($rc, $out) = run_git($t, @via, '-c', 'protocol.version=0', 'clone', '-q',
	'--no-checkout', 'https://github.com/data/old', 'old');
is($rc, 0, 'protocol v0 first clone') or diag($out);
is(`git --git-dir=$d/old/.git rev-parse HEAD` =~ s/\n//r, $R{old}{head},
	'protocol v0 first clone: the forge\'s head');

# the 1 MiB bound on an agent's request body (docs/gitgate.md): an ls-refs
# of exactly 1 MiB (40,328 ref-prefix lines and one shorter) goes to the
# forge as the gate's own request; one byte more and the copy is filled
# first, then serves it

for my $extra (0, 1) {
	system('rm', '-rf', "$d/gate/github.com/data/small.git");
	my $body = "0014command=ls-refs\n0001"
		. ("001aref-prefix refs/tags/\n" x 40328)
		. ($extra ? "0015ref-prefix refs/\n" : "0014ref-prefix refs\n")
		. '0000';
	my $len = length($body);
	my $mark = @{forge_log($t)};
	my $r = gate_post('/github.com/data/small/git-upload-pack', $body);
	my @own = grep { $_->{user_agent} eq 'git/ngx-bottle'
		&& $_->{method} eq 'POST' && $_->{bytes_in} > 1048576 }
		@{forge_log($t, since => $mark)};
	like($r, qr/refs\/tags\/v1/, "a $len-byte ls-refs: answered");
	is(scalar @own, $extra ? 0 : 1, "a $len-byte ls-refs: "
		. ($extra ? 'served from the copy, filled first'
			: 'passed on as the gate\'s own request'));
}

###############################################################################

sub fgit {
	my ($dir, @args) = @_;
	local $ENV{GIT_CONFIG_NOSYSTEM} = 1;
	local $ENV{GIT_CONFIG_GLOBAL} = '/dev/null';
	local $ENV{GIT_AUTHOR_NAME} = 'Forge';
	local $ENV{GIT_AUTHOR_EMAIL} = 'forge@forge.test';
	local $ENV{GIT_COMMITTER_NAME} = 'Forge';
	local $ENV{GIT_COMMITTER_EMAIL} = 'forge@forge.test';
	open my $fh, '-|', 'git', "--git-dir=$dir", @args
		or die "git: $!\n";
	local $/;
	my $o = <$fh> // '';
	close $fh;
	die "git @args failed\n" if $?;
	$o =~ s/\s+\z//;
	return $o;
}

# POSTs of git-upload-pack on the forge that sent a pack (an ls-refs
# answer is a few hundred bytes; a pack of these repos hundreds of KB)
sub fetches {
	return scalar grep { $_->{method} eq 'POST'
		&& $_->{uri} =~ /git-upload-pack$/
		&& $_->{bytes_out} > 100_000 } @{forge_log($t)};
}

sub refs {
	my ($dir) = @_;
	my %r;
	my $cmd = "git --git-dir=$dir for-each-ref "
		. "--format='%(objectname) %(refname)'";
	for (split /\n/, `$cmd`) {
		$r{$2} = $1 if /^(\S+) (\S+)$/;
	}
	return %r;
}

sub refs_line {
	my %r = refs(@_);
	return join(',', map { "$_=$r{$_}" } sort keys %r);
}

sub objects {
	my ($dir) = @_;
	my $cmd = "git --git-dir=$dir cat-file --batch-all-objects "
		. "--batch-check='%(objectname)'";
	return join ',', sort split /\n/, `$cmd`;
}

sub objects_reachable {
	my ($dir, @tips) = @_;
	return join ',', sort split /\n/,
		`git --git-dir=$dir rev-list --objects --no-object-names @tips`;
}

sub has_object {
	my ($dir, $oid) = @_;
	return system("git --git-dir=$dir cat-file -e $oid 2>/dev/null") == 0;
}

sub pkt {
	my ($s) = @_;
	return sprintf('%04x', length($s) + 4) . $s;
}

sub gate_get {
	my ($uri, %h) = @_;
	my $hs = join '', map { "$_: $h{$_}\r\n" } keys %h;
	return Test::Nginx::http("GET $uri HTTP/1.1\r\nHost: gate\r\n"
		. 'Authorization: ' . basic('x', $TOKEN) . "\r\n$hs"
		. "Connection: close\r\n\r\n", PeerAddr => "127.0.0.1:$GP") // '';
}

sub gate_post {
	my ($uri, $body) = @_;
	return Test::Nginx::http("POST $uri HTTP/1.1\r\nHost: gate\r\n"
		. 'Authorization: ' . basic('x', $TOKEN) . "\r\n"
		. "Git-Protocol: version=2\r\n"
		. "Content-Type: application/x-git-upload-pack-request\r\n"
		. 'Content-Length: ' . length($body) . "\r\n"
		. "Connection: close\r\n\r\n$body",
		PeerAddr => "127.0.0.1:$GP") // '';
}

###############################################################################
