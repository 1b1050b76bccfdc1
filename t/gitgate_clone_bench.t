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

use POSIX qw//;
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

# the gate as shipped: the default freshness window (warm_under_load())
my $WP = port(8094);
my $GATE_WINDOW = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_POLICY => "$d/policy.json",
	GITGATE_FORGES => "$d/forges.json");

$t->write_file_expand('nginx.conf', gitgate_conf(policy => "$d/policy.json",
	port => $GP, gate => $GATE, realm => 0, servers => <<"EOF"));
server {
    listen 127.0.0.1:$WP;
    client_max_body_size 0;

    location / {
        bottle_attribute git;

$GATE_WINDOW
    }
}
EOF

# the gate's nginx logs as the forge's does (info): Test::Nginx's debug
# log writes lines for every buffer of the pack, a cost no gateway has
my $conf = $t->read_file('nginx.conf');
$conf =~ s/^(error_log \S+) debug;$/$1 info;/m or die "no debug log\n";
$t->write_file('nginx.conf', $conf);

gitgate_fcgiwrap($t, $sock, children => 4);

my $r = forge_repo($t, 'data/big', size => "${MB}M", file_size => '1M',
	commits => 2);

$t->run()->plan(7 + 2 * $ROUNDS);

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
# the copy indexed and refreshed after the first clone's answer: a clone
# before that waits for it (docs/gitgate.md, "First clone")
Test::Bottle::Forge::gate_settled($t);
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
		# the last round's index and refresh done (its copy's removal
		# would race them, and they would share the next round's CPU)
		Test::Bottle::Forge::gate_settled($t);
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

warm_under_load();
###############################################################################

# issue 34: a warm clone under background load.  BENCH_GITGATE_LOAD CPU
# burners (default 3, on top of whatever the machine runs), then
# BENCH_GITGATE_ROUNDS rounds (default 5) of a clone straight from the
# forge, one through the gate inside its freshness window (the shipped
# default: the copy served as it is) and one after it (GITGATE_REFRESH 0:
# the forge's refs compared with the copy's first), in a rotating order;
# the medians' ratios.

sub warm_under_load {
	my $burners = $ENV{BENCH_GITGATE_LOAD} // 3;
	my $rounds = $ENV{BENCH_GITGATE_ROUNDS} // 5;

	my @burn;
	for (1 .. $burners) {
		my $pid = fork() // die "fork: $!\n";
		if ($pid == 0) {
			open STDOUT, '>', '/dev/null';
			exec('yes') or POSIX::_exit(127);
		}
		push @burn, $pid;
	}

	my $window = "http://x:$TOKEN\@127.0.0.1:$WP/github.com/";
	my %url = (
		direct => [ $r->{auth_url} ],
		window => [ '-c', "url.$window.insteadOf=https://github.com/",
			'https://github.com/data/big' ],
		after => [ @via, 'https://github.com/data/big' ],
	);
	my @kinds = qw/ direct window after /;
	my (%s, $failed, $n);

	# the window's copy refreshed once, then warm
	run_git($t, @{$url{window}}[0 .. 1], 'ls-remote', $url{window}[2]);

	for my $round (1 .. $rounds) {
		for my $k (@kinds[map { ($_ + $round) % 3 } 0 .. 2]) {
			my $dir = "load-$k-$round";
			my @u = @{$url{$k}};
			my $t0 = time();
			my ($rc, $out) = run_git($t, @u[0 .. $#u - 1], 'clone',
				'-q', '--no-checkout', $u[-1], $dir);
			push @{$s{$k}}, time() - $t0;
			$failed++, diag("$dir: $out") if $rc;
			system('rm', '-rf', "$d/$dir");
		}
	}

	kill 'TERM', @burn;
	waitpid($_, 0) for @burn;

	my %m = map { $_ => median(@{$s{$_}}) } @kinds;
	my $load = do { open my $fh, '<', '/proc/loadavg'; (split ' ', <$fh>)[0] };
	diag(sprintf "warm clone of %d MB under load (%d burners, load average "
		. "%s, %d rounds, medians): direct %.2f s, through the gate "
		. "inside the window %.2f s (%.2fx), after it %.2f s (%.2fx)",
		$MB, $burners, $load, $rounds, $m{direct}, $m{window},
		$m{window} / $m{direct}, $m{after}, $m{after} / $m{direct});
	diag(sprintf "  %-7s %s", $_, join ' ', map { sprintf '%.2f', $_ }
		@{$s{$_}}) for @kinds;

	is($failed // 0, 0, 'clones under load');
	cmp_ok($m{window} / $m{direct}, '<=', 1.15,
		'a warm clone under load within 1.15x');
}


###############################################################################
