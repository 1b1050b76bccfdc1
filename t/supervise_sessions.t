#!/usr/bin/perl

# supervise-helper's MCP sessions per bottle (docs/supervise.md): a bottle
# holds at most SV_SESSIONS_BOTTLE_MAX (64), its own least recently used
# going first, so one bottle's initialize calls never end another
# bottle's session (issue 27, item 6: 1,100 initialize calls from one
# bottle ended another's when all shared one LRU of 1,024).

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use IO::Socket::UNIX;
use JSON::PP qw//;
use Time::HiRes qw/ sleep /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $HELPER = $ENV{SUPERVISE_HELPER} // "$FindBin::Bin/../build/supervise-helper";
$HELPER = "$FindBin::Bin/../$HELPER" if $HELPER !~ m!^/! && !-x $HELPER;

if (!-x $HELPER) {
	BAIL_OUT("SUPERVISE_HELPER=$HELPER is not built")
		if $ENV{SUPERVISE_HELPER};
	plan(skip_all => 'build/supervise-helper not built (make supervise)');
}

my $t = Test::Nginx->new()->has_daemon('redis-server')
	->has_daemon('redis-cli')->plan(14);
my $d = $t->testdir();
my $json = JSON::PP->new->canonical;

my $r = redis_start($t, port => 8131);

store_put($t,
	{ id => 'alice', token => 'alice-token-0123456789', routes => [] },
	{ id => 'bob', token => 'bob-token-9876543210xyz', routes => [] },
	map { { id => "c$_", token => "c$_-token-0123456789abcdef",
		routes => [] } } 1 .. 63);

$t->run_daemon(sub {
	open STDIN, '<', '/dev/null';
	open STDOUT, '>>', "$d/helper.stderr";
	open STDERR, '>&', \*STDOUT;
	exec($HELPER, '--listen', "unix:$d/sv.sock", '--store', $r->{url},
		'--response-timeout', '0') or die "exec: $!\n";
});

for (1 .. 100) {
	last if -S "$d/sv.sock";
	sleep 0.05;
}

###############################################################################

my $id = 0;

# one request on a connection of its own: { status, headers, body, json }

sub req {
	my ($bottle, $session, $method) = @_;
	my $body = $json->encode({ jsonrpc => '2.0', id => ++$id,
		method => $method, $method eq 'initialize'
		? (params => { protocolVersion => '2025-06-18',
			capabilities => {},
			clientInfo => { name => 't', version => '1' } })
		: () });

	my $s = IO::Socket::UNIX->new(Peer => "$d/sv.sock") or return {};
	print $s "POST / HTTP/1.1\r\nHost: supervise\r\n"
		. "Accept: application/json, text/event-stream\r\n"
		. "Content-Type: application/json\r\n"
		. "X-Bottle-Id: $bottle\r\n"
		. (defined $session ? "Mcp-Session-Id: $session\r\n"
			. "MCP-Protocol-Version: 2025-06-18\r\n" : '')
		. "Content-Length: " . length($body) . "\r\n"
		. "Connection: close\r\n\r\n$body";

	local $/;
	my $raw = <$s> // '';
	close $s;

	my ($head, $rest) = split /\r\n\r\n/, $raw, 2;
	my $res = { headers => $head // '', body => $rest // '' };
	$res->{status} = ($head // '') =~ m!^HTTP/1\.\d (\d+)! ? $1 : 0;
	$res->{json} = eval { $json->decode($res->{body}) };
	return $res;
}

sub session {
	my ($bottle) = @_;
	my $res = req($bottle, undef, 'initialize');
	my ($sid) = $res->{headers} =~ /^Mcp-Session-Id: (\S+)/mi;
	return $sid;
}

###############################################################################

my $B = session('bob');
my $A = session('alice');
like($B // '', qr/^[0-9a-f]{32}$/, 'bob: a session');
is(req('bob', $B, 'tools/list')->{status}, 200, 'bob: his session works');

# 1,100 initialize calls from alice

my $made = 0;
for (1 .. 1100) {
	$made++ if defined session('alice');
}
is($made, 1100, 'alice: 1,100 sessions made');

my $res = req('bob', $B, 'tools/list');
is($res->{status}, 200, 'bob: his session still works');
ok($res->{json} && ref $res->{json}{result}{tools} eq 'ARRAY',
	'bob: tools/list answered');

# alice's oldest went: her own, least recently used first

is(req('alice', $A, 'tools/list')->{status}, 404,
	'alice: her first session ended (her own least recently used)');

# her last 64 are kept: the cap is per bottle

my @last = map { session('alice') } 1 .. 64;
is(scalar(grep { req('alice', $_, 'ping')->{status} == 200 } @last), 64,
	'alice: her 64 most recent sessions all work');

# the first of them the least recently used, by far: the next one ends it

sleep 0.05;
req('alice', $last[$_], 'ping') for 1 .. 63;

is(req('alice', session('alice'), 'ping')->{status}, 200,
	'alice: a new one works');
is(req('alice', $last[0], 'ping')->{status}, 404,
	'alice: the 65th back ended');
###############################################################################

# the table's bound: 4096 in all.  Alice holds 64, bob 1; 63 more bottles
# at 64 each would be 4032: the last one finds the table full and is
# refused, ending nobody's

my (@refused, $ok);
for my $c (1 .. 63) {
	for (1 .. 64) {
		my $res = req("c$c", undef, 'initialize');
		if ($res->{status} == 200) {
			$ok++;
		} else {
			push @refused, $res;
		}
	}
}

is($ok, 4031, 'the table fills at 4096 sessions');
is(scalar @refused, 1, 'one past it refused');
ok(@refused && $refused[0]{status} == 503
	&& ($refused[0]{json}{error}{code} // 0) == -32000,
	'refused: 503, -32000');
is(req('bob', $B, 'ping')->{status}, 200, 'table full: bob\'s session works');
is(req('alice', session('alice'), 'ping')->{status}, 200,
	'table full: a bottle at its cap still makes one (its own oldest goes)');

###############################################################################
