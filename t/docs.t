#!/usr/bin/perl

# The documentation a newcomer follows stays true: the test files and
# make targets that README.md and docs/*.md name exist, and the sanitizer
# command in docs/testing.md and docs/install.md is the one `make
# test-asan` runs (which `make test` runs).  No nginx needed.

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
