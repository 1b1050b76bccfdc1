#!/usr/bin/perl

# Commit trailers (docs/gitgate.md, "Commit trailers"): attribution, not
# secret protection.  A pushed commit whose trailer block (the message's
# last paragraph, never its title) holds a Bottle-Id trailer must name the
# bottle that pushes it; a repo listed in git_gate.trailer_required needs
# one on every new commit.  Hostile messages are written raw (git
# hash-object --literally): trailers in other paragraphs, duplicated, in
# any case, with a space before the colon, folded, CRLF, NUL bytes; a push
# of several commits with one wrong is refused whole, naming that commit.
# Refusals reach the agent as remote: lines (rule bottle_trailer, the
# commit), the journal as git.push refused; the forge sees nothing.
#
# GITGATE_CGI=path runs another build.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use JSON::PP;

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $CGI = gitgate_cgi();
plan(skip_all => "$CGI not built (make gitgate)") unless -x $CGI;

my $t = Test::Nginx->new()->has(qw/http fastcgi bottle/)->has_daemon('git')
	->has_daemon($Test::Bottle::Forge::FCGIWRAP)
	->has_daemon($Test::Bottle::REDIS);
my $d = $t->testdir();

my $FORGE_TOKEN = 'forge-' . 'trailer-token-0451';
my $ALICE = 'alice-token-0123456789';

###############################################################################

my $redis = redis_start($t, port => 8091);
my $forge = forge_start($t, port => 8092, token => $FORGE_TOKEN);
my $GP = port(8093);
my $sock = "$d/gate-fcgi.sock";

my $GATE = gitgate_fastcgi($sock, GITGATE_DIR => "$d/gate",
	GITGATE_STORE => $redis->{url}, GITGATE_REFRESH => 0);

$t->write_file_expand('nginx.conf', gitgate_conf(policy => $redis->{url},
	port => $GP, gate => $GATE));

gitgate_fcgiwrap($t, $sock, children => 2);
mkdir "$d/gate";

forge_repo($t, 'acme/free', commits => 1);
forge_repo($t, 'acme/strict', commits => 1);

my $put = store_put($t, { id => 'alice', token => $ALICE,
	repos => [ 'github.com/acme/free:write', 'github.com/acme/strict:write' ],
	git_gate => { trailer_required => [ 'github.com/ACME/strict.git' ] },
	routes => [] });

$t->write_file('forge-token', "$FORGE_TOKEN\n");
Test::Bottle::bottlectl($t, $redis, 'forge', 'connect', 'github.com',
	'--kind', 'github', '--url', "$forge->{url}/", '--token-file',
	"$d/forge-token");

$t->run()->plan(31);

###############################################################################

sub agent {
	my ($dir, @args) = @_;
	my $base = "http://x:$ALICE\@127.0.0.1:$GP/github.com/";
	return run_git($t, { dir => "$d/$dir" },
		'-c', "url.$base.insteadOf=https://github.com/", @args);
}

sub git_in { return run_git($t, { dir => "$d/$_[0]" }, @_[1 .. $#_]); }

sub head_of {
	my (undef, $h) = git_in($_[0], 'rev-parse', $_[1] // 'HEAD');
	chomp $h;
	return $h;
}

# a commit object written raw on top of HEAD, its message exactly $msg;
# HEAD moved to it
sub raw_commit {
	my ($dir, $msg) = @_;
	my $tree = head_of($dir, 'HEAD^{tree}');
	my $parent = head_of($dir);
	my $body = "tree $tree\nparent $parent\n"
		. "author A U Thor <a\@example.com> 1700000000 +0000\n"
		. "committer A U Thor <a\@example.com> 1700000000 +0000\n\n$msg";
	$t->write_file('raw-commit', $body);
	my (undef, $id) = git_in($dir, 'hash-object', '--literally', '-t',
		'commit', '-w', "$d/raw-commit");
	chomp $id;
	git_in($dir, 'update-ref', 'HEAD', $id);
	return $id;
}

sub short { return substr($_[0], 0, 12); }

my ($rc, $out) = agent('.', 'clone', '-q', 'https://github.com/acme/free',
	'free');
is($rc, 0, 'clone free') or diag($out);
($rc, $out) = agent('.', 'clone', '-q', 'https://github.com/acme/strict',
	'strict');
is($rc, 0, 'clone strict') or diag($out);

# each case: [ message, accepted (1), refused for its trailer (0) or
# refused at all (2), what ] on acme/free

my @cases = (
	[ "plain\n\nno trailers here\n", 1, 'no trailer' ],
	[ "fix\n\nBottle-Id: alice\n", 1, 'its own bottle' ],
	[ "fix\n\nBottle-Id: bob\n", 0, 'another bottle' ],
	[ "fix\n\nbody\n\nSigned-off-by: A <a\@b>\nbottle-id: bob\n", 0,
		'lower case name' ],
	[ "fix\n\nBOTTLE-ID : bob\n", 0, 'upper case, space before the colon' ],
	[ "fix\n\nBottle-Id: alice\nBottle-Id: bob\n", 0,
		'duplicated, one wrong' ],
	[ "fix\n\nBottle-Id: alice\nBottle-Id:   alice  \n", 1,
		'duplicated, both right' ],
	[ "fix\n\nBottle-Id: bob\n\nlater words\n", 1,
		'not the last paragraph: not a trailer' ],
	[ "fix\n\nsome body text\nBottle-Id: bob is a name\nmore text\n", 0,
		'a Bottle-Id line in the last paragraph counts' ],
	[ "Bottle-Id: bob\n", 1, 'the title alone: not a trailer' ],
	[ "fix\r\n\r\nBottle-Id: bob\r\n", 0, 'CRLF' ],
	[ "fix\r\n\r\nBottle-Id: alice\r\n", 1, 'CRLF, its own' ],
	[ "fix\n \t\nBottle-Id: bob\n\n\n", 0,
		'a blank line of spaces, blank lines after' ],
	[ "fix\n\nBottle-Id: ali\n ce\n", 0, 'folded: "ali ce"' ],
	[ "fix\n\nBottle-Id: alice\0bob\n", 2,
		'a NUL in the value (git itself refuses: nulInCommit)' ],
	[ "fix\n\nBottle-Id: Alice\n", 0, 'another case of the id' ],
	[ "fix\n\nBottle-Id:\n", 0, 'empty value' ],
	[ "fix\n\nBottle-Id: bob", 0, 'no final newline' ],
);

my $forge_before = join ',', sort map { "$_" } %{forge_refs($t, 'acme/free')};
my $n = 0;

for my $case (@cases) {
	my ($msg, $ok, $what) = @$case;
	git_in('free', 'reset', '-q', '--hard', 'origin/main');
	my $id = raw_commit('free', $msg);
	($rc, $out) = agent('free', 'push', 'origin', 'HEAD:refs/heads/t' . $n++);
	if ($ok == 2) {
		isnt($rc, 0, "$what: refused") or diag($out);
	} elsif ($ok) {
		is($rc, 0, "$what: pushed") or diag($out);
	} else {
		like($out, qr/^remote: git-gate refused this push \(rule: bottle_trailer\) *\nremote:   where: commit \Q${\short($id)}\E\S*: trailer Bottle-Id: names another bottle than the one pushing/m,
			"$what: refused, naming the commit and the trailer")
			or diag($out);
	}
}

my $j = journal_events($t, 'git.push');
my ($refused) = grep { ($_->{rule} // '') eq 'bottle_trailer' } @$j;
ok($refused, 'journal: git.push with rule bottle_trailer') or diag(explain($j));

# several commits, one wrong: the push is refused whole, that one named

git_in('free', 'reset', '-q', '--hard', 'origin/main');
my $good1 = raw_commit('free', "one\n\nBottle-Id: alice\n");
my $bad = raw_commit('free', "two\n\nBottle-Id: mallory\n");
my $good2 = raw_commit('free', "three\n\nBottle-Id: alice\n");
($rc, $out) = agent('free', 'push', 'origin', 'HEAD:refs/heads/several');
isnt($rc, 0, 'several commits, one wrong: refused');
like($out, qr/where: commit \Q${\short($bad)}\E/, 'several: names the wrong one');
unlike($out, qr/\Q${\short($good1)}\E|\Q${\short($good2)}\E/,
	'several: not the right ones');
ok(!exists forge_refs($t, 'acme/free')->{'refs/heads/several'},
	'several: the forge got nothing');
like($out, qr/^remote: git-gate: a commit's Bottle-Id trailer must name the bottle that pushes it/m,
	'several: says how to fix it');

# the repo requires it: none is refused, its own passes

my $none = raw_commit('strict', "plain\n\nno trailer\n");
($rc, $out) = agent('strict', 'push', 'origin', 'HEAD:refs/heads/none');
like($out, qr/^remote: git-gate refused this push \(rule: bottle_trailer\) *\nremote:   where: commit \Q${\short($none)}\E\S*: trailer Bottle-Id: missing, and this repo requires it/m,
	'required: a commit without it refused') or diag($out);
git_in('strict', 'reset', '-q', '--hard', 'origin/main');
raw_commit('strict', "fine\n\nBottle-Id: alice\n");
($rc, $out) = agent('strict', 'push', 'origin', 'HEAD:refs/heads/fine');
is($rc, 0, 'required: with its own Bottle-Id pushed') or diag($out);
ok(exists forge_refs($t, 'acme/strict')->{'refs/heads/fine'},
	'required: the forge has it');

# the parser: a bad entry is refused by bottlectl policy put

$t->write_file('bad.json', encode_json({ bottles => [ { id => 'bad',
	token => 'bad-token-0123456789', routes => [],
	git_gate => { trailer_required => [ 'github.com/acme' ] } } ] }));
my $res = ctl_run($t, '--store', $redis->{url}, 'policy', 'put', "$d/bad.json");
isnt($res->{rc}, 0, 'trailer_required: a bad repo refused');
like($res->{err}, qr/bottle "bad": git_gate\.trailer_required\[0\]: "github\.com\/acme": /,
	'trailer_required: the parser says where');

###############################################################################
