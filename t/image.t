#!/usr/bin/perl

# The Dockerfile against what CI does (docs/install.md, "The image"):
# the image is not built here (too slow, and it needs a container
# builder), but what it is built from is checked: the same
# scripts/install-deps.sh and make targets, a final stage with
# install-deps.sh --installed only (no compiler, no -dev package) that
# still holds every library the built binaries load and every program
# bottle-init and its daemons run, and the paths the Dockerfile names
# where make install puts them.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new();
my $d = $t->testdir();
my $REPO = $Test::Nginx::REPO;

plan(skip_all => 'no dpkg') unless -x '/usr/bin/dpkg-query';

my $df = read_text("$REPO/Dockerfile");
my @stages = split /^(?=FROM\s)/m, $df;
shift @stages unless $stages[0] =~ /^FROM/;

plan(tests => 21);

###############################################################################

# the stages

is(scalar @stages, 2, 'two stages');
like($stages[0], qr/^FROM debian:12-slim AS build$/m, 'build: debian:12-slim');
like($stages[1], qr/^FROM debian:12-slim$/m, 'gateway: debian:12-slim');

my @b = runs($stages[0]);
ok((grep { m{^scripts/install-deps\.sh --runtime\b} } @b),
	'build: install-deps.sh --runtime') or diag(join("\n", @b));
# what make install needs, built with every core (make install alone
# would build it one file at a time)
my ($needs) = read_text("$REPO/Makefile") =~ /^install:[ \t]*(.*)$/m;
ok((grep { /\bmake -j"\$\(nproc\)" \Q$needs\E$/ } @b),
	"build: make -j of what make install needs ($needs)")
	or diag(join("\n", @b));
my ($inst) = grep { /\bmake install\b/ } @b;
like($inst // '', qr/\bDESTDIR=\/out\b/, 'build: make install into /out');

my @g = runs($stages[1]);
ok((grep { m{install-deps\.sh --installed\b} } @g),
	'gateway: install-deps.sh --installed') or diag(join("\n", @g));
ok(!(grep { /\bmake\b/ } @g), 'gateway: no make');
like($stages[1], qr{^COPY --from=build /out/ /$}m, 'gateway: make install\'s files');
like($stages[1], qr/^USER bottle$/m, 'gateway: not root');

# the paths the Dockerfile names are where make install puts them

my ($prefix) = ($inst // '') =~ /\bPREFIX=(\S+)/;
my ($entry) = $stages[1] =~ /^ENTRYPOINT \["([^"]+)"\]$/m;
my ($health) = $stages[1] =~ /^\s*CMD \["([^"]+)", "health"\]$/m;

my $D = "$d/root";
my $out = `make -s -C $REPO install DESTDIR=$D PREFIX=$prefix RESOLVER=127.0.0.1 2>&1`;
is($?, 0, 'make install as the Dockerfile runs it') or diag($out);
ok(defined $entry && -x "$D$entry", "ENTRYPOINT $entry installed");
ok(defined $health && $health eq $entry, 'HEALTHCHECK: bottle-init health');

$out = `BOTTLE_GATEWAY_DAEMONS=bogus $D$entry 2>&1`;
like($out, qr/unknown daemon 'bogus' \(known: gitgate nginx supervise \)/,
	'the installed bottle-init finds the installed daemons');

# every ENV the Dockerfile sets is a setting something reads

my @env = $stages[1] =~ /\b(BOTTLE_[A-Z_]+)=/g;
my $scripts = join '', map { read_text($_) }
	"$REPO/scripts/bottle-init", glob("$REPO/scripts/daemons/*");
is(join(' ', grep { $scripts !~ /\$\{?\Q$_\E\b/ } @env), '',
	'every ENV is read by bottle-init or a daemon');

# install-deps.sh --installed: enough, and nothing to build with

my @pkgs = split ' ', `sh $REPO/scripts/install-deps.sh --list --installed`;
my %have = closure(@pkgs);
ok(@pkgs > 5, 'install-deps.sh --list --installed');
is(join(' ', grep { /-dev$|^build-essential$|^gcc|^clang|^pkg-config$|^make$/ }
	@pkgs), '', '--installed: no compiler, no -dev package');

my @runtime = split ' ', `sh $REPO/scripts/install-deps.sh --list --runtime`;
my %rt = map { $_ => 1 } @runtime;
is(join(' ', grep { !$rt{$_} } @pkgs), '',
	'--runtime has all of --installed (make run runs what the image runs)');

# the libraries of what make install installs

my @bins = ("$D/usr/lib/nginx/modules/ngx_bottle_module.so",
	grep { -f && -B } glob("$D$prefix/bin/* $D$prefix/lib/ngx-bottle/*"));
my (%libs, @missing);
for my $bin (@bins) {
	for (`ldd $bin`) {
		$libs{$1} = 1 if m{=>\s+(/\S+)};
	}
}
for my $lib (sort keys %libs) {
	my $pkg = owner($lib);
	push @missing, "$lib ($pkg)" unless $have{$pkg} || required($pkg);
}
ok(@bins >= 5 && keys %libs > 5, 'the binaries and their libraries')
	or diag("@bins");
is(join(', ', @missing), '', 'every library in an --installed package or its dependencies');

# the programs bottle-init and the daemons run

@missing = ();
for my $prog (qw/ s6-svscan s6-supervise s6-svstat s6-svc sed awk curl
		fcgiwrap openssl git sh bash /, '/usr/sbin/nginx') {
	my $path = $prog =~ m{^/} ? $prog : `sh -c 'command -v $prog'`;
	chomp $path;
	my $pkg = $path ? owner($path) : '';
	push @missing, "$prog ($pkg)" unless $have{$pkg} || required($pkg);
}
is(join(', ', @missing), '', 'every program in an --installed package or its dependencies');

###############################################################################

sub read_text {
	my ($f) = @_;
	open my $fh, '<', $f or die "$f: $!";
	local $/;
	return <$fh>;
}

# a stage's RUN commands, continuation lines joined
sub runs {
	my ($stage) = @_;
	$stage =~ s/\\\n\s*/ /g;
	my @r = $stage =~ /^RUN\s+(.*)$/mg;
	return map { split /\s*&&\s*/ } @r;
}

# the package a file belongs to (merged /usr: dpkg may know the other path)
sub owner {
	my ($path) = @_;
	my @try = ($path);
	push @try, $path =~ m{^/usr(/.*)} ? $1 : "/usr$path";
	my $real = `readlink -f $path`;
	chomp $real;
	push @try, $real, $real =~ m{^/usr(/.*)} ? $1 : "/usr$real";
	for my $p (@try) {
		my $o = `dpkg-query -S $p 2>/dev/null`;
		return $1 if $o =~ /^([^:,\s]+)(?::\w+)?:\s/m;
	}
	return "no package";
}

# the packages and what they depend on, as installed here
sub closure {
	my (@queue) = @_;
	my %seen;
	while (defined(my $p = shift @queue)) {
		next if $seen{$p}++;
		my $deps = `dpkg-query -W -f '\${Depends}, \${Pre-Depends}' $p 2>/dev/null`;
		for my $alt (split /\s*,\s*/, $deps) {
			for my $d (split /\s*\|\s*/, $alt) {
				push @queue, $1 if $d =~ /^([a-z0-9][a-z0-9.+-]*)/;
			}
		}
	}
	return %seen;
}

# in every Debian system: no need to list it
sub required {
	my ($pkg) = @_;
	my $o = `dpkg-query -W -f '\${Priority} \${Essential}' $pkg 2>/dev/null`;
	return $o =~ /^required\b|\byes$/;
}

###############################################################################
