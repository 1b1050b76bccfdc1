package Test::Bottle;

# ngx_bottle test helpers on top of Test::Nginx: recording fake
# upstreams, a local DNS server (dnsmasq), test certificates, policy
# files, a real git forge (Test::Bottle::Forge).  See docs/testing.md.

use warnings;
use strict;

use base qw/ Exporter /;

our @EXPORT = qw/
	fake_upstream upstream_requests upstream_events upstream_connects
	header_value header_count
	dns_start dns_update dns_queries dns_lookup
	gen_ca gen_cert
	basic write_policy read_jsonl
	redis_start redis_stop redis_cli journal_events
	store_put store_rm store_raw
	forge_start forge_repo forge_refs forge_log forge_connections
	forge_status forge_config run_git
	gitgate_cgi gitgate_fastcgi gitgate_fcgiwrap gitgate_tail
	ctl_run
/;
our @EXPORT_OK = @EXPORT;

use File::Basename qw/ basename /;
use IO::Select;
use IO::Socket::INET;
use Digest::SHA qw//;
use JSON::PP qw//;
use MIME::Base64 qw/ encode_base64 decode_base64 /;
use POSIX qw/ WNOHANG /;
use Socket qw/ AF_INET6 inet_ntop /;
use Time::HiRes qw/ time sleep /;

use Test::Nginx qw//;
use Test::Bottle::Upstream;
use Test::Bottle::Forge;

our $DNSMASQ = $ENV{TEST_DNSMASQ_BINARY} // '/usr/sbin/dnsmasq';
our $OPENSSL = $ENV{TEST_OPENSSL_BINARY} // 'openssl';
our $REDIS = $ENV{TEST_REDIS_BINARY} // '/usr/bin/redis-server';
our $REDIS_CLI = $ENV{TEST_REDIS_CLI} // '/usr/bin/redis-cli';

my $PROBE = 'bottle-harness-probe.invalid';

###############################################################################
# fake upstreams

# fake_upstream($t, port => P, name => 'api', addr => '127.0.0.1',
#               tls => 0|1, cert => path, key => path, alpn => [...])
# P is a port number as given by port() (a logical number also works).
# Returns { name, addr, port, log, pid }.

sub fake_upstream {
	my ($t, %o) = @_;
	$o{port} = Test::Nginx::port($o{port}) if defined $o{port};
	return Test::Bottle::Upstream::start($t, %o);
}

sub read_jsonl {
	my ($t, $name) = @_;
	my $path = $name =~ m!^/! ? $name : $t->testdir() . "/$name";

	open my $fh, '<', $path or return [];
	binmode $fh;
	my $json = JSON::PP->new->utf8;

	my @r;
	while (my $line = <$fh>) {
		next unless $line =~ /\n\z/;	# a line still being written
		next unless $line =~ /\S/;
		push @r, $json->decode($line);
	}
	return \@r;
}

# Every record (connect events, requests, bad_request ...) in order.

sub upstream_events {
	my ($t, $name) = @_;
	return read_jsonl($t, "upstream-$name.jsonl");
}

# The requests the upstream got, in order; each with "body" decoded.

sub upstream_requests {
	my ($t, $name) = @_;
	my @r;
	for my $e (@{upstream_events($t, $name)}) {
		next if defined $e->{event};
		$e->{body} = decode_base64($e->{body_b64} // '');
		push @r, $e;
	}
	return \@r;
}

sub upstream_connects {
	my ($t, $name) = @_;
	return scalar grep { ($_->{event} // '') eq 'connect' }
		@{upstream_events($t, $name)};
}

# header_value($req, $name): the value (first one in scalar context, all
# of them in list context), case-insensitive name; undef if absent.

sub header_value {
	my ($req, $name) = @_;
	my @v = map { $_->[1] } grep { lc($_->[0]) eq lc($name) }
		@{$req->{headers} || []};
	return wantarray ? @v : $v[0];
}

sub header_count {
	my ($req, $name) = @_;
	return scalar grep { lc($_->[0]) eq lc($name) }
		@{$req->{headers} || []};
}

###############################################################################
# DNS: dnsmasq answering from a hosts file only

sub _write_hosts {
	my ($path, $hosts) = @_;
	my $s = '';
	for my $name (sort keys %$hosts) {
		my $a = $hosts->{$name};
		$s .= "$_ $name\n" for ref $a ? @$a : ($a);
	}
	open my $fh, '>', $path or die "Can't write $path: $!\n";
	print $fh $s;
	close $fh;
}

# dns_start($t, port => P, hosts => { name => addr | [addr, ...] },
#           ttl => seconds)
# dnsmasq on 127.0.0.1:P (UDP and TCP): names from hosts are answered,
# every other name gets NXDOMAIN (a name with only IPv6 addresses gets an
# empty answer for A, and so on); nothing is forwarded anywhere.  Queries
# are logged to <testdir>/dnsmasq.log.  Returns when it answers.

sub dns_start {
	my ($t, %o) = @_;

	die "dns_start: port required\n" unless defined $o{port};
	my $port = Test::Nginx::port($o{port}, udp => 1);

	# another program took the port since port() handed it out: a new
	# one (and the configs written again), while nginx does not run yet
	for (my $try = 1; ; $try++) {
		my $err = _dns_start($t, $port, %o);
		return $t unless defined $err;

		my $new;
		$new = Test::Nginx::renew_port($port)
			if $err =~ /Address already in use/ && $try < 4
			&& !$t->{_started};
		die $err unless defined $new;

		$port = $new;
	}
}

sub _dns_start {
	my ($t, $port, %o) = @_;
	my $d = $t->testdir();
	my $hostsfile = "$d/dns-hosts";

	die "dns_start: no $DNSMASQ\n" unless -x $DNSMASQ;

	_write_hosts($hostsfile, $o{hosts} || {});

	my @cmd = ($DNSMASQ,
		'--keep-in-foreground',
		'--conf-file=/dev/null',
		'--no-resolv', '--no-hosts', '--no-poll',
		'--local=/#/',			# never forward: NXDOMAIN
		'--bind-interfaces', '--listen-address=127.0.0.1',
		"--port=$port",
		"--addn-hosts=$hostsfile",
		'--local-ttl=' . ($o{ttl} // 0),
		'--log-queries', "--log-facility=$d/dnsmasq.log",
		"--pid-file=$d/dnsmasq.pid",
	);

	# as root dnsmasq would switch to "nobody", which cannot read the
	# hosts file in the test directory (and then answers NXDOMAIN to
	# everything); as anybody else it stays who it is
	push @cmd, '--user=root' if $> == 0;

	my $stderr = "$d/dnsmasq.stderr";
	unlink $stderr;
	my $logged = length _dns_log($t);

	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', $stderr;
		open STDERR, '>&', \*STDOUT;
		exec(@cmd) or die "exec $DNSMASQ: $!\n";
	});

	my $pid = $t->last_daemon_pid();
	$t->{_bottle_dns} = { pid => $pid, port => $port,
		hosts => $hostsfile };

	my $deadline = time() + 10;
	while (time() < $deadline) {
		# an answer counts once our dnsmasq logged the query: another
		# server on the port must not pass for it
		if (dns_lookup($port, $PROBE, 'A', timeout => 0.2)
			&& substr(_dns_log($t), $logged)
				=~ /query\[A\] \Q$PROBE\E from /)
		{
			# it answers even when it could not read the names
			my $log = _dns_log($t);
			die "dnsmasq: $1\n"
				if $log =~ /(failed to load names.*)/;
			return undef;
		}
		if (waitpid($pid, WNOHANG) != 0) {
			my $err = -e $stderr ? $t->read_file('dnsmasq.stderr') : '';
			return "dnsmasq exited: $err\n";
		}
		sleep 0.05;
	}

	die "dnsmasq does not answer on 127.0.0.1:$port\n";
}

# dns_update($t, hosts => {...}): new names/addresses, dnsmasq re-reads
# them (SIGHUP).  Returns when the new data is answered.

sub dns_update {
	my ($t, %o) = @_;
	my $dns = $t->{_bottle_dns} or die "dns_update: no dns_start\n";

	my $count = () = _dns_log($t) =~ /read \Q$dns->{hosts}\E/g;

	_write_hosts($dns->{hosts}, $o{hosts} || {});
	kill 'HUP', $dns->{pid};

	my $deadline = time() + 5;
	while (time() < $deadline) {
		my $n = () = _dns_log($t) =~ /read \Q$dns->{hosts}\E/g;
		return $t if $n > $count;
		sleep 0.02;
	}
	die "dnsmasq did not re-read its hosts\n";
}

sub _dns_log {
	my ($t) = @_;
	my $f = $t->testdir() . '/dnsmasq.log';
	return '' unless -e $f;
	return $t->read_file('dnsmasq.log');
}

# dns_queries($t): the names asked for, in order (the harness's own
# readiness probe left out).  dns_queries($t, types => 1): "A name",
# "AAAA name", ...

sub dns_queries {
	my ($t, %o) = @_;
	my @q;
	for my $line (split /\n/, _dns_log($t)) {
		next unless $line =~ /\bquery\[(\w+)\] (\S+) from /;
		next if $2 eq $PROBE;
		push @q, $o{types} ? "$1 $2" : $2;
	}
	return @q;
}

my %qtype = (A => 1, NS => 2, CNAME => 5, SOA => 6, PTR => 12, MX => 15,
	TXT => 16, AAAA => 28, SRV => 33, HTTPS => 65, ANY => 255);
my %rcode = (0 => 'NOERROR', 1 => 'FORMERR', 2 => 'SERVFAIL',
	3 => 'NXDOMAIN', 4 => 'NOTIMP', 5 => 'REFUSED');

# dns_lookup($port, $name, $type = 'A', timeout => s, server => ip):
# one query over UDP.  Returns undef on timeout, else
# { rcode => 3, rcode_name => 'NXDOMAIN', answers => ['127.0.0.1', ...],
#   ttls => [...] } (answers: addresses for A/AAAA, raw rdata otherwise).

sub dns_lookup {
	my ($port, $name, $type, %o) = @_;

	my ($id, $q) = dns_packet($name, $type);

	my $server = $o{server} // '127.0.0.1';
	my $s = IO::Socket::INET->new(Proto => 'udp',
		PeerAddr => "$server:" . Test::Nginx::port($port))
		or die "udp socket: $!\n";
	$s->send($q);

	my $deadline = time() + ($o{timeout} // 2);
	my $r;
	while (time() < $deadline) {
		IO::Select->new($s)->can_read($deadline - time()) or next;
		my $buf;
		if (!defined $s->recv($buf, 4096)) {
			# ICMP port unreachable: nobody there yet
			sleep 0.02;
			$s->send($q);
			next;
		}
		if (length($buf) >= 12 && unpack('n', $buf) == $id) {
			$r = $buf;
			last;
		}
	}
	return undef unless defined $r;

	return dns_parse($r);
}

# dns_packet($name, $type = 'A'): ($id, $query) of one recursive query;
# dns_parse($reply): { rcode, rcode_name, answers, ttls, types }.  Shared
# with t/e2e, which sends its queries from inside network namespaces.

sub dns_packet {
	my ($name, $type) = @_;
	$type //= 'A';
	my $qt = $type =~ /^\d+$/ ? $type : $qtype{uc $type}
		// die "unknown query type $type\n";

	my $id = int(rand(65536));
	my $q = pack('nnnnnn', $id, 0x0100, 1, 0, 0, 0);
	for my $label (split /\./, $name) {
		$q .= pack('C', length $label) . $label;
	}
	$q .= pack('Cnn', 0, $qt, 1);

	return ($id, $q);
}

sub dns_parse {
	my ($r) = @_;
	my ($rid, $flags, $qd, $an) = unpack('nnnn', $r);
	my $res = { rcode => $flags & 0xf, answers => [], ttls => [],
		types => [] };
	$res->{rcode_name} = $rcode{$res->{rcode}} // $res->{rcode};

	my $pos = 12;
	for (1 .. $qd) {
		$pos = _skip_name($r, $pos);
		$pos += 4;
	}
	for (1 .. $an) {
		$pos = _skip_name($r, $pos);
		last if $pos + 10 > length $r;
		my ($t, $c, $ttl, $len) = unpack('nnNn', substr($r, $pos, 10));
		$pos += 10;
		my $rdata = substr($r, $pos, $len);
		$pos += $len;
		my $v = $t == 1 && $len == 4 ? join('.', unpack('C4', $rdata))
			: $t == 28 && $len == 16 ? inet_ntop(AF_INET6, $rdata)
			: $rdata;
		push @{$res->{answers}}, $v;
		push @{$res->{ttls}}, $ttl;
		push @{$res->{types}}, $t;
	}

	return $res;
}

sub _skip_name {
	my ($r, $pos) = @_;
	while ($pos < length $r) {
		my $l = unpack('C', substr($r, $pos, 1));
		return $pos + 2 if ($l & 0xc0) == 0xc0;
		return $pos + 1 if $l == 0;
		$pos += $l + 1;
	}
	return $pos;
}

###############################################################################
# certificates (openssl CLI, EC P-256 keys)

sub _openssl {
	my ($t, @args) = @_;
	my $log = $t->testdir() . '/openssl.log';

	my $pid = fork();
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', $log;
		open STDERR, '>&', \*STDOUT;
		exec($OPENSSL, @args) or POSIX::_exit(127);
	}
	waitpid($pid, 0);
	die "openssl @args failed:\n" . $t->read_file('openssl.log') . "\n"
		if $?;
}

# an openssl config: [req] for non-interactive requests, [v3_ca], and
# [v3_leaf] when a subjectAltName is given

sub _openssl_conf {
	my ($t, $file, $san) = @_;

	my $c = <<'EOF';
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = unused
[ v3_ca ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
EOF

	$c .= <<"EOF" if defined $san;
[ v3_leaf ]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = $san
EOF

	$t->write_file($file, $c);
	return $t->testdir() . "/$file";
}

# gen_ca($t, $name): a CA in <testdir>/<name>.crt, .key.
# Returns { name, cert, key }.

sub gen_ca {
	my ($t, $name) = @_;
	my $d = $t->testdir();
	my $conf = _openssl_conf($t, "$name.cnf");

	_openssl($t, 'req', '-x509', '-new', '-nodes',
		'-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
		'-config', $conf, '-extensions', 'v3_ca',
		'-subj', "/CN=$name", '-days', '3650',
		'-keyout', "$d/$name.key", '-out', "$d/$name.crt");

	return { name => $name, cert => "$d/$name.crt", key => "$d/$name.key" };
}

# gen_cert($t, $ca, $name, @sans): a server/client certificate signed by
# $ca (from gen_ca; undef: self-signed) with subjectAltName @sans
# (default: $name; IP addresses become IP: entries).  Returns
# { name, cert, key, chain } (chain: cert followed by the CA cert).

sub gen_cert {
	my ($t, $ca, $name, @sans) = @_;
	my $d = $t->testdir();

	@sans = ($name) unless @sans;
	my $san = join ',', map {
		/^[\d.]+$/ || /:/ ? "IP:$_" : "DNS:$_"
	} @sans;

	my $conf = _openssl_conf($t, "$name.cnf", $san);

	if (!$ca) {
		_openssl($t, 'req', '-x509', '-new', '-nodes',
			'-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
			'-config', $conf, '-extensions', 'v3_leaf',
			'-subj', "/CN=$name", '-days', '825',
			'-keyout', "$d/$name.key", '-out', "$d/$name.crt");
		$t->write_file("$name.chain.crt", $t->read_file("$name.crt"));

	} else {
		_openssl($t, 'req', '-new', '-nodes',
			'-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
			'-config', $conf, '-subj', "/CN=$name",
			'-keyout', "$d/$name.key", '-out', "$d/$name.csr");
		_openssl($t, 'x509', '-req', '-in', "$d/$name.csr",
			'-CA', $ca->{cert}, '-CAkey', $ca->{key},
			'-set_serial', sprintf('0x%x%06x', time(), int(rand(1 << 24))),
			'-days', '825', '-extfile', $conf, '-extensions', 'v3_leaf',
			'-out', "$d/$name.crt");
		$t->write_file("$name.chain.crt", $t->read_file("$name.crt")
			. $t->read_file($ca->{cert}));
	}

	return { name => $name, cert => "$d/$name.crt", key => "$d/$name.key",
		chain => "$d/$name.chain.crt" };
}

###############################################################################
# small things

# basic($user, $pass): a Basic credentials value, "Basic dXNlcjpwYXNz",
# for Proxy-Authorization (or Authorization).

sub basic {
	my ($user, $pass) = @_;
	return 'Basic ' . encode_base64("$user:$pass", '');
}

# write_policy($t, $name, $data): $data (a Perl structure) as canonical
# JSON into <testdir>/<name>; a plain string is written as is.  Returns
# the path.

sub write_policy {
	my ($t, $name, $data) = @_;
	my $text = ref $data
		? JSON::PP->new->utf8->canonical->pretty->encode($data)
		: $data;
	$t->write_file($name, $text);
	return $t->testdir() . "/$name";
}

###############################################################################
# Redis, the control plane

# redis_start($t, port => P, name => 'redis', password => 'pw',
#             unix => 1, persist => 1, db => N): a redis-server of the
# test's own on 127.0.0.1:P (a logical or real port), its log in
# <testdir>/<name>.log; nothing saved to disk unless persist (an
# append-only file, synced on every write, so that a killed and restarted
# store has its data back).  Called again after redis_stop() it starts on
# the same port (a store that comes back).  Returns { port, url, pid, name,
# db }; url is "redis://127.0.0.1:P" (with ":pw@" when a password is set).
# With unix => 1 it also listens on <testdir>/<name>.sock (mode 700) and
# unix_url is "unix:<testdir>/<name>.sock" (with "?password=pw").  db is
# the database redis_cli() and the store_* helpers use.

sub redis_start {
	my ($t, %o) = @_;
	my $name = $o{name} // 'redis';

	die "redis_start: no $REDIS\n" unless -x $REDIS;

	my $port = defined $o{port} ? Test::Nginx::port($o{port})
		: ($t->{"_bottle_$name"} || die "redis_start: port required\n")
			->{port};
	my $password = $o{password}
		// ($t->{"_bottle_$name"} || {})->{password};
	my $unix = $o{unix} // ($t->{"_bottle_$name"} || {})->{unix};

	$t->{"_bottle_${name}_persist"} //= $o{persist};
	$t->{"_bottle_${name}_db"} //= $o{db};

	for (my $try = 1; ; $try++) {
		my $r = _redis_start($t, $name, $port, $password, $unix);
		return $r if ref $r;

		my $new;
		$new = Test::Nginx::renew_port($port)
			if $r =~ /Address already in use/ && $try < 4
			&& !$t->{_started};
		die $r unless defined $new;
		$port = $new;
	}
}

sub _redis_start {
	my ($t, $name, $port, $password, $unix) = @_;
	my $d = $t->testdir();
	my $log = "$d/$name.log";
	my $sock = "$d/$name.sock";

	my @cmd = ($REDIS, '--port', $port, '--bind', '127.0.0.1',
		'--save', '', '--appendonly', 'no', '--dir', $d,
		'--dbfilename', "$name.rdb", '--logfile', $log,
		'--daemonize', 'no', '--protected-mode', 'no');
	push @cmd, '--requirepass', $password if defined $password;
	push @cmd, '--appendonly', 'yes', '--appendfsync', 'always',
		'--appendfilename', "$name.aof"
		if $t->{"_bottle_${name}_persist"};
	push @cmd, '--unixsocket', $sock, '--unixsocketperm', '700' if $unix;

	my $before = -e $log ? -s $log : 0;

	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', "$d/$name.stderr";
		open STDERR, '>&', \*STDOUT;
		exec(@cmd) or die "exec $REDIS: $!\n";
	});

	my $pid = $t->last_daemon_pid();
	my $deadline = time() + 10;

	while (time() < $deadline) {
		my $text = -e $log ? $t->read_file("$name.log") : '';
		$text = substr($text, $before);

		if ($text =~ /Ready to accept connections/) {
			my $url = 'redis://'
				. (defined $password ? ":$password@" : '')
				. "127.0.0.1:$port";
			my $r = { port => $port, url => $url, pid => $pid,
				name => $name, password => $password,
				db => $t->{"_bottle_${name}_db"} };
			if ($unix) {
				$r->{unix} = 1;
				$r->{unix_url} = "unix:$sock"
					. (defined $password
					? '?password=' . _pct($password) : '');
			}
			$t->{"_bottle_$name"} = $r;
			return $r;
		}
		if ($text =~ /(Address already in use|Could not create server.*)/
			|| waitpid($pid, WNOHANG) != 0)
		{
			kill 'KILL', $pid;
			waitpid($pid, 0);
			return "redis-server exited: " . ($1 // $text) . "\n";
		}
		sleep 0.05;
	}

	die "redis-server does not start on 127.0.0.1:$port\n";
}

# percent-encoding for a store URL's query
sub _pct {
	my ($s) = @_;
	$s =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord($1))/ge;
	return $s;
}

# redis_stop($t, name => 'redis'): stops it (SIGKILL: a store that is lost,
# not one that says goodbye); its port stays the test's.

sub redis_stop {
	my ($t, %o) = @_;
	my $r = $t->{'_bottle_' . ($o{name} // 'redis')} or return;

	kill 'KILL', $r->{pid};
	waitpid($r->{pid}, 0);
	$t->{_daemons} = [ grep { $_ != $r->{pid} } @{$t->{_daemons}} ];
	return $t;
}

# store_put($t, @bottles): bottles (Perl structures, as in a policy file)
# into the test's Redis with bottlectl (build/bottlectl, or $BOTTLECTL),
# as an operator would; dies if bottlectl refuses them.  store_rm($t, $id)
# removes one the same way.  store_raw($t, $id, $json) writes a bottle's
# JSON as is, as the put script would (docs/control-plane.md), for a
# policy no writer would have let through.  A first argument
# { redis => 'x' } picks another Redis than 'redis' (redis_start's name).

our $BOTTLECTL = $ENV{BOTTLECTL} // "$Test::Nginx::REPO/build/bottlectl";
$BOTTLECTL = "$Test::Nginx::REPO/$BOTTLECTL" if $BOTTLECTL !~ m{^/};

sub bottlectl {
	my ($t, $r, @args) = @_;
	my $url = $r->{url} . (defined $r->{db} ? "/$r->{db}" : '');
	my $out = $t->testdir() . '/bottlectl.out';

	my $rc = system("$BOTTLECTL --store '$url' "
		. join(' ', map { "'$_'" } @args) . " >$out 2>&1");
	open my $fh, '<', $out or die "$out: $!\n";
	local $/;
	my $text = <$fh> // '';
	die "bottlectl @args: $text" if $rc != 0;
	return $text;
}

# ctl_run($t, [{ stdin => $file, env => {...} }], @args): bottlectl run as
# is (the environment's BOTTLE_STORE), { rc, out, err }; its stderr also
# appended to <testdir>/stderr.log, which the tests search for secrets

my $ctl_n = 0;

sub ctl_run {
	my $t = shift;
	my $o = ref $_[0] ? shift : {};
	my @args = @_;
	my $d = $t->testdir();
	$ctl_n++;

	my $pid = fork() // die "fork: $!\n";
	if ($pid == 0) {
		open STDIN, '<', $o->{stdin} // '/dev/null' or die;
		open STDOUT, '>', "$d/ctl$ctl_n.out" or die;
		open STDERR, '>', "$d/ctl$ctl_n.err" or die;
		@ENV{keys %{$o->{env}}} = values %{$o->{env}} if $o->{env};
		exec($BOTTLECTL, @args) or POSIX::_exit(127);
	}
	waitpid($pid, 0);
	my $rc = $? >> 8;

	my $err = $t->read_file("ctl$ctl_n.err");
	open my $log, '>>', "$d/stderr.log" or die;
	print $log $err;
	close $log;

	return { rc => $rc, out => $t->read_file("ctl$ctl_n.out"), err => $err };
}

sub _store {
	my ($t, $args) = @_;
	my $name = ref $args->[0] && exists $args->[0]{redis}
		? (shift @$args)->{redis} : 'redis';
	return $t->{"_bottle_$name"} || die "no $name started\n";
}

sub store_put {
	my ($t, @bottles) = @_;
	my $r = _store($t, \@bottles);
	my $file = $t->testdir() . '/store-put.json';

	open my $fh, '>', $file or die "$file: $!\n";
	print $fh JSON::PP->new->canonical->encode({ bottles => \@bottles });
	close $fh;

	return bottlectl($t, $r, 'policy', 'put', $file);
}

sub store_rm {
	my ($t, @ids) = @_;
	my $r = _store($t, \@ids);
	return bottlectl($t, $r, 'policy', 'rm', $ids[0]);
}

sub store_raw {
	my ($t, $id, $json, $digest) = @_;
	my $v = redis_cli($t, 'INCR', 'bottle:version');
	chomp $v;
	redis_cli($t, 'HSET', "bottle:policy:$id", 'json', $json,
		'version', $v, 'token_sha256', $digest // '');
	redis_cli($t, 'HSET', 'bottle:bottles', $id, $v);
	redis_cli($t, 'HSET', 'bottle:tokens', $digest, $id) if $digest;
	redis_cli($t, 'PUBLISH', 'bottle:changes', "$id $v");
	return $v;
}

# redis_cli($t, @args): redis-cli's output (--raw) for one command
# against the test's Redis; redis_cli($t, { name => 'x' }, @args) for
# another started with that name.

sub redis_cli {
	my ($t, @args) = @_;
	my $name = ref $args[0] ? (shift @args)->{name} : 'redis';
	my $r = $t->{"_bottle_$name"} or die "redis_cli: no $name started\n";

	my @cmd = ($REDIS_CLI, '--raw', '-h', '127.0.0.1', '-p', $r->{port});
	push @cmd, '-n', $r->{db} if defined $r->{db};
	push @cmd, '--no-auth-warning', '-a', $r->{password}
		if defined $r->{password};

	open my $fh, '-|', @cmd, @args or die "redis-cli: $!\n";
	local $/;
	my $out = <$fh> // '';
	close $fh;
	return $out;
}

# journal_events($t, $type): the journal's events (bottle:audit in the
# test's Redis), decoded, oldest first; only those of $type when given

sub journal_events {
	my ($t, $type) = @_;
	my @ev = map { JSON::PP->new->decode($_) } grep { /^\{/ } split /\n/,
		redis_cli($t, 'XRANGE', 'bottle:audit', '-', '+');
	return [ defined $type ? grep { $_->{type} eq $type } @ev : @ev ];
}

###############################################################################
# the fake forge: nginx + fcgiwrap + git http-backend (Test::Bottle::Forge)

# forge_start($t, port => P, name => 'forge', token => 'forge-token',
#             public_read => 1, tls => 1, hosts => [...], cert, key,
#             workers => 4): returns { name, port, url, token, root, log,
#             ca, ... } once it listens.

sub forge_start { return Test::Bottle::Forge::start(@_); }

# forge_repo($t, 'owner/repo', forge => name, commits => N, size => '100M',
#            file_size => '1M', branch => 'main'): a bare repository,
#            { name, path, url, auth_url, branch, head }.

sub forge_repo { return Test::Bottle::Forge::repo(@_); }

# forge_refs($t, 'owner/repo', forge => name): { refname => object id }.

sub forge_refs { return Test::Bottle::Forge::refs(@_); }

# forge_log($t, forge => name, wait => 5, since => N): the requests
# received (records of <testdir>/<name>/requests.jsonl), once none is in
# progress; with since, those after the first N (N: a scalar of an earlier
# forge_log()).

sub forge_log { return Test::Bottle::Forge::log(@_); }

# forge_connections($t, forge => name): connections accepted (its own
# status queries left out); forge_status: nginx's stub_status numbers.

sub forge_connections { return Test::Bottle::Forge::connections(@_); }
sub forge_status { return Test::Bottle::Forge::status(@_); }

# forge_config($t, forge => name, token => 'new', public_read => 0|1):
# the running forge's auth changed.

sub forge_config { return Test::Bottle::Forge::configure(@_); }

# run_git($t, [{ dir => path, env => {...} },] @args): the git client,
# isolated from the machine's config; ($status, $output).

sub run_git { return Test::Bottle::Forge::git(@_); }

###############################################################################

# git-gate in a test's own nginx, as nginx-conf/bottle-gitgate.conf runs
# it: nginx -> fcgiwrap (a daemon of the test's) -> gitgate-cgi.
#
# gitgate_cgi(): the gitgate-cgi the tests run ($GITGATE_CGI, relative to
# the repository, or build/gitgate-cgi).

sub gitgate_cgi {
	my $cgi = $ENV{GITGATE_CGI} // 'build/gitgate-cgi';
	return $cgi =~ m{^/} ? $cgi : "$Test::Nginx::REPO/$cgi";
}

# gitgate_fastcgi($sock, PARAM => value, ...): the FastCGI directives of a
# `bottle_attribute git` location, for a nginx.conf heredoc: the request
# streamed both ways, the params gitgate-cgi reads (BOTTLE_ID from
# $bottle_id, never a header), then the GITGATE_* ones given, in order.

sub gitgate_fastcgi {
	my ($sock, @params) = @_;
	my $cgi = gitgate_cgi();
	my $i = ' ' x 12;
	my @lines = (
		"fastcgi_pass unix:$sock;",
		'fastcgi_buffering off;',
		'fastcgi_request_buffering off;',
		'fastcgi_read_timeout 600s;',
		'fastcgi_pass_request_headers off;',
		'',
		"fastcgi_param SCRIPT_FILENAME $cgi;",
		'fastcgi_param GATEWAY_INTERFACE CGI/1.1;',
		'fastcgi_param SERVER_PROTOCOL $server_protocol;',
		'fastcgi_param REQUEST_METHOD $request_method;',
		'fastcgi_param PATH_INFO $uri;',
		'fastcgi_param QUERY_STRING $query_string;',
		'fastcgi_param CONTENT_TYPE $content_type;',
		'fastcgi_param CONTENT_LENGTH $content_length;',
		'fastcgi_param HTTP_CONTENT_ENCODING $http_content_encoding;',
		'fastcgi_param HTTP_GIT_PROTOCOL $http_git_protocol;',
		'fastcgi_param REMOTE_ADDR $remote_addr;',
		'fastcgi_param BOTTLE_ID $bottle_id;',
		'fastcgi_param PATH /usr/bin:/bin;',
	);
	while (my ($k, $v) = splice(@params, 0, 2)) {
		push @lines, "fastcgi_param $k $v;";
	}
	return join '', map { $_ eq '' ? "\n" : "$i$_\n" } @lines;
}

# gitgate_fcgiwrap($t, $sock, children => 2): fcgiwrap on the socket, a
# daemon of the test's (its output in <testdir>/gate-fcgi.log); returns
# once the socket is there, open to nginx's workers.

sub gitgate_fcgiwrap {
	my ($t, $sock, %o) = @_;
	my $d = $t->testdir();
	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', "$d/gate-fcgi.log";
		open STDERR, '>&', \*STDOUT;
		exec($Test::Bottle::Forge::FCGIWRAP, '-c', $o{children} // 2,
			'-s', "unix:$sock")
			or die "exec fcgiwrap: $!\n";
	});
	for (1 .. 200) { last if -S $sock; select(undef, undef, undef, 0.05); }
	chmod 0777, $sock;
}

# gitgate_tail($repo, $oid, slot => 1): the blob tail record of blob $oid
# in the git-gate copy or repository $repo (its gitgate-tails, docs/
# gitgate.md "Appended files"): (flags, size, lines), or () when it has
# none; with slot, the file offset of its record, else of its bucket's
# first way.

my $TAIL_WAYS = 4;
my $TAIL_BUCKETS = (1 << 17) / $TAIL_WAYS;

sub gitgate_tail {
	my ($repo, $oid, %o) = @_;
	require Compress::Zlib;
	my $raw = pack('H40', $oid);
	my $at = unpack('N', $raw) % $TAIL_BUCKETS * $TAIL_WAYS * 48;
	my $f = '';
	if (open my $fh, '<:raw', "$repo/gitgate-tails") {
		seek($fh, $at, 0);
		read($fh, $f, $TAIL_WAYS * 48);
	}
	for my $w (0 .. $TAIL_WAYS - 1) {
		my $r = substr($f, $w * 48, 48);
		next unless length($r) == 48;
		my ($magic, $crc, $id, $flags, $size, $lines)
			= unpack('V V a20 V Q< Q<', $r);
		next unless $magic == 0x31544747 && $id eq $raw
			&& $crc == Compress::Zlib::crc32(substr($r, 8));
		return $o{slot} ? $at + $w * 48 : ($flags, $size, $lines);
	}
	return $o{slot} ? $at : ();
}

1;
