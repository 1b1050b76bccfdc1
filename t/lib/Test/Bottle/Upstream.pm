package Test::Bottle::Upstream;

# A recording HTTP/1.1 origin server for the tests ("fake upstream").
#
# Every accepted connection appends {"event":"connect",...} and every
# request appends one JSON line to <testdir>/upstream-<name>.jsonl:
#
#   {"method":"POST","target":"/x","version":"HTTP/1.1",
#    "headers":[["Host","a.test"],["X-Test","yes"]],   (order and case kept)
#    "body_b64":"...", "chunked":0|1, "trailers":[...],
#    "peer":"127.0.0.1:43210", "conn":<id>, "tls":0|1, "sni":"..."}
#
# A request line that does not parse appends {"event":"bad_request",
# "raw_b64":...} and the connection is closed after a 400.
#
# Answers: 200, Content-Type: text/plain, X-Upstream: <name>, body
# "upstream <name> ok\n", keep-alive as HTTP/1.1 says.  Special targets:
#   /status/NNN            status NNN
#   /set-cookie?a=b&c=d    one Set-Cookie per parameter
#   /sse?n=N&gap_ms=M      N server-sent events, M ms apart, chunked
#   /delay?ms=M            answer after M ms
#   /bytes?n=N[&tail=T]    N bytes of "x" as the body, then T
#   /say?text=T[&ce=gzip]  T as the body, gzip-compressed with ce=gzip
#   /drop                  close the connection without an answer
#   /echo                  the request's headers as the body ("name: value"
#                          lines) and its Authorization in X-Echo-Auth
#
# One process per connection (forked by the accepting process); the
# jsonl lines are written with a single syswrite on an O_APPEND file
# each, so they never interleave.

use warnings;
use strict;

use Fcntl qw/ O_WRONLY O_APPEND O_CREAT /;
use IO::Compress::Gzip qw//;
use IO::Select;
use IO::Socket::IP;
use JSON::PP qw//;
use MIME::Base64 qw/ encode_base64 /;
use POSIX qw/ WNOHANG /;
use Time::HiRes qw/ time sleep /;

my $JSON = JSON::PP->new->canonical->ascii;

our %REASON = (
	100 => 'Continue', 200 => 'OK', 201 => 'Created',
	202 => 'Accepted', 204 => 'No Content', 206 => 'Partial Content',
	301 => 'Moved Permanently', 302 => 'Found', 304 => 'Not Modified',
	307 => 'Temporary Redirect', 308 => 'Permanent Redirect',
	400 => 'Bad Request', 401 => 'Unauthorized', 403 => 'Forbidden',
	404 => 'Not Found', 405 => 'Method Not Allowed',
	407 => 'Proxy Authentication Required', 408 => 'Request Timeout',
	413 => 'Payload Too Large', 429 => 'Too Many Requests',
	500 => 'Internal Server Error', 502 => 'Bad Gateway',
	503 => 'Service Unavailable', 504 => 'Gateway Timeout',
);

# start($t, %opts): bind now (so the server is ready when this returns),
# serve in a daemon.  Returns { name, addr, port, log }.

sub start {
	my ($t, %o) = @_;

	my $name = $o{name} // 'upstream';
	die "bad upstream name '$name'\n" unless $name =~ /^[\w.-]+$/;
	my $addr = $o{addr} // '127.0.0.1';
	my $port = $o{port} // die "fake_upstream: port required\n";

	my $log = $t->testdir() . "/upstream-$name.jsonl";

	if ($o{tls}) {
		require IO::Socket::SSL;
		die "fake_upstream: tls needs cert and key\n"
			unless $o{cert} && $o{key};
	}

	my $listen = IO::Socket::IP->new(
		LocalHost => $addr,
		LocalPort => $port,
		Proto => 'tcp',
		Listen => 128,
		ReuseAddr => 1,
	) or die "fake_upstream $name: can't listen on $addr:$port: $@\n";

	my %conf = (%o, name => $name, addr => $addr, port => $port,
		log => $log);

	$t->run_daemon(\&_serve, $listen, \%conf);
	close $listen;

	return { name => $name, addr => $addr, port => $port, log => $log,
		pid => $t->last_daemon_pid() };
}

sub _append {
	my ($log, $rec) = @_;
	my $line = $JSON->encode($rec) . "\n";

	sysopen my $fh, $log, O_WRONLY | O_APPEND | O_CREAT, 0644
		or die "can't open $log: $!\n";
	my $n = syswrite $fh, $line;
	die "short write to $log\n" unless defined $n && $n == length $line;
	close $fh;
}

sub _serve {
	my ($listen, $conf) = @_;
	my %kids;

	$SIG{PIPE} = 'IGNORE';

	my $reap = sub {
		while ((my $p = waitpid(-1, WNOHANG)) > 0) {
			delete $kids{$p};
		}
	};

	$SIG{CHLD} = $reap;
	$SIG{TERM} = $SIG{INT} = sub {
		$SIG{CHLD} = 'DEFAULT';
		kill 'TERM', keys %kids;
		my $deadline = time() + 2;
		while (%kids && time() < $deadline) {
			$reap->();
			sleep 0.01;
		}
		kill 'KILL', keys %kids;
		$reap->() if %kids;
		POSIX::_exit(0);
	};

	for (;;) {
		my $c = $listen->accept();
		if (!$c) {
			next if $!{EINTR} || $!{ECONNABORTED};
			die "accept: $!\n";
		}

		my $pid = fork();
		if (!defined $pid) {
			close $c;
			next;
		}

		if ($pid == 0) {
			$SIG{CHLD} = $SIG{TERM} = $SIG{INT} = 'DEFAULT';
			close $listen;
			eval { _connection($c, $conf); };
			print STDERR "fake_upstream $conf->{name}: $@" if $@;
			POSIX::_exit(0);
		}

		$kids{$pid} = 1;
		close $c;
	}
}

# buffered reader on the client socket

sub _fill {
	my ($st) = @_;
	return 0 if $st->{eof};
	my $buf;
	my $n = sysread($st->{sock}, $buf, 65536);
	if (!$n) {
		$st->{eof} = 1;
		return 0;
	}
	$st->{buf} .= $buf;
	return 1;
}

sub _read_line {
	my ($st) = @_;
	for (;;) {
		if ($st->{buf} =~ s/\A([^\n]*)\n//) {
			(my $l = $1) =~ s/\r\z//;
			return $l;
		}
		return undef if length($st->{buf}) > 65536;
		_fill($st) or return undef;
	}
}

sub _read_n {
	my ($st, $n) = @_;
	while (length($st->{buf}) < $n) {
		_fill($st) or return undef;
	}
	return substr($st->{buf}, 0, $n, '');
}

sub _connection {
	my ($c, $conf) = @_;
	my $log = $conf->{log};

	my $host = $c->peerhost();
	my $peer = ($host =~ /:/ ? "[$host]" : $host) . ':' . $c->peerport();
	my %conn = (conn => $$, peer => $peer, tls => 0);

	if ($conf->{tls}) {
		$conn{tls} = 1;
		my $ok = IO::Socket::SSL->start_SSL($c,
			SSL_server => 1,
			SSL_cert_file => $conf->{cert},
			SSL_key_file => $conf->{key},
			($conf->{alpn} ? (SSL_alpn_protocols => $conf->{alpn})
				: ()),
			Timeout => 10,
		);
		if (!$ok) {
			no warnings 'once';
			_append($log, { event => 'connect', %conn,
				tls_error => "$IO::Socket::SSL::SSL_ERROR" });
			return;
		}
		my $sni = $c->get_servername();
		$conn{sni} = $sni if defined $sni;
		my $alpn = $c->can('alpn_selected') ? $c->alpn_selected() : undef;
		$conn{alpn} = $alpn if defined $alpn;
	}

	_append($log, { event => 'connect', %conn });

	my $st = { sock => $c, buf => '', eof => 0 };

	for (;;) {
		# request line, skipping empty lines before it
		my $line;
		do {
			$line = _read_line($st);
			if (!defined $line) {
				_bad($log, \%conn, $st->{buf}) if $st->{buf} =~ /\S/;
				return;
			}
		} while ($line eq '');

		my ($method, $target, $version) =
			$line =~ /^([!#\$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) (HTTP\/\d\.\d)$/;

		if (!defined $method) {
			_bad($log, \%conn, "$line\n$st->{buf}");
			_respond($c, 400, [], "bad request\n", 0, $conf);
			return;
		}

		my @headers;
		for (;;) {
			my $h = _read_line($st);
			return unless defined $h;
			last if $h eq '';
			if ($h =~ /^([^:]+):[ \t]*(.*?)[ \t]*$/) {
				push @headers, [ $1, $2 ];
			} else {
				push @headers, [ $h, undef ];
			}
		}

		my %req = (%conn, method => $method, target => $target,
			version => $version, headers => \@headers, chunked => 0);

		my $te = _hval(\@headers, 'Transfer-Encoding');
		my $cl = _hval(\@headers, 'Content-Length');
		my $expect = _hval(\@headers, 'Expect');

		if (defined $expect && lc($expect) eq '100-continue'
			&& $version eq 'HTTP/1.1')
		{
			syswrite $c, "HTTP/1.1 100 Continue\r\n\r\n";
		}

		my $body = '';
		if (defined $te && $te =~ /chunked\s*$/i) {
			$req{chunked} = 1;
			my @trailers;
			for (;;) {
				my $sl = _read_line($st);
				return _incomplete($log, \%req, $body)
					unless defined $sl;
				my ($size) = $sl =~ /^\s*([0-9a-fA-F]+)/;
				return _incomplete($log, \%req, $body)
					unless defined $size;
				$size = hex $size;
				if ($size == 0) {
					for (;;) {
						my $tl = _read_line($st);
						last if !defined $tl || $tl eq '';
						push @trailers, $tl =~ /^([^:]+):\s*(.*?)\s*$/
							? [ $1, $2 ] : [ $tl, undef ];
					}
					last;
				}
				my $data = _read_n($st, $size);
				return _incomplete($log, \%req, $body)
					unless defined $data;
				$body .= $data;
				_read_line($st);	# CRLF after the data
			}
			$req{trailers} = \@trailers if @trailers;

		} elsif (defined $cl && $cl =~ /^\d+$/) {
			my $data = _read_n($st, $cl);
			return _incomplete($log, \%req, $st->{buf})
				unless defined $data;
			$body = $data;
		}

		$req{body_b64} = encode_base64($body, '');

		_append($log, \%req);

		my $keep = _keepalive($version, \@headers);
		_answer($c, \%req, $keep, $conf) or return;
		return unless $keep;
	}
}

sub _bad {
	my ($log, $conn, $raw) = @_;
	_append($log, { event => 'bad_request', %$conn,
		raw_b64 => encode_base64($raw, '') });
}

sub _incomplete {
	my ($log, $req, $body) = @_;
	_append($log, { %$req, event => 'incomplete_request',
		body_b64 => encode_base64($body // '', '') });
	return;
}

sub _hval {
	my ($headers, $name) = @_;
	for my $h (@$headers) {
		return $h->[1] if lc($h->[0]) eq lc($name);
	}
	return undef;
}

sub _keepalive {
	my ($version, $headers) = @_;
	my $conn = lc(join ',', map { $_->[1] // '' }
		grep { lc($_->[0]) eq 'connection' } @$headers);
	my %tok = map { my $x = $_; $x =~ s/^\s+|\s+$//g; ($x, 1) }
		split /,/, $conn;

	return 0 if $tok{close};
	return 1 if $version eq 'HTTP/1.1';
	return $tok{'keep-alive'} ? 1 : 0;
}

sub _query {
	my ($q) = @_;
	my @p;
	for my $kv (split /&/, $q // '') {
		next unless length $kv;
		my ($k, $v) = split /=/, $kv, 2;
		for ($k, $v) {
			next unless defined;
			s/\+/ /g;
			s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge;
		}
		push @p, [ $k, $v // '' ];
	}
	return @p;
}

sub _answer {
	my ($c, $req, $keep, $conf) = @_;
	my $name = $conf->{name};

	my $target = $req->{target};
	$target =~ s!^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*!!;
	my ($path, $q) = $target =~ /^([^?#]*)(?:\?([^#]*))?/;
	$path = '/' if !defined $path || $path eq '';
	my @q = _query($q);
	my %q = map { ($_->[0], $_->[1]) } @q;

	my $status = 200;
	my @h;
	my $body = "upstream $name ok\n";

	if ($path =~ m!^/status/(\d{3})$!) {
		$status = $1;

	} elsif ($path eq '/set-cookie') {
		push @h, map { [ 'Set-Cookie', "$_->[0]=$_->[1]" ] } @q;

	} elsif ($path eq '/delay') {
		sleep(($q{ms} // 1000) / 1000);

	} elsif ($path eq '/bytes') {
		$body = ('x' x ($q{n} // 0)) . ($q{tail} // '');

	} elsif ($path eq '/say') {
		$body = $q{text} // '';
		if (($q{ce} // '') eq 'gzip') {
			my $z;
			IO::Compress::Gzip::gzip(\$body => \$z);
			$body = $z;
			push @h, [ 'Content-Encoding', 'gzip' ];
		}

	} elsif ($path eq '/drop') {
		return 0;

	} elsif ($path eq '/echo') {
		$body = join '', map { "$_->[0]: $_->[1]\n" } @{$req->{headers}};
		push @h, [ 'X-Echo-Auth', _hval($req->{headers}, 'authorization') // '' ];

	} elsif ($path eq '/sse') {
		return _sse($c, $req, $keep, $conf, $q{n} // 3, $q{gap_ms} // 100);
	}

	$body = '' if $req->{method} eq 'HEAD';
	return _respond($c, $status, \@h, $body, $keep, $conf,
		$req->{method} eq 'HEAD' ? length("upstream $name ok\n") : undef);
}

sub _respond {
	my ($c, $status, $headers, $body, $keep, $conf, $head_len) = @_;

	my $r = "HTTP/1.1 $status " . ($REASON{$status} // 'Status') . "\r\n";
	$r .= "Content-Type: text/plain\r\n";
	$r .= "X-Upstream: $conf->{name}\r\n";
	$r .= "$_->[0]: $_->[1]\r\n" for @$headers;

	my $nobody = $status < 200 || $status == 204 || $status == 304;
	$r .= 'Content-Length: ' . ($head_len // length $body) . "\r\n"
		unless $nobody;
	$r .= "Connection: close\r\n" unless $keep;
	$r .= "\r\n";
	$r .= $body unless $nobody;

	return _send($c, $r);
}

sub _send {
	my ($c, $data) = @_;
	my $off = 0;
	while ($off < length $data) {
		my $n = syswrite($c, $data, length($data) - $off, $off);
		return 0 unless $n;
		$off += $n;
	}
	return 1;
}

sub _sse {
	my ($c, $req, $keep, $conf, $n, $gap) = @_;

	my $r = "HTTP/1.1 200 OK\r\n"
		. "Content-Type: text/event-stream\r\n"
		. "Cache-Control: no-cache\r\n"
		. "X-Upstream: $conf->{name}\r\n"
		. "Transfer-Encoding: chunked\r\n"
		. ($keep ? '' : "Connection: close\r\n")
		. "\r\n";
	_send($c, $r) or return 0;

	for my $i (1 .. $n) {
		sleep($gap / 1000) if $i > 1 && $gap;
		my $ev = "id: $i\ndata: event $i\n\n";
		_send($c, sprintf("%x\r\n%s\r\n", length $ev, $ev)) or return 0;
	}

	return _send($c, "0\r\n\r\n");
}

1;
