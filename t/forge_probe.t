#!/usr/bin/perl

# forge-connect's probe (docs/supervise.md, "forge-connect's probe"): a
# host of no known kind is asked what it runs before a card is queued:
# Gitea's GET /api/v1/version, then GitHub's GET /api/v3/meta; one that
# answers as neither, or cannot be reached, is refused at once and nothing
# is queued.  An internal address is probed only where
# --forge-probe-allow lists its network: a second helper without it
# queues the card unprobed and sends the forge nothing.  The fake forge
# (TLS, on loopback) answers as Gitea, GitHub or neither (forge_config).
#
# SUPERVISE_HELPER runs another build.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP qw//;
use Time::HiRes qw/ sleep /;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $HELPER = $ENV{SUPERVISE_HELPER} // 'build/supervise-helper';
$HELPER = "$Test::Nginx::REPO/$HELPER" if $HELPER !~ m{^/};
plan(skip_all => "$HELPER not built (make supervise)") unless -x $HELPER;

my $t = Test::Nginx->new()->has_daemon('git')->has_daemon('curl')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)
	->has_daemon($Test::Bottle::REDIS);
my $d = $t->testdir();
my $json = JSON::PP->new->canonical;

my $redis = redis_start($t, port => 8221);
my $forge = forge_start($t, port => 8222, tls => 1);
my $FORGE = "127.0.0.1:$forge->{port}";
my $free = port(8223);

store_put($t, { id => 'dev', token => 'dev-token-0123456789', routes => [] });

for my $h ([ 'probe', '--forge-probe-allow', '127.0.0.0/8' ], [ 'plain' ]) {
	my ($name, @opt) = @$h;
	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', "$d/$name.stderr";
		open STDERR, '>&', \*STDOUT;
		exec($HELPER, '--listen', "unix:$d/$name.sock", '--store',
			$redis->{url}, '--response-timeout', '0', '--log',
			"$d/$name.log", @opt) or die "exec: $!\n";
	});
}

# the test's nginx has nothing to serve: the helpers and the forge are it
$t->write_file_expand('nginx.conf', "%%TEST_GLOBALS%%\ndaemon off;\nevents {\n}\n");

$t->run()->plan(13);

for (1 .. 100) {
	last if -S "$d/probe.sock" && -S "$d/plain.sock";
	sleep 0.05;
}

###############################################################################

my $n = 0;

sub rpc {
	my ($sock, $h, $body) = @_;
	$n++;
	$t->write_file("req$n", $json->encode($body));
	my %h = ('Accept' => 'application/json, text/event-stream',
		'Content-Type' => 'application/json', 'X-Bottle-Id' => 'dev', %$h);
	system('curl', '-s', '-o', "$d/b$n", '-D', "$d/h$n", '--unix-socket',
		"$d/$sock.sock", '-X', 'POST', '--max-time', '40',
		(map { ('-H', "$_: $h{$_}") } sort keys %h),
		'--data-binary', "\@$d/req$n", 'http://supervise/') == 0
		or die "curl: $?\n";
	return { body => $t->read_file("b$n"), headers => $t->read_file("h$n") };
}

my %session;

sub connect_forge {
	my ($sock, $url) = @_;
	$session{$sock} //= (rpc($sock, {}, { jsonrpc => '2.0', id => 1,
		method => 'initialize', params => { protocolVersion => '2025-06-18',
		capabilities => {}, clientInfo => { name => 't', version => '1' } } })
		->{headers} =~ /^Mcp-Session-Id: (\S+)/mi)[0];
	my $res = rpc($sock, { 'Mcp-Session-Id' => $session{$sock},
		'MCP-Protocol-Version' => '2025-06-18' }, { jsonrpc => '2.0',
		id => 2, method => 'tools/call', params => { name => 'forge-connect',
		arguments => { url => $url, justification => 'probe' } } });
	my $r = eval { $json->decode($res->{body}) }->{result} // {};
	my $text = $r->{content}[0]{text} // '';
	return { text => $text, error => $r->{isError} ? 1 : 0,
		answer => eval { $json->decode($text) } // {} };
}

sub queued {
	my $c = redis_cli($t, 'ZCARD', 'bottle:proposals:all');
	chomp $c;
	return $c;
}

sub probes {
	my ($from) = @_;
	my @l = @{forge_log($t)};
	return join ' ', map { "$_->{method} $_->{uri} $_->{status}" }
		@l[$from .. $#l];
}

my $URL = "https://$FORGE/";

# Gitea

my $q = queued();
my $from = @{forge_log($t)};
my $c = connect_forge('probe', $URL);
is($c->{answer}{status}, 'pending', 'gitea: probed, queued') or diag($c->{text});
is(probes($from), 'GET /api/v1/version 200', 'gitea: one probe, no token');
is(queued(), $q + 1, 'gitea: one proposal');

# GitHub (Enterprise)

forge_config($t, kind => 'github');
$from = @{forge_log($t)};
$c = connect_forge('probe', $URL);
is($c->{answer}{status}, 'pending', 'github: probed, queued') or diag($c->{text});
like(probes($from), qr/^GET \/api\/v1\/version 40[14] GET \/api\/v3\/meta 200$/,
	'github: Gitea asked first, then GitHub');

# neither: refused at once

forge_config($t, kind => 'none');
$q = queued();
$c = connect_forge('probe', $URL);
is($c->{error}, 1, 'neither: an error');
like($c->{text}, qr/^refused, nothing was queued: \Q$FORGE\E answers as neither Gitea \(GET \/api\/v1\/version\) nor GitHub \(GET \/api\/v3\/meta\)/,
	'neither: says so');
is(queued(), $q, 'neither: nothing queued');

# nothing listening: refused at once

$c = connect_forge('probe', "https://127.0.0.1:$free/");
like($c->{text}, qr/^refused, nothing was queued: 127\.0\.0\.1:\d+ cannot be reached/,
	'unreachable: refused');
is(queued(), $q, 'unreachable: nothing queued');

# an internal address without --forge-probe-allow: not probed, queued

$from = @{forge_log($t)};
$c = connect_forge('plain', $URL);
is($c->{answer}{status}, 'pending', 'internal, not allowed: queued unprobed')
	or diag($c->{text});
is(probes($from), '', 'internal, not allowed: the forge got nothing');
like($t->read_file('plain.log'), qr/forge-connect \Q$FORGE\E: an internal address, not probed/,
	'internal, not allowed: logged');

###############################################################################
