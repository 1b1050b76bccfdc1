#!/usr/bin/perl

# The documentation a newcomer follows stays true: the test files and
# make targets that README.md and docs/*.md name exist, and the sanitizer
# command in docs/testing.md and docs/install.md is the one `make
# test-asan` runs (which `make test` runs); README lists every page of
# docs/; every repository file a doc cites exists and none cites a file
# the repository does not hold; what issue 33 found wrong stays fixed;
# bottlectl's documented commands run and fail as documented (one line,
# "bottlectl: ...").  No nginx needed.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use File::Basename qw/ dirname /;


###############################################################################

my $REPO = dirname($FindBin::Bin);

sub slurp {
	my ($f) = @_;
	open my $fh, '<', "$REPO/$f" or die "$f: $!\n";
	local $/;
	return scalar <$fh>;
}

my @DOCS = ('README.md', map { s!^\Q$REPO\E/!!r } glob("$REPO/docs/*.md"));
my $MAKEFILE = slurp('Makefile');

my %target = map { $_ => 1 } map { split ' ' }
	$MAKEFILE =~ /^([\w.-]+(?:[ \t]+[\w.-]+)*)[ \t]*:(?!=)/mg;

# the recipe of test-asan, as a shell command line

my ($recipe) = $MAKEFILE =~ /^test-asan:[^\n]*\n((?:\t[^\n]*\n)+)/m;
die "no test-asan recipe in the Makefile\n" unless defined $recipe;
$recipe =~ s/^\t//mg;
$recipe =~ s/\$\$/\$/g;

sub command {
	my ($s) = @_;
	$s =~ s/\\\n/ /g;
	$s =~ s/\s+/ /g;
	$s =~ s/^ | $//g;
	return $s;
}

my @checks;

for my $doc (@DOCS) {
	my $text = slurp($doc);

	# test files and directories named anywhere

	my %seen;
	for my $path ($text =~ m{(?<![\w/.])(t/[\w./-]*\w/?)}g) {
		next if $seen{$path}++;
		push @checks, [ "$doc names $path", sub { -e "$REPO/$path" } ];
	}

	# make targets in commands: lines of code blocks, and `make x`

	my @code = $text =~ /^```[^\n]*\n(.*?)^```/msg;
	push @code, $text =~ /^((?: {4}|\t)[^\n]*)$/mg;
	push @code, $text =~ /`(make [^`]*)`/g;

	my %t;
	for my $line (map { split /\n/ } @code) {
		next unless $line =~ /^\s*make((?:\s+[^\s#]+)*)/;
		my @words = grep { /^[\w.-]+$/ && !/^-/ } split ' ', $1;
		$t{$_}++ for @words;
	}
	for my $t (sort keys %t) {
		push @checks, [ "$doc: make $t is a target",
			sub { $target{$t} } ];
	}

	# the sanitizer command: as make test-asan runs it

	while ($text =~ /^\s*((?:BOTTLECTL=\S+\s*\\\n\s*)?TEST_NGINX_MODULE=build-asan\S*\s*\\\n(?:[^\n]*\\\n)*[^\n]*)$/mg) {
		my $cmd = $1;
		push @checks, [ "$doc: sanitizer command is make test-asan's",
			sub {
				is(command($cmd), command($recipe), $_[0])
					|| diag("Makefile test-asan:\n$recipe");
			}, 1 ];
	}

	push @checks, [ "$doc: no sanitizer runtime in LD_PRELOAD for prove",
		sub { $text !~ /^\s*LD_PRELOAD=\S*(?:asan|ubsan)/m } ];
}

# every page of docs/ is in README's documentation list

my $readme = slurp('README.md');
for my $page (grep { m{^docs/} } @DOCS) {
	push @checks, [ "README.md lists $page",
		sub { $readme =~ /\]\(\Q$page\E\)/ } ];
}

# every repository file the docs (and the READMEs of the parts) cite
# exists; no doc cites a file this repository does not hold (the project's
# design notes and spec live elsewhere: the docs say it in their own words)

my @READMES = map { s!^\Q$REPO\E/!!r } glob("$REPO/*/README.md");
my $DIRS = 'lib|gitgate-helper|supervise-helper|ngx_bottle_module|bottlectl'
	. '|fuzz|scripts|nginx-conf|systemd|bench|docs';

for my $doc (@DOCS, @READMES) {
	my $text = slurp($doc);
	my %seen;
	while ($text =~ m{(?<![\w/.\$<-])((?:$DIRS)/[\w./-]*\w)(\.?\{|\*)?}g) {
		my ($path, $more) = ($1, $2);
		# a family (lib/x.{c,h}, lib/x_*.c), a placeholder (RUN.json)
		next if defined $more || $seen{$path}++
			|| grep { /^[A-Z][A-Z-]*(?:\.\w+)?$/ } split m{/}, $path;
		push @checks, [ "$doc cites $path, which exists",
			sub { grep { -e "$REPO/$path$_" } '', '.c', '.h' } ];
	}
	for my $away ('DESIGN.md', 'gateway.txt', 'threat-model.txt',
		'shared/spec', 'threat-model row', 'threat model row')
	{
		push @checks, [ "$doc cites no $away (not in the repository)",
			sub { index(lc $text, lc $away) < 0 } ];
	}
	push @checks, [ "$doc: no stray sed backreference line",
		sub { $text !~ /^\s*\\\d\s*$/m } ];
}

# what issue 33 found wrong stays fixed

my $escape = slurp('docs/escape-attempts.md');
push @checks, [ 'escape-attempts.md: no row waits for a part that exists',
	sub { $escape !~ /(?:does|do) not exist\s+yet/ } ];
for my $row (4, 5, 10) {
	my ($line) = $escape =~ /^(- [^\n]*\*\*[Rr]ow $row\*\*.*?)(?=^- |\z)/ms;
	$line //= '';
	push @checks, [ "escape-attempts.md: row $row says which test covers it",
		sub { $line =~ m{`(t/\w+\.t)`} && -e "$REPO/$1" } ];
}

# the reason of a failed refresh: where gitgate-cgi writes it

my $gitgate = slurp('docs/gitgate.md');
my $cgi = slurp('gitgate-helper/gitgate-cgi.c');
push @checks, [ "gitgate.md: a failed refresh's reason is in fcgiwrap's stderr, as gitgate-cgi writes it",
	sub {
		$gitgate =~ /forge_unavailable.{0,200}fcgiwrap's stderr \(`gitgate-cgi:\s+<forge>\/<owner>\/<repo>: <reason>`/s
			&& $cgi =~ /fprintf\(stderr, "gitgate-cgi: %s: %s\\n", ctx\.name, err\);\s+gg_refuse\(&req, "git-gate: %s cannot be read from the forge "\s+"\(rule: forge_unavailable\)/
			&& $gitgate !~ /forge_unavailable[^.]*\.[^.]*is in nginx's error log/s;
	} ];

# one path for the operator's password file

my %pw;
for my $doc (@DOCS, @READMES) {
	$pw{$_}++ for slurp($doc) =~ m{(/etc/[\w.-]+/operator\.pw)}g;
}
push @checks, [ 'one operator password path in the docs ('
	. join(', ', sort keys %pw) . ')', sub { keys %pw == 1 } ];

# make test's duration as README states it: the suite takes over 20 minutes

my ($minutes) = $readme =~ /`make test` takes ([^(]*?)(?: on|\()/;
push @checks, [ "README.md: make test's duration is not understated ("
	. ($minutes // 'none') . ')',
	sub { defined $minutes && $minutes !~ /\b(?:[1-9]|1\d) (?:to \d+ )?minutes/
		&& $minutes =~ /half an hour|\b(?:[2-9]\d) minutes/ } ];

# bottlectl: each documented command runs; each error is one line on
# stderr starting "bottlectl: " (docs/bottlectl.md), checked on every
# command of the synopsis run without its arguments against a store that
# does not answer (loopback port 1)

my $CTL = "$REPO/build/bottlectl";
my $ctl_doc = slurp('docs/bottlectl.md');
my ($synopsis) = $ctl_doc =~ /^```\n(bottlectl .*?)^```/ms;
my @cmds;
for my $line (split /\n/, $synopsis // '') {
	next unless $line =~ s/^bottlectl\s+//;
	$line =~ s/\[--(?:store|policy|json)[^\]]*\]\s*//g;
	my @w;
	for (split ' ', $line) { last unless /^[a-z]+$/; push @w, $_; }
	push @cmds, join(' ', @w) if @w;
}
my %cmd_seen;
@cmds = grep { !$cmd_seen{$_}++ } @cmds;

if (-x $CTL) {
	push @checks, [ 'bottlectl --help and --version run',
		sub { system("$CTL --help >/dev/null 2>&1") == 0
			&& system("$CTL --version >/dev/null 2>&1") == 0 } ];
	my $help = `$CTL --help 2>&1`;
	for my $cmd (@cmds) {
		push @checks, [ "bottlectl --help lists '$cmd'",
			sub { $help =~ /bottlectl .*\Q$cmd\E/ } ];
		push @checks, [ "bottlectl $cmd (no arguments): one error line, 'bottlectl: '",
			sub {
				my $err = `$CTL --store redis://127.0.0.1:1 $cmd 2>&1 >/dev/null`;
				my $rc = $? >> 8;
				ok($rc != 0 && $err =~ /\Abottlectl: [^\n]*\n\z/, $_[0])
					or diag("exit $rc: $err");
			}, 1 ];
	}
}

plan(tests => scalar @checks);

for my $c (@checks) {
	my ($name, $code, $self) = @$c;
	if ($self) {
		$code->($name);
	} else {
		ok($code->(), $name);
	}
}

###############################################################################
