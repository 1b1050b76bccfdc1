#!/usr/bin/perl

# MCP tool gating on the wire (docs/mcp.md): a route with "mcp" in front of
# an MCP server made with the official TypeScript SDK (McpServer,
# StreamableHTTPServerTransport) behind TLS on loopback, answering in JSON
# or in SSE streams, and the SDK's client through the gateway's CONNECT
# front.  Lists come back without what is not allowed; a denied call gets
# a JSON-RPC error naming the rule and reaches nothing; batches and
# malformed JSON-RPC (raw, with curl) are answered without forwarding;
# each call and refusal is journalled; arguments are DLP-scanned.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use Digest::SHA qw/ sha256_hex /;
use JSON::PP;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $CLIENT = "$FindBin::Bin/mcp-client";

plan(skip_all => 'no node_modules in t/mcp-client (npm ci there)')
	unless -d "$CLIENT/node_modules/\@modelcontextprotocol/sdk";

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl bottle/)
	->has(qw/dnsmasq/)->has_daemon('curl')->has_daemon('node')
	->has_daemon('redis-server')->has_daemon('redis-cli');

my $RP = port(8090);

$t->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;

bottle_policy redis://127.0.0.1:$RP/2;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:%%PORT_8080%%;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        bottle_tls_pass unix:%%TESTDIR%%/tls.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;

    upstream bottle_tls {
        bottle_upstream;
    }

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
        }
    }

    server {
        listen unix:%%TESTDIR%%/tls.sock ssl proxy_protocol;
        bottle on;
        bottle_ca %%TESTDIR%%/gwca.crt %%TESTDIR%%/gwca.key;

        location / {
            proxy_pass https://bottle_tls\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_ssl_server_name on;
            proxy_ssl_name \$bottle_host;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate %%TESTDIR%%/upca.crt;
        }
    }
}

EOF

my $TOKEN = 'alice-token-0123456789';
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);
my $T = JSON::PP::true;
my $PJ = port(8443);
my $PS = port(8444);
my $d = $t->testdir();

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'mcp.allowed.test', 'sse.allowed.test',
	'plain.allowed.test');

my $MCP = {
	tools => { allow => [ 'echo', 'ad*' ], deny => [ 'admin_*' ] },
	resources => { allow => [ 'file:///public/*' ] },
	prompts => { allow => [ 'greet' ] },
};

dns_start($t, port => port(8053), hosts => { map { ($_ => '127.0.0.1') }
	qw/mcp.allowed.test sse.allowed.test plain.allowed.test/ });

my $redis = redis_start($t, port => $RP, db => 2);

store_put($t, { id => 'alice', token => $TOKEN, routes => [
	{ host => 'mcp.allowed.test', port => $PJ, internal => $T,
		methods => [ 'GET', 'POST', 'PUT', 'DELETE' ], mcp => $MCP,
		dlp => { on_match => 'block' } },
	{ host => 'sse.allowed.test', port => $PS, internal => $T,
		methods => [ 'GET', 'POST', 'DELETE' ], mcp => $MCP },
	{ host => 'plain.allowed.test', port => $PJ, internal => $T,
		methods => [ 'GET', 'POST', 'DELETE' ] },
] });

for my $s ([ $PJ, 'json' ], [ $PS, 'sse' ]) {
	$t->run_daemon('node', "$CLIENT/gate_server.mjs", $s->[0],
		$up->{cert}, $up->{key}, "$d/server-$s->[1].jsonl", $s->[1]);
	$t->waitforsocket("127.0.0.1:$s->[0]") or die "no $s->[1] server\n";
}

$t->run()->plan(63);

###############################################################################

my $PROXY = 'http://agent:' . $TOKEN . '@127.0.0.1:' . port(8080);

sub server_log {
	my ($mode) = @_;
	my @l;
	open my $fh, '<', "$d/server-$mode.jsonl" or return [];
	while (<$fh>) {
		push @l, decode_json($_);
	}
	return \@l;
}

sub sdk {
	my ($host, $port) = @_;
	open my $fh, '-|', 'node', "$CLIENT/gate_client.mjs",
		"https://$host:$port/mcp", '127.0.0.1:' . port(8080), $TOKEN,
		$gwca->{cert} or die "node: $!\n";
	my %r;
	while (<$fh>) {
		my $o = eval { decode_json($_) } or next;
		$r{$o->{step}} = $o;
	}
	close $fh;
	return \%r;
}

sub curl {
	my ($host, $port, $body, @args) = @_;
	my $path = '/mcp';
	$path = shift @args if @args && $args[0] =~ m!^/!;
	open my $fh, '-|', 'curl', '-s', '-S', '-i', '--max-time', '10',
		'--suppress-connect-headers',
		'--proxy', $PROXY, '--cacert', $gwca->{cert},
		'-H', 'Content-Type: application/json',
		'-H', 'Accept: application/json, text/event-stream',
		'--data-binary', $body, @args, "https://$host:$port$path"
		or die "curl: $!";
	local $/;
	my $out = <$fh>;
	close $fh;
	return $out // '';
}

sub json_body {
	my ($r) = @_;
	my ($b) = $r =~ /\r\n\r\n(.*)\z/s;
	return eval { decode_json($b // '') };
}

sub events {
	my $out = redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
	return [ grep { $_ } map { eval { decode_json($_) } }
		grep { /^\{/ } split /\n/, $out ];
}

sub wait_events {
	my ($type, $n) = @_;
	my $deadline = time() + 5;
	my @e;
	while (time() < $deadline) {
		@e = grep { $_->{type} eq $type } @{events()};
		last if @e >= $n;
		sleep 0.1;
	}
	return \@e;
}

sub wait_log {
	my ($re) = @_;
	for (1 .. 50) {
		return 1 if $t->read_file('error.log') =~ $re;
		sleep 0.1;
	}
	return 0;
}

###############################################################################

# the SDK's client, JSON answers and SSE streams

for my $c ([ 'mcp.allowed.test', $PJ, 'json' ],
	[ 'sse.allowed.test', $PS, 'sse' ])
{
	my ($host, $port, $mode) = @$c;
	my $r = sdk($host, $port);
	diag(encode_json($r)) unless $r->{connect}{server};

	is($r->{connect}{server}{name}, 'gate-test-server',
		"$mode: the SDK client initialized through the gateway");
	is_deeply($r->{tools}{names}, [ 'echo', 'add' ],
		"$mode: tools/list without the tools not allowed");
	is_deeply($r->{resources}{names}, [ 'file:///public/readme' ],
		"$mode: resources/list filtered");
	is_deeply($r->{templates}{names}, [ 'file:///public/docs/{name}' ],
		"$mode: resources/templates/list filtered");
	is_deeply($r->{prompts}{names}, [ 'greet' ],
		"$mode: prompts/list filtered");
	is($r->{'call echo'}{content}[0]{text}, 'echo:hi',
		"$mode: an allowed tool call answered");
	like($r->{'call delete_repo'}{error},
		qr/tool "delete_repo" is not allowed.*rule: mcp_tool_denied/,
		"$mode: a tool not allowed: the client shows the rule");
	like($r->{'call admin_reset'}{error}, qr/rule: mcp_tool_denied/,
		"$mode: deny wins over an allow glob");
	like($r->{'read keys'}{error}, qr/rule: mcp_resource_denied/,
		"$mode: a resource not allowed");
	like($r->{'prompt jailbreak'}{error}, qr/rule: mcp_prompt_denied/,
		"$mode: a prompt not allowed");
	is($r->{'prompt greet'}{messages}[0]{content}{text}, 'greet',
		"$mode: an allowed prompt");

	my $log = server_log($mode);
	my @served = map { $_->{name} } grep { $_->{served} } @$log;
	is_deeply(\@served, [ 'echo', 'file:///public/readme', 'greet' ],
		"$mode: the server served only what was allowed");
	ok(!(grep { ($_->{body} // '')
			=~ /delete_repo|admin_reset|secret\/keys|jailbreak/ } @$log),
		"$mode: no refused call reached the server");
	ok(!(grep { defined $_->{headers}{'accept-encoding'} } @$log),
		"$mode: no Accept-Encoding asked of the server");
}

# the same server on a route without mcp: everything listed

my $r = curl('plain.allowed.test', $PJ,
	'{"jsonrpc":"2.0","id":7,"method":"tools/list"}');
my $j = json_body($r);
is(scalar @{$j->{result}{tools} // []}, 4, 'no mcp field: the whole list');

# a batch with a refused call: answered whole, nothing forwarded

my $before = scalar @{server_log('json')};

$r = curl('mcp.allowed.test', $PJ, encode_json([
	{ jsonrpc => '2.0', id => 1, method => 'tools/call',
		params => { name => 'echo', arguments => { text => 'a' } } },
	{ jsonrpc => '2.0', id => 'two', method => 'tools/call',
		params => { name => 'delete_repo', arguments => {} } },
	{ jsonrpc => '2.0', method => 'notifications/progress',
		params => { progressToken => 1, progress => 1 } },
]));
like($r, qr/^HTTP\/1\.1 200 /, 'batch: HTTP 200');
$j = json_body($r);
is(ref $j, 'ARRAY', 'batch: answered with a batch');
is(scalar @{$j // []}, 2,
	'batch: one answer per request, none for a notification');
is($j->[0]{id}, 1, 'batch: the allowed call answered with its id');
like($j->[0]{error}{message}, qr/rule: mcp_batch_refused/,
	'batch: the allowed call was not forwarded either');
is($j->[1]{id}, 'two', 'batch: the refused call answered with its id');
is($j->[1]{error}{code}, -32001, 'batch: the refusal\'s code');
like($j->[1]{error}{message}, qr/rule: mcp_tool_denied/,
	'batch: the refusal names the rule');

# malformed JSON-RPC: a clear error, nothing forwarded

$r = curl('mcp.allowed.test', $PJ, '{"jsonrpc":"2.0","id":1,"method":');
like($r, qr/^HTTP\/1\.1 400 .*rule: mcp_malformed/s, 'not JSON: 400');
$r = curl('mcp.allowed.test', $PJ,
	'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
	. '"name":"delete_repo"}}');
like($r, qr/^HTTP\/1\.1 400 .*mcp_malformed/s, 'duplicate keys: 400');
$r = curl('mcp.allowed.test', $PJ,
	'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}');
like($r, qr/^HTTP\/1\.1 400 .*must be a request/s,
	'a call without an id: 400');
$r = curl('mcp.allowed.test', $PJ,
	'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}');
like($r, qr/^HTTP\/1\.1 400 .*\\"id\\" must be/s, 'an object id: 400');
$r = curl('mcp.allowed.test', $PJ, '{"jsonrpc":"2.0","id":1,"method":'
	. '"tools/call","params":{"name":"delete_repo"}}', '-X', 'PUT');
like($r, qr/^HTTP\/1\.1 200 .*rule: mcp_tool_denied/s,
	'a call in a PUT body is gated too');
is(scalar @{server_log('json')}, $before, 'nothing of these was forwarded');

# the arguments are DLP-scanned as any body

$r = curl('mcp.allowed.test', $PJ, encode_json(
	{ jsonrpc => '2.0', id => 3, method => 'tools/call',
		params => { name => 'echo', arguments => { text => $GHP } } }));
like($r, qr/^HTTP\/1\.1 403 /, 'a secret in the arguments: refused');
ok(!(grep { ($_->{body} // '') =~ /\Q$GHP\E/ } @{server_log('json')}),
	'the secret did not reach the server');

# responses that cannot be read are never passed unfiltered

my $LIST = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';

$r = curl('mcp.allowed.test', $PJ, $LIST, '/gzip');
like($r, qr/^HTTP\/1\.1 502 .*rule: mcp_response/s,
	'a gzip\'d response: 502, a JSON-RPC error');
unlike($r, qr/delete_repo/, 'a gzip\'d response: nothing of it passed');

$r = curl('mcp.allowed.test', $PJ, $LIST, '/notjson');
like($r, qr/rule: mcp_response/, 'a response that is not JSON: an error');
unlike($r, qr/delete_repo/, 'a response that is not JSON: not passed');

# the 4 MiB bound on a JSON answer held whole (docs/mcp.md): 4,194,304
# bytes are read and filtered, one byte more is replaced by an error

$r = curl('mcp.allowed.test', $PJ, $LIST, '/big-json-4194304');
like($r, qr/^HTTP\/1\.1 200 .*\{"name":"echo"\}\]/s,
	'a JSON answer of 4 MiB: passed, filtered');
unlike($r, qr/delete_repo|yyyy/, 'a JSON answer of 4 MiB: the tool not '
	. 'allowed taken out');
$r = curl('mcp.allowed.test', $PJ, $LIST, '/big-json-4194305');
like($r, qr/rule: mcp_response/, 'a JSON answer of 4 MiB and a byte: an '
	. 'error');
unlike($r, qr/delete_repo|yyyy/, 'a JSON answer of 4 MiB and a byte: '
	. 'nothing of it passed');

$r = curl('sse.allowed.test', $PS, $LIST, '/big-sse');
like($r, qr/data: \{"jsonrpc":"2.0","id":1,"result":\{"tools":\[\{"name":"echo"\}\]\}\}/,
	'sse: the first event passed, filtered');
unlike($r, qr/delete_repo|xxxx/, 'sse: the event over 1 MiB did not pass');
ok(wait_log(qr/bottle mcp: .* larger than 1 MiB: the stream is closed/),
	'sse: the stream was closed, logged');

# the HTTP+SSE transport's GET stream: not tied to a request, every list
# in a result filtered; its endpoint event passes

$r = curl('sse.allowed.test', $PS, '', '/old-sse', '-G');
like($r, qr/^event: endpoint\ndata: \/messages\?sessionId=s1\n\n/m,
	'old transport: the endpoint event passed');
like($r, qr/^event: message\ndata: \{"jsonrpc":"2.0","id":9,"result":\{"tools":\[\{"name":"echo"\}\]\}\}\n\n/m,
	'old transport: a list on the GET stream filtered');

# the journal

my $calls = wait_events('mcp.call', 2);
my ($echo) = grep { $_->{name} eq 'echo' } @$calls;
ok($echo, 'journal: mcp.call of echo');
is($echo && $echo->{digest}, 'sha256:' . sha256_hex('{"text":"hi"}'),
	'journal: the digest of the arguments\' canonical bytes');
is($echo && "$echo->{bottle} $echo->{host} $echo->{kind}",
	'alice mcp.allowed.test tool', 'journal: bottle, server, kind');

my $ref = wait_events('mcp.refusal', 8);
my ($del) = grep { $_->{name} eq 'delete_repo' } @$ref;
is($del && $del->{rule}, 'mcp_tool_denied', 'journal: mcp.refusal');
is($del && $del->{digest}, 'sha256:' . sha256_hex('{"text":"all"}'),
	'journal: the refused call\'s digest');

###############################################################################
