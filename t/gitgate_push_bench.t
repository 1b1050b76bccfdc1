#!/usr/bin/perl

# git-gate's push speed (issue 34): a push of BENCH_GITGATE_PUSH_MB (50)
# MB of new text files (random lowercase words, lines of 20-120 bytes,
# files of 1.25 MB) straight to the fake forge, and one of the same size
# (other words) through the gate, whose pre-receive hook scans it before
# it goes on to the forge.  nginx with the module in front of
# build/gitgate-cgi, the real git client.  Only with BENCH_GITGATE_PUSH=1
# (make bench-gitgate-push).

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use Time::HiRes qw/ sleep time /;

select STDERR; $| = 1;
select STDOUT; $| = 1;

plan(skip_all => 'BENCH_GITGATE_PUSH=1 to run (make bench-gitgate-push)')
	unless $ENV{BENCH_GITGATE_PUSH};

my $CGI = gitgate_cgi();
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $MB = $ENV{BENCH_GITGATE_PUSH_MB} // 50;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP);
my $d = $t->testdir();

my $TOKEN = 'bench-token-0123456789';
my $FORGE_TOKEN = 'forge-bench-token-0451';

my $forge = forge_start($t, port => 8092, token => $FORGE_TOKEN);
my $GP = port(8093);
my $sock = "$d/gate-fcgi.sock";

write_policy($t, 'policy.json', { bottles => [ { id => 'b', token => $TOKEN,
	repos => [ 'github.com/data/work:write' ], routes => [] } ] });
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

gitgate_fcgiwrap($t, $sock, children => 4);

my $r = forge_repo($t, 'data/work', size => '1M', file_size => '100K',
	commits => 1);

$t->run()->plan(6);

###############################################################################

my $gate = "http://x:$TOKEN\@127.0.0.1:$GP/github.com/";
my @via = ('-c', "url.$gate.insteadOf=https://github.com/");

# MB of new files in the work tree $dir, words from a vocabulary of $seed's
sub new_files {
	my ($dir, $seed) = @_;
	srand($seed);
	my @a = ('a' .. 'z');
	my @vocab = map { join('', map { $a[rand 26] } 1 .. 2 + int(rand 9)) }
		1 .. 20000;
	mkdir "$dir/new";
	for my $i (1 .. int($MB * 1e6 / 1.25e6 + 0.5)) {
		my $s = '';
		while (length($s) < 1.25e6) {
			my $n = 3 + int(rand 15);
			$s .= join(' ', map { $vocab[rand @vocab] } 1 .. $n) . "\n";
		}
		open my $fh, '>', "$dir/new/f$i.txt" or die;
		print $fh $s;
		close $fh;
	}
}

# a work tree cloned from $url with MB of new files committed
sub work {
	my ($name, $url, @c) = @_;
	my $w = "$d/$name";
	my ($rc, $out) = run_git($t, @c, 'clone', '-q', $url, $w);
	die "clone $name: $out" if $rc;
	new_files($w, $name eq 'direct' ? 1 : 2);
	run_git($t, { dir => $w }, 'add', '-A');
	run_git($t, { dir => $w }, 'commit', '-q', '-m', "$MB MB of text");
	return $w;
}

sub timed_push {
	my ($name, $w, @c) = @_;
	my $t0 = time();
	my ($rc, $out) = run_git($t, { dir => $w }, @c, 'push', '-q', 'origin',
		"HEAD:refs/heads/$name");
	my $s = time() - $t0;
	is($rc, 0, "push $name") or diag($out);
	my ($lrc, $head) = run_git($t, { dir => $w }, 'rev-parse', 'HEAD');
	my ($frc, $there) = run_git($t, { dir => $r->{path} }, 'rev-parse',
		"refs/heads/$name");
	ok($head eq $there, "$name: the commit on the forge");
	return $s;
}

# both cloned first: the gate's copy filled before anything is timed
my $wg = work('gate', 'https://github.com/data/work', @via);
my $wd = work('direct', $r->{auth_url});
my $direct = timed_push('direct', $wd);
my $via = timed_push('gate', $wg, @via);

diag(sprintf "%d MB of new text: straight to the forge %.2f s, through the "
	. "gate %.2f s (%.2fx)", $MB, $direct, $via, $via / $direct);

my ($rc, $out) = run_git($t, { dir => $r->{path} }, 'cat-file', '-e',
	'refs/heads/gate:new/f1.txt');
is($rc, 0, 'the pushed files on the forge');
ok(-d "$d/gate/.scan-cache", 'the scan kept its databases');


###############################################################################
