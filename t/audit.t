#!/usr/bin/perl

# Tests for the audit journal (docs/control-plane.md, "Audit events"):
# refusals, DLP findings and first contacts in the bottle:audit stream with
# the schema's fields, never a secret or a token; one first contact per
# (bottle, host) across requests, workers and gateways; the request's
# $request_id as correlation_id; a full queue drops its oldest events and
# one audit.truncation_detected says how many; audit.delivery: "required"
# waits for the record and is refused (rule audit, 503) without it, and
# a gateway whose journal is off refuses such a bottle (a store's at load,
# a file's at nginx -t); bottlectl audit tail shows the events.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle qw//;

use JSON::PP;
use POSIX qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';
my $CAROL = 'carol-token-0123456789ab';
my $CANARY = 'CANARY-a1b2c3d4e5';
my $SECRET = 'secret-api-value-1';
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);

my $RP = port(8090);
my $P1 = port(8081);
my $P2 = port(8082);
my $P3 = port(8083);
my $P4 = port(8084);

sub conf {
	my ($front, $workers, $extra, $log) = @_;
	return <<"EOF";

%%TEST_GLOBALS%%

daemon off;
worker_processes $workers;

bottle_policy redis://127.0.0.1:$RP/2;
$extra

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:$front;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    log_format ids '\$request_id \$pid \$status "\$request"';

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;
        access_log %%TESTDIR%%/$log ids;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
        }
    }
}

EOF
}

my $FA = port(8080);
my $FB = port(8180);

$t->write_file_expand('nginx.conf', conf($FA, 2, '', 'a.log'));

fake_upstream($t, port => $P1, name => 'one');
fake_upstream($t, port => $P2, name => 'two', addr => '127.0.0.2');
fake_upstream($t, port => $P3, name => 'three', addr => '127.0.0.3');

# a second gateway on the same Redis: one worker, a queue of 4

my $t2 = Test::Nginx->new()->has(qw/http proxy stream bottle/);
$t2->write_file_expand('nginx.conf', conf($FB, 1,
	"bottle_audit_queue 4;\nbottle_audit_timeout 1s;", 'b.log'));

# a third, with the journal off: a bottle requiring delivery is not served

my $FC = port(8280);
my $t3 = Test::Nginx->new()->has(qw/http proxy stream bottle/);
$t3->write_file_expand('nginx.conf', conf($FC, 1, 'bottle_audit off;',
	'c.log'));

redis_start($t, port => $RP, persist => 1, db => 2);

my $T = JSON::PP::true;

store_put($t,
	{ id => 'alice', token => $ALICE, canary => $CANARY,
		egress_tokens => { API => $SECRET },
		routes => [
		{ host => '127.0.0.1', port => $P1, dlp => { on_match => 'block' },
			auth => { type => 'header', name => 'x-api-key',
				value => 'secret:API' } },
		{ host => '127.0.0.3', port => $P3, agent_provider => $T },
		{ host => '127.0.0.4', port => $P4, passthrough => $T,
			internal => $T },
	] },
	{ id => 'bob', token => $BOB, routes => [] },
	{ id => 'carol', token => $CAROL, audit => { delivery => 'required' },
		routes => [
		{ host => '127.0.0.1', port => $P1 },
		{ host => '127.0.0.2', port => $P2 },
		{ host => '127.0.0.4', port => $P4, passthrough => $T,
			internal => $T },
	] });

# a passthrough target: accepts and waits

$t->run_daemon(\&sink, $P4);
$t->waitforsocket("127.0.0.4:$P4") or die "no sink\n";

$t->run();
$t2->run();
$t3->run();

$t->plan(47);

###############################################################################

# refusals: no route, identity, canary, dlp

like(wait_for(sub { get($FA, $BOB, 'nowhere.invalid', 80, '/') }, qr/ 403 /),
	qr/ 403 .*X-Bottle-Rule: no_route/s, 'no route refused');
get($FA, 'wrong-token-0123456789', '127.0.0.1', $P1, '/');
like(get($FA, $ALICE, '127.0.0.1', $P1, "/?c=$CANARY"), qr/ 403 .*canary/s,
	'canary refused');
like(get($FA, $ALICE, '127.0.0.1', $P1, "/?k=$GHP"), qr/ 403 .*dlp/s,
	'token pattern refused');

my $e = wait_events(sub { grep { $_->{type} eq 'dlp.finding' } @_ }, 2);

my ($nr) = grep { $_->{type} eq 'egress.refusal'
	&& ($_->{rule} // '') eq 'no_route' } @$e;
ok($nr, 'no_route: a refusal event');
is_deeply([ map { $nr->{$_} } qw/v producer bottle host status method port/ ],
	[ 1, 'egress', 'bob', 'nowhere.invalid', 403, 'GET', 80 ],
	'no_route: v, producer, bottle, host, status, method, port');
like($nr->{reason} // '', qr/allowlist/, 'no_route: the reason');
like($nr->{time} // '', qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
	'time: RFC 3339, UTC, milliseconds');
like($nr->{gateway} // '', qr/^.+:\d+$/, 'gateway: host name and pid');
like($nr->{id} // '', qr/^\Q$nr->{gateway}\E-\d+-\d+$/, 'id: gateway, time, counter');
like($nr->{correlation_id} // '', qr/^[0-9a-f]{32}$/, 'correlation id');

my ($id) = grep { ($_->{rule} // '') eq 'identity' } @$e;
ok($id && !defined $id->{bottle} && $id->{status} == 407,
	'identity: a refusal with no bottle, 407');

my ($can) = grep { ($_->{rule} // '') eq 'canary' } @$e;
ok($can && $can->{bottle} eq 'alice', 'canary: a refusal event');

my @f = grep { $_->{type} eq 'dlp.finding' } @$e;
my ($fc) = grep { $_->{detector} eq 'canary' } @f;
my ($ft) = grep { $_->{detector} eq 'token_patterns' } @f;
ok($fc && $fc->{action} eq 'blocked' && $fc->{location} eq 'query',
	'canary: a finding, blocked, in the query');
is_deeply($ft && [ map { $ft->{$_} } qw/rule location action bottle host/ ],
	[ 'github_pat_classic', 'query', 'blocked', 'alice', '127.0.0.1' ],
	'token: a finding with rule, location, action');
like($ft && $ft->{digest}, qr/^sha256:[0-9a-f]{16}$/, 'token: a digest');
my ($dr) = grep { ($_->{rule} // '') eq 'dlp' } @$e;
is($dr && $dr->{correlation_id}, $ft && $ft->{correlation_id},
	'finding and refusal share the correlation id');

# redact: a finding, the request forwarded

like(get($FA, $ALICE, '127.0.0.3', $P3, "/r?k=$GHP"), qr/ 200 /,
	'redact: forwarded');
$e = wait_events(sub { grep { ($_->{action} // '') eq 'redacted' } @_ });
ok(scalar(grep { ($_->{action} // '') eq 'redacted' } @$e), 'redact: a finding');

# first contact: once per (bottle, host), across requests and workers

# requests until both workers served some (each has its own cache)

my ($ok, $n, %pids) = (0, 0);
while ($n < 60 && (keys %pids < 2 || $n < 10)) {
	$n++;
	$ok++ if get($FA, $ALICE, '127.0.0.1', $P1, "/w$n") =~ / 200 /;
	%pids = map { (split ' ')[1] => 1 } grep { / 200 "GET \/w\d+ / }
		split /\n/, $t->read_file('a.log');
}
is($ok, $n, 'first contact: served');
is(scalar keys %pids, 2, 'both workers served the host');

$e = wait_events(sub { contacts(\@_, 'alice', '127.0.0.1') });
my @c = contacts($e, 'alice', '127.0.0.1');
is(scalar @c, 1, 'one first contact for (alice, 127.0.0.1)');
is_deeply([ map { $c[0]{$_} } qw/port method scheme/ ], [ $P1, 'GET', 'http' ],
	'first contact: port, method, scheme');

my ($line) = grep { /^\Q$c[0]{correlation_id}\E / } split /\n/, $t->read_file('a.log');
like($line // '', qr/ 200 "GET \/w\d+ /,
	'first contact: correlation_id is the request\'s $request_id');
is(join(' ', sort split /\n/, redis_cli($t, 'SMEMBERS', 'bottle:contacts:alice')),
	'127.0.0.1 127.0.0.3',
	'the contacts set');

# a refusal's correlation id is its request's

get($FA, $BOB, 'corr.invalid', 80, '/');
$e = wait_events(sub { grep { ($_->{host} // '') eq 'corr.invalid' } @_ });
my ($cr) = grep { ($_->{host} // '') eq 'corr.invalid' } @$e;
($line) = grep { /"GET http:\/\/corr\.invalid:80\// } split /\n/, $t->read_file('a.log');
is($line && (split ' ', $line)[0], $cr && $cr->{correlation_id},
	'refusal: correlation_id is the request\'s $request_id');

# the second gateway: still one first contact

like(get($FB, $ALICE, '127.0.0.1', $P1, '/b'), qr/ 200 /, 'gateway b: served');
sleep 0.5;
is(scalar contacts(events(), 'alice', '127.0.0.1'), 1,
	'one first contact across two gateways');

# passthrough: the CONNECT is the contact

like(connect_to($FA, $ALICE, "127.0.0.4:$P4"), qr/^HTTP\/1\.1 200 /,
	'passthrough: established');
$e = wait_events(sub { contacts(\@_, 'alice', '127.0.0.4') });
@c = contacts($e, 'alice', '127.0.0.4');
is_deeply(@c && [ map { $c[0]{$_} } qw/port method scheme/ ],
	[ $P4, 'CONNECT', 'tls' ], 'passthrough: first contact');

# audit.delivery: required

like(get($FB, $CAROL, '127.0.0.1', $P1, '/req'), qr/ 200 /,
	'required: served once recorded');
is(scalar contacts(events(), 'carol', '127.0.0.1'), 1,
	'required: recorded before the answer');

redis_stop($t);
sleep 0.3;

like(get($FB, $CAROL, '127.0.0.1', $P1, '/again'), qr/ 200 /,
	'required: a known host does not wait');
my $r = get($FB, $CAROL, '127.0.0.2', $P2, '/new');
like($r, qr/^HTTP\/1\.1 503 .*X-Bottle-Rule: audit.*could not record the first contact/s,
	'required, journal lost: 503, rule audit, the reason');
is(scalar @{upstream_requests($t, 'two')}, 0, 'required: nothing reached upstream');
like(connect_to($FB, $CAROL, "127.0.0.4:$P4"),
	qr/^HTTP\/1\.1 503 .*X-Bottle-Rule: audit/s,
	'required passthrough, journal lost: 503 at the front');

redis_start($t);

like(wait_for(sub { get($FB, $CAROL, '127.0.0.2', $P2, '/back') }, qr/ 200 /, 10),
	qr/ 200 /, 'required, journal back: served');

# truncation: a queue of 4, ten refusals while Redis is away

wait_events(sub { grep { ($_->{rule} // '') eq 'audit' } @_ }, 2);
sleep 0.5;
my $mark = last_id();

redis_stop($t);
sleep 0.3;
get($FB, $BOB, "h$_.invalid", 80, '/') for 1 .. 10;
redis_start($t);

$e = wait_events(sub { ((grep { ($_->{host} // '') eq 'h10.invalid' } @_)
	&& (grep { $_->{type} eq 'audit.truncation_detected' } @_)) ? 1 : () },
	1, 10, $mark);
my @tr = grep { $_->{type} eq 'audit.truncation_detected' } @$e;
is(scalar @tr, 1, 'truncation: one event');
is($tr[0] && $tr[0]{dropped}, 6, 'truncation: 6 dropped');
like($tr[0] && $tr[0]{first_dropped}, qr/^\d{4}-.*Z$/, 'truncation: times');
is(join(' ', map { $_->{host} =~ /^h(\d+)/ }
	grep { ($_->{host} // '') =~ /^h\d+\.invalid$/ } @$e), '7 8 9 10',
	'truncation: the last 4 kept');

# never a secret, a token or the canary

my $all = join("\n", map { $_->{raw} } @{events()});
unlike($all, qr/\Q$ALICE\E|\Q$BOB\E|\Q$CAROL\E|\Q$CANARY\E|\Q$GHP\E|\Q$SECRET\E/,
	'no secret, token or canary in the journal');

# bottlectl audit tail

my $tail = Test::Bottle::bottlectl($t, $t->{_bottle_redis}, 'audit', 'tail', '--bottle',
	'carol', '-n', '100');
like($tail, qr/"type":"egress\.first_contact","gateway":"[^"]+","bottle":"carol","host":"127\.0\.0\.2"/,
	'bottlectl audit tail --bottle: the real events');

# the journal off: a store's bottle requiring delivery is refused at load,
# a file's at nginx -t

like(wait_for(sub { get($FC, $ALICE, '127.0.0.1', $P1, '/c') }, qr/ 200 /),
	qr/ 200 /, 'journal off: another bottle served');
like(get($FC, $CAROL, '127.0.0.1', $P1, '/c'), qr/ 407 /,
	'journal off: a bottle requiring delivery is not served');
like($t3->read_file('error.log'), qr/bottle_policy: bottle:policy:carol: bottle "carol": audit\.delivery: "required" needs the audit journal, which is off on this gateway \(bottle_audit\)/,
	'journal off: logged with key, bottle and field');

write_policy($t3, 'file.json', { bottles => [ { id => 'dave',
	token => 'dave-token-0123456789', audit => { delivery => 'required' },
	routes => [] } ] });
my $conf = $t3->read_file('nginx.conf');
$conf =~ s!bottle_policy redis://\S+;!bottle_policy ${\$t3->testdir()}/file.json;!;
$conf =~ s!\berror\.log\b!check-error.log!g;
$conf =~ s!\bnginx\.pid\b!check.pid!g;
$t3->write_file('check.conf', $conf);
my ($rc, $out) = $t3->nginx_t('check.conf');
isnt($rc, 0, 'file, journal off: nginx -t fails');
like($out, qr/\[emerg\] bottle_policy: \S*file\.json: bottle "dave": audit\.delivery: "required" needs the audit journal, which is off on this gateway \(bottle_audit\)/,
	'file, journal off: the message names file, bottle and field');

$t3->stop();
$t2->stop();

###############################################################################

sub get {
	my ($front, $token, $host, $port, $path) = @_;
	return proxy_request($front, "GET http://$host:$port$path HTTP/1.1\r\n"
		. "Host: $host:$port\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

sub connect_to {
	my ($front, $token, $target) = @_;
	my $s = proxy_session($front) or return '';
	$s->send("CONNECT $target HTTP/1.1\r\nHost: $target\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n\r\n");
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

# every event in the stream, oldest first, each with its raw JSON

sub events {
	my ($since) = @_;
	my $out = redis_cli($t, 'XRANGE', 'bottle:audit',
		defined $since ? "($since" : '-', '+');
	my @e;
	for my $l (split /\n/, $out) {
		next unless $l =~ /^\{/;
		my $ev = eval { decode_json($l) } or next;
		$ev->{raw} = $l;
		push @e, $ev;
	}
	return \@e;
}

sub wait_events {
	my ($cond, $n, $max, $since) = @_;
	my $deadline = time() + ($max // 5);
	my $e;
	while (time() < $deadline) {
		$e = events($since);
		last if scalar(() = $cond->(@$e)) >= ($n // 1);
		sleep 0.1;
	}
	return $e;
}

sub last_id {
	my ($id) = redis_cli($t, 'XREVRANGE', 'bottle:audit', '+', '-', 'COUNT', 1)
		=~ /^(\d+-\d+)$/m;
	return $id;
}


sub contacts {
	my ($e, $bottle, $host) = @_;
	return grep { $_->{type} eq 'egress.first_contact'
		&& $_->{bottle} eq $bottle && $_->{host} eq $host } @$e;
}

sub sink {
	my ($port) = @_;
	my $server = IO::Socket::INET->new(LocalAddr => "127.0.0.4:$port",
		Listen => 16, Reuse => 1) or die "sink: $!\n";
	while (my $c = $server->accept()) {
		close $c;
	}
}

###############################################################################
