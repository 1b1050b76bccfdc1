#!/usr/bin/perl

# Tests for git-gate's push scan (gitgate-helper/, issue 16) with real git:
# a bare repository whose pre-receive hook runs build/gitgate-scan, a work
# repository pushing to it over the local transport (receive-pack with a
# quarantine, as over HTTP).  Threat model rows 4 (token shapes) and 5
# (the bottle's canary, egress tokens and held secrets, anywhere a push
# carries them); exactly what the push introduces is scanned; a refused
# push leaves the refs and the object store as they were; the output
# names the rule and where, never the value.  No nginx needed.
#
# GITGATE_SCAN=path runs another build (build-asan/gitgate-scan); its
# stderr reaches the pusher, and the "no sanitizer errors" test reads it.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle qw/ gitgate_tail /;

use Digest::SHA qw//;
use Compress::Zlib qw//;
use Encode qw//;
use IO::Compress::Gzip qw//;
use IO::Compress::Zip qw//;
use MIME::Base64 qw/ encode_base64 /;
use POSIX qw//;
use Fcntl qw//;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $SCAN = $ENV{GITGATE_SCAN} // "$FindBin::Bin/../build/gitgate-scan";
$SCAN = "$FindBin::Bin/../$SCAN" if $SCAN !~ m!^/! && !-x $SCAN;

if (!-x $SCAN) {
	BAIL_OUT("GITGATE_SCAN=$SCAN is not built") if $ENV{GITGATE_SCAN};
	plan(skip_all => 'build/gitgate-scan not built (make gitgate)');
}

my $t = Test::Nginx->new()->has_daemon('git');
my $d = $t->testdir();

# the values, built so that no token sits whole in this file
my $CANARY = 'canary-' . 'gitgate-4242424242';
my $EGRESS = 'egress-' . 'token-value-7777';
my $HELD = 'held-' . 'secret-value-31337';
my $GHP = 'ghp_' . join('', map { ('A' .. 'Z', 'a' .. 'z', 0 .. 9)[($_ * 7) % 62] }
	1 .. 36);
my $SLACK = 'xoxb-' . '1234567890-9876543210-' . join('',
	map { ('a' .. 'z', 'A' .. 'Z', 0 .. 9)[($_ * 5) % 62] } 1 .. 24);
my $GITLAB = 'glpat-' . join('', map { ('A' .. 'Z', 'a' .. 'z')[($_ * 3) % 52] }
	1 .. 20);
my @VALUES = ($CANARY, $EGRESS, $HELD, $GHP, $SLACK, $GITLAB);

$t->write_file('policy.json', <<"EOF");
{"bottles": [{"id": "b1", "token": "tok-0123456789abcdef",
  "canary": "$CANARY",
  "egress_tokens": {"API": "$EGRESS"},
  "held_secrets": {"DB_PASSWORD": "$HELD", "SHORT": "abc"},
  "routes": []}]}
EOF

# git without the user's or the system's configuration
$ENV{HOME} = $d;
$ENV{GIT_CONFIG_NOSYSTEM} = 1;
$ENV{GIT_AUTHOR_NAME} = $ENV{GIT_COMMITTER_NAME} = 'Agent';
$ENV{GIT_AUTHOR_EMAIL} = $ENV{GIT_COMMITTER_EMAIL} = 'agent@bottle.test';
delete $ENV{$_} for grep { /^GIT_(?:DIR|WORK_TREE|OBJECT|ALTERNATE|INDEX)/ }
	keys %ENV;

my $all = '';

# git_run($dir, @args): { rc, out } with stdout and stderr together
my $n = 0;

sub git_run {
	my ($dir, @args) = @_;
	$n++;
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		chdir($dir) or POSIX::_exit(126);
		open STDIN, '<', '/dev/null' or die;
		open STDOUT, '>', "$d/git$n.out" or die;
		open STDERR, '>&', \*STDOUT or die;
		exec('git', @args) or POSIX::_exit(127);
	}
	waitpid($pid, 0);
	my $out = $t->read_file("git$n.out");
	$all .= $out;
	return { rc => $? >> 8, out => $out };
}

sub git { my $r = git_run(@_); chomp(my $o = $r->{out}); return $o; }

my $R = "$d/remote.git";
my $W = "$d/work";

git($d, 'init', '-q', '--bare', $R);
git($d, 'init', '-q', $W);
git($R, 'config', 'receive.denyDeletes', 'false');

sub hook {
	my ($policy) = @_;
	$t->write_file('remote.git/hooks/pre-receive',
		"#!/bin/sh\nexec '$SCAN' --policy '$policy' --bottle b1\n");
	chmod(0755, "$R/hooks/pre-receive") or die;
}

hook("$d/policy.json");

sub write_w {
	my ($name, $text) = @_;
	my $path = "$W/$name";
	(my $dir = $path) =~ s!/[^/]*$!!;
	system('mkdir', '-p', $dir) == 0 or die;
	open my $fh, '>', $path or die "$path: $!";
	print $fh $text;
	close $fh;
}

sub commit {
	my ($msg, %files) = @_;
	write_w($_, $files{$_}) for sort keys %files;
	git($W, 'add', '-A');
	git($W, 'commit', '-q', '--allow-empty', '-m', $msg);
	return git($W, 'rev-parse', 'HEAD');
}

sub git_push { return git_run($W, 'push', '--porcelain', $R, @_); }

sub refs { return git($R, 'for-each-ref', '--format=%(objectname) %(refname)'); }

sub on_remote { return git_run($R, 'cat-file', '-e', $_[0])->{rc} == 0; }

# what the hook wrote (git's own lines name the refs it pushed)
sub no_value {
	my ($out) = @_;
	my $remote = join("\n", grep { /^remote:/ } split(/\n/, $out));
	return !grep { index($remote, $_) >= 0 } @VALUES;
}

# refused($r, $rule, $where, $name): the push refused naming rule and where
sub refused {
	my ($r, $rule, $where, $name) = @_;
	my $out = $r->{out};
	my $ok = $r->{rc} != 0
		&& $out =~ /remote: git-gate refused this push \(rule: \Q$rule\E\)/
		&& $out =~ /remote:   where: $where/
		&& no_value($out);
	ok($ok, $name) or diag($out);
}

# starts each case on main as the remote has it
sub start {
	my ($branch) = @_;
	git($W, 'checkout', '-q', '-B', $branch, 'refs/remotes/r/main');
}

###############################################################################

$t->plan(164 + 13 + 16 + 29 + 3 + 16 + 2 + 2);

# a clean push: several commits and an annotated tag

commit('first', 'README.md' => "# project\n", 'src/a.c' => "int a;\n");
commit('second', 'src/a.c' => "int a;\nint b;\n");
my $c3 = commit('third', 'src/b.c' => "int c;\n", 'bin/x' => "\x00\x01\x02");
git($W, 'tag', '-a', '-m', 'release one', 'v1');

my $r = git_push('HEAD:refs/heads/main', 'refs/tags/v1');
is($r->{rc}, 0, 'clean push of three commits and a tag: accepted')
	or diag($r->{out});
is(git($R, 'rev-parse', 'refs/heads/main'), $c3, 'clean push: main arrived');
is(git($R, 'rev-parse', 'refs/tags/v1^{}'), $c3, 'clean push: the tag arrived');
git($W, 'fetch', '-q', $R, '+refs/heads/*:refs/remotes/r/*');

my $before = refs();

# row 4: token shapes in an added line

for my $case ([ 'GitHub', $GHP, 'github_pat_classic' ],
	[ 'Slack', $SLACK, 'slack_bot_token' ],
	[ 'GitLab', $GITLAB, 'gitlab_pat' ])
{
	my ($vendor, $tok, $rule) = @$case;
	start("t-$vendor");
	commit('config', 'src/a.c' => "int a;\nint b;\n");
	my $bad = commit('add settings',
		'settings.py' => "DEBUG = True\nTOKEN = \"$tok\"\n");
	$r = git_push("HEAD:refs/heads/t-$vendor");
	refused($r, $rule, "commit [0-9a-f]{12} file settings.py line 2",
		"row 4: a $vendor token in an added line: refused naming "
		. "$rule, the file and line");
	is(refs(), $before, "row 4 $vendor: the remote's refs are unchanged");
	ok(!on_remote($bad), "row 4 $vendor: the commit is not in the remote "
		. "(quarantine discarded)");
}

# row 5: the canary, an egress token, a held secret, anywhere

my @secrets = ([ 'canary', $CANARY, 'canary' ],
	[ 'egress token', $EGRESS, 'egress_token:API' ],
	[ 'held secret', $HELD, 'held_secret:DB_PASSWORD' ]);

for my $s (@secrets) {
	my ($what, $v, $rule) = @$s;

	start('m');
	commit("fix: the value is $v\n\nmore text");
	refused(git_push('HEAD:refs/heads/m'), $rule,
		'commit [0-9a-f]{12} message', "row 5: $what in a commit message");

	start('p');
	commit('add', "notes/$v.txt" => "nothing\n");
	refused(git_push('HEAD:refs/heads/p'), $rule,
		'commit [0-9a-f]{12} path of changed file 1 \(withheld\)',
		"row 5: $what in a path");

	start('tg');
	git($W, 'tag', '-f', '-a', '-m', "release\n\nkey $v", 'vt');
	refused(git_push('refs/tags/vt'), $rule, 'tag vt message',
		"row 5: $what in an annotated tag body");
	git($W, 'tag', '-d', 'vt');

	start('rn');
	refused(git_push("HEAD:refs/heads/x-$v"), $rule,
		'ref update 1 \(name withheld\)', "row 5: $what in a ref name");

	start('au');
	{
		local $ENV{GIT_AUTHOR_EMAIL} = "$v\@bottle.test";
		commit('by someone');
	}
	refused(git_push('HEAD:refs/heads/au'), $rule, 'commit [0-9a-f]{12} author',
		"row 5: $what in the author email");
}

start('an');
{
	local $ENV{GIT_COMMITTER_NAME} = "Agent $HELD";
	commit('by someone');
}
refused(git_push('HEAD:refs/heads/an'), 'held_secret:DB_PASSWORD',
	'commit [0-9a-f]{12} committer', 'row 5: a held secret in the committer name');

start('b64');
(my $b64 = encode_base64($HELD, '')) =~ s/=+$//;
commit('data', 'data/blob.txt' => "header\nvalue: $b64\n");
refused(git_push('HEAD:refs/heads/b64'), 'held_secret:DB_PASSWORD',
	'commit [0-9a-f]{12} file data/blob.txt line 2',
	'row 5: base64 of a held secret in a file');

start('mid');
my $bad = commit('edit in the middle',
	'src/a.c' => "int a;\nchar *k = \"$EGRESS\";\nint b;\n");
refused(git_push('HEAD:refs/heads/mid'), 'egress_token:API',
	'commit [0-9a-f]{12} file src/a.c line 2',
	'row 5: an egress token inserted in the middle of a file (line diff)');
ok(!on_remote($bad), 'the refused commit is not in the remote');

start('deep');
commit('one');
my $deep = commit('two', 'doc.txt' => "the canary $CANARY\n");
commit('three');
refused(git_push('HEAD:refs/heads/deep'), 'canary',
	'commit [0-9a-f]{12} file doc.txt line 1',
	'row 5: the canary two commits below the pushed tip');
ok(!on_remote($deep), 'the commit below the tip is not in the remote');

start('tag-commit');
commit('tagged', 'x.txt' => "k=$HELD\n");
git($W, 'tag', '-f', 'lt');
refused(git_push('refs/tags/lt'), 'held_secret:DB_PASSWORD',
	'commit [0-9a-f]{12} file x.txt line 1',
	'a lightweight tag on a new commit: the commit is scanned');
git($W, 'tag', '-d', 'lt');

is(refs(), $before, 'after every refused push the refs are unchanged');

# gitleaks:allow never passes a push on its own

start('allow');
commit('allowed?', 'k.py' => "T = \"$GHP\"  # gitleaks:allow\n");
$r = git_push('HEAD:refs/heads/allow');
like($r->{out}, qr/rule: github_pat_classic\): needs gitleaks-allow approval/,
	'gitleaks:allow on the line: refused, approval needed');
ok($r->{rc} != 0 && no_value($r->{out}), 'gitleaks:allow: not passed, no value');

start('allow2');
commit('allowed?', 'k.py' => "T = \"$HELD\"  # gitleaks:allow\n");
$r = git_push('HEAD:refs/heads/allow2');
like($r->{out}, qr/rule: held_secret:DB_PASSWORD\) *\n/,
	'gitleaks:allow does not apply to a held secret: refused outright');

# generic assignments (gitleaks' generic-api-key family), in files only

start('gen');
commit('config', 'app/settings.py' => "DEBUG = False\n"
	. "STRIPE_API_KEY = \"q8Zr3kP0vX2mL9tBw4Ny\"\n");
refused(git_push('HEAD:refs/heads/gen'), 'generic-assignment',
	'commit [0-9a-f]{12} file app/settings.py line 2',
	'a generic secret assignment in an added line: refused');

start('gen-allow');
commit('config', 'app/k.py' => "password = 'Rw9xK2m7Qp0Lz4tY'  "
	. "# gitleaks:allow\n");
$r = git_push('HEAD:refs/heads/gen-allow');
like($r->{out}, qr/rule: generic-assignment\): needs gitleaks-allow approval/,
	'a marked generic assignment: approval needed');
ok($r->{rc} != 0 && $r->{out} !~ /Rw9xK2m7Qp0Lz4tY/,
	'a marked generic assignment: not passed, no value');

start('gen-ok');
commit('config', 'app/ok.py' => "token = get_token()\n"
	. "api_key = os.environ['API_KEY']\npassword = 'changeme-1234567'\n"
	. "KEYBOARD_LAYOUT = 'us-intl-2024'\n");
commit('the key 12345678abcdefgh in a message only');
$r = git_push('HEAD:refs/heads/gen-ok');
is($r->{rc}, 0, 'names, lookups and placeholders pass; messages are not '
	. 'scanned for assignments') or diag($r->{out});

# exactly what the push introduces

start('old');
my $old = commit('old secret', 'old.txt' => "v=$HELD\nline two\n");
# put it on the remote behind the hook's back (a fetch runs no hook)
git($R, 'fetch', '-q', $W, 'refs/heads/old:refs/heads/old');
ok(on_remote($old), 'a commit with a held value is on the remote already');

my $clean = commit('clean on top', 'new.txt' => "fine\n");
$r = git_push('HEAD:refs/heads/old');
is($r->{rc}, 0, 'new clean commits on top of it: accepted (old not rescanned)')
	or diag($r->{out});
is(git($R, 'rev-parse', 'refs/heads/old'), $clean, 'and they arrived');

commit('edit elsewhere', 'old.txt' => "v=$HELD\nline two changed\n");
$r = git_push('HEAD:refs/heads/old');
is($r->{rc}, 0, 'a file with an old held value, edited on another line: '
	. 'accepted (added lines only)') or diag($r->{out});

commit('new branch');
$r = git_push('HEAD:refs/heads/old-branch');
is($r->{rc}, 0, 'a new branch from there: only its new commit is scanned')
	or diag($r->{out});

$r = git_push(':refs/heads/old-branch');
is($r->{rc}, 0, 'a deleted ref passes') or diag($r->{out});
ok(!git_run($R, 'rev-parse', '--verify', '-q', 'refs/heads/old-branch')->{rc} == 0,
	'and it is gone');

# a tag of a blob and a ref to a tree are scanned whole

start('blob');
write_w('blob.txt', "held $HELD\n");
my $blob = git($W, 'hash-object', '-w', 'blob.txt');
unlink("$W/blob.txt");
git($W, 'tag', '-f', '-a', '-m', 'a blob', 'vb', $blob);
refused(git_push('refs/tags/vb'), 'held_secret:DB_PASSWORD',
	'blob [0-9a-f]{12} file \(the blob itself\) line 1', 'a tag of a blob: scanned');
git($W, 'tag', '-d', 'vb');

# hand-made objects (issue 26): git hash-object --literally writes any
# bytes, so every shape below is one a hostile agent can push

my $nraw = 0;

sub raw_object {
	my ($type, $bytes) = @_;
	my $f = "$d/raw" . ++$nraw;
	open my $fh, '>:raw', $f or die "$f: $!";
	print $fh $bytes;
	close $fh;
	return git($W, 'hash-object', '-t', $type, '--literally', '-w', $f);
}

# raw_tree([mode, name, id], ...): the entries as given, in that order
sub raw_tree {
	return raw_object('tree', join('', map { "$_->[0] $_->[1]\0"
		. pack('H*', $_->[2]) } @_));
}

sub raw_blob { return raw_object('blob', $_[0]); }

my $ID = 'Agent <agent@bottle.test> 1700000000 +0000';

# a commit on main as the remote has it; $extra: header lines after the
# committer line (each ending in "\n"), $msg: every byte after the
# empty line
sub raw_commit {
	my (%o) = @_;
	my $parent = git($W, 'rev-parse', 'refs/remotes/r/main');
	my $tree = $o{tree} // git($W, 'rev-parse', 'refs/remotes/r/main^{tree}');
	return raw_object('commit', "tree $tree\nparent $parent\n"
		. ($o{author} // "author $ID\n")
		. ($o{committer} // "committer $ID\n")
		. ($o{extra} // '') . "\n" . ($o{msg} // "hand-made\n"));
}

my $main_tree = git($W, 'rev-parse', 'refs/remotes/r/main^{tree}');
# (ls-tree writes a tree's mode 040000, its object 40000)
my @main_entries = map { /^0*(\d+) \w+ ([0-9a-f]+)\t(.*)$/ ? [ $1, $3, $2 ] : () }
	split /\n/, git($W, 'ls-tree', 'refs/remotes/r/main');

# main's tree with more entries, in git's order (a tree's name sorts as
# name/)
sub main_plus {
	my @e = (@main_entries, @_);
	return raw_tree(sort { ($a->[0] =~ /^0?4/ ? "$a->[1]/" : $a->[1])
		cmp ($b->[0] =~ /^0?4/ ? "$b->[1]/" : $b->[1]) } @e);
}

my $clean_blob = raw_blob("nothing to see\n");
my $tok_blob = raw_blob("t=$GHP\n");
my $nraw_ref = 0;

# raw_receive($new, $ref, @objects): a pack of just these objects sent to
# receive-pack as a push of $new to the new $ref; its output
sub raw_receive {
	my ($new, $ref, @objects) = @_;
	$t->write_file('objects.list', join("\n", @objects) . "\n");
	my $pack = `cd '$W' && git pack-objects -q --stdout < '$d/objects.list'`;
	my $cmd = ('0' x 40) . " $new $ref\0report-status\n";
	my $req = sprintf('%04x', length($cmd) + 4) . $cmd . '0000' . $pack;
	open my $fh, '>:raw', "$d/receive.in" or die;
	print $fh $req;
	close $fh;
	my $out = `cd '$d' && git receive-pack '$R' < '$d/receive.in' 2>&1`;
	$all .= $out;
	return $out;
}

sub raw_push {
	my ($sha) = @_;
	return git_push("$sha:refs/heads/raw-" . ++$nraw_ref);
}

# 1. tree entry modes: only 160000 is a gitlink; a mode git does not
# write is refused (rule bad_filemode), naming the path and the mode

for my $mode (qw/ 100664 100600 100000 644 0 /) {
	my $c = raw_commit(tree => main_plus([ $mode, 'cfg.txt', $clean_blob ]));
	refused(raw_push($c), 'bad_filemode',
		"commit [0-9a-f]{12} file cfg.txt: mode $mode\\s",
		"a file of mode $mode: refused, naming the path and the mode");
}

for my $mode (qw/ 100664 100600 /) {
	my $c = raw_commit(tree => main_plus([ $mode, 'cfg.txt', $tok_blob ]));
	my $r = raw_push($c);
	refused($r, 'bad_filemode', "commit [0-9a-f]{12} file cfg.txt: mode $mode",
		"a token in a file of mode $mode: refused");
	ok(!on_remote($c), "mode $mode: the commit is not in the remote");
}

my $c_dir = raw_commit(tree => main_plus([ '040000', 'conf',
	raw_tree([ '100644', 'a.txt', $clean_blob ]) ]));
refused(raw_push($c_dir), 'bad_filemode', "commit [0-9a-f]{12} file conf: mode 040000",
	'a tree of mode 040000 (zero-padded): refused');

my $c_wh = raw_commit(tree => main_plus([ '100664', "k-$CANARY.txt", $clean_blob ]));
$r = raw_push($c_wh);
refused($r, 'canary', 'commit [0-9a-f]{12} path of changed file 1 \(withheld\)',
	'an odd mode on a path holding the canary: the path matched');
like($r->{out}, qr/rule: bad_filemode\)\s*\n.*where: commit [0-9a-f]{12} changed file 1 \(path withheld\): mode 100664/,
	'and the mode refused, the path withheld');

# GITGATE_FILEMODES=scan: such files are read like any other

$t->write_file('remote.git/hooks/pre-receive', "#!/bin/sh\n"
	. "GITGATE_FILEMODES=scan exec '$SCAN' --policy '$d/policy.json' --bottle b1\n");

for my $mode (qw/ 100664 100600 100000 /) {
	my $c = raw_commit(tree => main_plus([ $mode, 'cfg.txt', $clean_blob ]));
	$r = raw_push($c);
	is($r->{rc}, 0, "GITGATE_FILEMODES=scan: a clean file of mode $mode pushed")
		or diag($r->{out});
	$c = raw_commit(tree => main_plus([ $mode, 'cfg.txt', $tok_blob ]));
	refused(raw_push($c), 'github_pat_classic',
		'commit [0-9a-f]{12} file cfg.txt line 1',
		"GITGATE_FILEMODES=scan: a token in a file of mode $mode: refused");
}

# git takes mode 644 for a gitlink and sends no object for it: read all
# the same, the push is refused when there is none to read
$r = raw_push(raw_commit(tree => main_plus([ '644', 'cfg.txt', $tok_blob ])));
like($r->{out}, qr/rule: internal\)\s*\n.*why: object [0-9a-f]{12} is missing/,
	'GITGATE_FILEMODES=scan: mode 644 and no object sent: refused');

$t->write_file('remote.git/hooks/pre-receive', "#!/bin/sh\n"
	. "GITGATE_FILEMODES=bogus exec '$SCAN' --policy '$d/policy.json' --bottle b1\n");
$r = raw_push(raw_commit(msg => "clean\n"));
like($r->{out}, qr/rule: internal\)\s*\n.*GITGATE_FILEMODES is neither refuse nor scan/,
	'GITGATE_FILEMODES of another value: refused, saying so');
hook("$d/policy.json");

# a mode and an object that disagree, duplicate names, odd names, names
# only a new tree holds: refused or read, never skipped

$r = raw_push(raw_commit(tree => main_plus([ '100644', 'f.txt',
	raw_tree([ '100644', 'a.txt', $tok_blob ]) ])));
like($r->{out}, qr/rule: internal\)\s*\n.*is not a file/,
	'mode 100644 naming a tree: refused');
# (git push will not send that one: a pack of the objects, straight to
# receive-pack)
my $bad_tree = raw_commit(tree => main_plus([ '40000', 'd', $tok_blob ]));
my $bt = git($W, 'rev-parse', "$bad_tree^{tree}");
$r = raw_receive($bad_tree, 'refs/heads/raw-bt', $bad_tree, $bt, $tok_blob);
like($r, qr/rule: internal\)\s*\n.*is in a tree as a directory but is not a tree/,
	'mode 40000 naming a blob: refused');
ok(!on_remote($bad_tree), 'mode 40000 naming a blob: not in the remote');

refused(raw_push(raw_commit(tree => main_plus([ '100644', 'dup.txt', $clean_blob ],
	[ '100644', 'dup.txt', $tok_blob ]))), 'github_pat_classic',
	'commit [0-9a-f]{12} file dup.txt line 1',
	'two entries of one name: the second is read too');

my $empty = raw_object('tree', '');
refused(raw_push(raw_commit(tree => main_plus([ '40000', "e-$CANARY", $empty ]))),
	'canary', 'commit [0-9a-f]{12} path of changed file 1 \(withheld\)',
	'the canary as the name of an empty tree: refused');

my $sub = raw_tree([ '100644', 'x.txt', $clean_blob ]);
my $sub_parent = raw_commit(tree => main_plus([ '40000', 'sub', $sub ]));
$r = git_push("$sub_parent:refs/heads/sub");
is($r->{rc}, 0, 'a clean subtree: pushed') or diag($r->{out});
my $renamed = raw_object('commit', "tree " . main_plus([ '40000', "s-$HELD", $sub ])
	. "\nparent $sub_parent\nauthor $ID\ncommitter $ID\n\nrename\n");
refused(git_push("$renamed:refs/heads/sub"), 'held_secret:DB_PASSWORD',
	'commit [0-9a-f]{12} path of changed file 1 \(withheld\)',
	'a tree equal to the parent\'s but for its name: the name is read');

refused(raw_push(raw_commit(tree => main_plus([ '100644', "a\nb\x01\xff$GHP", $clean_blob ]))),
	'github_pat_classic', 'commit [0-9a-f]{12} path of changed file 1 \(withheld\)',
	'a name with a newline and odd bytes: read');

# 2. commits: every byte of their raw object

for my $case (
	[ 'a continuation of the committer line', committer =>
		"committer $ID\n $GHP\n", 'github_pat_classic', 'committer' ],
	[ 'a parent header after committer', extra => "parent $HELD\n",
		'held_secret:DB_PASSWORD', 'header' ],
	[ 'an author header after committer', extra => "author $EGRESS\n",
		'egress_token:API', 'header' ],
	[ 'a tree header after committer', extra => "tree $GHP\n",
		'github_pat_classic', 'header' ],
	[ 'a second committer header', extra => "committer $CANARY\n",
		'canary', 'header' ],
	[ 'an unknown header', extra => "x-note $GHP\n", 'github_pat_classic',
		'header' ],
	[ 'a continuation of an encoding header', extra =>
		"encoding UTF-8\n $HELD\n", 'held_secret:DB_PASSWORD', 'header' ],
	[ 'message bytes after a NUL', msg => "fix\0$CANARY\n", 'canary',
		'message' ],
	[ 'a message that is a NUL and a token', msg => "\0$GHP",
		'github_pat_classic', 'message' ])
{
	my ($name, $part, $bytes, $rule, $where) = @$case;
	my $c = raw_commit($part => $bytes);
	refused(raw_push($c), $rule, "commit [0-9a-f]{12} $where",
		"a commit with $name: refused, where $where");
	ok(!on_remote($c), "$name: the commit is not in the remote");
}

# (libgit2 does not parse an author line with a continuation: refused)
$r = raw_push(raw_commit(author => "author $ID\n $CANARY\n"));
like($r->{out}, qr/rule: internal\)\s*\n.*why: cannot read object/,
	'a commit with a continuation of the author line: refused');

$r = raw_push(raw_commit(extra => "encoding UTF-8\nx-tool ok\n",
	msg => "plain\0binary tail\n"));
is($r->{rc}, 0, 'a clean commit with extra headers and a NUL: accepted')
	or diag($r->{out});

# 3. annotated tags: every byte of their raw object

my $tag_target = git($W, 'rev-parse', 'refs/remotes/r/main');
my $ntag = 0;

sub raw_tag {
	my ($extra, $msg) = @_;
	my $name = 'vr' . ++$ntag;
	my $tag = raw_object('tag', "object $tag_target\ntype commit\n"
		. "tag $name\ntagger $ID\n$extra\n$msg");
	return ($name, git_push("$tag:refs/tags/$name"));
}

for my $case (
	[ 'an extra header after tagger', "x-extra $CANARY\n", "release\n",
		'canary', 'header' ],
	[ 'a second tagger header', "tagger $HELD\n", "release\n",
		'held_secret:DB_PASSWORD', 'header' ],
	[ 'a continuation of the tagger line', " $GHP\n", "release\n",
		'github_pat_classic', 'tagger' ],
	[ 'message bytes after a NUL', '', "release\0$CANARY\n", 'canary',
		'message' ])
{
	my ($name, $extra, $msg, $rule, $where) = @$case;
	my ($tname, $r) = raw_tag($extra, $msg);
	refused($r, $rule, "tag $tname $where", "a tag with $name: refused");
}

my ($tn, $tr) = raw_tag("x-tool ok\n", "release\0tail\n");
is($tr->{rc}, 0, 'a clean tag with an extra header and a NUL: accepted')
	or diag($tr->{out});

# a commit's tree and 2048 levels of trees below it are read; one more
# refuses the push (the walk's bound, GG_TREE_DEPTH)

sub nested {
	my ($levels) = @_;
	my $tree = raw_tree([ '100644', 'f.txt', $clean_blob ]);
	# a tree object's id from its bytes, as git computes it
	for (2 .. $levels) {
		my $body = "40000 d\0" . pack('H*', $tree);
		$tree = Digest::SHA::sha1_hex("tree " . length($body) . "\0$body");
		push @{$_[1]}, $body;
	}
	return $tree;
}

for my $case ([ 2048, 0 ], [ 2049, 1 ]) {
	my ($levels, $refuse) = @$case;
	my @bodies;
	my $top = nested($levels, \@bodies);
	my @files = map { my $f = "$d/nest$_"; open my $fh, '>:raw', $f or die;
		print $fh $bodies[$_]; close $fh; $f } 0 .. $#bodies;
	my $pid = open(my $hp, '|-') // die;
	if ($pid == 0) {
		chdir($W) or POSIX::_exit(126);
		open STDOUT, '>', '/dev/null';
		exec('git', 'hash-object', '-t', 'tree', '--literally', '-w',
			'--stdin-paths') or POSIX::_exit(127);
	}
	print $hp join("\n", @files) . "\n";
	close $hp;
	$r = raw_push(raw_commit(tree => main_plus([ '40000', 'deep', $top ])));
	if ($refuse) {
		like($r->{out}, qr/rule: internal\)\s*\n.*trees nested deeper than 2048/,
			"$levels levels of trees: refused, saying so");
	} else {
		is($r->{rc}, 0, "$levels levels of trees: read") or diag($r->{out});
	}
}
# decoded views (issue 26, item 6): UTF-16 text, gzip and zlib data inside
# blobs are read decoded; what cannot be decoded is refused, never passed

sub u16 { return Encode::encode($_[0], $_[1]); }

sub png {
	my ($seed) = @_;
	my $chunk = sub {
		my ($type, $data) = @_;
		return pack('N', length($data)) . $type . $data
			. pack('N', Compress::Zlib::crc32($type . $data));
	};
	my $raw = join('', map { "\x00" . join('', map { chr(($_ * $seed
		+ $seed * 31) % 251) } 1 .. 96) } 1 .. 32);
	return "\x89PNG\r\n\x1a\n"
		. $chunk->('IHDR', pack('NNCCCCC', 32, 32, 8, 2, 0, 0, 0))
		. $chunk->('IDAT', Compress::Zlib::compress($raw))
		. $chunk->('IEND', '');
}

sub zipped {
	my (%files) = @_;
	my $out;
	my $z = IO::Compress::Zip->new(\$out, Name => 'x', Minimal => 1);
	my $first = 1;
	for my $name (sort keys %files) {
		$z->newStream(Name => $name, Minimal => 1) unless $first;
		$first = 0;
		$z->print($files{$name});
	}
	$z->close();
	return $out;
}

sub gz {
	my ($data, %o) = @_;
	my $out;
	IO::Compress::Gzip::gzip(\$data => \$out, Minimal => !%o, %o)
		or die "gzip\n";
	return $out;
}

my $TEXT = "first line\nTOKEN = \"$GHP\"\nlast line\n";

start('u16le');
commit('utf-16', 'w/u16le.txt' => u16('UTF-16LE', "\x{feff}$TEXT"));
refused(git_push('HEAD:refs/heads/u16le'), 'github_pat_classic',
	'commit [0-9a-f]{12} file w/u16le\.txt \(UTF-16LE\) line 2',
	'decoded: a token in a UTF-16LE file with a BOM: refused, the view named');

start('u16be');
commit('utf-16', 'w/u16be.txt' => u16('UTF-16BE', "caf\x{e9} \x{1F600}\n"
	. "canary: $CANARY\n"));
refused(git_push('HEAD:refs/heads/u16be'), 'canary',
	'commit [0-9a-f]{12} file w/u16be\.txt \(UTF-16BE\) line 2',
	'decoded: the canary in a UTF-16BE file, no BOM, non-ASCII before it');

start('u16odd');
commit('utf-16', 'w/u16odd.bin' => "\x07" . u16('UTF-16LE', "k=$HELD\n"));
refused(git_push('HEAD:refs/heads/u16odd'), 'held_secret:DB_PASSWORD',
	'commit [0-9a-f]{12} file w/u16odd\.bin \(UTF-16LE from byte 1\) line 1',
	'decoded: a held secret in UTF-16LE from an odd offset');

start('gz');
commit('gzip', 'w/notes.txt.gz' => gz("a\nb\nthe canary $CANARY\n"));
refused(git_push('HEAD:refs/heads/gz'), 'canary',
	'commit [0-9a-f]{12} file w/notes\.txt\.gz \(gzip\) line 3',
	'decoded: the canary inside a .gz blob');

start('zlib');
commit('zlib', 'w/data.z' => Compress::Zlib::compress("v=$HELD\n"));
refused(git_push('HEAD:refs/heads/zlib'), 'held_secret:DB_PASSWORD',
	'commit [0-9a-f]{12} file w/data\.z \(zlib\) line 1',
	'decoded: a held secret inside a zlib stream');

start('gzgz');
commit('gzip in gzip', 'w/two.gz' => gz(gz($TEXT)));
refused(git_push('HEAD:refs/heads/gzgz'), 'github_pat_classic',
	'commit [0-9a-f]{12} file w/two\.gz \(gzip, gzip\) line 2',
	'decoded: a token in gzip inside gzip');

start('gzu16');
commit('utf-16 in gzip', 'w/u.gz' => gz(u16('UTF-16LE', $TEXT)));
refused(git_push('HEAD:refs/heads/gzu16'), 'github_pat_classic',
	'commit [0-9a-f]{12} file w/u\.gz \(gzip, UTF-16LE\) line 2',
	'decoded: a token in UTF-16 inside gzip');

start('gzmembers');
commit('gzip members', 'w/m.gz' => gz("clean\n") . gz("k=$EGRESS\n"));
refused(git_push('HEAD:refs/heads/gzmembers'), 'egress_token:API',
	'commit [0-9a-f]{12} file w/m\.gz \(gzip\) line 2',
	'decoded: an egress token in a gzip file\'s second member');

start('gzextra');
my $xf = u16('UTF-16LE', "k=$HELD");
commit('gzip header', 'w/x.gz' => gz("clean\n",
	ExtraField => "AB" . pack('v', length($xf)) . $xf));
refused(git_push('HEAD:refs/heads/gzextra'), 'held_secret:DB_PASSWORD',
	'commit [0-9a-f]{12} file w/x\.gz \(gzip header, UTF-16LE\) line 1',
	'decoded: a held secret in UTF-16 in a gzip header\'s FEXTRA');

start('gz4');
commit('deep', 'w/four.gz' => gz(gz(gz(gz("x\n")))));
refused(git_push('HEAD:refs/heads/gz4'), 'undecodable',
	'commit [0-9a-f]{12} file w/four\.gz \(gzip, gzip, gzip, gzip: '
	. 'compressed more than 3 times over\)',
	'decoded: four gzip stages: refused, undecodable');

start('bomb');
commit('bomb', 'w/bomb.gz' => gz("\0" x (4 << 20)));
refused(git_push('HEAD:refs/heads/bomb'), 'undecodable',
	'commit [0-9a-f]{12} file w/bomb\.gz \(gzip: decodes to more than \d+ '
	. 'bytes, the cap',
	'decoded: a gzip bomb over the ratio: refused, undecodable');

my $gzc = gz(join('', map { "line $_ of some text\n" } 1 .. 400));
my $corrupt = $gzc;
substr($corrupt, 20, 8) = "\xff" x 8;
start('gzbad');
commit('corrupt', 'w/bad.gz' => $corrupt);
refused(git_push('HEAD:refs/heads/gzbad'), 'undecodable',
	'commit [0-9a-f]{12} file w/bad\.gz \(gzip: ',
	'decoded: corrupt gzip data: refused, undecodable');

start('gzcut');
commit('truncated', 'w/cut.gz' => substr($gzc, 0, length($gzc) - 9));
refused(git_push('HEAD:refs/heads/gzcut'), 'undecodable',
	'commit [0-9a-f]{12} file w/cut\.gz \(gzip: ',
	'decoded: truncated gzip: refused, undecodable');

start('zcut');
commit('truncated', 'w/cut.z' => substr(Compress::Zlib::compress($TEXT
	x 20), 0, 30));
refused(git_push('HEAD:refs/heads/zcut'), 'undecodable',
	'commit [0-9a-f]{12} file w/cut\.z \(zlib: ',
	'decoded: a truncated zlib stream: refused, undecodable');

start('declean');
commit('clean binaries', 'w/clean16.txt' => u16('UTF-16LE', "\x{feff}hello\n"
	. "w\x{f6}rld \x{4e16}\x{754c}\n"),
	'w/clean.gz' => gz("just text\n" x 50),
	'w/clean.z' => Compress::Zlib::compress("plain\n"),
	'w/pic.png' => png(7), 'w/lib.jar' => zipped('META-INF/MANIFEST.MF'
		=> "Manifest-Version: 1.0\n", 'a/B.class' => "\xca\xfe\xba\xbe\0\0"
		. join('', map { chr($_ % 256) } 0 .. 2000)),
	'w/doc.pdf' => "%PDF-1.4\n1 0 obj << /Length 40 /Filter /FlateDecode >>\n"
		. "stream\n" . Compress::Zlib::compress("BT /F1 12 Tf (hello) Tj ET")
		. "\nendstream endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n",
	'w/reg.txt' => "HKEY_LOCAL_MACHINE\\Software\n",
	'w/x.txt' => "x^2 + y^2\n",
	'w/rand.bin' => join('', map { chr(($_ * 7919 + 13) % 256) } 1 .. 70000));
$r = git_push('HEAD:refs/heads/declean');
is($r->{rc}, 0, 'decoded: clean UTF-16, gzip and zlib files, a PNG, a jar, '
	. 'a PDF, random bytes, text starting like a zlib header: accepted')
	or diag($r->{out});

# a modified UTF-16 or gzip file whose old version is on the remote with
# the value: the decoded added lines alone are scanned

start('decold');
my $u16old = "\x{feff}v=$HELD\nline two\n";
my $gzold = "v=$HELD\nline two\n";
commit('old', 'w/o16.txt' => u16('UTF-16LE', $u16old),
	'w/o.gz' => gz($gzold));
git($R, 'fetch', '-q', $W, 'refs/heads/decold:refs/heads/decold');
commit('edit', 'w/o16.txt' => u16('UTF-16LE', "${u16old}line three\n"),
	'w/o.gz' => gz("${gzold}line three\n"));
$r = git_push('HEAD:refs/heads/decold');
is($r->{rc}, 0, 'decoded: a UTF-16 and a gzip file with an old held value, '
	. 'a line added: accepted') or diag($r->{out});
commit('edit', 'w/o.gz' => gz("${gzold}line three\nk=$EGRESS\n"));
refused(git_push('HEAD:refs/heads/decold'), 'egress_token:API',
	'commit [0-9a-f]{12} file w/o\.gz \(gzip\) line 4',
	'decoded: a value added to that gzip file: refused, on its line');

# the push's scan budget: time and memory, each refused saying which

$t->write_file('remote.git/hooks/pre-receive', "#!/bin/sh\n"
	. "GITGATE_SCAN_TIMEOUT=0.001 exec '$SCAN' --policy '$d/policy.json' "
	. "--bottle b1\n");
start('budget');
commit('big', 'w/big.txt' => join('', map { "line $_ of the text\n" }
	1 .. 800000));
$r = git_push('HEAD:refs/heads/budget');
like($r->{out}, qr/rule: scan_budget\)\s*\n.*where: the scan ran over its time budget of 0\.001 s \(GITGATE_SCAN_TIMEOUT\)/,
	'budget: a scan over GITGATE_SCAN_TIMEOUT is refused, saying so');
isnt($r->{rc}, 0, 'budget: the push over the time budget fails');

$t->write_file('remote.git/hooks/pre-receive', "#!/bin/sh\n"
	. "GITGATE_SCAN_MEMORY_MB=8 exec '$SCAN' --policy '$d/policy.json' "
	. "--bottle b1\n");
$r = git_push('HEAD:refs/heads/budget');
like($r->{out}, qr/rule: scan_budget\)\s*\n.*where: the scan ran over its memory budget of 8 MB \(GITGATE_SCAN_MEMORY_MB\) at commit [0-9a-f]{12}: \d+ MB/,
	'budget: a scan over GITGATE_SCAN_MEMORY_MB is refused, saying so');
like($r->{out}, qr/push it in smaller pushes/, 'budget: and what to do');
start('budget-small');
commit('small', 'w/small.txt' => "a small file\n");
$r = git_push('HEAD:refs/heads/budget-small');
is($r->{rc}, 0, 'budget: a small push within GITGATE_SCAN_MEMORY_MB=8: '
	. 'accepted') or diag($r->{out});
git($W, 'checkout', '-q', 'budget');
hook("$d/policy.json");
$r = git_push('HEAD:refs/heads/budget');
is($r->{rc}, 0, 'budget: the same push within the default budget: accepted')
	or diag($r->{out});

# a scan that cannot run refuses

hook("$d/no-such-policy.json");
start('int');
commit('clean');
$r = git_push('HEAD:refs/heads/int');
like($r->{out}, qr/rule: internal\)/, 'no policy: refused with rule internal');
isnt($r->{rc}, 0, 'no policy: the push fails');
hook("$d/policy.json");

$t->write_file('remote.git/hooks/pre-receive',
	"#!/bin/sh\nexec '$SCAN' --policy '$d/policy.json' --bottle nobody\n");
$r = git_push('HEAD:refs/heads/int');
like($r->{out}, qr/rule: internal\).*\n.*not in the policy/,
	'unknown bottle: refused with rule internal');
hook("$d/policy.json");

# git cat-file stalls (a git first on PATH that sleeps for it): the push
# is refused after GITGATE_BLOB_TIMEOUT seconds, the reason shown.  A
# small push is unpacked into loose objects, which only git cat-file reads.

chomp(my $GIT = `sh -c 'command -v git'`);
die "no git on PATH\n" unless $GIT;
mkdir("$d/slowgit") or die;
$t->write_file('slowgit/git', "#!/bin/sh\n"
	. "[ \"\$1\" = cat-file ] && exec sleep 60\nexec '$GIT' \"\$@\"\n");
chmod(0755, "$d/slowgit/git") or die;
$t->write_file('remote.git/hooks/pre-receive', "#!/bin/sh\n"
	. "PATH='$d/slowgit':\$PATH GITGATE_BLOB_TIMEOUT=1 "
	. "exec '$SCAN' --policy '$d/policy.json' --bottle b1\n");

start('slow');
commit('slow', 'slow.txt' => "slow\n");
my $t0 = time();
$r = git_push('HEAD:refs/heads/slow');
like($r->{out}, qr/rule: internal\)\s*\n.*why: failure 'git cat-file': a file not read in 1 s/,
	'git cat-file silent: refused with rule internal and the reason');
ok(time() - $t0 < 30, 'git cat-file silent: refused after the timeout');

# the same push kept as a pack (as the gate's copies keep every push):
# the scan reads the quarantine's pack itself, git cat-file never asked

git($R, 'config', 'receive.unpackLimit', '1');
git($R, 'repack', '-a', '-d', '-q');
$r = git_push('HEAD:refs/heads/slow');
is($r->{rc}, 0, 'a push kept as a pack: read from the pack, no git cat-file')
	or diag($r->{out});
start('slow2');
commit('grow', 'src/a.c' => "int a;\nint b;\n" . ("int x;\n" x 2000)
	. "char *k = \"$GHP\";\n");
$r = git_push('HEAD:refs/heads/slow2');
refused($r, 'github_pat_classic', 'commit [0-9a-f]{12} file src/a.c line 2003',
	'a token in a modified file of a pushed pack: found, on its line');

# a UTF-16 file in the packs, modified: its versions as extents (a thin
# pack's delta on the remote's copy), the new one read whole for its views
start('slow3');
my $big16 = join('', map { "line $_ of a UTF-16 file\n" } 1 .. 2000);
commit('utf-16', 'w/big16.txt' => u16('UTF-16LE', $big16));
$r = git_push('HEAD:refs/heads/slow3');
is($r->{rc}, 0, 'a big UTF-16 file in a pack: accepted') or diag($r->{out});
git($R, 'repack', '-a', '-d', '-q');
commit('edit', 'w/big16.txt' => u16('UTF-16LE', "${big16}k=$EGRESS\n"));
refused(git_push('HEAD:refs/heads/slow3'), 'egress_token:API',
	'commit [0-9a-f]{12} file w/big16\.txt \(UTF-16LE\) line 2001',
	'a value appended to a UTF-16 file of a pushed pack: found, on its line');

# git's ref updates are read up to GG_MAX_INPUT: 64 MB of them or more
# refused as such, one byte less read and parsed (here a line without
# its newline)
for my $n (64 * 1024 * 1024, 64 * 1024 * 1024 - 1) {
	my $out = `perl -e 'print "a" x $n' | '$SCAN' --policy '$d/policy.json' --bottle b1 --repo '$R' 2>&1`;
	like($out, $n % 2 == 0
		? qr/rule: internal\)\n  why: ref updates of 67108864 bytes or more\n/
		: qr/rule: internal\)\n  why: ref update line without a newline\n/,
		"$n bytes of ref updates: " . ($n % 2 == 0 ? 'refused as too long'
			: 'read whole'));
}

# the copy's pack indexed at version 1, which git-gate's pack reader
# leaves to libgit2: the commits and trees the push builds on are read by
# libgit2's own pack backend, opened when first asked (gg_odb.c)
git($R, 'repack', '-a', '-d', '-q');
for my $idx (glob("$R/objects/pack/pack-*.idx")) {
	(my $pack = $idx) =~ s/\.idx$/.pack/;
	unlink($idx) or die "$idx: $!";
	git($R, 'index-pack', '--index-version=1', '-o', $idx, $pack);
}
start('v1');
commit('v1', 'src/v1.c' => "int v;\n");
$r = git_push('HEAD:refs/heads/v1');
is($r->{rc}, 0, 'the copy\'s pack indexed at version 1: a clean push accepted')
	or diag($r->{out});
commit('v1 token', 'src/v1.c' => "int v;\nchar *k = \"$GHP\";\n");
refused(git_push('HEAD:refs/heads/v1'), 'github_pat_classic',
	'commit [0-9a-f]{12} file src/v1\.c line 2',
	'the copy\'s pack indexed at version 1: a token pushed on it found');

git($R, 'config', '--unset', 'receive.unpackLimit');
hook("$d/policy.json");
git($W, 'checkout', '-q', 'int');

$r = git_push('HEAD:refs/heads/int');
is($r->{rc}, 0, 'the same push with the policy back: accepted')
	or diag($r->{out});

# a line counts as already on the forge only when the same WHOLE line was
# (issue 26, item 4): a token made by deleting the character before it
# (`x<token>` has none: the rule wants a boundary), by deleting the one
# after it at the end of a file (`<token>x`: a 37th character), or by
# splitting a line before it, is on a new line whose bytes are the tail
# (or head) of an old line: scanned, refused.  Through each path the scan
# takes: both versions whole (loose objects: the line matcher), the old
# version stored on the new one (git's usual pack), the new one on the
# old (a thin push, git fast-import, a smaller new version), a repack
# --depth=50 of either side.

my @FILL = map { "setting_$_ = value number $_ of the configuration\n" } 1 .. 80;

# the file with line 41 (1-based) replaced, and @more appended
sub conf {
	my ($line, @more) = @_;
	my @l = @FILL;
	$l[40] = $line;
	return join('', @l, @more);
}

# a file ending in $last, without a newline
sub conf_tail { return join('', @FILL) . $_[0]; }

# writes two commits on a fresh branch with git fast-import (each blob
# stored as a delta of the one written before it: the new version on the
# old); their ids
sub fast_import {
	my ($branch, $path, $v1, $v2) = @_;
	my $base = git($W, 'rev-parse', 'refs/remotes/r/main');
	my $s = '';
	my $mark = 0;
	my $from = $base;
	for my $v ($v1, $v2) {
		my $b = ++$mark;
		my $cm = ++$mark;
		$s .= "blob\nmark :$b\ndata " . length($v) . "\n$v\n";
		$s .= "commit refs/heads/$branch\nmark :$cm\n"
			. "committer Agent <agent\@bottle.test> 1700000000 +0000\n"
			. "data 5\nedit\nfrom $from\nM 100644 :$b $path\n\n";
		$from = ":$cm";
	}
	$t->write_file('fi.stream', $s);
	system("git -C '$W' fast-import --quiet < '$d/fi.stream'") == 0
		or die "fast-import failed\n";
	git($W, 'checkout', '-q', '-f', $branch);
	return (git($W, 'rev-parse', 'HEAD~1'), git($W, 'rev-parse', 'HEAD'));
}

# one push of two commits: v1 (no token) then v2 (the token made);
# refused at the second commit, file, line
sub one_push {
	my ($name, $path, $v1, $v2, $line, %o) = @_;
	my $br = "wl-$name";
	my ($c1, $c2);
	if ($o{fast_import}) {
		($c1, $c2) = fast_import($br, $path, $v1, $v2);
	} else {
		start($br);
		$c1 = commit('add', $path => $v1);
		$c2 = commit('edit', $path => $v2);
	}
	git($W, 'repack', '-q', '-adf', '--depth=50', '--window=250')
		if $o{repack};
	my $r = git_push("HEAD:refs/heads/$br");
	refused($r, 'github_pat_classic', 'commit ' . substr($c2, 0, 12)
		. " file \Q$path\E line $line", "whole lines, one push: $name");
	ok(!on_remote($c2), "whole lines, one push: $name: not on the remote");
}

# two pushes: v1 accepted (no token), then v2 refused
sub two_pushes {
	my ($name, $path, $v1, $v2, $line, %o) = @_;
	my $br = "wl2-$name";
	start($br);
	commit('add', $path => $v1);
	my $r = git_push("HEAD:refs/heads/$br");
	is($r->{rc}, 0, "whole lines, two pushes: $name: the first passes (no "
		. 'boundary, no token)') or diag($r->{out});
	git($R, 'repack', '-q', '-adf', '--depth=50', '--window=250')
		if $o{repack};
	my $c2 = commit('edit', $path => $v2);
	refused(git_push("HEAD:refs/heads/$br"), 'github_pat_classic', 'commit '
		. substr($c2, 0, 12) . " file \Q$path\E line $line",
		"whole lines, two pushes: $name: the second is refused");
}

my $LEAD1 = conf("x$GHP = 1\n");
my $LEAD2 = conf("$GHP = 1\n");

# loose objects (fewer than receive.unpackLimit): both versions read
# whole, the line matcher
one_push('lead-matcher', 'wl/a.txt', $LEAD1, $LEAD2, 41);
two_pushes('lead-matcher', 'wl/b.txt', $LEAD1, $LEAD2, 41);

# kept as packs: the versions' deltas and extents
git($R, 'config', 'receive.unpackLimit', '1');
# the new version bigger (a line appended): the old stored on it
one_push('lead-old-on-new', 'wl/c.txt', $LEAD1, conf("$GHP = 1\n",
	"appended = 1\n"), 41);
# the new version smaller: stored on the old one
one_push('lead-new-on-old', 'wl/d.txt', $LEAD1, $LEAD2, 41);
one_push('lead-fast-import', 'wl/e.txt', $LEAD1, $LEAD2, 41,
	fast_import => 1);
one_push('lead-repack', 'wl/f.txt', $LEAD1, $LEAD2, 41, repack => 1);
# a thin push: the new version a delta of the old one the remote has
two_pushes('lead-thin', 'wl/g.txt', $LEAD1, $LEAD2, 41);
two_pushes('lead-remote-repack', 'wl/h.txt', $LEAD1, $LEAD2, 41,
	repack => 1);
# CRLF lines
two_pushes('lead-crlf', 'wl/i.txt', conf("x$GHP = 1\r\n"),
	conf("$GHP = 1\r\n"), 41);
# a line split before the token: its second half the tail of the old line
two_pushes('split', 'wl/j.txt', conf("key_a$GHP = 1\n"),
	conf("key_a\n$GHP = 1\n"), 42);
# the character after the token deleted, the file's last line (no
# newline): the new line the head of the old one
one_push('trail', 'wl/k.txt', conf_tail("${GHP}x"), conf_tail($GHP), 81);
two_pushes('trail', 'wl/l.txt', conf_tail("${GHP}x"), conf_tail($GHP), 81);

# appended bytes scanned from the delta alone (gg_tail.c, docs/gitgate.md
# "Appended files"): a push leaves a record of each version it read (its
# size, newline count, whether it ends with a newline and has no decoded
# view) in the copy's gitgate-tails; a later thin push whose delta copies
# that version whole and then only inserts is scanned from the inserts,
# its lines numbered on from the record

# the record of blob $oid in the remote: (flags, size, lines), or () when
# none; or the offset of its way, else of its bucket's first, when $o{slot}
sub tail_record { return gitgate_tail($R, @_); }

# writes the record of $oid in its way ($bad: with its CRC wrong)
sub tail_write {
	my ($oid, $flags, $size, $lines, $bad) = @_;
	my $at = tail_record($oid, slot => 1);
	my $body = pack('a20 V Q< Q<', pack('H40', $oid), $flags, $size, $lines);
	my $crc = Compress::Zlib::crc32($body) ^ ($bad ? 1 : 0);
	open my $fh, '+<:raw', "$R/gitgate-tails" or die "$!";
	seek($fh, $at, 0) or die;
	print $fh pack('V V', 0x31544747, $crc) . $body;
	close $fh;
}

my $TAIL1 = join('', @FILL);
start('wl2-tail');
my $tc1 = commit('add', 'wl/t.txt' => $TAIL1);
$r = git_push('HEAD:refs/heads/wl2-tail');
is($r->{rc}, 0, 'blob tails: the first push passes') or diag($r->{out});
my $tv1 = git($W, 'rev-parse', "$tc1:wl/t.txt");
is(join(' ', tail_record($tv1)), '3 ' . length($TAIL1) . ' 80',
	'blob tails: the first push recorded the file it added (ends with a '
	. 'newline, no decoded view; its size; 80 lines)');
my $tc2 = commit('append', 'wl/t.txt' => "${TAIL1}more = 1\n$GHP = 1\n");
refused(git_push('HEAD:refs/heads/wl2-tail'), 'github_pat_classic', 'commit '
	. substr($tc2, 0, 12) . ' file wl/t\.txt line 82',
	'blob tails: a token appended, the thin push refused at its line');
# the record alone numbers the appended lines: one that says 1000 more
# lines moves the finding, so the old version was not read
tail_write($tv1, 3, length($TAIL1), 1080);
refused(git_push('HEAD:refs/heads/wl2-tail'), 'github_pat_classic', 'commit '
	. substr($tc2, 0, 12) . ' file wl/t\.txt line 1082',
	'blob tails: the old version not read, its record numbered the lines');
# a record that does not check (a write cut short) is none
tail_write($tv1, 3, length($TAIL1), 1080, 1);
refused(git_push('HEAD:refs/heads/wl2-tail'), 'github_pat_classic', 'commit '
	. substr($tc2, 0, 12) . ' file wl/t\.txt line 82',
	'blob tails: a record whose CRC fails is not used');
is(join(' ', tail_record($tv1)), '3 ' . length($TAIL1) . ' 80',
	'blob tails: the old version read instead, its record written again');
# a record of another size than the delta's base is not this version's
tail_write($tv1, 3, length($TAIL1) + 1, 1080);
refused(git_push('HEAD:refs/heads/wl2-tail'), 'github_pat_classic', 'commit '
	. substr($tc2, 0, 12) . ' file wl/t\.txt line 82',
	'blob tails: a record whose size is not the delta base\'s is not used');
tail_write($tv1, 3, length($TAIL1), 80);

# the old version's last line without a newline: it and the appended
# bytes are one line, read whole (a token split across the two)
my $TAIL2 = conf_tail(substr($GHP, 0, 20));
start('wl2-tail-join');
my $tj1 = commit('add', 'wl/u.txt' => $TAIL2);
$r = git_push('HEAD:refs/heads/wl2-tail-join');
is($r->{rc}, 0, 'blob tails: half a token, no newline: passes')
	or diag($r->{out});
is((tail_record(git($W, 'rev-parse', "$tj1:wl/u.txt")))[0], 2,
	'blob tails: recorded as not ending with a newline');
my $tj2 = commit('append', 'wl/u.txt' => $TAIL2 . substr($GHP, 20) . "\n");
refused(git_push('HEAD:refs/heads/wl2-tail-join'), 'github_pat_classic',
	'commit ' . substr($tj2, 0, 12) . ' file wl/u\.txt line 81',
	'blob tails: a token completed across the end of the old version found');

# appended bytes the delta copies from the old version (half a token
# there, the rest inserted): read through the old version
my $TAIL3 = join('', @FILL) . 'half = ' . substr($GHP, 0, 24) . "\n";
start('wl2-tail-copy');
commit('add', 'wl/v.txt' => $TAIL3);
$r = git_push('HEAD:refs/heads/wl2-tail-copy');
is($r->{rc}, 0, 'blob tails: half a token on a line: passes')
	or diag($r->{out});
my $tk2 = commit('append', 'wl/v.txt' => $TAIL3 . "more = 1\n" . 'half = '
	. $GHP . "\n");
refused(git_push('HEAD:refs/heads/wl2-tail-copy'), 'github_pat_classic',
	'commit ' . substr($tk2, 0, 12) . ' file wl/v\.txt line 83',
	'blob tails: a token made of copied and inserted bytes found');
# a PEM header the old version's last line, the key appended: the header
# is the appended lines' context however the file is read (a thin push:
# its record says its last line may open a block, so the delta alone is
# not enough; sent whole: the appended part is not taken alone)
my $PEM1 = join('', @FILL) . "-----BEGIN RSA PRIVATE KEY-----\n";
start('wl2-tail-pem');
my $pc1 = commit('add', 'wl/p.txt' => $PEM1);
$r = git_push('HEAD:refs/heads/wl2-tail-pem');
is($r->{rc}, 0, 'blob tails: a PEM header alone at the end passes')
	or diag($r->{out});
is((tail_record(git($W, 'rev-parse', "$pc1:wl/p.txt")))[0], 7,
	'blob tails: recorded as its last line may open a PEM block');
my $pc2 = commit('append', 'wl/p.txt' => $PEM1 . 'MIIEow' . ('Ab9' x 20)
	. "\n-----END RSA PRIVATE KEY-----\n");
for my $how ('--thin', '--no-thin') {
	refused(git_push($how, 'HEAD:refs/heads/wl2-tail-pem'), 'private_key',
		'commit ' . substr($pc2, 0, 12) . ' file wl/p\.txt line 81',
		"blob tails: a key appended under the old last line's header "
		. "found ($how)");
}

# hand-made thin packs (gg_tail_file()): the new version a REF_DELTA on
# an old one the remote has and holds a record of, in shapes git need not
# send.  Only a delta that copies the old version whole, in order, from 0,
# first, then only inserts, is read from its inserts, numbered on from the
# record: two copies out of order, a first copy short of the old version's
# end, a copy after the whole one are read as before, whatever the record
# says of the lines; the control (the whole copy, then a line inserted)
# moves with a record claiming 1000 more lines, so the record was used

# a size in a delta's header: 7 bits a byte, the lowest first
sub delta_size {
	my ($n) = @_;
	my $s = '';
	while ($n >= 0x80) {
		$s .= chr(0x80 | ($n & 0x7f));
		$n >>= 7;
	}
	return $s . chr($n);
}

# the delta on $base of @ops ([ copy => offset, size ], [ insert =>
# bytes ]), and the bytes it makes
sub delta_of {
	my ($base, @ops) = @_;
	my ($delta, $made) = ('', '');
	for my $op (@ops) {
		my ($what, @a) = @$op;
		if ($what eq 'insert') {
			for (my $at = 0; $at < length($a[0]); $at += 127) {
				my $piece = substr($a[0], $at, 127);
				$delta .= chr(length($piece)) . $piece;
			}
			$made .= $a[0];
			next;
		}
		# 0x80 and a bit for each byte of the offset (4) and size (3)
		# that is not zero, those bytes after it, the lowest first
		my ($off, $size) = @a;
		my ($cmd, $args) = (0x80, '');
		for my $i (0 .. 6) {
			my $b = $i < 4 ? ($off >> (8 * $i)) & 0xff
				: ($size >> (8 * ($i - 4))) & 0xff;
			next unless $b;
			$cmd |= 1 << $i;
			$args .= chr($b);
		}
		$delta .= chr($cmd) . $args;
		$made .= substr($base, $off, $size);
	}
	return (delta_size(length($base)) . delta_size(length($made)) . $delta,
		$made);
}

sub obj_id {
	my ($type, $bytes) = @_;
	return Digest::SHA::sha1_hex("$type " . length($bytes) . "\0$bytes");
}

# a pack (version 2) of @objects: [ type, bytes ] whole, [ ref => base
# id, delta ] a REF_DELTA (type 7); each entry its type and size (4 bits,
# then 7 a byte), the base's 20 bytes, its zlib stream; a SHA-1 of it all
sub pack_of {
	my (@objects) = @_;
	my %type = (commit => 1, tree => 2, blob => 3, ref => 7);
	my $pack = 'PACK' . pack('N N', 2, scalar(@objects));
	for my $o (@objects) {
		my ($type, $data) = $o->[0] eq 'ref' ? ('ref', $o->[2]) : @$o;
		my $size = length($data);
		my $c = ($type{$type} << 4) | ($size & 0x0f);
		$size >>= 4;
		while ($size) {
			$pack .= chr($c | 0x80);
			$c = $size & 0x7f;
			$size >>= 7;
		}
		$pack .= chr($c);
		$pack .= pack('H40', $o->[1]) if $type eq 'ref';
		$pack .= Compress::Zlib::compress($data);
	}
	return $pack . Digest::SHA::sha1($pack);
}

# $pack sent to receive-pack as a push of $new to the new $ref: rc and
# out as git push gives them (the hook's lines after "remote: ")
sub pack_receive {
	my ($new, $ref, $pack) = @_;
	my $cmd = ('0' x 40) . " $new $ref\0report-status\n";
	open my $fh, '>:raw', "$d/receive.in" or die;
	print $fh sprintf('%04x', length($cmd) + 4) . $cmd . '0000' . $pack;
	close $fh;
	my $status = `cd '$d' && git receive-pack '$R' <receive.in 2>receive.err`;
	# (its report, not the refs it advertised first)
	$status =~ s/^.*?(?=[0-9a-f]{4}unpack )//s;
	my $out = $status . join('', map { "remote: $_\n" }
		split(/\n/, $t->read_file('receive.err')));
	$all .= $out;
	return { rc => $status =~ /unpack ok\n.*[0-9a-f]{4}ok \Q$ref\E\n/s
		? 0 : 1, out => $out };
}

# the old version: 82 lines, half a token on line 41 and on the last
my $HALF = 'half = ' . substr($GHP, 0, 24);
my $OLD = join('', @FILL[0 .. 39]) . "$HALF\n" . join('', @FILL[40 .. 79])
	. "$HALF\n";
my $REST = substr($GHP, 24) . "\n";
my $OLDN = length($OLD);
start('tail-raw');
my $oc = commit('add', 'tails.txt' => $OLD);
$r = git_push('HEAD:refs/heads/tail-raw');
is($r->{rc}, 0, 'thin packs: the old version pushed') or diag($r->{out});
my $ob = git($W, 'rev-parse', "$oc:tails.txt");
is(join(' ', tail_record($ob)), "3 $OLDN 82",
	'thin packs: the old version recorded (82 lines)');

# what index-pack --fix-thin keeps of a pack, as receive-pack runs it: a
# repository that borrows the remote's objects
git($d, 'init', '-q', '--bare', "$d/thin.git");
$t->write_file('thin.git/objects/info/alternates', "$R/objects\n");

my $otree = git($W, 'rev-parse', "$oc^{tree}");
my $H = index($OLD, "$HALF\n") + length($HALF);
my @thin = (
	[ 'a', 'two copies out of order (the second half, then the first, '
		. 'which ends in half a token), the rest of it inserted',
		[ copy => $H, $OLDN - $H ], [ copy => 0, $H ],
		[ insert => $REST ] ],
	[ 'b', 'a first copy one byte short (the last newline), the rest of '
		. 'the last line\'s token inserted',
		[ copy => 0, $OLDN - 1 ], [ insert => $REST ] ],
	[ 'c', 'the whole copy, then half a token copied again, the rest '
		. 'inserted',
		[ copy => 0, $OLDN ], [ copy => $OLDN - length("$HALF\n"),
		length($HALF) ], [ insert => $REST ] ],
	[ 'd', 'the whole copy, then a line with a token inserted (the '
		. 'control)',
		[ copy => 0, $OLDN ], [ insert => "more = 1\n$GHP = 1\n" ] ]);

for my $case (@thin) {
	my ($name, $what, @ops) = @$case;
	my ($delta, $new) = delta_of($OLD, @ops);
	my @ins = map { $_->[0] eq 'insert' ? $_->[1] : () } @ops;
	die "thin $name: a token in the old version or inserted whole\n"
		if $name ne 'd' && grep { index($_, $GHP) >= 0 } $OLD, @ins;
	my $blob = obj_id('blob', $new);
	# the old tree but for tails.txt's id
	my $tree = `git -C '$W' cat-file tree $otree`;
	my $at = index($tree, "100644 tails.txt\0" . pack('H40', $ob));
	die "thin $name: no tails.txt\n" if $at < 0;
	substr($tree, $at + 17, 20) = pack('H40', $blob);
	my $commit = 'tree ' . obj_id('tree', $tree) . "\nparent $oc\n"
		. "author $ID\ncommitter $ID\n\nthin $name\n";
	my $pack = pack_of([ commit => $commit ], [ tree => $tree ],
		[ ref => $ob, $delta ]);
	$case = { name => $name, what => $what, commit => obj_id('commit',
		$commit), pack => $pack, line => 1 + (substr($new, 0,
		index($new, $GHP)) =~ tr/\n//) };

	# the blob stays a delta, its base appended whole
	$t->write_file('thin.pack', $pack);
	my $ip = "cd '$d/thin.git' && git index-pack --stdin --fix-thin";
	my ($kept) = `$ip <../thin.pack` =~ /^pack\t([0-9a-f]{40})$/m;
	my $v = '';
	$v = `git verify-pack -v '$d/thin.git/objects/pack/pack-$kept.idx'`
		if defined($kept);
	ok($v =~ /^$blob blob +\d+ \d+ \d+ 1 $ob$/m && $v =~ /^$ob blob /m,
		"thin packs, $name: kept by index-pack --fix-thin as a delta on "
		. 'the old version, which it appends') or diag($v);
}

# and again with the bases index-pack appends stored, as the gate's
# receive-pack writes them (core.compression=0, gitgate-cgi.c): then the
# bytes c copies from the old version into the appended part are read
# where they lie (gg_pack_stored()), and c too is scanned from its delta
for my $stored (0, 1) {
	git($R, 'config', 'core.compression', '0') if $stored;
	for my $forged (0, 1) {
		tail_write($ob, 3, $OLDN, $forged ? 1082 : 82);
		for my $case (@thin) {
			my $line = $case->{line} + ($forged
				&& ($case->{name} eq 'd' || ($stored
					&& $case->{name} eq 'c')) ? 1000 : 0);
			refused(pack_receive($case->{commit},
				"refs/heads/thin-$case->{name}", $case->{pack}),
				'github_pat_classic', 'commit '
				. substr($case->{commit}, 0, 12)
				. " file tails\\.txt line $line\\b",
				"thin packs, $case->{name}: $case->{what}: refused "
				. "at line $line" . ($forged ? ' (the record claiming '
				. '1000 more lines)' : '')
				. ($stored ? ', its base stored' : ''));
		}
	}
	git($R, 'config', '--unset', 'core.compression') if $stored;
}

# no record of the old version (a first push after a clone, before the
# gate's pass over the fetched files), its base stored: the record is
# made from the stored blocks where they lie (gg_tail_of_stored()) and
# written; each case refused at its line as with a true record
git($R, 'config', 'core.compression', '0');
for my $case (@thin) {
	tail_write($ob, 3, $OLDN, 82, 1);
	refused(pack_receive($case->{commit}, "refs/heads/thin-$case->{name}",
		$case->{pack}), 'github_pat_classic', 'commit '
		. substr($case->{commit}, 0, 12)
		. " file tails\\.txt line $case->{line}\\b",
		"thin packs, $case->{name}: refused at line $case->{line}, no "
		. 'record, its base stored');
	is(join(' ', tail_record($ob)), "3 $OLDN 82", "thin packs, "
		. "$case->{name}: no record: the old version's written (82 lines)");
}

# the same, old versions whose record forbids reading the appended bytes
# alone, made from their stored blocks: each is read as before, the
# appended bytes with what they need of it
sub thin_append {
	my ($name, $old, $ins, $rule, $where, $flags, $lines) = @_;
	start("tail-new-$name");
	my $c = commit('add', "new-$name.txt" => $old);
	my $p = git_push("HEAD:refs/heads/tail-new-$name");
	die "thin_append $name: $p->{out}" if $p->{rc} != 0;
	my $b = git($W, 'rev-parse', "$c:new-$name.txt");
	tail_write($b, 3, length($old), 1, 1);
	my ($delta, $new) = delta_of($old, [ copy => 0, length($old) ],
		[ insert => $ins ]);
	my $tree = `git -C '$W' cat-file tree $c^{tree}`;
	my $entry = "100644 new-$name.txt\0";
	my $at = index($tree, $entry . pack('H40', $b));
	die "thin_append $name: not in its tree\n" if $at < 0;
	substr($tree, $at + length($entry), 20)
		= pack('H40', obj_id('blob', $new));
	my $commit = 'tree ' . obj_id('tree', $tree) . "\nparent $c\n"
		. "author $ID\ncommitter $ID\n\nappend $name\n";
	my $id = obj_id('commit', $commit);
	refused(pack_receive($id, "refs/heads/tail-new-$name-2",
		pack_of([ commit => $commit ], [ tree => $tree ],
		[ ref => $b, $delta ])), $rule, 'commit ' . substr($id, 0, 12)
		. " file new-$name\\.txt $where",
		"thin packs, no record, base stored: $name");
	is(join(' ', tail_record($b)), "$flags " . length($old) . " $lines",
		"thin packs, no record, base stored: $name: its record written "
		. "(flags $flags, $lines lines)");
}
thin_append('plain', join('', @FILL), "more = 1\n$GHP = 1\n",
	'github_pat_classic', 'line 82\b', 3, 80);
thin_append('join', conf_tail(substr($GHP, 0, 20)), substr($GHP, 20) . "\n",
	'github_pat_classic', 'line 81\b', 2, 80);
thin_append('pem', join('', @FILL) . "-----BEGIN RSA PRIVATE KEY-----\n",
	'MIIEow' . ('Ab9' x 20) . "\n-----END RSA PRIVATE KEY-----\n",
	'private_key', 'line 81\b', 7, 81);
thin_append('utf16', u16('UTF-16BE', join('', @FILL)),
	u16('UTF-16BE', "token = $GHP\n"), 'github_pat_classic',
	'\(UTF-16BE\) line 81\b', 1, 80);
git($R, 'config', '--unset', 'core.compression');

tail_write($ob, 3, $OLDN, 82);
is(join(' ', tail_record($ob)), "3 $OLDN 82", 'thin packs: the record put '
	. 'back');

# the pass the gate runs after a fetch (gitgate-scan --tails): a record of
# each file of 1 KB or more at the branches' tips that has none
unlink("$R/gitgate-tails");
my $tails = `'$SCAN' --tails '$R' 2>&1`;
like($tails, qr/^tails: [1-9]\d* recorded, [1-9]\d* bytes read\n\z/,
	'gitgate-scan --tails: records the tips\' files, says how many')
	or diag($tails);
is(join(' ', tail_record($ob)), "3 $OLDN 82", 'gitgate-scan --tails: the '
	. 'record a scan would write');
is(`'$SCAN' --tails '$R' 2>&1`, "tails: 0 recorded, 0 bytes read\n",
	'gitgate-scan --tails again: none without a record left');
# one pass runs a copy and at most one waits (OFD locks on bytes 0 and 1
# of gitgate-tails.lock: docs/gitgate.md, "Appended files"): with both
# bytes held, a pass leaves at once; with the running one's alone, it waits
{
	my $F_OFD_SETLK = 37;	# linux/fcntl.h
	open my $lk, '+>>', "$R/gitgate-tails.lock" or die "$!";
	my $set = sub {
		my ($at, $type) = @_;
		fcntl($lk, $F_OFD_SETLK, pack('s s x4 q q i x4', $type, 0, $at, 1,
			0)) or die "fcntl: $!";
	};
	$set->(1, Fcntl::F_WRLCK());
	$set->(0, Fcntl::F_WRLCK());
	is(`timeout 10 '$SCAN' --tails '$R' 2>&1`, "tails: another pass waits\n",
		'gitgate-scan --tails while one runs and one waits: leaves');
	$set->(0, Fcntl::F_UNLCK());
	system("timeout 2 '$SCAN' --tails '$R' >/dev/null 2>&1");
	is($? >> 8, 124, 'gitgate-scan --tails while one runs: waits for it');
	$set->(1, Fcntl::F_UNLCK());
	close $lk;
}
$tails = `'$SCAN' --tails '$d/no-such.git' 2>&1; echo "rc=\$?"`;
like($tails, qr/^gitgate-scan --tails: .+\nrc=1\n\z/,
	'gitgate-scan --tails on no repository: why, exit 1') or diag($tails);
mkdir("$d/not-a-repo") or die;
$tails = `'$SCAN' --tails '$d/not-a-repo' 2>&1; echo "rc=\$?"`;
ok($tails =~ /^gitgate-scan --tails: cannot open the repository\nrc=1\n\z/
	&& !-e "$d/not-a-repo/gitgate-tails.lock",
	'gitgate-scan --tails on a directory that is no repository: exit 1, '
	. 'no lock file left there') or diag($tails);
git($R, 'config', '--unset', 'receive.unpackLimit');

# the compiled rule databases kept between runs (GITGATE_SCAN_CACHE,
# issue 34): written there by one run, read by the next; one that does
# not check (bytes changed, another database's) is compiled again, never
# trusted; a directory others may write is not used

sub hook_cache {
	my ($cache) = @_;
	$t->write_file('remote.git/hooks/pre-receive',
		"#!/bin/sh\nGITGATE_SCAN_CACHE='$cache' exec '$SCAN' "
		. "--policy '$d/policy.json' --bottle b1\n");
	chmod(0755, "$R/hooks/pre-receive") or die;
}

sub cache_files { my ($dir) = @_; return sort glob("$dir/scan-*.hsdb"); }

sub slurp {
	open my $fh, '<:raw', $_[0] or return '';
	local $/;
	return scalar <$fh>;
}

my $CACHE = "$d/scan-cache";
hook_cache($CACHE);

sub cache_case {
	my ($name) = @_;
	start("cache-$name");
	my $bad = commit("cache $name", "cache/$name.py" => "T = \"$GHP\"\n");
	my $r = git_push("HEAD:refs/heads/cache-$name");
	refused($r, 'github_pat_classic',
		"commit [0-9a-f]{12} file cache/$name.py line 1",
		"scan cache, $name: the token found, the push refused");
}

cache_case('first');
my @files = cache_files($CACHE);
is(scalar(@files), 2, 'scan cache: the two databases written on the first run');
is((stat($CACHE))[2] & 07777, 0700, 'scan cache: the directory made 0700');
my ($inject, $vendor) = @files;
my $good = slurp($vendor);

cache_case('read');
is(slurp($vendor), $good, 'scan cache: the next run reads it as it is');

# bytes of the vendor rules' database changed: not trusted, compiled again
my $bent = $good;
substr($bent, length($bent) / 2, 8) ^= "\xff" x 8;
$t->write_file('scan-cache/' . ($vendor =~ s!.*/!!r), $bent);
cache_case('changed');
is(slurp($vendor), $good, 'scan cache: a changed database compiled and '
	. 'written again');

# another database (valid, its own digest) under the vendor rules' name
$t->write_file('scan-cache/' . ($vendor =~ s!.*/!!r), slurp($inject));
cache_case('swapped');
is(slurp($vendor), $good, 'scan cache: another database under its name '
	. 'compiled over');

# truncated to its header
$t->write_file('scan-cache/' . ($vendor =~ s!.*/!!r), substr($good, 0, 46));
cache_case('truncated');
is(slurp($vendor), $good, 'scan cache: a truncated database compiled over');

# a directory the group may write: not used
my $OPEN = "$d/scan-cache-open";
mkdir($OPEN) or die;
chmod(0770, $OPEN) or die;
hook_cache($OPEN);
cache_case('open');
my @open = cache_files($OPEN);
is(scalar(@open), 0, 'scan cache: a directory others may write '
	. 'is not used');
hook("$d/policy.json");

# only the repository's objects are read, not the machine's or the user's
# git configuration: a ~/.gitconfig git cannot parse, and a repository
# another user owns (libgit2 would look for safe.directory there), are
# scanned all the same

sub scan_as {
	my ($repo, $home, $line) = @_;
	my $pid = open(my $fh, '|-') // die "fork: $!\n";
	if ($pid == 0) {
		$ENV{HOME} = $home;
		delete $ENV{GIT_CONFIG_NOSYSTEM};
		open STDOUT, '>', "$d/scan_as.out" or die;
		open STDERR, '>&', \*STDOUT or die;
		exec($SCAN, '--policy', "$d/policy.json", '--bottle', 'b1',
			'--repo', $repo) or POSIX::_exit(127);
	}
	print $fh $line;
	close $fh;
	return { rc => $? >> 8, out => $t->read_file('scan_as.out') };
}

mkdir("$d/home-bad") or die;
$t->write_file('home-bad/.gitconfig', "[core\n\tbroken = \"\n[safe\n");
my $main_tip = git($R, 'rev-parse', 'refs/heads/main');
my $as = scan_as($R, "$d/home-bad", ('0' x 40) . " $main_tip refs/heads/as\n");
is($as->{rc}, 0, 'a ~/.gitconfig that git cannot parse: the push scanned')
	or diag($as->{out});

SKIP: {
	skip 'not root: no repository of another user', 1 if $> != 0;
	system('cp', '-a', $R, "$d/owned.git") == 0 or die;
	system('chown', '-R', '65534:65534', "$d/owned.git") == 0 or die;
	$as = scan_as("$d/owned.git", $d,
		('0' x 40) . " $main_tip refs/heads/as\n");
	is($as->{rc}, 0, 'a repository another user owns: the push scanned')
		or diag($as->{out});
}

# never the value; the sanitizer build leaves no report

ok(no_value($all), 'no hook output of any push holds a value');
unlike($all, qr/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/,
	'no sanitizer errors');

###############################################################################
