#!/usr/bin/perl

# Tests for the store's limits (docs/control-plane.md, "Limits"): policies
# written straight into Redis, past bottlectl, over each limit of
# bottle_store_limits (a policy's bytes, its routes, a secret, the store's
# total) are refused by the gateway's loader, bottle by bottle, with a log
# line, while the other bottles are served on, and never a "lost its
# policy store" while it reads; the memory of a large bottle goes back
# when it is removed.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;
use Test::Bottle::Store;

use Digest::SHA qw/ sha256_hex /;
use IO::Socket::INET;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $ALICE = 'alice-token-0123456789';
my $RP = port(8090);

# one worker, whose memory is measured; a short staleness bound, so that a
# store connection judged lost would show as 407s within the test

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	main => "worker_processes 1;\n"
		. 'bottle_store_limits policy=4m routes=50000 secret=4k;'
		. "\nbottle_store_limits store=10m;",
	policy => "redis://127.0.0.1:$RP",
	global => 'bottle_store_stale_max 1s;'));

my $P1 = port(8081);
fake_upstream($t, port => $P1, name => 'one');

$t->run()->plan(15);

my $r = redis_start($t, port => $RP);
store_setup($t, $r, $P1, $ALICE);

###############################################################################

sub worker_rss {
	my $master = $t->read_file('nginx.pid');
	chomp $master;
	for my $stat (glob '/proc/[0-9]*/stat') {
		open my $fh, '<', $stat or next;
		my $line = <$fh> // next;
		my ($pid, $ppid) = $line =~ /^(\d+) \(.*\) \S (\d+) /
			or next;
		next unless $ppid == $master;
		open my $st, '<', "/proc/$pid/status" or next;
		while (<$st>) {
			return $1 * 1024 if /^VmRSS:\s+(\d+) kB/;
		}
	}
	die "no worker\n";
}

###############################################################################

wait_for(sub { log_count(qr/policy store \S+ read:/) }, qr/^[1-9]/);
store_put($t, { id => 'alice', token => $ALICE,
	routes => [ { host => '127.0.0.1', port => $P1 } ] });
like(wait_for(sub { get($ALICE, '/') }, qr/ 200 /), qr/^HTTP\/1\.1 200 /,
	'alice served');

# 40 MB of one bottle's policy, 4 MB allowed: Redis is asked for its size
# first and never sends it; alice is served all along.  Redis itself may
# stall while it takes in 40 MB (a loaded machine): what counts is the
# gateway once the bottle is in the index, so that is where the log is
# read from.

my $from;
my $huge = raw_put('huge', bottle_json('huge', pad => 40 * 1024 * 1024),
	sub {
		wait_for(sub { get($ALICE, '/') }, qr/ 200 /);
		sleep 1.5;
		$from = length($t->read_file('error.log'));
	});
my $during = alice_for(3);
like($during, qr/^0 of \d+ refused, 0 lost$/,
	'huge policy: the others served while it is read, no store lost');
like(wait_for(sub { $t->read_file('error.log') }, qr/bottle:policy:huge/),
	qr/bottle_policy: bottle:policy:huge: bottle "huge": policy: 4194\d{4} bytes, over the limit of 4194304 \(raise "policy"/,
	'huge policy: refused, logged with the limit');
like(get($huge, '/'), qr/^HTTP\/1\.1 407 /, 'huge policy: bottle refused');
unlike(substr($t->read_file('error.log'), $from),
	qr/store policy connection lost/,
	'huge policy: store connection never lost');

# routes: 50001 of them, 50000 allowed

my $routes = '[' . join(',', map { qq/{"host":"h$_.example.com"}/ }
	1 .. 50001) . ']';
my $many = raw_put('many', bottle_json('many', routes => $routes));
like(wait_for(sub { $t->read_file('error.log') }, qr/bottle:policy:many/),
	qr/bottle:policy:many: bottle "many": routes: 50001 routes, over the limit of 50000 \(raise "routes"/,
	'routes: refused, logged');
like(get($many, '/'), qr/^HTTP\/1\.1 407 /, 'routes: bottle refused');

# a secret of 5000 bytes, 4096 allowed; never quoted

my $secret = 'S' x 5000;
my $sec = raw_put('sec', bottle_json('sec',
	egress_tokens => qq/{"API_KEY":"$secret"}/));
like(wait_for(sub { $t->read_file('error.log') }, qr/bottle:policy:sec/),
	qr/bottle:policy:sec: bottle "sec": egress_tokens\.API_KEY: 5000 bytes, over the limit of 4096 for a secret/,
	'secret: refused, logged');
unlike($t->read_file('error.log'), qr/SSSSSSSS/, 'secret: never logged');

# the store's total: three bottles of 3.5 MB each, 10 MB allowed in all

my @tot = map { raw_put("tot$_", bottle_json("tot$_",
	pad => 3584 * 1024)) } 1 .. 3;
like(wait_for(sub { $t->read_file('error.log') }, qr/bottle:policy:tot3/),
	qr/bottle:policy:tot3: bottle "tot3": the store would hold \d+ bytes of policy, over the limit of 10485760 \(raise "store"/,
	'store total: the bottle past it refused, logged');
like(get($tot[0], '/'), qr/^HTTP\/1\.1 403 /, 'store total: the first served');
like(get($tot[2], '/'), qr/^HTTP\/1\.1 407 /, 'store total: the third not');

like(alice_for(1), qr/^0 of \d+ refused, 0 lost$/, 'alice served after all');

# memory: a bottle of 40000 routes (within the limits), then removed

redis_cli($t, 'DEL', map { ("bottle:policy:$_") } qw/tot1 tot2 tot3/);
redis_cli($t, 'HDEL', 'bottle:bottles', qw/tot1 tot2 tot3/);
redis_cli($t, 'PUBLISH', 'bottle:changes', "tot$_ 0") for 1 .. 3;
sleep 0.5;

my $base = worker_rss();
my $big = { id => 'big', token => 'big-token-0123456789',
	routes => [ map { { host => "h$_.example.com" } } 1 .. 40000 ] };
Test::Bottle::bottlectl($t, $r, '--limits', 'policy=4m,routes=50000', 'policy', 'put',
	do { my $f = $t->testdir() . '/big.json';
		open my $fh, '>', $f or die; print $fh JSON::PP->new->encode($big);
		close $fh; $f });
like(wait_for(sub { get('big-token-0123456789', '/') }, qr/ 403 /),
	qr/^HTTP\/1\.1 403 /, 'big bottle served');
my $loaded = worker_rss();
store_rm($t, 'big');
wait_for(sub { get('big-token-0123456789', '/') }, qr/ 407 /);
sleep 0.5;
my $after = worker_rss();

my $grown = $loaded - $base;
note(sprintf('worker RSS: %.1f MiB, %.1f with the big bottle, %.1f after',
	$base / 1048576, $loaded / 1048576, $after / 1048576));
SKIP: {
	# ASan's allocator keeps freed memory in its quarantine
	skip 'RSS under a sanitizer\'s allocator', 1
		if ($ENV{TEST_NGINX_PRELOAD} // '') =~ /asan/;

	cmp_ok($after - $base, '<', 2 * 1048576,
		'removed bottle: the worker\'s memory goes back (within 2 MiB)');
}

###############################################################################
