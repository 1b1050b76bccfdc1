package Test::Nginx;

# Test harness for ngx_bottle, written to the public API of nginx-tests'
# Test::Nginx so that a test here reads like one of theirs:
#
#   my $t = Test::Nginx->new()->has(qw/http proxy/)->plan(3);
#   $t->write_file_expand('nginx.conf', <<'EOF');
#   %%TEST_GLOBALS%%
#   daemon off;
#   events { }
#   http { %%TEST_GLOBALS_HTTP%% server { listen 127.0.0.1:8080; ... } }
#   EOF
#   $t->run();
#   like(http_get('/'), qr/200 OK/, 'get');
#
# See docs/testing.md for the whole story.

use warnings;
use strict;

use base qw/ Exporter /;

our @EXPORT = qw/
	log_in log_out port
	http http_get http_head http_post http_start http_end http_content
	proxy_request proxy_session
/;
our @EXPORT_OK = @EXPORT;

use Cwd qw//;
use Errno qw//;
use File::Basename qw/ dirname /;
use File::Path qw/ rmtree /;
use File::Spec qw//;
use File::Temp qw/ tempdir /;
use IO::Select;
use IO::Socket::INET;
use IO::Socket::IP;
use POSIX qw/ WNOHANG /;
use Scalar::Util qw/ weaken /;
use Test::More qw//;
use Time::HiRes qw/ time sleep /;

###############################################################################

our $NGINX = $ENV{TEST_NGINX_BINARY} // '/usr/sbin/nginx';

# Repository root: this file is <repo>/t/lib/Test/Nginx.pm.
our $REPO = dirname(dirname(dirname(dirname(
	File::Spec->rel2abs(__FILE__)))));

# A relative TEST_NGINX_MODULE is taken from where prove was started ($PWD:
# tests chdir to t/ before loading this), else from the repository root.
our $MODULE = $ENV{TEST_NGINX_MODULE} // "$REPO/build/ngx_bottle_module.so";
if (!File::Spec->file_name_is_absolute($MODULE)) {
	my $pwd = $ENV{PWD} // $REPO;
	$MODULE = -e "$pwd/$MODULE" ? "$pwd/$MODULE" : "$REPO/$MODULE";
}

our $TIMEOUT = $ENV{TEST_NGINX_TIMEOUT} || 8;

our %ports;		# logical number => { port => real, lock => socket }
my @instances;		# live Test::Nginx objects, for the END block
my $ORIG_PID = $$;

###############################################################################

sub new {
	my ($class) = @_;
	my $self = bless {}, ref($class) || $class || __PACKAGE__;

	$self->{_pid} = $$;
	$self->{_alerts} = 1;
	$self->{_allow} = [];
	$self->{_daemons} = [];

	Test::More::BAIL_OUT("no nginx binary $NGINX (set TEST_NGINX_BINARY)")
		unless -x $NGINX;

	$self->{_testdir} = tempdir('bottle-test-XXXXXXXXXX', TMPDIR => 1)
		or die "Can't create temp directory: $!\n";

	# When we run as root nginx's workers run as "nobody" (the
	# compiled-in default user): let them reach the test directory.
	chmod 0755, $self->{_testdir} if $> == 0;

	push @instances, $self;
	weaken($instances[-1]);

	return $self;
}

sub DESTROY {
	my ($self) = @_;
	$self->_finish();
}

END {
	local $?;
	for my $t (grep { defined } @instances) {
		$t->_finish();
	}
}

# Stop everything, emit the "no alerts" / "no sanitizer errors" tests
# (planned by plan()), remove the test directory.  Runs once.

sub _finish {
	my ($self) = @_;
	local ($?, $@, $!);

	return if !defined $self->{_pid} || $self->{_pid} != $$;
	return if $self->{_finished}++;

	eval { $self->stop(); };
	Test::More::diag("stop: $@") if $@;
	eval { $self->stop_daemons(); };
	Test::More::diag("stop_daemons: $@") if $@;

	my $tb = Test::More->builder;

	if ($self->{_planned} && $tb->expected_tests)
	{
		my $log = $self->_log_text();

		my @alerts = grep { !$self->_allowed($_) }
			$log =~ /^.*\[(?:alert|crit|emerg)\].*$/gm;

		{
			no warnings 'once';
			local $Test::Nginx::TODO = 'alerts'
				unless $self->{_alerts};
			Test::More::is(join("\n", @alerts), '', 'no alerts');
		}

		my @san = grep { !$self->_allowed($_) } $log =~
		/^.*(?:ERROR: \w*Sanitizer|\bSanitizer:|runtime error:).*$/gm;
		Test::More::is(join("\n", @san), '', 'no sanitizer errors');
	}

	if ($ENV{TEST_NGINX_CATLOG}) {
		Test::More::diag($self->_log_text());
	}

	if ($ENV{TEST_NGINX_LEAVE}) {
		Test::More::diag("test directory left in $self->{_testdir}");
	} else {
		eval { rmtree($self->{_testdir}); };
	}
}

sub _log_text {
	my ($self) = @_;
	my $s = '';
	# and the error logs of other servers of the test (a fake forge's
	# nginx), absolute paths in $self->{_logs}
	for my $f ('error.log', 'stderr.log', @{$self->{_logs} || []}) {
		my $p = $f =~ m!^/! ? $f : "$self->{_testdir}/$f";
		next unless -e $p;
		open my $fh, '<', $p or next;
		local $/;
		$s .= <$fh> // '';
		$s .= "\n" if length $s && $s !~ /\n\z/;
	}
	return $s;
}

sub _allowed {
	my ($self, $line) = @_;
	for my $re (@{$self->{_allow}}) {
		return 1 if $line =~ $re;
	}
	return 0;
}

###############################################################################
# feature checks

sub _configure_args {
	my ($self) = @_;
	$self->{_configure_args} //= `$NGINX -V 2>&1`;
	return $self->{_configure_args};
}

sub _modules_path {
	my ($self) = @_;
	my $v = $self->_configure_args();
	return $1 if $v =~ /--modules-path=(\S+)/;
	return dirname($NGINX) . '/modules';
}

# Path of a dynamic module shipped with nginx (e.g. ngx_stream_module),
# undef unless it was built dynamic and its file is there.

sub _dynamic_module {
	my ($self, $opt, $file) = @_;
	my $v = $self->_configure_args();
	return undef unless $v =~ /--with-\Q$opt\E=dynamic(?!\S)/;
	my $p = $self->_modules_path() . "/$file.so";
	return -e $p ? $p : undef;
}

my %default_on = map { $_ => 1 } qw/
	access auth_basic autoindex browser charset empty_gif fastcgi geo
	grpc gzip limit_conn limit_req map memcached mirror proxy referer
	rewrite scgi split_clients ssi userid uwsgi upstream_hash
	upstream_ip_hash upstream_least_conn upstream_random
	upstream_keepalive upstream_zone
	stream_access stream_geo stream_limit_conn stream_map stream_return
	stream_split_clients stream_upstream_hash stream_upstream_least_conn
	stream_upstream_random stream_upstream_zone stream_set
/;

sub has_module {
	my ($self, $feature) = @_;
	my $v = $self->_configure_args();

	return $v !~ /--without-http(?!\S)/ if $feature eq 'http';
	return $v =~ /TLS SNI support enabled/ if $feature eq 'sni';
	return $v =~ /--with-http_ssl_module/ if $feature eq 'ssl';
	return $v =~ /--with-http_v2_module/ if $feature eq 'http_v2';
	return $v !~ /--without-pcre(?!\S)/ if $feature eq 'pcre';
	return $v !~ /--without-http-cache/ if $feature eq 'cache';

	if ($feature eq 'stream' || $feature eq 'mail') {
		return 1 if $v =~ /--with-$feature(?!\S)/;
		return defined $self->_dynamic_module($feature,
			"ngx_${feature}_module");
	}

	if ($feature eq 'bottle') {
		return -e $MODULE;
	}

	if ($default_on{$feature}) {
		my $m = $feature =~ /^stream_/ ? $feature : "http_$feature";
		return $v !~ /--without-\Q$m\E_mod/;
	}

	my $m = $feature =~ /^(stream|mail)_/ ? $feature : "http_$feature";
	return 1 if $v =~ /--with-\Q$m\E_module(?:\s|$)/;
	return 1 if $v =~ /--with-\Q$feature\E(?:_module)?(?:\s|$)/;

	return 0;
}

sub has_feature {
	my ($self, $feature) = @_;

	if ($feature =~ /^socket_ssl/) {
		eval { require IO::Socket::SSL; };
		return 0 if $@;
		return IO::Socket::SSL->can_client_sni()
			if $feature eq 'socket_ssl_sni';
		return IO::Socket::SSL->can_alpn()
			if $feature eq 'socket_ssl_alpn';
		return 1;
	}

	if ($feature eq 'ipv6') {
		my $s = IO::Socket::IP->new(LocalHost => '::1',
			LocalPort => 0, Proto => 'tcp', Listen => 1);
		return defined $s;
	}

	if ($feature eq 'dnsmasq') {
		return -x '/usr/sbin/dnsmasq';
	}

	if ($feature eq 'openssl') {
		return scalar `command -v openssl 2>/dev/null`;
	}

	if ($feature eq 'root') {
		return $> == 0;
	}

	return 0;
}

sub has {
	my ($self, @features) = @_;

	for my $feature (@features) {
		next if $self->has_module($feature)
			|| $self->has_feature($feature);

		if ($feature eq 'bottle' && defined $ENV{TEST_NGINX_MODULE}) {
			Test::More::BAIL_OUT("TEST_NGINX_MODULE=$MODULE "
				. "does not exist");
		}

		my $why = $feature eq 'bottle'
			? "no bottle module at $MODULE (run make)"
			: "no $feature available";
		Test::More::plan(skip_all => $why);
	}

	return $self;
}

sub has_version {
	my ($self, $need) = @_;

	my ($have) = $self->_configure_args() =~ m!nginx/([0-9.]+)!;
	return 0 unless defined $have;

	my @h = split /\./, $have;
	for my $n (split /\./, $need) {
		my $h = shift(@h) // 0;
		return 0 if $n > $h;
		return 1 if $h > $n;
	}
	return 1;
}

sub has_daemon {
	my ($self, $daemon) = @_;

	my $found = $daemon =~ m!/! ? -x $daemon
		: scalar `command -v $daemon 2>/dev/null`;
	Test::More::plan(skip_all => "$daemon not found") unless $found;

	return $self;
}

###############################################################################
# plan and alerts

sub plan {
	my ($self, $plan) = @_;

	# Two more tests run at the end: "no alerts", "no sanitizer errors"
	# (as in nginx-tests).

	$self->{_planned} = 1;
	Test::More::plan(tests => $plan + 2);

	return $self;
}

sub todo_alerts {
	my ($self) = @_;
	$self->{_alerts} = 0;
	return $self;
}

# Error log lines matching one of these regexps do not count as alerts
# (for tests that provoke an [emerg] on purpose, e.g. a bad reload).

sub allow_alerts {
	my ($self, @re) = @_;
	push @{$self->{_allow}}, map { ref $_ ? $_ : qr/\Q$_\E/ } @re;
	return $self;
}

###############################################################################
# files

sub testdir {
	my ($self) = @_;
	return $self->{_testdir};
}

sub read_file {
	my ($self, $name) = @_;
	local $/;

	my $path = $name =~ m!^/! ? $name : "$self->{_testdir}/$name";
	open my $fh, '<', $path or die "Can't open $name: $!\n";
	binmode $fh;
	my $content = <$fh>;
	close $fh;

	return $content // '';
}

sub write_file {
	my ($self, $name, $content) = @_;

	delete $self->{_templates}{$name} unless $self->{_expanding};

	my $path = $name =~ m!^/! ? $name : "$self->{_testdir}/$name";
	open my $fh, '>', $path or die "Can't create $name: $!\n";
	binmode $fh;
	print $fh $content;
	close $fh or die "Can't write $name: $!\n";

	return $self;
}

sub write_file_expand {
	my ($self, $name, $content) = @_;

	# kept, so that renew_port() can write the file again with new ports
	$self->{_templates}{$name} = $content;

	$content =~ s/%%TEST_GLOBALS%%/$self->test_globals()/ge;
	$content =~ s/%%TEST_GLOBALS_HTTP%%/$self->test_globals_http()/ge;
	$content =~ s/%%TEST_GLOBALS_STREAM%%/$self->test_globals_stream()/ge;
	$content =~ s/%%TESTDIR%%/$self->{_testdir}/g;
	$content =~ s/%%REPO%%/$REPO/g;
	$content =~ s/%%MODULE%%/$MODULE/g;

	$content =~ s/%%PORT_(\d+)_UDP%%/port($1, udp => 1)/ge;
	$content =~ s/%%PORT_(\d+)%%/port($1)/ge;

	# as in nginx-tests: a literal 127.0.0.1:8xxx is a logical port too
	$content =~ s/127\.0\.0\.1:(8\d\d\d)(?!\d)/'127.0.0.1:' . port($1)/ge;

	local $self->{_expanding} = 1;
	return $self->write_file($name, $content);
}

sub test_globals {
	my ($self) = @_;

	$self->{_test_globals_used} = 1;

	my $s = '';

	my $stream = $self->_dynamic_module('stream', 'ngx_stream_module');
	$s .= "load_module $stream;\n" if defined $stream;

	$s .= "load_module $MODULE;\n" if -e $MODULE;

	$s .= "pid $self->{_testdir}/nginx.pid;\n";
	$s .= "error_log $self->{_testdir}/error.log debug;\n";

	$s .= "$ENV{TEST_NGINX_GLOBALS}\n" if $ENV{TEST_NGINX_GLOBALS};

	return $s;
}

sub test_globals_http {
	my ($self) = @_;
	my $d = $self->{_testdir};

	my $s = '';
	$s .= "root $d;\n";
	$s .= "access_log $d/access.log;\n";
	$s .= "client_body_temp_path $d/client_body_temp;\n";
	$s .= "proxy_temp_path $d/proxy_temp;\n";
	$s .= "fastcgi_temp_path $d/fastcgi_temp;\n";
	$s .= "uwsgi_temp_path $d/uwsgi_temp;\n";
	$s .= "scgi_temp_path $d/scgi_temp;\n";

	$s .= "$ENV{TEST_NGINX_GLOBALS_HTTP}\n" if $ENV{TEST_NGINX_GLOBALS_HTTP};

	return $s;
}

sub test_globals_stream {
	my ($self) = @_;

	my $s = '';
	$s .= "$ENV{TEST_NGINX_GLOBALS_STREAM}\n"
		if $ENV{TEST_NGINX_GLOBALS_STREAM};

	return $s;
}

###############################################################################
# ports

# port($n): the real port standing for logical port $n in this test file
# (%%PORT_n%% in configs): a random free port in 20000-29999, below the
# kernel's ephemeral range (so no client connection holds it) and away
# from the numbers services like (8080, 8443 ...: another nginx
# restarting on 8080 while the test runs cannot take it).  With
# TEST_NGINX_FIXED_PORTS=1 it is $n itself when that is free (easier to
# read in logs), a random one otherwise.
#
# Free means free for real, for anything a test may bind there: no TCP
# listener and no UDP socket on the port on any IPv4 address (127.0.0.1,
# 127.0.0.2, 0.0.0.0 ...), nor on any IPv6 one ([::1], [::]) when the
# host has IPv6.  Probed by binding the wildcard addresses, so another
# nginx on 0.0.0.0:8080 or a service on [::1]:8443 is seen.
#
# So that concurrent test files never pick the same port, a UDP socket
# stays bound to $LOCK_ADDR:port for the life of the test: another test
# file's probe fails on it, while nothing of ours binds that address
# (only a wildcard UDP listen on the port would clash with it).
#
# A port can still be taken by another program between the probe and the
# bind (or while nginx is stopped between two run()s): run() and
# dns_start() then move that logical port to a new one and retry, see
# renew_port().
#
# A real port already handed out maps to itself: port(port(8081)) ==
# port(8081).  port($n, udp => 1) is the same port (kept for nginx-tests'
# %%PORT_n_UDP%%).

our $LOCK_ADDR = '127.255.255.254';

my %retired;		# real ports found taken after they were handed out

sub port {
	shift if ref $_[0];
	my ($num, %opts) = @_;

	if (!exists $ports{$num}) {
		for my $p (values %ports) {
			return $p->{port} if $p->{port} == $num;
		}
		_allocate_port($num);
	}

	return $ports{$num}{lock} if $opts{socket};
	return $ports{$num}{port};
}

my $HAVE_IPV6;

sub _have_ipv6 {
	$HAVE_IPV6 //= defined(IO::Socket::IP->new(LocalHost => '::1',
		LocalPort => 0, Proto => 'udp')) ? 1 : 0;
	return $HAVE_IPV6;
}

# _port_free($port): nothing bound to $port, TCP or UDP, IPv4 or IPv6.
# TCP probes use SO_REUSEADDR (as nginx does), so connections of ours in
# TIME_WAIT do not count while any listener does; UDP probes do not, so
# every bound UDP socket counts, the other test files' locks included.

sub _port_free {
	my ($port) = @_;
	my @probe;

	push @probe, IO::Socket::INET->new(Proto => 'tcp',
		LocalAddr => "0.0.0.0:$port", ReuseAddr => 1) // return 0;
	push @probe, IO::Socket::INET->new(Proto => 'udp',
		LocalAddr => "0.0.0.0:$port") // return 0;

	if (_have_ipv6()) {
		for my $proto (qw/ tcp udp /) {
			push @probe, IO::Socket::IP->new(Proto => $proto,
				LocalHost => '::', LocalPort => $port,
				V6Only => 1, ReuseAddr => $proto eq 'tcp')
				// return 0;
		}
	}

	close $_ for @probe;
	return 1;
}

sub _allocate_port {
	my ($num) = @_;

	my %taken = (%retired, map { $_ => 1 } keys %ports,
		map { $_->{port} } values %ports);

	for my $try (0 .. 500) {
		my $port = $try == 0 && $ENV{TEST_NGINX_FIXED_PORTS}
			&& $num > 1023 && $num < 65536 && !$taken{$num}
			? $num : 20000 + int(rand(10000));
		next if $try > 0 && $taken{$port};

		# the probe binds the UDP wildcard, which our own lock would
		# hold: probe first, then lock (a test file that locks the
		# port in between makes our lock fail)
		_port_free($port) or next;

		my $lock = IO::Socket::INET->new(Proto => 'udp',
			LocalAddr => "$LOCK_ADDR:$port") or next;

		$ports{$num} = { port => $port, lock => $lock };
		return $port;
	}

	die "Can't find a free port for $num\n";
}

# renew_port($port): logical or real port found taken by another program
# (EADDRINUSE at bind time): give its logical port a new real one, never
# the old one again, and rewrite every file written with
# write_file_expand from its template.  Returns the new real port, undef
# when $port is not one of ours.  Whatever got the old number before
# (a policy file, a started daemon, a Perl variable) keeps it: run() and
# dns_start() call this only for ports nothing but nginx / dnsmasq binds.

sub renew_port {
	shift if ref $_[0];
	my ($port) = @_;

	my ($num) = grep { $ports{$_}{port} == $port } keys %ports;
	$num //= $port if exists $ports{$port};
	return undef unless defined $num;

	my $old = delete $ports{$num};
	$retired{$old->{port}} = 1;
	close $old->{lock} if $old->{lock};

	my $new = _allocate_port($num);
	Test::More::diag("port $old->{port} (logical $num) is taken by "
		. "another program, using $new");

	for my $t (grep { defined && $_->{_pid} == $$ } @instances) {
		$t->_reexpand();
	}

	return $new;
}

sub _reexpand {
	my ($self) = @_;
	my $tpl = $self->{_templates} || {};
	for my $name (sort keys %$tpl) {
		$self->write_file_expand($name, $tpl->{$name});
	}
}

###############################################################################
# nginx

sub args {
	my ($self, @args) = @_;
	$self->{_args} = \@args;
	return $self;
}

sub _globals_cmdline {
	my ($self) = @_;
	my $d = $self->{_testdir};
	my $conf = -e "$d/nginx.conf" ? $self->read_file('nginx.conf') : '';
	(my $bare = $conf) =~ s/#.*$//mg;

	my $g = '';
	$g .= "pid $d/nginx.pid; error_log $d/error.log debug; "
		unless $self->{_test_globals_used}
		|| $bare =~ /^\s*pid\s/m;
	$g .= "daemon off; " unless $bare =~ /^\s*daemon\s/m;

	return length $g ? ('-g', $g) : ();
}

sub _nginx_cmd {
	my ($self) = @_;
	return ($NGINX, '-p', "$self->{_testdir}/", '-c', 'nginx.conf',
		'-e', 'error.log', @{$self->{_args} || []},
		$self->_globals_cmdline());
}

sub dump_config {
	my ($self) = @_;
	my @cmd = $self->_nginx_cmd();
	local $ENV{LD_PRELOAD} = $ENV{TEST_NGINX_PRELOAD}
		if $ENV{TEST_NGINX_PRELOAD};
	open my $fh, '-|', $cmd[0], '-T', @cmd[1 .. $#cmd] or return '';
	local $/;
	return scalar <$fh>;
}

# run(): start nginx and wait until it listens.  When another program
# took one of its ports since port() handed it out (nginx says
# "bind() to ... failed (98: Address already in use)"), that logical port
# gets a new real one, the files written with write_file_expand are
# written again, and nginx is started again: up to $START_TRIES times.
# The failed attempts' log lines go to port-retry.log, so they do not
# count as alerts.

our $START_TRIES = 4;

sub run {
	my ($self, $conf) = @_;

	die "nginx already running\n" if $self->{_started};

	if (defined $conf) {
		$self->write_file_expand('nginx.conf', $self->read_file($conf));
	}

	for (my $try = 1; ; $try++) {
		my ($log, $cut) = $self->_start();
		return $self unless defined $log;

		my %seen;
		my @taken = grep { !$seen{$_}++ } $log =~
			/bind\(\) to (?:\[[^\]]*\]|[^\s\[\]]+):(\d+) failed \(98: /g;
		my @renewed = grep { defined } map { renew_port($_) } @taken;

		if (@renewed && $try < $START_TRIES) {
			$cut->();
			next;
		}

		my @cmd = $self->_nginx_cmd();
		die "Can't start nginx (@cmd):\n$log\n";
	}
}

# _start(): one attempt.  Returns nothing when nginx runs, else the log
# of the attempt and a function that moves it out of the logs.

sub _start {
	my ($self) = @_;
	my $d = $self->{_testdir};

	unlink "$d/nginx.pid";
	my %offset = map { $_ => (-s "$d/$_" || 0) } qw/ error.log stderr.log /;
	my @cmd = $self->_nginx_cmd();

	my $pid = fork();
	die "Unable to fork(): $!\n" unless defined $pid;

	if ($pid == 0) {
		_die_with_parent();
		_sanitizer_env();
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', "$d/stderr.log";
		open STDERR, '>&', \*STDOUT;
		exec(@cmd) or POSIX::_exit(127);
	}

	$self->{_nginx_pid} = $pid;

	my $ok = $self->waitforfile("$d/nginx.pid", $pid, 10);

	if ($ok) {
		my @ports = $self->_listen_ports();
		my $deadline = time() + 5;
		for my $port (@ports) {
			sleep 0.05 until _listening($port)
				|| time() > $deadline;
			$ok = 0, last unless _listening($port);
		}
	}

	my $log = sub {
		my $s = '';
		for my $f (qw/ error.log stderr.log /) {
			$s .= substr($self->read_file($f), $offset{$f})
				if -e "$d/$f";
		}
		return $s;
	};

	if ($ok) {
		$self->{_started} = 1;

		# nginx tries a busy port 5 times, 500 ms apart: when the
		# other program let go in time nginx runs, and its [emerg]
		# lines of the tries before are no alerts
		my @busy = grep { /bind\(\) to \S+ failed \(98: / }
			split /\n/, $log->();
		if (@busy) {
			push @{$self->{_allow}}, map { qr/^\Q$_\E$/ } @busy;
			if (open my $keep, '>>', "$d/port-retry.log") {
				print $keep map { "$_\n" } @busy;
			}
		}
		return;
	}

	kill 'KILL', $pid if waitpid($pid, WNOHANG) == 0;
	waitpid($pid, 0);
	delete $self->{_nginx_pid};

	$log = $log->();

	my $cut = sub {
		open my $keep, '>>', "$d/port-retry.log" or return;
		for my $f (qw/ error.log stderr.log /) {
			next unless -e "$d/$f";
			print $keep substr($self->read_file($f), $offset{$f});
			truncate "$d/$f", $offset{$f};
		}
		close $keep;
	};

	return ($log, $cut);
}

# TEST_NGINX_PRELOAD: LD_PRELOAD for nginx only (not for perl), for a
# module built with sanitizers (make asan): the sanitizer runtime must be
# loaded first.  Leak detection is off by default: nginx does not free
# its cycle at exit.

sub _sanitizer_env {
	return unless $ENV{TEST_NGINX_PRELOAD};
	$ENV{LD_PRELOAD} = $ENV{TEST_NGINX_PRELOAD};
	$ENV{ASAN_OPTIONS} //= 'detect_leaks=0';
	$ENV{UBSAN_OPTIONS} //= 'print_stacktrace=1';
}

# $t->nginx_t($conf): "nginx -t" on <testdir>/$conf, with the sanitizer
# runtime as the harness gives it (leak checks off); returns its exit
# status and what it printed (stderr and stdout).

sub nginx_t {
	my ($self, $name) = @_;
	my $d = $self->testdir();

	unlink "$d/t.log";

	my $pid = open(my $fh, '-|');
	die "fork: $!\n" unless defined $pid;

	if ($pid == 0) {
		open STDERR, '>&', \*STDOUT;
		_sanitizer_env();
		exec($NGINX, '-t', '-p', "$d/", '-c', $name, '-e', "$d/t.log")
			or POSIX::_exit(127);
	}

	local $/;
	my $text = <$fh> // '';
	close $fh;

	return ($? >> 8, $text);
}

sub try_run {
	my ($self, $message) = @_;

	eval {
		open my $olderr, '>&', \*STDERR;
		open STDERR, '>', '/dev/null';
		eval { $self->run(); };
		my $e = $@;
		open STDERR, '>&', $olderr;
		die $e if $e;
	};

	return $self unless $@;

	log_core('', $@);
	Test::More::plan(skip_all => $message);
	return $self;
}

# Ports of "listen" directives in nginx.conf (not udp, not unix sockets).

sub _listen_ports {
	my ($self) = @_;
	my $conf = $self->read_file('nginx.conf');
	$conf =~ s/#.*$//mg;

	my %p;
	while ($conf =~ /(?:^|[;{}])\s*listen\s+([^;]+);/gm) {
		my ($addr, @params) = split ' ', $1;
		next if $addr =~ /^unix:/ || grep { $_ eq 'udp' } @params;
		if ($addr =~ /:(\d+)$/ || $addr =~ /^(\d+)$/) {
			$p{$1} = 1;
		}
	}
	return sort { $a <=> $b } keys %p;
}

sub _listening {
	my ($port) = @_;
	my $hex = sprintf(':%04X', $port);

	my $seen_proc = 0;
	for my $f ('/proc/net/tcp', '/proc/net/tcp6') {
		open my $fh, '<', $f or next;
		$seen_proc = 1;
		while (<$fh>) {
			my @f = split;
			return 1 if defined $f[3] && $f[3] eq '0A'
				&& $f[1] =~ /\Q$hex\E$/;
		}
	}
	return 0 if $seen_proc;

	return defined IO::Socket::INET->new(Proto => 'tcp',
		PeerAddr => "127.0.0.1:$port");
}

sub waitforfile {
	my ($self, $file, $pid, $timeout) = @_;
	my $deadline = time() + ($timeout || 5);

	while (time() < $deadline) {
		return 1 if -e $file;
		return 0 if $pid && waitpid($pid, WNOHANG) != 0;
		sleep 0.05;
	}
	return -e $file ? 1 : undef;
}

sub waitforsocket {
	my ($self, $peer, $timeout) = @_;
	my $deadline = time() + ($timeout || 5);

	while (time() < $deadline) {
		my $s = IO::Socket::IP->new(Proto => 'tcp', PeerAddr => $peer,
			Timeout => 1);
		return 1 if defined $s;
		sleep 0.05;
	}
	return undef;
}

sub nginx_pid {
	my ($self) = @_;
	return $self->{_started} ? $self->{_nginx_pid} : undef;
}

sub _children {
	my ($pid) = @_;
	my @kids;

	if (open my $fh, '<', "/proc/$pid/task/$pid/children") {
		local $/;
		@kids = split ' ', (<$fh> // '');
		return @kids;
	}

	opendir my $dh, '/proc' or return ();
	for my $p (grep { /^\d+$/ } readdir $dh) {
		open my $fh, '<', "/proc/$p/stat" or next;
		my $stat = <$fh> // next;
		push @kids, $p if $stat =~ /\)\s+\S+\s+(\d+)/ && $1 == $pid;
	}
	return @kids;
}

sub worker_pids {
	my ($self) = @_;
	return () unless $self->{_started};
	return _children($self->{_nginx_pid});
}

# reload(): SIGHUP, then wait until the master started new workers and
# every old worker stopped accepting ("gracefully shutting down") or
# exited.  Returns $self, or undef if nginx rejected the configuration
# ([emerg] in the log, old configuration kept) or did not finish in time.

sub reload {
	my ($self, %opts) = @_;

	return $self unless $self->{_started};

	my $pid = $self->{_nginx_pid};
	my $d = $self->{_testdir};
	my @old = _children($pid);
	my $offset = -s "$d/error.log" || 0;

	kill 'HUP', $pid or die "Can't signal nginx: $!\n";

	my $deadline = time() + ($opts{timeout} || 10);
	my ($log, @pending) = ('');

	while (time() < $deadline) {
		sleep 0.05;

		$log = substr($self->read_file('error.log'), $offset);
		next unless $log =~ /reconfiguring/;

		if ($log =~ /^.*\[emerg\].*$/m) {
			log_core('', "reload failed: $&");
			return undef;
		}

		if (!@old) {
			# master_process off: no workers to wait for
			return $self if $log =~ /\[notice\].*reconfiguring/;
			next;
		}

		next unless $log =~ /start worker process/;

		@pending = grep {
			my $p = $_;
			$log !~ /\b$p#\d+: (?:gracefully shutting down|exiting)/
			&& _is_child($p, $pid);
		} @old;

		return $self unless @pending;
	}

	Test::More::diag("reload timed out (old workers still accepting: "
		. "@pending), log since HUP:\n"
		. join("\n", grep { !/\[debug\]/ } split /\n/, $log));
	return undef;
}

sub _is_child {
	my ($p, $parent) = @_;
	open my $fh, '<', "/proc/$p/stat" or return 0;
	my $stat = <$fh> // return 0;
	return 0 unless $stat =~ /\)\s+(\S+)\s+(\d+)/;
	return 0 if $1 eq 'Z';
	return $2 == $parent;
}

sub stop {
	my ($self, %opts) = @_;

	return $self unless $self->{_started};

	my $pid = $self->{_nginx_pid};
	my @kids = _children($pid);

	kill 'QUIT', $pid;

	my $exited = _wait_exit($pid, $opts{timeout} || 10);

	if (!$exited) {
		Test::More::diag('nginx did not quit gracefully, '
			. 'sending TERM');
		kill 'TERM', $pid;
		$exited = _wait_exit($pid, 5);
	}
	if (!$exited) {
		Test::More::diag('nginx did not exit, sending KILL');
		kill 'KILL', $pid, @kids;
		waitpid($pid, 0);
	}

	# workers exit before the master, but make sure
	for my $k (@kids) {
		kill 'KILL', $k if _is_child($k, $pid);
	}

	$self->{_started} = 0;
	return $self;
}

sub _wait_exit {
	my ($pid, $timeout) = @_;
	my $deadline = time() + $timeout;

	while (time() < $deadline) {
		my $r = waitpid($pid, WNOHANG);
		return 1 if $r == $pid || $r == -1;
		sleep 0.02;
	}
	return 0;
}

###############################################################################
# daemons

# The child dies with its parent (the test) even if the test is killed
# hard: PR_SET_PDEATHSIG where available.

sub _die_with_parent {
	my $parent = getppid();
	eval {
		require 'syscall.ph';
		syscall(&SYS_prctl, 1, 15);	# PR_SET_PDEATHSIG, SIGTERM
	};
	POSIX::_exit(0) if getppid() != $parent;
}

# run_daemon(\&code, @args) or run_daemon('/path/prog', @args): fork; the
# child becomes a process group leader, so that stop_daemons() also ends
# whatever the daemon forked.

sub run_daemon {
	my ($self, $code, @args) = @_;

	my $pid = fork();
	die "Can't fork daemon: $!\n" unless defined $pid;

	if ($pid == 0) {
		setpgrp(0, 0);
		_die_with_parent();

		# the port locks are the test's, not the daemon's
		for my $p (values %ports) {
			close $p->{lock} if $p->{lock};
		}

		if (ref($code) eq 'CODE') {
			eval { $code->(@args); };
			if ($@) {
				print STDERR "daemon died: $@";
				POSIX::_exit(1);
			}
			POSIX::_exit(0);
		}
		{ exec($code, @args); }
		print STDERR "exec $code: $!\n";
		POSIX::_exit(127);
	}

	push @{$self->{_daemons}}, $pid;
	$self->{_last_daemon} = $pid;

	return $self;
}

sub last_daemon_pid {
	my ($self) = @_;
	return $self->{_last_daemon};
}

sub daemon_pids {
	my ($self) = @_;
	return @{$self->{_daemons}};
}

sub stop_daemons {
	my ($self) = @_;

	while (my $p = shift @{$self->{_daemons}}) {
		kill 'TERM', -$p;
		kill 'TERM', $p;

		if (!_wait_exit($p, 5)) {
			kill 'KILL', -$p;
			kill 'KILL', $p;
			waitpid($p, 0);
		}

		# and whatever is left of its process group
		my $deadline = time() + 2;
		while (kill(0, -$p) && time() < $deadline) {
			sleep 0.02;
		}
		kill 'KILL', -$p if kill(0, -$p);
	}

	return $self;
}

###############################################################################
# logging (TEST_NGINX_VERBOSE)

sub log_core {
	return unless $ENV{TEST_NGINX_VERBOSE};
	my ($prefix, $msg) = @_;
	($prefix, $msg) = ('', $prefix) unless defined $msg;
	$msg //= '(undef)';
	$prefix .= ' ' if length $prefix;

	if (length($msg) > 4096) {
		$msg = substr($msg, 0, 4096) . '(... ' . length($msg)
			. ' bytes)';
	}

	$msg =~ s/([^\x20-\x7e\n])/sprintf('\\x%02x', ord($1))/ge;
	$msg =~ s/^/# $prefix/gm;
	$msg .= "\n" unless $msg =~ /\n\z/;
	print $msg;
}

sub log_out { log_core('>>', @_); }
sub log_in { log_core('<<', @_); }

###############################################################################
# client side I/O

sub _connect {
	my (%opts) = @_;

	return $opts{socket} if $opts{socket};

	my $peer = $opts{PeerAddr}
		// '127.0.0.1:' . port($opts{port} // ($opts{SSL} ? 8443 : 8080));

	my $s = IO::Socket::IP->new(Proto => 'tcp', PeerAddr => $peer,
		Timeout => $opts{timeout} || $TIMEOUT);

	if (!$s) {
		log_in("connect to $peer failed: $@ $!");
		return undef;
	}

	if ($opts{SSL}) {
		require IO::Socket::SSL;
		my %ssl = map { $_ => $opts{$_} } grep { /^SSL_/ } keys %opts;
		IO::Socket::SSL->start_SSL($s,
			SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_NONE(),
			Timeout => $opts{timeout} || $TIMEOUT,
			%ssl)
			or do {
				no warnings 'once';
				log_in("ssl handshake: $IO::Socket::SSL::SSL_ERROR");
				return undef;
			};
	}

	return $s;
}

sub _write_all {
	my ($s, $data, $deadline) = @_;
	local $SIG{PIPE} = 'IGNORE';

	my $off = 0;
	while ($off < length $data) {
		my $left = $deadline - time();
		return 0 if $left <= 0;
		next unless IO::Select->new($s)->can_write($left);
		my $n = syswrite($s, $data, length($data) - $off, $off);
		if (!defined $n) {
			next if $!{EINTR} || $!{EAGAIN};
			return 0;
		}
		$off += $n;
	}
	return 1;
}

# Read what is available: bytes, '' at EOF, undef on timeout or error.

sub _read_some {
	my ($s, $deadline) = @_;

	for (;;) {
		my $pending = $s->can('pending') ? $s->pending() : 0;
		if (!$pending) {
			my $left = $deadline - time();
			return undef if $left <= 0;
			next unless IO::Select->new($s)->can_read($left);
		}
		my $buf;
		my $n = sysread($s, $buf, 65536);
		if (!defined $n) {
			next if $!{EINTR} || $!{EAGAIN}
				|| ($s->can('errstr') && $!{EWOULDBLOCK});
			return '' if $!{ECONNRESET};
			return undef;
		}
		return $n ? $buf : '';
	}
}

sub _read_until_close {
	my ($s, $timeout) = @_;
	my $deadline = time() + $timeout;
	my ($data, $complete) = ('', 0);

	for (;;) {
		my $chunk = _read_some($s, $deadline);
		last unless defined $chunk;
		$complete = 1, last if $chunk eq '';
		$data .= $chunk;
	}
	return wantarray ? ($data, $complete) : $data;
}

sub http_get {
	my ($url, %opts) = @_;
	return http("GET $url HTTP/1.0\r\nHost: localhost\r\n\r\n", %opts);
}

sub http_head {
	my ($url, %opts) = @_;
	return http("HEAD $url HTTP/1.0\r\nHost: localhost\r\n\r\n", %opts);
}

sub http_post {
	my ($url, $body, %opts) = @_;
	$body //= '';
	return http("POST $url HTTP/1.0\r\nHost: localhost\r\n"
		. 'Content-Length: ' . length($body) . "\r\n\r\n" . $body,
		%opts);
}

# http($request, %opts): send, read until the server closes (or the
# timeout).  Options: PeerAddr => 'host:port', port => logical port
# (default 8080; 8443 with SSL), SSL => 1 (+ SSL_* options), socket =>
# an open socket, start => 1 (return the socket after sending; finish
# with http_end), sleep => seconds between request and body, body =>
# bytes sent after the request, timeout => seconds.
# Returns what was read, undef if nothing could be (connect failed,
# nothing before the timeout).

sub http {
	my ($request, %opts) = @_;

	my $s = http_start($request, %opts);
	return $s if $opts{start} || !defined $s;
	return http_end($s, %opts);
}

sub http_start {
	my ($request, %opts) = @_;

	my $s = _connect(%opts) or return undef;
	my $deadline = time() + ($opts{timeout} || $TIMEOUT);

	log_out($request);
	_write_all($s, $request, $deadline) or return undef;

	sleep $opts{sleep} if $opts{sleep};

	if (defined $opts{body}) {
		log_out($opts{body});
		_write_all($s, $opts{body}, $deadline) or return undef;
	}

	return $s;
}

sub http_end {
	my ($s, %opts) = @_;

	my ($reply, $complete) = _read_until_close($s,
		$opts{timeout} || $TIMEOUT);
	close $s;

	log_in($reply);
	log_in('(timeout)') unless $complete;

	return undef if !$complete && $reply eq '';
	return $reply;
}

# http_content($response): the body, chunked encoding removed.

sub http_content {
	my ($text) = @_;

	return undef unless defined $text;
	return undef unless $text =~ /^(.*?)\x0d?\x0a\x0d?\x0a(.*)\z/s;

	my ($headers, $body) = ($1, $2);

	return $body unless $headers =~ /^Transfer-Encoding:\s*chunked/mi;

	my $content = '';
	my $last = 0;

	while ($body =~ /\G([0-9a-fA-F]+)[^\x0a]*\x0a/gc) {
		my $len = hex($1);
		if ($len == 0) {
			$last = 1;
			last;
		}
		$content .= substr($body, pos($body), $len);
		pos($body) += $len;
		$body =~ /\G\x0d?\x0a/gc;
	}

	$content .= '[no-last-chunk]' unless $last;
	return $content;
}

# proxy_request($port, $bytes, %opts): connect to 127.0.0.1:port($port)
# (or to 'host:port' if $port is such a string), send raw bytes, read
# until the server closes or the timeout.  Returns the bytes read (''
# when nothing came), undef if the connection failed.

sub proxy_request {
	my ($port, $bytes, %opts) = @_;

	my $s = _connect(_peer_opts($port), %opts) or return undef;
	my $timeout = $opts{timeout} || $TIMEOUT;

	log_out($bytes);
	_write_all($s, $bytes, time() + $timeout);

	my $reply = _read_until_close($s, $timeout);
	close $s;
	log_in($reply);

	return $reply;
}

sub _peer_opts {
	my ($port) = @_;
	return (PeerAddr => $port) if $port =~ /\D/;
	return (PeerAddr => '127.0.0.1:' . port($port));
}

sub proxy_session {
	my ($port, %opts) = @_;
	return Test::Nginx::Session->new($port, %opts);
}

###############################################################################

package Test::Nginx::Session;

# A client connection kept open across several exchanges:
#
#   my $s = proxy_session(8080);
#   $s->send("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n");
#   my $r = $s->read_response();	# 407 ...
#   $s->send(...);			# again, with Proxy-Authorization
#   $r = $s->read_response();		# 200, tunnel open
#   $s->send("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
#   $r = $s->read_response();		# from the upstream
#   $s->close();

use Time::HiRes qw/ time /;

sub new {
	my ($class, $port, %opts) = @_;

	my $s = Test::Nginx::_connect(Test::Nginx::_peer_opts($port), %opts)
		or return undef;

	return bless {
		sock => $s,
		buf => '',
		methods => [],
		eof => 0,
		timeout => $opts{timeout} || $TIMEOUT,
	}, $class;
}

sub socket { $_[0]{sock} }

sub send {
	my ($self, $bytes) = @_;

	# remember request methods to know which responses have no body
	while ($bytes =~ /(?:^|\n)([A-Z]+) \S+ HTTP\/1\.[01]\r?\n/g) {
		push @{$self->{methods}}, $1;
	}

	Test::Nginx::log_out($bytes);
	return Test::Nginx::_write_all($self->{sock}, $bytes,
		time() + $self->{timeout});
}

sub _fill {
	my ($self, $deadline) = @_;
	return 0 if $self->{eof};
	my $chunk = Test::Nginx::_read_some($self->{sock}, $deadline);
	return 0 unless defined $chunk;
	if ($chunk eq '') {
		$self->{eof} = 1;
		return 0;
	}
	$self->{buf} .= $chunk;
	return 1;
}

# read_raw($timeout): whatever arrives within $timeout seconds (default:
# the session timeout), returned as soon as something came; '' if
# nothing did, undef at EOF with nothing buffered.

sub read_raw {
	my ($self, $timeout) = @_;
	my $deadline = time() + ($timeout // $self->{timeout});

	$self->_fill($deadline) unless length $self->{buf};

	my $data = $self->{buf};
	$self->{buf} = '';
	Test::Nginx::log_in($data) if length $data;

	return undef if $data eq '' && $self->{eof};
	return $data;
}

# read_all($timeout): everything until EOF or the timeout.

sub read_all {
	my ($self, $timeout) = @_;
	my $deadline = time() + ($timeout // $self->{timeout});

	1 while $self->_fill($deadline);

	my $data = $self->{buf};
	$self->{buf} = '';
	Test::Nginx::log_in($data);
	return $data;
}

# read_response(%opts): exactly one HTTP response (interim 1xx responses
# are returned on their own): status line and headers, then a body of
# Content-Length bytes, a chunked body, or everything until close.  No
# body for HEAD, for 1xx/204/304, and for a 2xx answer to CONNECT.
# Options: method => 'HEAD' (else taken from the requests sent), timeout.
# Returns the raw response, undef if none came.

sub read_response {
	my ($self, %opts) = @_;
	my $deadline = time() + ($opts{timeout} || $self->{timeout});

	my $hend;
	for (;;) {
		$self->{buf} =~ s/\A(?:\r?\n)+// if $self->{buf} =~ /\A\r?\n/;
		if ($self->{buf} =~ /\r?\n\r?\n/) {
			$hend = $+[0];
			last;
		}
		next if $self->_fill($deadline);

		my $partial = $self->{buf};
		$self->{buf} = '';
		Test::Nginx::log_in($partial . '(no complete response)');
		return length $partial ? $partial : undef;
	}

	my $head = substr($self->{buf}, 0, $hend);
	my ($code) = $head =~ /\AHTTP\/\d\.\d\s+(\d{3})/;
	$code //= 0;

	my $method = $opts{method};
	if ($code >= 200 || $code < 100) {
		my $m = shift @{$self->{methods}};
		$method //= $m;
	}
	$method //= 'GET';

	my $len;
	if (($code >= 100 && $code < 200) || $code == 204 || $code == 304
		|| $method eq 'HEAD'
		|| ($method eq 'CONNECT' && $code >= 200 && $code < 300))
	{
		$len = 0;

	} elsif ($head =~ /^Transfer-Encoding:[^\n]*chunked/mi) {
		$len = $self->_chunked_length($hend, $deadline);

	} elsif ($head =~ /^Content-Length:\s*(\d+)/mi) {
		$len = $1;
		1 while length($self->{buf}) < $hend + $len
			&& $self->_fill($deadline);
	}

	if (!defined $len) {
		# until close
		1 while $self->_fill($deadline);
		$len = length($self->{buf}) - $hend;
	}

	$len = length($self->{buf}) - $hend
		if length($self->{buf}) < $hend + $len;

	my $r = substr($self->{buf}, 0, $hend + $len);
	substr($self->{buf}, 0, $hend + $len) = '';

	Test::Nginx::log_in($r);
	return $r;
}

sub _chunked_length {
	my ($self, $start, $deadline) = @_;
	my $pos = $start;

	for (;;) {
		my $rest = substr($self->{buf}, $pos);
		if ($rest =~ /\A([0-9a-fA-F]+)[^\n]*\n/) {
			my ($size, $hl) = (hex($1), $+[0]);
			if ($size == 0) {
				# trailers up to an empty line
				my $t = substr($rest, $hl);
				if ($t =~ /\A(?:[^\n]*[^\r\n][^\n]*\n)*?\r?\n/) {
					return $pos + $hl + $+[0] - $start;
				}
			} elsif (length($rest) >= $hl + $size + 1) {
				my $after = substr($rest, $hl + $size, 2);
				if ($after =~ /\A\r\n/) {
					$pos += $hl + $size + 2;
					next;
				} elsif ($after =~ /\A\n/) {
					$pos += $hl + $size + 1;
					next;
				} elsif (length $after == 2) {
					return undef;	# broken: until close
				}
			}
		} elsif ($rest =~ /\A[^\n]*\n/ || length($rest) > 1024) {
			return undef;
		}
		$self->_fill($deadline) or return length($self->{buf}) - $start;
	}
}

# start_ssl(%opts): TLS on the session (e.g. inside a CONNECT tunnel).

sub start_ssl {
	my ($self, %opts) = @_;
	require IO::Socket::SSL;

	die "bytes buffered before TLS\n" if length $self->{buf};

	IO::Socket::SSL->start_SSL($self->{sock},
		SSL_verify_mode => IO::Socket::SSL::SSL_VERIFY_NONE(),
		Timeout => $self->{timeout},
		%opts)
		or return undef;
	return $self;
}

sub eof {
	my ($self) = @_;
	return $self->{eof} && !length $self->{buf};
}

sub close {
	my ($self) = @_;
	CORE::close($self->{sock}) if $self->{sock};
	delete $self->{sock};
	return 1;
}

sub DESTROY {
	my ($self) = @_;
	CORE::close($self->{sock}) if $self->{sock};
}

###############################################################################

1;
