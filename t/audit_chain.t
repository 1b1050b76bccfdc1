#!/usr/bin/perl

# Tests for the audit journal's hash chain (docs/control-plane.md, "The
# chain"): events from a gateway (first contacts, refusals) and bottlectl
# (proposals, decisions, a late answer) interleave into one chain that
# bottlectl audit verify finds whole; an edited event (its JSON changed,
# or changed with its own hash recomputed), a removed one, two swapped,
# the newest and the oldest removed are each named; --from; a stream
# trimmed by the gateway still verifies from its checkpoint, and one
# whose oldest kept event was removed does not.  No source writes the
# stream around the chain (no XADD but the chain's own).
#
# The tampering rewrites the stream as someone with store access would:
# every entry read, the stream deleted, the entries written back with
# their own ids (XADD with explicit ids), one changed.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Digest::SHA qw/ sha256 sha256_hex /;
use JSON::PP;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/)
	->has_daemon('redis-server')->has_daemon('redis-cli');

my $BOTTLECTL = $Test::Bottle::BOTTLECTL;
plan(skip_all => 'build/bottlectl not built (make ctl)') unless -x $BOTTLECTL;

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';

my $RP = port(8090);
my $P1 = port(8081);
my $FA = port(8080);

$t->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;
worker_processes 1;

bottle_policy redis://127.0.0.1:$RP;
bottle_audit_stream_max 1000;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:$FA;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
        }
    }
}

EOF

fake_upstream($t, port => $P1, name => 'one');

my $r = redis_start($t, port => $RP);
$ENV{BOTTLE_STORE} = $r->{url};

store_put($t,
	{ id => 'alice', token => $ALICE,
		routes => [ { host => '127.0.0.1', port => $P1 } ] },
	{ id => 'bob', token => $BOB, routes => [] });

$t->run()->plan(28);

###############################################################################

# no producer writes the stream around the chain

my @plain;
for my $f (glob("$Test::Nginx::REPO/{lib,ngx_bottle_module/*,gitgate-helper,"
	. "bottlectl,supervise-helper}/*.[ch]"))
{
	next if $f =~ m!/lib/bottle_audit_chain_lua\.h$!;
	open my $fh, '<', $f or die "$f: $!\n";
	my $text = do { local $/; <$fh> };
	push @plain, $f if $text =~ /['"]XADD['" ]/;
}
is("@plain", '', 'no XADD but the chain\'s own');

# events of a gateway and of bottlectl, interleaved

like(get($ALICE, '127.0.0.1', $P1, '/a'), qr/ 200 /, 'alice served');
like(get($BOB, "r$_.invalid", 80, '/'), qr/ 403 /, 'bob refused') for 1 .. 2;

my $json = JSON::PP->new->canonical;
my $p1 = proposal('egress-allow', { host => 'api.example.com',
	methods => [ 'GET' ] });
get($BOB, 'r3.invalid', 80, '/');
my $p2 = proposal('egress-allow', { host => 'b.example.com',
	methods => [ 'GET' ] });
is(ctl_run($t, 'approve', $p1)->{rc}, 0, 'approved');
get($BOB, 'r4.invalid', 80, '/');
is(ctl_run($t, 'deny', $p2)->{rc}, 0, 'denied');
is(ctl_run($t, 'approve', $p2)->{rc}, 4, 'a late answer: 409');
get($ALICE, '127.0.0.1', $P1, '/b');

my @types = (qw/ egress.first_contact egress.refusal decision.proposed
	decision.resolved decision.late /);
my $e = wait_entries(sub { my %t = map { $_->{ev}{type} => 1 } @_;
	!grep { !$t{$_} } @types });
my $n = scalar @$e;

is(join(',', map { $_->{seq} } @$e), join(',', 1 .. $n),
	"seq 1..$n in stream order");
my %producers = map { $_->{ev}{producer} => 1 } @$e;
is(join(' ', sort keys %producers), 'bottlectl egress',
	'both producers in the one chain');

my $v = verify();
is($v->{rc}, 0, 'verify: whole, exit 0');
like($v->{out}, qr/^audit verify: whole: $n events, seq 1\.\.$n \(from the beginning\)/m,
	'verify: the count and the range');

like(ctl_run($t, 'audit', 'tail', '-n', 1)->{out}, qr/^\{"v":1,.*\}\n\z/,
	'audit tail: the event alone');

# an edited event: its JSON changed

my @orig = @$e;
my ($k) = grep { $orig[$_]{ev}{type} eq 'egress.refusal' } 0 .. $#orig;
my ($pa, $pk, $pn) = @orig[$k - 1, $k, $k + 1];

my @m = map { { %$_ } } @orig;
$m[$k]{event} =~ s/"r1\.invalid"/"elsewhere.invalid"/ or die;
rewrite(@m);
like(verify()->{out},
	qr/^audit verify: broken: edited: entry \Q$pk->{id}\E \(seq \Q$pk->{seq}\E\): its event does not match its hash$/m,
	'edited event: named, its entry and seq');
isnt(verify()->{rc}, 0, 'edited event: exit status not 0');

# edited, and its own hash recomputed: the next event does not link to it

$m[$k]{hash} = link_hash($m[$k]);
rewrite(@m);
like(verify()->{out},
	qr/^audit verify: broken: edited: seq $pk->{seq} \(entry \Q$pk->{id}\E\) was rewritten: seq @{[ $pk->{seq} + 1 ]} \(entry \Q$pn->{id}\E\) links to another hash$/m,
	'edited and rehashed: named');

# a removed event

rewrite(@orig);
redis_cli($t, 'XDEL', 'bottle:audit', $pk->{id});
like(verify()->{out},
	qr/^audit verify: broken: removed: seq $pk->{seq}\.\.$pk->{seq} missing between entry \Q$pa->{id}\E \(seq $pa->{seq}\) and entry \Q$pn->{id}\E/m,
	'removed event: named');

# two events swapped (each keeps the other's stream id)

@m = map { { %$_ } } @orig;
@m[$k, $k + 1] = ({ %{$orig[$k + 1]}, id => $pk->{id} },
	{ %{$orig[$k]}, id => $pn->{id} });
rewrite(@m);
like(verify()->{out},
	qr/^audit verify: broken: reordered: seq $pk->{seq} \(entry \Q$pn->{id}\E\) comes after seq $pn->{seq} \(entry \Q$pk->{id}\E\)$/m,
	'swapped events: reordered, named');

# the newest removed; the oldest removed

my $before_last = $orig[$#orig - 1]{id};
rewrite(@orig[0 .. $#orig - 1]);
like(verify()->{out},
	qr/^audit verify: broken: removed: the chain's head is seq $n but the stream ends at entry \Q$before_last\E$/m,
	'the newest removed: named');

my $second = $orig[1]{id};
rewrite(@orig[1 .. $#orig]);
like(verify()->{out},
	qr/^audit verify: broken: removed: the stream begins at seq 2 \(entry \Q$second\E\), seq 1\.\.1 are missing and nothing was trimmed$/m,
	'the oldest removed: named');

# --from: the chain from that entry on

like(verify('--from', $orig[1]{id})->{out},
	qr/^audit verify: whole: @{[ $n - 1 ]} events, seq 2\.\.$n \(from --from\)/m,
	'--from: whole from there');

rewrite(@orig);
is(verify()->{rc}, 0, 'restored: whole again');

# trimmed by the gateway (bottle_audit_stream_max 1000): still verifies

get(undef, "t$_.invalid", 80, '/') for 1 .. 1300;
$e = wait_entries(sub { grep { ($_->{ev}{host} // '') eq 't1300.invalid' } @_ },
	30);
my %chain = split /\n/, redis_cli($t, 'HGETALL', 'bottle:audit:chain');
my $len = redis_cli($t, 'XLEN', 'bottle:audit') + 0;

ok($len >= 1000 && $len <= 1000 + 256, "trimmed: $len entries kept");
ok($chain{trimmed_seq} && $chain{trimmed_seq} == $e->[0]{seq} - 1,
	'trimmed: the checkpoint is the seq before the oldest kept');
is($chain{trimmed_hash}, $e->[0]{prev},
	'trimmed: the checkpoint\'s hash is the oldest kept\'s prev');
is($chain{seq}, $e->[-1]{seq}, 'the head is the newest');

$v = verify();
is($v->{rc}, 0, 'trimmed: whole');
like($v->{out}, qr/^audit verify: whole: $len events, seq $e->[0]{seq}\.\.$e->[-1]{seq} \(from the trim checkpoint\)/m,
	'trimmed: verified from the checkpoint');

redis_cli($t, 'XDEL', 'bottle:audit', $e->[0]{id});
like(verify()->{out},
	qr/^audit verify: broken: removed: the stream begins at seq @{[ $e->[0]{seq} + 1 ]} \(entry \Q$e->[1]{id}\E\) but the trim checkpoint is seq $chain{trimmed_seq}$/m,
	'trimmed, then the oldest kept removed: named');

###############################################################################

sub get {
	my ($token, $host, $port, $path) = @_;
	return proxy_request($FA, "GET http://$host:$port$path HTTP/1.1\r\n"
		. "Host: $host:$port\r\n"
		. (defined $token ? 'Proxy-Authorization: '
			. basic('agent', $token) . "\r\n" : '')
		. "Connection: close\r\n\r\n") // '';
}

sub proposal {
	my ($kind, $args) = @_;
	my $res = ctl_run($t, 'propose', 'alice', $kind, $json->encode($args),
		'--justification', 'chain test');
	my ($id) = $res->{out} =~ /(\d+-[0-9a-f]+)/;
	die "propose: $res->{out}$res->{err}" unless $id;
	return $id;
}

sub verify {
	my $res = ctl_run($t, 'audit', 'verify', @_);
	return $res;
}

# every entry, oldest first: { id, event, seq, prev, hash, ev (decoded) }

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
		$f{ev} = eval { decode_json($f{event}) } || {};
		push @e, \%f;
	}
	return \@e;
}

sub wait_entries {
	my ($cond, $max) = @_;
	my $deadline = time() + ($max // 5);
	my $e;
	while (time() < $deadline) {
		$e = entries();
		last if $cond->(@$e);
		sleep 0.1;
	}
	return $e;
}

# the stream written anew, entries with their own ids (RESP to redis-cli
# --pipe: the values as they are)

sub rewrite {
	my (@e) = @_;
	my $resp = resp('DEL', 'bottle:audit');
	for my $x (@e) {
		$resp .= resp('XADD', 'bottle:audit', $x->{id},
			map { ($_, $x->{$_}) } grep { defined $x->{$_} }
			qw/ event seq prev hash /);
	}
	my $d = $t->testdir();
	$t->write_file('rewrite.resp', $resp);
	system("$Test::Bottle::REDIS_CLI -p $r->{port} --pipe"
		. " <$d/rewrite.resp >$d/rewrite.out 2>&1") == 0
		or die "rewrite: " . $t->read_file('rewrite.out');
}

sub resp {
	my (@a) = @_;
	return '*' . @a . "\r\n" . join('', map { '$' . length($_) . "\r\n$_\r\n" } @a);
}

sub link_hash {
	my ($x) = @_;
	return sha256_hex(pack('H64', $x->{prev}) . pack('Q>', $x->{seq})
		. sha256($x->{event}));
}

###############################################################################
