#!/usr/bin/perl

# The differential check of git-gate's push scan (issue 26): a reference
# scan built on git itself against the gate's fast path, on random pushes
# and hostile ones.  Every finding of the reference must be a finding of
# the gate (more found by the gate is fine: more scanned is allowed).
#
# The reference shares no code with the gate's object reading or line
# logic: git enumerates what a push introduces (git rev-list --objects
# <new tips> --not <the receiving repo's refs>), git cat-file reads each
# object whole; every commit's and tag's raw bytes are one field each
# (all headers, continuation lines, the message past a NUL); every tree
# entry's name is one; for each blob path of a new commit (every mode but
# 160000), the lines of the new version that are not a whole line anywhere
# in the first parent's version of that path are its added lines, each run
# of consecutive ones a field; the same for the decoded view of a UTF-16
# or gzip/zlib blob (decoded here with Perl's Encode and Compress::Zlib).
# The fields go through build/unit/gg_ref_scan (libbottle's scanner and
# generic matcher, the bottle's secrets from the policy, nothing else).
#
# Each push goes to a bare repository whose pre-receive hook is
# build/gitgate-scan; each reference finding must show in the gate's
# report ("remote:" lines): refused, the rule named, and where the report
# lists it, the same commit (and file).
#
#   GG_DIFF_SEED=N      the run's seed (printed; replays the run)
#   GG_DIFF_CASES=N     random cases besides one of each hostile shape (8)
#   GG_DIFF_SHAPES=a,b  only these shapes (random, mode, header, nulmsg,
#                       tag, utf16, gzip, xdel, pem, names, tail)
#   GG_DIFF_PACKS=a,b   only these pack shapes (plain, thin, repack,
#                       fastimport)
#   GG_DIFF_ONLY=N      only case N of the run (with its seed: a replay)
#   GITGATE_SCAN, GG_REF_SCAN   other builds of the two programs

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;

use Compress::Zlib qw//;
use Encode qw//;
use POSIX qw//;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $ROOT = "$FindBin::Bin/..";

sub bin {
	my ($env, $def) = @_;
	my $p = $ENV{$env} // "$ROOT/$def";
	$p = "$ROOT/$p" if $p !~ m!^/!;
	if (!-x $p) {
		BAIL_OUT("$env=$p is not built") if $ENV{$env};
		plan(skip_all => "$def not built (make gitgate unit)");
	}
	return $p;
}

my $SCAN = bin('GITGATE_SCAN', 'build/gitgate-scan');
my $REF = bin('GG_REF_SCAN', 'build/unit/gg_ref_scan');

my $t = Test::Nginx->new()->has_daemon('git');
my $d = $t->testdir();

my $SEED = $ENV{GG_DIFF_SEED} // (time() ^ ($$ << 8)) % 1000000007;
my $NCASES = $ENV{GG_DIFF_CASES} // 8;
my @HOSTILE = qw/ mode header nulmsg tag utf16 gzip xdel pem names tail /;
my @SHAPES = $ENV{GG_DIFF_SHAPES} ? split(/,/, $ENV{GG_DIFF_SHAPES})
	: ('random', @HOSTILE);
my @PACKS = $ENV{GG_DIFF_PACKS} ? split(/,/, $ENV{GG_DIFF_PACKS})
	: qw/ plain thin repack fastimport /;

diag("seed $SEED (replay: GG_DIFF_SEED=$SEED prove -v t/gitgate_diff.t)");

# the values, built so that no token sits whole in this file
my $CANARY = 'canary-' . 'diff-8675309001';
my $EGRESS = 'egress-' . 'diff-token-5150';
my $HELD = 'held-' . 'diff-secret-2718281';

$t->write_file('policy.json', <<"EOF");
{"bottles": [{"id": "b1", "token": "tok-0123456789abcdef",
  "canary": "$CANARY",
  "egress_tokens": {"API": "$EGRESS"},
  "held_secrets": {"DB_PASSWORD": "$HELD"},
  "routes": []}]}
EOF

# git without the user's or the system's configuration
$ENV{HOME} = $d;
$ENV{GIT_CONFIG_NOSYSTEM} = 1;
$ENV{GIT_AUTHOR_NAME} = $ENV{GIT_COMMITTER_NAME} = 'Agent';
$ENV{GIT_AUTHOR_EMAIL} = $ENV{GIT_COMMITTER_EMAIL} = 'agent@bottle.test';
delete $ENV{$_} for grep { /^GIT_(?:DIR|WORK_TREE|OBJECT|ALTERNATE|INDEX)/ }
	keys %ENV;

###############################################################################

# run($dir, $input, @cmd): (status, stdout, stderr), binary-safe
my $nrun = 0;

sub run {
	my ($dir, $input, @cmd) = @_;
	$nrun++;
	my ($in, $out, $err) = map { "$d/run.$_" } qw/ in out err /;
	open my $fh, '>:raw', $in or die "$in: $!";
	print $fh $input // '';
	close $fh;
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		chdir($dir) or POSIX::_exit(126);
		open STDIN, '<', $in or POSIX::_exit(126);
		open STDOUT, '>', $out or POSIX::_exit(126);
		open STDERR, '>', $err or POSIX::_exit(126);
		exec(@cmd) or POSIX::_exit(127);
	}
	waitpid($pid, 0);
	my $rc = $? >> 8;
	return ($rc, slurp($out), slurp($err));
}

sub slurp {
	my ($f) = @_;
	open my $fh, '<:raw', $f or return '';
	local $/;
	my $s = <$fh>;
	return $s // '';
}

sub git {
	my ($dir, @args) = @_;
	my ($rc, $out, $err) = run($dir, undef, 'git', @args);
	die "git @args in $dir: $rc: $err" if $rc;
	chomp($out);
	return $out;
}

sub git_in {
	my ($dir, $input, @args) = @_;
	my ($rc, $out, $err) = run($dir, $input, 'git', @args);
	die "git @args in $dir: $rc: $err" if $rc;
	chomp($out);
	return $out;
}

###############################################################################

# the generator: random text, edits, secrets

sub rnd { return int(rand($_[0])); }
sub pick { return $_[rnd(scalar @_)]; }

sub rstr {
	my ($n, $chars) = @_;
	$chars //= join('', 'A' .. 'Z', 'a' .. 'z', 0 .. 9);
	return join('', map { substr($chars, rnd(length $chars), 1) } 1 .. $n);
}

my @WORDS = qw/ the a value return int char static if else for while config
	path file read write buffer line count size node list map key item
	data next prev open close error state user name id time port host /;

sub text_line {
	my $k = rnd(8);
	return '' if $k == 0;
	return '}' if $k == 1;
	return join(' ', map { pick(@WORDS) } 0 .. rnd(9))
		. pick('', ';', ' {', ',', '');
}

# a secret of a random kind: [ text of the line, what it is ]
sub secret {
	my @kinds = qw/ github gitlab slack aws canary held egress pem generic /;
	my $k = pick(@kinds);
	my $v;
	if ($k eq 'github') {
		$v = 'ghp_' . rstr(36);
	} elsif ($k eq 'gitlab') {
		$v = 'glpat-' . rstr(20);
	} elsif ($k eq 'slack') {
		$v = 'xoxb-' . rstr(10, '0123456789') . '-'
			. rstr(12, '0123456789') . '-' . rstr(24);
	} elsif ($k eq 'aws') {
		$v = 'AKIA' . rstr(16, join('', 'A' .. 'Z', 0 .. 9));
	} elsif ($k eq 'canary') {
		$v = $CANARY;
	} elsif ($k eq 'held') {
		$v = $HELD;
	} elsif ($k eq 'egress') {
		$v = $EGRESS;
	} elsif ($k eq 'pem') {
		return (['-----BEGIN RSA PRIVATE KEY-----', 'MIIEow'
			. rstr(58, join('', 'A' .. 'Z', 'a' .. 'z', 0 .. 9, '+/')),
			'-----END RSA PRIVATE KEY-----'], $k);
	} else {
		return (['    ' . pick('api_key', 'SECRET_TOKEN', 'password',
			'auth_token') . ' = "' . rstr(12 + rnd(10)) . '"'], $k);
	}
	return ([pick('', 'x = ', 'TOKEN="', '// ', '  ') . $v
		. pick('', '"', ';', ' end')], $k);
}

sub rfile {
	my @l = map { text_line() } 0 .. 5 + rnd(40);
	return \@l;
}

# one random edit of a file's lines (in place); sometimes a secret
sub edit {
	my ($l, $secrets) = @_;
	my $n = scalar @$l;
	my $op = rnd(9);
	my $at = rnd($n + 1);
	if ($op == 0 || $n < 3) {
		splice(@$l, $at, 0, map { text_line() } 0 .. rnd(4));
	} elsif ($op == 1) {
		splice(@$l, $at, 1 + rnd(3));
	} elsif ($op == 2) {
		splice(@$l, $at, 1 + rnd(3), map { text_line() } 0 .. rnd(3));
	} elsif ($op == 3) {
		my @b = splice(@$l, rnd($n), 1 + rnd(5));
		splice(@$l, rnd(scalar(@$l) + 1), 0, @b);
	} elsif ($op == 4 && $at + 1 < $n) {
		splice(@$l, $at, 2, $l->[$at] . $l->[$at + 1]);
	} elsif ($op == 5 && $at < $n && length $l->[$at] > 1) {
		my $p = rnd(length $l->[$at]);
		splice(@$l, $at, 1, substr($l->[$at], 0, $p),
			substr($l->[$at], $p));
	} elsif ($op == 6 && $at < $n && length $l->[$at]) {
		substr($l->[$at], 0, 1) = '';
	} elsif ($op == 7 && $at < $n && length $l->[$at]) {
		chop($l->[$at]);
	} else {
		splice(@$l, $at, 0, text_line());
	}
	if (rnd(3) == 0) {
		my ($lines, $k) = secret();
		$n = scalar @$l;
		$at = rnd($n + 1);
		if ($at < $n && rnd(2) && @$lines == 1) {
			# into an edited line
			my $p = rnd(length($l->[$at]) + 1);
			substr($l->[$at], $p, 0) = ' ' . $lines->[0] . ' ';
		} else {
			splice(@$l, $at, 0, @$lines);
		}
		push @$secrets, $k;
	}
}

sub joined {
	my ($l, $nonl) = @_;
	my $s = join("\n", @$l);
	return $nonl ? $s : $s . "\n";
}

###############################################################################

# objects, made with git's plumbing (so any mode, header or byte)

my $TIME = 1700000000;

sub put { my ($dir, $type, $data) = @_;
	return git_in($dir, $data, 'hash-object', '-w', '--literally', '-t',
		$type, '--stdin');
}

# files: { path => [ mode, bytes ] } -> tree oid
sub mktree {
	my ($dir, $files) = @_;
	my %root;
	for my $p (keys %$files) {
		my @c = split(m!/!, $p);
		my $h = \%root;
		$h = ($h->{shift @c} //= {}) while @c > 1;
		$h->{$c[0]} = $files->{$p};
	}
	return tree_of($dir, \%root);
}

sub tree_of {
	my ($dir, $h) = @_;
	my @e;
	for my $name (keys %$h) {
		my $v = $h->{$name};
		if (ref $v eq 'HASH') {
			push @e, [ '40000', $name, tree_of($dir, $v), "$name/" ];
		} elsif ($v->[0] eq '160000') {
			push @e, [ $v->[0], $name, $v->[1], $name ];
		} else {
			push @e, [ $v->[0], $name, put($dir, 'blob', $v->[1]),
				$name ];
		}
	}
	my $raw = '';
	for my $e (sort { $a->[3] cmp $b->[3] } @e) {
		$raw .= "$e->[0] $e->[1]\0" . pack('H*', $e->[2]);
	}
	return put($dir, 'tree', $raw);
}

sub mkcommit {
	my ($dir, $tree, $parent, $msg, $extra) = @_;
	$TIME += 60;
	my $raw = "tree $tree\n" . ($parent ? "parent $parent\n" : '')
		. "author Agent <agent\@bottle.test> $TIME +0000\n"
		. "committer Agent <agent\@bottle.test> $TIME +0000\n"
		. ($extra // '') . "\n$msg";
	return put($dir, 'commit', $raw);
}

# the same history through git fast-import (its own packs and deltas)
sub fi_commit {
	my ($dir, $files, $parent, $msg) = @_;
	$TIME += 60;
	my $s = "commit refs/fi/tmp\ncommitter Agent <agent\@bottle.test> "
		. "$TIME +0000\ndata " . length($msg) . "\n$msg\n";
	$s .= "from $parent\n" if $parent;
	$s .= "deleteall\n";
	for my $p (sort keys %$files) {
		my ($mode, $bytes) = @{$files->{$p}};
		$s .= "M $mode inline $p\ndata " . length($bytes) . "\n$bytes\n";
	}
	git_in($dir, $s, 'fast-import', '--quiet', '--force');
	return git($dir, 'rev-parse', 'refs/fi/tmp');
}

###############################################################################

# the reference scan of a push: [ { rule, kind, commit, path, mode, field } ]

sub batch {
	my ($dir, @oids) = @_;
	my %o;
	return \%o unless @oids;
	my $out = git_in($dir, join("\n", @oids) . "\n", 'cat-file', '--batch');
	$out .= "\n";
	while (length $out) {
		$out =~ s/^([0-9a-f]+) (\w+) (\d+)\n// or last;
		my ($oid, $type, $size) = ($1, $2, $3);
		$o{$oid} = { type => $type, data => substr($out, 0, $size) };
		substr($out, 0, $size + 1) = '';
	}
	return \%o;
}

sub ls_tree {
	my ($dir, $rev) = @_;
	my %f;
	return \%f unless $rev;
	for (split(/\0/, git($dir, 'ls-tree', '-r', '-z', $rev))) {
		my ($mode, $type, $oid, $path) = /^(\d+) (\w+) (\w+)\t(.*)$/s
			or next;
		$f{$path} = [ $mode, $type, $oid ];
	}
	return \%f;
}

# the views of a blob: [ name, bytes ] (raw, and decoded where it is)
sub views {
	my ($b) = @_;
	my @v = ([ 'raw', $b ]);
	if ($b =~ /^\x1f\x8b/) {
		my $x = Compress::Zlib::memGunzip($b);
		push @v, [ 'gzip', $x ] if defined $x;
	} elsif ($b =~ /^\x78[\x01\x5e\x9c\xda]/) {
		my $x = Compress::Zlib::uncompress($b);
		push @v, [ 'zlib', $x ] if defined $x;
	}
	my $enc;
	if ($b =~ /^\xff\xfe/) { $enc = 'UTF-16LE'; }
	elsif ($b =~ /^\xfe\xff/) { $enc = 'UTF-16BE'; }
	elsif (length($b) >= 4 && length($b) % 2 == 0) {
		my ($even, $odd) = (0, 0);
		for (my $i = 0; $i < length($b); $i += 2) {
			$even++ if substr($b, $i, 1) eq "\0";
			$odd++ if substr($b, $i + 1, 1) eq "\0";
		}
		my $half = length($b) / 2;
		$enc = 'UTF-16BE' if $even > $half * 0.6 && $odd == 0;
		$enc = 'UTF-16LE' if $odd > $half * 0.6 && $even == 0;
	}
	if ($enc) {
		my $s = eval { Encode::decode($enc, $b, Encode::FB_DEFAULT) };
		if (defined $s) {
			$s =~ s/^\x{feff}//;
			push @v, [ lc $enc, Encode::encode('UTF-8', $s) ];
		}
	}
	return @v;
}

# the runs of lines of new not a whole line of old: [ first line, bytes ]
sub added_runs {
	my ($old, $new) = @_;
	my %have = map { $_ => 1 } split(/\n/, $old // '', -1);
	my @l = split(/\n/, $new, -1);
	pop @l if @l && $l[-1] eq '';
	my (@runs, $cur);
	for my $i (0 .. $#l) {
		if ($have{$l[$i]}) {
			$cur = undef;
			next;
		}
		if (!$cur) {
			$cur = [ $i + 1, '' ];
			push @runs, $cur;
		}
		$cur->[1] .= "$l[$i]\n";
	}
	return @runs;
}

sub reference {
	my ($dir, $have, $updates) = @_;
	my @tips = map { $_->[1] } @$updates;
	my @fields;

	push @fields, { kind => 'ref', label => 'ref', data => $_->[0] }
		for @$updates;

	my @list = split(/\n/, git($dir, 'rev-list', '--objects', @tips,
		'--not', @$have));
	my @oids = map { (split / /)[0] } @list;
	my $o = batch($dir, @oids);

	my @commits = grep { $o->{$_}{type} eq 'commit' } @oids;
	my %parent;
	if (@commits) {
		for (split(/\n/, git($dir, 'log', '--no-walk=unsorted',
			'--format=%H %P', @commits)))
		{
			my ($c, $p) = split / /;
			$parent{$c} = $p;
		}
	}

	my (%covered, %rawmode);
	for my $oid (@oids) {
		my $ob = $o->{$oid};
		if ($ob->{type} eq 'commit' || $ob->{type} eq 'tag') {
			push @fields, { kind => $ob->{type}, commit => $oid,
				data => $ob->{data} };
		} elsif ($ob->{type} eq 'tree') {
			my $raw = $ob->{data};
			while ($raw =~ /\G(\d+) ([^\0]*)\0(.{20})/gs) {
				push @fields, { kind => 'name', commit => $oid,
					data => $2 };
				# ls-tree shows a blob's mode canonical
				$rawmode{unpack('H*', $3)} = $1;
			}
		}
	}

	my @blobs;
	for my $c (@commits) {
		my $new = ls_tree($dir, $c);
		my $old = ls_tree($dir, $parent{$c});
		for my $p (sort keys %$new) {
			my ($mode, $type, $oid) = @{$new->{$p}};
			next if $mode eq '160000' || $type ne 'blob';
			my $prev = $old->{$p};
			next if $prev && $prev->[2] eq $oid;
			my $oldoid = $prev && $prev->[1] eq 'blob' ? $prev->[2]
				: undef;
			push @blobs, [ $c, $p, $rawmode{$oid} // $mode, $oid,
				$oldoid ];
			$covered{$oid} = 1;
		}
	}
	my $bo = batch($dir, map { ($_->[3], $_->[4] // ()) } @blobs);

	for my $b (@blobs) {
		my ($c, $p, $mode, $oid, $oldoid) = @$b;
		# the raw view against the old raw version; a decoded one
		# against every line the old version had, raw or decoded
		my @oldv = $oldoid ? views($bo->{$oldoid}{data}) : ();
		my $oldraw = @oldv ? $oldv[0][1] : undef;
		my $oldall = @oldv ? join("\n", map { $_->[1] } @oldv) : undef;
		for my $v (views($bo->{$oid}{data})) {
			for my $r (added_runs($v->[0] eq 'raw' ? $oldraw : $oldall,
				$v->[1]))
			{
				push @fields, { kind => 'file', commit => $c,
					path => $p, mode => $mode, view => $v->[0],
					line => $r->[0], data => $r->[1],
					old => $oldoid, new => $oid };
			}
		}
	}

	# a blob no new commit's path reaches (a tag or ref naming it): whole
	for my $oid (grep { $o->{$_}{type} eq 'blob' && !$covered{$_} } @oids) {
		my $used = grep { $_->[1] eq $oid } @$updates;
		for my $t (grep { $o->{$_}{type} eq 'tag' } @oids) {
			$used ||= $o->{$t}{data} =~ /^object $oid\n/;
		}
		next unless $used;
		for my $v (views($o->{$oid}{data})) {
			push @fields, { kind => 'blob', commit => $oid,
				view => $v->[0], data => $v->[1] };
		}
	}

	my $in = join('', map { "$_->{kind} " . length($_->{data}) . "\n"
		. $_->{data} } @fields);
	my ($rc, $out, $err) = run($d, $in, $REF, '--policy', "$d/policy.json",
		'--bottle', 'b1');
	die "gg_ref_scan: $rc: $err" if $rc;

	my @found;
	for (split(/\n/, $out)) {
		my ($i, $rule) = /^(\d+) (\S+)$/ or die "gg_ref_scan: $_\n";
		push @found, { %{$fields[$i]}, rule => $rule };
	}
	return @found;
}

###############################################################################

# the gate's report: [ rule, where ] from the remote: lines

sub gate {
	my ($out) = @_;
	my (@f, $more);
	my @l = map { s/^remote: //r =~ s/\s+$//r } grep { /^remote: / }
		split(/\n/, $out);
	for my $i (0 .. $#l) {
		if ($l[$i] =~ /^git-gate refused this push \(rule: ([^)]+)\)/) {
			my $rule = $1;
			my $where = ($l[$i + 1] // '') =~ /^\s+where: (.*)$/ ? $1
				: '';
			push @f, [ $rule, $where ];
		}
		$more = 1 if $l[$i] =~ /more findings not listed/;
	}
	return (\@f, $more);
}

sub matched {
	my ($r, $f, $more, $out) = @_;
	my $short = substr($r->{commit} // '', 0, 12);
	my @same = grep { $_->[0] eq $r->{rule} } @$f;

	return 1 if $r->{kind} eq 'ref'
		&& grep { $_->[1] =~ /ref update/ } @same;
	return 1 if $r->{kind} eq 'commit'
		&& grep { $_->[1] =~ /^commit \Q$short\E\b/ } @same;
	return 1 if $r->{kind} eq 'tag' && grep { $_->[1] =~ /^tag\b/ } @same;
	return 1 if $r->{kind} eq 'name' && @same;
	return 1 if $r->{kind} eq 'blob' && @same;

	if ($r->{kind} eq 'file') {
		my $here = sub {
			$_[0] =~ /\b\Q$short\E\b/
			&& ($_[0] =~ /\Q$r->{path}\E/
				|| $_[0] =~ /changed file \d+|withheld/);
		};
		return 1 if grep { $here->($_->[1]) } @same;
		# a generic assignment is looked for in a file only when no
		# token shape was found there: any finding of that file
		return 1 if $r->{rule} eq 'generic-assignment'
			&& grep { $here->($_->[1]) } @$f;
		# a non-canonical mode refused as such, naming path and mode
		return 1 if $r->{mode} !~ /^(?:100644|100755|120000)$/
			&& grep { "@$_" =~ /\Q$r->{mode}\E/ } @$f;
	}

	# findings past the report's list cannot be told apart
	return 1 if $more && @$f;
	return 0;
}

sub q_bytes {
	my ($s, $max) = @_;
	$max //= 400;
	my $q = substr($s, 0, $max);
	$q =~ s/([\\"])/\\$1/g;
	$q =~ s/([^\x20-\x7e])/sprintf('\\x%02x', ord $1)/ge;
	return '"' . $q . '"' . (length $s > $max ? ' ...' : '');
}

sub repro {
	my ($r) = @_;
	my $s = "  reference finding: rule $r->{rule}, in the $r->{kind}";
	$s .= " $r->{commit}" if $r->{commit};
	$s .= ", file $r->{path} (mode $r->{mode}, view $r->{view}, new"
		. " blob $r->{new}" . ($r->{old} ? ", old blob $r->{old}" : '')
		. "), added lines from line $r->{line}" if $r->{kind} eq 'file';
	$s .= "\n  field bytes: " . q_bytes($r->{data}) . "\n";
	return $s;
}

###############################################################################

# one case: fresh repositories, a clean base pushed, then the shape's pushes

my (%tally, @failed, $all);

sub run_case {
	my ($i, $shape, $packs) = @_;
	my $cd = "$d/case$i";
	my ($R, $W) = ("$cd/remote.git", "$cd/work");
	mkdir($cd) or die;
	git($cd, 'init', '-q', '--bare', $R);
	git($cd, 'init', '-q', $W);
	my $fi = $packs eq 'fastimport';

	# the base: a few files, on the remote before its hook is installed
	my %files;
	my %lines;
	for (0 .. 2 + rnd(4)) {
		my $p = pick('', 'src/', 'doc/', 'lib/x/') . pick(@WORDS)
			. "$_." . pick('c', 'txt', 'md');
		$lines{$p} = rfile();
		$files{$p} = [ '100644', joined($lines{$p}) ];
	}
	if ($shape eq 'utf16') {
		my $enc = pick('UTF-16LE', 'UTF-16BE');
		$files{'doc/u.txt'} = [ '100644', ($enc eq 'UTF-16LE'
			? "\xff\xfe" : "\xfe\xff")
			. Encode::encode($enc, joined(rfile())) ];
	}
	my $head = mkcommit($W, mktree($W, \%files), undef, "base\n");
	git($W, 'update-ref', 'refs/heads/main', $head);
	git($W, 'push', '-q', $R, 'refs/heads/main:refs/heads/main');
	if (rnd(2)) {
		git($R, 'repack', '-adq');
	}
	git($R, 'config', 'receive.unpackLimit', '1')
		if $packs ne 'plain';
	# in half the cases the bases of a thin push's pack stored, not
	# compressed, as the gate's receive-pack writes them (core.compression
	# 0, gitgate-cgi.c): appended bytes copied from the old version read
	# where they lie (gg_pack_stored())
	# (always for tail: the gate's own way, what its appends are read by)
	git($R, 'config', 'core.compression', '0')
		if $packs ne 'plain' && (rnd(2) || $shape eq 'tail');
	$t->write_file("case$i/remote.git/hooks/pre-receive", "#!/bin/sh\n"
		. "exec '$SCAN' --policy '$d/policy.json' --bottle b1\n");
	chmod(0755, "$R/hooks/pre-receive") or die;

	my @pushes;    # [ [ refname, oid ], ... ] each
	my %forget;    # push index: the gate's records forgotten before it

	my $commit = sub {
		my ($msg, $extra) = @_;
		my $odd = grep { ref $_ ne 'ARRAY'
			|| $_->[0] !~ /^(?:100644|100755|120000)$/ } values %files;
		my $c = $fi && !defined $extra && !$odd
			? fi_commit($W, \%files, $head, $msg)
			: mkcommit($W, mktree($W, \%files), $head, $msg, $extra);
		return $head = $c;
	};

	my $random_commits = sub {
		my @s;
		for (0 .. rnd(3)) {
			for (0 .. rnd(2)) {
				my @p = sort keys %lines;
				my $p = rnd(4) == 0 ? "new/" . pick(@WORDS) . rnd(99)
					. ".txt" : pick(@p);
				$lines{$p} //= rfile();
				edit($lines{$p}, \@s) for 0 .. rnd(4);
				$files{$p} = [ $files{$p} ? $files{$p}[0] : '100644',
					joined($lines{$p}, rnd(8) == 0) ];
			}
			$commit->("change " . rnd(1000) . "\n");
		}
	};

	if ($shape eq 'random' || $shape eq 'pem') {
		$random_commits->();
		if ($shape eq 'pem') {
			my $p = pick(sort keys %lines);
			my $pem;
			($pem) = secret() until $pem && @$pem == 3;
			splice(@{$lines{$p}}, rnd(scalar @{$lines{$p}}), 0, @$pem);
			$files{$p}[1] = joined($lines{$p});
			$commit->("key\n");
		}
	} elsif ($shape eq 'mode') {
		$random_commits->() if rnd(2);
		my ($s) = secret();
		my $p = rnd(2) ? 'odd/' . pick(@WORDS) . '.txt' : pick(sort keys %lines);
		my @l = @{$lines{$p} // rfile()};
		splice(@l, rnd(@l + 1), 0, @$s);
		$files{$p} = [ pick('100664', '100600', '100640', '100444'),
			joined(\@l) ];
		$commit->("odd mode\n", '');
	} elsif ($shape eq 'header') {
		# three of the header shapes, each with a value of another rule
		my @v = ('ghp_' . rstr(36), 'glpat-' . rstr(20),
			'AKIA' . rstr(16, join('', 'A' .. 'Z', 0 .. 9)), $CANARY,
			$HELD, $EGRESS);
		my @h = (
			sub { "committer x <y> 1 +0000\n $_[0]\n" },
			sub { " $_[0]\n" },
			sub { "parent $_[0]\n" },
			sub { "author $_[0] <a\@b> 1 +0000\n" },
			sub { "tree $_[0]\n" },
			sub { "x-note $_[0]\n" },
			sub { "gpgsig -----BEGIN PGP SIGNATURE-----\n $_[0]\n"
				. " -----END PGP SIGNATURE-----\n" },
			sub { "encoding UTF-8\nx-meta first\n continued $_[0]\n" });
		my $extra = '';
		for my $i (1 .. 3) {
			# the first one of the shapes issue 26 names
			my $f = splice(@h, rnd($i == 1 ? 5 : scalar @h), 1);
			$extra .= $f->(splice(@v, rnd(scalar @v), 1));
		}
		$random_commits->() if rnd(2);
		$commit->("headers\n", $extra);
	} elsif ($shape eq 'nulmsg') {
		# (generic assignments are looked for in files only)
		my ($s, $k) = secret();
		($s, $k) = secret() while $k eq 'generic';
		$commit->(pick('fix', 'release', '') . "\0" . join("\n", @$s)
			. "\n", '');
	} elsif ($shape eq 'tag') {
		$random_commits->() if rnd(2);
		my ($s, $k) = secret();
		($s, $k) = secret() while $k eq 'generic';
		my $v = join("\n", @$s);
		my $name = 'v' . rnd(100);
		my ($extra, $msg) = @{pick(
			[ "x-extra $v\n", "release\n" ],
			[ "", "release\0$v\n" ],
			[ "encoding UTF-8\n", "release\n\0\n$v\n" ],
			[ "tagger2 $v\n continued\n", "ok\n" ])};
		$TIME += 60;
		my $tag = put($W, 'tag', "object $head\ntype commit\ntag $name\n"
			. "tagger Agent <agent\@bottle.test> $TIME +0000\n"
			. "$extra\n$msg");
		git($W, 'update-ref', "refs/tags/$name", $tag);
		push @pushes, [ [ "refs/tags/$name", $tag ] ];
	} elsif ($shape eq 'utf16') {
		# a token shape (the bottle's own values libbottle finds in
		# UTF-16 already), then anything
		my ($s, $k) = secret();
		($s, $k) = secret() until $k =~ /^(?:github|gitlab|slack|aws|pem)$/;
		my ($enc) = $files{'doc/u.txt'}[1] =~ /^\xff\xfe/ ? 'UTF-16LE'
			: 'UTF-16BE';
		my $text = Encode::decode($enc, substr($files{'doc/u.txt'}[1], 2));
		my @l = split(/\n/, $text);
		splice(@l, rnd(@l + 1), 0, @$s);
		$files{'doc/u.txt'}[1] = substr($files{'doc/u.txt'}[1], 0, 2)
			. Encode::encode($enc, join("\n", @l) . "\n");
		if (rnd(2)) {
			my $e2 = pick('UTF-16LE', 'UTF-16BE');
			$files{'doc/n' . rnd(9) . '.txt'} = [ '100644',
				(rnd(2) ? ($e2 eq 'UTF-16LE' ? "\xff\xfe" : "\xfe\xff")
				: '') . Encode::encode($e2, joined([ @{rfile()},
				@{(secret())[0]} ])) ];
		}
		$commit->("utf-16\n");
	} elsif ($shape eq 'gzip') {
		my ($s, $k) = secret();
		($s, $k) = secret() while $k eq 'generic';
		my $body = joined([ @{rfile()}, @$s, @{rfile()} ]);
		if (rnd(2)) {
			$files{'data/x' . rnd(9) . '.gz'} = [ '100644',
				Compress::Zlib::memGzip($body) ];
		} else {
			$files{'data/x' . rnd(9) . '.z'} = [ '100644',
				Compress::Zlib::compress($body) ];
		}
		$commit->("compressed\n");
	} elsif ($shape eq 'names') {
		# a secret in a tree entry's name, each of another rule: a file
		# moved there (same blob), a gitlink, an empty tree
		my @v = ('ghp_' . rstr(36), 'glpat-' . rstr(20),
			'AKIA' . rstr(16, join('', 'A' .. 'Z', 0 .. 9)), $CANARY,
			$HELD, $EGRESS);
		my @v3 = map { splice(@v, rnd(scalar @v), 1) } 1 .. 3;
		my $p = pick(sort keys %lines);
		$files{"moved/$v3[0].txt"} = delete $files{$p};
		delete $lines{$p};
		$files{"vendor/$v3[1]"} = [ '160000', rstr(40, '0123456789abcdef') ];
		$files{"empty/$v3[2]"} = {};
		$commit->("names\n", '');
	} elsif ($shape eq 'tail') {
		# appends to files a clean push appended to first, so that the
		# gate has their records (gg_tail.c): secrets appended, an old
		# line again with a secret after it, a token begun on the old
		# last line (no newline) and ended by the appended bytes
		my @p = sort keys %lines;
		# (1 KB and more: a smaller file has no record)
		for my $p (@p) {
			$files{$p}[1] .= join('', map { text_line() . "\n" }
				0 .. 60 + rnd(40));
		}
		my $j = pick(@p);
		my $tok = rstr(36);
		my $cut = 4 + rnd(20);
		$files{$j}[1] .= 'x = ghp_' . substr($tok, 0, $cut);
		$commit->("clean\n");
		push @pushes, [ [ 'refs/heads/main', $head ] ];
		# in half the cases the records forgotten after it (a first
		# push after a clone, before the gate's pass over the fetched
		# files): each made from the old version's stored blocks
		$forget{scalar @pushes} = 1 if rnd(2);
		$files{$j}[1] .= substr($tok, $cut) . "\n";
		for (0 .. rnd(2)) {
			for my $p (grep { rnd(2) } @p) {
				my @add = map { text_line() } 0 .. rnd(10);
				my ($sec) = secret();
				my $k = rnd(3);
				if ($k == 0) {
					splice(@add, rnd(@add + 1), 0, @$sec);
				} elsif ($k == 1) {
					my @ol = grep { length > 8 } split(/\n/,
						$files{$p}[1]);
					push @add, pick(@ol) . ' ' . $sec->[0] if @ol;
				}
				$files{$p}[1] .= join('', map { "$_\n" } @add);
			}
			$commit->("append\n");
		}
	} elsif ($shape eq 'xdel') {
		# x<token> and <token>x pushed, then the x deleted
		my @tok = ('ghp_' . rstr(36), 'glpat-' . rstr(20),
			'AKIA' . rstr(16, join('', 'A' .. 'Z', 0 .. 9)));
		splice(@tok, rnd(3), 1);
		my @at;
		for my $k (0, 1) {
			my $p = pick(sort keys %lines);
			my $at = rnd(scalar @{$lines{$p}} + 1);
			splice(@{$lines{$p}}, $at, 0, $k ? "$tok[$k]x" : "x$tok[$k]");
			$files{$p}[1] = joined($lines{$p});
			push @at, [ $p, $at ];
		}
		$commit->("one\n");
		push @pushes, [ [ 'refs/heads/main', $head ] ];
		for my $k (0, 1) {
			my ($p) = @{$at[$k]};
			$_ = $_ eq "x$tok[$k]" || $_ eq "$tok[$k]x" ? $tok[$k] : $_
				for @{$lines{$p}};
			$files{$p}[1] = joined($lines{$p});
		}
		$commit->("two\n");
	}

	push @pushes, [ [ 'refs/heads/' . pick('main', 'topic'), $head ] ]
		unless $shape eq 'tag';

	git($W, 'repack', '-adfq', '--depth=50', '--window=250')
		if $packs eq 'repack';

	my $ok = 1;
	my $report = '';
	for my $k (0 .. $#pushes) {
		my $u = $pushes[$k];
		unlink("$R/gitgate-tails") if $forget{$k};
		my @have = grep { length } split(/\n/, git($R, 'for-each-ref',
			'--format=%(objectname)'));
		my @ref = reference($W, \@have, $u);
		my ($rc, $out, $err) = run($W, undef, 'git', 'push', '--porcelain',
			'--force', $packs eq 'thin' ? '--thin' : (), $R,
			map { "$_->[1]:$_->[0]" } @$u);
		$out .= $err;
		$all .= $out;
		my ($f, $more) = gate($out);
		my @missed = grep { $rc == 0 || !matched($_, $f, $more) } @ref;
		if (@missed) {
			$ok = 0;
			$report .= "push of " . join(', ', map { "$_->[0] = $_->[1]" }
				@$u) . ($forget{$k} ? ' (the records forgotten)' : '')
				. ": the gate " . ($rc ? 'refused' : 'accepted')
				. "; " . scalar(@missed) . " of " . scalar(@ref)
				. " reference findings not in its report\n"
				. join('', map { repro($_) } @missed[0 .. ($#missed > 4
				? 4 : $#missed)])
				. "  gate said:\n" . join('', map { "    $_\n" }
				grep { /^remote: / } split(/\n/, $out));
		}
	}
	$report .= "the repositories: $W, $R (kept with TEST_NGINX_LEAVE=1)\n"
		unless $ok;
	return ($ok, $report);
}

###############################################################################

my @cases;
srand($SEED);
# (appends are read from the delta alone only in a thin push)
push @cases, [ $_, $_ eq 'tail' && grep({ $_ eq 'thin' } @PACKS) ? 'thin'
	: pick(@PACKS) ] for grep { $_ ne 'random' } @SHAPES;
if (grep { $_ eq 'random' } @SHAPES) {
	push @cases, [ 'random', $PACKS[$_ % @PACKS] ] for 0 .. $NCASES - 1;
}

for my $i (0 .. $#cases) {
	next if defined $ENV{GG_DIFF_ONLY} && $ENV{GG_DIFF_ONLY} != $i;
	my ($shape, $packs) = @{$cases[$i]};
	srand($SEED * 7919 + $i);
	$TIME = 1700000000;
	my ($ok, $report) = run_case($i, $shape, $packs);
	$tally{$shape}{n}++;
	$tally{$shape}{fail}++ unless $ok;
	ok($ok, "case $i: $shape, $packs: every reference finding is the gate's")
		or diag("replay: GG_DIFF_SEED=$SEED GG_DIFF_ONLY=$i "
			. "GG_DIFF_SHAPES=" . join(',', @SHAPES) . " GG_DIFF_PACKS="
			. join(',', @PACKS) . " prove -v t/gitgate_diff.t\n$report");
}

diag(join(', ', map { "$_: " . ($tally{$_}{fail} // 0) . " of $tally{$_}{n}"
	. " failed" } sort keys %tally));

# the sanitizer build (GITGATE_SCAN=build-asan/gitgate-scan) leaves no report
unlike($all // '', qr/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/,
	'no sanitizer errors');

done_testing();

###############################################################################
