#!/usr/bin/perl

# What the records keep of a refused request's secrets (issue 27, item 5):
# a refusal's reason names a short SHA-256 prefix of the value, never the
# whole digest (in the error log, the journal, the full log and the
# firehose); a secret in hex or in JSON \u00XX escapes is masked in the
# full log and the firehose as it is in plain; and a first contact whose
# request was refused (503 audit: the journal did not answer in time) is
# not written to the journal when it answers later.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Digest::SHA qw/ sha256_hex /;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $RP = port(8090);
my $AP = port(8092);
my $P = port(8081);
my $MP = port(8091);

$t->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;
worker_processes 1;

bottle_policy redis://127.0.0.1:$RP/2;
bottle_audit redis://127.0.0.1:$AP;
bottle_audit_timeout 1s;

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

    bottle_full_log_dir %%TESTDIR%%/full;

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
my $API = 'secret-api-value-1';
my $CANARY = 'CANARY-a1b2c3d4e5';

my $HEX = unpack('H*', $API);
my $UHEX = uc $HEX;
my $JSONU = join '', map { sprintf '\\u%04x', ord } split //, $API;

my $store = redis_start($t, port => $RP, db => 2);
my $journal = redis_start($t, port => $AP, name => 'journal');

mkdir $t->testdir() . '/full' or die "mkdir: $!\n";

store_put($t,
	{ id => 'alice', token => $ALICE, canary => $CANARY,
		egress_tokens => { API => $API }, audit => { firehose => 'full' },
		routes => [ { host => '127.0.0.1', port => $P, methods => [ '*' ],
			log => 'full', dlp => { on_match => 'supervise' } } ] },
	{ id => 'bob', token => $BOB, audit => { delivery => 'required' },
		routes => [ { host => '127.0.0.1', port => $P,
			methods => [ '*' ] } ] });

fake_upstream($t, port => $P, name => 'one');

$t->run()->plan(22);

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

sub events {
	my $out = redis_cli($t, { name => 'journal' }, 'XRANGE', 'bottle:audit',
		'-', '+');
	my @e;
	for my $l (split /\n/, $out) {
		next unless $l =~ /^\{/;
		my $ev = eval { decode_json($l) } or next;
		$ev->{raw} = $l;
		push @e, $ev;
	}
	return \@e;
}

# the firehose's consumer: bottlectl firehose, its output in a file

my $consumer;

END { if ($consumer) { kill 'TERM', $consumer; waitpid($consumer, 0); } }

sub consumer {
	my ($file) = @_;
	my $out = $t->testdir() . "/$file";
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		open STDOUT, '>', $out or die "$out: $!\n";
		open STDERR, '>', "$out.err" or die "$out.err: $!\n";
		{ exec($Test::Bottle::BOTTLECTL, '--store', $journal->{url},
			'firehose'); }
		POSIX::_exit(127);
	}
	return $pid;
}

###############################################################################

$consumer = consumer('fh.jsonl');

ok(wait_for(sub { metric('bottle_firehose_attached') }),
	'the firehose has a consumer');

# three refusals of alice's secret: plain in the query, hex in the path,
# JSON \u00XX escapes in the body (DLP supervise, no operator channel:
# refused)

my $r = req($ALICE, 'GET', "http://127.0.0.1:$P/q?x=$API");
is(status($r), 403, 'plain: refused');

$r = req($ALICE, 'GET', "http://127.0.0.1:$P/h/$HEX/$UHEX");
is(status($r), 403, 'hex in the path: refused');

$r = req($ALICE, 'POST', "http://127.0.0.1:$P/j",
	headers => [ 'Content-Type: application/json' ],
	body => "{\"k\":\"$JSONU\"}");
is(status($r), 403, 'JSON escapes in the body: refused');

my $FULL = sha256_hex($API);
my $SHORT = substr($FULL, 0, 16);

my $fh = wait_for(sub { my $x = read_jsonl($t, 'fh.jsonl');
	@$x >= 3 ? $x : 0 }) || read_jsonl($t, 'fh.jsonl');
my $fl = wait_for(sub { my $x = read_jsonl($t, 'full/full.jsonl');
	(grep { ($_->{type} // '') eq 'request' } @$x) >= 3 ? $x : 0 })
	|| read_jsonl($t, 'full/full.jsonl');
my $ev = wait_for(sub { my $e = events();
	(grep { $_->{type} eq 'egress.refusal' } @$e) >= 3 ? $e : 0 }) || events();

my $fh_raw = $t->read_file('fh.jsonl');
my $fl_raw = $t->read_file('full/full.jsonl');
my @reasons = map { $_->{reason} // '' }
	grep { $_->{type} eq 'egress.refusal' } @$ev;
my ($err_line) = $t->read_file('error.log')
	=~ /^(.*bottle refused: bottle="alice".*in the query.*)$/m;

# the digest: the documented short prefix, never the whole

like($reasons[0] // '', qr/value sha256:\Q$SHORT\E: /,
	'journal: the reason names the short prefix');
ok(@reasons == 3 && !grep({ /sha256:[0-9a-f]{17}/ } @reasons),
	'journal: no reason with more than 16 hex digits of a digest');
like($err_line // '', qr/value sha256:\Q$SHORT\E: /,
	'error log: the refusal line, the short prefix');
unlike($t->read_file('error.log'), qr/\Q$FULL\E|sha256:[0-9a-f]{17}/,
	'error log: no whole digest');
like($fh_raw, qr/sha256:\Q$SHORT\E: /, 'firehose: the short prefix');
unlike($fh_raw . $fl_raw, qr/\Q$FULL\E|sha256:[0-9a-f]{17}/,
	'firehose, full log: no whole digest');

# the secret's encodings masked

my ($fh_hex) = grep { ($_->{http_request}{url}{path} // '') =~ m!^/h/! }
	@$fh;
is($fh_hex && $fh_hex->{http_request}{url}{path},
	'/h/' . ('*' x length $HEX) . '/' . ('*' x length $HEX),
	'firehose: hex in the path masked, both cases');

my ($fl_hex) = grep { ($_->{path} // '') =~ m!^/h/! } @$fl;
is($fl_hex && $fl_hex->{path},
	'/h/' . ('*' x length $HEX) . '/' . ('*' x length $HEX),
	'full log: hex in the path masked, both cases');

my ($fh_json) = grep { ($_->{http_request}{url}{path} // '') eq '/j' } @$fh;
is($fh_json && $fh_json->{unmapped}{body},
	'{"k":"' . ('*' x length $JSONU) . '"}',
	'firehose: \u00XX escapes in the body masked');

my ($fl_json) = grep { ($_->{path} // '') eq '/j'
	&& ($_->{type} // '') eq 'request' } @$fl;
is($fl_json && $fl_json->{body}, '{"k":"' . ('*' x length $JSONU) . '"}',
	'full log: \u00XX escapes in the body masked');

unlike($fh_raw . $fl_raw . join('', map { $_->{raw} } @$ev),
	qr/\Q$API\E|\Q$HEX\E|\Q$UHEX\E|\\\\u0073\\\\u0065\\\\u0063/i,
	'no record holds the secret, its hex or its escapes');

###############################################################################

# first contact: bob's first request waits for its record; the journal
# stops answering (SIGSTOP), the request is refused (503 audit) after
# bottle_audit_timeout; when the journal answers again the contact is not
# written: it did not happen

kill 'STOP', $journal->{pid};

my $t0 = time();
$r = req($BOB, 'GET', "http://127.0.0.1:$P/first");
my $waited = time() - $t0;

kill 'CONT', $journal->{pid};

like($r, qr/^HTTP\/1\.1 503 .*X-Bottle-Rule: audit/s,
	'journal stopped: 503, rule audit');
ok($waited >= 0.9, 'journal stopped: refused after the timeout');
is(scalar grep({ ($_->{target} // '') eq '/first' }
	@{upstream_requests($t, 'one')}), 0, 'journal stopped: nothing upstream');

# the journal answers again: whatever the gateway sent meanwhile has run
# when a refusal written after it is there

my $mark = scalar grep { $_->{type} eq 'egress.refusal' } @{events()};
is(status(req($BOB, 'GET', "http://nowhere.invalid/")), 403,
	'journal back: a refusal to mark the time');
wait_for(sub { (grep { $_->{type} eq 'egress.refusal' } @{events()})
	> $mark });

is(scalar(grep { $_->{type} eq 'egress.first_contact'
	&& ($_->{bottle} // '') eq 'bob' } @{events()}), 0,
	'no first contact written for the refused request');

# the contact that happens is recorded, once

is(status(req($BOB, 'GET', "http://127.0.0.1:$P/second")), 200,
	'journal back: bob served');
is(scalar(grep { $_->{type} eq 'egress.first_contact'
	&& ($_->{bottle} // '') eq 'bob' } @{events()}), 1,
	'the first contact that happened: written once');

###############################################################################
