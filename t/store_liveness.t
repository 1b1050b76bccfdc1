#!/usr/bin/perl

# Tests for the store's liveness (docs/control-plane.md, "Limits"): a
# bottle of nearly 1 MB (the default limit) comes from the store at 256
# KB/s, through a proxy of the test's that slows what Redis sends; the
# store's PINGs wait behind it for seconds, but bytes keep coming, so the
# store is not judged lost: the other bottles are served all along, and
# the large one once read.

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
use IO::Select;
use IO::Socket::INET;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $ALICE = 'alice-token-0123456789';
my $RP = port(8090);

my $PROXY = port(8091);

# one worker; a staleness bound short enough (pings every 250 ms) that a
# store connection judged lost shows as 407s within the test

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	main => 'worker_processes 1;',
	policy => "redis://127.0.0.1:$PROXY",
	global => 'bottle_store_stale_max 1s;'));

my $P1 = port(8081);
fake_upstream($t, port => $P1, name => 'one');

$t->run()->plan(5);

my $r = redis_start($t, port => $RP);
store_setup($t, $r, $P1, $ALICE);
slow_proxy($PROXY, $r->{port}, 256 * 1024);

###############################################################################

# a proxy to Redis: what the client sends goes on at once, what Redis sends
# back goes out at $rate bytes a second, in a slice every 50 ms

sub slow_proxy {
	my ($port, $to, $rate) = @_;
	my $l = IO::Socket::INET->new(LocalAddr => "127.0.0.1:$port",
		Listen => 16, ReuseAddr => 1) or die "proxy: $!\n";

	$t->run_daemon(sub {
		my $sel = IO::Select->new($l);
		my (%peer, %out);
		my $slice = int($rate / 20);
		my $next = time() + 0.05;
		for ( ;; ) {
			for my $s ($sel->can_read(ngx_max(0, $next - time()))) {
				if ($s == $l) {
					my $c = $l->accept() or next;
					my $u = IO::Socket::INET->new(
						PeerAddr => "127.0.0.1:$to") or next;
					@peer{$c, $u} = ($u, $c);
					$out{$c} = '';
					$sel->add($c, $u);
					next;
				}
				my $n = sysread($s, my $data, 65536);
				if (!$n) {
					my $p = delete $peer{$s};
					delete $peer{$p};
					delete $out{$s};
					delete $out{$p};
					$sel->remove($s, $p);
					close $s;
					close $p;
					next;
				}
				if (exists $out{$s}) {
					syswrite($peer{$s}, $data);
				} else {
					$out{$peer{$s}} .= $data;
				}
			}
			next if time() < $next;
			$next += 0.05;
			for my $c (keys %out) {
				next unless length $out{$c};
				my ($sock) = grep { "$_" eq $c } $sel->handles();
				syswrite($sock, substr($out{$c}, 0, $slice, ''))
					if $sock;
			}
		}
	});
	close $l;
}

sub ngx_max { return $_[0] > $_[1] ? $_[0] : $_[1]; }

###############################################################################

wait_for(sub { log_count(qr/policy store \S+ read:/) }, qr/^[1-9]/);
store_put($t, { id => 'alice', token => $ALICE,
	routes => [ { host => '127.0.0.1', port => $P1 } ] });
like(wait_for(sub { get($ALICE, '/') }, qr/ 200 /), qr/^HTTP\/1\.1 200 /,
	'alice served');

# a bottle of 1,000,000 bytes (whitespace after the object): about 4 s
# through the proxy, during which alice is served

my $from;
my $large = raw_put('large', bottle_json('large', pad => 1000000 - 200),
	sub {
		wait_for(sub { get($ALICE, '/') }, qr/ 200 /);
		$from = length($t->read_file('error.log'));
	});

like(alice_for(3), qr/^0 of \d+ refused, 0 lost$/,
	'a slow read: the others served all along');
like(wait_for(sub { get($large, '/') }, qr/ 403 /), qr/^HTTP\/1\.1 403 /,
	'a slow read: the large bottle read and served');
unlike(substr($t->read_file('error.log'), $from),
	qr/store policy connection lost/,
	'a slow read: store connection never lost');
like(alice_for(1), qr/^0 of \d+ refused, 0 lost$/, 'alice served after');

###############################################################################
