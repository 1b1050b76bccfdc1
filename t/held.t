#!/usr/bin/perl

# Tests for held requests (docs/dlp.md, "Held requests"): a DLP finding on
# a route with on_match: supervise holds the request in the gateway, queues
# an egress-token-allow proposal (never the value) and waits for the
# operator.  Approved: the value is safelisted for that (bottle, host) and
# the request reaches the upstream unchanged; denied or timed out: 403,
# rule dlp, with the reason.  A per-bottle bound refuses at once past it,
# a client that goes away releases its place (plain HTTP, and HTTP/1.1 and
# HTTP/2 in an intercepted TLS tunnel), a reload keeps what the old worker
# holds, and with no operator channel (bottle_supervise off, the store
# down, the journal refusing a bottle that requires it) it is refused at
# once.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle qw//;

use Digest::SHA qw/ sha256_hex /;
use JSON::PP;
use IO::Socket::INET;
use POSIX qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/)
	->has_daemon('redis-server')->has_daemon('redis-cli');

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';
my $CAROL = 'carol-token-0123456789ab';
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 11) % 62] }
	1 .. 36);
my $DIGEST = sha256_hex($GHP);

my $RP = port(8090);
my $P1 = port(8081);
my $P2 = port(8082);
my $HELD = 2;

sub conf {
	my ($front, $extra, $name, $tls) = @_;
	$tls = !$tls ? '' : <<"EOF";
    resolver 127.0.0.1:%%PORT_8053_UDP%%;

    server {
        listen unix:%%TESTDIR%%/$name-tls.sock ssl http2 proxy_protocol;
        bottle on;
        bottle_ca %%TESTDIR%%/gwca.crt %%TESTDIR%%/gwca.key;

        location / {
            proxy_pass https://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
            proxy_ssl_server_name on;
            proxy_ssl_name \$bottle_host;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate %%TESTDIR%%/upca.crt;
        }
    }

    server {
        listen 127.0.0.1:%%PORT_8091%%;

        location = /metrics {
            bottle_metrics;
        }
    }
EOF
	my $tls_pass = $tls
		? "bottle_tls_pass unix:%%TESTDIR%%/$name-tls.sock;" : '';
	return <<"EOF";

%%TEST_GLOBALS%%

daemon off;
worker_processes 2;

bottle_policy redis://127.0.0.1:$RP/2;
bottle_store_stale_max 60s;
$extra

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:$front;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/$name.sock;
        $tls_pass
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen unix:%%TESTDIR%%/$name.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
        }
    }
$tls
}

EOF
}

my $FA = port(8080);
my $FB = port(8180);
my $FC = port(8280);

my $SUP = "bottle_supervise redis://127.0.0.1:$RP/2;";

$t->write_file_expand('nginx.conf', conf($FA,
	"$SUP\nbottle_supervise_held $HELD;", 'a', 1));

# a second gateway whose operator answers within 2 s, a third with none

my $t2 = Test::Nginx->new()->has(qw/http proxy stream bottle/);
$t2->write_file_expand('nginx.conf', conf($FB,
	"$SUP\nbottle_supervise_timeout 2s;\nbottle_supervise_held_body 1k;", 'b'));

my $t3 = Test::Nginx->new()->has(qw/http proxy stream bottle/);
$t3->write_file_expand('nginx.conf', conf($FC, 'bottle_supervise off;',
	'c'));

fake_upstream($t, port => $P1, name => 'one');
fake_upstream($t, port => $P2, name => 'two', addr => '127.0.0.2');

# in an intercepted tunnel: TLS, HTTP/1.1 and HTTP/2

my $P3 = port(8443);
my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'sup.allowed.test');
fake_upstream($t, port => $P3, name => 'three', tls => 1,
	cert => $up->{cert}, key => $up->{key});
dns_start($t, port => port(8053),
	hosts => { 'sup.allowed.test' => '127.0.0.1' });

my $redis = redis_start($t, port => $RP, db => 2);
$ENV{BOTTLE_OPERATOR} = 'op-held';

my $SV = { on_match => 'supervise' };
my $M = [ 'GET', 'POST' ];

store_put($t,
	{ id => 'alice', token => $ALICE, routes => [
		{ host => '127.0.0.1', port => $P1, dlp => $SV, methods => $M },
		{ host => '127.0.0.2', port => $P2, dlp => $SV, methods => $M },
		{ host => 'sup.allowed.test', port => $P3, dlp => $SV,
			methods => $M, internal => JSON::PP::true },
	] },
	{ id => 'bob', token => $BOB, routes => [
		{ host => '127.0.0.2', port => $P2, dlp => $SV, methods => $M },
	] },
	{ id => 'carol', token => $CAROL, audit => { delivery => 'required' },
		routes => [
		{ host => '127.0.0.2', port => $P2, dlp => $SV, methods => $M },
	] });

$t->run();
$t2->run();
$t3->run();

$t->plan(70);

###############################################################################

my $BODY = "{\"note\": \"deploy with $GHP please\"}";

# held: no answer while the operator has not decided

wait_ready($FA);

my $s1 = post($FA, $ALICE, '127.0.0.1', $P1, '/one');
my ($id1) = wait_pending('alice', 1);
ok($id1, 'held: a proposal is pending');
is($s1->read_raw(0.5), '', 'held: no answer yet');

my $list = ctl('proposals');
like($list, qr/^\Q$id1\E +alice +egress-token-allow\b/m,
	'bottlectl proposals lists an egress-token-allow');

my $p = decode_json(redis_cli($t, 'HGET', "bottle:proposal:$id1", 'json'));
is_deeply([ map { $p->{args}{$_} } qw/host detector location digest/ ],
	[ '127.0.0.1', 'token_patterns', 'body', "sha256:$DIGEST" ],
	'proposal: host, detector, location, digest');
is($p->{producer}, 'egress', 'proposal: producer egress');
like($p->{justification},
	qr/^DLP found token_patterns in the body of a request to 127\.0\.0\.1$/,
	'proposal: the justification');

my $ev = wait_event(sub { $_[0]{type} eq 'decision.proposed'
	&& ($_[0]{correlation_id} // '') eq $id1 });
ok($ev && $ev->{bottle} eq 'alice' && $ev->{producer} eq 'egress',
	'decision.proposed journalled, correlation id the proposal id');

unlike(redis_dump(), qr/\Q$GHP\E/, 'the token value is nowhere in Redis');

like($t->read_file('error.log'),
	qr/bottle supervise: bottle="alice" host="127.0.0.1" detector=token_patterns location="body" value=sha256:${\substr($DIGEST, 0, 16)} proposal=\Q$id1\E held for the operator/,
	'log: held, with the proposal id');

# approved: the upstream gets the request as it was sent

ctl('approve', $id1);
my $r = $s1->read_response(timeout => 5) // '';
like($r, qr/^HTTP\/1\.1 200 .*upstream one ok/s, 'approve: the upstream answers');
is(upstream_requests($t, 'one')->[-1]{body}, $BODY,
	'approve: the upstream got the body unchanged');
like($t->read_file('error.log'),
	qr/proposal=\Q$id1\E released: approved/, 'log: released, approved');

my $n1 = @{upstream_requests($t, 'one')};
like(request($FA, $ALICE, '127.0.0.1', $P1, '/again', 2),
	qr/^HTTP\/1\.1 200 /, 'the same value to the same host passes at once');
is(scalar @{upstream_requests($t, 'one')}, $n1 + 1, 'and reaches the upstream');

# the same value to another supervise host is held again; denied

my $s2 = post($FA, $ALICE, '127.0.0.2', $P2, '/two');
my ($id2) = wait_pending('alice', 1);
ok($id2 && $id2 ne $id1, 'another host: held again, a new proposal');
is($s2->read_raw(0.3), '', 'another host: no answer yet');

ctl('deny', $id2, '--note', 'not for that host');
$r = $s2->read_response(timeout => 5) // '';
like($r, qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: dlp/s, 'deny: 403, rule dlp');
like($r, qr/the operator op-held denied it: not for that host/,
	'deny: the reason names the denial and its note');
is(scalar @{upstream_requests($t, 'two')}, 0, 'deny: nothing reached the upstream');
like($t->read_file('error.log'),
	qr/bottle refused: bottle="alice" host="127.0.0.2" rule="dlp" status=403 reason="[^"]*proposal \Q$id2\E\): the operator op-held denied it/,
	'deny: one refusal line');

# the bound: $HELD held of one bottle, the next refused at once; another
# bottle can still be held

# one after another: $ids[$i] is the proposal of $held[$i] (two at once
# may be proposed in either order, by either worker)
my (@held, @ids);
for my $i (1 .. $HELD) {
	my %was = map { $_ => 1 } @ids;
	push @held, post($FA, $ALICE, '127.0.0.2', $P2, "/b$i");
	push @ids, grep { !$was{$_} } wait_pending('alice', $i);
}
is(scalar @ids, $HELD, "bound: $HELD held");

my $t0 = time();
$r = request($FA, $ALICE, '127.0.0.2', $P2, '/over', 5);
like($r, qr/^HTTP\/1\.1 403 .*too many requests held for the operator/s,
	'bound: the next is refused');
cmp_ok(time() - $t0, '<', 1.5, 'bound: at once');
like(metrics(), qr/^bottle_held_full_total 1$/m,
	'bound: counted in bottle_held_full_total');

my $sb = post($FA, $BOB, '127.0.0.2', $P2, '/bob');
my ($idb) = wait_pending('bob', 1);
ok($idb, 'bound: another bottle is still held');

# the client goes away while held: its place is released, nothing goes on

my $gone = $ids[0];
$held[0]->socket()->close();
my $log = wait_log(qr/proposal=\Q$gone\E released: the client went away/);
like($log, qr/proposal=\Q$gone\E released: the client went away/,
	'client gone: released');

# its proposal expires: nobody waits for it any more

is(wait_state($gone, 'expired'), 'expired', 'client gone: proposal expired');
my $ex = wait_event(sub { $_[0]{type} eq 'decision.resolved'
	&& $_[0]{correlation_id} eq $gone });
is(join(' ', map { $ex->{$_} // '-' } qw/operator operator_action/),
	'egress expired', 'client gone: decision.resolved, expired');
like($ex->{reason} // '', qr/client went away/,
	'client gone: decision.resolved says why');
unlike(ctl('proposals', '--bottle', 'alice'), qr/^\Q$gone\E /m,
	'client gone: no longer pending');
like(ctl('proposals', '--all', '--bottle', 'alice'),
	qr/^\Q$gone\E +alice +egress-token-allow +expired /m,
	'client gone: bottlectl proposals --all shows it expired');

my $s3 = post($FA, $ALICE, '127.0.0.2', $P2, '/b3');
my %was = map { $_ => 1 } @ids;
my @ids3 = wait_pending('alice', $HELD);
ok((grep { !$was{$_} } @ids3) == 1, 'client gone: another request can be held');
is($s3->read_raw(0.3), '', 'client gone: it is held, not refused');

my $n2 = @{upstream_requests($t, 'two')};
my $res = ctl_rc('approve', $gone);
is($res->{rc}, 4, 'client gone: a later approval exits 4 (409)');
like($res->{out}, qr/answered already: expired by egress .*\(409\)/,
	'client gone: the approval says it expired');
is(state_of($gone), 'expired', 'client gone: the approval changed nothing');
sleep 0.5;
is(scalar @{upstream_requests($t, 'two')}, $n2,
	'client gone: an approval later sends nothing upstream');

for my $id (grep { $_ ne $gone } @ids3, $idb) {
	ctl('deny', $id);
}
$_->read_response(timeout => 5) for $held[1], $s3, $sb;

# two values: approved one by one, each held in turn, then it goes on

my $AKIA = 'AKIA' . 'QYLPMN5HHHFPZAM2';
my $two = "{\"a\": \"$GHP\", \"b\": \"$AKIA\"}";
my $s4 = proxy_session($FA, timeout => 10);
$s4->send(head('POST', $BOB, '127.0.0.2', $P2, '/pair', length $two) . $two);
my ($id4) = wait_pending('bob', 1);
my $first = decode_json(redis_cli($t, 'HGET', "bottle:proposal:$id4", 'json'));
ctl('approve', $id4);
my ($id5) = grep { $_ ne $id4 } wait_pending('bob', 1);
my $second = $id5 && decode_json(redis_cli($t, 'HGET',
	"bottle:proposal:$id5", 'json'));
ok($second && $second->{args}{digest} ne $first->{args}{digest},
	'two values: held again for the other value');
is($s4->read_raw(0.3), '', 'two values: no answer after the first approval');
ctl('approve', $id5) if $id5;
like($s4->read_response(timeout => 5) // '', qr/^HTTP\/1\.1 200 /,
	'two values: passes once both are approved');
is(upstream_requests($t, 'two')->[-1]{body}, $two,
	'two values: the body reached the upstream unchanged');

# in a TLS tunnel, HTTP/2 and HTTP/1.1: approved, and a client gone

my %before = map { $_ => 1 } wait_pending('alice', 0);
my $URL = "https://sup.allowed.test:$P3/tls";
my $c1 = curl_start('--http2', '--data-binary', $BODY, $URL);
my ($id7) = grep { !$before{$_} } wait_pending('alice', keys(%before) + 1);
ok($id7, 'tls, h2: held');
ctl('approve', $id7) if $id7;
like(curl_wait($c1), qr/^HTTP\/2 200 .*upstream three ok/ms,
	'tls, h2: approved, the upstream answers');
is(upstream_requests($t, 'three')->[-1]{body}, $BODY,
	'tls, h2: the upstream got the body unchanged');

for my $v ('--http2', '--http1.1') {
	%before = map { $_ => 1 } wait_pending('alice', 0);
	my $c = curl_start($v, '--data-binary', "k=$AKIA", $URL);
	my ($id) = grep { !$before{$_} }
		wait_pending('alice', keys(%before) + 1);
	$id //= '-';
	kill 'TERM', $c->{pid};
	waitpid($c->{pid}, 0);
	my $re = qr/proposal=\Q$id\E released: the client went away/;
	like(wait_log($re), $re, "tls, $v: a client gone is released");
}

# timeout: the second gateway's operator has 2 s

wait_ready($FB);
$t0 = time();
$r = request($FB, $ALICE, '127.0.0.2', $P2, '/late', 10);
like($r, qr/^HTTP\/1\.1 403 .*no answer from the operator within 2 s/s,
	'timeout: 403 with the reason');
cmp_ok(time() - $t0, '>=', 1.8, 'timeout: after the timer');
like($t2->read_file('error.log'), qr/released: timeout/,
	'timeout: released in the log');
my ($late) = $r =~ /held for the operator \(proposal (\d+-[0-9a-f]{8})\)/;
$late //= '-';
is(wait_state($late, 'expired'), 'expired', 'timeout: proposal expired');
$ex = wait_event(sub { $_[0]{type} eq 'decision.resolved'
	&& $_[0]{correlation_id} eq $late });
is($ex && $ex->{operator_action}, 'expired',
	'timeout: decision.resolved, expired');
$res = ctl_rc('approve', $late);
is($res->{rc}, 4, 'timeout: a later approval exits 4 (409)');
is(state_of($late), 'expired', 'timeout: the approval changed nothing');

# the bound on bytes: a body past it is refused at once

my $big = "{\"pad\": \"" . ('x' x 2000) . "\", \"t\": \"$GHP\"}";
$t0 = time();
$r = proxy_request($FB, head('POST', $ALICE, '127.0.0.2', $P2, '/big',
	length $big) . $big, timeout => 5) // '';
like($r, qr/^HTTP\/1\.1 403 .*too many request bytes held for the operator \(1024 for this bottle\)/s,
	'bytes bound: refused');
cmp_ok(time() - $t0, '<', 1.5, 'bytes bound: at once');

# bottle_supervise off: refused at once, as a bottle with no operator

wait_ready($FC);
$t0 = time();
$r = request($FC, $ALICE, '127.0.0.2', $P2, '/off', 5);
like($r, qr/^HTTP\/1\.1 403 .*held for the operator, who is not reachable for this bottle/s,
	'supervise off: refused');
cmp_ok(time() - $t0, '<', 1.5, 'supervise off: at once');

# a worker that dies holding requests gives their places back: alice at
# her bound, every worker killed, and the next request is held again

%before = map { $_ => 1 } wait_pending('alice', 0);
my @crash = map { post($FA, $ALICE, '127.0.0.2', $P2, "/crash$_") } 1 .. $HELD;
my @cids = grep { !$before{$_} } wait_pending('alice', keys(%before) + $HELD);
is(scalar @cids, $HELD, "crash: $HELD held");
like(request($FA, $ALICE, '127.0.0.2', $P2, '/crash-over', 5),
	qr/^HTTP\/1\.1 403 .*too many requests held for the operator/s,
	'crash: at the bound');

my $master = $t->read_file('nginx.pid') =~ /(\d+)/ ? $1 : die "no pid\n";
my @workers = grep { $_ } split /\s+/, `pgrep -P $master`;
kill 'KILL', @workers;
$t->allow_alerts(qr/worker process \d+ exited on signal 9/);
$_->read_raw(2) for @crash;
for (1 .. 50) {
	my %now = map { $_ => 1 } grep { $_ } split /\s+/, `pgrep -P $master`;
	last if keys %now >= 2 && !grep { $now{$_} } @workers;
	sleep 0.1;
}
wait_ready($FA);

%before = map { $_ => 1 } wait_pending('alice', 0);
my $sc = post($FA, $ALICE, '127.0.0.2', $P2, '/after-crash');
my ($idc) = grep { !$before{$_} } wait_pending('alice', keys(%before) + 1);
ok($idc, 'crash: the next request is held again');
# each dead worker's own, by the worker started in its place, or by the
# hold above when it came first (at the bound, it gives back what dead
# workers held): the held requests may have been in either, and the
# other worker's line may come later
my $back = 0;
my $deadline = time() + 15;
while (time() < $deadline) {
	$back = 0;
	$back += $1 for $t->read_file('error.log')
		=~ /bottle: (\d+) held requests? of a worker that died given back/g;
	last if $back >= $HELD;
	sleep 0.1;
}
is($back, $HELD, 'crash: the places given back, in the log');
ctl('deny', $_) for grep { $_ } @cids, $idc;
like($sc->read_response(timeout => 5) // '', qr/^HTTP\/1\.1 403 /,
	'crash: the request held after it is answered');

# a reload: the old worker keeps what it holds until it is answered

%before = map { $_ => 1 } wait_pending('alice', 0);
my $s6 = post($FA, $ALICE, '127.0.0.2', $P2, '/reload');
my ($id6) = grep { !$before{$_} } wait_pending('alice', keys(%before) + 1);
ok($t->reload(), 'reload while held');
ctl('approve', $id6) if $id6;
like($s6->read_response(timeout => 5) // '', qr/^HTTP\/1\.1 200 /,
	'reload: the held request is approved by the old worker');
wait_ready($FA);

# a bottle requiring the journal, which refuses: refused at once

redis_cli($t, 'RENAME', 'bottle:audit', 'bottle:audit:kept');
redis_cli($t, 'SET', 'bottle:audit', 'x');
$t0 = time();
$r = request($FA, $CAROL, '127.0.0.2', $P2, '/journal', 5);
like($r, qr/^HTTP\/1\.1 403 .*not held for the operator: the proposal could not be journalled, and the bottle requires it/s,
	'journal refused, delivery required: refused');
cmp_ok(time() - $t0, '<', 1.5, 'journal refused, delivery required: at once');
is(scalar(() = wait_pending('carol', 0)), 0,
	'journal refused, delivery required: nothing queued');
redis_cli($t, 'DEL', 'bottle:audit');
redis_cli($t, 'RENAME', 'bottle:audit:kept', 'bottle:audit');

# the store down: refused at once

redis_stop($t);
sleep 0.5;
$t0 = time();
$r = request($FA, $CAROL, '127.0.0.2', $P2, '/down', 5);
like($r, qr/^HTTP\/1\.1 403 .*not held for the operator: the operator is not reachable: the control plane \S+ is unreachable/s,
	'store down: refused');
cmp_ok(time() - $t0, '<', 1.5, 'store down: at once');

$t3->stop();
$t2->stop();
$t->stop();

unlike(join('', grep { !/worker process \d+ exited on signal 9/ }
	split /^/, $t->read_file('error.log') . $t2->read_file('error.log')),
	qr/\[alert\]|\[crit\]|\[emerg\]/, 'no other alert in the error logs');

###############################################################################

sub head {
	my ($method, $token, $host, $port, $path, $len) = @_;
	return "$method http://$host:$port$path HTTP/1.1\r\n"
		. "Host: $host:$port\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Content-Type: application/json\r\n"
		. "Content-Length: $len\r\n"
		. "Connection: close\r\n\r\n";
}

# a request carrying the token, left open

sub post {
	my ($front, $token, $host, $port, $path) = @_;
	my $s = proxy_session($front, timeout => 10) or die "no session\n";
	$s->send(head('POST', $token, $host, $port, $path, length $BODY)
		. $BODY);
	return $s;
}

sub request {
	my ($front, $token, $host, $port, $path, $timeout) = @_;
	return proxy_request($front, head('POST', $token, $host, $port, $path,
		length $BODY) . $BODY, timeout => $timeout) // '';
}

# the gateway has read its bottles: a request without a token passes

sub wait_ready {
	my ($front) = @_;
	my $deadline = time() + 10;
	while (time() < $deadline) {
		my $r = proxy_request($front, "GET http://127.0.0.1:$P1/ready HTTP/1.1\r\n"
			. "Host: 127.0.0.1:$P1\r\n"
			. 'Proxy-Authorization: ' . basic('agent', $ALICE) . "\r\n"
			. "Connection: close\r\n\r\n", timeout => 2) // '';
		return 1 if $r =~ /^HTTP\/1\.1 200 /;
		sleep 0.1;
	}
	return 0;
}

# curl through the gateway, in the background: { pid, out }

my $nc = 0;

sub curl_start {
	my (@args) = @_;
	my $name = 'curl' . ++$nc . '.out';
	my $out = $t->testdir() . "/$name";
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		open STDOUT, '>', $out or die;
		open STDERR, '>', "$out.err" or die;
		exec('curl', '-s', '-S', '-i', '--max-time', '20', '--proxy',
			"http://agent:$ALICE\@127.0.0.1:$FA", '--cacert',
			$gwca->{cert}, @args) or POSIX::_exit(127);
	}
	return { pid => $pid, name => $name };
}

sub curl_wait {
	my ($c) = @_;
	waitpid($c->{pid}, 0);
	return $t->read_file($c->{name});
}

sub ctl {
	return Test::Bottle::bottlectl($t, $redis, @_);
}

# bottlectl that may fail: { rc, out } (out with stderr)

sub ctl_rc {
	my $url = $redis->{url} . (defined $redis->{db} ? "/$redis->{db}" : '');
	my $bin = $Test::Bottle::BOTTLECTL;
	my $out = $t->testdir() . '/ctl_rc.out';
	system("$bin --store '$url' " . join(' ', map { "'$_'" } @_)
		. " >$out 2>&1");
	return { rc => $? >> 8, out => $t->read_file('ctl_rc.out') };
}

sub state_of {
	my $s = redis_cli($t, 'HGET', "bottle:proposal:$_[0]", 'state');
	chomp $s;
	return $s;
}

sub wait_state {
	my ($id, $want) = @_;
	my $deadline = time() + 15;
	my $s;
	while (time() < $deadline) {
		$s = state_of($id);
		last if $s eq $want;
		sleep 0.1;
	}
	return $s;
}

# the bottle's pending proposals, oldest first, once there are $n

sub wait_pending {
	my ($bottle, $n) = @_;
	my $deadline = time() + 10;
	my @ids;
	while (time() < $deadline) {
		@ids = ctl('proposals', '--bottle', $bottle)
			=~ /^(\d+-[0-9a-f]{8}) /mg;
		last if @ids >= $n;
		sleep 0.1;
	}
	return @ids;
}

sub wait_event {
	my ($cond) = @_;
	my $deadline = time() + 5;
	while (time() < $deadline) {
		for my $l (split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit',
			'-', '+'))
		{
			next unless $l =~ /^\{/;
			my $e = eval { decode_json($l) } or next;
			return $e if $cond->($e);
		}
		sleep 0.1;
	}
	return undef;
}

sub wait_log {
	my ($re) = @_;
	my $deadline = time() + 15;
	my $log;
	while (time() < $deadline) {
		$log = $t->read_file('error.log');
		last if $log =~ $re;
		sleep 0.1;
	}
	return $log;
}

# every key's contents, and the journal's

sub redis_dump {
	my $out = '';
	for my $k (split /\n/, redis_cli($t, '--scan')) {
		my $type = redis_cli($t, 'TYPE', $k);
		chomp $type;
		$out .= "$k\n" . ($type eq 'string' ? redis_cli($t, 'GET', $k)
			: $type eq 'hash' ? redis_cli($t, 'HGETALL', $k)
			: $type eq 'set' ? redis_cli($t, 'SMEMBERS', $k)
			: $type eq 'zset' ? redis_cli($t, 'ZRANGE', $k, 0, -1)
			: $type eq 'list' ? redis_cli($t, 'LRANGE', $k, 0, -1)
			: $type eq 'stream' ? redis_cli($t, 'XRANGE', $k, '-', '+')
			: "?$type\n");
	}
	return $out;
}

###############################################################################

# gateway a's metrics, over loopback

sub metrics {
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . port(8091))
		or return '';
	$s->print("GET /metrics HTTP/1.0\r\nHost: local\r\n\r\n");
	local $/;
	return <$s> // '';
}

###############################################################################
