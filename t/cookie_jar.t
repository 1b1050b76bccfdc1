#!/usr/bin/perl

# The cookie jar (issue 11, items 1 and 4): an agent's Cookie header rebuilt
# from the pairs its host set, each name once, whatever the agent repeats
# (HTTP/1.1 plain and in TLS, HTTP/2, several Cookie headers); the jars in a
# zone of their own, a byte budget per bottle with its least recently used
# cookies evicted, so one bottle filling jars on many hosts neither starves
# another bottle's cookies nor anyone's tunnels; expiry; the jars of a
# bottle that leaves the policy freed on reload.

###############################################################################

use warnings;
use strict;

use Test::More;
use POSIX qw//;
use Time::HiRes qw/ time sleep /;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl http_v2 bottle/)
	->has(qw/dnsmasq openssl/)->has_daemon('curl');

# Small zones: the CONNECT records' is 32k, the jars' 64k (48k for
# cookies), a bottle's budget 16k: seven cookies of 1000 bytes (2048 bytes
# of the zone each).  Before the jars had a zone and a budget of their own,
# bottle A's cookies below filled the one zone and B's tunnels failed
# ("no memory in the bottle zone").

$t->write_file_expand('nginx.conf', gateway_conf(
	policy => ' zone=32k',
	global => "bottle_jar_zone 64k;\nbottle_jar_bottle_max 16k;",
	front => "bottle_head_buffer_size 16k;\nbottle_head_line_size 12k;",
	http => 'large_client_header_buffers 4 16k;',
	servers => <<'EOF'));
server {
    listen 127.0.0.1:8090;

    location = /approve {
        bottle_safelist_approve;
    }
}
EOF

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'b.allowed.test', 'c.allowed.test');

my %TOKEN = (a => 'bottle-a-token-0123456789', b => 'bottle-b-token-0123456789',
	c => 'bottle-c-token-0123456789');
my $T = JSON::PP::true;
my $PLAIN = port(8081);
my $TLS = port(8443);
my @HOSTS = map { "h$_.allowed.test" } 1 .. 20;

sub bottle_a {
	return { id => 'bottle-a', token => $TOKEN{a}, routes => [
		map { { host => $_, port => $PLAIN, internal => $T } } @HOSTS ] };
}

sub bottle_b {
	return { id => 'bottle-b', token => $TOKEN{b}, routes => [
		{ host => 'b.allowed.test', port => $TLS, internal => $T } ] };
}

sub bottle_c {
	return { id => 'bottle-c', token => $TOKEN{c}, routes => [
		{ host => 'c.allowed.test', port => $TLS, internal => $T },
		{ host => 'cp.allowed.test', port => $PLAIN, internal => $T } ] };
}

sub policy {
	write_policy($t, 'policy.json', { bottles => [ @_ ] });
}

policy(bottle_a(), bottle_b(), bottle_c());

dns_start($t, port => port(8053), hosts => { map { ($_ => '127.0.0.1') }
	@HOSTS, qw/b.allowed.test c.allowed.test cp.allowed.test/ });

fake_upstream($t, port => 8081, name => 'plain');
fake_upstream($t, port => 8443, name => 'tls', tls => 1,
	cert => $up->{cert}, key => $up->{key});

$t->run()->plan(44);

###############################################################################

# a plain proxy request of bottle $who, more headers in @h

sub plain {
	my ($who, $url, @h) = @_;
	my ($hostport) = $url =~ m!^http://([^/]+)!;
	return proxy_request(8080, "GET $url HTTP/1.1\r\nHost: $hostport\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $TOKEN{$who}) . "\r\n"
		. join('', map { "$_\r\n" } @h)
		. "Connection: close\r\n\r\n");
}

# HTTPS through a CONNECT tunnel of bottle $who, the gateway CA trusted

sub curl {
	my ($who, @args) = @_;
	open my $fh, '-|', 'curl', '-s', '-S', '-i', '--max-time', '10',
		'--proxy', "http://agent:$TOKEN{$who}\@127.0.0.1:" . port(8080),
		'--cacert', $gwca->{cert}, @args
		or die "curl: $!";
	local $/;
	my $out = <$fh>;
	close $fh;
	return $out // '';
}

sub last_req {
	my ($name) = @_;
	return upstream_requests($t, $name)->[-1] // {};
}

# the Cookie headers the upstream got with the request for $path

sub cookies_at {
	my ($name, $path) = @_;
	my ($q) = grep { $_->{target} eq $path } @{upstream_requests($t, $name)};
	return $q ? join(' | ', header_value($q, 'Cookie')) : '(no request)';
}

sub status {
	my ($r) = @_;
	my @s = ($r // '') =~ m!^HTTP/[\d.]+ (\d+)!mg;
	return $s[-1] // 0;
}

my $n = 0;

sub path { return '/r' . ++$n }

###############################################################################

# Item 1: a repeated cookie grows "; " between the kept pairs; the filter
# wrote past the buffer it had sized to the input ("malloc(): invalid
# size", the worker killed by signal 6).  Now a name goes out once.

my $C = 'https://c.allowed.test:' . $TLS;

like(curl('c', "$C/set-cookie?a=1"), qr/^set-cookie: a=1\r?$/mi,
	'the host sets a=1');

my $rep = join(';', ('a=1') x 2000);		# 7999 bytes

my $p = path();
my $r = curl('c', '--http1.1', '-H', "Cookie: $rep", "$C$p");
is(status($r), 200, '8 KB of a=1;a=1;... over HTTP/1.1 in TLS: 200');
is(cookies_at('tls', $p), 'a=1', 'the upstream gets a=1, once');

$rep = join(';', ('a=1') x 675);		# 2.7 KB, three times
$p = path();
$r = curl('c', '--http2', ('-H', "Cookie: $rep") x 3, "$C$p");
like($r, qr/^HTTP\/2 200 /m, 'three 2.7 KB Cookie headers over HTTP/2: 200');
is(cookies_at('tls', $p), 'a=1', 'joined by nginx, filtered: a=1 once');

$p = path();
$r = curl('c', '--http2', '-H', 'Cookie: a=2; a=1; evil=x; a=1',
	'-H', 'Cookie: a=1', "$C$p");
is(cookies_at('tls', $p), 'a=1', 'the first pair with the value the host set');

# plain HTTP/1.1: the same attack, and several Cookie headers

my $CP = "http://cp.allowed.test:$PLAIN";

like(plain('c', "$CP/set-cookie?a=1&b=2"), qr/^Set-Cookie: b=2\r$/m,
	'plain: the host sets a=1 and b=2');

$p = path();
$r = plain('c', "$CP$p", 'Cookie: ' . join(';', ('a=1') x 2000));
is(status($r), 200, 'plain: 8 KB of a=1;a=1;...: 200');
is(cookies_at('plain', $p), 'a=1', 'plain: the upstream gets a=1, once');

$p = path();
plain('c', "$CP$p", 'Cookie: a=1;a=1', 'Cookie: x=1; b=2;a=1', 'Cookie: b=2');
is(cookies_at('plain', $p), 'a=1; b=2',
	'three Cookie headers: one header, each name once');

$p = path();
plain('c', "$CP$p", 'Cookie: evil=1', 'Cookie: a=9');
is(cookies_at('plain', $p), '', 'none of them kept: no Cookie header');

# expiry

plain('c', "$CP/set-cookie?e=1%3B%20Max-Age%3D1&f=1%3B%20Max-Age%3D600"
	. '&g=1%3B%20Expires%3DWed,%2021%20Oct%202015%2007:28:00%20GMT');
$p = path();
plain('c', "$CP$p", 'Cookie: e=1; f=1; g=1');
is(cookies_at('plain', $p), 'e=1; f=1', 'Max-Age in the future: sent; a past '
	. 'Expires: not kept');

sleep 2.1;
$p = path();
plain('c', "$CP$p", 'Cookie: e=1; f=1');
is(cookies_at('plain', $p), 'f=1', 'after its Max-Age the cookie is not sent');

###############################################################################

# Item 4: bottle B's cookie and tunnels while bottle A fills jars

my $B = 'https://b.allowed.test:' . $TLS;

like(curl('b', "$B/set-cookie?bsid=b-session"), qr/^set-cookie: bsid=b-sess/mi,
	'B: the host sets a cookie');
$p = path();
curl('b', '-H', 'Cookie: bsid=b-session; evil=1', "$B$p");
is(cookies_at('tls', $p), 'bsid=b-session', 'B: its cookie goes upstream');

# A: two cookies of 1000 bytes per host, 2048 bytes of the zone each;
# its budget keeps seven

my $V = 'v' x 996;

sub set_a {
	my ($i) = @_;
	return plain('a', "http://h$i.allowed.test:$PLAIN/set-cookie?"
		. "k1=h$i-$V&k2=h$i-$V");
}

sub send_a {
	my ($i) = @_;
	my $p = path();
	plain('a', "http://h$i.allowed.test:$PLAIN$p",
		"Cookie: k1=h$i-$V; k2=h$i-$V");
	my $c = cookies_at('plain', $p);
	return $c eq "k1=h$i-$V; k2=h$i-$V" ? 'both'
		: $c eq "k1=h$i-$V" ? 'k1' : $c eq "k2=h$i-$V" ? 'k2'
		: $c eq '' ? 'none' : "unexpected: $c";
}

like(set_a(1), qr/^Set-Cookie: k2=h1-v+\r$/m, 'A: a host sets two cookies');
set_a(2);
set_a(3);
is(send_a(1), 'both', 'A: three hosts, six cookies, within its budget');

set_a(4);
set_a(5);

is(send_a(2), 'none', 'A over its budget: its least recently used go');
is(send_a(1), 'both', 'A: cookies sent since are kept longer');
is(send_a(5), 'both', 'A: the newest are kept');

# A on all twenty hosts: 20 small cookies and two large ones each, 90 KB
# in all, more than both zones; the small ones take slots of the size a
# tunnel's record needs

sub set_small {
	my ($i) = @_;
	return plain('a', "http://h$i.allowed.test:$PLAIN/set-cookie?"
		. join('&', map { sprintf("s%02d=h$i-%s", $_, 's' x 76) }
			1 .. 20));
}

for my $i (6 .. 20) {
	set_small($i);
	set_a($i);
}

is(send_a(20), 'both', 'A after twenty hosts: the newest are kept');
is(send_a(1), 'none', 'A: the oldest have gone');

my $evicted = 0;
$evicted += send_a($_) eq 'none' for 1 .. 20;
ok($evicted >= 16, "A: at most its budget of cookies is kept ($evicted of "
	. '20 hosts have none)');

unlike($t->read_file('error.log'), qr/cookie jar is full/,
	'A was held to its budget, never to a full zone');

# the supervise safelist shares the tunnels' zone: a quarter of it at most

my ($approved, $full) = (0, 0);

for my $i (1 .. 200) {
	my $r = http_post('/approve', 'bottle=bottle-b&host=b.allowed.test&sha256='
		. sprintf('%064x', $i), port => 8090) // '';
	$approved++ if $r =~ /^HTTP\/1\.1 204 /;
	$full = $i, last if $r =~ /^HTTP\/1\.1 507 /;
}

ok($approved >= 32 && $full == $approved + 1,
	"the safelist stops at a quarter of the zone ($approved approvals, "
	. 'then 507)');
like($t->read_file('error.log'), qr/bottle safelist: full/,
	'the refused approval is logged');

# B is untouched: its cookie, HTTPS and tunnels

$p = path();
$r = curl('b', '-H', 'Cookie: bsid=b-session', "$B$p");
like($r, qr/^HTTP\/2 200 /m, 'B: intercepted HTTPS works');
is(cookies_at('tls', $p), 'bsid=b-session', 'B: its cookie still goes upstream');

my @s;

for my $i (1 .. 8) {
	my $s = proxy_session(8080);
	$s->send("CONNECT b.allowed.test:$TLS HTTP/1.1\r\n"
		. "Host: b.allowed.test:$TLS\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $TOKEN{b}) . "\r\n\r\n");
	push @s, $s if $s->read_response() =~ /^HTTP\/1\.1 200 /;
}

is(scalar @s, 8, 'B: eight tunnels at once');

my $ok = 0;

for my $s (@s) {
	next unless $s->start_ssl(SSL_hostname => 'b.allowed.test',
		SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
		SSL_ca_file => $gwca->{cert});
	$p = path();
	$s->send("GET $p HTTP/1.1\r\nHost: b.allowed.test:$TLS\r\n"
		. "Cookie: bsid=b-session\r\nConnection: close\r\n\r\n");
	$ok++ if $s->read_response() =~ /^HTTP\/1\.1 200 /
		&& cookies_at('tls', $p) eq 'bsid=b-session';
	$s->close();
}

is($ok, 8, 'B: a request with its cookie through each');

unlike($t->read_file('error.log'), qr/no memory|zone is full/,
	'no zone ran out of memory');

###############################################################################

# the jars of a bottle that leaves the policy are freed on reload

$p = path();
plain('c', "$CP$p", 'Cookie: a=1; b=2; f=1');
is(cookies_at('plain', $p), 'a=1; b=2; f=1', 'C: its cookies before');

policy(bottle_a(), bottle_b());
ok($t->reload(), 'reload without bottle C');

my $swept = 0;
for (1 .. 50) {
	last if $swept = $t->read_file('error.log')
		=~ /bottle jar sweep: 1 bottles gone/;
	sleep 0.1;
}
ok($swept, 'the sweep freed the jars of the bottle that left');

like(plain('c', "$CP/gone"), qr/^HTTP\/1\.1 407 /, 'C is unknown now');

policy(bottle_a(), bottle_b(), bottle_c());
ok($t->reload(), 'reload with bottle C again');

$p = path();
$r = plain('c', "$CP$p", 'Cookie: a=1; b=2; f=1');
is(status($r), 200, 'C back: its request passes');
is(cookies_at('plain', $p), '', 'C back: its old cookies are gone');

$p = path();
curl('c', '-H', "Cookie: a=1", "$C$p");
is(cookies_at('tls', $p), '', 'C back: on every host');

$p = path();
curl('b', '-H', 'Cookie: bsid=b-session', "$B$p");
is(cookies_at('tls', $p), 'bsid=b-session',
	'B, still in the policy: its cookie survived both reloads');
is(send_a(20), 'both', 'A: its cookies too');

###############################################################################

# the budget's lower bound: one cookie of the largest size

sub nginx_t {
	my ($name) = @_;
	my $d = $t->testdir();

	my $pid = open(my $fh, '-|');
	die "fork: $!\n" unless defined $pid;

	if ($pid == 0) {
		open STDERR, '>&', \*STDOUT;
		Test::Nginx::_sanitizer_env();
		exec($Test::Nginx::NGINX, '-t', '-p', "$d/", '-c', $name,
			'-e', "$d/t.log") or POSIX::_exit(127);
	}

	local $/;
	my $text = <$fh> // '';
	close $fh;

	return ($? >> 8, $text);
}

my $check = $t->read_file('nginx.conf');
my $d = $t->testdir();
$check =~ s!\Q$d\E/error\.log!$d/check-error.log!g;
$check =~ s!\Q$d\E/nginx\.pid!$d/check.pid!g;

$t->write_file('check.conf', $check);
my ($rc, $out) = nginx_t('check.conf');
ok($rc == 0 && $out =~ /test is successful/, 'nginx -t with the jar '
	. 'directives') or diag($out);

$t->write_file('check.conf',
	$check =~ s/bottle_jar_bottle_max 16k;/bottle_jar_bottle_max 1k;/r);
($rc, $out) = nginx_t('check.conf');
ok($rc != 0 && $out =~ /between 16384 and/,
	'a budget below one cookie of the largest size is refused')
	or diag($out);

$t->write_file('check.conf',
	$check =~ s/bottle_jar_zone 64k;/bottle_jar_zone 16k;/r);
($rc, $out) = nginx_t('check.conf');
ok($rc != 0 && $out =~ /between 65536 and/,
	'a jar zone too small for the allocator is refused') or diag($out);

###############################################################################
