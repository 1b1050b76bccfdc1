#!/usr/bin/perl

# MCP gating through supervise (docs/mcp.md, docs/supervise.md): an agent
# refused a tool asks for it with egress-allow's "mcp" part; the proposal
# is the host's route with the name added to its mcp allow list, bottlectl
# show warns the operator what it allows, and an approval lands it in the
# stored route.  A name on the route's deny list, an unknown kind and an
# ask for nothing new are refused before anything is queued.

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

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $HELPER = $ENV{SUPERVISE_HELPER} // "$FindBin::Bin/../build/supervise-helper";
$HELPER = "$FindBin::Bin/../$HELPER" if $HELPER !~ m!^/! && !-x $HELPER;

plan(skip_all => 'build/supervise-helper not built (make supervise)')
	unless -x $HELPER;

my $t = Test::Nginx->new()->has_daemon('redis-server')
	->has_daemon('redis-cli')->has_daemon('curl')->plan(13);
my $d = $t->testdir();
my $json = JSON::PP->new->canonical;

my $r = redis_start($t, port => 8131);
$ENV{BOTTLE_STORE} = $r->{url};
$ENV{BOTTLE_OPERATOR} = 'op-mcp';

my $ROUTE = { host => 'mcp.example.org', methods => [ 'GET', 'POST' ],
	mcp => { tools => { allow => [ 'echo' ], deny => [ 'admin_*' ] } } };

store_put($t, { id => 'alice', token => 'alice-token-0123456789',
	routes => [ $ROUTE ] });

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

my $n = 0;

sub rpc {
	my ($method, $params, $session) = @_;
	$n++;
	open my $fh, '>', "$d/req$n" or die;
	print $fh $json->encode({ jsonrpc => '2.0', id => $n, method => $method,
		params => $params });
	close $fh;
	my @h = ('-H', 'X-Bottle-Id: alice',
		'-H', 'Accept: application/json, text/event-stream',
		'-H', 'Content-Type: application/json',
		'-H', 'MCP-Protocol-Version: 2025-06-18');
	push @h, '-H', "Mcp-Session-Id: $session" if $session;
	system('curl', '-s', '-o', "$d/b$n", '-D', "$d/h$n", '--max-time', '20',
		'--unix-socket', "$d/sv.sock", @h, '--data-binary', "\@$d/req$n",
		'http://supervise/') == 0 or die "curl\n";
	return ($t->read_file("b$n"), $t->read_file("h$n"));
}

my (undef, $h) = rpc('initialize', { protocolVersion => '2025-06-18',
	capabilities => {}, clientInfo => { name => 't', version => '1' } });
my ($S) = $h =~ /^Mcp-Session-Id: (\S+)/mi;

sub call {
	my ($args) = @_;
	my ($b) = rpc('tools/call', { name => 'egress-allow',
		arguments => { %$args, justification => 'the test' } }, $S);
	my $j = eval { $json->decode($b) } // {};
	my $text = $j->{result}{content}[0]{text} // '';
	return ($text, eval { $json->decode($text) } // {});
}

sub queued {
	my $c = redis_cli($t, 'ZCARD', 'bottle:proposals:all');
	chomp $c;
	return $c;
}

sub stored_route {
	my $b = $json->decode(`$Test::Bottle::BOTTLECTL policy get alice 2>/dev/null`
		|| '{}');
	return (grep { $_->{host} eq 'mcp.example.org' } @{$b->{routes} // []})[0];
}

###############################################################################

my ($text) = call({ host => 'mcp.example.org',
	mcp => { tools => [ 'admin_reset' ] } });
like($text, qr/deny list/, 'a name the route denies: refused');
($text) = call({ host => 'mcp.example.org', mcp => { tool => [ 'x' ] } });
like($text, qr/not tools, resources or prompts/, 'an unknown kind: refused');
($text) = call({ host => 'mcp.example.org', mcp => { tools => [ 'echo' ] } });
like($text, qr/nothing new/, 'nothing new: refused');
($text) = call({ host => 'mcp.example.org', methods => [ 'GET' ],
	mcp => { tools => [ 'x' ] } });
like($text, qr/no route or methods/, 'mcp with methods: refused');
is(queued(), 0, 'nothing queued for those');

my $a;
($text, $a) = call({ host => 'mcp.example.org',
	mcp => { tools => [ 'delete_repo' ], prompts => [ 'greet' ] } });
is($a->{status}, 'pending', 'egress-allow with mcp: queued') or diag($text);

my $p = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$a->{id}",
	'json') || '{}');
is_deeply($p->{args}{mcp}, { tools => { allow => [ 'echo', 'delete_repo' ],
	deny => [ 'admin_*' ] }, prompts => { allow => [ 'greet' ] } },
	'the proposal: the route with the names added to mcp.allow');
is_deeply($p->{args}{methods}, [ 'GET', 'POST' ],
	'the rest of the route as it was');

my $show = `$Test::Bottle::BOTTLECTL show $a->{id} 2>&1`;
like($show, qr/warning: mcp\.example\.org: allows MCP tool "delete_repo", prompt "greet"/,
	'bottlectl show warns what it allows');

system("$Test::Bottle::BOTTLECTL approve $a->{id} >/dev/null 2>&1");
my $route = stored_route();
is_deeply($route && $route->{mcp}{tools}{allow}, [ 'echo', 'delete_repo' ],
	'approved: the tool is in the stored route\'s mcp.allow');
is_deeply($route && $route->{mcp}{prompts}{allow}, [ 'greet' ],
	'approved: the prompt too');

# bottlectl explain says the body is gated and Accept-Encoding stripped

my $ex = `$Test::Bottle::BOTTLECTL explain alice POST https://mcp.example.org/mcp -H 'Accept-Encoding: gzip' 2>&1`;
like($ex, qr/^stripped: Accept-Encoding\n.*^mcp: a POST body is read as JSON-RPC/ms,
	'bottlectl explain: the mcp route');

# a host with no route: a new route, POST included

($text, $a) = call({ host => 'new.example.org',
	mcp => { tools => [ 'search' ] } });
$p = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$a->{id}",
	'json') || '{}');
is_deeply([ $p->{args}{methods}, $p->{args}{mcp} ],
	[ [ 'GET', 'POST', 'DELETE' ], { tools => { allow => [ 'search' ] } } ],
	'no route yet: a new one with POST and the tool') or diag($text);

###############################################################################
