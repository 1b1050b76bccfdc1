#!/usr/bin/perl

# make install and make uninstall, into a DESTDIR: the module where
# Debian's nginx looks, the modules-available snippet and its numbered
# modules-enabled link, the config pieces in /etc/nginx/bottle/, the
# binaries, the alert rules and dashboard, a manifest.  Debian's stock
# nginx then tests (-t) and runs a
# configuration made as docs/install.md says, from the installed pieces
# (copied with their absolute paths moved into the test directory: the
# policy, the CA made by scripts/bottle-ca, the run and log directories),
# next to a server of the operator's that the pieces must not change.
# uninstall leaves no file; an operator's edited file is kept, the new
# one written as .dist.

###############################################################################

use warnings;
use strict;

use Test::More;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

use File::Find qw/ find /;
use File::Path qw/ make_path /;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/http proxy stream dnsmasq/)
	->has_daemon('curl');

my $REPO = $Test::Nginx::REPO;
my $SO = "$REPO/build/ngx_bottle_module.so";
plan(skip_all => "no $SO (make)") unless -f $SO;
plan(skip_all => "no build/$_ (make)") for grep { !-x "$REPO/build/$_" }
	qw/ bottlectl gitgate-scan gitgate-cgi supervise-helper /;

my $d = $t->testdir();
my $D = "$d/destdir";		# DESTDIR
my $C = "$d/bottle";		# the installed pieces, paths moved
my $R = "$d/rt";		# what the pieces name: policy, CA, run, logs

my $TOKEN = 'install-token-0123456789';
my $HOST = 'api.install.test';
my $UP = port(8082);
my $DNS = port(8053);
my $FRONT = port(8080);

my @CONFS = qw/ bottle-main.conf bottle-stream.conf bottle-http.conf
	bottle-server.conf bottle-resolver.conf bottle-ca.conf
	bottle-gitgate.conf /;

sub run_cmd {
	my (@cmd) = @_;
	my $pid = open(my $fh, '-|');
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		open STDERR, '>&', \*STDOUT;
		exec(@cmd) or POSIX::_exit(127);
	}
	local $/;
	my $out = <$fh> // '';
	close $fh;
	log_in("@cmd: exit " . ($? >> 8) . "\n$out");
	return ($? >> 8, $out);
}

# what make built stays as it is (-o): another test may be running with it
sub make {
	return run_cmd('make', '-s', '-C', $REPO, '-o', 'module',
		(map { ('-o', "build/$_") } qw/ bottlectl gitgate-scan
			gitgate-cgi supervise-helper /), @_, "DESTDIR=$D");
}

# every file, link and directory under $D
sub tree {
	my @all;
	return () unless -d $D;
	find({ no_chdir => 1, wanted => sub {
		push @all, substr($File::Find::name, length $D) if $_ ne $D;
	} }, $D);
	return sort @all;
}

dns_start($t, port => $DNS, hosts => { $HOST => '127.0.0.1' });
fake_upstream($t, port => $UP, name => 'api');

plan(tests => 48);

###############################################################################

# install

my ($rc, $out) = make('install', "RESOLVER=127.0.0.1:$DNS");
is($rc, 0, 'make install DESTDIR: exit 0') or diag($out);

my $mod = "$D/usr/lib/nginx/modules/ngx_bottle_module.so";
ok(-f $mod && (run_cmd('cmp', $mod, $SO))[0] == 0,
	'the module in /usr/lib/nginx/modules/');
ok(-x "$D/usr/local/bin/bottlectl" && -x "$D/usr/local/bin/gitgate-scan"
	&& -x "$D/usr/local/bin/supervise-helper",
	'bottlectl, gitgate-scan and supervise-helper in /usr/local/bin/');
ok(-x "$D/usr/local/lib/ngx-bottle/gitgate-cgi",
	'gitgate-cgi in /usr/local/lib/ngx-bottle/');

my $snippet = '/usr/share/nginx/modules-available/mod-bottle.conf';
is($t->read_file("$D$snippet"),
	"load_module modules/ngx_bottle_module.so;\n",
	'modules-available/mod-bottle.conf loads it as Debian\'s snippets do');

my $link = '/etc/nginx/modules-enabled/70-mod-bottle.conf';
is(readlink("$D$link"), $snippet, 'modules-enabled/70-mod-bottle.conf '
	. 'links to it');
ok((sort '50-mod-stream.conf', '70-mod-bottle.conf')[0]
	eq '50-mod-stream.conf', 'and sorts after Debian\'s 50-mod-stream.conf');

ok(!(grep { !-f "$D/etc/nginx/bottle/$_" } @CONFS),
	'the config pieces in /etc/nginx/bottle/');
like($t->read_file("$D/etc/nginx/bottle/bottle-http.conf"),
	qr{^\s*include\s+/etc/nginx/bottle/bottle-server\.conf;}m,
	'the pieces include each other by their installed path');
like($t->read_file("$D/etc/nginx/bottle/bottle-resolver.conf"),
	qr/^resolver\s+127\.0\.0\.1:$DNS valid=30s;$/m,
	'bottle-resolver.conf: the resolver make install was given');
ok(-f "$D/usr/local/share/ngx-bottle/install.manifest", 'the manifest');
ok(-f "$D/usr/lib/systemd/system/ngx-bottle-supervise.service"
	&& !-e "$D/lib", 'the units under /usr/lib/systemd/system, nothing in /lib');

# the closing message: every step left to the operator, in order
like($out, qr{systemd-sysusers.*systemd-tmpfiles --create /usr/lib/tmpfiles\.d/ngx-bottle\.conf.*bottle-ca create /etc/ngx-bottle/ca.*include /etc/nginx/bottle/bottle-main\.conf;.*/etc/default/ngx-bottle: BOTTLE_STORE=.*systemctl daemon-reload.*systemctl enable --now ngx-bottle-supervise\.service ngx-bottle-gitgate\.socket.*nginx -t && nginx -s reload}s,
	'make install\'s last lines: every step, /etc/default/ngx-bottle too');

# tmpfiles.d: the run and log directories, made by systemd-tmpfiles

my $TMPF = "$D/usr/lib/tmpfiles.d/ngx-bottle.conf";
SKIP: {
	skip 'no systemd-tmpfiles', 2
		unless `sh -c 'command -v systemd-tmpfiles'`;
	my $root = "$d/tmpfiles-root";
	make_path("$root/etc");
	system("cp /etc/passwd /etc/group $root/etc/") == 0 or die;
	($rc, $out) = run_cmd('systemd-tmpfiles', '--create', "--root=$root",
		$TMPF);
	is($rc, 0, 'systemd-tmpfiles --create on the installed entry')
		or diag($out);
	is(join(' ', map { sprintf('%s:%04o', $_, (stat "$root$_")[2] & 07777) }
		qw{ /run/ngx-bottle /var/log/ngx-bottle }),
		'/run/ngx-bottle:0755 /var/log/ngx-bottle:0755',
		'it makes /run/ngx-bottle and /var/log/ngx-bottle');
}
ok(!(grep { !-f "$D/usr/local/share/ngx-bottle/monitoring/$_" }
	qw/ bottle-alerts.yml bottle-alerts.test.yml bottle-dashboard.json /),
	'the alert rules and the dashboard in share/ngx-bottle/monitoring/');

###############################################################################

# a configuration as docs/install.md has the operator write it, around
# copies of the installed pieces whose paths point into the test directory

make_path("$R/run", "$R/logs", $C);

# nginx's prefix is the test directory: its modules/, as Debian's
# /usr/share/nginx/modules, is the modules directory
symlink("$D/usr/lib/nginx/modules", "$d/modules") or die "symlink: $!";

($rc, $out) = run_cmd("$REPO/scripts/bottle-ca", 'create', "$R/ca");
is($rc, 0, 'scripts/bottle-ca create') or diag($out);

write_policy($t, 'rt/policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [
		{ host => $HOST, port => $UP, internal => JSON::PP::true },
	] },
] });

for my $f (@CONFS) {
	my $s = $t->read_file("$D/etc/nginx/bottle/$f");
	$s =~ s{/etc/nginx/bottle/}{$C/}g;
	$s =~ s{/etc/ngx-bottle/}{$R/}g;
	$s =~ s{/run/ngx-bottle/}{$R/run/}g;
	$s =~ s{/var/log/ngx-bottle/}{$R/logs/}g;
	$s =~ s{127\.0\.0\.1:9099}{127.0.0.1:$FRONT}g;
	$s =~ s{127\.0\.0\.1:9420}{127.0.0.1:@{[ port(8084) ]}}g;
	$t->write_file("bottle/$f", $s);
}

sub conf {
	my ($modules) = @_;
	return <<"EOF";
$modules

pid        $d/nginx.pid;
error_log  $d/error.log info;

include  $C/bottle-main.conf;

events {
}

stream {
    include  $C/bottle-stream.conf;
}

http {
    client_body_temp_path  $d/client_body_temp;
    proxy_temp_path        $d/proxy_temp;
    fastcgi_temp_path      $d/fastcgi_temp;
    uwsgi_temp_path        $d/uwsgi_temp;
    scgi_temp_path         $d/scgi_temp;

    # the operator's log, for every server that sets none
    access_log  $d/access.log;

    # the operator's own server: the defaults, untouched by the pieces
    server {
        listen  127.0.0.1:@{[ port(8081) ]};

        location / {
            return  200 "operator\\n";
        }
    }

    include  $C/bottle-http.conf;
    include  $C/bottle-gitgate.conf;
}
EOF
}

# Debian's 50-mod-stream.conf, then the installed snippet (70-...)
my $STREAM = "load_module /usr/lib/nginx/modules/ngx_stream_module.so;";
my $BOTTLE = "include $D$snippet;";

$t->write_file('nginx.conf', conf("$STREAM\n$BOTTLE"));

($rc, $out) = $t->nginx_t('nginx.conf');
is($rc, 0, 'Debian\'s nginx -t on the installed pieces') or diag($out);
like($out, qr/test is successful/, 'nginx: test is successful');

$t->write_file('reversed.conf', conf("$BOTTLE\n$STREAM"));
($rc, $out) = $t->nginx_t('reversed.conf');
ok($rc != 0 && $out =~ /undefined symbol: ngx_stream_/,
	'the module loaded before the stream module fails (hence 70-)')
	or diag($out);

# and it runs: a request through the installed gateway

$t->run();
ok($t->waitforsocket("127.0.0.1:$FRONT"), 'the front listens');

my $r = `curl -s -i --noproxy '' --max-time 10 -x http://agent:$TOKEN\@127.0.0.1:$FRONT http://$HOST:$UP/through`;
like($r, qr/^HTTP\/1\.1 200 .*upstream api ok/s,
	'an allowed request through the installed gateway');
is((upstream_requests($t, 'api')->[-1] // {})->{target}, '/through',
	'it reached the upstream');
like($r, qr/^Server: nginx\r$/m, 'the gateway\'s servers: server_tokens off');

$r = `curl -s -i --noproxy '' --max-time 10 -x http://agent:wrong-token-0123456789\@127.0.0.1:$FRONT http://$HOST:$UP/x`;
like($r, qr/^HTTP\/1\.1 407 /, 'a wrong token: 407');

# the installed logrotate file, its paths moved as the pieces': the logs
# rotated, nginx told, a new request in a new access.log

my $LR = "$D/etc/logrotate.d/ngx-bottle";
ok(-f $LR, 'the logrotate file in /etc/logrotate.d/');
SKIP: {
	skip 'no logrotate', 3 unless -x '/usr/sbin/logrotate';
	my $lr = $t->read_file($LR);
	$lr =~ s{/var/log/ngx-bottle/}{$R/logs/}g;
	$lr =~ s{/run/nginx\.pid}{$d/nginx.pid}g;
	$t->write_file('logrotate.conf', $lr);
	chmod 0644, "$d/logrotate.conf";
	select undef, undef, undef, 1.5;	# access.log's buffer: flushed once a second
	($rc, $out) = run_cmd('/usr/sbin/logrotate', '-f', '-s',
		"$d/logrotate.state", "$d/logrotate.conf");
	is($rc, 0, 'logrotate on the installed file') or diag($out);
	like($t->read_file("$R/logs/access.log.1"), qr{/through},
		'the access log rotated');
	`curl -s --noproxy '' --max-time 10 -x http://agent:$TOKEN\@127.0.0.1:$FRONT http://$HOST:$UP/after`;
	my $new = '';
	for (1 .. 50) {
		$new = -f "$R/logs/access.log"
			? $t->read_file("$R/logs/access.log") : '';
		last if $new =~ /after/;
		select undef, undef, undef, 0.2;
	}
	like($new, qr{^(?!.*/through).*/after}s,
		'nginx reopened it: the next request in a new access.log');
}

# the operator's server keeps nginx's defaults

$r = `curl -s -i --max-time 10 http://127.0.0.1:@{[ port(8081) ]}/op`;
like($r, qr/^Server: nginx\/[\d.]+\r$/m,
	'the operator\'s server: server_tokens as nginx\'s default');
$t->write_file('big.bin', 'x' x (2 * 1024 * 1024));
$r = `curl -s -i --max-time 10 --data-binary \@$d/big.bin http://127.0.0.1:@{[ port(8081) ]}/big`;
like($r, qr/^HTTP\/1\.1 413 /, 'the operator\'s server: client_max_body_size '
	. 'as nginx\'s default (1m, not the gateway\'s 64m)');

$t->stop();

my $alog = join '', map { -f $_ ? $t->read_file($_) : '' }
	"$R/logs/access.log.1", "$R/logs/access.log";
like($alog,
	qr/"GET $HOST\/through" 200 bottle=alice host=$HOST verdict=allowed /,
	'the gateway\'s access log, its format');
unlike($alog, qr/\/op |\/big /,
	'the operator\'s requests are not in it');
ok(-s "$R/logs/stream.log", 'the front\'s stream log');

my $op_log = $t->read_file('access.log');
like($op_log, qr/"GET \/op HTTP\/1\.1" 200 /,
	'the operator\'s requests in the operator\'s log, its format');
unlike($op_log, qr/through/, 'the gateway\'s are not');

###############################################################################

# uninstall: nothing left

($rc, $out) = make('uninstall');
is($rc, 0, 'make uninstall DESTDIR: exit 0') or diag($out);
is(join(' ', tree()), '', 'uninstall leaves no file and no directory');

# an operator's edited file: kept by install (the new one as .dist) and
# by uninstall

make('install', "RESOLVER=127.0.0.1:$DNS");
my $main = "$D/etc/nginx/bottle/bottle-main.conf";
$t->write_file($main, $t->read_file($main) . "# the operator's\n");
my $res = "$D/etc/nginx/bottle/bottle-resolver.conf";

($rc, $out) = make('install', "RESOLVER=127.0.0.1:$DNS");
is($rc, 0, 'install again over an edited file');
like($out, qr{bottle-main\.conf kept \(yours, changed\): the shipped one is /etc/nginx/bottle/bottle-main\.conf\.dist},
	'it says it kept the edited file');
like($t->read_file($main), qr/# the operator's\n\z/, 'the edit is there');
is($t->read_file("$main.dist"),
	$t->read_file("$REPO/nginx-conf/bottle-main.conf"),
	'the shipped one next to it, as .dist');

# a file the last install wrote and nobody edited is upgraded

($rc, $out) = make('install', 'RESOLVER=127.0.0.1:5353');
like($out, qr{bottle-resolver\.conf \(upgraded\)},
	'an unedited file of the last install: upgraded');
like($t->read_file($res), qr/^resolver\s+127\.0\.0\.1:5353 /m,
	'with the new content');

($rc, $out) = make('uninstall');
is($rc, 0, 'make uninstall');
like($out, qr{kept /etc/nginx/bottle/bottle-main\.conf: changed since it was installed},
	'it says it kept the edited file');
is(join(' ', grep { !-d "$D$_" } tree()), '/etc/nginx/bottle/bottle-main.conf',
	'the edited file is all that is left');

($rc, $out) = make('uninstall');
isnt($rc, 0, 'uninstall with nothing installed: refused');

###############################################################################
