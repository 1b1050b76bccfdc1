#!/usr/bin/perl

# Rotating the gateway CA, end to end, as docs/ca.md tells an operator to:
# scripts/bottle-ca create, rotate and retire, with nginx reloaded on the
# bottle_ca each step prints.  Real TLS through the gateway (CONNECT, then
# curl and IO::Socket::SSL): before the rotation a client trusting the CA
# verifies minted leaves; during the overlap a client trusting only the old
# CA and one trusting only the new CA both do, the chain served being
# leaf -> new CA (cross-signed by the old) -> old CA; after retirement the
# old-only client fails and the new-only client passes.

###############################################################################

use warnings;
use strict;

use Test::More;
use File::Copy qw/ copy /;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl bottle/)
	->has(qw/dnsmasq openssl socket_ssl_sni/)->has_daemon('curl');

$t->write_file_expand('nginx.conf', <<'EOF');

%%TEST_GLOBALS%%

daemon off;

bottle_policy %%TESTDIR%%/policy.json;

events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:8080;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        bottle_tls_pass unix:%%TESTDIR%%/tls.sock;
        proxy_pass $bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;
    resolver_timeout 3s;

    upstream bottle_tls {
        bottle_upstream;
    }

    # the front needs both internal listeners; no test uses this one
    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            return 404;
        }
    }

    server {
        listen unix:%%TESTDIR%%/tls.sock ssl proxy_protocol;
        bottle on;

        # the line bottle-ca prints, rewritten at every step
        include %%TESTDIR%%/ca.conf;

        location / {
            proxy_pass https://bottle_tls$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_ssl_server_name on;
            proxy_ssl_name $bottle_host;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate %%TESTDIR%%/upca.crt;
        }
    }
}

EOF

my $d = $t->testdir();
my $CA = "$d/ca";
my $BOTTLE_CA = '../scripts/bottle-ca';
my $TOKEN = 'rotate-token-0123456789';
my $HOST = 'api.rotate.test';

# bottle-ca: its output, and whether it succeeded
sub bottle_ca {
	my @args = @_;
	my $out = `$BOTTLE_CA @args 2>&1`;
	return ($out, $? == 0);
}

# the configuration a step printed, as the operator pastes it
sub use_printed {
	my ($out) = @_;
	my ($line) = $out =~ /^\s*(bottle_ca [^\n]*;)$/m;
	die "no bottle_ca line in:\n$out" unless defined $line;
	$t->write_file('ca.conf', "$line\n");
	return $line;
}

my ($out, $ok) = bottle_ca('create', $CA, '--name', "'rotate test CA'");
die "bottle-ca create: $out" unless $ok;
$t->write_file('ca.conf', "bottle_ca $CA/ca.crt $CA/ca.key;\n");

# the old CA, as the clients that loaded it keep it
copy("$CA/ca.crt", "$d/trust-old.pem") or die "copy: $!";

my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', $HOST);

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [
		{ host => $HOST, port => port(8443), internal => JSON::PP::true },
	] },
] });

dns_start($t, port => port(8053), hosts => { $HOST => '127.0.0.1' });
fake_upstream($t, port => 8443, name => 'api', tls => 1,
	cert => $up->{cert}, key => $up->{key});

$t->run()->plan(27);

###############################################################################

my $URL = "https://$HOST:" . port(8443);
my $PROXY = "http://agent:$TOKEN\@127.0.0.1:" . port(8080);

# curl through the gateway trusting only $trust: its exit code and output
sub curl {
	my ($trust, $path) = @_;
	open my $fh, '-|', 'curl', '-s', '-i', '--max-time', '10',
		'--proxy', $PROXY, '--cacert', $trust, "$URL$path"
		or die "curl: $!";
	local $/;
	my $r = <$fh> // '';
	close $fh;
	return ($? >> 8, $r);
}

# a raw tunnel and IO::Socket::SSL verifying against $trust only
sub ssl_verifies {
	my ($trust) = @_;
	my $s = proxy_session(8080);
	$s->send("CONNECT $HOST:" . port(8443) . " HTTP/1.1\r\n"
		. "Host: $HOST:" . port(8443) . "\r\n"
		. 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n\r\n");
	return 0 unless $s->read_response() =~ /^HTTP\/1\.1 200 /;
	my $v = $s->start_ssl(SSL_hostname => $HOST,
		SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_PEER(),
		SSL_ca_file => $trust, SSL_verifycn_name => $HOST,
		SSL_verifycn_scheme => 'http') ? 1 : 0;
	$s->close();
	return $v;
}

# the certificates served: [ subject CN, issuer CN ] each, leaf first
sub served_chain {
	my $port = port(8443);
	my $proxy = port(8080);
	my $r = `openssl s_client -connect $HOST:$port -proxy 127.0.0.1:$proxy -proxy_user agent -proxy_pass pass:$TOKEN -servername $HOST -showcerts </dev/null 2>&1`;
	my @chain;
	while ($r =~ /^\s*\d+ s:(.*)\n\s*i:(.*)\n/mg) {
		my ($s, $i) = ($1, $2);
		push @chain, [ map { /CN\s*=\s*([^,\/]*)/ ? $1 : $_ } $s, $i ];
	}
	return \@chain;
}

sub step {
	my ($name) = @_;
	$t->reload() or die "reload ($name) failed\n";
}

# before: the one CA

my ($rc, $r) = curl("$d/trust-old.pem", '/before');
ok($rc == 0 && $r =~ /^HTTP\/1\.1 200 .*upstream api ok/ms,
	'before rotation: a client trusting the CA gets through');

# rotate: the new CA, cross-signed, and the chain

($out, $ok) = bottle_ca('rotate', $CA);
ok($ok, 'bottle-ca rotate');
like($out, qr/^rotated: 'rotate test CA' -> 'rotate test CA \d{4}-\d\d-\d\d'$/m,
	'the new CA is the old name, dated');
is(use_printed($out),
	"bottle_ca $CA/ca-new.crt $CA/ca-new.key $CA/chain.pem;",
	'it prints the new key with the chain');
copy("$CA/ca-new.crt", "$d/trust-new.pem") or die "copy: $!";

($rc, $r) = curl("$d/trust-new.pem", '/early');
isnt($rc, 0, 'before the reload a new-only client cannot verify (hence '
	. 'the order of the runbook)');

step('overlap');

my $chain = served_chain();
my ($new_cn) = $out =~ /-> '([^']*)'/;
is_deeply($chain, [ [ $HOST, $new_cn ], [ $new_cn, 'rotate test CA' ],
	[ 'rotate test CA', 'rotate test CA' ] ],
	'served: leaf -> new CA (issued by the old) -> old CA');

($rc, $r) = curl("$d/trust-old.pem", '/overlap-old');
is($rc, 0, 'overlap: curl trusting only the old CA verifies');
like($r, qr/^HTTP\/1\.1 200 .*upstream api ok/ms, 'and gets through');
($rc, $r) = curl("$d/trust-new.pem", '/overlap-new');
is($rc, 0, 'overlap: curl trusting only the new CA verifies');
like($r, qr/^HTTP\/1\.1 200 .*upstream api ok/ms, 'and gets through');

ok(ssl_verifies("$d/trust-old.pem"),
	'overlap: IO::Socket::SSL trusting only the old CA verifies');
ok(ssl_verifies("$d/trust-new.pem"),
	'overlap: IO::Socket::SSL trusting only the new CA verifies');

# the checks docs/ca.md gives before the switch, on a leaf it minted

my $pem = `openssl s_client -connect $HOST:@{[ port(8443) ]} -proxy 127.0.0.1:@{[ port(8080) ]} -proxy_user agent -proxy_pass pass:$TOKEN -servername $HOST </dev/null 2>/dev/null`;
($pem) = $pem =~ /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n)/s;
$t->write_file('leaf.crt', $pem // '');
like(`openssl verify -CAfile $CA/ca.crt -untrusted $CA/ca-new-cross.crt $d/leaf.crt 2>&1`,
	qr/leaf\.crt: OK/, 'runbook check: the leaf verifies to the old CA');
like(`openssl verify -CAfile $CA/ca-new.crt $d/leaf.crt 2>&1`,
	qr/leaf\.crt: OK/, 'runbook check: the leaf verifies to the new CA');

# rotate again during the overlap: the same rotation, nothing overwritten

($out, $ok) = bottle_ca('rotate', $CA);
ok($ok && $out =~ /^rotation exists: /m, 'a second rotate changes nothing');

# retire: the new CA becomes ca.crt, no chain

($out, $ok) = bottle_ca('retire', $CA);
ok($ok, 'bottle-ca retire');
is(use_printed($out), "bottle_ca $CA/ca.crt $CA/ca.key;",
	'it prints the new CA without a chain');
my ($retired) = $out =~ /\(now in ([^)]*)\)/;
ok($retired && -e "$retired/ca.key" && -e "$retired/chain.pem"
	&& !-e "$CA/ca-new.key" && !-e "$CA/chain.pem",
	'the old CA and the chain moved aside, nothing deleted');
is(`cmp $CA/ca.crt $d/trust-new.pem 2>&1`, '', 'ca.crt is the new CA');

step('retired');

is_deeply(served_chain(), [ [ $HOST, $new_cn ], [ $new_cn, $new_cn ] ],
	'served: leaf -> new CA alone');

($rc, $r) = curl("$d/trust-old.pem", '/after-old');
is($rc, 60, 'after retirement: curl trusting only the old CA fails to '
	. 'verify');
unlike($r, qr/upstream api ok/, 'and nothing came back');
ok(!ssl_verifies("$d/trust-old.pem"),
	'after retirement: IO::Socket::SSL trusting only the old CA fails');

($rc, $r) = curl("$d/trust-new.pem", '/after-new');
ok($rc == 0 && $r =~ /^HTTP\/1\.1 200 .*upstream api ok/ms,
	'after retirement: curl trusting only the new CA gets through');
ok(ssl_verifies("$d/trust-new.pem"),
	'after retirement: IO::Socket::SSL trusting only the new CA verifies');

my @seen = map { $_->{target} } @{upstream_requests($t, 'api')};
is_deeply([ grep { !/^\/(before|overlap-|after-new)/ } @seen ], [],
	'no request a client could not verify reached the upstream');

# a retire with no rotation under way refuses

($out, $ok) = bottle_ca('retire', $CA);
ok(!$ok && $out =~ /no rotation to end/, 'retire without a rotation: '
	. 'refused');

###############################################################################
