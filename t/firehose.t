#!/usr/bin/perl

# The request firehose (docs/firehose.md): with no consumer nothing is
# snapshotted; once bottlectl firehose subscribes, one OCSF HTTP Activity
# record per request of a bottle with audit.firehose, valid against the
# documented field table; Authorization, Proxy-Authorization and Cookie
# dropped, registered secrets masked (and their base64 and percent
# forms), the body cut at
# bottle_firehose_max_body with the SHA-256 of the whole; "metadata" sends
# only destination, decision, status, sizes and timing; "off" nothing;
# --bottle filters; a consumer that never reads does not slow requests;
# when the last consumer leaves, snapshots stop; while Redis does not
# answer, records gather in one batch (one message, one record a line) and
# those past the queue are dropped.

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
use MIME::Base64 qw/ encode_base64 /;
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $RP = port(8090);
my $P = port(8081);
my $MP = port(8091);

$t->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;
worker_processes 1;

bottle_policy redis://127.0.0.1:$RP/2;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    bottle_firehose_max_body 1k;
    bottle_firehose_queue 64;

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
        }
    }

    server {
        listen 127.0.0.1:$MP;

        location = /metrics {
            bottle_metrics;
        }
    }
}

EOF

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';
my $CAROL = 'carol-token-0123456789ab';
my $API = 'secret-api-value-1';
my $CANARY = 'CANARY-a1b2c3d4e5';
my $T = JSON::PP::true;

my $redis = redis_start($t, port => $RP, db => 2);

my @route = ({ host => '127.0.0.1', port => $P, methods => [ '*' ],
	dlp => JSON::PP::false });

store_put($t,
	{ id => 'alice', token => $ALICE, canary => $CANARY,
		egress_tokens => { API => $API }, audit => { firehose => 'full' },
		routes => [ @route ] },
	{ id => 'bob', token => $BOB, audit => { firehose => 'metadata' },
		routes => [ @route ] },
	{ id => 'carol', token => $CAROL, routes => [ @route ] });

fake_upstream($t, port => $P, name => 'one');

$t->run()->plan(50);

###############################################################################

sub req {
	my ($token, $method, $url, %o) = @_;
	my ($hostport) = $url =~ m!^\w+://([^/?]+)!;
	my $r = "$method $url HTTP/1.1\r\nHost: $hostport\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n";
	$r .= join '', map { "$_\r\n" } @{$o{headers} || []};
	if (defined $o{body}) {
		$r .= "Content-Length: " . length($o{body}) . "\r\n\r\n$o{body}";
	} else {
		$r .= "\r\n";
	}
	return proxy_request(8080, $r);
}

sub status {
	my ($r) = @_;
	return ($r // '') =~ m!^HTTP/1\.1 (\d+)! ? $1 : 0;
}

sub metric {
	my ($name) = @_;
	my $r = http_get('/metrics', socket => IO::Socket::INET->new(
		PeerAddr => "127.0.0.1:$MP")) // '';
	return $r =~ /^\Q$name\E (\d+)$/m ? $1 : undef;
}

sub wait_for {
	my ($cond, $secs) = @_;
	my $end = time() + ($secs // 10);
	while (time() < $end) {
		my $v = $cond->();
		return $v if $v;
		sleep 0.1;
	}
	return $cond->();
}

# a consumer: bottlectl firehose, its output in a file

my %consumers;

sub consumer {
	my ($file, @args) = @_;
	my $url = $redis->{url} . '/2';
	my $out = $t->testdir() . "/$file";
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		open STDOUT, '>', $out or die "$out: $!\n";
		open STDERR, '>', "$out.err" or die "$out.err: $!\n";
		{ exec($Test::Bottle::BOTTLECTL, '--store', $url, 'firehose', @args); }
		POSIX::_exit(127);
	}
	$consumers{$pid} = 1;
	return $pid;
}

sub detach {
	my ($pid) = @_;
	kill 'TERM', $pid;
	waitpid($pid, 0);
	delete $consumers{$pid};
}

END { kill 'TERM', keys %consumers if %consumers; }

sub records {
	my ($file) = @_;
	return read_jsonl($t, $file);
}

# the documented fields: | `path` | type | full | metadata | ...

my %doc;
{
	open my $fh, '<', "$FindBin::Bin/../docs/firehose.md"
		or die "docs/firehose.md: $!\n";
	while (<$fh>) {
		next unless /^\| `([\w.]+)` \| (\w+) \| ([^|]+?) \| ([^|]+?) \|/;
		$doc{$1} = { type => $2, full => $3, metadata => $4 };
	}
}

sub flatten {
	my ($v, $prefix, $out) = @_;
	if (ref $v eq 'HASH') {
		flatten($v->{$_}, $prefix eq '' ? $_ : "$prefix.$_", $out)
			for keys %$v;
	} else {
		$out->{$prefix} = $v;
	}
	return $out;
}

sub type_ok {
	my ($type, $v) = @_;
	return JSON::PP::is_bool($v) if $type eq 'boolean';
	return ref $v eq 'ARRAY' if $type eq 'array';
	return defined $v && !ref $v && $v =~ /^-?\d+\z/ if $type eq 'integer';
	return defined $v && !ref $v if $type eq 'string';
	return 0;
}

# '' if the record is as documented, else what is wrong

sub invalid {
	my ($rec) = @_;
	my $level = $rec->{unmapped}{firehose} // '';
	return "no level" unless $level eq 'full' || $level eq 'metadata';
	my $f = flatten($rec, '', {});
	my @bad;
	for my $k (sort keys %$f) {
		my $d = $doc{$k};
		if (!$d || $d->{$level} eq '—') {
			push @bad, "$k: not documented at $level";
		} elsif (!type_ok($d->{type}, $f->{$k})
			&& !($k eq 'unmapped.body_sha256' && !defined $f->{$k}))
		{
			push @bad, "$k: not a $d->{type}";
		}
	}
	for my $k (sort grep { $doc{$_}{$level} eq 'always' } keys %doc) {
		push @bad, "$k: missing" unless exists $f->{$k};
	}
	return join '; ', @bad;
}

###############################################################################

ok(scalar(keys %doc) > 30, 'the documented field table is read');

# the store's bottles are served

ok(wait_for(sub { status(req($CAROL, 'GET', "http://127.0.0.1:$P/w")) == 200 }),
	'served');

# no consumer: nothing snapshotted at all

is(status(req($ALICE, 'POST', "http://127.0.0.1:$P/n", body => 'x' x 100)),
	200, 'no consumer: served');
req($BOB, 'GET', "http://127.0.0.1:$P/n");
sleep 0.5;
is(metric('bottle_firehose_attached'), 0, 'no consumer: not attached');
is(metric('bottle_firehose_snapshots_total'), 0,
	'no consumer: no snapshot taken');

# consumers attach: every record, and bob's alone

my $all = consumer('all.jsonl');
my $bobs = consumer('bob.jsonl', '--bottle', 'bob');

ok(wait_for(sub { metric('bottle_firehose_attached') }),
	'the worker sees the consumers');

my $body = "hello $API " . ('y' x 2000);
my $B64 = encode_base64($API, '');
my $PCT = join '', map { sprintf '%%%02X', ord } split //, $API;
my $r = req($ALICE, 'POST', "http://127.0.0.1:$P/p?access_token=agent&keep=1",
	headers => [ 'Authorization: Bearer agent-own', 'Cookie: s=agent',
		"X-Note: carries $API inside", 'User-Agent: agent/1.0',
		"X-B64: {\"k\":\"$B64\"}", "X-Pct: q=$PCT&r=1" ],
	body => $body);
is(status($r), 200, 'alice: allowed');
is(status(req($ALICE, 'GET', "http://127.0.0.1:$P/x?c=$CANARY")), 403,
	'alice: canary refused');
is(status(req($BOB, 'GET', "http://127.0.0.1:$P/b")), 200, 'bob: allowed');
is(status(req($CAROL, 'GET', "http://127.0.0.1:$P/c")), 200, 'carol: allowed');
is(status(req('wrong-token-0123456789', 'GET', "http://127.0.0.1:$P/i")), 407,
	'an unknown token: refused');

my $recs = wait_for(sub { my $r = records('all.jsonl'); @$r >= 4 ? $r : 0 });
$recs ||= records('all.jsonl');
is(scalar @$recs, 4, 'four records: alice twice, bob, the unknown token');

my @bad = map { invalid($_) } @$recs;
is(join("\n", grep { $_ ne '' } @bad), '',
	'every record is as docs/firehose.md documents');

my ($a1, $a2) = grep { ($_->{unmapped}{bottle} // '') eq 'alice' } @$recs;
my ($b1) = grep { ($_->{unmapped}{bottle} // '') eq 'bob' } @$recs;
my ($i1) = grep { !defined $_->{unmapped}{bottle} } @$recs;

is_deeply($a1 && [ @$a1{qw/class_uid category_uid activity_id type_uid
	severity_id disposition action status/} ],
	[ 4002, 4, 6, 400206, 1, 'Allowed', 'Allowed', 'Success' ],
	'full: class, category, activity, type, severity, disposition');
is_deeply($a1 && [ @{$a1->{http_request}}{qw/http_method user_agent/},
	@{$a1->{http_request}{url}}{qw/hostname port scheme path query_string/} ],
	[ 'POST', 'agent/1.0', '127.0.0.1', $P, 'http', '/p', 'keep=1' ],
	'full: method, user agent, url');
is_deeply($a1 && [ @{$a1->{metadata}}{qw/version/},
	@{$a1->{metadata}{product}}{qw/name vendor_name/} ],
	[ '1.1.0', 'ngx_bottle', 'bot-bottle' ], 'metadata: product, version');
is($a1 && $a1->{http_response}{code}, 200, 'full: the status');
ok($a1 && $a1->{end_time} >= $a1->{start_time}
	&& $a1->{time} == $a1->{start_time}, 'full: timing');
like($a1 && $a1->{unmapped}{request_id}, qr/^[0-9a-f]{32}$/,
	'full: the request id');

my %h = map { (lc $_->{name} => $_->{value}) }
	@{$a1 ? $a1->{http_request}{http_headers} : []};
ok(!exists $h{authorization} && !exists $h{'proxy-authorization'}
	&& !exists $h{cookie}, 'Authorization, Proxy-Authorization, Cookie dropped');
is($h{'x-note'}, 'carries ' . ('*' x length $API) . ' inside',
	'a secret in a header masked');
is_deeply([ $h{'x-b64'}, $h{'x-pct'} ],
	[ '{"k":"' . ('*' x length $B64) . '"}',
		'q=' . ('*' x length $PCT) . '&r=1' ],
	'its base64 and percent-encoded forms masked');

my $masked = $body =~ s/\Q$API\E/'*' x length $API/ger;
is($a1 && $a1->{unmapped}{body}, substr($masked, 0, 1024),
	'the body: its first bottle_firehose_max_body bytes, the secret masked');
is_deeply($a1 && [ @{$a1->{unmapped}}{qw/body_size body_truncated
	body_sha256/} ], [ length $body, $T, sha256_hex($body) ],
	'the body: size and SHA-256 of the whole as sent');

is_deeply($a2 && [ $a2->{disposition}, $a2->{action_id},
	$a2->{http_response}{code}, $a2->{unmapped}{rule},
	$a2->{http_request}{url}{query_string} ],
	[ 'Blocked', 2, 403, 'canary', 'c=' . ('*' x length $CANARY) ],
	'a refusal: blocked, the rule, the canary masked');

my $raw = $t->read_file('all.jsonl');
unlike($raw, qr/\Q$API\E|\Q$CANARY\E|\Q$ALICE\E|agent-own|s=agent|\Q$B64\E/,
	'no secret or credential in any record');

# metadata: destination, decision, status, size, timing

is($b1 && $b1->{unmapped}{firehose}, 'metadata', 'bob: metadata');
ok($b1 && !exists $b1->{http_request}{http_headers}
	&& !exists $b1->{http_request}{url}{path}
	&& !exists $b1->{unmapped}{body} && !exists $b1->{unmapped}{body_sha256}
	&& !exists $b1->{http_request}{http_method},
	'metadata: no headers, path, method or body');
is_deeply($b1 && [ $b1->{dst_endpoint}{hostname}, $b1->{dst_endpoint}{port},
	$b1->{dst_endpoint}{ip}, $b1->{disposition}, $b1->{http_response}{code} ],
	[ '127.0.0.1', $P, '127.0.0.1', 'Allowed', 200 ],
	'metadata: destination, decision, status');

ok(!grep({ ($_->{http_request}{url}{path} // '') eq '/c' } @$recs),
	'carol (firehose off): no record');
is_deeply($i1 && [ $i1->{unmapped}{firehose}, $i1->{unmapped}{rule},
	$i1->{http_response}{code} ], [ 'metadata', 'identity', 407 ],
	'no bottle identified: a metadata record');

my $only = wait_for(sub { my $r = records('bob.jsonl'); @$r ? $r : 0 }) || [];
is_deeply([ map { $_->{unmapped}{bottle} } @$only ], [ 'bob' ],
	'--bottle bob: bob\'s record alone');

is(metric('bottle_firehose_snapshots_total'), 4, 'four snapshots');
ok(wait_for(sub { (metric('bottle_firehose_published_total') // 0) >= 4 }),
	'published to Redis');

detach($all);
detach($bobs);

# a consumer that never reads does not slow requests

sub timed {
	my ($n) = @_;
	my ($ok, $start) = (0, time());
	for my $i (1 .. $n) {
		$ok++ if status(req($ALICE, 'POST', "http://127.0.0.1:$P/s$i",
			body => 'z' x 50000)) == 200;
	}
	return ($ok, time() - $start);
}

ok(wait_for(sub { !metric('bottle_firehose_attached') }),
	'consumers gone: detached');
my ($ok0, $none) = timed(100);

my $stall = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$RP")
	or die "redis: $!\n";
print $stall "SELECT 2\r\nSUBSCRIBE bottle:firehose\r\n";
ok(wait_for(sub { metric('bottle_firehose_attached') }),
	'a consumer that never reads: attached');

my $before = metric('bottle_firehose_snapshots_total');
my ($ok1, $slow) = timed(100);
is($ok0 + $ok1, 200, 'every request served');
is(wait_for(sub { my $n = metric('bottle_firehose_snapshots_total') - $before;
	$n >= 100 ? $n : 0 }, 5), 100, 'each one snapshotted');
ok($slow < 2 * $none + 2, sprintf('not slowed: %.2fs with it, %.2fs without',
	$slow, $none));

# a reload: the new worker attaches again

$t->reload();
ok(wait_for(sub { metric('bottle_firehose_attached') }),
	'reloaded: the new worker sees the consumer');
$before = metric('bottle_firehose_snapshots_total');
req($ALICE, 'GET', "http://127.0.0.1:$P/reloaded");
is(wait_for(sub { my $n = metric('bottle_firehose_snapshots_total');
	$n > $before ? $n : 0 }, 5), $before + 1, 'reloaded: snapshots go on');

# the last consumer leaves: snapshots stop

close $stall;
ok(wait_for(sub { !metric('bottle_firehose_attached') }),
	'the last consumer left: detached');
$before = metric('bottle_firehose_snapshots_total');
req($ALICE, 'GET', "http://127.0.0.1:$P/after");
sleep 0.5;
is(metric('bottle_firehose_snapshots_total'), $before,
	'no snapshot once nobody listens');

# batches: while Redis does not answer, 16 PUBLISHes wait in flight and the
# records after them gather into one batch, sent as one message when the
# answers come, one record a line; the queue (bottle_firehose_queue 64)
# counts both, and the records past it are dropped

# the messages' payloads a subscriber got until $want records (lines) came
sub messages {
	my ($sock, $want) = @_;
	my ($buf, $lines, @msgs) = ('', 0);
	my $sel = IO::Select->new($sock);
	my $end = time() + 10;
	while ($lines < $want && time() < $end) {
		next unless $sel->can_read(0.2);
		sysread($sock, $buf, 1 << 20, length $buf) or last;
		while ($buf =~ /^\*3\r\n\$7\r\nmessage\r\n\$\d+\r\n[^\r]*\r\n\$(\d+)\r\n/) {
			my ($at, $len) = ($+[0], $1);
			last if length($buf) < $at + $len + 2;
			push @msgs, substr($buf, $at, $len);
			substr($buf, 0, $at + $len + 2) = '';
			$lines += scalar split /\n/, $msgs[-1];
		}
	}
	return @msgs;
}

my $sub = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$RP")
	or die "redis: $!\n";
print $sub "SELECT 2\r\nSUBSCRIBE bottle:firehose\r\n";
ok(wait_for(sub { metric('bottle_firehose_attached') }),
	'batches: a subscriber attached');
{
	# its answers to SELECT and SUBSCRIBE
	my $got = '';
	my $sel = IO::Select->new($sub);
	while ($got !~ /subscribe.*:1\r\n/s && $sel->can_read(5)) {
		sysread($sub, $got, 4096, length $got) or last;
	}
}

my ($pub0, $drop0) = map { metric($_) // 0 }
	qw/ bottle_firehose_published_total bottle_firehose_dropped_total /;
kill 'STOP', $redis->{pid};
my $served = 0;
for my $i (1 .. 80) {
	$served++ if status(req($ALICE, 'GET', "http://127.0.0.1:$P/b$i")) == 200;
}
my $dropped = metric('bottle_firehose_dropped_total') - $drop0;
kill 'CONT', $redis->{pid};

is($served, 80, 'batches: every request served while Redis is stopped');
is($dropped, 16, 'batches: the 16 records past the queue dropped');
is(wait_for(sub { my $n = metric('bottle_firehose_published_total') - $pub0;
	$n >= 64 ? $n : 0 }), 64, 'batches: the queue\'s 64 published');

my @msgs = messages($sub, 64);
is(scalar @msgs, 17, 'batches: 16 messages of one record, then one');
is(scalar(() = $msgs[-1] =~ /\n/g), 47,
	'batches: the last message has 48 records, a newline between them');
my @paths = map { eval { decode_json($_)->{http_request}{url}{path} } // '' }
	map { split /\n/ } @msgs;
is_deeply(\@paths, [ map { "/b$_" } 1 .. 64 ],
	'batches: each line a record, the first 64 requests\' in order');
close $sub;

###############################################################################
