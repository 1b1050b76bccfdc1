#!/usr/bin/perl

# The full log (docs/full-log.md): a route with log: "full" has each request
# and its response written to <bottle_full_log_dir>/full.jsonl, one JSON
# line each, mode 0600; bodies cut at 64 KiB with their size and SHA-256;
# credentials and the bottle's registered secrets scrubbed; refusals too;
# other routes never; rotation at 16 MiB keeping three older files, with
# two workers writing; a file that cannot be written drops records, says
# so once, and never touches traffic.

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

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

sub conf {
	my ($front, $dir, $workers) = @_;
	return <<"EOF";

%%TEST_GLOBALS%%

daemon off;
worker_processes $workers;

bottle_policy %%TESTDIR%%/policy.json;

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

    bottle_full_log_dir %%TESTDIR%%/$dir;
    client_body_buffer_size 8k;
    log_format pids '\$pid \$status "\$request"';

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;
        access_log %%TESTDIR%%/access.log pids;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
            proxy_buffering off;
        }

        # buffered, and with spill=1 sent slowly: the response goes to a
        # temporary file (nginx warns), the capture gets it in memory
        location = /bytes {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
            proxy_buffers 4 4k;
            proxy_busy_buffers_size 8k;
            set \$limit_rate 0;
            if (\$arg_spill) {
                set \$limit_rate 100k;
            }
        }
    }
}

EOF
}

my $t = Test::Nginx->new()->has(qw/stream http proxy bottle/);

my $FRONT = port(8080);
my $P = port(8081);
my $P2 = port(8082);
my $TOKEN = 'alice-token-0123456789';
my $API = 'secret-api-value-1';
my $CANARY = 'CANARY-f00dfeed42';
my $T = JSON::PP::true;

$t->write_file_expand('nginx.conf', conf($FRONT, 'full', 2));
mkdir $t->testdir() . '/full' or die "mkdir: $!\n";

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, canary => $CANARY,
		egress_tokens => { API => $API },
		routes => [
		{ host => '127.0.0.1', port => $P, methods => [ '*' ],
			log => 'full', dlp => JSON::PP::false,
			auth => { type => 'bearer', value => 'secret:API' } },
		{ host => '127.0.0.2', port => $P2 },
	] },
] });

fake_upstream($t, port => $P, name => 'one');
fake_upstream($t, port => $P2, name => 'two', addr => '127.0.0.2');

# a second gateway whose full.jsonl is /dev/full: every write fails, in
# both its workers

my $FRONT2 = port(8180);
my $t2 = Test::Nginx->new()->has(qw/stream http proxy bottle/);
$t2->write_file_expand('nginx.conf', conf($FRONT2, 'full', 2));
mkdir $t2->testdir() . '/full' or die "mkdir: $!\n";
symlink '/dev/full', $t2->testdir() . '/full/full.jsonl'
	or die "symlink: $!\n";
write_policy($t2, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [
		{ host => '127.0.0.1', port => $P, log => 'full' } ] } ] });

$t->run();
$t2->run();

$t->plan(45);

###############################################################################

my $auth = 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n";

sub req {
	my ($front, $method, $url, %o) = @_;
	my ($hostport) = $url =~ m!^\w+://([^/?]+)!;
	my $r = "$method $url HTTP/1.1\r\nHost: $hostport\r\n"
		. "Connection: close\r\n$auth";
	$r .= join '', map { "$_\r\n" } @{$o{headers} || []};
	if (defined $o{body}) {
		$r .= "Content-Length: " . length($o{body}) . "\r\n\r\n$o{body}";
	} else {
		$r .= "\r\n";
	}
	return proxy_request($front, $r);
}

sub status {
	my ($r) = @_;
	return ($r // '') =~ m!^HTTP/1\.1 (\d+)! ? $1 : 0;
}

sub records {
	my ($name) = @_;
	return read_jsonl($t, 'full/' . ($name // 'full.jsonl'));
}

# the log phase runs after the answer went out: the lines may come a
# little after the response

my $seen = 0;

sub next_records {
	my $want = $seen + 2;
	my $r;
	for (1 .. 50) {
		$r = records();
		last if @$r >= $want;
		select undef, undef, undef, 0.1;
	}
	$seen = @$r;
	return $r;
}

sub header {
	my ($rec, $name) = @_;
	my ($h) = grep { lc $_->{name} eq lc $name } @{$rec->{headers} || []};
	return $h && $h->{value};
}

# an allowed request: both lines, every field

my $body = "hello $API and more";
my $r = req($FRONT, 'POST', "http://127.0.0.1:$P/p?access_token=agent&keep=1",
	headers => [ 'Authorization: Bearer agent-own', 'Cookie: s=agent',
		"X-Note: carries $API inside" ], body => $body);
is(status($r), 200, 'allowed');

my $recs = next_records();
is(scalar @$recs, 2, 'two lines: the request, the response');
my ($q, $a) = @$recs;

is_deeply([ map { $q->{$_} } qw/type bottle method scheme host port path
	query verdict/ ],
	[ 'request', 'alice', 'POST', 'http', '127.0.0.1', $P, '/p', 'keep=1',
	'allowed' ], 'request: who, what, where, the verdict');
like($q->{time}, qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'request: time');
like($q->{request_id}, qr/^[0-9a-f]{32}$/, 'request: request_id');
is(header($q, 'Authorization'), '[scrubbed]', 'Authorization scrubbed');
is(header($q, 'Cookie'), '[scrubbed]', 'Cookie scrubbed');
is(header($q, 'Proxy-Authorization'), '[scrubbed]',
	'Proxy-Authorization scrubbed');
is(header($q, 'X-Note'), 'carries ' . ('*' x length $API) . ' inside',
	'a registered secret in a header masked');
is($q->{body}, 'hello ' . ('*' x length $API) . ' and more',
	'a registered secret in the body masked');
is_deeply([ $q->{body_size}, $q->{body_truncated}, $q->{body_sha256} ],
	[ length $body, JSON::PP::false, sha256_hex($body) ],
	'body: size, not cut, SHA-256 of what was sent');

is_deeply([ map { $a->{$_} } qw/type request_id status body body_size/ ],
	[ 'response', $q->{request_id}, 200, "upstream one ok\n", 16 ],
	'response: status and body, the request\'s id');
is(header($a, 'X-Upstream'), 'one', 'response: headers');
ok(defined $a->{duration_ms} && $a->{duration_ms} >= 0, 'response: duration');

my $raw = $t->read_file('full/full.jsonl');
unlike($raw, qr/\Q$API\E|\Q$TOKEN\E|agent-own|s=agent/,
	'no secret or credential anywhere in the file');
is((stat($t->testdir() . '/full/full.jsonl'))[2] & 07777, 0600, 'mode 0600');

# 64 KiB cut, with the size and hash of the whole, both ways

my $big = join '', map { chr(97 + $_ % 26) } 1 .. 100000;
$r = req($FRONT, 'POST', "http://127.0.0.1:$P/bytes?n=100000", body => $big);
is(status($r), 200, 'a large body: allowed');
$recs = next_records();
($q, $a) = @$recs[-2, -1];
is(length $q->{body}, 65536, 'request body cut at 64 KiB');
is_deeply([ $q->{body_size}, $q->{body_truncated}, $q->{body_sha256} ],
	[ 100000, $T, sha256_hex($big) ], 'request: size and SHA-256 of the whole');
is($q->{body}, substr($big, 0, 65536), 'request: the first 64 KiB as sent');
is(length $a->{body}, 65536, 'response body cut at 64 KiB');
is_deeply([ $a->{body_size}, $a->{body_truncated}, $a->{body_sha256} ],
	[ 100000, $T, sha256_hex('x' x 100000) ],
	'response: size and SHA-256 of the whole');

# a response buffered to a temporary file: hashed all the same

my $spill = 200000;
$r = req($FRONT, 'GET', "http://127.0.0.1:$P/bytes?n=$spill&spill=1");
is(status($r), 200, 'a response through a temporary file: allowed');
like($t->read_file('error.log'),
	qr/an upstream response is buffered to a temporary file/,
	'a response through a temporary file: nginx buffered it to one');
$recs = next_records();
$a = $recs->[-1];
is_deeply([ $a->{type}, $a->{body_size}, $a->{body_sha256},
	length $a->{body} ],
	[ 'response', $spill, sha256_hex('x' x $spill), 65536 ],
	'a response through a temporary file: its size, hash and first 64 KiB');

# a secret the cut splits: its first part is masked too

my $split = ('a' x (65536 - 5)) . $API . 'tail';
req($FRONT, 'POST', "http://127.0.0.1:$P/", body => $split);
($q) = grep { $_->{type} eq 'request' } @{next_records()}[-2, -1];
is(substr($q->{body}, -5), '*****', 'a secret split by the cut is masked');

# binary bodies: base64

my $bin = "\xff\xfe\x00\x01" x 4;
req($FRONT, 'POST', "http://127.0.0.1:$P/", body => $bin);
($q) = grep { $_->{type} eq 'request' } @{next_records()}[-2, -1];
is($q->{body_base64}, '//4AAf/+AAH//gAB//4AAQ==', 'binary body as base64');

# refused on the route: logged, the canary masked

$r = req($FRONT, 'GET', "http://127.0.0.1:$P/x?c=$CANARY");
is(status($r), 403, 'canary: refused');
($q, $a) = @{next_records()}[-2, -1];
is_deeply([ $q->{verdict}, $q->{rule}, $a->{status} ],
	[ 'refused', 'canary', 403 ], 'a refusal: verdict, rule, status');
is($q->{query}, 'c=' . ('*' x length $CANARY), 'the canary masked in the query');
like($a->{body} // '', qr/canary/, 'the refusal\'s text as the response body');

# another route: never logged

my $n = scalar @{records()};
is(status(req($FRONT, 'GET', "http://127.0.0.2:$P2/")), 200,
	'a route without log full: allowed');
select undef, undef, undef, 0.5;
is(scalar @{records()}, $n, 'a route without log full: not logged');

# rotation at 16 MiB, three older files kept, two workers writing

my $chunk = 'r' x 60000;
my ($ok, $sent) = (0, 0);
for my $i (1 .. 300) {
	$sent++;
	$ok++ if status(req($FRONT, 'POST', "http://127.0.0.1:$P/bytes?n=60000",
		body => $chunk)) == 200;
}
is($ok, $sent, 'rotation: every request served');
select undef, undef, undef, 1;

my $dir = $t->testdir() . '/full';
ok(-f "$dir/full.jsonl.1" && -f "$dir/full.jsonl.2", 'rotated: .1 and .2');
ok(!-e "$dir/full.jsonl.4", 'no more than three older files');
ok(-s "$dir/full.jsonl.1" >= 16 * 1024 * 1024
	&& -s "$dir/full.jsonl.1" < 17 * 1024 * 1024,
	'a rotated file: 16 MiB and at most a few records more');
is((stat("$dir/full.jsonl.1"))[2] & 07777, 0600, 'a rotated file: 0600');

# every line whole (no two workers' lines interleaved), none lost

my ($lines, $bad) = (0, 0);
for my $f (map { "full.jsonl$_" } '', '.1', '.2', '.3') {
	next unless -e "$dir/$f";
	open my $fh, '<', "$dir/$f" or die "$f: $!\n";
	while (my $l = <$fh>) {
		$lines++;
		$bad++ unless eval { decode_json($l); 1 };
	}
}
is($bad, 0, 'every line is one whole JSON record');
ok($lines >= 2 * $sent, "two lines a request, none lost ($lines)");

my %pids = map { (split ' ')[0] => 1 } grep { /bytes\?n=60000/ }
	split /\n/, $t->read_file('access.log');
is(scalar keys %pids, 2, 'both workers wrote');

# a file that cannot be written: records dropped, said once, traffic served

# until both workers have served some (and failed to write)
my ($served, $tried, %pids2) = (0, 0);
while ($tried < 200 && keys %pids2 < 2) {
	$tried++;
	$served++ if status(req($FRONT2, 'GET', "http://127.0.0.1:$P/d$tried"))
		== 200;
	%pids2 = map { (split ' ')[0] => 1 } grep { m!/d\d+ ! }
		split /\n/, ($t2->read_file('access.log') // '');
}
is($served, $tried, 'full disk: traffic served');
is(scalar keys %pids2, 2, 'full disk: both workers wrote');
my @said = grep { /full log: cannot write/ }
	split /\n/, $t2->read_file('error.log');
is(scalar @said, 1, 'full disk: said once for the gateway');
like($said[0] // '', qr/No space left on device/, 'full disk: why');

$t2->stop();

###############################################################################
