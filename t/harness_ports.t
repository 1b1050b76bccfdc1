#!/usr/bin/perl

# Self-test of the harness's ports (no module needed): port() never hands
# out a port another program holds, TCP or UDP, IPv4 or IPv6; when a
# program takes a port after it was handed out, run() (also a restart on
# the same ports) and dns_start() move to a new port and the configs are
# written again.  docs/testing.md, "Ports".

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use IO::Socket::INET;
use IO::Socket::IP;
use Time::HiRes qw/ sleep /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy rewrite dnsmasq/);

my $V6 = $t->has_feature('ipv6');

# a port nobody holds, that this file has not handed out: the kernel's
# choice, as another program would get it

sub some_port {
	my $s = IO::Socket::INET->new(Proto => 'tcp',
		LocalAddr => '127.0.0.1:0', Listen => 1) or die "$!\n";
	return $s->sockport();
}

my @held;

sub hold {
	my ($proto, $addr, $port, %o) = @_;
	my $s = IO::Socket::IP->new(Proto => $proto, LocalHost => $addr,
		LocalPort => $port, ReuseAddr => $proto eq 'tcp',
		$proto eq 'tcp' ? (Listen => 5) : (), %o)
		or die "can't hold $proto $addr:$port: $@\n";
	push @held, $s;
	return $port;
}

###############################################################################

# held by another program before the test asks: never handed out

my %cases = (
	'TCP 127.0.0.1' => [ 'tcp', '127.0.0.1' ],
	'TCP 0.0.0.0' => [ 'tcp', '0.0.0.0' ],
	'TCP 127.0.0.2' => [ 'tcp', '127.0.0.2' ],
	'UDP 127.0.0.1' => [ 'udp', '127.0.0.1' ],
	$V6 ? (
	'TCP [::1]' => [ 'tcp', '::1' ],
	'TCP [::] v6only' => [ 'tcp', '::', V6Only => 1 ],
	'TCP [::] dual-stack' => [ 'tcp', '::', V6Only => 0 ],
	'UDP [::1]' => [ 'udp', '::1' ],
	) : (),
);

# with TEST_NGINX_FIXED_PORTS port($n) tries $n first: the held one

my %held;
for my $case (sort keys %cases) {
	my ($proto, $addr, @o) = @{$cases{$case}};
	$held{$case} = hold($proto, $addr, some_port(), @o);
}

my %got;
{
	local $ENV{TEST_NGINX_FIXED_PORTS} = 1;
	my $free = some_port();
	$got{free} = [ $free, port($free) ];
	$got{$_} = port($held{$_}) for keys %held;
}

###############################################################################

# taken after port() handed them out: nginx's TCP ports (IPv4 and IPv6)
# and the DNS port

my $P8080 = port(8080);
my $P8086 = port(8086);
my $P8053 = port(8053);

$t->write_file_expand('nginx.conf', <<'EOF');

%%TEST_GLOBALS%%

daemon off;

events {
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%% valid=1s ipv6=off;

    server {
        listen       127.0.0.1:8080;
        listen       [::1]:%%PORT_8086%%;
        server_name  localhost;

        location /up {
            set $backend api.test;
            proxy_pass http://$backend:%%PORT_8081%%;
        }

        location / {
            return 200 "port $server_port\n";
        }
    }
}

EOF

$t->write_file('nginx.conf', $t->read_file('nginx.conf')
	=~ s/^.*\[::1\].*\n//mr) unless $V6;

fake_upstream($t, port => port(8081), name => 'api');

hold('udp', '127.0.0.1', $P8053);
hold('tcp', '127.0.0.1', $P8080);
hold('tcp', '::1', $P8086) if $V6;

dns_start($t, port => port(8053), hosts => { 'api.test' => '127.0.0.1' });

$t->run()->plan(scalar(keys %cases) + 18);

###############################################################################

is($got{free}[1], $got{free}[0], 'fixed ports: a free one is used');
for my $case (sort keys %cases) {
	isnt($got{$case}, $held{$case}, "held before: $case: not used");
}
ok(port(8081) >= 20000 && port(8081) < 30000, 'random ports by default');

isnt(port(8053), $P8053, 'dns_start: taken port moved');
isnt(port(8080), $P8080, 'run: taken port moved');
SKIP: {
skip 'no ipv6', 1 unless $V6;
isnt(port(8086), $P8086, 'run: taken IPv6 port moved');
}

like(http_get('/'), qr/^HTTP\/1\.1 200 .*port ${\ port(8080) }$/ms,
	'nginx on the new port');
SKIP: {
skip 'no ipv6', 1 unless $V6;
like(http_get('/', PeerAddr => '[::1]:' . port(8086)), qr/^HTTP\/1\.1 200 /,
	'nginx on the new IPv6 port');
}
like(http_get('/up/x'), qr/upstream api ok/,
	'config written again: resolver on the new DNS port');
is(upstream_requests($t, 'api')->[-1]{target}, '/up/x', 'reached upstream');

like($t->read_file('port-retry.log'), qr/\(98: Address already in use\)/,
	'failed start kept in port-retry.log');
unlike(join('', map { -e "${\ $t->testdir() }/$_" ? $t->read_file($_) : '' }
	qw/ error.log stderr.log /),
	qr/Address already in use/, 'and not in the logs');

###############################################################################

# a restart while another program took the port

$t->stop();

my $before = port(8080);
hold('tcp', '127.0.0.1', $before);

$t->run();

isnt(port(8080), $before, 'restart: taken port moved');
like(http_get('/'), qr/^HTTP\/1\.1 200 .*port ${\ port(8080) }$/ms,
	'restart: nginx on the new port');
like(http_get('/up/y'), qr/upstream api ok/, 'restart: resolver still there');

ok(!grep({ $_->{port} == $before } values %Test::Nginx::ports),
	'a port found taken is not ours any more');

# a program that lets go of the port while nginx still tries (nginx tries
# 5 times, 500 ms apart): nginx runs there, and its [emerg] lines of the
# tries before are no alerts

$t->stop();

my $same = port(8080);
$t->run_daemon(sub {
	my $s = IO::Socket::INET->new(Proto => 'tcp', Listen => 5,
		LocalAddr => "127.0.0.1:$same", ReuseAddr => 1) or die "$!\n";
	sleep 0.8;
});
$t->waitforsocket("127.0.0.1:$same") or die "no holder on $same\n";

$t->run();

is(port(8080), $same, 'let go in time: same port');
like(http_get('/'), qr/^HTTP\/1\.1 200 .*port $same$/ms,
	'let go in time: nginx there');
like($t->read_file('port-retry.log'),
	qr/bind\(\) to 127\.0\.0\.1:$same failed \(98: .*\n\z/,
	'let go in time: the tries in port-retry.log');

###############################################################################
