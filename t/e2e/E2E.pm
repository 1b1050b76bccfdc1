package E2E;

# Helpers of the escape suite (t/escape.t) and of t/e2e/topology: the
# topology's state, commands and sockets inside its network namespaces,
# what each host of the fake internet received.  See
# docs/escape-attempts.md.

use warnings;
use strict;

use Cwd qw//;
use File::Basename qw/ dirname /;
use File::Temp qw/ tempfile /;
use IO::Select;
use IO::Socket::INET;
use JSON::PP qw//;
use MIME::Base64 qw/ decode_base64 /;
use POSIX qw//;

use Test::Bottle qw//;
use Time::HiRes qw/ time sleep /;

our $DIR = dirname(Cwd::abs_path(__FILE__));		# t/e2e
our $TOPOLOGY = "$DIR/topology";

my $CLONE_NEWNET = 0x40000000;

###############################################################################
# the topology's state (written by "topology up")

sub load {
	my ($class, $dir) = @_;
	my $f = "$dir/topology.json";
	open my $fh, '<', $f or die "no topology in $dir ($f: $!)\n";
	local $/;
	my $s = JSON::PP->new->utf8->decode(<$fh>);
	$s->{dir} = $dir;
	return bless $s, $class;
}

sub dir { $_[0]{dir} }

# the full name of a namespace: agent-a, agent-b, gateway, internet

sub ns {
	my ($self, $name) = @_;
	my $full = $self->{ns}{$name} // (grep { $_ eq $name }
		values %{$self->{ns}})[0];
	die "no namespace '$name'\n" unless defined $full;
	return $full;
}

# the environment an agent runs with: its proxy (with its own token) and
# the gateway CA, each the way the client is normally told

sub agent_env {
	my ($self, $agent) = @_;
	return %{$self->{agents}{$agent}{env} || {}};
}

###############################################################################
# setns(2): run Perl code with this process inside a namespace.  Sockets
# made there stay there: a session opened by in_ns('agent-a', ...) is an
# agent-a connection for its whole life.

sub _setns {
	my ($fh) = @_;
	require 'syscall.ph';
	syscall(&SYS_setns, fileno($fh), $CLONE_NEWNET) == 0
		or die "setns: $!\n";
}

our $HOME_NS;		# this process's own namespace, while in another

sub in_ns {
	my ($self, $name, $code) = @_;
	my $full = $self->ns($name);

	open my $home, '<', '/proc/self/ns/net' or die "own netns: $!\n";
	open my $there, '<', "/run/netns/$full" or die "netns $full: $!\n";

	local $HOME_NS = $home;
	_setns($there);
	my @r = eval { wantarray ? $code->() : scalar $code->() };
	my $err = $@;
	_setns($home);
	die $err if $err;

	return wantarray ? @r : $r[0];
}

# back home, whatever was running (for a signal handler)

sub home_ns {
	_setns($HOME_NS) if $HOME_NS;
	$HOME_NS = undef;
}

###############################################################################
# commands inside a namespace

our $CHILD;		# the command run() waits for, if any

# run($ns, [cmd ...], timeout => s, stdin => bytes, env => {...},
#     agent_env => 1): (stdout and stderr, exit code).  In an agent
# namespace the command gets that agent's environment only (env -i),
# unless agent_env => 0.

sub run {
	my ($self, $name, $cmd, %o) = @_;
	my $full = $self->ns($name);
	my $timeout = $o{timeout} // 20;

	my @env;
	if ($name =~ /^agent-/ && ($o{agent_env} // 1)) {
		my %e = ($self->agent_env($name), %{$o{env} || {}});
		@env = ('env', '-i', map { "$_=$e{$_}" } sort keys %e);
	} elsif ($o{env}) {
		@env = ('env', map { "$_=$o{env}{$_}" } sort keys %{$o{env}});
	}

	my $in;
	if (defined $o{stdin}) {
		(my $fh, $in) = tempfile(UNLINK => 1);
		binmode $fh;
		print $fh $o{stdin};
		close $fh;
	}

	my $pid = open(my $out, '-|');
	die "fork: $!\n" unless defined $pid;
	local $CHILD = $pid;
	if ($pid == 0) {
		open STDIN, '<', $in // '/dev/null';
		open STDERR, '>&', \*STDOUT;
		{ exec('ip', 'netns', 'exec', $full, @env,
			'timeout', '-k', '2', $timeout, @$cmd); }
		POSIX::_exit(127);
	}
	binmode $out;
	local $/;
	my $text = <$out> // '';
	close $out;
	my $rc = $? >> 8;

	if ($ENV{TEST_NGINX_VERBOSE}) {
		(my $c = "[$name] @$cmd => $rc\n$text") =~ s/^/# /mg;
		print STDERR $c;
	}

	return wantarray ? ($text, $rc) : $text;
}

# curl as the agent runs it: its environment (proxy, CA), no ~/.curlrc;
# (the response with its headers and curl's error message, exit code)

sub curl {
	my ($self, $agent, @args) = @_;
	my ($out, $rc) = $self->run($agent, [ 'curl', '-q', '-s', '-S', '-i',
		'--stderr', '-', '--max-time', '10', @args ]);
	return wantarray ? ($out, $rc) : $out;
}

###############################################################################
# sockets and DNS from inside a namespace

# tcp($ns, 'addr:port', timeout): a connected socket, or undef and the
# reason (connect refused, timed out, unreachable)

sub tcp {
	my ($self, $name, $peer, $timeout) = @_;
	return $self->in_ns($name, sub {
		my $s = IO::Socket::INET->new(PeerAddr => $peer, Proto => 'tcp',
			Timeout => $timeout // 2);
		return $s ? ($s, 'connected') : (undef, "$!" || "$@");
	});
}

# dns_query($server, $name, $type, timeout => s, tcp => 0, port => 53):
# one query; undef on timeout, else { rcode, rcode_name, answers }.
# Made in whatever namespace the process is in (see in_ns).

sub dns_query {
	my ($server, $name, $type, %o) = @_;
	my $port = $o{port} // 53;

	my ($id, $q) = Test::Bottle::dns_packet($name, $type);

	my $deadline = time() + ($o{timeout} // 2);
	my $r;

	if ($o{tcp}) {
		my $s = IO::Socket::INET->new(PeerAddr => "$server:$port",
			Proto => 'tcp', Timeout => $o{timeout} // 2) or return undef;
		syswrite $s, pack('n', length $q) . $q;
		my $buf = '';
		while (time() < $deadline) {
			IO::Select->new($s)->can_read($deadline - time()) or last;
			sysread($s, my $chunk, 4096) or last;
			$buf .= $chunk;
			last if length $buf >= 2
				&& length $buf >= 2 + unpack('n', $buf);
		}
		return undef unless length $buf > 2;
		$r = substr($buf, 2);
	} else {
		my $s = IO::Socket::INET->new(PeerAddr => "$server:$port",
			Proto => 'udp') or return undef;
		$s->send($q);
		while (time() < $deadline) {
			IO::Select->new($s)->can_read($deadline - time()) or next;
			defined $s->recv(my $buf, 4096) or return undef;
			if (length $buf >= 12 && unpack('n', $buf) == $id) {
				$r = $buf;
				last;
			}
		}
	}
	return undef unless defined $r;

	return Test::Bottle::dns_parse($r);
}

###############################################################################
# what the hosts received

sub _jsonl {
	my ($path) = @_;
	open my $fh, '<', $path or return [];
	binmode $fh;
	my $json = JSON::PP->new->utf8;
	my @r;
	while (my $line = <$fh>) {
		next unless $line =~ /\n\z/ && $line =~ /\S/;
		push @r, $json->decode($line);
	}
	return \@r;
}

# every record of a server (connects, requests, bad requests)

sub events {
	my ($self, $name) = @_;
	return _jsonl("$self->{dir}/upstream-$name.jsonl");
}

sub requests {
	my ($self, $name) = @_;
	return [ map { $_->{body} = decode_base64($_->{body_b64} // ''); $_ }
		grep { !defined $_->{event} } @{$self->events($name)} ];
}

sub connects {
	my ($self, $name) = @_;
	return scalar grep { ($_->{event} // '') eq 'connect' }
		@{$self->events($name)};
}

# the queries a DNS server of the topology was asked, as
# "A name from 192.0.2.2"

sub dns_log {
	my ($self, $name) = @_;
	my $f = "$self->{dir}/dns-$name.log";
	open my $fh, '<', $f or return ();
	my @q;
	while (<$fh>) {
		push @q, "$1 $2 from $3"
			if /\bquery\[(\w+)\] (\S+) from (\S+)/;
	}
	return @q;
}

# everything every host of the fake internet (and agent A's service)
# received so far: { server => number of records, 'dns-x' => queries }

sub snapshot {
	my ($self) = @_;
	my %s;
	for my $n (@{$self->{servers}}) {
		$s{$n} = scalar @{$self->events($n)};
	}
	for my $n (@{$self->{resolvers}}) {
		$s{"dns-$n"} = scalar(my @q = $self->dns_log($n));
	}
	return \%s;
}

# what changed since a snapshot: { name => [ new records ] }, only the
# names listed (default: all); waits a moment first, for anything still
# on its way

sub received {
	my ($self, $snap, @names) = @_;
	sleep 0.2;
	@names = sort keys %$snap unless @names;
	my %new;
	for my $n (@names) {
		die "received: unknown host '$n'\n" unless exists $snap->{$n};
		my @all = $n =~ /^dns-(.*)$/ ? $self->dns_log($1)
			: @{$self->events($n)};
		my @got = @all[$snap->{$n} .. $#all];
		$new{$n} = \@got if @got;
	}
	return \%new;
}

###############################################################################
# the gateway's logs

sub gw_log {
	my ($self, $name) = @_;
	my $f = "$self->{gateway}{dir}/logs/$name";

	# the access logs are buffered: reopening them writes what is pending
	if ($name ne 'error.log' && (my $pid = $self->{gateway}{pid})) {
		kill 'USR1', $pid;
		select(undef, undef, undef, 0.3);
	}

	open my $fh, '<', $f or return '';
	local $/;
	return <$fh> // '';
}

sub gw_mark {
	my ($self) = @_;
	return -s "$self->{gateway}{dir}/logs/error.log" || 0;
}

# the refusal lines written since a mark, waiting a moment for the last
# one (a line is written when the request ends)

sub refusals {
	my ($self, $mark, $re) = @_;
	my $deadline = time() + 2;
	my @l;
	for (;;) {
		@l = substr($self->gw_log('error.log'), $mark)
			=~ /bottle refused: (.*)$/mg;
		return @l if !$re || grep { $_ =~ $re } @l;
		last if time() > $deadline;
		sleep 0.05;
	}
	return @l;
}

1;
