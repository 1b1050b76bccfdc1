#!/usr/bin/perl

# Tests for bottlectl's limits and write outcomes (docs/bottlectl.md):
# policy put refuses a bottle over each limit (routes, a policy's bytes, a
# secret, the store's total) with its message and writes nothing, and
# --limits / $BOTTLE_LIMITS raise them; a put whose reply is lost to a
# stopped Redis (SIGSTOP) is never reported failed and applied later: its
# outcome is settled and told, or bottlectl exits 5 ("outcome unknown")
# and policy status WRITE-ID tells the truth.  No nginx needed.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use JSON::PP qw//;
use POSIX qw/ WNOHANG /;
use Time::HiRes qw/ sleep time /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $BOTTLECTL = $ENV{BOTTLECTL} // "$FindBin::Bin/../build/bottlectl";
$BOTTLECTL = "$FindBin::Bin/../$BOTTLECTL"
	if $BOTTLECTL !~ m!^/! && !-x $BOTTLECTL;

if (!-x $BOTTLECTL) {
	BAIL_OUT("BOTTLECTL=$BOTTLECTL is not built") if $ENV{BOTTLECTL};
	plan(skip_all => 'build/bottlectl not built (make ctl)');
}

my $t = Test::Nginx->new()->has_daemon('redis-server')
	->has_daemon('redis-cli')->plan(26);

my $r = redis_start($t, port => 8101);
$ENV{BOTTLE_STORE} = $r->{url};
delete $ENV{BOTTLE_LIMITS};

sub ctl { return ctl_run($t, @_); }

sub policy {
	my ($name, @bottles) = @_;
	return write_policy($t, $name, { bottles => \@bottles });
}

sub routes {
	my ($n) = @_;
	return [ map { { host => "h$_.example.com" } } 1 .. $n ];
}

sub stored {
	my ($id) = @_;
	my $v = redis_cli($t, 'HGET', 'bottle:bottles', $id);
	chomp $v;
	return $v;
}

###############################################################################

# routes: 4096 by default

my $f = policy('routes.json', { id => 'wide', token => 'wide-token-0123456789',
	routes => routes(4097) });
my $res = ctl('policy', 'put', $f);
is($res->{rc}, 1, 'routes: refused');
like($res->{err}, qr/^bottlectl: \S+routes\.json: bottle "wide": routes: 4097 routes, over the limit of 4096 \(raise "routes" with bottle_store_limits and bottlectl --limits\)$/m,
	'routes: the message');
is(stored('wide'), '', 'routes: nothing written');
is(ctl('--limits', 'routes=5000', 'policy', 'put', $f)->{rc}, 0,
	'routes: --limits raises it');

# a policy's bytes: 1 MiB by default; $BOTTLE_LIMITS raises the routes

$f = policy('bytes.json', { id => 'fat', token => 'fat-token-0123456789',
	routes => routes(40000) });
$res = ctl({ env => { BOTTLE_LIMITS => 'routes=50000' } },
	'policy', 'put', $f);
is($res->{rc}, 1, 'policy bytes: refused');
like($res->{err}, qr/bottle "fat": policy: \d{7} bytes, over the limit of 1048576 \(raise "policy"/,
	'policy bytes: the message');
is(stored('fat'), '', 'policy bytes: nothing written');
is(ctl({ env => { BOTTLE_LIMITS => 'routes=50000 policy=2m' } },
	'policy', 'put', $f)->{rc}, 0, 'policy bytes: $BOTTLE_LIMITS raises it');

# a secret: 16 KiB by default, never quoted

my $long = 'x' x 16385;
for my $case ([ 'egress_tokens.GH', { egress_tokens => { GH => $long } } ],
	[ 'canary', { canary => $long } ],
	[ 'token', { token => $long } ])
{
	my ($field, $extra) = @$case;
	$f = policy('secret.json', { id => 'sec',
		token => 'sec-token-0123456789', routes => [], %$extra });
	$res = ctl('policy', 'put', $f);
	like($res->{err}, qr/bottle "sec": \Q$field\E: 16385 bytes, over the limit of 16384 for a secret \(raise "secret"/,
		"secret $field: refused, the message");
	unlike($res->{err}, qr/xxxxxxxx/, "secret $field: never quoted");
}
is(stored('sec'), '', 'secret: nothing written');

# the store's total: measured by the put script itself, atomically

$f = policy('total.json', { id => 'tot', token => 'tot-token-0123456789',
	routes => routes(10) });
$res = ctl('--limits', 'routes=50000,policy=2m,store=1200k',
	'policy', 'put', $f);
is($res->{rc}, 1, 'store total: refused');
like($res->{err}, qr/bottle "tot": the store would hold \d+ bytes of policy, over the limit of 1228800 \(raise "store"/,
	'store total: the message');
is(stored('tot'), '', 'store total: nothing written');

is(ctl('--limits', 'routes=lots', 'bottles')->{rc}, 2, 'bad --limits: usage');

###############################################################################

# a put sent to a Redis that stops writing (CLIENT PAUSE WRITE: the put
# reads the stored version for its journal event first) before it
# answers, resumed while bottlectl waits: the outcome is settled and
# told, and is the truth

sub put_stopped {
	my ($id, $resume) = @_;
	my $file = policy("$id.json", { id => $id,
		token => "$id-token-0123456789", routes => [] });

	redis_cli($t, 'CLIENT', 'PAUSE', 60000, 'WRITE');
	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		my $res = ctl_run($t, 'policy', 'put', $file);
		open my $fh, '>', $t->testdir() . "/$id.res" or die;
		print $fh JSON::PP->new->encode($res);
		close $fh;
		POSIX::_exit(0);
	}

	my $start = time();
	sleep $resume;
	redis_cli($t, 'CLIENT', 'UNPAUSE') if $resume;
	waitpid($pid, 0);
	redis_cli($t, 'CLIENT', 'UNPAUSE');
	sleep 0.3;

	my $res = JSON::PP->new->decode($t->read_file("$id.res"));
	$res->{secs} = time() - $start;
	return $res;
}

# resumed after 6 s: the put's reply was lost (5 s), the settle answers

$res = put_stopped('zed', 6);
my $v = stored('zed');
note("rc $res->{rc} after $res->{secs} s: $res->{out}$res->{err}");
ok(($res->{rc} == 0 && $res->{out} =~ /^zed version $v$/m && $v ne '')
	|| ($res->{rc} == 3 && $v eq ''
		&& $res->{err} =~ /the write was not applied, and never will be/),
	'stopped, resumed: the outcome told is the store\'s');
sleep 0.5;
is(stored('zed'), $v, 'stopped, resumed: nothing applied later');

# never resumed while bottlectl waits: exit 5 and the command that tells

$res = put_stopped('yew', 0);
is($res->{rc}, 5, 'stopped: outcome unknown, exit 5');
my ($wid) = $res->{err} =~ /'bottlectl policy status ([0-9a-f]{32})'/;
ok($wid, 'stopped: the command that tells');
like($res->{err}, qr/^bottlectl: outcome unknown: the store \S+ did not answer/m,
	'stopped: the message');

$res = ctl('policy', 'status', $wid // '0' x 32);
$v = stored('yew');
if ($res->{out} =~ /applied\nyew version (\d+)$/) {
	is($1, $v, 'status: applied, at the version stored');
} else {
	ok($res->{out} =~ /not applied/ && $v eq '',
		'status: not applied, and not in the store');
}
sleep 0.5;
is(stored('yew'), $v, 'status: nothing applied later');

###############################################################################
