#!/usr/bin/perl

# Tests for the fake forge of the git-gate tests (Test::Bottle::Forge):
# nginx + fcgiwrap + git http-backend on loopback, driven by the real git
# client.  Token auth for read and write, a push that arrives byte for
# byte, the request log, two forges at once, HTTPS, seeded repositories,
# and ports other programs hold.  No bottle module needed.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use IO::Socket::INET;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http ssl openssl/)
	->has_daemon('git')->has_daemon($Test::Bottle::Forge::FCGIWRAP);

###############################################################################

# something else on 8080 (another nginx, a dev server) and a program
# that takes the forge's port after port() handed it out

my $hold8080 = IO::Socket::INET->new(Proto => 'tcp', Listen => 5,
	LocalAddr => '127.0.0.1:8080', ReuseAddr => 1);

my $taken = port(8082);
my $thief = IO::Socket::INET->new(Proto => 'tcp', Listen => 5,
	LocalAddr => "127.0.0.1:$taken", ReuseAddr => 1) or die "$!\n";

my $fa = forge_start($t, port => 8080, token => 'tok-A');
my $fb = forge_start($t, port => 8081, name => 'forge2', token => 'tok-B',
	public_read => 1);
my $fc = forge_start($t, port => 8082, name => 'tls', token => 'tok-C',
	tls => 1, hosts => ['forge.test']);

$t->plan(52);

isnt($fa->{port}, 8080, 'forge: not on 8080, held by another program');
isnt($fc->{port}, $taken, 'forge: port taken after port() moved');
is($fc->{port}, port(8082), 'forge: port() follows the move');
close $thief;

my $w = forge_repo($t, 'acme/widgets', commits => 3);
like($w->{head} // '', qr/^[0-9a-f]{40}$/, 'repo: seeded');
is_deeply(forge_refs($t, 'acme/widgets'),
	{ 'refs/heads/main' => $w->{head} }, 'repo: refs');
is($w->{url}, "$fa->{url}/acme/widgets.git", 'repo: url');

###############################################################################
# read needs the token

sub git { return run_git($t, @_); }

sub last_record {
	my (%o) = @_;
	return forge_log($t, %o)->[-1] || {};
}

my ($rc, $out) = git('clone', $w->{url}, 'noauth');
isnt($rc, 0, 'clone without token fails');
my $r = last_record();
is("$r->{status} $r->{auth} $r->{uri}",
	'401 missing /acme/widgets.git/info/refs?service=git-upload-pack',
	'clone without token: 401 recorded');
like(http_get('/acme/widgets.git/info/refs?service=git-upload-pack',
	port => $fa->{port}), qr/^HTTP\/1\.1 401 .*^WWW-Authenticate: Basic /ms,
	'401 with WWW-Authenticate: Basic');

(my $wrong = $w->{url}) =~ s{://}{://x-access-token:tok-B@};
($rc) = git('clone', $wrong, 'wrong');
isnt($rc, 0, 'clone with a wrong token fails');
is(last_record()->{auth}, 'wrong', 'wrong token recorded');

my $n = @{forge_log($t)};
($rc, $out) = git('clone', $w->{auth_url}, 'work');
is($rc, 0, 'clone with token') or diag($out);
is((git({ dir => $t->testdir() . '/work' }, 'rev-parse', 'HEAD'))[1],
	"$w->{head}\n", 'clone: same HEAD');

my @clone = @{forge_log($t)}[$n .. $#{forge_log($t)}];
is(join(' ', map { "$_->{method}:$_->{status}:$_->{auth}" } @clone),
	'GET:401:missing GET:200:ok POST:200:ok POST:200:ok',
	'clone recorded: challenge, refs, fetch');
like($clone[-1]{user_agent}, qr/^git\//, 'user agent recorded');
is($clone[-1]{user}, 'x-access-token', 'basic user recorded');

# the other ways GitHub takes a token, sent at once (no challenge)

for my $h ('Bearer tok-A', 'token tok-A', basic('agent', 'tok-A'),
	basic('tok-A', 'x-oauth-basic'))
{
	$n = @{forge_log($t)};
	($rc, $out) = git('-c', "http.extraHeader=Authorization: $h",
		'ls-remote', $w->{url});
	my @l = @{forge_log($t)}[$n .. $#{forge_log($t)}];
	ok($rc == 0 && @l && !grep({ $_->{status} != 200 } @l),
		"token as '" . (split ' ', $h)[0] . "'") or diag($out);
}

(my $nogit = $w->{auth_url}) =~ s/\.git$//;
($rc, $out) = git('ls-remote', $nogit);
like($out, qr/^$w->{head}\tHEAD$/m, 'path without .git');

($rc) = git('ls-remote', "$fa->{url}/acme/nothing.git");
isnt($rc, 0, 'unknown repository fails');

###############################################################################
# write

my $work = $t->testdir() . '/work';
my %date = (GIT_AUTHOR_DATE => '1700001000 +0000',
	GIT_COMMITTER_DATE => '1700001000 +0000');

$t->write_file("$work/hello.txt", "hello from the bottle\n");
# more than http.postBuffer (1 MB): the pack goes chunked
$t->write_file("$work/big.bin", join '', map { pack('N', rand(2**32)) }
	1 .. (600 * 1024));
git({ dir => $work }, 'add', 'hello.txt', 'big.bin');
($rc, $out) = git({ dir => $work, env => \%date }, 'commit', '-q', '-m',
	'agent work');
is($rc, 0, 'commit') or diag($out);
my $head = (git({ dir => $work }, 'rev-parse', 'HEAD'))[1];
chomp $head;

($rc) = git({ dir => $work }, 'push', $w->{url}, 'main');
isnt($rc, 0, 'push without token fails');
$r = last_record();
is("$r->{status} $r->{auth} $r->{uri}",
	'401 missing /acme/widgets.git/info/refs?service=git-receive-pack',
	'push without token: 401 recorded');
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, $w->{head},
	'push without token: nothing changed');

($rc, $out) = git({ dir => $work }, 'push', $w->{auth_url}, 'main',
	'main:refs/heads/feature');
is($rc, 0, 'push with token') or diag($out);
is_deeply(forge_refs($t, 'acme/widgets'), {
	'refs/heads/main' => $head, 'refs/heads/feature' => $head },
	'push: refs arrived');

my $gd = "--git-dir=$w->{path}";
is((git($gd, 'cat-file', '-p', $head))[1],
	(git({ dir => $work }, 'cat-file', '-p', $head))[1],
	'push: commit identical');
is((git($gd, 'rev-parse', "$head:big.bin"))[1],
	(git({ dir => $work }, 'rev-parse', "$head:big.bin"))[1],
	'push: blob identical');
is((git($gd, 'cat-file', 'blob', "$head:big.bin"))[1],
	$t->read_file("$work/big.bin"), 'push: blob bytes');
($rc, $out) = git($gd, 'fsck', '--no-dangling');
is($rc, 0, 'push: forge repository fsck clean') or diag($out);

$r = last_record();
is("$r->{method} $r->{status} $r->{auth} $r->{uri}",
	'POST 200 ok /acme/widgets.git/git-receive-pack',
	'push recorded');
cmp_ok($r->{bytes_in}, '>', 2 * 1024 * 1024, 'push recorded: body size');

# a rotated token

forge_config($t, token => 'tok-A2');
($rc) = git('ls-remote', $w->{auth_url});
isnt($rc, 0, 'rotated: old token refused');
(my $new = $w->{url}) =~ s{://}{://u:tok-A2@};
($rc) = git('ls-remote', $new);
is($rc, 0, 'rotated: new token');

###############################################################################
# a second forge, public read, a seeded repository of some size

is(forge_connections($t, forge => 'forge2'), 0,
	'forge2: no connection yet');

my $d1 = forge_repo($t, 'data/set', forge => 'forge2', size => '3M',
	file_size => '1M', commits => 2);
ok(-d "$fb->{root}/data/set.git", 'forge2: repo in its own root');

($rc, $out) = git('clone', '-q', $d1->{url}, 'public');
is($rc, 0, 'public read: clone without token') or diag($out);
is(-s $t->testdir() . '/public/data/blob-0002.bin', 1024 * 1024,
	'seeded data files');
like((git('-C', 'public', 'log', '--format=%s'))[1],
	qr/\Acommit 2 of data\/set\ncommit 1 of data\/set\n\z/,
	'seeded commits');
is(last_record(forge => 'forge2')->{auth}, 'missing',
	'public read recorded without auth');

$t->write_file('public/x.txt', "x\n");
git({ dir => $t->testdir() . '/public' }, 'add', 'x.txt');
git({ dir => $t->testdir() . '/public', env => \%date }, 'commit', '-qm', 'x');
($rc) = git({ dir => $t->testdir() . '/public' }, 'push', $d1->{url}, 'main');
isnt($rc, 0, 'public read: push without token refused');
($rc) = git({ dir => $t->testdir() . '/public' }, 'push', $d1->{auth_url},
	'main');
is($rc, 0, 'public read: push with token');

ok(!grep({ $_->{uri} =~ /data\/set/ } @{forge_log($t)}),
	'forges record apart');

# the same name and options give the same objects

my $d2 = forge_repo($t, 'data/set', forge => 'tls', size => '3M',
	file_size => '1M', commits => 2);
is($d2->{head}, $d1->{head}, 'seeded repos are reproducible');

###############################################################################
# HTTPS

is(forge_connections($t, forge => 'tls'), 0, 'tls: no connection yet');
like($fc->{url}, qr{^https://127\.0\.0\.1:\d+$}, 'tls: url');

($rc) = git('ls-remote', $d2->{auth_url});
isnt($rc, 0, 'tls: unknown CA refused by git');
is(forge_connections($t, forge => 'tls'), 1, 'tls: connection counted');

($rc, $out) = git('-c', "http.sslCAInfo=$fc->{ca}", 'clone', '-q',
	$d2->{auth_url}, 'tls-clone');
is($rc, 0, 'tls: clone with the CA') or diag($out);
is(last_record(forge => 'tls')->{scheme}, 'https', 'tls: recorded');

###############################################################################
