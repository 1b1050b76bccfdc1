#!/usr/bin/perl

# git-gate's clone speed (issue 16: a clone of a 100 MB repo through the
# gate within 1.3 times a clone straight from the forge).  The fake forge
# with a seeded repo of BENCH_GITGATE_CLONE_MB (100) MB, nginx with the
# module in front of build/gitgate-cgi, the real git client.  Measured:
# a direct clone, the first clone through the gate (which fills the gate's
# copy from the forge first) and a second one (the copy refreshed, nothing
# new to fetch).  Only with BENCH_GITGATE_CLONE=1 (make
# bench-gitgate-clone): it moves a few hundred MB.

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

plan(skip_all => 'BENCH_GITGATE_CLONE=1 to run (make bench-gitgate-clone)')
	unless $ENV{BENCH_GITGATE_CLONE};

my $CGI = gitgate_cgi();
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $MB = $ENV{BENCH_GITGATE_CLONE_MB} // 100;
my $ROUNDS = $ENV{BENCH_GITGATE_CLONE_ROUNDS} // 3;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP);
my $d = $t->testdir();

my $TOKEN = 'bench-token-0123456789';
my $FORGE_TOKEN = 'forge-bench-token-0451';

my $forge = forge_start($t, port => 8092, token => $FORGE_TOKEN);
my $GP = port(8093);
my $sock = "$d/gate-fcgi.sock";

write_policy($t, 'policy.json', { bottles => [ { id => 'b', token => $TOKEN,
	repos => [ 'github.com/data/big' ], routes => [] } ] });
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

my $r = forge_repo($t, 'data/big', size => "${MB}M", file_size => '1M',
	commits => 2);

$t->run()->plan(5 + 2 * $ROUNDS);

###############################################################################

sub timed_clone {
	my ($url, $dir, @c) = @_;
	my $t0 = time();
	my ($rc, $out) = run_git($t, @c, 'clone', '-q', '--no-checkout', $url,
		$dir);
	my $s = time() - $t0;
	is($rc, 0, "clone $dir") or diag($out);
	return $s;
}

my $gate = "http://x:$TOKEN\@127.0.0.1:$GP/github.com/";
my @via = ('-c', "url.$gate.insteadOf=https://github.com/");

my $direct = timed_clone($r->{auth_url}, 'direct');
my $cold = timed_clone('https://github.com/data/big', 'cold', @via);
my $warm = timed_clone('https://github.com/data/big', 'warm', @via);

my $ratio = $warm / $direct;
diag(sprintf "%d MB: direct %.2f s, through the gate first %.2f s (%.2fx), "
	. "then %.2f s (%.2fx)", $MB, $direct, $cold, $cold / $direct, $warm,
	$ratio);

cmp_ok($ratio, '<=', 1.3, 'a clone through the gate within 1.3x');
cold_rounds();

###############################################################################

# the cold (first) clone, median of $ROUNDS rounds: each round a direct
# clone and a first clone through the gate, the gate's copy removed
# before it (gitgate-helper/gg_first.c streams the forge's pack to the
# agent and into the copy at once)

sub cold_rounds {
	my (@direct, @cold);
	for my $i (1 .. $ROUNDS) {
		system('rm', '-rf', "$d/gate/github.com/data/big.git",
			"$d/direct-$i", "$d/cold-$i");
		push @direct, timed_clone($r->{auth_url}, "direct-$i");
		push @cold, timed_clone('https://github.com/data/big',
			"cold-$i", @via);
		system('rm', '-rf', "$d/direct-$i", "$d/cold-$i");
	}
	my $md = median(@direct);
	my $mc = median(@cold);
	diag(sprintf "%d MB, %d rounds: direct %.2f s, first clone through "
		. "the gate %.2f s: cold ratio %.2fx (rounds: %s)", $MB, $ROUNDS,
		$md, $mc, $mc / $md, join(' ', map { sprintf '%.2f/%.2f',
		$cold[$_], $direct[$_] } 0 .. $#cold));
	cmp_ok($mc / $md, '<=', 1.3, 'a first clone through the gate within '
		. '1.3x (median)');
}

sub median {
	my @s = sort { $a <=> $b } @_;
	return @s % 2 ? $s[$#s / 2] : ($s[@s / 2 - 1] + $s[@s / 2]) / 2;
}

###############################################################################
