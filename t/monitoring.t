#!/usr/bin/perl

# The shipped alert rules and dashboard (monitoring/, docs/metrics.md
# "Alerts and dashboard"): promtool checks the rules and runs their unit
# tests (each alert fires from synthetic series, on the instance that
# earned it only); the dashboard is valid JSON, and every metric that its
# queries and the rules' expressions name is one a running gateway (policy
# store and audit journal on) exports.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

use IO::Socket::INET;
use JSON::PP;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/)
	->has_daemon('redis-server')->has_daemon('redis-cli');

my $MON = "$Test::Nginx::REPO/monitoring";
my $RULES = "$MON/bottle-alerts.yml";
my $DASH = "$MON/bottle-dashboard.json";

my $PROMTOOL = $ENV{PROMTOOL} // 'promtool';
my $have_promtool = !system("$PROMTOOL --version >/dev/null 2>&1");

my $RP = port(8092);
my $M = port(8090);

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	policy => "redis://127.0.0.1:$RP",
	global => <<"EOF",
bottle_audit redis://127.0.0.1:$RP;
EOF
	servers => <<"EOF"));

server {
    listen 127.0.0.1:$M;

    location = /metrics {
        bottle_metrics;
    }
}
EOF

redis_start($t, port => $RP);
store_raw($t, 'alice', '{"id":"alice","token_sha256":"'
	. ('0' x 64) . '","routes":[]}', '0' x 64);

$t->run()->plan(9);

###############################################################################

sub scrape {
	my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$M")
		or return '';
	$s->print("GET /metrics HTTP/1.0\r\nHost: local\r\n\r\n");
	local $/;
	return <$s> // '';
}

# the metrics a PromQL expression names: what is left once strings, label
# matchers, ranges, grouping clauses and functions are set aside

sub metric_names {
	my ($e) = @_;
	my @names;

	$e =~ s/"(?:[^"\\]|\\.)*"//g;
	$e =~ s/\{[^}]*\}//g;
	$e =~ s/\[[^\]]*\]//g;
	$e =~ s/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)//g;
	$e =~ s/\boffset\s+\w+//g;

	while ($e =~ /(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g) {
		next if defined $2;
		next if $1 =~ /^(?:and|or|unless|bool)$/;
		push @names, $1;
	}

	return @names;
}

# the rules' expressions: "expr: ..." or a block "expr: |" and its lines

sub rule_exprs {
	my ($file) = @_;
	open my $fh, '<', $file or die "$file: $!\n";
	my (@exprs, $block, $indent);
	while (my $line = <$fh>) {
		if (defined $block) {
			if ($line =~ /^(\s*)\S/ && length($1) > $indent) {
				$block .= $line;
				next;
			}
			push @exprs, $block;
			undef $block;
		}
		if ($line =~ /^(\s*)expr:\s*\|\s*$/) {
			($block, $indent) = ('', length $1);
		} elsif ($line =~ /^\s*expr:\s*(.+)$/) {
			push @exprs, $1;
		}
	}
	push @exprs, $block if defined $block;
	return @exprs;
}

###############################################################################

SKIP: {
	skip "no promtool (Debian's prometheus package): the rules are not "
		. "checked", 2 unless $have_promtool;

	my $out = `$PROMTOOL check rules $RULES 2>&1`;
	like($out, qr/SUCCESS: [1-9]\d* rules found/, 'promtool check rules')
		or diag($out);

	$out = `cd $MON && $PROMTOOL test rules bottle-alerts.test.yml 2>&1`;
	is($?, 0, 'promtool test rules: every alert fires as it should')
		or diag($out);
}

my @alerts = map { /^\s*-\s*alert:\s*(\S+)/ ? $1 : () }
	split /\n/, $t->read_file($RULES);
is(join(' ', sort @alerts), 'BottleFirehoseDrops BottleHeldPlacesFull '
	. 'BottleJournalDrops BottleRefusalSpike BottleStoreLost '
	. 'BottleStoreSyncStale', 'the alerts shipped');

my $dash = eval { JSON::PP->new->decode($t->read_file($DASH)) };
ok($dash && ref $dash->{panels} eq 'ARRAY' && @{$dash->{panels}},
	'dashboard: valid JSON, with panels') or diag($@);

my @exprs = map { map { $_->{expr} // () } @{$_->{targets} // []} }
	@{$dash->{panels} // []};
my @queries = map { ref $_->{query} ? $_->{query}{query} : () }
	@{$dash->{templating}{list} // []};
cmp_ok(scalar @exprs, '>=', 10, 'dashboard: its queries');

# what the gateway exports, once it follows the store

my $text = '';
for (1 .. 100) {
	$text = scrape();
	last if $text =~ /^bottle_store_up 1$/m;
	sleep 0.1;
}
my %exported = map { $_ => 1 } $text =~ /^# TYPE (\S+) \S+$/mg;
ok($exported{bottle_store_up} && $exported{bottle_requests_total},
	'the gateway exports its metrics');

my %used;
$used{$_} = 1 for map { metric_names($_) } @exprs;
$used{$_} = 1 for map { /label_values\(\s*([\w:]+)/ ? $1 : () } @queries;
my @unknown = grep { !$exported{$_} } sort keys %used;
ok($used{bottle_store_up} && $used{bottle_requests_total}
	&& $used{bottle_zone_size_bytes} && !$used{instance} && !$used{rate},
	'dashboard: the metric names read from its queries')
	or diag(join(' ', sort keys %used));
is(join(' ', @unknown), '', 'dashboard: every metric it names is exported');

%used = ();
$used{$_} = 1 for map { metric_names($_) } rule_exprs($RULES);
@unknown = grep { !$exported{$_} } sort keys %used;
is(join(' ', @unknown), '', 'alert rules: every metric they name is '
	. 'exported');

###############################################################################
