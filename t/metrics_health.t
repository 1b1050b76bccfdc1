#!/usr/bin/perl

# Metrics of the gateway's health (docs/metrics.md): scraped with curl
# from a TCP listener on loopback (the operator's network), with the
# policy from Redis and the audit journal on another Redis that is down.
# bottle_store_up is 1 and bottle_store_sync_age_seconds 0 while the
# store is followed, bottle_policy_version follows the store's puts; the
# journal's queue fills to bottle_audit_queue and its drops are counted;
# the store killed, bottle_store_up goes to 0 and the age grows.  A
# refusal is logged once, at info, not at error (bottle_refusal_log_level).

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
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/)
	->has_daemon('curl')->has_daemon('redis-server')
	->has_daemon('redis-cli');

my $ALICE = 'alice-token-0123456789';
my $P1 = port(8081);
my $M = port(8090);
my $RP = port(8092);
my $JP = port(8093);

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	policy => "redis://127.0.0.1:$RP",
	main => 'worker_processes 2;',
	global => <<"EOF",
bottle_store_stale_max 1s;
bottle_audit redis://127.0.0.1:$JP;
bottle_audit_queue 4;
EOF
	servers => <<"EOF"));

# the operator's network only: loopback here
server {
    listen 127.0.0.1:$M;

    allow 127.0.0.1;
    deny all;

    location = /metrics {
        bottle_metrics;
    }
}
EOF

fake_upstream($t, port => $P1, name => 'one');
my $r = redis_start($t, port => $RP);
my $v1 = store_raw($t, 'alice', '{"id":"alice","token_sha256":"'
	. sha256_hex($ALICE) . '","routes":[{"host":"127.0.0.1","port":'
	. $P1 . '}]}', sha256_hex($ALICE));

$t->run()->plan(15);

###############################################################################

sub scrape {
	my $out = `curl -s -m 5 http://127.0.0.1:$M/metrics`;
	return $out // '';
}

sub metric {
	my ($name, $text) = @_;
	$text //= scrape();
	return $text =~ /^\Q$name\E (\S+)$/m ? $1 : undef;
}

sub wait_metric {
	my ($name, $cond, $max) = @_;
	my $deadline = time() + ($max // 10);
	my $v;
	while (time() < $deadline) {
		$v = metric($name);
		return $v if defined $v && $cond->($v);
		sleep 0.1;
	}
	return $v;
}

sub get {
	my ($token, $path) = @_;
	return proxy_request(8080, "GET http://127.0.0.1:$P1$path HTTP/1.1\r\n"
		. "Host: 127.0.0.1:$P1\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

###############################################################################

# both workers follow the store

is(wait_metric('bottle_store_up', sub { $_[0] == 1 }), 1, 'store up');
is(metric('bottle_store_sync_age_seconds'), 0, 'in sync: age 0');
is(metric('bottle_policy_version'), $v1, 'policy version: alice\'s put');

my $v2 = store_raw($t, 'bob', '{"id":"bob","token_sha256":"'
	. sha256_hex('bob-token-0123456789') . '","routes":[]}',
	sha256_hex('bob-token-0123456789'));
is(wait_metric('bottle_policy_version', sub { $_[0] == $v2 }), $v2,
	'policy version follows a put');

# the journal is down: events wait in the queue, then the oldest go

like(get($ALICE, '/'), qr/^HTTP\/1\.1 200 /, 'alice allowed');

my $text = scrape();
my ($refused0) = $text =~ /^bottle_audit_dropped_total (\d+)$/m;

for my $n (1 .. 12) {
	get('no-such-token-0123456789', "/x$n");
}

$text = scrape();
my $q = metric('bottle_audit_queue', $text) // -1;
ok($q >= 4 && $q <= 8, "audit queue: full in a worker at least ($q)");
cmp_ok(metric('bottle_audit_dropped_total', $text), '>=', $refused0 + 5,
	'audit drops counted');
is(metric('bottle_firehose_queue', $text), 0, 'firehose queue: empty');

# a refusal: at info, not error

my $log = $t->read_file('error.log');
like($log, qr/\[info\] .*bottle refused: bottle="-" host="127\.0\.0\.1" rule="identity"/,
	'refusal logged at info');
unlike($log, qr/\[error\] .*bottle refused/, 'no refusal at error');

# the store killed: down, and the age grows

redis_stop($t);

is(wait_metric('bottle_store_up', sub { $_[0] == 0 }), 0, 'store lost: up 0');
my $a1 = wait_metric('bottle_store_sync_age_seconds', sub { $_[0] >= 1 });
cmp_ok($a1, '>=', 1, 'store lost: age');
sleep 2;
cmp_ok(metric('bottle_store_sync_age_seconds'), '>=', $a1 + 1,
	'store lost: age grows');

# back: up again, age 0

redis_start($t, port => $RP);
store_raw($t, 'alice', '{"id":"alice","token_sha256":"'
	. sha256_hex($ALICE) . '","routes":[]}', sha256_hex($ALICE));
is(wait_metric('bottle_store_up', sub { $_[0] == 1 }, 20), 1,
	'store back: up');
is(metric('bottle_store_sync_age_seconds'), 0, 'store back: age 0');

###############################################################################
