#!/usr/bin/perl

# The layout's rules (docs/architecture.md): lib/ includes no nginx header
# and nothing of the module; no pipeline step calls back up into the
# pipeline file; no source file grows past about a thousand lines
# (lib/, the module, fuzz/ and the helpers and bottlectl).

use warnings;
use strict;

use Test::More;
use FindBin;

my $root = "$FindBin::Bin/..";

sub slurp {
	my ($f) = @_;
	open my $fh, '<', $f or die "$f: $!\n";
	local $/;
	return <$fh>;
}

my @lib = glob("$root/lib/*.[ch]");
my @rooms = qw(core stream http);
my @mod = map { glob("$root/ngx_bottle_module/$_/*.[ch]") } @rooms;

ok(@lib > 10 && @mod > 10, 'lib/ and ngx_bottle_module/ hold the sources');
ok(!-d "$root/src", 'no src/ left');
is(join(' ', map { s{.*/}{}r } glob("$root/ngx_bottle_module/*.[ch]")), '',
	'every module source is in core/, stream/ or http/');

my @bad = grep { slurp($_) =~ /^\s*#\s*include\s*[<"](?:ngx_|nginx)/m } @lib;
is("@bad", '', 'no file under lib/ includes an nginx header');

@bad = grep {
	my $f = $_;
	grep { my $h = $_; grep { -e "$root/ngx_bottle_module/$_/$h" } @rooms }
		slurp($f) =~ /^\s*#\s*include\s*"([^"]+)"/mg;
} @lib;
is("@bad", '', 'no file under lib/ includes a file of the module');

# the pipeline's own functions, called from a step

my $pipeline = "$root/ngx_bottle_module/http/ngx_http_bottle_pipeline.c";
my @exported = slurp($pipeline) =~ /^(?!static)\w[^\n(]*\n(ngx_http_\w+)\(/mg;
ok(@exported, 'the pipeline exports its entry points: ' . join(' ', @exported));

# the module file registers the handlers: it is above the pipeline
my @steps = grep { !/ngx_http_bottle_(?:pipeline|module)\.c$/ }
	glob("$root/ngx_bottle_module/http/ngx_http_bottle_*.c");

for my $f (@steps) {
	my $text = slurp($f);
	my @up = grep { $text =~ /\b$_\s*\(/ } @exported;
	(my $name = $f) =~ s{.*/}{};
	is("@up", '', "$name calls nothing of the pipeline file");
}

my @long = grep { (() = slurp($_) =~ /\n/g) > 1000 }
	@lib, @mod, glob("$root/fuzz/*.c"), glob("$root/bottlectl/*.[ch]"),
	glob("$root/gitgate-helper/*.[ch]"),
	glob("$root/supervise-helper/*.[ch]");
is("@long", '', 'no source file over 1000 lines');

done_testing();
