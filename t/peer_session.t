#!/usr/bin/perl

# Upstream TLS session resumption of bottle_upstream: a second nginx is the
# upstream (TLS 1.2 with a shared session cache and no tickets on one port,
# TLS 1.3 with tickets on another) and logs $ssl_session_reused; it closes
# every connection after its response, so each request through the gateway
# dials anew.  A new connection resumes the session of its target, never
# that of another name at the same address; proxy_ssl_session_reuse off
# resumes nothing; a handshake that fails on the offered session is tried
# once more, in full, and the session is dropped; beyond sessions=N targets
# the least recently used loses its session.

###############################################################################

use warnings;
use strict;

use Test::More;
use IO::Select;
use IO::Socket::INET;
use POSIX ();

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl bottle/)
	->has(qw/dnsmasq openssl/)->has_daemon('curl');

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

    upstream bottle_plain {
        bottle_upstream;
    }

    upstream bottle_tls {
        bottle_upstream sessions=4;
    }

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://bottle_plain$bottle_uri;
        }
    }

    server {
        listen unix:%%TESTDIR%%/tls.sock ssl proxy_protocol;
        bottle on;
        bottle_ca %%TESTDIR%%/gwca.crt %%TESTDIR%%/gwca.key;

        proxy_set_header Host $bottle_host_header;
        proxy_http_version 1.1;
        proxy_set_header Connection $bottle_connection;
        # nginx 1.22 speaks at most TLS 1.2 to upstreams by default
        proxy_ssl_protocols TLSv1.2 TLSv1.3;
        proxy_ssl_server_name on;
        proxy_ssl_name $bottle_host;
        proxy_ssl_verify on;
        proxy_ssl_trusted_certificate %%TESTDIR%%/upca.crt;

        location / {
            proxy_pass https://bottle_tls$bottle_uri;
            error_page 502 504 = @failed;
        }

        # trusts another CA than the upstream's: never gets a connection
        # that / verified and kept alive
        location /otherca/ {
            proxy_pass https://bottle_tls$bottle_uri;
            proxy_ssl_trusted_certificate %%TESTDIR%%/gwca.crt;
            error_page 502 504 = @failed;
        }

        location /noreuse/ {
            proxy_pass https://bottle_tls$bottle_uri;
            proxy_ssl_session_reuse off;
            error_page 502 504 = @failed;
        }

        location @failed {
            bottle_upstream_failed;
        }
    }
}

EOF

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'a.test', 'b.test', 'd.test');

# the upstream: another nginx, its own prefix, no module

my $d = $t->testdir();
mkdir "$d/up";
mkdir "$d/up/logs";

$t->write_file_expand('up/nginx.conf', <<"EOF");

daemon off;
pid $d/up/nginx.pid;
error_log $d/up/error.log info;

events {
}

http {
    access_log off;
    client_body_temp_path $d/up;
    proxy_temp_path $d/up;
    fastcgi_temp_path $d/up;
    uwsgi_temp_path $d/up;
    scgi_temp_path $d/up;

    log_format reused '\$server_port \$ssl_server_name \$ssl_protocol '
                      '\$ssl_session_reused \$request_uri';

    keepalive_timeout 0;

    ssl_certificate $up->{cert};
    ssl_certificate_key $up->{key};
    ssl_session_cache shared:up:1m;

    server {
        listen 127.0.0.1:%%PORT_8443%% ssl;
        ssl_protocols TLSv1.2;
        ssl_session_tickets off;
        access_log $d/up/access.log reused;
        return 200 "up ok\\n";
    }

    server {
        listen 127.0.0.1:%%PORT_8444%% ssl;
        ssl_protocols TLSv1.3;
        access_log $d/up/access.log reused;
        return 200 "up ok\\n";
    }

    # keeps connections alive: which one each request came on
    log_format conn '\$connection \$connection_requests \$request_uri';

    server {
        listen 127.0.0.1:%%PORT_8446%% ssl;
        keepalive_timeout 60s;
        access_log $d/up/conn.log conn;
        return 200 "up ok\\n";
    }
}

EOF

my $T = JSON::PP::true;
my $TOKEN = 'alice-token-0123456789';

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, routes => [
		map { { host => $_, ports => [ map { port($_) } 8443, 8444, 8445, 8446 ],
			internal => $T } } qw/a.test b.test d.test/
	] },
] });

dns_start($t, port => port(8053),
	hosts => { map { ($_ => '127.0.0.1') } qw/a.test b.test d.test/ });

$t->run_daemon($Test::Nginx::NGINX, '-p', "$d/up/", '-c', "$d/up/nginx.conf",
	'-e', "$d/up/error.log");
$t->waitforsocket('127.0.0.1:' . port(8443))
	or die "no upstream nginx on " . port(8443) . "\n";
$t->waitforsocket('127.0.0.1:' . port(8444))
	or die "no upstream nginx on " . port(8444) . "\n";

# in front of the TLS 1.3 port: a server that fails every handshake
# offering a session (a ClientHello with a pre_shared_key extension)

$t->run_daemon(\&psk_killer, port(8445), port(8444), "$d/killed.log");
$t->waitforsocket('127.0.0.1:' . port(8445))
	or die "no proxy on " . port(8445) . "\n";

$t->run()->plan(24);

###############################################################################

my $PROXY = 'http://agent:' . $TOKEN . '@127.0.0.1:' . port(8080);
my $answered = 0;

sub get {
	my ($host, $port, $path) = @_;
	open my $fh, '-|', 'curl', '-s', '-S', '-i', '--max-time', '10',
		'--http1.1', '--proxy', $PROXY, '--cacert', $gwca->{cert},
		"https://$host:" . port($port) . $path
		or die "curl: $!";
	local $/;
	my $out = <$fh>;
	close $fh;
	$answered++ if defined $out && $out =~ /up ok/;
	return $out // '';
}

# "host/path=." (full handshake) or "=r" (resumed): the upstream's log
# lines of one port, in order, once it logged every request answered

sub reused {
	my ($port) = @_;
	my $log = '';

	for (1 .. 50) {
		$log = -e "$d/up/access.log"
			? $t->read_file("$d/up/access.log") : '';
		last if (() = $log =~ /\n/g) >= $answered;
		select undef, undef, undef, 0.05;
	}

	return join ' ', map { /^\d+ (\S+) \S+ (\S+) (\S+)$/ ? "$1$3=$2" : $_ }
		grep { /^\Q@{[ port($port) ]}\E / } split /\n/, $log;
}

for my $p ([ 8443, 'TLSv1.2' ], [ 8444, 'TLSv1.3' ]) {
	my ($port, $proto) = @$p;
	my @r;

	push @r, get('a.test', $port, "/$_") for 1 .. 3;
	push @r, get('b.test', $port, "/$_") for 1 .. 2;
	push @r, get('a.test', $port, '/4');

	is(scalar(grep { /^HTTP\/1\.1 200 .*up ok/s } @r), 6,
		"$proto: all answered");

	is(reused($port), 'a.test/1=. a.test/2=r a.test/3=r '
		. 'b.test/1=. b.test/2=r a.test/4=r',
		"$proto: full handshake first, then resumed; another name at "
		. 'the same address resumes its own session only');

	like($t->read_file("$d/up/access.log"),
		qr/^\Q@{[ port($port) ]}\E a\.test \Q$proto\E /m,
		"$proto: the upstream spoke $proto");
}

# proxy_ssl_session_reuse off: nothing offered, nothing saved

for my $p ([ 8443, 'TLSv1.2' ], [ 8444, 'TLSv1.3' ]) {
	my ($port, $proto) = @$p;
	my @r = map { get('a.test', $port, "/noreuse/$_") } 1 .. 3;

	is(scalar(grep { /^HTTP\/1\.1 200 /s } @r), 3,
		"$proto, session reuse off: all answered");
	my ($off) = reused($port) =~ /(a\.test\/noreuse\/.*)$/;
	is($off, 'a.test/noreuse/1=. a.test/noreuse/2=. a.test/noreuse/3=.',
		"$proto, session reuse off: a full handshake each time");
}

# and the location with reuse still resumes afterwards

like(get('a.test', 8443, '/5'), qr/^HTTP\/1\.1 200 /, 'TLS 1.2 again');
like(reused(8443), qr/ a\.test\/5=r$/, 'TLS 1.2 again: resumed');

# a server failing the handshake on an offered session: the session goes,
# and the request is tried again with a full handshake

my @r = map { get('d.test', 8445, "/fail$_") } 1 .. 3;

is(scalar(grep { /^HTTP\/1\.1 200 .*up ok/s } @r), 3,
	'handshake failing on the offered session: tried again, answered');
is(reused(8444) =~ s/^.*?(?=d\.test)//r,
	'd.test/fail1=. d.test/fail2=. d.test/fail3=.',
	'the tries again: full handshakes');
is(killed(), 2, 'each offered session refused once, then not offered');

# at most "sessions" targets: the fifth, d.test, took the place of the
# least recently used one, b.test on the TLS 1.2 port

get('b.test', 8443, '/6');
get('a.test', 8443, '/6');
like(reused(8443), qr/ b\.test\/6=\. a\.test\/6=r$/,
	'sessions=4: the least recently used target lost its session');

my $log = $t->read_file('error.log');
is(() = $log =~ /handshake resuming a session with "d\.test" failed/g, 2,
	'the failed resumption logged');
unlike($log, qr/\[error\].*"[ab]\.test/,
	'no errors for the resuming targets');

# a kept-alive connection serves the location that verified it, not one
# with other proxy_ssl_* settings (here: trusting another CA)

my $mark = length($log);

like(get('a.test', 8446, '/ka1'), qr/^HTTP\/1\.1 200 .*up ok/s, 'keepalive: 200');
like(get('a.test', 8446, '/ka2'), qr/^HTTP\/1\.1 200 .*up ok/s,
	'keepalive: 200 again');

my $r = get('a.test', 8446, '/otherca/1');
like($r, qr/^HTTP\/1\.1 502 .*^X-Bottle-Rule: upstream\r$/ms,
	'another SSL context: the kept-alive connection not reused, refused');
like(substr($t->read_file('error.log'), $mark),
	qr/upstream SSL certificate verify error/,
	'another SSL context: its own handshake, which fails verification');

like(get('a.test', 8446, '/ka3'), qr/^HTTP\/1\.1 200 /, 'keepalive: 200 once more');
is(conn_log(), 'A 1 /ka1, A 2 /ka2, A 3 /ka3',
	'keepalive: one upstream connection for the location that verified it');

###############################################################################

# the upstream's conn.log: connections named A, B, ... in order of appearance

sub conn_log {
	my %name;
	my $next = 'A';
	my $log = '';

	for (1 .. 50) {
		$log = -e "$d/up/conn.log" ? $t->read_file("$d/up/conn.log") : '';
		last if (() = $log =~ /\n/g) >= 3;
		select undef, undef, undef, 0.05;
	}

	return join ', ', map {
		my ($c, $n, $uri) = split / /;
		($name{$c} //= $next++) . " $n $uri";
	} split /\n/, $log;
}

sub killed {
	return 0 unless -e "$d/killed.log";
	return () = $t->read_file("$d/killed.log") =~ /^psk$/mg;
}

# a ClientHello (one whole record): does it carry extension 41?

sub offers_psk {
	my ($rec) = @_;
	my $p = 5 + 4 + 2 + 32;

	return 0 if length($rec) < $p + 1;
	$p += 1 + ord(substr($rec, $p, 1));
	$p += 2 + unpack('n', substr($rec, $p, 2));
	$p += 1 + ord(substr($rec, $p, 1));
	my $end = $p + 2 + unpack('n', substr($rec, $p, 2));
	$p += 2;

	while ($p + 4 <= $end && $p + 4 <= length($rec)) {
		my ($type, $len) = unpack('nn', substr($rec, $p, 4));
		return 1 if $type == 41;
		$p += 4 + $len;
	}

	return 0;
}

sub psk_killer {
	my ($port, $to, $logfile) = @_;

	$SIG{CHLD} = 'IGNORE';

	my $l = IO::Socket::INET->new(LocalAddr => "127.0.0.1:$port",
		Listen => 16, ReuseAddr => 1) or die "listen $port: $!\n";

	while (my $c = $l->accept()) {
		my $pid = fork();
		die "fork: $!\n" unless defined $pid;

		if ($pid) {
			close $c;
			next;
		}

		close $l;

		my $buf = '';
		while (length($buf) < 5
			|| length($buf) < 5 + unpack('n', substr($buf, 3, 2)))
		{
			$c->sysread($buf, 16384, length($buf)) or POSIX::_exit(0);
		}

		if (offers_psk($buf)) {
			open my $fh, '>>', $logfile;
			syswrite $fh, "psk\n";
			close $fh;
			POSIX::_exit(0);
		}

		my $u = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$to")
			or POSIX::_exit(0);
		$u->syswrite($buf);

		my $s = IO::Select->new($c, $u);
		LOOP: while (1) {
			for my $h ($s->can_read(10)) {
				my $n = $h->sysread(my $data, 16384);
				last LOOP unless $n;
				($h == $c ? $u : $c)->syswrite($data);
			}
		}

		POSIX::_exit(0);
	}
}

###############################################################################
