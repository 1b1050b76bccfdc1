package Test::Bottle::Store;

# What the store tests share (t/store_limits.t, t/store_liveness.t): a
# bottle written straight into Redis as the put script would, and alice's
# requests through the gateway while it happens.  store_setup() names the
# test's nginx, Redis, upstream port and alice's token once.

use warnings;
use strict;

use Exporter qw/ import /;
use Digest::SHA qw/ sha256_hex /;
use IO::Socket::INET;
use Time::HiRes qw/ sleep time /;

use Test::Nginx qw/ proxy_request /;
use Test::Bottle;

our @EXPORT = qw/ store_setup raw_put bottle_json get wait_for alice_for
	log_count /;

my ($t, $r, $P1, $ALICE);

sub store_setup {
	($t, $r, $P1, $ALICE) = @_;
}

# a bottle's JSON written as the put script would, over a socket of our own
# (a value this large is no command-line argument); with a callback, it is
# called between the write of the bottle's hash and the index's change;
# quiet: the change is not published (the gateways do not learn of it)

sub raw_put {
	my ($id, $json, $between, $quiet) = @_;
	my $token = "$id-token-0123456789";
	my $digest = sha256_hex($token);
	chomp(my $v = redis_cli($t, 'INCR', 'bottle:version'));

	my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$r->{port}")
		or die "redis: $!\n";
	my @cmds = (
		[ 'HSET', "bottle:policy:$id", 'json', $json, 'version', $v,
			'token_sha256', $digest ],
		[ 'HSET', 'bottle:tokens', $digest, $id ]);
	my @index = (
		[ 'HSET', 'bottle:bottles', $id, $v ],
		[ 'PUBLISH', 'bottle:changes', "$id $v" ]);
	for my $c (@cmds, $between ? () : @index) {
		$s->print('*' . @$c . "\r\n"
			. join('', map { '$' . length($_) . "\r\n$_\r\n" } @$c));
	}
	for (@cmds, $between ? () : @index) {
		my $line = <$s>;
		die "redis: $line" unless defined $line && $line =~ /^:/;
	}
	close $s;
	if ($between) {
		$between->();
		redis_cli($t, @$_) for grep { !$quiet || $_->[0] ne 'PUBLISH' }
			@index;
	}
	return $token;
}

sub bottle_json {
	my ($id, %o) = @_;
	my $pad = delete $o{pad} // 0;
	return '{"id":"' . $id . '","token_sha256":"'
		. sha256_hex("$id-token-0123456789") . '","routes":'
		. ($o{routes} // '[]')
		. ($o{egress_tokens} ? ',"egress_tokens":' . $o{egress_tokens}
			: '')
		. '}' . (' ' x $pad);
}

sub get {
	my ($token, $path) = @_;
	return proxy_request(8080, "GET http://127.0.0.1:$P1$path HTTP/1.1\r\n"
		. "Host: 127.0.0.1:$P1\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $token) . "\r\n"
		. "Connection: close\r\n\r\n") // '';
}

sub wait_for {
	my ($code, $re, $max) = @_;
	my $deadline = time() + ($max // 10);
	my $res;
	while (time() < $deadline) {
		$res = $code->();
		return $res if $res =~ $re;
		sleep 0.05;
	}
	return $res;
}

# alice's requests for a while: how many were not a 200, and the 407s of a
# store judged lost

sub alice_for {
	my ($secs) = @_;
	my ($n, $bad, $lost) = (0, 0, 0);
	my $end = time() + $secs;
	while (time() < $end) {
		my $res = get($ALICE, '/a' . $n++);
		$bad++ unless $res =~ /^HTTP\/1\.1 200 /;
		$lost++ if $res =~ /lost its policy store/;
		sleep 0.05;
	}
	return "$bad of $n refused, $lost lost";
}

sub log_count {
	my ($re) = @_;
	return scalar(() = $t->read_file('error.log') =~ /$re/g);
}

1;
