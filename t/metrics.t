#!/usr/bin/perl

# Metrics (docs/metrics.md): bottle_metrics serves the Prometheus text
# format 0.0.4 on an operator's listener; the counters move as requests are
# allowed and refused, on either side (the front's CONNECT refusals too),
# DLP findings by detector, across workers; the bottles tracked are
# bounded, the rest counted as bottle="_other".  Held requests (now, total,
# released by outcome), the bottle_upstream pool (kept, reused, TLS
# handshakes, resumed), the minted-leaf cache (hits, mints, entries) and the
# module's zones (size, used) move as a user's traffic makes them.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use JSON::PP;
use POSIX qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl bottle/)
	->has(qw/dnsmasq openssl/)->has_daemon('curl')
	->has_daemon('redis-server')->has_daemon('redis-cli');

$t->write_file_expand('nginx.conf', gateway_conf(
	main => 'worker_processes 2;',
	global => "bottle_supervise redis://127.0.0.1:%%PORT_8092%%/2;\n"
		. 'bottle_supervise_timeout 2s;',
	http2 => 0,
	servers => <<'EOF'));
server {
    listen 127.0.0.1:%%PORT_8090%%;

    location = /metrics {
        bottle_metrics;
    }
}
EOF

my $P = port(8081);
my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';
my $CAROL = 'carol-token-0123456789ab';
my $UP = port(8443);
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);

# alice and bob, then 260 bottles more than the zone tracks by name

my @many = map { sprintf('b%03d', $_) } 0 .. 259;

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $ALICE, routes => [
		{ host => '127.0.0.1', port => $P,
			dlp => { on_match => 'block' } } ] },
	{ id => 'bob', token => $BOB, routes => [] },
	{ id => 'carol', token => $CAROL, routes => [
		{ host => '127.0.0.1', port => $P, methods => [ 'GET', 'POST' ],
			dlp => { on_match => 'supervise' } },
		{ host => 'a.test', port => $UP, internal => JSON::PP::true } ] },
	map { { id => $_, token => "token-of-$_-0123456789", routes => [] } }
		@many,
] });

fake_upstream($t, port => $P, name => 'one');

# the TLS upstream: another nginx, no module, TLS 1.2 with a session cache,
# closing every connection after its answer: each request dials anew, and
# resumes the session its worker saved for a.test

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'a.test');
my $d = $t->testdir();
mkdir "$d/up";
mkdir "$d/up/logs";

$t->write_file_expand('up/nginx.conf', <<"EOF");

daemon off;
pid $d/up/nginx.pid;
error_log $d/up/error.log info;

events {
}

http {
    access_log off;
    client_body_temp_path $d/up;
    proxy_temp_path $d/up;
    fastcgi_temp_path $d/up;
    uwsgi_temp_path $d/up;
    scgi_temp_path $d/up;

    keepalive_timeout 0;

    ssl_certificate $up->{cert};
    ssl_certificate_key $up->{key};
    ssl_session_cache shared:up:1m;

    server {
        listen 127.0.0.1:%%PORT_8443%% ssl;
        ssl_protocols TLSv1.2;
        ssl_session_tickets off;
        return 200 "up ok\\n";
    }
}

EOF

dns_start($t, port => port(8053), hosts => { 'a.test' => '127.0.0.1' });
my $redis = redis_start($t, port => port(8092), db => 2);
$ENV{BOTTLE_OPERATOR} = 'op-metrics';

# the proposal script finds its bottle in the store
store_put($t, { id => 'carol', token => $CAROL, routes => [] });

$t->run_daemon($Test::Nginx::NGINX, '-p', "$d/up/", '-c', "$d/up/nginx.conf",
	'-e', "$d/up/error.log");
$t->waitforsocket('127.0.0.1:' . $UP)
	or die "no upstream nginx on $UP\n";

$t->run()->plan(57);

###############################################################################

sub req {
	my ($token, $url) = @_;
	my ($hostport) = $url =~ m!^\w+://([^/?]+)!;
	return proxy_request(8080, "GET $url HTTP/1.1\r\nHost: $hostport\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n\r\n");
}

sub connect_to {
	my ($token, $target) = @_;
	return proxy_request(8080, "CONNECT $target HTTP/1.1\r\nHost: $target\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n\r\n");
}

sub status {
	my ($r) = @_;
	return ($r // '') =~ m!^HTTP/1\.1 (\d+)! ? $1 : 0;
}

sub scrape {
	return http_get('/metrics', socket => IO::Socket::INET->new(
		PeerAddr => '127.0.0.1:' . port(8090)));
}

# The text format 0.0.4, strictly: HELP and TYPE before a metric's samples,
# names and label names as the format allows, label values quoted with
# their escapes, a number for a value, no series twice.  Returns
# { 'name{labels}' => value } or dies with the offending line.

sub parse_prometheus {
	my ($text) = @_;
	my (%type, %help, %series);
	my $name_re = qr/[a-zA-Z_:][a-zA-Z0-9_:]*/;
	my $lname_re = qr/[a-zA-Z_][a-zA-Z0-9_]*/;
	my $value_re = qr/[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|NaN|[-+]?Inf)/;

	die "no final newline\n" unless $text =~ /\n\z/;

	for my $line (split /\n/, $text) {
		next if $line eq '';
		if ($line =~ /^# HELP ($name_re) (.*)$/) {
			die "HELP twice: $line\n" if $help{$1}++;
			next;
		}
		if ($line =~ /^# TYPE ($name_re) (counter|gauge|histogram|summary|untyped)$/) {
			die "TYPE twice: $line\n" if $type{$1};
			$type{$1} = $2;
			next;
		}
		die "a comment of no known kind: $line\n" if $line =~ /^#/;

		$line =~ /^($name_re)(?:\{(.*)\})? ($value_re)(?: -?\d+)?$/
			or die "not a sample: $line\n";
		my ($name, $labels, $value) = ($1, $2 // '', $3);
		die "sample before its TYPE: $line\n" unless $type{$name};

		my @l;
		my $rest = $labels;
		while ($rest ne '') {
			$rest =~ s/^($lname_re)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)//
				or die "bad labels: $line\n";
			push @l, "$1=$2";
		}
		my $key = $name . '{' . join(',', sort @l) . '}';
		die "series twice: $line\n" if exists $series{$key};
		$series{$key} = $value;
	}

	return \%series;
}

sub metrics {
	my $r = scrape();
	my ($body) = ($r // '') =~ /\r\n\r\n(.*)\z/s;
	return parse_prometheus($body // '');
}

# an allowed request is counted in its log phase, after the answer went
# out: wait for the count

sub metrics_when {
	my ($cond) = @_;
	my $m;
	for (1 .. 50) {
		$m = metrics();
		return $m if $cond->($m);
		select undef, undef, undef, 0.1;
	}
	return $m;
}

sub requests {
	my ($m, $bottle, $verdict, $rule) = @_;
	return $m->{"bottle_requests_total{bottle=$bottle,rule=$rule,"
		. "verdict=$verdict}"} // 0;
}

###############################################################################

my $r = scrape();
like($r, qr/^HTTP\/1\.1 200 /, 'metrics: 200');
like($r, qr/^Content-Type: text\/plain; version=0\.0\.4; charset=utf-8\r$/mi,
	'metrics: the text format\'s content type');

my $m = eval { metrics() };
ok($m, 'parses as Prometheus text') or diag($@);
is(requests($m, 'alice', 'allowed', 'none'), 0, 'nothing counted yet');
ok(exists $m->{'bottle_tunnels{}'}, 'zone usage: open tunnels');
ok(exists $m->{'bottle_audit_dropped_total{}'}, 'audit queue drops');

# allowed requests, on both workers

my $ok = 0;
$ok += status(req($ALICE, "http://127.0.0.1:$P/a$_")) == 200 for 1 .. 6;
is($ok, 6, 'six allowed');
$m = metrics_when(sub { requests($_[0], 'alice', 'allowed', 'none') >= 6 });
is(requests($m, 'alice', 'allowed', 'none'), 6, 'allowed: counted');

# refusals: the pipeline's, the front's

is(status(req($ALICE, 'http://nowhere.invalid/')), 403, 'no route');
is(status(req($ALICE, "http://127.0.0.1:$P/?k=$GHP")), 403, 'dlp');
is(status(req('wrong-token-0123456789', "http://127.0.0.1:$P/")), 407,
	'identity');
like(connect_to($BOB, '127.0.0.1:443'), qr/^HTTP\/1\.1 403 /,
	'CONNECT refused at the front');

$m = metrics();
is(requests($m, 'alice', 'refused', 'no_route'), 1, 'no_route: counted');
is(requests($m, 'alice', 'refused', 'dlp'), 1, 'dlp: counted');
is(requests($m, '_none', 'refused', 'identity'), 1,
	'identity: counted as bottle _none');
is(requests($m, 'bob', 'refused', 'no_route'), 1,
	'the front\'s refusal: counted');
is(requests($m, 'alice', 'allowed', 'none'), 6, 'allowed: unchanged');
is($m->{'bottle_dlp_findings_total{detector=token_patterns}'}, 1,
	'DLP findings by detector');

# the budget: 256 bottles by name, the rest as _other

my $refused = 0;
for my $id (@many) {
	$refused++ if status(req("token-of-$id-0123456789",
		'http://nowhere.invalid/')) == 403;
}
is($refused, scalar @many, 'many bottles: refused');

$m = metrics();
my @named = grep { /^bottle_requests_total\{bottle=(?!_other|_none)/ } keys %$m;
my %names = map { /bottle=([^,}]+)/; ($1 => 1) } @named;
is(scalar keys %names, 256, '256 bottles by name');
is($m->{'bottle_metrics_bottles{}'}, 256, 'bottle_metrics_bottles: 256');
is(requests($m, '_other', 'refused', 'no_route'), 6,
	'the rest: bottle="_other"');
my $sum = 0;
$sum += $m->{$_} for grep { /rule=no_route,verdict=refused/ } keys %$m;
is($sum, 2 + scalar @many, 'no refusal lost to the budget');

# the upstream pool: alice's six allowed requests went to the fake
# upstream, which keeps HTTP/1.1 connections alive: every one was kept,
# and all but each worker's first went on a kept one

sub val {
	my ($m, $key) = @_;
	return $m->{$key} // 0;
}

$m = metrics();
is(val($m, 'bottle_upstream_kept_total{}'), 6, 'pool: six connections kept');
cmp_ok(val($m, 'bottle_upstream_reused_total{}'), '>=', 4,
	'pool: kept connections reused');
is(val($m, 'bottle_upstream_reused_total{}') + upstream_connects($t, 'one'),
	6, 'pool: a request not on a reused connection dialled the upstream');
is(val($m, 'bottle_upstream_tls_handshakes_total{}'), 0,
	'pool: no TLS handshake yet');

# TLS: four requests in tunnels to a.test, each a new tunnel (a leaf the
# worker minted or had cached) and a new upstream connection (the upstream
# closes them), resumed when the worker saved a session for a.test; with
# two workers at least one worker served two

sub curl {
	my (@args) = @_;
	open my $fh, '-|', 'curl', '-s', '-S', '-i', '--max-time', '10',
		'--proxy', "http://agent:$CAROL\@127.0.0.1:" . port(8080),
		'--cacert', $gwca->{cert}, @args
		or die "curl: $!";
	local $/;
	my $out = <$fh>;
	close $fh;
	return $out // '';
}

$ok = 0;
for (1 .. 4) {
	$ok++ if curl("https://a.test:$UP/t$_") =~ /^HTTP\/1\.1 200 .*up ok/s;
}
is($ok, 4, 'TLS: four requests through tunnels answered');

$m = metrics_when(sub {
	val($_[0], 'bottle_upstream_tls_handshakes_total{}') >= 4 });
is(val($m, 'bottle_upstream_tls_handshakes_total{}'), 4,
	'TLS: four upstream handshakes');
cmp_ok(val($m, 'bottle_upstream_tls_resumed_total{}'), '>=', 2,
	'TLS: the second on a worker resumed');
cmp_ok(val($m, 'bottle_upstream_tls_resumed_total{}'), '<', 4,
	'TLS: the first on a worker did not');

is(val($m, 'bottle_leaf_cache_hits_total{}')
	+ val($m, 'bottle_leaf_mints_total{}'), 4,
	'leaves: every handshake a hit or a mint');
ok(val($m, 'bottle_leaf_mints_total{}') >= 1
	&& val($m, 'bottle_leaf_mints_total{}') <= 2,
	'leaves: a.test minted once per worker at most');
cmp_ok(val($m, 'bottle_leaf_cache_hits_total{}'), '>=', 2,
	'leaves: then served from the cache');
is(val($m, 'bottle_leaf_cache_entries{}'), val($m, 'bottle_leaf_mints_total{}'),
	'leaves: one cached per worker that minted');

# zones: the jar zone grows with cookies; every zone's used within its size

my $jar = 'bottle_zone_used_bytes{zone=bottle_jar}';
my $used = val($m, $jar);
cmp_ok(val($m, 'bottle_zone_size_bytes{zone=bottle_jar}'), '>=', 7 << 20,
	'zones: the jar zone\'s capacity');
cmp_ok(val($m, 'bottle_zone_size_bytes{zone=bottle}'), '>', 0,
	'zones: the bottle zone\'s capacity');

my $V = 'v' x 1000;
$ok = 0;
$ok += status(req($CAROL, "http://127.0.0.1:$P/set-cookie?c$_=$V")) == 200
	for 1 .. 8;
is($ok, 8, 'zones: eight cookies set');

$m = metrics();
cmp_ok(val($m, $jar), '>=', $used + 3 * 4096,
	'zones: the jar zone\'s usage grew with its cookies');
ok(!grep({ /^bottle_zone_used_bytes\{zone=(.*)\}$/
	&& $m->{$_} > $m->{"bottle_zone_size_bytes{zone=$1}"} } keys %$m),
	'zones: used within the size');

# tunnels: the bottle zone's records while tunnels are open, each with a
# request inside that the upstream answers late

my @open;
for (1 .. 3) {
	my $s = proxy_session(port(8080), timeout => 5) or last;
	$s->send("CONNECT 127.0.0.1:$P HTTP/1.1\r\nHost: 127.0.0.1:$P\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $CAROL) . "\r\n\r\n");
	$s->read_response(timeout => 5);
	$s->send("GET /delay?ms=5000 HTTP/1.1\r\nHost: 127.0.0.1:$P\r\n\r\n");
	push @open, $s;
}
$m = metrics_when(sub { val($_[0], 'bottle_tunnels{}') >= 3 });
is(val($m, 'bottle_tunnels{}'), 3, 'zones: three open tunnels');
$_->close() for @open;
$m = metrics_when(sub { val($_[0], 'bottle_tunnels{}') == 0 });
is(val($m, 'bottle_tunnels{}'), 0, 'zones: closed, none');

# held requests: a token in carol's body is held for the operator

my $BODY = "{\"note\": \"deploy with $GHP please\"}";

sub post {
	my $s = proxy_session(port(8080), timeout => 10) or die "no session\n";
	$s->send("POST http://127.0.0.1:$P/held HTTP/1.1\r\n"
		. "Host: 127.0.0.1:$P\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $CAROL) . "\r\n"
		. "Content-Type: application/json\r\n"
		. 'Content-Length: ' . length($BODY) . "\r\n"
		. "Connection: close\r\n\r\n" . $BODY);
	return $s;
}

sub ctl {
	return Test::Bottle::bottlectl($t, $redis, @_);
}

sub pending {
	my $deadline = time() + 10;
	while (time() < $deadline) {
		my ($id) = ctl('proposals', '--bottle', 'carol')
			=~ /^(\d+-[0-9a-f]{8}) /m;
		return $id if $id;
		sleep 0.1;
	}
	return undef;
}

sub released {
	my ($m, $outcome) = @_;
	return val($m, "bottle_held_released_total{outcome=$outcome}");
}

# the operator channel is up once a first hold reaches it

my $s = post();
$m = metrics_when(sub { val($_[0], 'bottle_held{}') == 1 });
is(val($m, 'bottle_held{}'), 1, 'held: one held now');
is(val($m, 'bottle_held_total{}'), 1, 'held: one held in all');

$s->close();
$m = metrics_when(sub { released($_[0], 'client_gone') == 1 });
is(released($m, 'client_gone'), 1, 'held: released, the client gone');
is(val($m, 'bottle_held{}'), 0, 'held: none held now');

# timeout (bottle_supervise_timeout 2s)

$s = post();
like($s->read_response(timeout => 8) // '', qr/^HTTP\/1\.1 403 /,
	'held: timed out, refused');
$m = metrics_when(sub { released($_[0], 'timeout') == 1 });
is(released($m, 'timeout'), 1, 'held: released, timeout');

# denied, then approved (the value is safelisted after: approved last)

$s = post();
my $id = pending();
ctl('deny', $id) if $id;
like($s->read_response(timeout => 5) // '', qr/^HTTP\/1\.1 403 /,
	'held: denied, refused');

$s = post();
$id = pending();
ctl('approve', $id) if $id;
like($s->read_response(timeout => 5) // '', qr/^HTTP\/1\.1 200 /,
	'held: approved, served');

$m = metrics_when(sub { released($_[0], 'approved') == 1 });
is(released($m, 'denied'), 1, 'held: released, denied');
is(released($m, 'approved'), 1, 'held: released, approved');
is(val($m, 'bottle_held_total{}'), 4, 'held: four held in all');
is(val($m, 'bottle_held{}'), 0, 'held: none held now, after all');
is(released($m, 'expired') + released($m, 'failed'), 0,
	'held: none expired or failed');

# a reload keeps the counters, and the new workers count into them

$t->reload();
is(status(req($ALICE, "http://127.0.0.1:$P/after")), 200, 'reloaded: served');
is(requests(metrics_when(sub {
	requests($_[0], 'alice', 'allowed', 'none') >= 7 }), 'alice', 'allowed',
	'none'), 7,
	'reloaded: the counters kept and moving');

###############################################################################
