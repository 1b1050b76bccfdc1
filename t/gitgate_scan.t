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

use Compress::Zlib qw//;
use Encode qw//;
use IO::Compress::Gzip qw//;
use IO::Compress::Zip qw//;
use MIME::Base64 qw/ encode_base64 /;
use POSIX qw//;

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

$t->plan(85);

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
git($R, 'config', '--unset', 'receive.unpackLimit');
hook("$d/policy.json");
git($W, 'checkout', '-q', 'int');

$r = git_push('HEAD:refs/heads/int');
is($r->{rc}, 0, 'the same push with the policy back: accepted')
	or diag($r->{out});

# never the value; the sanitizer build leaves no report

ok(no_value($all), 'no hook output of any push holds a value');
unlike($all, qr/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/,
	'no sanitizer errors');

###############################################################################
