#!/usr/bin/perl

# Tests for gitleaks-allow (issue 16, docs/gitgate.md "Marked lines"): a
# token shape on a line marked gitleaks:allow never passes on the marker
# alone.  The push is refused and a gitleaks-allow proposal queued, the
# value only as its digest; pushed again it names the same proposal; once
# the operator approves it the same push lands on the forge byte for byte;
# the same value unmarked, or in another repo, is still refused; a denied
# one stays refused; an unmarked secret in the same push refuses it
# outright, no proposal; two pushes of the same value at once queue one.
# The bound on a bottle's pending proposals (32, every source together,
# docs/control-plane.md): a push queues up to it and is refused past it
# (rule proposals_pending), another bottle still proposes, and the bound
# holds across sources: at it through git-gate, supervise-helper's tools
# and the egress proxy's held requests queue nothing; at it through
# supervise's tools, git-gate queues nothing.
#
# nginx on the gate's port in front of build/gitgate-cgi (fcgiwrap), the
# real git client as the agent, the fake forge as GitHub, Redis as the
# control plane; a second nginx as the egress proxy and supervise-helper,
# on the same store.  GITGATE_CGI=path, TEST_NGINX_MODULE=path and
# SUPERVISE_HELPER=path run other builds.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use Digest::SHA qw/ sha256_hex /;
use JSON::PP;
use POSIX ();
use Time::HiRes qw/ sleep /;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $CGI = gitgate_cgi();
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)
	->has_daemon($Test::Bottle::REDIS);
my $d = $t->testdir();

# the values, built so that no token sits whole in this file
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);
my $GHP2 = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 11) % 62] }
	1 .. 36);
my $DIGEST = 'sha256:' . sha256_hex($GHP);

my $FORGE_TOKEN = 'forge-' . 'gate-allow-token-0451';
my $TOKEN = 'writer-token-0123456789';
my $OTHER = 'other-token-0123456789';
my $SVB = 'svb-token-0123456789ab';

###############################################################################

my $redis = redis_start($t, port => 8091);
my $forge = forge_start($t, port => 8092, token => $FORGE_TOKEN);
my $GP = port(8093);
my $sock = "$d/gate-fcgi.sock";

my $GATE = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_STORE => $redis->{url},
	GITGATE_REFRESH => 0);

$t->write_file_expand('nginx.conf', gitgate_conf(policy => $redis->{url},
	port => $GP, gate => $GATE));

gitgate_fcgiwrap($t, $sock, children => 2);

mkdir "$d/gate";

my $w = forge_repo($t, 'acme/widgets', commits => 1);
forge_repo($t, 'acme/docs', commits => 1);

# the egress proxy (a second nginx, its held requests proposed to the
# same store) and supervise-helper, for the bound on pending proposals
my $EF = port(8094);
my $UP = port(8095);
fake_upstream($t, port => $UP, name => 'up');

store_put($t, { id => 'writer', token => $TOKEN,
	repos => [ 'github.com/acme/widgets:write', 'github.com/acme/docs:write' ],
	routes => [ { host => '127.0.0.1', port => $UP, methods => [ 'POST' ],
		dlp => { on_match => 'supervise' } } ] },
	{ id => 'other', token => $OTHER,
		repos => [ 'github.com/acme/docs:write' ], routes => [] },
	{ id => 'svb', token => $SVB,
		repos => [ 'github.com/acme/docs:write' ], routes => [] });

$t->write_file('forge-token', "$FORGE_TOKEN\n");
Test::Bottle::bottlectl($t, $redis, 'forge', 'connect', 'github.com',
	'--kind', 'github', '--url', "$forge->{url}/", '--token-file',
	"$d/forge-token");

my $te = Test::Nginx->new()->has(qw/http proxy stream bottle/);
$te->write_file_expand('nginx.conf', <<"EOF");

%%TEST_GLOBALS%%

daemon off;

bottle_policy $redis->{url};
bottle_supervise $redis->{url};
bottle_supervise_timeout 3s;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:$EF;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/egress.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen unix:%%TESTDIR%%/egress.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
        }
    }
}

EOF

my $SV = $ENV{SUPERVISE_HELPER} // "$FindBin::Bin/../build/supervise-helper";
$SV = "$FindBin::Bin/../$SV" if $SV !~ m!^/!;
plan(skip_all => "$SV not built (make supervise)") unless -x $SV;

$t->run_daemon(sub {
	open STDIN, '<', '/dev/null';
	open STDOUT, '>>', "$d/sv.stderr";
	open STDERR, '>&', \*STDOUT;
	exec($SV, '--listen', "unix:$d/sv.sock", '--store', $redis->{url},
		'--response-timeout', '0') or die "exec: $!\n";
});
for (1 .. 100) {
	last if -S "$d/sv.sock";
	sleep 0.05;
}

$t->run()->plan(68);
$te->run();

###############################################################################

my $json = JSON::PP->new->canonical;
my $BOTTLECTL = $Test::Bottle::BOTTLECTL;

sub agent_as {
	my ($token, $dir, @args) = @_;
	my $base = "http://x:$token\@127.0.0.1:$GP/github.com/";
	return run_git($t, { dir => "$d/$dir" },
		'-c', "url.$base.insteadOf=https://github.com/", @args);
}

sub agent { return agent_as($TOKEN, @_); }

sub git_in { return run_git($t, { dir => "$d/$_[0]" }, @_[1 .. $#_]); }

sub head_of {
	my (undef, $h) = git_in($_[0], 'rev-parse', $_[1] // 'HEAD');
	chomp $h;
	return $h;
}

sub commit_file {
	my ($dir, $file, $text) = @_;
	$t->write_file("$dir/$file", $text);
	git_in($dir, 'add', $file);
	git_in($dir, 'commit', '-q', '-m', "add $file");
	return head_of($dir);
}

# bottlectl: { rc, out } (exit status 4 is a 409)
sub ctl {
	my $out = "$d/ctl.out";
	system("$BOTTLECTL --store '$redis->{url}' "
		. join(' ', map { "'$_'" } @_) . " >$out 2>&1");
	return { rc => $? >> 8, out => $t->read_file('ctl.out') };
}

sub gitleaks_proposals {
	my @ids = grep { length } split /\n/,
		redis_cli($t, 'ZRANGE', 'bottle:proposals:of:writer', 0, -1);
	return grep { redis_cli($t, 'HGET', "bottle:proposal:$_", 'kind')
		eq "gitleaks-allow\n" } @ids;
}

sub proposal {
	return $json->decode(redis_cli($t, 'HGET', "bottle:proposal:$_[0]",
		'json'));
}

# every value of every key in the store, as text
sub store_text {
	my $text = '';
	for my $k (grep { length } split /\n/, redis_cli($t, 'KEYS', '*')) {
		my $type = redis_cli($t, 'TYPE', $k);
		chomp $type;
		my @cmd = $type eq 'string' ? ('GET', $k)
			: $type eq 'hash' ? ('HGETALL', $k)
			: $type eq 'set' ? ('SMEMBERS', $k)
			: $type eq 'zset' ? ('ZRANGE', $k, 0, -1)
			: $type eq 'stream' ? ('XRANGE', $k, '-', '+')
			: $type eq 'list' ? ('LRANGE', $k, 0, -1) : ();
		$text .= "$k\n" . redis_cli($t, @cmd) if @cmd;
	}
	return $text;
}

sub forge_same {
	my ($c, $refs) = @_;
	return forge_connections($t) == $c
		&& same_refs($refs);
}

my $URL = 'https://github.com/acme/widgets';

my ($rc, $out) = agent('.', 'clone', '-q', $URL, 'work');
is($rc, 0, 'clone through the gate') or diag($out);

###############################################################################
# a marked token: refused, one proposal, the forge untouched

my $marked = commit_file('work', 'cfg.txt',
	"ok=1\ntoken = \"$GHP\" # gitleaks:allow\n");

my $c = forge_connections($t);
my $refs = forge_refs($t, 'acme/widgets');

($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'marked: push refused');
like($out, qr/^remote: git-gate refused this push \(rule: github_pat\w*\): needs gitleaks-allow approval/m,
	'marked: needs gitleaks-allow approval');
my ($id) = $out =~ /the operator is asked \(proposal (\d{13}-[0-9a-f]{8})\)/;
ok($id, 'marked: remote: names the proposal') or diag($out);
like($out, qr/^remote: git-gate: push again once the operator has approved/m,
	'marked: push again once approved');
ok(forge_same($c, $refs), 'marked: forge untouched');

is(join(' ', gitleaks_proposals()), $id // '', 'one gitleaks-allow proposal');
my $p = proposal($id);
is($p->{producer}, 'git-gate', 'proposal: producer git-gate');
is($json->encode($p->{args}), $json->encode({ rule => $p->{args}{rule},
	digest => $DIGEST, repo => 'github.com/acme/widgets',
	file => 'cfg.txt', commit => substr($marked, 0, 12), line => 2 }),
	'proposal: rule, digest of the value, repo, file, commit, line');

like(ctl('proposals')->{out},
	qr/^\Q$id\E +writer +gitleaks-allow +pending /m,
	'bottlectl proposals: listed, pending');

my ($ev) = grep { ($_->{correlation_id} // '') eq $id }
	map { /^\{/ ? $json->decode($_) : () }
	split /\n/, redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
is($ev && $ev->{type}, 'decision.proposed',
	'journal: decision.proposed, correlation id = the proposal id');

unlike(store_text(), qr/\Q$GHP\E/, 'the value is nowhere in the store');

# pushed again: the same proposal, no other

($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'pushed again: refused');
like($out, qr/\(proposal \Q$id\E, already waiting\)/,
	'pushed again: names the waiting proposal');
is(join(' ', gitleaks_proposals()), $id, 'pushed again: no duplicate');

###############################################################################
# an unmarked secret in the same push: refused outright, no proposal

commit_file('work', 'other.txt', "key: $GHP2\n");
($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'with an unmarked secret: refused');
like($out, qr/^remote: git-gate refused this push \(rule: github_pat\w*\)\s*$/m,
	'with an unmarked secret: the plain refusal');
unlike($out, qr/proposal/, 'with an unmarked secret: no proposal named');
is(join(' ', gitleaks_proposals()), $id,
	'with an unmarked secret: nothing queued');
git_in('work', 'reset', '-q', '--hard', $marked);

###############################################################################
# approved: the same push lands, byte for byte

my $res = ctl('approve', $id, '--note', 'a test fixture');
is($res->{rc}, 0, 'bottlectl approve') or diag($res->{out});
is(redis_cli($t, 'SMEMBERS', 'bottle:gitleaks-allowed:writer'),
	"github.com/acme/widgets $p->{args}{rule} $DIGEST\n",
	'approve: the allow set holds repo, rule, digest');

($rc, $out) = agent('work', 'push', 'origin', 'main');
is($rc, 0, 'approved: the push goes') or diag($out);
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, $marked,
	'approved: the forge has the commit');
my $gd = "--git-dir=$w->{path}";
is((run_git($t, $gd, 'cat-file', '-p', $marked))[1],
	(git_in('work', 'cat-file', '-p', $marked))[1],
	'approved: the commit byte-identical');
is((run_git($t, $gd, 'cat-file', 'blob', "$marked:cfg.txt"))[1],
	"ok=1\ntoken = \"$GHP\" # gitleaks:allow\n",
	'approved: the file byte-identical');

# the same value unmarked: refused

commit_file('work', 'plain.txt', "token = \"$GHP\"\n");
$c = forge_connections($t);
$refs = forge_refs($t, 'acme/widgets');
($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'approved value, unmarked: refused');
ok(forge_same($c, $refs), 'approved value, unmarked: forge untouched');
git_in('work', 'reset', '-q', '--hard', $marked);

# the approved value on 40 marked lines: one finding of it, every place
# passes (past the 32 findings a push lists)

my $mc = commit_file('work', 'many.txt',
	join('', map { "t$_ = \"$GHP\" # gitleaks:allow\n" } 1 .. 40));
($rc, $out) = agent('work', 'push', 'origin', 'main');
is($rc, 0, 'approved value on 40 lines: the push goes') or diag($out);
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, $mc,
	'approved value on 40 lines: the forge has it');

# 33 marked values in one push: refused, nothing queued, says why

commit_file('work', 'vals.txt', join('', map {
	"v$_ = \"ghp_" . substr(sha256_hex("v$_"), 0, 36) . "\" # gitleaks:allow\n"
} 1 .. 33));
my $n0 = () = gitleaks_proposals();
$c = forge_connections($t);
$refs = forge_refs($t, 'acme/widgets');
($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, '33 marked values: refused');
like($out, qr/^remote: git-gate: this push holds more than 32 marked values; the operator is asked about at most 32 at a time: push them in smaller pushes/m,
	'33 marked values: says why') or diag($out);
is(scalar(() = gitleaks_proposals()), $n0, '33 marked values: nothing queued');
ok(forge_same($c, $refs), '33 marked values: forge untouched');
git_in('work', 'reset', '-q', '--hard', $mc);

###############################################################################
# another repo: its own proposal; denied, it stays refused

($rc, $out) = agent('.', 'clone', '-q', 'https://github.com/acme/docs', 'docs');
commit_file('docs', 'cfg.txt', "token = \"$GHP\" # gitleaks:allow\n");
($rc, $out) = agent('docs', 'push', 'origin', 'main');
isnt($rc, 0, 'another repo: refused');
my ($id2) = $out =~ /the operator is asked \(proposal (\d{13}-[0-9a-f]{8})\)/;
ok($id2 && $id2 ne $id, 'another repo: a proposal of its own') or diag($out);

$res = ctl('deny', $id2 // 'none', '--note', 'not in docs');
is($res->{rc}, 0, 'bottlectl deny') or diag($res->{out});
($rc, $out) = agent('docs', 'push', 'origin', 'main');
isnt($rc, 0, 'denied: still refused');
like($out, qr/gitleaks-allow denied\s*\n.*\n.*operator denied this value \(proposal \Q$id2\E\)/,
	'denied: names the denied proposal');
is(scalar(gitleaks_proposals()), 2, 'denied: nothing queued again');

###############################################################################
# two pushes of the same new marked value at once: one proposal, both name
# it.  Redis holds every write while paused, so each push waits at its
# first script; unpaused, a look-up apart from the queueing would have
# let both queue one

my $GHP3 = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 13) % 62] }
	1 .. 36);
for my $r (qw/ race1 race2 /) {
	agent('.', 'clone', '-q', $URL, $r);
	commit_file($r, 'race.txt',
		join('', map { "t$_ = \"$GHP3\" # gitleaks:allow\n" } 1 .. 3));
}
my %was = map { $_ => 1 } gitleaks_proposals();

redis_cli($t, 'CLIENT', 'PAUSE', 3000, 'WRITE');
my %kid;
for my $r (qw/ race1 race2 /) {
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		my (undef, $o) = agent($r, 'push', 'origin', 'main');
		open my $fh, '>', "$d/$r.out" or POSIX::_exit(1);
		print $fh $o;
		close $fh;
		POSIX::_exit(0);
	}
	$kid{$r} = $pid;
}
waitpid($_, 0) for values %kid;

my @new = grep { !$was{$_} } gitleaks_proposals();
is(scalar @new, 1, 'two pushes at once: one proposal');
my $both = join('', map { $t->read_file("$_.out") } qw/ race1 race2 /);
my @named = $both =~ /the operator is asked \(proposal (\d{13}-[0-9a-f]{8})/g;
is(join(' ', @named), join(' ', ($new[0] // '-') x 2),
	'two pushes at once: both name it') or diag($both);
like($both, qr/^remote:   and 2 more places of the same value\s*$/m,
	'a value on 3 lines: one proposal, its other places counted');

###############################################################################
# the bound on pending proposals (docs/control-plane.md): 32 per bottle,
# every source together (git-gate's gitleaks-allow, supervise's tools, the
# egress proxy's held requests); a push queues up to the bound, the rest
# of its values are not put to the operator and the push says why

sub pending_of {
	my ($bottle) = @_;
	return scalar grep { redis_cli($t, 'HGET', "bottle:proposal:$_", 'state')
		eq "pending\n" } grep { length } split /\n/,
		redis_cli($t, 'ZRANGE', "bottle:proposals:of:$bottle", 0, -1);
}

sub kind_of {
	my ($bottle, $kind) = @_;
	return scalar grep { redis_cli($t, 'HGET', "bottle:proposal:$_", 'kind')
		eq "$kind\n" } grep { length } split /\n/,
		redis_cli($t, 'ZRANGE', "bottle:proposals:of:$bottle", 0, -1);
}

sub marked_values {
	my ($tag, $n) = @_;
	return join('', map { "$tag$_ = \"ghp_"
		. substr(sha256_hex("$tag$_") x 2, 0, 36) . "\" # gitleaks:allow\n"
	} 1 .. $n);
}

sub journal_push { return journal_events($t, 'git.push')->[-1] // {}; }

# one push of 32 new marked values with one proposal already pending:
# 31 are queued, the 32nd is not; the push is refused, saying why

my $was = pending_of('writer');
is($was, 1, 'bound: writer has one pending (the race\'s)');
commit_file('work', 'b32.txt', marked_values('b', 32));
$c = forge_connections($t);
$refs = forge_refs($t, 'acme/widgets');
($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'bound: 32 values, 1 pending: refused');
is(pending_of('writer'), 32, 'bound: queued up to the bound, no more');
like($out, qr/^remote: git-gate refused this push \(rule: proposals_pending\)\s*\n^remote:   this bottle has 32 proposals pending, at most 32 \(supervise's tools, held requests and gitleaks-allow together\): 1 marked value was not put to the operator; wait for the operator to answer the pending ones, then push again/m,
	'bound: remote: says the count, the bound and what to do') or diag($out);
is(scalar(() = $out =~ /the operator is asked \(proposal /g), 31,
	'bound: 31 values named with their proposals');
like($out, qr/needs gitleaks-allow approval, not asked\s*\n.*\n^remote:   the line is marked gitleaks:allow; the operator is not asked: too many proposals pending/m,
	'bound: the value not asked is listed');
ok(forge_same($c, $refs), 'bound: forge untouched');
my $jp = journal_push();
is(join(' ', map { $jp->{$_} // '' } qw/ bottle verdict rule /),
	'writer refused proposals_pending', 'bound: journal git.push, its rule');

# at the bound: another push of new values queues nothing

git_in('work', 'reset', '-q', '--hard', $mc);
my $ng = kind_of('writer', 'gitleaks-allow');
commit_file('work', 'b2.txt', marked_values('c', 2));
($rc, $out) = agent('work', 'push', 'origin', 'main');
isnt($rc, 0, 'at the bound: refused');
like($out, qr/^remote:   this bottle has 32 proposals pending, at most 32 .*: 2 marked values were not put to the operator; wait for the operator/m,
	'at the bound: remote: says why') or diag($out);
is(kind_of('writer', 'gitleaks-allow'), $ng, 'at the bound: nothing queued');
is(pending_of('writer'), 32, 'at the bound: still 32 pending');
ok(forge_same($c, $refs), 'at the bound: forge untouched');

# another bottle still proposes

($rc, $out) = agent_as($OTHER, '.', 'clone', '-q',
	'https://github.com/acme/docs', 'odocs');
commit_file('odocs', 'o.txt', marked_values('o', 1));
($rc, $out) = agent_as($OTHER, 'odocs', 'push', 'origin', 'main');
like($out, qr/the operator is asked \(proposal \d{13}-[0-9a-f]{8}\)/,
	'another bottle: its proposal queued') or diag($out);
is(kind_of('other', 'gitleaks-allow'), 1, 'another bottle: in the store');

# cross-source: writer, at the bound through git-gate, gets no supervise
# proposal and no held request queued

my $sid = 0;

sub mcp {
	my ($bottle, $body, $session) = @_;
	$sid++;
	$t->write_file("mcp$sid.json", $json->encode($body));
	my @cmd = ('curl', '-s', '-D', "$d/mcp$sid.h", '--max-time', '20',
		'--unix-socket', "$d/sv.sock", '-H', "X-Bottle-Id: $bottle",
		'-H', 'Accept: application/json, text/event-stream',
		'-H', 'Content-Type: application/json',
		'-H', 'MCP-Protocol-Version: 2025-06-18',
		$session ? ('-H', "Mcp-Session-Id: $session") : (),
		'--data-binary', "\@$d/mcp$sid.json", 'http://supervise/');
	open my $fh, '-|', @cmd or die "curl: $!\n";
	local $/;
	my $res = <$fh> // '';
	close $fh;
	my ($s) = $t->read_file("mcp$sid.h") =~ /^Mcp-Session-Id: (\S+)/mi;
	return ($s, eval { $json->decode($res) } // {});
}

sub sv_session {
	my ($s) = mcp($_[0], { jsonrpc => '2.0', id => 1, method => 'initialize',
		params => { protocolVersion => '2025-06-18', capabilities => {},
		clientInfo => { name => 't', version => '1' } } });
	return $s;
}

sub sv_call {
	my ($bottle, $s, $tool, $args) = @_;
	my (undef, $r) = mcp($bottle, { jsonrpc => '2.0', id => 2,
		method => 'tools/call', params => { name => $tool,
		arguments => $args } }, $s);
	return $r->{result}{content}[0]{text} // '';
}

my $WS = sv_session('writer');
my $text = sv_call('writer', $WS, 'egress-block', { host => 'x.example',
	justification => 'j' });
like($text, qr/this bottle has 32 proposals waiting for the operator \(at most 32\)/,
	'cross-source: writer at the bound through git-gate: supervise refuses')
	or diag($text);
is(kind_of('writer', 'egress-block'), 0, 'cross-source: no supervise proposal');

my $BODY = "{\"note\": \"deploy with $GHP2 please\"}";
my $r = proxy_request($EF, "POST http://127.0.0.1:$UP/hold HTTP/1.1\r\n"
	. "Host: 127.0.0.1:$UP\r\n"
	. 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n"
	. "Content-Type: application/json\r\n"
	. 'Content-Length: ' . length($BODY) . "\r\n"
	. "Connection: close\r\n\r\n" . $BODY, timeout => 10) // '';
like($r, qr/^HTTP\/1\.1 403 .*too many proposals waiting for the operator \(32 for this bottle, at most 32\)/s,
	'cross-source: the held request is refused at once') or diag($r);
is(kind_of('writer', 'egress-token-allow'), 0,
	'cross-source: no egress-token-allow queued');
is(pending_of('writer'), 32, 'cross-source: writer still at 32');

# cross-source: svb, at the bound through supervise's tools, gets no
# gitleaks-allow proposal queued

my $BS = sv_session('svb');
for my $i (1 .. 32) {
	sv_call('svb', $BS, 'egress-block', { host => "h$i.example",
		justification => 'j' });
}
is(pending_of('svb'), 32, 'svb: 32 pending through supervise');

($rc, $out) = agent_as($SVB, '.', 'clone', '-q',
	'https://github.com/acme/docs', 'sdocs');
commit_file('sdocs', 's.txt', marked_values('s', 1));
$c = forge_connections($t);
($rc, $out) = agent_as($SVB, 'sdocs', 'push', 'origin', 'main');
isnt($rc, 0, 'svb at the bound: push refused');
like($out, qr/^remote: git-gate refused this push \(rule: proposals_pending\)\s*\n^remote:   this bottle has 32 proposals pending, at most 32/m,
	'svb at the bound: remote: says why') or diag($out);
is(kind_of('svb', 'gitleaks-allow'), 0, 'svb at the bound: no gitleaks-allow');
is(forge_connections($t), $c, 'svb at the bound: forge untouched');

###############################################################################

# the egress gateway and supervise-helper ran clean (ASan builds: their
# logs hold any sanitizer report; $t's own are checked by Test::Nginx)

$te->stop();
is(join("\n", grep { /ERROR: \w*Sanitizer|\bSanitizer:|runtime error:/ }
	split /\n/, $te->read_file('error.log') . $t->read_file('sv.stderr')),
	'', 'egress gateway, supervise-helper: no sanitizer errors');

###############################################################################

# the forge's refs as they were: compared by name, sorted (two hashes of
# the same refs need not list them in the same order)
sub same_refs {
	my ($refs) = @_;
	my $now = forge_refs($t, 'acme/widgets');
	return join(',', map { "$_=$now->{$_}" } sort keys %$now)
		eq join(',', map { "$_=$refs->{$_}" } sort keys %$refs);
}
