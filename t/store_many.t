#!/usr/bin/perl

# Tests for many gateways on one control plane (docs/control-plane.md):
# two gateways attached to one Redis; a route added with bottlectl works on
# both within a second, a bottle removed is refused on both; the store
# stopped, both refuse once bottle_store_stale_max has passed; the store
# back, both serve again, with no restart and no reload.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t1 = Test::Nginx->new()->has(qw/http proxy stream bottle/);
my $t2 = Test::Nginx->new();

my $ALICE = 'alice-token-0123456789';

my $RP = port(8090);
my $P1 = port(8081);
my $P2 = port(8082);

# one gateway, listening on its own port (%%PORT%%)

my $conf = <<"EOF";

%%TEST_GLOBALS%%

daemon off;
worker_processes 2;

bottle_policy redis://127.0.0.1:$RP;
bottle_store_stale_max 2s;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:%%GATEWAY%%;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
        }
    }
}

EOF

my %gw = (one => [ $t1, 8080 ], two => [ $t2, 8180 ]);

for my $g (values %gw) {
	my ($t, $port) = @$g;
	(my $c = $conf) =~ s/%%GATEWAY%%/%%PORT_$port%%/;
	$t->write_file_expand('nginx.conf', $c);
}

fake_upstream($t1, port => $P1, name => 'one');
fake_upstream($t1, port => $P2, name => 'two', addr => '127.0.0.2');

redis_start($t1, port => $RP, persist => 1);

$t1->run();
$t2->run();
$t1->plan(12);

###############################################################################

sub alice {
	return { id => 'alice', token => $ALICE,
		routes => [ map { { host => $_->[0], port => $_->[1] } } @_ ] };
}

store_put($t1, alice([ '127.0.0.1', $P1 ]));

is(both(sub { get($_[0], '127.0.0.1', $P1) }, qr/^HTTP\/1\.1 200 /, 5),
	'one two', 'a bottle: served on both');

# a route added with bottlectl: on both within a second

my $t0 = time();
store_put($t1, alice([ '127.0.0.1', $P1 ], [ '127.0.0.2', $P2 ]));
is(both(sub { get($_[0], '127.0.0.2', $P2) }, qr/^HTTP\/1\.1 200 /, 5),
	'one two', 'a route added: served on both');
my $took = time() - $t0;
cmp_ok($took, '<', 1, "within a second on both ($took s)");

# removed: refused on both

store_rm($t1, 'alice');
is(both(sub { get($_[0], '127.0.0.1', $P1) }, qr/^HTTP\/1\.1 407 /, 5),
	'one two', 'a bottle removed: refused on both');
like(get('one', '127.0.0.1', $P1), qr/no bottle has this token/,
	'removed: the reason');

# the store stopped: both refuse after the bound

store_put($t1, alice([ '127.0.0.1', $P1 ]));
is(both(sub { get($_[0], '127.0.0.1', $P1) }, qr/^HTTP\/1\.1 200 /, 5),
	'one two', 'put again: served on both');

redis_stop($t1);
my $lost = time();
is(both(sub { get($_[0], '127.0.0.1', $P1) }, qr/^HTTP\/1\.1 200 /, 1),
	'one two', 'store stopped: the snapshot, within the bound');
is(both(sub { get($_[0], '127.0.0.1', $P1) }, qr/^HTTP\/1\.1 407 /, 8),
	'one two', 'store stopped: refused on both after the bound');
my $after = time() - $lost;
ok($after >= 1.5, "not before the bound ($after s)");
like(get('two', '127.0.0.1', $P1), qr/lost its policy store/,
	'refused: the reason');

# the store back: both serve again, by themselves

redis_start($t1);
is(both(sub { get($_[0], '127.0.0.1', $P1) }, qr/^HTTP\/1\.1 200 /, 10),
	'one two', 'store back: served on both, no restart');
like($t2->read_file('error.log'), qr/store policy connection up again/,
	'the gateway says it reconnected');

###############################################################################

sub get {
	my ($gw, $host, $port) = @_;
	return proxy_request($gw{$gw}[1], "GET http://$host:$port/ HTTP/1.1\r\n"
		. "Host: $host:$port\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $ALICE) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

# the gateways on which $code's answer matched $re before the deadline;
# several requests each, so that both workers of each answer

sub both {
	my ($code, $re, $max) = @_;
	my $deadline = time() + $max;
	my %ok;

	for my $g (sort keys %gw) {
		my $n = 0;
		while (time() < $deadline && $n < 4) {
			$n = $code->($g) =~ $re ? $n + 1 : 0;
			sleep 0.02 if $n == 0;
		}
		$ok{$g} = 1 if $n >= 4;
	}

	return join ' ', sort keys %ok;
}

###############################################################################
