#!/usr/bin/perl

# Tests for gitleaks-allow (issue 16, docs/gitgate.md "Marked lines"): a
# token shape on a line marked gitleaks:allow never passes on the marker
# alone.  The push is refused and a gitleaks-allow proposal queued, the
# value only as its digest; pushed again it names the same proposal; once
# the operator approves it the same push lands on the forge byte for byte;
# the same value unmarked, or in another repo, is still refused; a denied
# one stays refused; an unmarked secret in the same push refuses it
# outright, no proposal; two pushes of the same value at once queue one.
#
# nginx on the gate's port in front of build/gitgate-cgi (fcgiwrap), the
# real git client as the agent, the fake forge as GitHub, Redis as the
# control plane.  GITGATE_CGI=path runs another build.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use Digest::SHA qw/ sha256_hex /;
use JSON::PP;
use POSIX ();
use Time::HiRes qw/ sleep /;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $CGI = gitgate_cgi();
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)
	->has_daemon($Test::Bottle::REDIS);
my $d = $t->testdir();

# the values, built so that no token sits whole in this file
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);
my $GHP2 = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 11) % 62] }
	1 .. 36);
my $DIGEST = 'sha256:' . sha256_hex($GHP);

my $FORGE_TOKEN = 'forge-' . 'gate-allow-token-0451';
my $TOKEN = 'writer-token-0123456789';

###############################################################################

my $redis = redis_start($t, port => 8091);
my $forge = forge_start($t, port => 8092, token => $FORGE_TOKEN);
my $GP = port(8093);
my $sock = "$d/gate-fcgi.sock";

my $GATE = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_STORE => $redis->{url},
	GITGATE_REFRESH => 0);

$t->write_file_expand('nginx.conf', gitgate_conf(policy => $redis->{url},
	port => $GP, gate => $GATE));

gitgate_fcgiwrap($t, $sock, children => 2);

mkdir "$d/gate";

my $w = forge_repo($t, 'acme/widgets', commits => 1);
forge_repo($t, 'acme/docs', commits => 1);

store_put($t, { id => 'writer', token => $TOKEN,
	repos => [ 'github.com/acme/widgets:write', 'github.com/acme/docs:write' ],
	routes => [] });

$t->write_file('forge-token', "$FORGE_TOKEN\n");
Test::Bottle::bottlectl($t, $redis, 'forge', 'connect', 'github.com',
	'--kind', 'github', '--url', "$forge->{url}/", '--token-file',
	"$d/forge-token");

$t->run()->plan(42);

###############################################################################

my $json = JSON::PP->new->canonical;
my $BOTTLECTL = $Test::Bottle::BOTTLECTL;

sub agent {
	my ($dir, @args) = @_;
	my $base = "http://x:$TOKEN\@127.0.0.1:$GP/github.com/";
	return run_git($t, { dir => "$d/$dir" },
		'-c', "url.$base.insteadOf=https://github.com/", @args);
}

sub git_in { return run_git($t, { dir => "$d/$_[0]" }, @_[1 .. $#_]); }

sub head_of {
	my (undef, $h) = git_in($_[0], 'rev-parse', $_[1] // 'HEAD');
	chomp $h;
	return $h;
}

sub commit_file {
	my ($dir, $file, $text) = @_;
	$t->write_file("$dir/$file", $text);
	git_in($dir, 'add', $file);
	git_in($dir, 'commit', '-q', '-m', "add $file");
	return head_of($dir);
}

# bottlectl: { rc, out } (exit status 4 is a 409)
sub ctl {
	my $out = "$d/ctl.out";
	system("$BOTTLECTL --store '$redis->{url}' "
		. join(' ', map { "'$_'" } @_) . " >$out 2>&1");
	return { rc => $? >> 8, out => $t->read_file('ctl.out') };
}

sub gitleaks_proposals {
	my @ids = grep { length } split /\n/,
		redis_cli($t, 'ZRANGE', 'bottle:proposals:of:writer', 0, -1);
	return grep { redis_cli($t, 'HGET', "bottle:proposal:$_", 'kind')
		eq "gitleaks-allow\n" } @ids;
}

sub proposal {
	return $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$_[0]",
		'json'));
}

# every value of every key in the store, as text
sub store_text {
	my $text = '';
	for my $k (grep { length } split /\n/, redis_cli($t, 'KEYS', '*')) {
		my $type = redis_cli($t, 'TYPE', $k);
		chomp $type;
		my @cmd = $type eq 'string' ? ('GET', $k)
			: $type eq 'hash' ? ('HGETALL', $k)
			: $type eq 'set' ? ('SMEMBERS', $k)
			: $type eq 'zset' ? ('ZRANGE', $k, 0, -1)
			: $type eq 'stream' ? ('XRANGE', $k, '-', '+')
			: $type eq 'list' ? ('LRANGE', $k, 0, -1) : ();
		$text .= "$k\n" . redis_cli($t, @cmd) if @cmd;
	}
	return $text;
}

sub forge_same {
	my ($c, $refs) = @_;
	return forge_connections($t) == $c
		&& join(',', %{forge_refs($t, 'acme/widgets')})
			eq join(',', %$refs);
}

my $URL = 'https://github.com/acme/widgets';

my ($rc, $out) = agent('.', 'clone', '-q', $URL, 'work');
is($rc, 0, 'clone through the gate') or diag($out);

###############################################################################
# a marked token: refused, one proposal, the forge untouched

my $marked = commit_file('work', 'cfg.txt',
	"ok=1\ntoken = \"$GHP\" # gitleaks:allow\n");

my $c = forge_connections($t);
my $refs = forge_refs($t, 'acme/widgets');

($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'marked: push refused');
like($out, qr/^remote: git-gate refused this push \(rule: github_pat\w*\): needs gitleaks-allow approval/m,
	'marked: needs gitleaks-allow approval');
my ($id) = $out =~ /the operator is asked \(proposal (\d{13}-[0-9a-f]{8})\)/;
ok($id, 'marked: remote: names the proposal') or diag($out);
like($out, qr/^remote: git-gate: push again once the operator has approved/m,
	'marked: push again once approved');
ok(forge_same($c, $refs), 'marked: forge untouched');

is(join(' ', gitleaks_proposals()), $id // '', 'one gitleaks-allow proposal');
my $p = proposal($id);
is($p->{producer}, 'git-gate', 'proposal: producer git-gate');
is($json->encode($p->{args}), $json->encode({ rule => $p->{args}{rule},
	digest => $DIGEST, repo => 'github.com/acme/widgets',
	file => 'cfg.txt', commit => substr($marked, 0, 12), line => 2 }),
	'proposal: rule, digest of the value, repo, file, commit, line');

like(ctl('proposals')->{out},
	qr/^\Q$id\E +writer +gitleaks-allow +pending /m,
	'bottlectl proposals: listed, pending');

my ($ev) = grep { ($_->{correlation_id} // '') eq $id }
	map { /^\{/ ? $json->decode($_) : () }
	split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
is($ev && $ev->{type}, 'decision.proposed',
	'journal: decision.proposed, correlation id = the proposal id');

unlike(store_text(), qr/\Q$GHP\E/, 'the value is nowhere in the store');

# pushed again: the same proposal, no other

($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'pushed again: refused');
like($out, qr/\(proposal \Q$id\E, already waiting\)/,
	'pushed again: names the waiting proposal');
is(join(' ', gitleaks_proposals()), $id, 'pushed again: no duplicate');

###############################################################################
# an unmarked secret in the same push: refused outright, no proposal

commit_file('work', 'other.txt', "key: $GHP2\n");
($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'with an unmarked secret: refused');
like($out, qr/^remote: git-gate refused this push \(rule: github_pat\w*\)\s*$/m,
	'with an unmarked secret: the plain refusal');
unlike($out, qr/proposal/, 'with an unmarked secret: no proposal named');
is(join(' ', gitleaks_proposals()), $id,
	'with an unmarked secret: nothing queued');
git_in('work', 'reset', '-q', '--hard', $marked);

###############################################################################
# approved: the same push lands, byte for byte

my $res = ctl('approve', $id, '--note', 'a test fixture');
is($res->{rc}, 0, 'bottlectl approve') or diag($res->{out});
is(redis_cli($t, 'SMEMBERS', 'bottle:gitleaks-allowed:writer'),
	"github.com/acme/widgets $p->{args}{rule} $DIGEST\n",
	'approve: the allow set holds repo, rule, digest');

($rc, $out) = agent('work', 'push', 'origin', 'main');
is($rc, 0, 'approved: the push goes') or diag($out);
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, $marked,
	'approved: the forge has the commit');
my $gd = "--git-dir=$w->{path}";
is((run_git($t, $gd, 'cat-file', '-p', $marked))[1],
	(git_in('work', 'cat-file', '-p', $marked))[1],
	'approved: the commit byte-identical');
is((run_git($t, $gd, 'cat-file', 'blob', "$marked:cfg.txt"))[1],
	"ok=1\ntoken = \"$GHP\" # gitleaks:allow\n",
	'approved: the file byte-identical');

# the same value unmarked: refused

commit_file('work', 'plain.txt', "token = \"$GHP\"\n");
$c = forge_connections($t);
$refs = forge_refs($t, 'acme/widgets');
($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'approved value, unmarked: refused');
ok(forge_same($c, $refs), 'approved value, unmarked: forge untouched');
git_in('work', 'reset', '-q', '--hard', $marked);

# the approved value on 40 marked lines: one finding of it, every place
# passes (past the 32 findings a push lists)

my $mc = commit_file('work', 'many.txt',
	join('', map { "t$_ = \"$GHP\" # gitleaks:allow\n" } 1 .. 40));
($rc, $out) = agent('work', 'push', 'origin', 'main');
is($rc, 0, 'approved value on 40 lines: the push goes') or diag($out);
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, $mc,
	'approved value on 40 lines: the forge has it');

# 33 marked values in one push: refused, nothing queued, says why

commit_file('work', 'vals.txt', join('', map {
	"v$_ = \"ghp_" . substr(sha256_hex("v$_"), 0, 36) . "\" # gitleaks:allow\n"
} 1 .. 33));
my $n0 = () = gitleaks_proposals();
$c = forge_connections($t);
$refs = forge_refs($t, 'acme/widgets');
($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, '33 marked values: refused');
like($out, qr/^remote: git-gate: this push holds more than 32 marked values; the operator is asked about at most 32 at a time: push them in smaller pushes/m,
	'33 marked values: says why') or diag($out);
is(scalar(() = gitleaks_proposals()), $n0, '33 marked values: nothing queued');
ok(forge_same($c, $refs), '33 marked values: forge untouched');
git_in('work', 'reset', '-q', '--hard', $mc);

###############################################################################
# another repo: its own proposal; denied, it stays refused

($rc, $out) = agent('.', 'clone', '-q', 'https://github.com/acme/docs', 'docs');
commit_file('docs', 'cfg.txt', "token = \"$GHP\" # gitleaks:allow\n");
($rc, $out) = agent('docs', 'push', 'origin', 'main');
isnt($rc, 0, 'another repo: refused');
my ($id2) = $out =~ /the operator is asked \(proposal (\d{13}-[0-9a-f]{8})\)/;
ok($id2 && $id2 ne $id, 'another repo: a proposal of its own') or diag($out);

$res = ctl('deny', $id2 // 'none', '--note', 'not in docs');
is($res->{rc}, 0, 'bottlectl deny') or diag($res->{out});
($rc, $out) = agent('docs', 'push', 'origin', 'main');
isnt($rc, 0, 'denied: still refused');
like($out, qr/gitleaks-allow denied\s*\n.*\n.*operator denied this value \(proposal \Q$id2\E\)/,
	'denied: names the denied proposal');
is(scalar(gitleaks_proposals()), 2, 'denied: nothing queued again');

###############################################################################
# two pushes of the same new marked value at once: one proposal, both name
# it.  Redis holds every write while paused, so each push waits at its
# first script; unpaused, a look-up apart from the queueing would have
# let both queue one

my $GHP3 = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 13) % 62] }
	1 .. 36);
for my $r (qw/ race1 race2 /) {
	agent('.', 'clone', '-q', $URL, $r);
	commit_file($r, 'race.txt',
		join('', map { "t$_ = \"$GHP3\" # gitleaks:allow\n" } 1 .. 3));
}
my %was = map { $_ => 1 } gitleaks_proposals();

redis_cli($t, 'CLIENT', 'PAUSE', 3000, 'WRITE');
my %kid;
for my $r (qw/ race1 race2 /) {
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		my (undef, $o) = agent($r, 'push', 'origin', 'main');
		open my $fh, '>', "$d/$r.out" or POSIX::_exit(1);
		print $fh $o;
		close $fh;
		POSIX::_exit(0);
	}
	$kid{$r} = $pid;
}
waitpid($_, 0) for values %kid;

my @new = grep { !$was{$_} } gitleaks_proposals();
is(scalar @new, 1, 'two pushes at once: one proposal');
my $both = join('', map { $t->read_file("$_.out") } qw/ race1 race2 /);
my @named = $both =~ /the operator is asked \(proposal (\d{13}-[0-9a-f]{8})/g;
is(join(' ', @named), join(' ', ($new[0] // '-') x 2),
	'two pushes at once: both name it') or diag($both);
like($both, qr/^remote:   and 2 more places of the same value\s*$/m,
	'a value on 3 lines: one proposal, its other places counted');

###############################################################################
