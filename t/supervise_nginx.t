#!/usr/bin/perl

# supervise-helper behind nginx's `bottle_attribute mcp` (docs/supervise.md,
# docs/directives.md): the agent's identity token as a Bearer token is the
# only way in; the helper is told the bottle by nginx, never by the agent
# (a forged X-Bottle-Id is replaced); no token or a wrong one is nginx's
# 401 and never reaches the helper; the official MCP SDK client works
# through nginx end to end, its proposals attributed to its bottle.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $HELPER = $ENV{SUPERVISE_HELPER} // "$FindBin::Bin/../build/supervise-helper";
$HELPER = "$FindBin::Bin/../$HELPER" if $HELPER !~ m!^/! && !-x $HELPER;
my $CLIENT = "$FindBin::Bin/mcp-client";

plan(skip_all => 'build/supervise-helper not built (make supervise)')
	unless -x $HELPER;

my $t = Test::Nginx->new()->has(qw/http proxy bottle/)
	->has_daemon('redis-server')->has_daemon('redis-cli')
	->has_daemon('curl');
my $d = $t->testdir();
my $json = JSON::PP->new->canonical;

my $RP = port(8151);

$t->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;

bottle_policy redis://127.0.0.1:$RP;

events {
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen 127.0.0.1:%%PORT_8150%%;

        location / {
            bottle_attribute mcp;
            proxy_pass http://unix:%%TESTDIR%%/sv.sock;
            proxy_set_header X-Bottle-Id \$bottle_id;
            proxy_set_header X-Bottle-Request-Id \$request_id;
            proxy_read_timeout 60s;
        }
    }
}

EOF

my $ALICE = 'alice-token-0123456789';
my $BOB = 'bob-token-9876543210xyz';

my $r = redis_start($t, port => $RP);
store_put($t,
	{ id => 'alice', token => $ALICE, children => { agents => [ 'claude' ] },
		routes => [ { host => 'api.github.com' } ] },
	{ id => 'bob', token => $BOB, routes => [] });
redis_cli($t, 'SADD', 'bottle:forges', 'git.example.org');

$t->run_daemon(sub {
	open STDIN, '<', '/dev/null';
	open STDOUT, '>>', "$d/helper.stderr";
	open STDERR, '>&', \*STDOUT;
	exec($HELPER, '--listen', "unix:$d/sv.sock", '--store', $r->{url},
		'--response-timeout', '0', '--log', "$d/helper.log")
		or die "exec: $!\n";
});
for (1 .. 100) { last if -S "$d/sv.sock"; sleep 0.05; }

# the socket is 0660: nginx's workers reach it through its group, as the
# docs say to set it up (as root, the workers are nobody's)
if ($> == 0) {
	my $gid = (getpwnam('nobody'))[3];
	chown(-1, $gid, "$d/sv.sock") or die "chown: $!\n";
	chmod(0711, $d);
}

$t->run()->plan(14);

my $P = port(8150);

# the store's policy read by the gateway first
for (1 .. 100) {
	last if $t->read_file('error.log') =~ /policy store \S+ read:/;
	sleep 0.05;
}

###############################################################################

my $n = 0;

sub post {
	my ($h, $body) = @_;
	$n++;
	my %h = ('Accept' => 'application/json, text/event-stream',
		'Content-Type' => 'application/json', %$h);
	open my $fh, '>', "$d/req$n" or die;
	print $fh $json->encode($body);
	close $fh;
	open $fh, '-|', 'curl', '-s', '-o', "$d/b$n", '-D', "$d/h$n",
		'-w', '%{http_code}', '--max-time', '20',
		(map { ('-H', "$_: $h{$_}") } sort keys %h),
		'--data-binary', "\@$d/req$n", "http://127.0.0.1:$P/"
		or die "curl: $!\n";
	my $status = <$fh> // '';
	close $fh;
	my $res = { status => $status + 0, body => $t->read_file("b$n"),
		headers => $t->read_file("h$n") };
	$res->{json} = eval { $json->decode($res->{body}) };
	return $res;
}

sub queued {
	my $c = redis_cli($t, 'ZCARD', 'bottle:proposals:all');
	chomp $c;
	return $c;
}

my $init = { jsonrpc => '2.0', id => 1, method => 'initialize',
	params => { protocolVersion => '2025-06-18', capabilities => {},
	clientInfo => { name => 't', version => '1' } } };

my $res = post({}, $init);
is($res->{status}, 401, 'no token: nginx answers 401');
like($res->{headers}, qr/^WWW-Authenticate: Bearer/mi, 'no token: a Bearer challenge');
$res = post({ Authorization => 'Bearer not-a-token-of-anyone', 'X-Bottle-Id' => 'alice' },
	$init);
is($res->{status}, 401, 'a wrong token with a forged X-Bottle-Id: 401');
ok(!-s "$d/helper.log" || $t->read_file('helper.log') !~ /refused|proposal/,
	'the helper saw none of them');

# a forged X-Bottle-Id next to bob's token: the call is bob's

$res = post({ Authorization => "Bearer $BOB", 'X-Bottle-Id' => 'alice' }, $init);
is($res->{status}, 200, "bob's token: initialize through nginx");
my ($s) = $res->{headers} =~ /^Mcp-Session-Id: (\S+)/mi;
$res = post({ Authorization => "Bearer $BOB", 'X-Bottle-Id' => 'alice',
	'Mcp-Session-Id' => $s }, { jsonrpc => '2.0', id => 2,
	method => 'tools/call', params => { name => 'egress-block',
	arguments => { host => 'api.github.com', justification => 'forged' } } });
my $answer = eval { $json->decode($res->{json}{result}{content}[0]{text}) } // {};
is($answer->{status}, 'pending', 'a tool call through nginx: queued');
my $p = eval { $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$answer->{id}",
	'json')) } // {};
is($p->{bottle}, 'bob', 'the proposal is the token\'s bottle, not the header\'s');
like($t->read_file('helper.log'),
	qr/proposal \Q$answer->{id}\E bottle=bob tool=egress-block request=[0-9a-f]{32}:/,
	'the helper logs nginx\'s request id');

# the SDK client through nginx

SKIP: {
	skip 'no node_modules in t/mcp-client (npm ci there)', 6
		unless -d "$CLIENT/node_modules/\@modelcontextprotocol/sdk";

	open my $fh, '-|', 'node', "$CLIENT/client.mjs",
		"http://127.0.0.1:$P/mcp", "token=$ALICE" or die "node: $!\n";
	my @steps = map { $json->decode($_) } grep { /^\{/ } <$fh>;
	close $fh;
	my %by = map { $_->{step} => $_ } @steps;
	my @calls = grep { $_->{step} eq 'call' } @steps;

	is($by{connect}{server}{name}, 'supervise-helper', 'SDK: connected through nginx');
	is(scalar @{$by{list}{tools}}, 8, 'SDK: eight tools');
	is(scalar(grep { !$_->{isError} && ($_->{answer}{status} // '') eq 'pending' }
		@calls[1 .. 6]), 6, 'SDK: six tools queued');
	my @of = grep { /\S/ } split /\n/, redis_cli($t, 'ZRANGE',
		'bottle:proposals:of:alice', '0', '-1');
	is(scalar @of, 6, 'SDK: six proposals of alice');
	ok($by{done}, 'SDK: the session ends');

	open $fh, '-|', 'node', "$CLIENT/client.mjs", "http://127.0.0.1:$P/mcp", '-'
		or die "node: $!\n";
	my @none = map { $json->decode($_) } grep { /^\{/ } <$fh>;
	close $fh;
	like($none[0]{error} // '', qr/refused this request \(rule: identity\)/,
		'SDK: without a token, refused by nginx');
}

###############################################################################
