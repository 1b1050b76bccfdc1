#!/usr/bin/perl

# Tests for the operator page (docs/supervise.md, "Operator page"):
# build/supervise-helper with --operator-credential, against a Redis of the
# test's own.  The API with curl: no credential, a wrong
# one, the custom header, a JSON body, a foreign Origin, GET on a POST
# endpoint, no plain allow (403), a bad grant (400), an unknown proposal
# (404), a body too large (413), a credential file others can read.  The
# page in Debian's headless chromium (t/operator/page.js, playwright-core):
# 401 without the credential; a proposal queued after the page loaded
# appears without a reload; approve with a note, deny, modify, a bad
# modify; an answer from bottlectl first makes the page's 409; the agent's
# justification shown as text, no script run.  Then the store: states,
# the bottle's policy, decision.resolved and decision.late in the journal.
#
# SUPERVISE_HELPER=path runs another build (build-asan/supervise-helper,
# the default when TEST_NGINX_MODULE is build-asan's, as in make
# test-asan); its log is stderr.log, which the "no sanitizer errors" test
# reads.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP qw//;
use POSIX qw//;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $REPO = "$FindBin::Bin/..";
# make test-asan names build-asan's module: then build-asan's helper
my $OP = $ENV{SUPERVISE_HELPER}
	// (($ENV{TEST_NGINX_MODULE} // '') =~ m!^build-asan/!
	? "$REPO/build-asan/supervise-helper" : "$REPO/build/supervise-helper");
$OP = "$REPO/$OP" if $OP !~ m!^/!;
my $BOTTLECTL = $ENV{BOTTLECTL} // "$REPO/build/bottlectl";
$BOTTLECTL = "$REPO/$BOTTLECTL" if $BOTTLECTL !~ m!^/!;
my $CHROMIUM = $ENV{CHROMIUM} // '/usr/bin/chromium';

plan(skip_all => "$OP not built (make supervise)") unless -x $OP;
plan(skip_all => "$BOTTLECTL not built (make ctl)") unless -x $BOTTLECTL;
plan(skip_all => 'no curl') unless `curl --version 2>/dev/null`;
plan(skip_all => "no $CHROMIUM (apt-get install chromium)")
	unless -x $CHROMIUM;
plan(skip_all => 'no playwright-core (npm ci in t/operator)')
	unless -d "$FindBin::Bin/operator/node_modules/playwright-core";

my $t = Test::Nginx->new()->has_daemon('redis-server')
	->has_daemon('redis-cli')->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)->plan(164);
my $d = $t->testdir();

my $json = JSON::PP->new->canonical;
my $PASSWORD = 'op-s3cret-' . join('', map { int(rand(10)) } 1 .. 12);

my $r = redis_start($t, port => 8101);
my $FORGE_TOKEN = 'forge-' . 'page-token-5ca1ab1e';
my $forge = forge_start($t, port => 8103, token => $FORGE_TOKEN);
my $FORGE = "127.0.0.1:$forge->{port}";
$ENV{BOTTLE_STORE} = $r->{url};
$ENV{BOTTLE_OPERATOR} = 'op-test';
$ENV{BOTTLECTL} = $BOTTLECTL;

store_put($t, { id => 'alice', token => 'alice-token-0123456789',
	egress_tokens => { GH => 'ghp_s3cr3t-value-0001' },
	routes => [ { host => 'example.org' },
		{ host => 'api.github.com', methods => [ 'GET', 'POST' ],
		  auth => { type => 'bearer', value => 'secret:GH' } } ] });
store_put($t, { id => 'bob', token => 'bob-token-0123456789abc',
	routes => [ { host => 'bob.example' } ] });

# the credential: its first line; others may not read it

$t->write_file('cred', "$PASSWORD\nignored second line\n");
chmod 0644, "$d/cred";

my $port = port(8102);
my $base = "http://127.0.0.1:$port";

my @helper = ($OP, '--listen', "unix:$d/mcp.sock", '--store', $r->{url},
	'--operator-credential', "$d/cred", '--operator-listen',
	"127.0.0.1:$port");

my $out = `@helper 2>&1`;
isnt($? >> 8, 0, 'credential readable by others: refuses to start');
like($out, qr/credential '.*cred': readable or writable by group or others \(mode 644\)/,
	'credential readable by others: says why');

chmod 0600, "$d/cred";

$t->run_daemon(sub {
	open STDERR, '>>', "$d/stderr.log" or die;
	open STDOUT, '>&', \*STDERR or die;
	exec(@helper) or die "exec: $!";
});
$t->waitforsocket("127.0.0.1:$port") or die "no operator page on $port\n";

# curl(@args): { status, headers, body }

sub curl {
	my (@args) = @_;
	my $hfile = "$d/curl.h";
	open my $fh, '-|', 'curl', '-s', '-o', '-', '-D', $hfile,
		'--max-time', '10', @args or die "curl: $!\n";
	local $/;
	my $body = <$fh> // '';
	close $fh;
	my $h = $t->read_file('curl.h');
	my ($status) = $h =~ m!^HTTP/\S+ (\d+)!;
	return { status => $status // 0, headers => $h, body => $body };
}

sub auth { return ('-u', "operator:$PASSWORD", @_); }

sub post {
	my ($path, $body, @more) = @_;
	return curl(auth('-X', 'POST', '-H', 'Content-Type: application/json',
		'-H', 'X-Bottle-Operator: 1', @more,
		'--data-binary', $json->encode($body), "$base$path"));
}

sub propose {
	my ($bottle, $kind, $args, $why) = @_;
	open my $fh, '-|', $BOTTLECTL, 'propose', $bottle, $kind,
		$json->encode($args), '--justification', $why // 'test'
		or die "bottlectl: $!\n";
	my $id = <$fh> // '';
	close $fh;
	chomp $id;
	die "propose $kind failed\n" unless $id;
	return $id;
}

sub state_of {
	my ($id) = @_;
	my $s = redis_cli($t, 'HGET', "bottle:proposal:$id", 'state');
	chomp $s;
	return $s;
}

sub events {
	my ($type, $id) = @_;
	return grep { $_->{type} eq $type
			&& (!defined $id || ($_->{correlation_id} // '') eq $id) }
		map { $json->decode($_) }
		grep { /^\{/ } split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit',
			'-', '+');
}

###############################################################################
# the API

my $res = curl("$base/");
is($res->{status}, 401, 'no credential: 401');
like($res->{headers}, qr/^WWW-Authenticate: Basic realm="bottle operator"/mi,
	'no credential: WWW-Authenticate');
unlike($res->{body}, qr/<html/i, 'no credential: no page');

$res = curl('-u', 'operator:wrong', "$base/");
is($res->{status}, 401, 'wrong password: 401');
$res = curl('-u', "admin:$PASSWORD", "$base/api/proposals");
is($res->{status}, 401, 'wrong user: 401');
$res = curl('-u', "operator:${PASSWORD}x", "$base/api/proposals");
is($res->{status}, 401, 'a longer password: 401');

$res = curl(auth("$base/"));
is($res->{status}, 200, 'the page: 200');
like($res->{headers}, qr/^Content-Security-Policy: default-src 'none'; script-src 'self';/mi,
	'the page: a strict CSP');
unlike($res->{headers}, qr/unsafe-inline|unsafe-eval/, 'the page: no unsafe-*');
unlike($res->{body}, qr/<script>|\son\w+=/i, 'the page: no inline script or handler');
$res = curl(auth("$base/app.js"));
like($res->{headers}, qr/^Content-Type: text\/javascript/mi, 'app.js: served');
unlike($res->{body}, qr/innerHTML|outerHTML|insertAdjacentHTML|document\.write/,
	'app.js: never writes markup');

$res = curl(auth("$base/api/proposals"));
is($res->{status}, 200, 'list: 200');
is_deeply($json->decode($res->{body})->{pending}, [], 'list: nothing pending');

my $a1 = propose('alice', 'egress-allow', { host => 'api.example.com' }, 'api');

$res = curl(auth("$base/api/proposals/$a1"));
my $show = eval { $json->decode($res->{body}) } // {};
is($show->{state}, 'pending', 'show: pending');
like($show->{diff} // '', qr/^\+ +"host": "api\.example\.com"/m, 'show: the diff');
unlike($show->{diff} // '', qr/ghp_s3cr3t/, 'show: no secret in the diff');

$res = curl(auth('-X', 'POST', '-H', 'Content-Type: application/json',
	'--data-binary', '{}', "$base/api/proposals/$a1/approve"));
is($res->{status}, 403, 'no custom header: 403');
like($res->{body}, qr/X-Bottle-Operator: 1/, 'no custom header: says which');

$res = curl(auth('-X', 'POST', '-H', 'X-Bottle-Operator: 1',
	'-H', 'Content-Type: text/plain', '--data-binary', '{}',
	"$base/api/proposals/$a1/approve"));
is($res->{status}, 403, 'not JSON: 403');

$res = post("/api/proposals/$a1/approve", {}, '-H', 'Origin: http://evil.example');
is($res->{status}, 403, 'a foreign Origin: 403');
$res = post("/api/proposals/$a1/approve", {}, '-H', 'Sec-Fetch-Site: cross-site');
is($res->{status}, 403, 'a cross-site fetch: 403');
is(state_of($a1), 'pending', 'refused requests: still pending');

$res = curl(auth("$base/api/proposals/$a1/approve"));
is($res->{status}, 405, 'GET on a POST endpoint: 405');
like($res->{headers}, qr/^Allow: POST/mi, 'GET on a POST endpoint: Allow: POST');
$res = curl(auth('-X', 'POST', '-H', 'X-Bottle-Operator: 1',
	"$base/api/proposals"));
is($res->{status}, 405, 'POST on a GET endpoint: 405');

$res = post('/api/proposals/1234-abcdef01/approve', {});
is($res->{status}, 404, 'an unknown proposal: 404');

$res = curl(auth('-X', 'POST', '-H', 'Content-Type: application/json',
	'-H', 'X-Bottle-Operator: 1', '--data-binary',
	$json->encode({ note => 'x' x 70000 }), "$base/api/proposals/$a1/deny"));
is($res->{status}, 413, 'a body over 64 KiB: 413');

$res = post("/api/proposals/$a1/modify", { note => 'n' });
is($res->{status}, 400, 'modify without a grant: 400');

my $repo = propose('alice', 'add-repo',
	{ repo => 'git.example/acme/w', write => JSON::PP::true }, 'repo');
$res = post("/api/proposals/$repo/approve", { note => 'plain' });
is($res->{status}, 403, 'no plain allow: 403');
like($res->{body}, qr/never plainly: grant it with modify/, 'no plain allow: says what instead');
$res = post("/api/proposals/$repo/modify",
	{ grant => { repo => 'git.example/acme/other' } });
is($res->{status}, 400, 'a grant of another repo: 400');
$res = post("/api/proposals/$repo/modify",
	{ grant => { repo => 'git.example/acme/w' } });
is($res->{status}, 200, 'a read-only grant of the repo asked for: 200')
	or diag($res->{body});
is_deeply($json->decode(redis_cli($t, 'HGET', 'bottle:policy:alice',
	'json'))->{repos}, [ 'git.example/acme/w' ],
	"a read-only grant: in the bottle's repos");
is(state_of($repo), 'modified', 'add-repo: answered');

$res = post("/api/proposals/$a1/approve",
	{ note => 'curl ok', operator => 'op-curl' },
	'-H', "Origin: http://127.0.0.1:$port");
is($res->{status}, 200, 'approve with the same Origin: 200');
is(eval { $json->decode($res->{body})->{state} }, 'approved', 'approve: state');
$res = post("/api/proposals/$a1/deny", { operator => 'op-late' });
is($res->{status}, 409, 'a later answer: 409');
like($res->{body}, qr/answered already: approve by op-curl/, 'a later answer: who won');

###############################################################################
# what an approval changes: the diff and its warnings, one text for the page
# and bottlectl show (lib/bottle_warn.c); a modify previewed

my $gh = propose('alice', 'egress-allow',
	{ host => 'api.github.com', methods => [ 'GET', 'POST', 'DELETE' ] },
	'need DELETE too');
$res = curl(auth("$base/api/proposals/$gh"));
$show = eval { $json->decode($res->{body}) } // {};
is_deeply($show->{warnings}, [
	'api.github.com: removes the credential the gateway injects (auth '
	. 'bearer secret:GH): requests go out without it',
	'api.github.com: widens methods: adds DELETE (was GET, POST)' ],
	'show: the warnings of dropping auth and adding DELETE');
like($show->{change} // '', qr/\Aapproving it changes the bottle's policy:\nwarning: api\.github\.com: removes the credential.*^- +"auth": \{/ms,
	'show: the change text, warnings first, then the diff dropping auth');
my $cli = `$BOTTLECTL show $gh`;
my ($cli_change) = $cli =~ /\n\n(approving it .*)\z/s;
is($cli_change, $show->{change}, 'bottlectl show prints the same text');
like($cli, qr/^warning: api\.github\.com: widens methods: adds DELETE \(was GET, POST\)$/m,
	'bottlectl show: the warning line');

$res = post("/api/proposals/$gh/preview", { grant => { host => 'api.github.com',
	methods => [ 'GET', 'POST', 'DELETE' ],
	auth => { type => 'bearer', value => 'secret:GH' } } });
is($res->{status} . ' ' . state_of($gh), '200 pending',
	'preview: 200, nothing decided');
my $pv = eval { $json->decode($res->{body}) } // {};
is_deeply($pv->{warnings}, [ 'api.github.com: widens methods: adds DELETE '
	. '(was GET, POST)' ], 'preview: the edited route keeps auth');
like($pv->{change} // '', qr/\Amodifying it so changes the bottle's policy:/,
	'preview: says it is the modified change');
ok(($pv->{diff} // '') =~ /^\+ +"DELETE"/m && $pv->{diff} !~ /"auth"/,
	'preview: the diff adds DELETE, auth not in it');
$res = post("/api/proposals/$gh/preview", { grant => { methods => [ 'GET' ] } });
is($res->{status}, 400, 'preview of a grant without a host: 400');
$res = post("/api/proposals/$gh/preview", { grant => { host => 'api.github.com',
	methods => [ 'FETCH' ] } });
is($res->{status}, 400, 'preview of a route the parser refuses: 400');
like($res->{body}, qr/would be invalid/, 'preview: the parser\'s message');
$res = curl(auth('-X', 'POST', '-H', 'Content-Type: application/json',
	'--data-binary', '{"grant":{"host":"x.example"}}',
	"$base/api/proposals/$gh/preview"));
is($res->{status}, 403, 'preview without the custom header: 403');
$res = curl(auth("$base/api/proposals/$gh/preview"));
is($res->{status}, 405, 'GET preview: 405');

my $pt = propose('alice', 'egress-allow',
	{ host => 'npm.example', passthrough => JSON::PP::true }, 'npm');
$res = curl(auth("$base/api/proposals/$pt"));
like(eval { $json->decode($res->{body})->{warnings}[0] } // '',
	qr/^npm\.example: turns on passthrough/, 'show: passthrough warned');
my $wr = propose('alice', 'add-repo',
	{ repo => 'git.example/acme/x', write => JSON::PP::true }, 'push');
$res = post("/api/proposals/$wr/preview",
	{ grant => { repo => 'git.example/acme/x:write' } });
is_deeply(eval { $json->decode($res->{body})->{warnings} },
	[ 'git.example/acme/x: grants write: the bottle may push to it' ],
	'preview of a write grant: warned');
$res = post("/api/proposals/$wr/preview",
	{ grant => { repo => 'git.example/acme/x' } });
is_deeply(eval { $json->decode($res->{body})->{warnings} }, [],
	'preview of a read-only grant: no warning');
$res = post("/api/proposals/$gh/deny", {});
$res = post("/api/proposals/$pt/deny", {});
$res = post("/api/proposals/$wr/deny", {});

# the list: filters and pages

$res = curl(auth("$base/api/proposals?kind=egress-allow&bottle=alice"));
my $ls = eval { $json->decode($res->{body}) } // {};
is($ls->{total}, 0, 'list filtered: nothing pending of that kind');
$res = curl(auth("$base/api/proposals?kind=bogus"));
is($res->{status}, 400, 'list: an unknown kind: 400');
$res = curl(auth("$base/api/proposals?limit=0"));
is($res->{status}, 400, 'list: limit 0: 400');
$res = curl(auth("$base/api/proposals?limit=501"));
is($res->{status}, 400, 'list: limit over 500: 400');

###############################################################################
# the page, in chromium

$ENV{OP_URL} = "$base/";
$ENV{OP_PASSWORD} = $PASSWORD;
$ENV{FORGE_URL} = $forge->{url};
$ENV{FORGE_TOKEN} = $FORGE_TOKEN;
$ENV{CHROMIUM} = $CHROMIUM;
$ENV{HOME} = $d;    # chromium's profile and crash dirs
$ENV{REDIS_PORT} = $r->{port};
$ENV{SHOTS} = $ENV{OPERATOR_SHOTS} // $d;   # screenshots, to look at

my $raw = `node '$FindBin::Bin/operator/page.js' 2>>'$d/node.log'`;
my $pg = eval { $json->decode($raw) } // { errors => [ "no JSON: $raw" ] };

is_deeply($pg->{errors}, [], 'page: no errors') or diag($t->read_file('node.log'));
is($pg->{anon_status}, 401, 'page without the credential: 401');
like($pg->{anon_auth} // '', qr/^Basic realm=/, 'page without the credential: a Basic challenge');
unlike($pg->{anon_body} // '', qr/Pending proposals/, 'page without the credential: no page');
is($pg->{status}, 200, 'page with the credential: 200');
like($pg->{csp} // '', qr/script-src 'self'/, 'page: CSP');

ok($pg->{p1_seen}, 'a proposal queued after load appears');
ok($pg->{no_reload}, 'it appears without a reload');
is($pg->{p1_justification}, 'read the docs', 'the justification shown');
is("$pg->{p1_kind} $pg->{p1_bottle}", 'egress-allow alice', 'its kind and bottle shown');
is($pg->{p1_summary}, 'one.example GET', 'its summary shown');
like($pg->{p1_age} // '', qr/^\d+s$/, 'its age shown');

like($pg->{p1_log} // '', qr/\Q$pg->{p1}\E approved: bottle alice version \d+/,
	'approve: the page says so');
is(state_of($pg->{p1}), 'approved', 'approve: state approved');
my ($ev) = events('decision.resolved', $pg->{p1});
is($ev && $ev->{operator_notes}, 'page note 1', 'approve: decision.resolved has the note');
is($ev && $ev->{producer}, 'operator-page', 'approve: produced by the page');
like($ev && $ev->{'untrusted.diff'} // '', qr/^\+ +"host": "one\.example"/m,
	'approve: decision.resolved has the diff');
my $pol = $json->decode(redis_cli($t, 'HGET', 'bottle:policy:alice', 'json'));
ok((grep { $_->{host} eq 'one.example' } @{$pol->{routes}}),
	'approve: the route is in the stored policy');

is(state_of($pg->{p2}), 'denied', 'deny: state denied');
($ev) = events('decision.resolved', $pg->{p2});
is($ev && $ev->{operator_notes}, 'no need', 'deny: the note');

like($pg->{p3_template} // '', qr/"POST"/, "modify: starts from the agent's route");
is(state_of($pg->{p3}), 'modified', 'modify: state modified');
my ($r3) = grep { $_->{host} eq 'three.example' } @{$json->decode(
	redis_cli($t, 'HGET', 'bottle:policy:alice', 'json'))->{routes}};
is_deeply($r3 && $r3->{methods}, [ 'GET' ], "modify: the operator's route stored");

like($pg->{p3b_log} // '', qr/^400 .*unknown field "colour"/, 'a bad modify: 400 with the reason');
is(state_of($pg->{p3b}), 'pending', 'a bad modify: still pending');

like($pg->{p4_cli} // '', qr/approved/, 'bottlectl answered first');
like($pg->{p4_result} // '', qr/^409 .*answered already: approve by op-cli/,
	'the page gets 409 and says who won');
is(state_of($pg->{p4}), 'approved', "409: bottlectl's answer stands");
my ($late) = events('decision.late', $pg->{p4});
is($late && $late->{operator_action}, 'deny', '409: decision.late journalled');

is($pg->{p5_text}, $pg->{xss}, 'the markup in a justification is shown as text');
is($pg->{p5_children}, 0, 'no element made from it');
is($pg->{p5_imgs}, 0, 'no image on the page');
ok(defined $pg->{xss_ran} && !$pg->{xss_ran}, 'no script ran');
is($pg->{dialogs}, 0, 'no dialog opened');

is($pg->{p6_approve}, 0, 'add-repo: no Approve button');
is($pg->{p6_grant}, 1, 'add-repo: a Grant button');
like($pg->{p1_row} // '', qr/approved.*egress-allow.*alice.*page note 1/,
	'recent decisions: the answer listed');

# Connect…, Create, Launch…

is($pg->{p7_approve}, 0, 'forge-connect: no Approve button');
is($pg->{p7_token_type}, 'password', 'Connect…: the token is a password field');
like($pg->{p7_fail} // '', qr/^502 .*the forge answered 401: Bad credentials/,
	'Connect… with a wrong token: 502, the forge\'s answer');
is($pg->{p7_token_after}, '', 'Connect…: the token field emptied once sent');
like($pg->{p7_log} // '', qr/\Q$pg->{p7}\E modified/, 'Connect…: modified');
is(state_of($pg->{p7}), 'modified', 'forge-connect: state modified');
is(redis_cli($t, 'HGET', "bottle:forge:$FORGE", 'token'), "$FORGE_TOKEN\n",
	'Connect…: the forge of the proposal connected with the token');
my $dec = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$pg->{p7}",
	'decision'));
is($json->encode($dec->{forge}), $json->encode({ account => 'forge-user',
	forge => $FORGE }), 'Connect…: the decision names the forge and account');
unlike($pg->{p7_html} // '', qr/\Q$FORGE_TOKEN\E/, 'Connect…: the token not on the page');

is($pg->{p8_approve}, 0, 'create-repo: no Approve button');
like($pg->{p8_log} // '', qr/\Q$pg->{p8}\E modified: bottle alice version \d+/,
	'Create: modified, a new policy version');
ok(-d "$forge->{root}/forge-user/from-page.git", 'Create: the forge has the repo');
$pol = $json->decode(redis_cli($t, 'HGET', 'bottle:policy:alice', 'json'));
ok((grep { $_ eq "$FORGE/forge-user/from-page:write" } @{$pol->{repos} || []}),
	'Create: granted with write');

is($pg->{p9_label}, 'Launch…', 'launch-bottle: a Launch… button');
is($pg->{p9_template}, '{"bottles":["base","extra"]}',
	'Launch…: starts from the bottles asked for');
like($pg->{p9_log} // '', qr/\Q$pg->{p9}\E modified/, 'Launch…: modified');
$dec = $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$pg->{p9}",
	'decision'));
is_deeply($dec->{launch} && $dec->{launch}{bottles}, [ 'base' ],
	'Launch…: the decision\'s launch spec, trimmed');

# the issue's case on the page

like($pg->{g1_head} // '', qr/^approving it changes the bottle's policy:/,
	'card: the change shown without a click');
like(join("\n", @{$pg->{g1_warnings} || []}),
	qr/^api\.github\.com: removes the credential the gateway injects \(auth bearer secret:GH\)/m,
	'card: the warning for dropping credential injection');
like(join("\n", @{$pg->{g1_warnings} || []}), qr/widens methods: adds DELETE/,
	'card: the warning for DELETE');
like($pg->{g1_diff} // '', qr/^- +"auth": \{/m, 'card: the diff');
is($pg->{g1_label}, 'Modify…', 'Modify: the first label');
is($pg->{g1_label2}, 'Approve modified', 'Modify: the label says what the next click does');
like($pg->{g1_mod_head} // '', qr/^modifying it so changes/, 'Modify: the diff follows the edit');
is_deeply($pg->{g1_mod_warnings}, [ 'api.github.com: widens methods: adds '
	. 'DELETE (was GET, POST)' ], 'Modify: the edited route keeps auth');
ok(($pg->{g1_mod_diff} // '') =~ /^\+ +"DELETE"/m
	&& $pg->{g1_mod_diff} !~ /"auth"/, 'Modify: the diff adds DELETE, no auth change');
is($pg->{g1_state_mid}, 'pending', 'Modify: the preview decided nothing');
like($pg->{g1_log} // '', qr/\Q$pg->{g1}\E modified/, 'Approve modified: modified');
my ($ghr) = grep { $_->{host} eq 'api.github.com' } @{$json->decode(
	redis_cli($t, 'HGET', 'bottle:policy:alice', 'json'))->{routes}};
is_deeply($ghr, { host => 'api.github.com', methods => [ 'GET', 'POST',
	'DELETE' ], auth => { type => 'bearer', value => 'secret:GH' } },
	'Approve modified: the route keeps its auth, with DELETE');

is_deeply([ sort keys %{{ map { $_ => 1 } @{$pg->{kind_cards} || []} }} ],
	[ 'add-repo' ], 'filter by kind: only add-repo cards');

# the live feed and the bottles view

like($pg->{feed_host} // '', qr/^<img src=x onerror="window\.__xss=3">\.example$/,
	'feed: a refusal written after load, its host as text');
is($pg->{feed_reason}, 'GET <b>no</b> route <script>window.__xss=4</script>',
	'feed: its reason as text');
is($pg->{feed_children}, 0, 'feed: no element made from it');
ok((grep { /push refused.*github\.com\/acme\/widgets/ } @{$pg->{feed_texts} || []}),
	'feed: a refused push');
ok(@{$pg->{feed_texts} || []} == 2
	&& !(grep { /contact\.example/ } @{$pg->{feed_texts}}),
	'feed: the two refusals, not other events');
is($pg->{feed_imgs}, 0, 'feed: no image on the page');
ok(defined $pg->{xss_ran2} && !$pg->{xss_ran2}, 'feed: no script ran');

like($pg->{bottle_row} // '', qr/^alice\d+\d+example\.org, api\.github\.com/,
	'bottles: alice, her version, pending and routes');
like($pg->{b_id} // '', qr/^alice \(version \d+\)$/, 'bottle: its id and version');
ok((grep { /^api\.github\.comGET,POST,DELETE; auth bearer$/ } @{$pg->{b_routes} || []}),
	'bottle: the routes summarised');
ok((grep { /^add-repo git\.example\/acme\/w/ } @{$pg->{b_pending} || []}),
	'bottle: its pending proposals');
ok((grep { /^modified egress-allow api\.github\.com .*by \S+: keep the token$/ }
	@{$pg->{b_decisions} || []}), 'bottle: its recent decisions');
ok((grep { /no_route/ } @{$pg->{b_refusals} || []}), 'bottle: its recent refusals');

# no silent cap

like($pg->{bob_count} // '', qr/^\(230 of \d+\)$/, 'paged: the total shown');
is($pg->{bob_range1}, '1–50 of 230', 'paged: the first page');
is($pg->{bob_cards1}, 50, 'paged: 50 cards a page');
is($pg->{bob_range5}, '201–230 of 230', 'paged: the last page');
is($pg->{bob_cards5}, 30, 'paged: its 30 cards');
ok($pg->{bob_next_disabled}, 'paged: no page after the last');

$res = curl(auth("$base/api/proposals?bottle=bob&offset=200&limit=50"));
$ls = eval { $json->decode($res->{body}) } // {};
is($ls->{total}, 230, 'API: the total of the filter');
is(scalar @{$ls->{pending} || []}, 30, 'API: the last page');
is($ls->{pending}[-1]{id}, $pg->{bob_last}, 'API: the newest last');
$res = curl(auth("$base/api/proposals?limit=500"));
$ls = eval { $json->decode($res->{body}) } // {};
ok(@{$ls->{pending} || []} > 200 && @{$ls->{pending}} == $ls->{total},
	'API: more than 200 in one page when asked');

# bottles and refusals over the API

$res = curl(auth("$base/api/bottles"));
my $bl = eval { $json->decode($res->{body}) } // {};
my ($bb) = grep { $_->{id} eq 'bob' } @{$bl->{bottles} || []};
is($bb && $bb->{pending}, 230, 'bottles: bob\'s pending count');
ok($res->{status} == 200
	&& $res->{body} !~ /ghp_s3cr3t|alice-token|token_sha256|canary/,
	'bottles: no secret');
$res = curl(auth("$base/api/bottles/nobody"));
like("$res->{status} $res->{body}", qr/^404 .*no bottle \\"nobody\\"/,
	'a bottle that is not there: 404');
$res = curl(auth("$base/api/refusals"));
my $rf = eval { $json->decode($res->{body}) } // {};
is_deeply([ map { $_->{type} } @{$rf->{refusals} || []} ],
	[ 'git.push', 'egress.refusal' ], 'refusals: the two, newest first');
$res = curl(auth("$base/api/refusals?after=$pg->{feed_entry}"));
$rf = eval { $json->decode($res->{body}) } // {};
is_deeply([ map { $_->{type} } @{$rf->{refusals} || []} ], [ 'git.push' ],
	'refusals after an entry: the newer only');
$res = curl(auth("$base/api/refusals?bottle=bob"));
is_deeply(eval { $json->decode($res->{body})->{refusals} }, [],
	'refusals of another bottle: none');
$res = curl(auth("$base/api/refusals?after=x"));
is($res->{status}, 400, 'refusals after a bad id: 400');
$res = curl(auth("$base/api/bottles/alice"));
$bl = eval { $json->decode($res->{body}) } // {};
is($bl->{bottle}{id}, 'alice', 'one bottle: alice');
ok(@{$bl->{refusals} || []} == 2, 'one bottle: her refusals');

# connect and create over the API

my $fc = propose('alice', 'forge-connect', { url => 'https://git.example/' });
$res = post("/api/proposals/$fc/connect", { kind => 'gitea' });
is($res->{status}, 400, 'connect without a token: 400');
$res = post("/api/proposals/$fc/create", {});
is($res->{status}, 400, 'create on a forge-connect: 400');
like($res->{body}, qr/is a forge-connect, not a create-repo/, 'create: says why');
unlike($t->read_file('stderr.log'), qr/\Q$FORGE_TOKEN\E|not-the-token/,
	'the helper\'s log: no token');

###############################################################################
