#!/usr/bin/perl

# The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk, in
# t/mcp-client/, installed by scripts/install-deps.sh with `npm ci`)
# against supervise-helper on a TCP port (docs/supervise.md): it connects
# over StreamableHTTPClientTransport, lists the tools, calls each one and
# check-proposal, gets -32602 for an unknown tool, pings and ends its
# session; without X-Bottle-Id it cannot connect, and nothing is queued.
# Then Claude Code's own client (@anthropic-ai/claude-code, an optional
# dependency there): `claude mcp add --transport http` and `claude mcp
# list`, whose health check connects, offline (its home and config in the
# test's directory, nonessential traffic off, any proxy dead).

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP qw//;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $HELPER = $ENV{SUPERVISE_HELPER} // "$FindBin::Bin/../build/supervise-helper";
$HELPER = "$FindBin::Bin/../$HELPER" if $HELPER !~ m!^/! && !-x $HELPER;
my $CLIENT = "$FindBin::Bin/mcp-client";

plan(skip_all => 'build/supervise-helper not built (make supervise)')
	unless -x $HELPER;
plan(skip_all => 'no node_modules in t/mcp-client (npm ci there)')
	unless -d "$CLIENT/node_modules/\@modelcontextprotocol/sdk";

my $t = Test::Nginx->new()->has_daemon('redis-server')
	->has_daemon('redis-cli')->has_daemon('node')->plan(22);
my $d = $t->testdir();
my $json = JSON::PP->new->canonical;

my $r = redis_start($t, port => 8141);

store_put($t,
	{ id => 'alice', token => 'alice-token-0123456789',
		children => { agents => [ 'claude' ] },
		routes => [ { host => 'api.github.com' } ] });
redis_cli($t, 'SADD', 'bottle:forges', 'git.example.org');

my $P = port(8142);

$t->run_daemon(sub {
	open STDIN, '<', '/dev/null';
	open STDOUT, '>>', "$d/helper.stderr";
	open STDERR, '>&', \*STDOUT;
	exec($HELPER, '--listen', "127.0.0.1:$P", '--store', $r->{url},
		'--response-timeout', '0') or die "exec: $!\n";
});
$t->waitforsocket("127.0.0.1:$P") or die "no supervise-helper on $P\n";

sub client {
	my ($bottle) = @_;
	open my $fh, '-|', 'node', "$CLIENT/client.mjs",
		"http://127.0.0.1:$P/mcp", $bottle or die "node: $!\n";
	my @steps = map { $json->decode($_) } grep { /^\{/ } <$fh>;
	close $fh;
	return @steps;
}

sub queued {
	my $c = redis_cli($t, 'ZCARD', 'bottle:proposals:all');
	chomp $c;
	return $c;
}

###############################################################################

my @s = client('-');
like($s[0]{error} // '', qr/unauthorized: no bottle/,
	'no X-Bottle-Id: the SDK cannot connect');
is(queued(), 0, 'no X-Bottle-Id: nothing queued');

@s = client('alice');
my %by = map { $_->{step} => $_ } @s;
my @calls = grep { $_->{step} eq 'call' } @s;

is($by{connect}{server}{name}, 'supervise-helper', 'connect: serverInfo');
is($by{connect}{protocol}, '2025-06-18', 'connect: protocol 2025-06-18');
like($by{connect}{session} // '', qr/^[0-9a-f]{32}$/, 'connect: a session');
like($by{connect}{instructions}, qr/git-gate/, 'connect: the instructions');
is(join(',', @{$by{list}{tools}}), 'egress-allow,egress-block,'
	. 'list-egress-routes,forge-connect,add-repo,launch-bottle,create-repo,'
	. 'check-proposal', 'listTools: the eight tools');
ok($by{list}{schemas}, 'listTools: object input schemas');

like($calls[0]{text}, qr/api\.github\.com/, 'list-egress-routes: the routes');

my @queued = @calls[1 .. 6];
is(scalar(grep { !$_->{isError} && $_->{answer}{status} eq 'pending' }
	@queued), 6, 'six tools queue and answer pending');
is(join(',', map { $_->{answer}{kind} } @queued), 'egress-allow,egress-block,'
	. 'forge-connect,add-repo,launch-bottle,create-repo', 'each of its kind');
ok($calls[7]{isError} && $calls[7]{text} =~ /https/,
	'a refusal: isError with the reason');
is($calls[8]{answer}{status}, 'pending', 'check-proposal: pending');
is($calls[8]{answer}{id}, $queued[5]{answer}{id}, 'check-proposal: that id');
is($by{unknown}{error}, '-32602', 'an unknown tool: -32602');
ok($by{ping}{ok} && $by{done}, 'ping, then the session ends');

is(queued(), 6, 'six proposals in the store');

# Claude Code: mcp add, mcp list (its health check) offline

my $CLAUDE = "$CLIENT/node_modules/.bin/claude";

sub claude {
	my (@args) = @_;
	local %ENV = (%ENV, HOME => "$d/home", CLAUDE_CONFIG_DIR => "$d/home/.claude",
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC => 1,
		DISABLE_TELEMETRY => 1, DISABLE_AUTOUPDATER => 1,
		DISABLE_ERROR_REPORTING => 1,
		HTTPS_PROXY => 'http://127.0.0.1:9', HTTP_PROXY => 'http://127.0.0.1:9',
		NO_PROXY => '127.0.0.1,localhost');
	delete $ENV{ANTHROPIC_API_KEY};
	mkdir "$d/home";
	mkdir "$d/work";
	open my $fh, '-|', "cd '$d/work' && timeout 120 '$CLAUDE' "
		. join(' ', map { "'$_'" } @args) . ' 2>&1' or die "claude: $!\n";
	local $/;
	my $out = <$fh> // '';
	close $fh;
	return $out;
}

SKIP: {
	skip 'no claude in t/mcp-client (optional)', 4 unless -x $CLAUDE;

	like(claude('mcp', 'add', '--transport', 'http', 'supervise',
		"http://127.0.0.1:$P/mcp", '--header', 'X-Bottle-Id: alice'),
		qr/Added HTTP MCP server supervise/, 'claude mcp add --transport http');
	like(claude('mcp', 'list'), qr/^supervise: \S+ \(HTTP\) - \S+ Connected/m,
		'claude mcp list: connected');

	claude('mcp', 'remove', 'supervise');
	claude('mcp', 'add', '--transport', 'http', 'nobody',
		"http://127.0.0.1:$P/mcp");
	my $out = claude('mcp', 'list');
	unlike($out, qr/^nobody: .*Connected/m,
		'claude mcp list: without X-Bottle-Id, not connected');
	is(queued(), 6, 'claude: nothing queued');
}

$t->stop_daemons();
unlike($t->read_file('helper.stderr'),
	qr/AddressSanitizer|runtime error|LeakSanitizer/, 'no sanitizer reports');

###############################################################################
