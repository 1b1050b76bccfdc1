#!/usr/bin/perl

# Tests for the Redis policy source (docs/control-plane.md): a gateway
# with no store resolves no bottle; a bottle put in the store is served on
# the next request, without a reload; a change and a removal apply at once;
# an invalid policy in the store fails closed for that bottle; a lost store
# is served from the snapshot for bottle_store_stale_max, then refused, and
# the gateway reconnects and serves again by itself.

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

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';

my $RP = port(8090);

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	main => 'worker_processes 2;',
	policy => "redis://gateway:gw-secret\@127.0.0.1:$RP/3",
	global => "bottle_store_stale_max 3s;\nbottle_store_scanners 1;"));

my $P1 = port(8081);
my $P2 = port(8082);

fake_upstream($t, port => $P1, name => 'one');
fake_upstream($t, port => $P2, name => 'two', addr => '127.0.0.2');

$t->run()->plan(33);

###############################################################################

sub alice {
	return { id => 'alice', token => $ALICE,
		canary => 'CANARY-a1b2c3d4e5',
		routes => [ map { { host => $_->[0], port => $_->[1],
			$_->[2] ? (methods => $_->[2]) : (),
			$_->[3] ? (allow => $_->[3]) : () } } @_ ] };
}

# no store yet: fail closed, with a reason

like(get($ALICE, '127.0.0.1', $P1, '/'),
	qr/^HTTP\/1\.1 407 .*has not read its policy from the store yet/s,
	'no store: refused');

redis_start($t, port => $RP, persist => 1, db => 3);
gateway_user();

# both workers have read the store (each says so), then put: served

wait_for(sub { scalar(() = $t->read_file('error.log')
	=~ /policy store \S+ read:/g) }, qr/^[2-9]/);
store_put($t, alice([ '127.0.0.1', $P1 ]),
	{ id => 'bob', token => $BOB, routes => [] });
like(wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/a') }, qr/ 200 /),
	qr/^HTTP\/1\.1 200 /, 'store up: served');
like($t->read_file('error.log'), qr/policy store redis:\/\/127\.0\.0\.1:$RP\/3 read: \d+ bottles/,
	'log: store read');
like(get($BOB, '127.0.0.1', $P1, '/'), qr/ 403 .*allowlist/s,
	'other bottle, no route');

# every request of both workers: a keep-alive of neither matters here, but
# each worker has its own snapshot; several requests reach both

my $ok = 0;
$ok += get($ALICE, '127.0.0.1', $P1, "/w$_") =~ /^HTTP\/1\.1 200 / for 1 .. 8;
is($ok, 8, 'both workers serve');

# the journal, written as the documented ACL user: refusals (XADD) and the
# first contact (the script: SADD, XADD)

like(wait_for(sub { redis_cli($t, 'SCARD', 'bottle:contacts:alice') },
	qr/^[1-9]/), qr/^1$/, 'first contact recorded as the gateway user');
like(redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+'),
	qr/"type":"egress\.refusal".*"bottle":"bob"/s,
	'refusal recorded as the gateway user');
like(eval { Test::Bottle::bottlectl($t, $t->{_bottle_redis}, 'audit',
	'verify') } // $@, qr/^audit verify: whole: [1-9]\d* events, seq 1\.\./m,
	'the gateway user\'s events in the hash chain, whole');

# the canary: the bottle's scanner, compiled when first needed

like(get($ALICE, '127.0.0.1', $P1, '/?c=CANARY-a1b2c3d4e5'),
	qr/^HTTP\/1\.1 403 .*canary/s, 'canary refused');

# one compiled scanner a worker (bottle_store_scanners 1): each bottle's
# is freed when the other's is compiled, and compiled again when needed

store_put($t, { id => 'carol', token => 'carol-token-0123456789',
	canary => 'CANARY-c0ffee1234', routes => [ { host => '127.0.0.1',
	port => $P1 } ] });
my $caught = 0;
for (1 .. 4) {
	$caught++ if get($ALICE, '127.0.0.1', $P1, '/?c=CANARY-a1b2c3d4e5')
		=~ /^HTTP\/1\.1 403 .*canary/s;
	$caught++ if wait_for(sub { get('carol-token-0123456789', '127.0.0.1',
		$P1, '/?c=CANARY-c0ffee1234') }, qr/ 403 /)
		=~ /^HTTP\/1\.1 403 .*canary/s;
}
is($caught, 8, 'scanners freed and compiled again: every canary caught');
like($t->read_file('error.log'),
	qr/the scanner of bottle "(alice|carol)" freed \(least recently used\)/,
	'a scanner freed past bottle_store_scanners');
store_rm($t, 'carol');

# a change: a second route, the first removed

my $t0 = time();
store_put($t, alice([ '127.0.0.2', $P2 ]));
like(wait_for(sub { get($ALICE, '127.0.0.2', $P2, '/b') }, qr/ 200 /),
	qr/ 200 /, 'change: new route served');
cmp_ok(time() - $t0, '<', 1, 'change applied within a second');
like(get($ALICE, '127.0.0.1', $P1, '/'), qr/ 403 .*allowlist/s,
	'change: old route gone');

# a tunnel outlives changes that allow it: each request of it sees the
# bottle as it is; a removal closes it (t/revoke.t)

store_put($t, alice([ '127.0.0.1', $P1 ], [ '127.0.0.2', $P2 ]));
wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 200 /);

my $s = proxy_session(8080);
$s->send("CONNECT 127.0.0.2:$P2 HTTP/1.1\r\nHost: 127.0.0.2:$P2\r\n"
	. 'Proxy-Authorization: ' . basic('agent', $ALICE) . "\r\n\r\n");
like($s->read_response(), qr/^HTTP\/1\.1 200 /, 'tunnel: established');
like(in_tunnel($s, '/t1'), qr/^HTTP\/1\.1 200 /, 'tunnel: served');

store_put($t, alice([ '127.0.0.2', $P2, [ 'GET' ], [ { path => '/ok/*' } ] ]));
like(wait_for(sub { in_tunnel($s, '/t2') }, qr/ 403 /),
	qr/^HTTP\/1\.1 403 .*allow/s, 'tunnel: a changed route applies to its next request');
like(in_tunnel($s, '/ok/1'), qr/^HTTP\/1\.1 200 /, 'tunnel: the new allow entry');

store_rm($t, 'alice');
is(wait_for(sub { in_tunnel($s, '/ok/2') }, qr/^\z/), '',
	'tunnel: a removed bottle closes its open tunnel');
like($t->read_file('error.log'), qr/bottle refused: bottle="alice" host="127\.0\.0\.2" rule="revoked" .*reason="the bottle was removed from the policy"/,
	'tunnel: closed, logged');
$s->close();

# an invalid policy in the store: that bottle fails closed

store_raw($t, 'alice', '{"id":"alice","token_sha256":"'
	. ('ab' x 32) . '","routes":[{"host":"x","colour":1}]}');
like(wait_for(sub { get($ALICE, '127.0.0.2', $P2, '/') }, qr/ 407 /),
	qr/ 407 .*no bottle has this token/s, 'invalid policy: bottle refused');
like($t->read_file('error.log'),
	qr/bottle_policy: bottle:policy:alice: bottle "alice": routes\[0\]: unknown field "colour"/,
	'invalid policy: logged with key, bottle and field');

# a token in the clear in the store (bottlectl never writes one): refused

store_raw($t, 'alice', '{"id":"alice","token":"' . $ALICE
	. '","routes":[{"host":"127.0.0.1","port":' . $P1 . '}]}');
wait_for(sub { $t->read_file('error.log') }, qr/holds token_sha256 only/);
like(get($ALICE, '127.0.0.1', $P1, '/'), qr/ 407 /,
	'a token in the clear in the store: refused');

# token rotation: the new token works, the old one no longer does

store_put($t, alice([ '127.0.0.1', $P1 ]));
wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 200 /);
my $NEW = 'alice-rotated-token-77777';
store_put($t, { %{alice([ '127.0.0.1', $P1 ])}, token => $NEW });
like(wait_for(sub { get($NEW, '127.0.0.1', $P1, '/') }, qr/ 200 /),
	qr/^HTTP\/1\.1 200 /, 'rotated: the new token is served');
like(get($ALICE, '127.0.0.1', $P1, '/'), qr/ 407 .*no bottle has this token/s,
	'rotated: the old token is refused');

# removal

store_put($t, alice([ '127.0.0.1', $P1 ]));
wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 200 /);
store_rm($t, 'alice');
like(wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 407 /),
	qr/ 407 .*no bottle has this token/s, 'removed: refused');

# the store is lost: the snapshot serves for the bound, then nothing

store_put($t, alice([ '127.0.0.1', $P1 ]));
wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 200 /);

redis_stop($t);
my $lost = time();
like(get($ALICE, '127.0.0.1', $P1, '/'), qr/^HTTP\/1\.1 200 /,
	'store lost: snapshot served');
my $r = wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 407 /, 8);
like($r, qr/ 407 .*lost its policy store/s, 'past the bound: refused');
my $after = time() - $lost;
# counted from the last answer to a PING (one a 750 ms here) before it
ok($after >= 2 && $after < 6, "refused after the bound ($after s)");
like($t->read_file('error.log'), qr/store policy connection lost/,
	'log: connection lost');

# back: served again, by itself

redis_start($t);
gateway_user();
like(wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 200 /, 8),
	qr/^HTTP\/1\.1 200 /, 'store back: served');
like($t->read_file('error.log'), qr/store policy connection up again/,
	'log: reconnected');

# a removal while the store was away is seen when it is back

redis_stop($t);
sleep 0.5;
redis_start($t);
gateway_user();
store_rm($t, 'alice');
like(wait_for(sub { get($ALICE, '127.0.0.1', $P1, '/') }, qr/ 407 /, 8),
	qr/ 407 /, 'removed while away: refused');

###############################################################################

sub get {
	my ($token, $host, $port, $path) = @_;
	return proxy_request(8080, "GET http://$host:$port$path HTTP/1.1\r\n"
		. "Host: $host:$port\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

# the gateway's ACL user, as docs/control-plane.md gives it (the store
# forgets users when it restarts)

sub gateway_user {
	my $doc = do { local $/; open my $fh, '<', '../docs/control-plane.md'
		or die "control-plane.md: $!\n"; <$fh> };
	my ($acl) = $doc =~ /^user gateway (.*)$/m or die "no gateway user\n";
	$acl =~ s/>GATEWAY-PASSWORD/>gw-secret/;
	my $r = redis_cli($t, 'ACL', 'SETUSER', 'gateway', split(' ', $acl));
	die "ACL SETUSER: $r" unless $r =~ /^OK/;
}

# a request in an open tunnel, kept alive

sub in_tunnel {
	my ($s, $path) = @_;
	$s->send("GET $path HTTP/1.1\r\nHost: 127.0.0.2:$P2\r\n\r\n");
	return $s->read_response() // '';
}

sub wait_for {
	my ($code, $re, $max) = @_;
	my $deadline = time() + ($max // 5);
	my $r;
	while (time() < $deadline) {
		$r = $code->();
		return $r if $r =~ $re;
		sleep 0.05;
	}
	return $r;
}

###############################################################################
