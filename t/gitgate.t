#!/usr/bin/perl

# Tests for git-gate over HTTP (issue 16, docs/gitgate.md): nginx on the
# gate's port in front of build/gitgate-cgi (fcgiwrap), the real git
# client as the agent, the fake forge (Test::Bottle::Forge) as GitHub,
# Redis as the control plane (the bottles, the forge's url and token, the
# audit journal).
#
# A clean push arrives on the forge byte for byte, sent with the gate's
# token; clone and fetch get the forge's content.  Threat model rows 4 and
# 5: a push carrying a token shape, the canary, an egress token or a held
# secret is refused with "remote:" lines naming the rule and the forge
# sees no connection at all.  Grants: none, read-only.  Attribution:
# no credentials, a wrong token, a bottle id header of the agent's own.
# A forge that moved refuses the push with its own message and the gate's
# copy does not move.  The forge token is in no answer.
#
# Attribution is the module's (bottle_attribute git): the bottle's identity
# token as the Basic password, a 401 with WWW-Authenticate: Basic
# realm="git-gate" first; the bottle id reaches the helper as the FastCGI
# param BOTTLE_ID, never from a client header.
#
# GITGATE_CGI=path runs another build (build-asan/gitgate-cgi).

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use Compress::Zlib qw//;
use Encode qw//;
use IO::Compress::Gzip qw//;
use MIME::Base64 qw/ encode_base64 /;
use POSIX qw/ WNOHANG /;
use Time::HiRes qw/ sleep time /;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $CGI = gitgate_cgi();
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)
	->has_daemon($Test::Bottle::REDIS);
my $d = $t->testdir();

# the values, built so that no token sits whole in this file
my $CANARY = 'canary-' . 'gate-5150515051';
my $EGRESS = 'egress-' . 'token-value-8888';
my $HELD = 'held-' . 'secret-value-24601';
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);
my $SLACK = 'xoxb-' . '1234567890-9876543210-' . join('',
	map { ('a' .. 'z', 'A' .. 'Z', 0 .. 9)[($_ * 5) % 62] } 1 .. 24);
my $GITLAB = 'glpat-' . join('', map { ('A' .. 'Z', 'a' .. 'z')[($_ * 3) % 52] }
	1 .. 20);

my $FORGE_TOKEN = 'forge-' . 'gate-held-token-0451';
my %TOK = (writer => 'writer-token-0123456789', reader =>
	'reader-token-0123456789', stranger => 'stranger-token-012345678',
	strict => 'strict-token-0123456789');

###############################################################################

my $redis = redis_start($t, port => 8091);
my $forge = forge_start($t, port => 8092, token => $FORGE_TOKEN);
my $GP = port(8093);
my $FP = port(8094);
my $sock = "$d/gate-fcgi.sock";

my $GATE = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_STORE => $redis->{url},
	GITGATE_REFRESH => 0);
# the same gate, its operator allowing odd file modes (read as files)
my $MP = port(8095);
my $GATE_MODES = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_STORE => $redis->{url},
	GITGATE_REFRESH => 0, GITGATE_FILEMODES => 'scan');
my $GATE_FILES = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate-files",
	GITGATE_POLICY => "$d/gate-policy.json",
	GITGATE_FORGES => "$d/gate-forges.json");

my $BP = port(8096);
my $GATE_BUDGET = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate-budget",
	GITGATE_STORE => $redis->{url},
	GITGATE_REFRESH => 0,
	GITGATE_SCAN_MEMORY_MB => 8);

$t->write_file_expand('nginx.conf', gitgate_conf(policy => $redis->{url}, port => $GP, gate => $GATE,
	servers => <<"EOF"));
# GITGATE_FILEMODES=scan
server {
    listen 127.0.0.1:$MP;
    client_max_body_size 0;

    location / {
        bottle_attribute git;

$GATE_MODES
    }
}

# a file-source gate: the policy and the forges from files
server {
    listen 127.0.0.1:$FP;

    location / {
        bottle_attribute git;

$GATE_FILES
    }
}

# a gate with a small scan budget (GITGATE_SCAN_MEMORY_MB)
server {
    listen 127.0.0.1:$BP;
    client_max_body_size 0;

    location / {
        bottle_attribute git;

$GATE_BUDGET
    }
}
EOF

gitgate_fcgiwrap($t, $sock, children => 4);

mkdir "$d/gate";
mkdir "$d/gate-budget";

my $w = forge_repo($t, 'acme/widgets', commits => 2);
forge_repo($t, 'acme/docs', commits => 1);

my @BOTTLES = (
	{ id => 'writer', token => $TOK{writer}, canary => $CANARY,
		egress_tokens => { API => $EGRESS },
		held_secrets => { DB_PASSWORD => $HELD },
		repos => [ 'github.com/acme/widgets:write', 'github.com/acme/docs' ],
		routes => [] },
	{ id => 'reader', token => $TOK{reader},
		repos => [ 'github.com/acme/widgets' ], routes => [] },
	{ id => 'stranger', token => $TOK{stranger}, routes => [] },
	{ id => 'strict', token => $TOK{strict}, audit => { delivery => 'required' },
		repos => [ 'github.com/acme/docs:write' ], routes => [] });
store_put($t, @BOTTLES);
write_policy($t, 'gate-policy.json', { bottles => \@BOTTLES });
write_policy($t, 'gate-forges.json', { forges => { 'github.com' => {
	kind => 'github', url => $forge->{url}, token_file => "$d/forge-token" } } });
mkdir "$d/gate-files";

# the operator connects the forge: its token from a file
$t->write_file('forge-token', "$FORGE_TOKEN\n");
my $connected = Test::Bottle::bottlectl($t, $redis, 'forge', 'connect',
	'github.com', '--kind', 'github', '--url', "$forge->{url}/",
	'--token-file', "$d/forge-token", '--account', 'gate-bot');
my $forges = Test::Bottle::bottlectl($t, $redis, 'forges');

$t->run()->plan(164);

###############################################################################

my $all = '';

# the agent's git: https://github.com/ through the gate, as docs/gitgate.md
# configures it, with the bottle's identity token as the password

sub agent {
	my ($who, @args) = @_;
	my $o = ref $args[0] eq 'HASH' ? shift @args : {};
	my $base = defined $who
		? "http://x:$TOK{$who}\@127.0.0.1:$GP/github.com/"
		: "http://127.0.0.1:$GP/github.com/";
	$base = $o->{base} if $o->{base};
	my ($rc, $out) = run_git($t, $o,
		'-c', "url.$base.insteadOf=https://github.com/", @args);
	$all .= $out;
	return ($rc, $out);
}

sub wd { return { dir => "$d/$_[0]", %{$_[1] || {}} }; }

sub head_of {
	my ($dir, $ref) = @_;
	my (undef, $h) = run_git($t, wd($dir), 'rev-parse', $ref // 'HEAD');
	chomp $h;
	return $h;
}

sub gate_ref {
	my ($ref) = @_;
	my (undef, $h) = run_git($t, "--git-dir=$d/gate/github.com/acme/"
		. 'widgets.git', 'rev-parse', '--verify', '-q', $ref);
	chomp $h;
	return $h;
}

my $URL = 'https://github.com/acme/widgets';

like($connected, qr/^github\.com connected \(github, /, 'bottlectl forge connect');
is($forges, "github.com\tgithub\t$forge->{url}/\tgate-bot\n",
	'bottlectl forges, without the token');
is(redis_cli($t, 'HGET', 'bottle:forge:github.com', 'token'),
	"$FORGE_TOKEN\n", 'the token in the store');

###############################################################################
# clone, push: the forge gets the push byte for byte, with the gate's token

my ($rc, $out) = agent('writer', 'clone', '-q', $URL, 'work');
is($rc, 0, 'clone through the gate') or diag($out);
is(head_of('work'), $w->{head}, 'clone: the forge\'s HEAD');
ok(-e "$d/work/commit-2.txt", 'clone: checked out');

# the request left git-gate's heartbeat (docs/control-plane.md): idle, not
# stale, in bottlectl status
my $st = eval { JSON::PP->new->decode(Test::Bottle::bottlectl($t, $redis,
	'--json', 'status')) } // {};
my ($gg) = grep { $_->{kind} eq 'git-gate' } @{$st->{components} // []};
ok($gg && $gg->{state} eq 'idle' && $gg->{period_ms} == 0
	&& $gg->{pid} > 0 && $gg->{age_ms} < 60000,
	'clone: git-gate\'s heartbeat, idle');

$t->write_file('work/hello.txt', "hello from the bottle\n");
# more than http.postBuffer (1 MB): the pack goes chunked
srand(42);
$t->write_file('work/big.bin', join '', map { pack('N', rand(2**32)) }
	1 .. (400 * 1024));
run_git($t, wd('work'), 'add', 'hello.txt', 'big.bin');
run_git($t, wd('work'), 'commit', '-q', '-m', 'agent work');
my $head = head_of('work');

my $conns = forge_connections($t);
my $nlog = @{forge_log($t)};

($rc, $out) = agent('writer', wd('work'), 'push', 'origin', 'main');
is($rc, 0, 'clean push') or diag($out);
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, $head,
	'push: the forge has the commit');
is(gate_ref('refs/heads/main'), $head, 'push: the gate\'s copy moved');

my $gd = "--git-dir=$w->{path}";
is((run_git($t, $gd, 'cat-file', '-p', $head))[1],
	(run_git($t, wd('work'), 'cat-file', '-p', $head))[1],
	'push: commit byte-identical');
is((run_git($t, $gd, 'cat-file', 'blob', "$head:hello.txt"))[1],
	"hello from the bottle\n", 'push: blob arrived');
ok((run_git($t, $gd, 'cat-file', 'blob', "$head:big.bin"))[1]
	eq $t->read_file('work/big.bin'), 'push: a 1.6 MB blob, chunked, arrived');

my @l = @{forge_log($t)}[$nlog .. $#{forge_log($t)}];
my @rp = grep { $_->{uri} =~ /git-receive-pack$/ && $_->{method} eq 'POST' }
	@l;
# (two POSTs: git probes the forge before a chunked body)
ok(@rp >= 1 && @rp <= 2, 'push: forwarded to the forge');
is(join(' ', grep { $_ ne '200:ok:x-access-token' }
	map { "$_->{status}:$_->{auth}:$_->{user}" } @rp), '',
	'push: sent with the gate\'s token');

###############################################################################
# a thin push's bases stored in the copy, not compressed (the gate's
# receive-pack at core.compression=0: docs/gitgate.md, "What is scanned"),
# never in what the gate sends the forge

($rc, $out) = agent('writer', 'clone', '-q', 'https://github.com/acme/widgets',
	'stored');
is($rc, 0, 'stored bases: a clone') or diag($out);
my $LOG = join '', map { "entry $_ of the bottle's log\n" } 1 .. 4000;
$t->write_file('stored/log.txt', $LOG);
run_git($t, wd('stored'), 'add', 'log.txt');
run_git($t, wd('stored'), 'commit', '-q', '-m', 'a log');
($rc, $out) = agent('writer', wd('stored'), 'push', 'origin',
	'HEAD:refs/heads/stored');
is($rc, 0, 'stored bases: a log pushed') or diag($out);
my $old_log = head_of('stored', 'HEAD:log.txt');
$t->write_file('stored/log.txt', $LOG . "one more entry\n");
$t->write_file('stored/notes.txt', "the same note again\n" x 10000);
run_git($t, wd('stored'), 'add', 'log.txt', 'notes.txt');
run_git($t, wd('stored'), 'commit', '-q', '-m', 'appended');
$nlog = @{forge_log($t)};
($rc, $out) = agent('writer', wd('stored'), 'push', 'origin',
	'HEAD:refs/heads/stored');
is($rc, 0, 'stored bases: an append pushed') or diag($out);
my $copy = "$d/gate/github.com/acme/widgets.git";
my @stored = grep { /^$old_log blob +(\d+) (\d+) \d+\s*$/ && $2 > $1 }
	map { `git verify-pack -v $_` } glob("$copy/objects/pack/*.idx");
is(scalar @stored, 1, 'stored bases: the copy holds the old log, stored, '
	. 'in the pack of the push that appended to it');
my @posts = grep { $_->{uri} =~ /git-receive-pack$/ && $_->{method} eq 'POST' }
	@{forge_log($t, since => $nlog)};
ok(@posts && $posts[-1]{bytes_in} < 20000, 'stored bases: the forge got the '
	. 'push compressed (' . ($posts[-1]{bytes_in} // '?') . ' bytes for '
	. '200 KB of a note)');

my $j = journal_events($t);
my ($ev) = grep { $_->{type} eq 'git.push' } @$j;
is(join(' ', map { $ev->{$_} // '' } qw/ bottle repo verdict producer /),
	'writer github.com/acme/widgets accepted git-gate',
	'journal: git.push accepted');
is(join(' ', map { "$_->{ref}:$_->{old}:$_->{new}" } @{$ev->{refs} || []}),
	"refs/heads/main:$w->{head}:$head", 'journal: the ref, old -> new');

# a second clone and a fetch see the push

($rc, $out) = agent('writer', 'clone', '-q', $URL, 'work2');
is(head_of('work2'), $head, 'second clone: the pushed commit') or diag($out);

# concurrent fetches share a refresh: one that ends while a fetch waits for
# it serves that fetch too

my $nl = @{forge_log($t)};
my @pids;
for my $i (1 .. 6) {
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		agent('writer', 'ls-remote', $URL);
		POSIX::_exit(0);
	}
	push @pids, $pid;
}
waitpid($_, 0) for @pids;
my $refreshes = grep { $_->{method} eq 'GET' && $_->{status} == 200
	&& $_->{uri} =~ /info\/refs\?service=git-upload-pack/ }
	@{forge_log($t)}[$nl .. $#{forge_log($t)}];
ok($refreshes >= 1 && $refreshes < 6, "6 fetches at once: $refreshes refreshes");

###############################################################################
# row 4: token shapes; row 5: the bottle's values anywhere; the forge sees
# nothing

sub refused_push {
	my ($name, $prep, $rule, @push) = @_;

	run_git($t, wd('work'), 'checkout', '-q', '-B', 'try', $head);
	$prep->();
	my $c = forge_connections($t);
	my $refs = forge_refs($t, 'acme/widgets');

	my ($rc, $out) = agent('writer', wd('work'), 'push', 'origin',
		@push ? @push : 'try');
	isnt($rc, 0, "$name: push refused");
	like($out, qr/^remote: git-gate refused this push \(rule: \Q$rule\E/m,
		"$name: remote: names the rule");
	ok(forge_connections($t) == $c
		&& same_refs($refs),
		"$name: forge untouched");
}

sub commit_file {
	my ($file, $text, @opt) = @_;
	my $path = "$d/work/$file";
	(my $dir = $path) =~ s{/[^/]*$}{};
	system('mkdir', '-p', $dir);
	$t->write_file("work/$file", $text);
	run_git($t, wd('work'), 'add', $file);
	run_git($t, wd('work', { env => { @opt } }), 'commit', '-q', '-m',
		"add $file");
}

refused_push('github token', sub { commit_file('cfg.txt', "t=$GHP\n") },
	'github_pat');
refused_push('slack token', sub { commit_file('s.txt', "$SLACK\n") }, 'slack');

# the hook keeps the compiled rule databases in the gate's own directory
# for its next runs (issue 34)
my @hsdb = glob("$d/gate/.scan-cache/scan-*.hsdb");
is(scalar(@hsdb), 2, 'the push scan keeps its compiled databases in '
	. 'GITGATE_DIR/.scan-cache');
refused_push('gitlab token', sub { commit_file('g.txt', "k: $GITLAB\n") },
	'gitlab');

refused_push('canary in a message', sub {
	$t->write_file('work/m.txt', "m\n");
	run_git($t, wd('work'), 'add', 'm.txt');
	run_git($t, wd('work'), 'commit', '-q', '-m', "note $CANARY");
}, 'canary');
refused_push('held secret in a path',
	sub { commit_file("dir/$HELD.txt", "x\n") }, 'held_secret:DB_PASSWORD');
refused_push('egress token in a tag body', sub {
	run_git($t, wd('work'), 'tag', '-a', 'v9', '-m', "tag $EGRESS");
}, 'egress_token:API', 'refs/tags/v9');
refused_push('canary in a ref name', sub { commit_file('r.txt', "r\n") },
	'canary', "try:refs/heads/x-$CANARY");
refused_push('held secret in an identity', sub {
	commit_file('a.txt', "a\n", GIT_AUTHOR_NAME => $HELD);
}, 'held_secret:DB_PASSWORD');
refused_push('base64 of a held secret in a file', sub {
	commit_file('b.txt', encode_base64($HELD));
}, 'held_secret:DB_PASSWORD');

# decoded views (issue 26, item 6): UTF-16 text, gzip and zlib data; what
# cannot be decoded is refused with its reason, the forge sees nothing

sub gz {
	my ($data) = @_;
	my $out;
	IO::Compress::Gzip::gzip(\$data => \$out, Minimal => 1) or die "gzip\n";
	return $out;
}

sub u16 { return Encode::encode($_[0], $_[1]); }

refused_push('a token in a UTF-16LE file with a BOM', sub {
	commit_file('u16le.txt', u16('UTF-16LE', "\x{feff}a\nt=$GHP\n"));
}, 'github_pat_classic');
like($all, qr/^remote:   where: commit [0-9a-f]{12} file u16le\.txt \(UTF-16LE\) line 2/m,
	'UTF-16LE: remote: names the file and its view');
refused_push('the canary in a UTF-16BE file, no BOM', sub {
	commit_file('u16be.txt', u16('UTF-16BE', "\x{e9}t\x{e9}\n$CANARY\n"));
}, 'canary');
refused_push('a held secret in UTF-16LE at an odd offset', sub {
	commit_file('odd.bin', "\x01" . u16('UTF-16LE', "k=$HELD\n"));
}, 'held_secret:DB_PASSWORD');
refused_push('the canary in a .gz blob', sub {
	commit_file('n.txt.gz', gz("x\n$CANARY\n"));
}, 'canary');
refused_push('a held secret in a zlib stream', sub {
	commit_file('d.z', Compress::Zlib::compress("v=$HELD\n"));
}, 'held_secret:DB_PASSWORD');
refused_push('a token in gzip inside gzip', sub {
	commit_file('two.gz', gz(gz("t=$GHP\n")));
}, 'github_pat_classic');
refused_push('a gzip bomb over the ratio', sub {
	commit_file('bomb.gz', gz("\0" x (4 << 20)));
}, 'undecodable');
like($all, qr/^remote:   where: commit [0-9a-f]{12} file bomb\.gz \(gzip: decodes to more than \d+ bytes, the cap/m,
	'gzip bomb: remote: says why');
refused_push('a truncated gzip', sub {
	my $z = gz(join('', map { "line $_\n" } 1 .. 300));
	commit_file('cut.gz', substr($z, 0, length($z) - 10));
}, 'undecodable');

($ev) = grep { $_->{type} eq 'git.push' && $_->{verdict} eq 'refused' }
	@{journal_events($t)};
ok($ev && $ev->{rule} && !grep({ defined $_->{ref} } @{$ev->{refs}}),
	'journal: refused push, rule, no ref names');

###############################################################################
# issue 26: hand-made objects (git hash-object --literally) are read byte
# for byte: odd tree modes, commit header lines after committer, bytes
# after a NUL, tag header lines; the forge gets no request for any

my $nraw = 0;

sub raw_object {
	my ($type, $bytes) = @_;
	my $f = "raw" . ++$nraw;
	$t->write_file($f, $bytes);
	my (undef, $id) = run_git($t, wd('work'), 'hash-object', '-t', $type,
		'--literally', '-w', "$d/$f");
	chomp $id;
	return $id;
}

# $head's tree and one more file, in git's order
sub tree_plus {
	my ($mode, $name, $blob) = @_;
	my (undef, $ls) = run_git($t, wd('work'), 'ls-tree', $head);
	my @e = map { /^0*(\d+) \w+ ([0-9a-f]+)\t(.*)$/ ? [ $1, $3, $2 ] : () }
		split /\n/, $ls;
	push @e, [ $mode, $name, $blob ];
	@e = sort { ($a->[0] =~ /^4/ ? "$a->[1]/" : $a->[1])
		cmp ($b->[0] =~ /^4/ ? "$b->[1]/" : $b->[1]) } @e;
	return raw_object('tree', join('', map { "$_->[0] $_->[1]\0"
		. pack('H*', $_->[2]) } @e));
}

my $RAW_ID = 'Agent <agent@bottle.test> 1700000000 +0000';

sub raw_commit {
	my (%o) = @_;
	my $tree = $o{tree} // head_of('work', "$head^{tree}");
	return raw_object('commit', "tree $tree\nparent $head\n"
		. "author $RAW_ID\n" . ($o{committer} // "committer $RAW_ID\n")
		. ($o{extra} // '') . "\n" . ($o{msg} // "hand-made\n"));
}

sub raw_tag {
	my ($name, $extra, $msg) = @_;
	return raw_object('tag', "object $head\ntype commit\ntag $name\n"
		. "tagger $RAW_ID\n$extra\n$msg");
}

# gate_refused($name, $src, $ref, $rule, $where[, $port]): the push of $src
# to $ref refused, rule and where on "remote:" lines, the forge's log and
# refs as they were
# (each to a ref of its own: none is a fast-forward of another)
my $nref = 0;

# the forge's log once the last push's lines are written
sub forge_log_settled {
	my $n = @{forge_log($t)};
	for (1 .. 20) {
		sleep 0.25;
		my $m = @{forge_log($t)};
		return $m if $m == $n;
		$n = $m;
	}
	return $n;
}

sub on_forge {
	return (run_git($t, $gd, 'cat-file', '-e', $_[0]))[0] == 0;
}

sub gate_refused {
	my ($name, $src, $ref, $rule, $where, $port) = @_;
	$ref .= '-' . ++$nref if $ref eq 'refs/heads/raw';
	my $nlog = forge_log_settled();
	my $c = forge_connections($t);
	my $refs = forge_refs($t, 'acme/widgets');
	my ($rc, $out) = agent('writer', wd('work', $port ? { base =>
		"http://x:$TOK{writer}\@127.0.0.1:$port/github.com/" } : {}),
		'push', 'origin', "$src:$ref");
	isnt($rc, 0, "$name: push refused");
	like($out, qr/^remote: git-gate refused this push \(rule: \Q$rule\E\)\s*\nremote:   where: $where/m,
		"$name: remote: names the rule and where") or diag($out);
	ok(forge_log_settled() == $nlog && forge_connections($t) == $c
		&& same_refs($refs)
		&& !on_forge($src),
		"$name: the forge saw no request, has not the object");
}

my $tok_blob = raw_object('blob', "t=$GHP\n");
my $clean_blob = raw_object('blob', "nothing to see\n");

for my $mode (qw/ 100664 100600 /) {
	gate_refused("a token in a file of mode $mode",
		raw_commit(tree => tree_plus($mode, 'cfg.txt', $tok_blob)),
		'refs/heads/raw', 'bad_filemode',
		"commit [0-9a-f]{12} file cfg.txt: mode $mode");
}

for my $case (
	[ 'a continuation of the committer line', committer =>
		"committer $RAW_ID\n $GHP\n", 'github_pat_classic', 'committer' ],
	[ 'a parent header after committer', extra => "parent $HELD\n",
		'held_secret:DB_PASSWORD', 'header' ],
	[ 'an author header after committer', extra => "author $EGRESS\n",
		'egress_token:API', 'header' ],
	[ 'a tree header after committer', extra => "tree $CANARY\n",
		'canary', 'header' ],
	[ 'an unknown header', extra => "x-note $GHP\n", 'github_pat_classic',
		'header' ])
{
	my ($name, $part, $bytes, $rule, $where) = @$case;
	gate_refused("a commit with $name", raw_commit($part => $bytes),
		'refs/heads/raw', $rule, "commit [0-9a-f]{12} $where");
}

# bytes after a NUL in a commit: the gate's fsck (receive.fsckObjects)
# refuses them (nulInCommit) before the scan
{
	my $nlog = forge_log_settled();
	my $c = forge_connections($t);
	my $nul = raw_commit(msg => "fix\0$CANARY\n");
	my ($rc, $out) = agent('writer', wd('work'), 'push', 'origin',
		"$nul:refs/heads/raw-nul");
	isnt($rc, 0, 'a commit message with bytes after a NUL: refused');
	like($out, qr/^remote: .*nulInCommit/m,
		'a commit message with bytes after a NUL: remote: says why');
	ok(forge_log_settled() == $nlog && forge_connections($t) == $c
		&& !on_forge($nul),
		'a commit message with bytes after a NUL: the forge saw no request');
}

gate_refused('a tag with a header after tagger',
	raw_tag('vx1', "x-extra $CANARY\n", "release\n"), 'refs/tags/vx1',
	'canary', 'tag vx1 header');
gate_refused('a tag with message bytes after a NUL',
	raw_tag('vx2', '', "release\0$HELD\n"), 'refs/tags/vx2',
	'held_secret:DB_PASSWORD', 'tag vx2 message');

# the operator allows odd modes (GITGATE_FILEMODES=scan): read as files

{
	my $clean = raw_commit(tree => tree_plus('100664', 'cfg.txt', $clean_blob));
	my ($rc, $out) = agent('writer', wd('work', { base =>
		"http://x:$TOK{writer}\@127.0.0.1:$MP/github.com/" }), 'push',
		'origin', "$clean:refs/heads/modes");
	is($rc, 0, 'GITGATE_FILEMODES=scan: a clean file of mode 100664 pushed')
		or diag($out);
	is(forge_refs($t, 'acme/widgets')->{'refs/heads/modes'}, $clean,
		'GITGATE_FILEMODES=scan: the forge has it');
}

gate_refused('GITGATE_FILEMODES=scan: a token in a file of mode 100664',
	raw_commit(tree => tree_plus('100664', 'cfg.txt', $tok_blob)),
	'refs/heads/raw', 'github_pat_classic',
	'commit [0-9a-f]{12} file cfg.txt line 1', $MP);

###############################################################################
# grants

($rc, $out) = agent('stranger', 'clone', '-q', $URL, 'nogrant');
isnt($rc, 0, 'no grant: clone refused');
like($out, qr/remote error: git-gate: this bottle has no grant for github.com\/acme\/widgets \(rule: repo_not_granted\); ask the operator with add-repo github.com\/acme\/widgets/,
	'no grant: the rule and the add-repo hint');

($rc, $out) = agent('reader', 'clone', '-q', $URL, 'ro');
is($rc, 0, 'read-only grant: clone') or diag($out);
is(head_of('ro'), $head, 'read-only grant: the content');

$t->write_file('ro/r.txt', "r\n");
run_git($t, wd('ro'), 'add', 'r.txt');
run_git($t, wd('ro'), 'commit', '-q', '-m', 'r');
my $c = forge_connections($t);
($rc, $out) = agent('reader', wd('ro'), 'push', 'origin', 'main');
isnt($rc, 0, 'read-only grant: push refused');
like($out, qr/rule: repo_read_only\); ask the operator with add-repo github.com\/acme\/widgets:write/,
	'read-only grant: the rule and the :write hint');
is(forge_connections($t), $c, 'read-only grant: forge untouched');

# a client that skips the advertisement and POSTs a pack at once

sub gate_post {
	my ($who, $path) = @_;
	return Test::Nginx::http("POST $path HTTP/1.1\r\nHost: gate\r\n"
		. 'Authorization: ' . basic('x', $TOK{$who}) . "\r\n"
		. "Content-Type: application/x-git-receive-pack-request\r\n"
		. "Content-Length: 4\r\nConnection: close\r\n\r\n0000",
		PeerAddr => "127.0.0.1:$GP") // '';
}

$c = forge_connections($t);
like(gate_post('reader', '/github.com/acme/widgets/git-receive-pack'),
	qr/^HTTP\/1\.1 403 .*rule: repo_read_only/s,
	'read-only grant: a POST of receive-pack is 403');
like(gate_post('stranger', '/github.com/acme/widgets.git/git-receive-pack'),
	qr/^HTTP\/1\.1 403 .*rule: repo_not_granted/s,
	'no grant: a POST of receive-pack is 403');
like(gate_post('stranger', '/github.com/acme/widgets.git/git-upload-pack'),
	qr/^HTTP\/1\.1 403 .*rule: repo_not_granted/s,
	'no grant: a POST of upload-pack is 403');
is(forge_connections($t), $c, 'the POSTs: forge untouched');

($rc, $out) = agent('writer', 'ls-remote', 'https://github.com/acme/other');
like($out, qr/repo_not_granted/, 'a repo not granted at all');

###############################################################################
# attribution

($rc, $out) = agent(undef, 'ls-remote', $URL);
isnt($rc, 0, 'no credentials: refused');
like(gate_get('/github.com/acme/widgets/info/refs?service=git-upload-pack',
	port => $GP), qr/^HTTP\/1\.1 401 .*^WWW-Authenticate: Basic realm="git-gate"/ms,
	'no credentials: 401 with the challenge');

($rc, $out) = agent(undef, { base =>
	"http://x:wrong-token-00000000\@127.0.0.1:$GP/github.com/" },
	'ls-remote', $URL);
isnt($rc, 0, 'wrong token: refused');
like($out, qr/Authentication failed|401/, 'wrong token: authentication failed');

($rc, $out) = agent('stranger', '-c', 'http.extraHeader=X-Bottle-Id: writer',
	'ls-remote', $URL);
like($out, qr/repo_not_granted/, 'a bottle id header of the agent\'s: ignored');
($rc, $out) = agent(undef, '-c', 'http.extraHeader=X-Bottle-Id: writer',
	'ls-remote', $URL);
isnt($rc, 0, 'a bottle id header without credentials: refused');

###############################################################################
# the forge moved: its refusal is the push's, the gate's copy stays

($rc, $out) = run_git($t, 'clone', '-q', $w->{auth_url}, 'direct');
$t->write_file('direct/d.txt', "moved on the forge\n");
run_git($t, wd('direct'), 'add', 'd.txt');
run_git($t, wd('direct'), 'commit', '-q', '-m', 'moved');
($rc, $out) = run_git($t, wd('direct'), 'push', '-q', 'origin', 'main');
is($rc, 0, 'forge moved (a push straight to it)') or diag($out);
my $moved = head_of('direct');

run_git($t, wd('work'), 'checkout', '-q', '-B', 'main', $head);
commit_file('late.txt', "late\n");
($rc, $out) = agent('writer', wd('work'), 'push', 'origin', 'main');
isnt($rc, 0, 'stale push refused');
like($out, qr/^remote: forge: .*(stale info|fetch first|rejected)/m,
	'stale push: the forge\'s message');
like($out, qr/rule: forge_refused/, 'stale push: the rule');
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, $moved,
	'stale push: the forge kept its commit');
is(gate_ref('refs/heads/main'), $head, 'stale push: the gate did not move');

# a fetch refreshes the gate's copy, then the push goes

($rc, $out) = agent('writer', wd('work'), 'pull', '-q', '--no-rebase',
	'--no-edit', 'origin', 'main');
is($rc, 0, 'pull through the gate') or diag($out);
($rc, $out) = agent('writer', wd('work'), 'push', 'origin', 'main');
is($rc, 0, 'push after the pull') or diag($out);
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, head_of('work'),
	'push after the pull: arrived');

###############################################################################
# audit.delivery "required": the push is journaled before the forge is
# contacted, then its verdict

($rc, $out) = agent('strict', 'clone', '-q', 'https://github.com/acme/docs',
	'docs');
is($rc, 0, 'required journal: clone') or diag($out);
$t->write_file('docs/n.txt', "n\n");
run_git($t, wd('docs'), 'add', 'n.txt');
run_git($t, wd('docs'), 'commit', '-q', '-m', 'n');
($rc, $out) = agent('strict', wd('docs'), 'push', 'origin', 'main');
is($rc, 0, 'required journal: push') or diag($out);
is(join(' ', map { $_->{verdict} } grep { $_->{type} eq 'git.push'
	&& $_->{bottle} eq 'strict' } @{journal_events($t)}), 'forwarding accepted',
	'required journal: forwarding, then accepted');
my $verified = eval { Test::Bottle::bottlectl($t, $redis, 'audit', 'verify') }
	// $@;
like($verified, qr/^audit verify: whole: \d+ events, seq 1\.\./m,
	'journal: the pushes\' events in the hash chain, whole');

###############################################################################
# a file-source gate: GITGATE_POLICY and GITGATE_FORGES

($rc, $out) = agent('writer', { base =>
	"http://x:$TOK{writer}\@127.0.0.1:$FP/github.com/" }, 'clone', '-q',
	$URL, 'files');
is($rc, 0, 'file source: clone') or diag($out);
is(head_of('files'), forge_refs($t, 'acme/widgets')->{'refs/heads/main'},
	'file source: the forge\'s content');
$t->write_file('files/f.txt', "from the file-source gate\n");
run_git($t, wd('files'), 'add', 'f.txt');
run_git($t, wd('files'), 'commit', '-q', '-m', 'f');
($rc, $out) = agent('writer', wd('files', { base =>
	"http://x:$TOK{writer}\@127.0.0.1:$FP/github.com/" }), 'push', 'origin',
	'main');
is($rc, 0, 'file source: push') or diag($out);
is(forge_refs($t, 'acme/widgets')->{'refs/heads/main'}, head_of('files'),
	'file source: arrived');
($rc, $out) = agent('reader', wd('files', { base =>
	"http://x:$TOK{reader}\@127.0.0.1:$FP/github.com/" }), 'push', 'origin',
	'main');
like($out, qr/repo_read_only/, 'file source: a read grant refuses a push');

###############################################################################
# decoded views that pass: clean UTF-16, gzip, binary files; a modified gzip
# and UTF-16 file whose old version, with a held secret, the forge has

($rc, $out) = agent('writer', wd('work'), 'fetch', '-q', 'origin');
run_git($t, wd('work'), 'checkout', '-q', '-B', 'dec', 'origin/main');
my $u16old = "\x{feff}v=$HELD\nline two\n";
my $gzold = "v=$HELD\nline two\n";
$t->write_file('work/o16.txt', u16('UTF-16LE', $u16old));
$t->write_file('work/o.gz', gz($gzold));
run_git($t, wd('work'), 'add', 'o16.txt', 'o.gz');
run_git($t, wd('work'), 'commit', '-q', '-m', 'seeded on the forge');
# on the forge behind the gate's back
($rc, $out) = run_git($t, wd('work'), 'push', '-q', $w->{path},
	'dec:refs/heads/dec');
is($rc, 0, 'decoded: old versions with a held secret seeded on the forge')
	or diag($out);
($rc, $out) = agent('writer', wd('work'), 'fetch', '-q', 'origin');
$t->write_file('work/o16.txt', u16('UTF-16LE', "${u16old}line three\n"));
$t->write_file('work/o.gz', gz("${gzold}line three\n"));
$t->write_file('work/clean16.txt', u16('UTF-16BE', "hello \x{4e16}\n"));
$t->write_file('work/clean.gz', gz("just text\n" x 20));
$t->write_file('work/clean.z', Compress::Zlib::compress("plain\n"));
$t->write_file('work/rand.bin', join('', map { chr(($_ * 7919 + 13) % 256) }
	1 .. 50000));
run_git($t, wd('work'), 'add', '-A');
run_git($t, wd('work'), 'commit', '-q', '-m', 'edit');
($rc, $out) = agent('writer', wd('work'), 'push', 'origin', 'dec');
is($rc, 0, 'decoded: clean UTF-16, gzip, zlib and binary files, and lines '
	. 'added to a UTF-16 and a gzip file that held a value: accepted')
	or diag($out);
is(forge_refs($t, 'acme/widgets')->{'refs/heads/dec'}, head_of('work'),
	'decoded: the push arrived on the forge');

# a value added to the UTF-16 file (the push's thin pack: both versions
# read as extents, the new one read whole for its views)
$t->write_file('work/o16.txt', u16('UTF-16LE', "${u16old}line three\n"
	. "k=$EGRESS\n"));
run_git($t, wd('work'), 'commit', '-q', '-a', '-m', 'edit again');
($rc, $out) = agent('writer', wd('work'), 'push', 'origin', 'dec');
like($out, qr/^remote: git-gate refused this push \(rule: egress_token:API\)\s*\nremote:   where: commit [0-9a-f]{12} file o16\.txt \(UTF-16LE\) line 4/m,
	'decoded: a value added to a modified UTF-16 file: refused, on its line');

# the scan's budget (GITGATE_SCAN_MEMORY_MB 8 on this gate's server)

($rc, $out) = agent('writer', { base =>
	"http://x:$TOK{writer}\@127.0.0.1:$BP/github.com/" }, 'clone', '-q',
	$URL, 'budget');
is($rc, 0, 'budget: clone') or diag($out);
$t->write_file('budget/big.txt', join('', map { "line $_ of the text\n" }
	1 .. 800000));
run_git($t, wd('budget'), 'add', 'big.txt');
run_git($t, wd('budget'), 'commit', '-q', '-m', 'big');
sub refs_now {
	my $r = forge_refs($t, 'acme/widgets');
	return join(',', map { "$_=$r->{$_}" } sort keys %$r);
}
my $frefs = refs_now();
($rc, $out) = agent('writer', wd('budget', { base =>
	"http://x:$TOK{writer}\@127.0.0.1:$BP/github.com/" }), 'push', 'origin',
	'HEAD:refs/heads/budget');
isnt($rc, 0, 'budget: a push over GITGATE_SCAN_MEMORY_MB refused');
like($out, qr/^remote: git-gate refused this push \(rule: scan_budget\)\s*\nremote:   where: the scan ran over its memory budget of 8 MB \(GITGATE_SCAN_MEMORY_MB\)/m,
	'budget: remote: says which budget and its value');
is(refs_now(), $frefs, 'budget: the forge got nothing');

###############################################################################
# the operator disconnects the forge; other kinds of forge are refused

like(Test::Bottle::bottlectl($t, $redis, 'forge', 'rm', 'github.com'),
	qr/^github\.com removed$/, 'bottlectl forge rm');
($rc, $out) = agent('writer', 'ls-remote', $URL);
like($out, qr/the forge github\.com is not connected to this gateway \(rule: forge_not_connected\)/,
	'a disconnected forge: refused');
ok(!eval { Test::Bottle::bottlectl($t, $redis, 'forge', 'connect',
	'gitlab.com', '--kind', 'github', '--url', 'https://gitlab.com/',
	'--token-file', "$d/forge-token"); 1 }
	&& $@ =~ /runs GitLab/, 'bottlectl forge connect: GitLab refused');
is(Test::Bottle::bottlectl($t, $redis, 'forges'), '', 'no forge left');

###############################################################################
# the forge's token is in nothing the bottle sees

unlike($all, qr/\Q$FORGE_TOKEN\E/, 'forge token in no git output');
my $raw = '';
for my $p ('/github.com/acme/widgets/info/refs?service=git-upload-pack',
	'/github.com/acme/widgets/info/refs?service=git-receive-pack',
	'/github.com/acme/nothing/info/refs?service=git-upload-pack')
{
	$raw .= gate_get($p, port => $GP, headers => { Authorization =>
		basic('x', $TOK{writer}) }) // '';
}
unlike($raw, qr/\Q$FORGE_TOKEN\E/, 'forge token in no answer');

###############################################################################

sub gate_get {
	my ($uri, %o) = @_;
	my $h = join '', map { "$_: $o{headers}{$_}\r\n" }
		keys %{$o{headers} || {}};
	return Test::Nginx::http("GET $uri HTTP/1.1\r\nHost: gate\r\n$h"
		. "Connection: close\r\n\r\n",
		PeerAddr => "127.0.0.1:$o{port}");
}

###############################################################################

# the forge's refs as they were: compared by name, sorted (two hashes of
# the same refs need not list them in the same order)
sub same_refs {
	my ($refs) = @_;
	my $now = forge_refs($t, 'acme/widgets');
	return join(',', map { "$_=$now->{$_}" } sort keys %$now)
		eq join(',', map { "$_=$refs->{$_}" } sort keys %$refs);
}
