#!/usr/bin/perl

# Metrics (docs/metrics.md): bottle_metrics serves the Prometheus text
# format 0.0.4 on an operator's listener; the counters move as requests are
# allowed and refused, on either side (the front's CONNECT refusals too),
# DLP findings by detector, across workers; the bottles tracked are
# bounded, the rest counted as bottle="_other".

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy bottle/);

$t->write_file_expand('nginx.conf', <<'EOF');

%%TEST_GLOBALS%%

daemon off;
worker_processes 2;

bottle_policy %%TESTDIR%%/policy.json;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass $bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://$bottle_upstream$bottle_uri;
            proxy_set_header Host $bottle_host_header;
        }
    }

    server {
        listen 127.0.0.1:%%PORT_8090%%;

        location = /metrics {
            bottle_metrics;
        }
    }
}

EOF

my $P = port(8081);
my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);

# alice and bob, then 260 bottles more than the zone tracks by name

my @many = map { sprintf('b%03d', $_) } 0 .. 259;

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $ALICE, routes => [
		{ host => '127.0.0.1', port => $P,
			dlp => { on_match => 'block' } } ] },
	{ id => 'bob', token => $BOB, routes => [] },
	map { { id => $_, token => "token-of-$_-0123456789", routes => [] } }
		@many,
] });

fake_upstream($t, port => $P, name => 'one');

$t->run()->plan(25);

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

# a reload keeps the counters, and the new workers count into them

$t->reload();
is(status(req($ALICE, "http://127.0.0.1:$P/after")), 200, 'reloaded: served');
is(requests(metrics_when(sub {
	requests($_[0], 'alice', 'allowed', 'none') >= 7 }), 'alice', 'allowed',
	'none'), 7,
	'reloaded: the counters kept and moving');

###############################################################################
