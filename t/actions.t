#!/usr/bin/perl

# Tests for what an operator's answer does for forge-connect, create-repo
# and launch-bottle (docs/supervise.md, "What an approval means";
# docs/bottlectl.md): bottlectl forge connect --proposal connects the
# forge of the agent's URL with the operator's token (checked on the
# forge's API first; a failure leaves the proposal pending) and answers
# it with the account; bottlectl repo create --proposal makes the repo on
# the fake forge's API and grants it with write, and a push through
# git-gate to the new repo lands on the forge; a launch-bottle is modified
# with a launch spec (bottles trimmed, nothing else), which a subscriber
# of bottle:decisions reads back.  The forge token is in its forge hash
# only: no other key, no journal record, no log line, no answer.
#
# BOTTLECTL=path and GITGATE_CGI=path run other builds (build-asan/);
# bottlectl's stderr is kept in stderr.log, which the last test reads for
# sanitizer reports.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use IO::Select;
use IO::Socket::INET;
use JSON::PP qw//;
use Time::HiRes qw/ sleep time /;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $BOTTLECTL = $ENV{BOTTLECTL} // 'build/bottlectl';
$BOTTLECTL = "$Test::Nginx::REPO/$BOTTLECTL" if $BOTTLECTL !~ m{^/};
my $CGI = gitgate_cgi();
plan(skip_all => "$BOTTLECTL not built (make ctl)") unless -x $BOTTLECTL;
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)
	->has_daemon($Test::Bottle::REDIS);
my $d = $t->testdir();

my $FORGE_TOKEN = 'forge-' . 'operator-token-7e57c0de';
my $DEV = 'dev-token-0123456789abc';

###############################################################################

my $redis = redis_start($t, port => 8201);
my $forge = forge_start($t, port => 8202, token => $FORGE_TOKEN,
	user => 'forge-user');
my $GP = port(8203);
my $CLOSED = port(8204);	# nothing listens there
my $sock = "$d/gate-fcgi.sock";

my $GATE = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_STORE => $redis->{url},
	GITGATE_REFRESH => 0);

$t->write_file_expand('nginx.conf', gitgate_conf(policy => $redis->{url},
	port => $GP, gate => $GATE));

gitgate_fcgiwrap($t, $sock, children => 2);
mkdir "$d/gate";

store_put($t, { id => 'dev', token => $DEV, routes => [] });

$t->write_file('forge-token', "$FORGE_TOKEN\n");
$t->write_file('wrong-token', "not-the-forge-token\n");

$ENV{BOTTLE_STORE} = $redis->{url};
$ENV{BOTTLE_OPERATOR} = 'op-actions';

$t->run()->plan(51);

my $json = JSON::PP->new->canonical;

# ctl(@args): { rc, out, err }; stderr kept in stderr.log

sub ctl { return ctl_run($t, @_); }

sub propose {
	my ($kind, $args) = @_;
	my $res = ctl('propose', 'dev', $kind, $json->encode($args));
	die "propose: $res->{err}" if $res->{rc} != 0;
	chomp $res->{out};
	return $res->{out};
}

sub proposal {
	my ($id) = @_;
	my %h = split /\n/, redis_cli($t, 'HGETALL', "bottle:proposal:$id");
	$h{decision} = $json->decode($h{decision}) if $h{decision};
	$h{proposal} = $json->decode($h{json}) if $h{json};
	return \%h;
}

sub repos_of {
	my %h = split /\n/, redis_cli($t, 'HGETALL', 'bottle:policy:dev');
	return join ' ', sort @{$json->decode($h{json})->{repos} || []};
}

sub api_calls {
	my ($from) = @_;
	my @l = @{forge_log($t)};
	return join ' ', map { "$_->{method} $_->{uri} $_->{status} $_->{auth}" }
		grep { $_->{uri} =~ m{^/api/} } @l[$from .. $#l];
}

# a subscriber to bottle:decisions, speaking RESP

my $sub = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$redis->{port}")
	or die "subscriber: $!\n";
print $sub "*2\r\n\$9\r\nSUBSCRIBE\r\n\$16\r\nbottle:decisions\r\n";
my $subbuf = '';

sub messages {
	my $sel = IO::Select->new($sub);
	my $end = time() + 1;
	while (time() < $end && $sel->can_read(0.2)) {
		sysread($sub, $subbuf, 65536, length $subbuf) or last;
	}
	my @m = $subbuf =~ /\$7\r\nmessage\r\n\$\d+\r\nbottle:decisions\r\n\$\d+\r\n([^\r]*)\r\n/g;
	$subbuf = '';
	return join ',', @m;
}

my $FORGE = "127.0.0.1:$forge->{port}";

###############################################################################
# forge-connect: the forge of the agent's URL, the operator's token

my $fc = propose('forge-connect', { url => "http://$FORGE/some/page" });

my $res = ctl('approve', $fc);
is($res->{rc}, 1, 'forge-connect: no plain approve');
like($res->{err}, qr/bottlectl forge connect --proposal/,
	'forge-connect: the refusal says how');

$t->write_file('forge-grant.json', $json->encode({ forge => $FORGE,
	account => 'someone' }));
$res = ctl('modify', $fc, "$d/forge-grant.json");
like($res->{err}, qr/forge \Q$FORGE\E is not connected/,
	'forge-connect: modify before the forge is connected refused');

$res = ctl('forge', 'connect', '--proposal', $fc, '--kind', 'gitea',
	'--url', "http://$FORGE/", '--token-file', "$d/forge-token");
is($res->{rc}, 2, 'forge-connect: the operator gives no URL');

my $nlog = @{forge_log($t)};

$res = ctl('forge', 'connect', '--proposal', $fc, '--kind', 'gitea',
	'--token-file', "$d/wrong-token");
is($res->{rc}, 1, 'a wrong token: exit 1');
like($res->{err}, qr/the forge answered 401: Bad credentials/,
	'a wrong token: the forge\'s answer');
is(api_calls($nlog), 'GET /api/v1/user 401 wrong',
	'a wrong token: the forge was asked');

$res = ctl('forge', 'connect', '--proposal', $fc, '--kind', 'gitea',
	'--token-file', "$d/forge-token", '--api',
	"http://127.0.0.1:$CLOSED/api/v1");
is($res->{rc}, 1, 'an API that does not answer: exit 1');
like($res->{err}, qr/still pending.*127\.0\.0\.1:$CLOSED/,
	'an API that does not answer: why');

is(proposal($fc)->{state}, 'pending', 'a failed connect leaves it pending');
like(redis_cli($t, 'SMEMBERS', 'bottle:forges'), qr/^\s*$/,
	'and no forge connected');

$nlog = @{forge_log($t)};

$res = ctl('forge', 'connect', '--proposal', $fc, '--kind', 'gitea',
	'--token-file', "$d/forge-token");
is($res->{rc}, 0, 'forge connect --proposal') or diag($res->{err});
is($res->{out}, "$fc modified: $FORGE connected as forge-user\n",
	'forge connect --proposal: what it says');
is(api_calls($nlog), 'GET /api/v1/user 200 ok', 'the token checked first');

my %fh = split /\n/, redis_cli($t, 'HGETALL', "bottle:forge:$FORGE");
is(join(' ', map { "$_=" . ($fh{$_} // '') } qw/ kind url api account token /),
	"kind=gitea url=http://$FORGE/ api=http://$FORGE/api/v1 "
	. "account=forge-user token=$FORGE_TOKEN",
	'the forge hash: the proposal\'s forge, the token');
is(redis_cli($t, 'SMEMBERS', 'bottle:forges'), "$FORGE\n",
	'bottle:forges');

my $p = proposal($fc);
is($p->{state}, 'modified', 'forge-connect: modified');
is($json->encode($p->{decision}{forge}),
	$json->encode({ account => 'forge-user', forge => $FORGE }),
	'forge-connect: the decision names the forge and the account');
is($p->{decision}{notes}, "connected $FORGE as forge-user",
	'forge-connect: a note naming the account');

$res = ctl('check', 'dev', $fc);
like($res->{out}, qr/"state": "modified"/, 'the agent sees it modified');
unlike($res->{out}, qr/\Q$FORGE_TOKEN\E/, 'the agent\'s answer: no token');

$res = ctl('forge', 'connect', '--proposal', $fc, '--kind', 'gitea',
	'--token-file', "$d/forge-token");
is($res->{rc}, 4, 'connected twice: 409, the first answer stands');

###############################################################################
# create-repo: made on the forge's API, granted with write

my $cr = propose('create-repo', { repo => "$FORGE/forge-user/newrepo",
	public => JSON::PP::false });

$res = ctl('approve', $cr);
like($res->{err}, qr/bottlectl repo create --proposal/,
	'create-repo: no plain approve, the refusal says how');

$t->write_file('repo-grant.json', $json->encode({
	repo => "$FORGE/forge-user/newrepo:write" }));
$res = ctl('modify', $cr, "$d/repo-grant.json");
is($res->{rc}, 1, 'create-repo: a grant alone is refused');
like($res->{err}, qr/the repo is made first/, 'create-repo: why');

$nlog = @{forge_log($t)};

$res = ctl('repo', 'create', '--proposal', $cr);
is($res->{rc}, 0, 'repo create --proposal') or diag($res->{err});
like($res->{out}, qr{^\Q$cr\E modified: created http://\Q$FORGE\E/forge-user/newrepo, granted \Q$FORGE\E/forge-user/newrepo:write: bottle dev version \d+$},
	'repo create: what it says');
is(api_calls($nlog), 'GET /api/v1/user 200 ok POST /api/v1/user/repos 201 ok',
	'repo create: the user\'s repo, with the forge\'s token');
ok(-d "$forge->{root}/forge-user/newrepo.git", 'the forge has the repo');
is(repos_of(), "$FORGE/forge-user/newrepo:write",
	'the bottle has the write grant');

$p = proposal($cr);
is(join(' ', $p->{state}, $p->{decision}{grant}{repo},
	$p->{decision}{created}),
	"modified $FORGE/forge-user/newrepo:write "
	. "http://$FORGE/forge-user/newrepo",
	'create-repo: the decision, the grant and the repo made');

# the agent pushes to it through git-gate

my $base = "http://x:$DEV\@127.0.0.1:$GP/$FORGE/";
mkdir "$d/work";
run_git($t, { dir => "$d/work" }, 'init', '-q');
$t->write_file('work/hello.txt', "a new repo's first commit\n");
run_git($t, { dir => "$d/work" }, 'add', 'hello.txt');
run_git($t, { dir => "$d/work" }, 'commit', '-q', '-m', 'first');
my (undef, $head) = run_git($t, { dir => "$d/work" }, 'rev-parse', 'HEAD');
chomp $head;

my ($rc, $out) = run_git($t, { dir => "$d/work" }, 'push',
	"${base}forge-user/newrepo.git", 'HEAD:refs/heads/main');
is($rc, 0, 'push through the gate to the new repo') or diag($out);
is(forge_refs($t, 'forge-user/newrepo')->{'refs/heads/main'}, $head,
	'the push landed on the forge');

# an org's repo, public

my $cr2 = propose('create-repo', { repo => "$FORGE/acme-org/tools",
	public => JSON::PP::true });
$nlog = @{forge_log($t)};
$res = ctl('repo', 'create', '--proposal', $cr2);
is($res->{rc}, 0, 'repo create: an org\'s') or diag($res->{err});
is(api_calls($nlog),
	'GET /api/v1/user 200 ok POST /api/v1/orgs/acme-org/repos 201 ok',
	'repo create: the org\'s path');
is(repos_of(), "$FORGE/acme-org/tools:write $FORGE/forge-user/newrepo:write",
	'both grants');

# one that exists: the forge's message, still pending

my $cr3 = propose('create-repo', { repo => "$FORGE/forge-user/newrepo" });
$res = ctl('repo', 'create', '--proposal', $cr3);
is($res->{rc}, 1, 'repo create: an existing repo refused');
like($res->{err}, qr/409: The repository with the same name already exists/,
	'repo create: the forge\'s message');
is(proposal($cr3)->{state}, 'pending', 'repo create: still pending');

$res = ctl('repo', 'create', '--proposal', $fc);
like($res->{err}, qr/is a forge-connect, not a create-repo/,
	'repo create: another kind refused');

###############################################################################
# launch-bottle: modify with the launch spec, bottles trimmed

messages();

my $lb = propose('launch-bottle', { agent => 'claude', prompt => 'fix it',
	bottles => [ 'base', 'extra' ], label => 'child-1' });

$res = ctl('approve', $lb);
like($res->{err}, qr/launch it with modify and the launch spec/,
	'launch-bottle: no plain approve, the refusal says how');

$t->write_file('launch.json', $json->encode({ bottles => [ 'other' ] }));
$res = ctl('modify', $lb, "$d/launch.json");
like($res->{err}, qr/bottle "other" is not one the proposal asked for/,
	'launch: a bottle not asked for refused');

$t->write_file('launch.json', $json->encode({ agent => 'codex' }));
$res = ctl('modify', $lb, "$d/launch.json");
like($res->{err}, qr/agent is the proposal's; only bottles can be trimmed/,
	'launch: another agent refused');

$t->write_file('launch.json', $json->encode({ bottles => [ 'base' ] }));
$res = ctl('modify', $lb, "$d/launch.json", '--note', 'base only');
is($res->{rc}, 0, 'launch: modify with fewer bottles') or diag($res->{err});
is(messages(), "$lb modified", 'bottle:decisions: "<id> modified"');

$p = proposal($lb);
is($json->encode($p->{decision}{launch}), $json->encode({ agent => 'claude',
	bottles => [ 'base' ], label => 'child-1', parent => 'dev',
	prompt => 'fix it' }),
	'the launch spec, read back from bottle:proposal:<id>');
is($p->{proposal}{bottle}, 'dev', 'the parent, from the proposal');

###############################################################################
# the token: in its forge hash only

my $seen = '';
for my $key (split /\n/, redis_cli($t, 'KEYS', '*')) {
	next if $key eq "bottle:forge:$FORGE";
	my $type = redis_cli($t, 'TYPE', $key);
	chomp $type;
	$seen .= "$key: " . ($type eq 'hash' ? redis_cli($t, 'HGETALL', $key)
		: $type eq 'stream' ? redis_cli($t, 'XRANGE', $key, '-', '+')
		: $type eq 'zset' ? redis_cli($t, 'ZRANGE', $key, 0, -1)
		: $type eq 'set' ? redis_cli($t, 'SMEMBERS', $key)
		: $type eq 'string' ? redis_cli($t, 'GET', $key) : '') . "\n";
}
like($seen, qr/decision\.resolved/, 'the store was read');
unlike($seen, qr/\Q$FORGE_TOKEN\E/, 'the token: in no other key');

my $logs = '';
for my $f (glob("$d/*.log $d/*.out $d/*.err $d/*/*.log $d/*/*.jsonl")) {
	$logs .= $t->read_file($f =~ s{^\Q$d\E/}{}r);
}
unlike($logs, qr/\Q$FORGE_TOKEN\E/, 'the token: in no log or output');

unlike($t->read_file('stderr.log'),
	qr/AddressSanitizer|LeakSanitizer|runtime error/,
	'bottlectl: no sanitizer report');

###############################################################################
