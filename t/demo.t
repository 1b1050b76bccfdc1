#!/usr/bin/perl

# make demo: the README's "Try it" on a machine with no network.  The
# demo's upstream (nginx), resolver (dnsmasq) and gateway run on the
# harness's ports (DEMO_OPTS); the README's four curl commands give what
# README.md says; make demo-stop stops all three.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Time::HiRes qw/ time sleep /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

# only for its test directory and ports: the processes are the demo's

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle dnsmasq/)
	->has_daemon('curl');

my $REPO = $Test::Nginx::REPO;
my $d = $t->testdir();
my $DEMO = "$d/demo";

my $GW = port(8080);
my $HTTP = port(8081);
my $HTTPS = port(8443);
my $DNS = port(8053);

my $TOKEN = 'demo-token-0123456789';
my $HOST = 'demo.bottle.test';
my $SECRET = 'demo-api-key-the-gateway-holds';

my @pidfiles = ("$DEMO/gateway/run/nginx.pid", "$DEMO/upstream/nginx.pid",
	"$DEMO/dns/dnsmasq.pid");
my %pids;

# run_cmd([preload => 1,] @cmd): its exit code and output; with preload,
# the sanitizer runtime of a sanitizer build, for the gateway's nginx
sub run_cmd {
	my $preload = $_[0] eq 'preload' ? (splice @_, 0, 2)[1] : 0;
	my (@cmd) = @_;
	my $pid = open(my $fh, '-|');
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		open STDERR, '>&', \*STDOUT;
		if ($preload && $ENV{TEST_NGINX_PRELOAD}) {
			$ENV{LD_PRELOAD} = $ENV{TEST_NGINX_PRELOAD};
			$ENV{ASAN_OPTIONS} //= 'detect_leaks=0';
		}
		exec(@cmd) or POSIX::_exit(127);
	}
	local $/;
	my $out = <$fh> // '';
	close $fh;
	log_in("@cmd: exit " . ($? >> 8) . "\n$out");
	return ($? >> 8, $out);
}

my $made = '';		# what every make printed

sub make {
	# the module stays as it is (-o): another test may be running with it
	my ($rc, $out) = run_cmd(preload => 1, 'make', '-s',
		'--no-print-directory', '-C', $REPO, '-o', 'module', @_,
		"DEMO_DIR=$DEMO",
		"DEMO_OPTS=--listen 127.0.0.1:$GW --http-port $HTTP "
		. "--https-port $HTTPS --dns-port $DNS "
		. "--module $Test::Nginx::MODULE --nginx $Test::Nginx::NGINX");
	$made .= $out;
	return ($rc, $out);
}

sub alive {
	my ($pid) = @_;
	return 0 unless defined $pid && kill(0, $pid);
	open my $fh, '<', "/proc/$pid/stat" or return 0;
	my $stat = <$fh> // return 0;
	return $stat !~ /\)\s+Z\s/;
}

sub read_pids {
	for my $f (@pidfiles) {
		next unless -s $f;
		open my $fh, '<', $f or next;
		my $p = <$fh> // '';
		chomp $p;
		$pids{$f} = $p if $p =~ /^\d+$/;
	}
}

# whatever happens, the demo's processes go

$SIG{INT} = $SIG{TERM} = $SIG{HUP} = sub { exit 1; };

END {
	local ($?, $@, $!);
	read_pids();
	eval { run_cmd("$REPO/scripts/bottle-demo", 'stop', '--dir', $DEMO); };
	for my $p (values %pids) {
		kill 'KILL', $p if alive($p);
	}
}

plan(tests => 19);

# the demo upstream's access log: what reached it
sub upstream_log {
	sleep 0.3;
	open my $fh, '<', "$DEMO/upstream/access.log" or return '';
	local $/;
	return <$fh> // '';
}

###############################################################################

my ($rc, $out) = make('demo');
read_pids();

is($rc, 0, 'make demo: exit 0') or diag($out);
is(scalar keys %pids, 3, 'gateway, upstream and dnsmasq started');
like($out, qr/^bottle "demo", token \Q$TOKEN\E: \Q$HOST\E on ports $HTTP and $HTTPS$/m,
	'it spells out the token and the host');

sub curl {
	my (@args) = @_;
	my (undef, $r) = run_cmd('curl', '-q', '-s', '-i', '--noproxy', '',
		'--max-time', '10', @args);
	return $r;
}

my $PROXY = "http://agent:$TOKEN\@127.0.0.1:$GW";
my $CA = "$DEMO/gateway/ca/ca.crt";

my $r = curl('-x', $PROXY, '-H', 'Authorization: Bearer the-agents-own',
	"http://$HOST:$HTTP/hello");
like($r, qr/^HTTP\/1\.1 200 /, 'http: 200');
like($r, qr/^demo upstream: GET http:\/\/\Q$HOST\E:$HTTP\/hello$/m,
	'http: the demo upstream answered');
like($r, qr/^Authorization: Bearer \[held:credential:DEMO_API\]\**$/m,
	'http: the upstream\'s echo of the gateway\'s credential scrubbed');
unlike($r, qr/the-agents-own|\Q$SECRET\E/, 'http: not the agent\'s, nor the held value');
like(upstream_log(), qr/^GET http:\/\/\Q$HOST\E\/hello Authorization: Bearer \Q$SECRET\E$/m,
	'http: the upstream got the gateway\'s credential');

$r = curl('-x', $PROXY, '--cacert', $CA, "https://$HOST:$HTTPS/hello");
like($r, qr/^HTTP\/2 200 /m, 'https: 200, verified against the gateway CA');
like($r, qr/^demo upstream: GET https:\/\/\Q$HOST\E:$HTTPS\/hello$/m,
	'https: the demo upstream answered');
like($r, qr/^Authorization: Bearer \[held:credential:DEMO_API\]\**$/m,
	'https: the upstream\'s echo scrubbed');
like(upstream_log(), qr/^GET https:\/\/\Q$HOST\E\/hello Authorization: Bearer \Q$SECRET\E$/m,
	'https: the upstream got the gateway\'s credential');

$r = curl('-x', $PROXY, 'http://example.org/');
like($r, qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: no_route\r$/ms,
	'example.org: 403 no_route');

$r = curl('-x', "http://127.0.0.1:$GW", "http://$HOST:$HTTP/");
like($r, qr/^HTTP\/1\.1 407 /, 'no token: 407');

# a second start while it runs: refused, nothing changed

($rc, $out) = make('demo');
isnt($rc, 0, 'make demo again while it runs: refused');

($rc, $out) = make('demo-stop');
is($rc, 0, 'make demo-stop: exit 0');

my $deadline = time() + 10;
sleep 0.1 while (grep { alive($_) } values %pids) && time() < $deadline;
is(join(' ', grep { alive($_) } values %pids), '', 'all three stopped');

ok(!-e "$DEMO/dns/dnsmasq.pid" && !-s "$DEMO/upstream/nginx.pid"
	&& !-s "$DEMO/gateway/run/nginx.pid", 'no pid file left');

my $log = $made . $t->read_file("$DEMO/gateway/logs/error.log");
is(join("\n", $log =~ /^.*(?:\[(?:alert|crit|emerg)\]|Sanitizer|runtime error:).*$/mg),
	'', 'the gateway: no alerts, no sanitizer errors');

###############################################################################
