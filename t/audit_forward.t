#!/usr/bin/perl

# Tests for bottlectl audit forward (docs/control-plane.md, "Forwarding
# the chain") and verify --against: the chain shipped to a file (every
# record's hash recomputed here, resumed after the last acknowledged
# event, rotated by size), to syslog (RFC 5424, a unix datagram socket
# and UDP on loopback) and to an HTTP endpoint (a 500 is not an
# acknowledgement: the batch goes again, marked "resend"); a forwarder
# killed (SIGKILL) again and again while events are written loses none
# and sends none twice unmarked; events trimmed before they were sent are
# a gap record; signed checkpoints (Ed25519, openssl genpkey) let verify
# --against detect a chain rewritten in Redis (every hash recomputed after
# an edit, which verify alone finds whole) and a forged checkpoint.
# No nginx needed: the events are bottlectl's proposals.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Digest::SHA qw/ sha256 sha256_hex /;
use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;
use JSON::PP;
use POSIX qw/ WNOHANG /;
use Socket qw/ SOCK_DGRAM /;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $BOTTLECTL = $Test::Bottle::BOTTLECTL;
plan(skip_all => 'build/bottlectl not built (make ctl)') unless -x $BOTTLECTL;

my $t = Test::Nginx->new()->has_daemon('redis-server')
	->has_daemon('redis-cli')->has_daemon('openssl')->plan(28);
my $d = $t->testdir();

my $r = redis_start($t, port => 8101);
$ENV{BOTTLE_STORE} = $r->{url};

store_put($t, { id => 'alice', token => 'alice-token-0123456789',
	routes => [] });

# the put's policy.changed aside: the chain starts with the events below
redis_cli($t, 'DEL', 'bottle:audit', 'bottle:audit:chain');

my $json = JSON::PP->new->canonical;
my $nprop = 0;

###############################################################################

# a file: every record, its hash recomputed; resumed, no duplicate

events(5);
my $res = forward('--to', "file:$d/f.jsonl", '--state', "$d/f.state");
is($res->{rc}, 0, 'file: forwarded');
my @f = records("$d/f.jsonl");
is(join(',', map { $_->{seq} } @f), '1,2,3,4,5', 'file: seq 1..5');
is(scalar(grep { link_hash($_) eq $_->{hash} } @f), 5,
	'file: every record\'s hash recomputed from its event');
like($t->read_file('f.state'), qr/^acked_seq 5\nacked_id \d+-\d+\nsending_seq 5\n\z/,
	'file: the state names the last acknowledged');

forward('--to', "file:$d/f.jsonl", '--state', "$d/f.state");
events(2);
forward('--to', "file:$d/f.jsonl", '--state', "$d/f.state");
@f = records("$d/f.jsonl");
is(join(',', map { $_->{seq} } @f), '1,2,3,4,5,6,7',
	'file: resumed after the last acknowledged, nothing twice');

# a crash after the batch went out, before its acknowledgement was
# recorded: sent again, marked

my $id4 = $f[3]{id};
$t->write_file('f.state', "acked_seq 4\nacked_id $id4\nsending_seq 7\n");
forward('--to', "file:$d/f.jsonl", '--state', "$d/f.state");
@f = records("$d/f.jsonl");
is(join(',', map { $_->{seq} . ($_->{resend} ? 'r' : '') } @f),
	'1,2,3,4,5,6,7,5r,6r,7r', 'resent after a crash: marked "resend"');

# a gap: events trimmed from the store before they were sent

events(3);
my @all = entries();
redis_cli($t, 'XDEL', 'bottle:audit', $all[7]{id}, $all[8]{id});
forward('--to', "file:$d/f.jsonl", '--state', "$d/f.state");
my @l = lines("$d/f.jsonl");
is($l[-2], '{"gap":{"after":7,"next":10},"reason":"trimmed from the store before they were forwarded"}',
	'gap: said so');
is(decode_json($l[-1])->{seq}, 10, 'gap: then the next event');
rewrite(@all);

# rotated by size

events(6);
forward('--to', "file:$d/rot.jsonl", '--state', "$d/rot.state",
	'--max-size', 1500);
my @parts = sort { ($a =~ /\.(\d+)$/)[0] <=> ($b =~ /\.(\d+)$/)[0] }
	glob("$d/rot.jsonl.*");
ok(@parts >= 1, 'rotated: ' . scalar(@parts) . ' old files');
ok(!grep({ -s $_ > 1500 * 2 } @parts), 'rotated: each about the bound');
is(join(',', map { $_->{seq} } map { records($_) } @parts, "$d/rot.jsonl"),
	join(',', 1 .. 16), 'rotated: every record once, in order');

# killed again and again while events are written: none lost, none twice
# unmarked

my $pid = forward_bg('--to', "file:$d/k.jsonl", '--state', "$d/k.state",
	'-f');
for my $round (1 .. 4) {
	events(5);
	sleep(0.1 * $round);
	kill 'KILL', $pid;
	waitpid($pid, 0);
	$pid = forward_bg('--to', "file:$d/k.jsonl", '--state', "$d/k.state",
		'-f');
}
events(3);
my $want = (entries())[-1]{seq};
wait_for(sub { my @k = records("$d/k.jsonl"); @k && $k[-1]{seq} == $want });
kill 'TERM', $pid;
waitpid($pid, 0);

my %seen;
my @k = records("$d/k.jsonl");
my @silent = grep { $seen{$_->{seq}}++ && !$_->{resend} } @k;
is(join(',', sort { $a <=> $b } keys %seen), join(',', 1 .. $want),
	'killed and restarted: every event forwarded');
is(scalar @silent, 0, 'killed and restarted: no duplicate unmarked');

# syslog: a unix datagram socket, UDP on loopback

$t->run_daemon(\&syslog_reader, "$d/log.sock", "$d/syslog.log");
wait_for(sub { -S "$d/log.sock" });
$res = forward('--to', "syslog:unix:$d/log.sock", '--state', "$d/u.state");
is($res->{rc}, 0, 'syslog unix: forwarded');
wait_for(sub { () = lines("$d/syslog.log") >= $want });
my @sl = grep { / audit - \{"seq":/ } lines("$d/syslog.log");
is(scalar @sl, $want, 'syslog unix: one message per event');
like($sl[0] // '', qr/^<134>1 \d{4}-\d\d-\d\dT[\d:.]+Z \S+ bottlectl \d+ audit - \{"seq":1,"id":"\d+-\d+","prev":"0{64}","hash":"[0-9a-f]{64}","event":"\{\\"v\\":1,/,
	'syslog unix: RFC 5424, local0.info, the first record');

my $msg;
my $udp = IO::Socket::INET->new(Proto => 'udp', LocalAddr => '127.0.0.1',
	LocalPort => port(8102)) or die "udp: $!\n";
forward('--to', 'syslog:udp:127.0.0.1:' . port(8102), '--state', "$d/p.state");
my @got;
while (IO::Select->new($udp)->can_read(2)) {
	$udp->recv($msg, 70000);
	push @got, $msg if $msg =~ / audit - \{"seq":/;
	last if @got == $want;
}
is(scalar @got, $want, 'syslog udp: one message per event');
like($got[-1] // '', qr/ audit - \{"seq":$want,/, 'syslog udp: the last one');

# HTTP: a 500 is not an acknowledgement

my $hp = port(8103);
$t->run_daemon(\&http_server, $hp, "$d/http.log");
$t->waitforsocket("127.0.0.1:$hp") or die "no http server\n";

$res = forward('--to', "http://127.0.0.1:$hp/audit", '--state', "$d/h.state");
is($res->{rc}, 3, 'http: 500, not acknowledged: exit 3');
like($res->{err}, qr/answered 500: not acknowledged/, 'http: said so');
$res = forward('--to', "http://127.0.0.1:$hp/audit", '--state', "$d/h.state");
is($res->{rc}, 0, 'http: then 200');
my @bodies = split /\n--\n/, $t->read_file('http.log');
my @second = map { decode_json($_) } grep { /^\{"seq"/ } split /\n/, $bodies[1] // '';
ok(@second && !grep({ !$_->{resend} } @second),
	'http: the batch sent again, every record marked "resend"');

# signed checkpoints: a chain rewritten in Redis

system("openssl genpkey -algorithm ed25519 -out $d/k.pem 2>/dev/null") == 0
	or die "genpkey\n";
system("openssl pkey -in $d/k.pem -pubout -out $d/pub.pem 2>/dev/null") == 0
	or die "pkey\n";

forward('--to', "file:$d/s.jsonl", '--state', "$d/s.state", '--key',
	"$d/k.pem");
events(2);
forward('--to', "file:$d/s.jsonl", '--state', "$d/s.state", '--key',
	"$d/k.pem");
my @cp = grep { /^\{"checkpoint"/ } lines("$d/s.jsonl");
is(scalar @cp, 2, 'signed: a checkpoint per batch');

$res = ctl_run($t, 'audit', 'verify', '--against', "$d/s.jsonl", '--pubkey',
	"$d/pub.pem");
like($res->{out}, qr/^audit verify: the store matches the forwarded copy: \d+ events compared, 2 signed checkpoints, the newest at seq @{[ $want + 2 ]}$/m,
	'signed: the store matches');

# event 11 edited, and every hash after it recomputed, the head too

@all = entries();
my ($e11) = grep { $_->{seq} == 11 } @all;
$e11->{event} =~ s/"bottle":"alice"/"bottle":"mallory"/ or die;
my $prev;
for my $x (@all) {
	$x->{prev} = $prev if defined $prev && $x->{seq} > 11;
	$x->{hash} = link_hash($x) if $x->{seq} >= 11;
	$prev = $x->{hash};
}
rewrite(@all);
redis_cli($t, 'HSET', 'bottle:audit:chain', 'hash', $all[-1]{hash});

is(ctl_run($t, 'audit', 'verify')->{rc}, 0,
	'rewritten in Redis: the chain alone verifies');
$res = ctl_run($t, 'audit', 'verify', '--against', "$d/s.jsonl", '--pubkey',
	"$d/pub.pem");
like($res->{out}, qr/^audit verify: broken: rewritten: seq 11 \(entry \Q$e11->{id}\E\) has hash/m,
	'rewritten in Redis: detected against the forwarded copy');
isnt($res->{rc}, 0, 'rewritten in Redis: exit status not 0');

# a checkpoint not signed by that key

my $s = $t->read_file('s.jsonl');
$s =~ s/("sig":")(.)/$1 . ($2 eq 'A' ? 'B' : 'A')/e;
$t->write_file('forged.jsonl', $s);
like(ctl_run($t, 'audit', 'verify', '--against', "$d/forged.jsonl",
	'--pubkey', "$d/pub.pem")->{out},
	qr/^audit verify: broken: .*the checkpoint of seq \d+ is not signed by that key$/m,
	'a forged checkpoint: detected');

###############################################################################

sub events {
	my ($n) = @_;
	for (1 .. $n) {
		$nprop++;
		my $res = ctl_run($t, 'propose', 'alice', 'egress-allow',
			$json->encode({ host => "h$nprop.example.com",
				methods => [ 'GET' ] }), '--justification', 'fwd');
		die "propose: $res->{err}" if $res->{rc} != 0;
	}
}

sub forward {
	return ctl_run($t, 'audit', 'forward', @_);
}

sub forward_bg {
	my (@args) = @_;
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		open STDOUT, '>>', "$d/bg.out";
		open STDERR, '>>', "$d/bg-stderr.log";
		exec($BOTTLECTL, 'audit', 'forward', @args) or POSIX::_exit(127);
	}
	return $pid;
}

sub wait_for {
	my ($cond) = @_;
	my $deadline = time() + 20;
	while (time() < $deadline) {
		return 1 if $cond->();
		sleep 0.1;
	}
	return 0;
}

sub lines {
	my ($file) = @_;
	open my $fh, '<', $file or return ();
	chomp(my @l = <$fh>);
	return @l;
}

sub records {
	return map { decode_json($_) } grep { /^\{"seq"/ } lines(@_);
}

sub entries {
	my @e;
	my @l = split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
	while (@l) {
		my $id = shift @l;
		my %f;
		while (@l && $l[0] !~ /^\d+-\d+$/) {
			my $k = shift @l;
			$f{$k} = shift @l;
		}
		$f{id} = $id;
		push @e, \%f;
	}
	return @e;
}

sub rewrite {
	my (@e) = @_;
	my $resp = resp('DEL', 'bottle:audit');
	for my $x (@e) {
		$resp .= resp('XADD', 'bottle:audit', $x->{id},
			map { ($_, $x->{$_}) } qw/ event seq prev hash /);
	}
	$t->write_file('rewrite.resp', $resp);
	system("$Test::Bottle::REDIS_CLI -p $r->{port} --pipe"
		. " <$d/rewrite.resp >$d/rewrite.out 2>&1") == 0
		or die "rewrite: " . $t->read_file('rewrite.out');
}

sub resp {
	my (@a) = @_;
	return '*' . @a . "\r\n"
		. join('', map { '$' . length($_) . "\r\n$_\r\n" } @a);
}

sub link_hash {
	my ($x) = @_;
	return sha256_hex(pack('H64', $x->{prev}) . pack('Q>', $x->{seq})
		. sha256($x->{event}));
}

# datagrams on a unix socket, one per line of the log

sub syslog_reader {
	my ($path, $log) = @_;
	my $sock = IO::Socket::UNIX->new(Type => SOCK_DGRAM, Local => $path)
		or die "$path: $!\n";
	my $msg;
	while (defined $sock->recv($msg, 70000)) {
		open my $fh, '>>', $log or die;
		print $fh "$msg\n";
		close $fh;
	}
}

# POSTs: the first answered 500, the others 200; each body in the log,
# bodies separated by "--"

sub http_server {
	my ($port, $log) = @_;
	my $server = IO::Socket::INET->new(LocalAddr => "127.0.0.1:$port",
		Listen => 8, Reuse => 1) or die "http: $!\n";
	my $n = 0;
	while (my $c = $server->accept()) {
		my $head = '';
		while (defined(my $l = <$c>)) {
			$head .= $l;
			last if $l eq "\r\n";
		}
		next unless $head =~ /^POST /;
		my ($len) = $head =~ /^Content-Length:\s*(\d+)/mi;
		my $body = '';
		read($c, $body, $len // 0);
		open my $fh, '>>', $log or die;
		print $fh ($n ? "\n--\n" : '') . $body;
		close $fh;
		my $status = $n++ ? '200 OK' : '500 Internal Server Error';
		print $c "HTTP/1.1 $status\r\nContent-Length: 0\r\n"
			. "Connection: close\r\n\r\n";
		close $c;
	}
}

###############################################################################
