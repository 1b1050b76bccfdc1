#!/usr/bin/perl

# A route with log: "full" on an http block without bottle_full_log_dir
# (docs/full-log.md): its records would go nowhere, so it is refused, never
# served silently unlogged.  A policy file fails nginx -t; a bottle of the
# store, read by the master at start or fetched by a worker later, is not
# served and one error line names it; the store's other bottles are.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;
use Test::Bottle::Store;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream bottle/);

my $RP = port(8090);
my $P1 = port(8081);

$t->write_file_expand('nginx.conf', gateway_plain_conf(
	main => 'worker_processes 1;',
	policy => "redis://127.0.0.1:$RP"));

fake_upstream($t, port => $P1, name => 'one');

# in the store before nginx starts: the master reads these

my $r = redis_start($t, port => $RP);
store_setup($t, $r, $P1, 'alice-token-0123456789');

my $route = { host => '127.0.0.1', ports => [ $P1 ] };

store_put($t, { id => 'alice', token => 'alice-token-0123456789',
	routes => [ $route ] });
store_put($t, { id => 'carol', token => 'carol-token-0123456789',
	routes => [ { %$route, log => 'full' } ] });

$t->run()->plan(8);

###############################################################################

like(wait_for(sub { get('alice-token-0123456789', '/a') }, qr/ 200 /),
	qr/ 200 /, 'no full log: a bottle without a full route served');
like(get('carol-token-0123456789', '/c'), qr/ 407 /,
	'no full log: read at start, a bottle with a full route not served');
like($t->read_file('error.log'), qr/\[error\] .*bottle_policy: bottle:policy:carol: bottle "carol": routes\[0\] \(127\.0\.0\.1\): log: "full" needs the full log, which is off on this gateway \(bottle_full_log_dir\)/,
	'no full log: logged with key, bottle and route');

# put while nginx runs: a worker fetches it

store_put($t, { id => 'dave', token => 'dave-token-0123456789',
	routes => [ $route, { host => 'x.example', log => 'full' } ] });
wait_for(sub { log_count(qr/bottle "dave": routes\[1\]/) }, qr/^[1-9]/);
like(get('dave-token-0123456789', '/d'), qr/ 407 /,
	'no full log: fetched later, not served');
is(log_count(qr/bottle "dave": routes\[1\] \(x\.example\): log: "full" needs the full log/),
	1, 'no full log: fetched later, logged once');
like(get('alice-token-0123456789', '/a2'), qr/ 200 /,
	'no full log: the other bottle still served');

# a policy file: nginx -t fails

write_policy($t, 'file.json', { bottles => [ { id => 'erin',
	token => 'erin-token-0123456789',
	routes => [ { host => 'api.example', log => 'full' } ] } ] });
my $conf = $t->read_file('nginx.conf');
$conf =~ s!bottle_policy redis://\S+;!bottle_policy ${\$t->testdir()}/file.json;!;
$conf =~ s!\berror\.log\b!check-error.log!g;
$conf =~ s!\bnginx\.pid\b!check.pid!g;
$t->write_file('check.conf', $conf);
my ($rc, $out) = $t->nginx_t('check.conf');
isnt($rc, 0, 'file, no full log: nginx -t fails');
like($out, qr/\[emerg\] bottle_policy: \S*file\.json: bottle "erin": routes\[0\] \(api\.example\): log: "full" needs the full log, which is off on this gateway \(bottle_full_log_dir\)/,
	'file, no full log: says why');

###############################################################################
