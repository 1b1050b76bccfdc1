package Test::Bottle::Forge;

# A real git forge on loopback, for one test ("fake forge"): a second
# nginx of the test's own (no bottle module) in front of `git
# http-backend`, run by fcgiwrap on a unix socket, both daemons of the
# test.  GitHub-like paths, token auth, push enabled, and a record of
# every request it received:
#
#   <testdir>/<name>/<owner>/<repo>.git   the bare repositories
#   <testdir>/<name>/requests.jsonl       one JSON line per request
#   <testdir>/<name>-nginx/               nginx's prefix: nginx.conf,
#                                         error.log, fcgiwrap.sock ...
#
# Served at http(s)://127.0.0.1:PORT/<owner>/<repo>.git (also without
# ".git").  Each git request first goes through an auth_request to
# forge-auth.pl (the same fcgiwrap), which compares the Authorization
# header with the token in <name>-nginx/auth.conf; its verdict ("ok",
# "missing", "wrong") is logged with the request.  A small Gitea-like API under
# /api/v1/ (forge-api.pl, the same fcgiwrap): GET /api/v1/user, POST
# /api/v1/user/repos and /api/v1/orgs/<org>/repos, token-checked, its
# verdict logged the same way.  See docs/testing.md, "The fake forge".

use warnings;
use strict;

use File::Path qw/ make_path /;
use POSIX qw/ WNOHANG /;
use Time::HiRes qw/ time sleep /;

use Test::Nginx qw//;

our $FCGIWRAP = $ENV{TEST_FCGIWRAP_BINARY} // '/usr/sbin/fcgiwrap';
our $GIT = $ENV{TEST_GIT_BINARY} // 'git';

my $SEED_TIME = 1700000000;	# commit dates of seeded repos: fixed ids

###############################################################################

sub _backend {
	my $exec = `$GIT --exec-path 2>/dev/null`;
	chomp $exec;
	my $b = "$exec/git-http-backend";
	die "forge: no git-http-backend ($b)\n" unless -x $b;
	return $b;
}

# The forge called $name (default 'forge'), started by start().

sub get {
	my ($t, $name) = @_;
	$name = $name->{name} if ref $name;
	$name //= 'forge';
	return $t->{_bottle_forge}{$name}
		|| die "forge '$name' not started (forge_start)\n";
}

# start($t, port => P, name => 'forge', token => 'forge-token',
#       user => 'forge-user' (the login the API gives the token),
#       public_read => 0|1, tls => 0|1, cert => path, key => path,
#       hosts => [names], workers => 4)
# Returns { name, port, url, token, root, dir, log, tls, ca, cert, key,
# pid, fcgi_pid } once nginx listens.

sub start {
	my ($t, %o) = @_;
	my $name = $o{name} // 'forge';

	die "forge_start: port required\n" unless defined $o{port};
	die "forge_start: forge '$name' already started\n"
		if $t->{_bottle_forge}{$name};
	die "forge_start: no $FCGIWRAP (scripts/install-deps.sh)\n"
		unless -x $FCGIWRAP;
	die "forge_start: bad name '$name'\n" unless $name =~ /^[\w.-]+$/;

	my $d = $t->testdir();
	my $f = {
		name => $name,
		port => Test::Nginx::port($o{port}),
		token => $o{token} // 'forge-token',
		user => $o{user} // 'forge-user',
		public_read => $o{public_read} ? 1 : 0,
		orgs => $o{orgs} // {},
		kind => $o{kind} // '',
		tls => $o{tls} ? 1 : 0,
		root => "$d/$name",
		dir => "$d/$name-nginx",
		log => "$d/$name/requests.jsonl",
		workers => $o{workers} // 4,
		status_queries => 0,
	};
	$f->{sock} = "$f->{dir}/fcgiwrap.sock";

	make_path($f->{root}, $f->{dir});
	_write_auth($f);
	_write_auth_script($f);
	_write_api_script($f);

	if ($f->{tls}) {
		if ($o{cert}) {
			@$f{qw/ cert key /} = @o{qw/ cert key /};
		} else {
			require Test::Bottle;
			my $ca = Test::Bottle::gen_ca($t, "$name-ca");
			my $c = Test::Bottle::gen_cert($t, $ca, "$name-cert",
				'127.0.0.1', 'localhost', @{$o{hosts} || []});
			@$f{qw/ ca cert key /} = ($ca->{cert}, $c->{chain},
				$c->{key});
		}
	}

	_start_fcgiwrap($t, $f);

	# another program took the port since port() handed it out: a new
	# one (and the test's configs written again), while the test's
	# nginx does not run yet; as dns_start does
	for (my $try = 1; ; $try++) {
		my $err = _start_nginx($t, $f);
		last unless defined $err;

		my $new;
		$new = Test::Nginx::renew_port($f->{port})
			if $err =~ /Address already in use/ && $try < 4
			&& !$t->{_started};
		die $err unless defined $new;
		$f->{port} = $new;
	}

	$f->{url} = ($f->{tls} ? 'https' : 'http') . "://127.0.0.1:$f->{port}";
	$t->{_bottle_forge}{$name} = $f;

	# the forge's nginx error log counts for the "no alerts" test
	push @{$t->{_logs}}, "$f->{dir}/error.log";

	return $f;
}

# auth.conf, read by forge-auth.pl on every request: token, public_read.

sub _write_auth {
	my ($f) = @_;
	die "forge: the token must be printable, no spaces\n"
		unless $f->{token} =~ /^[\x21-\x7e]*$/;

	my $tmp = "$f->{dir}/auth.conf.tmp";
	open my $fh, '>', $tmp or die "$tmp: $!\n";
	print $fh "token=$f->{token}\npublic_read=$f->{public_read}\n"
		. "user=$f->{user}\n"
		. 'orgs=' . join(',', map { "$_:" . ($f->{orgs}{$_} ? 1 : 0) }
			sort keys %{$f->{orgs}}) . "\n"
		. "kind=$f->{kind}\n";
	close $fh or die "$tmp: $!\n";
	rename $tmp, "$f->{dir}/auth.conf" or die "auth.conf: $!\n";
}

# configure($t, forge => name, token => ..., public_read => 0|1): change
# the running forge's auth (a rotated token, a repo made public).

sub configure {
	my ($t, %o) = @_;
	my $f = get($t, $o{forge});
	$f->{token} = $o{token} if exists $o{token};
	$f->{public_read} = $o{public_read} ? 1 : 0 if exists $o{public_read};
	$f->{orgs} = $o{orgs} if exists $o{orgs};
	$f->{kind} = $o{kind} // '' if exists $o{kind};
	_write_auth($f);
	return $f;
}

# The auth_request handler, a CGI run by fcgiwrap: 200 or 401 (with
# WWW-Authenticate: Basic), the verdict in X-Forge-Auth.  Accepted, as
# GitHub does: Basic with the token as password (any user, e.g.
# x-access-token), Basic with the token as user and an empty or
# "x-oauth-basic" password, "Bearer <token>", "token <token>".

sub _write_auth_script {
	my ($f) = @_;
	my $path = "$f->{dir}/forge-auth.pl";

	open my $fh, '>', $path or die "$path: $!\n";
	print $fh "#!$^X\n", <<'EOF';
# fake forge: auth check for nginx's auth_request (Test::Bottle::Forge)
use strict;
use warnings;
use MIME::Base64 qw/ decode_base64 /;

my %c;
if (open my $fh, '<', $ENV{FORGE_AUTH_FILE} // '') {
	while (<$fh>) {
		$c{$1} = $2 if /^(\w+)=(.*?)\r?$/;
	}
}
my $token = $c{token} // '';
my $h = $ENV{HTTP_AUTHORIZATION} // '';
my $write = ($ENV{FORGE_URI} // '') =~ m{[/=]git-receive-pack(?:$|[?&/])};

my $v = 'wrong';
if ($h eq '') {
	$v = 'missing';
} elsif ($h =~ /^Basic\s+([A-Za-z0-9+\/=]+)\s*$/i) {
	my ($u, $p) = split /:/, decode_base64($1), 2;
	$p //= '';
	$v = 'ok' if length $token && ($p eq $token
		|| ($u eq $token && ($p eq '' || $p eq 'x-oauth-basic')));
} elsif ($h =~ /^(?:Bearer|token)\s+(\S+)\s*$/i) {
	$v = 'ok' if length $token && $1 eq $token;
}

if ($v eq 'ok' || ($v eq 'missing' && $c{public_read} && !$write)) {
	print "Status: 200 OK\r\nX-Forge-Auth: $v\r\n\r\n";
} else {
	print "Status: 401 Unauthorized\r\n"
		. "WWW-Authenticate: Basic realm=\"forge\"\r\n"
		. "X-Forge-Auth: $v\r\n\r\n";
}
EOF
	close $fh or die "$path: $!\n";
	chmod 0755, $path;
}

# The API, a CGI run by fcgiwrap (Gitea's paths and answers under /api/v1,
# GitHub Enterprise's under /api/v3, trimmed; <api> is either):
#   GET  <api>/user                    200 {"login", "id"}
#   POST <api>/user/repos              {"name", "private"}: the bare repo
#   POST <api>/orgs/<org>/repos        <root>/<user or org>/<name>.git made,
#                                      201 {"name", "full_name", "private",
#                                      "html_url", "clone_url"}; 409 if it
#                                      exists, 422 for a bad name
#   GET  <api>/repos/<owner>/<repo>    200 {"name", "full_name"} if
#                                      <root>/<owner>/<repo>.git is there
#                                      (in any case), else 404
#   GET  /api/v1/users/<user>/orgs/<org>/permissions
#                                      Gitea: 200 {"can_create_repository"}
#                                      for an org of start()'s orgs (the
#                                      token's user only), else 404
#   GET  /api/v3/user/memberships/orgs/<org>
#                                      GitHub: 200 {"state": "active",
#                                      "role": "admin" if the org's value is
#                                      true, else "member"}, 404 if no org
#   GET  /api/v3/orgs/<org>            200 {"login",
#                                      "members_can_create_repositories":
#                                      false}, 404 if no org
#   GET  /api/v1/version               Gitea's: 200 {"version"}, no token
#   GET  /api/v3/meta                  GitHub's: 200
#                                      {"installed_version", ...}, no token
#                                      (start(kind => 'gitea'|'github'|
#                                      'none'): only that one, or neither)
# Every other call needs the token (as forge-auth.pl takes it): else 401
# {"message"}.  X-Forge-Auth carries the verdict to the request's log line.
# start(orgs => { name => 1|0 }): the organizations the token's user is in,
# 1 where it may create repos.

sub _write_api_script {
	my ($f) = @_;
	my $path = "$f->{dir}/forge-api.pl";

	open my $fh, '>', $path or die "$path: $!\n";
	print $fh "#!$^X\n", <<'EOF';
# fake forge: a Gitea-like API (Test::Bottle::Forge)
use strict;
use warnings;
use JSON::PP;
use MIME::Base64 qw/ decode_base64 /;

my %c;
if (open my $fh, '<', $ENV{FORGE_AUTH_FILE} // '') {
	while (<$fh>) {
		$c{$1} = $2 if /^(\w+)=(.*?)\r?$/;
	}
}
my $token = $c{token} // '';
my $user = $c{user} // 'forge-user';
my $h = $ENV{HTTP_AUTHORIZATION} // '';
my $method = $ENV{REQUEST_METHOD} // 'GET';
my ($api, $uri) = ($ENV{FORGE_URI} // '') =~ m{^/api/(v1|v3)(/[^?]*)};
$api //= '';
$uri //= '';
my %orgs = map { split /:/ } grep { length } split /,/, $c{orgs} // '';

sub answer {
	my ($status, $o, $v) = @_;
	my $body = JSON::PP->new->canonical->encode($o);
	print "Status: $status\r\nContent-Type: application/json\r\n"
		. "X-Forge-Auth: $v\r\n\r\n$body";
	exit 0;
}

# what identifies the kind of forge, asked without a token
my $kind = $c{kind} // '';
if ($method eq 'GET' && $api eq 'v1' && $uri eq '/version'
	&& $kind =~ /^(?:|gitea)$/)
{
	answer('200 OK', { version => '1.21.11' }, 'none');
}
if ($method eq 'GET' && $api eq 'v3' && $uri eq '/meta'
	&& $kind =~ /^(?:|github)$/)
{
	answer('200 OK', { installed_version => '3.12.0',
		verifiable_password_authentication => JSON::PP::true }, 'none');
}

my $v = 'wrong';
if ($h eq '') {
	$v = 'missing';
} elsif ($h =~ /^Basic\s+([A-Za-z0-9+\/=]+)\s*$/i) {
	my ($u, $p) = split /:/, decode_base64($1), 2;
	$p //= '';
	$v = 'ok' if length $token && ($p eq $token
		|| ($u eq $token && ($p eq '' || $p eq 'x-oauth-basic')));
} elsif ($h =~ /^(?:Bearer|token)\s+(\S+)\s*$/i) {
	$v = 'ok' if length $token && $1 eq $token;
}

answer('401 Unauthorized', { message => $v eq 'missing'
	? 'token is required' : 'Bad credentials' }, $v) if $v ne 'ok';

if ($method eq 'GET' && $uri eq '/user') {
	answer('200 OK', { login => $user, id => 1 }, $v);
}

if ($method eq 'GET' && $uri =~ m{^/repos/([\w.-]+)/([\w.-]+)$}) {
	my ($o, $r) = ($1, $2);
	# names compared as the forges do, in any case
	my ($found) = grep { lc $_ eq lc "$ENV{FORGE_ROOT}/$o/$r.git" && -d $_ }
		glob("$ENV{FORGE_ROOT}/*/*.git");
	answer('404 Not Found', { message => 'Not Found' }, $v) unless $found;
	answer('200 OK', { name => $r, full_name => "$o/$r" }, $v);
}

if ($method eq 'GET' && $api eq 'v1'
	&& $uri =~ m{^/users/([\w.-]+)/orgs/([\w.-]+)/permissions$})
{
	my ($u, $o) = ($1, $2);
	answer('404 Not Found', { message => 'GetOrgByName' }, $v)
		unless exists $orgs{$o} && $u eq $user;
	answer('200 OK', { is_owner => JSON::PP::false,
		can_create_repository => $orgs{$o} ? JSON::PP::true
			: JSON::PP::false }, $v);
}

if ($method eq 'GET' && $api eq 'v3'
	&& $uri =~ m{^/user/memberships/orgs/([\w.-]+)$})
{
	my $o = $1;
	answer('404 Not Found', { message => 'Not Found' }, $v)
		unless exists $orgs{$o};
	answer('200 OK', { state => 'active',
		role => $orgs{$o} ? 'admin' : 'member',
		organization => { login => $o } }, $v);
}

if ($method eq 'GET' && $api eq 'v3' && $uri =~ m{^/orgs/([\w.-]+)$}) {
	my $o = $1;
	answer('404 Not Found', { message => 'Not Found' }, $v)
		unless exists $orgs{$o};
	answer('200 OK', { login => $o,
		members_can_create_repositories => JSON::PP::false }, $v);
}

my $owner;
if ($method eq 'POST' && $uri eq '/user/repos') {
	$owner = $user;
} elsif ($method eq 'POST' && $uri =~ m{^/orgs/([\w.-]+)/repos$}) {
	$owner = $1;
} else {
	answer('404 Not Found', { message => 'not found' }, $v);
}

my $body = '';
read(STDIN, $body, $ENV{CONTENT_LENGTH} || 0);
my $req = eval { decode_json($body) };
my $name = ref $req eq 'HASH' ? $req->{name} // '' : '';

answer('422 Unprocessable Entity', { message => 'invalid repo name' }, $v)
	unless $name =~ /^[\w-][\w.-]{0,99}$/ && $name !~ /\.git$/;

my $dir = "$ENV{FORGE_ROOT}/$owner";
my $path = "$dir/$name.git";
# mkdir decides, atomically: of two creates racing, one gets 409
mkdir $dir;
answer('409 Conflict', { message =>
	'The repository with the same name already exists.' }, $v)
	unless mkdir $path;
$ENV{GIT_CONFIG_NOSYSTEM} = 1;
$ENV{GIT_CONFIG_GLOBAL} = '/dev/null';
$ENV{HOME} = $ENV{FORGE_ROOT};
for my $cmd ([ 'init', '-q', '--bare', '--initial-branch=main', $path ],
	[ "--git-dir=$path", 'config', 'http.receivepack', 'true' ])
{
	system($ENV{FORGE_GIT}, @$cmd) == 0
		or answer('500 Internal Server Error',
			{ message => "git @$cmd failed" }, $v);
}

my $base = "$ENV{FORGE_SCHEME}://$ENV{FORGE_HOST}";
answer('201 Created', { name => $name, full_name => "$owner/$name",
	private => $req->{private} ? JSON::PP::true : JSON::PP::false,
	html_url => "$base/$owner/$name",
	clone_url => "$base/$owner/$name.git" }, $v);
EOF
	close $fh or die "$path: $!\n";
	chmod 0755, $path;
}

# git's absolute path: the API's CGI runs in fcgiwrap's bare environment

sub _git_path {
	return $GIT if $GIT =~ m{^/};
	for my $d (split /:/, $ENV{PATH} // '') {
		return "$d/$GIT" if -x "$d/$GIT";
	}
	die "forge: no $GIT in PATH\n";
}

sub _start_fcgiwrap {
	my ($t, $f) = @_;
	my $log = "$f->{dir}/fcgiwrap.log";

	unlink $f->{sock};

	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', $log;
		open STDERR, '>&', \*STDOUT;
		exec($FCGIWRAP, '-c', $f->{workers}, '-s', "unix:$f->{sock}")
			or die "exec $FCGIWRAP: $!\n";
	});
	$f->{fcgi_pid} = $t->last_daemon_pid();

	my $deadline = time() + 10;
	until (-S $f->{sock}) {
		if (waitpid($f->{fcgi_pid}, WNOHANG) != 0 || time() > $deadline) {
			my $err = -e $log ? $t->read_file($log) : '';
			die "fcgiwrap does not start: $err\n";
		}
		sleep 0.02;
	}

	# nginx's workers run as nobody when the test runs as root
	chmod 0777, $f->{sock};
}

sub _nginx_conf {
	my ($f) = @_;
	my ($dir, $root, $sock) = @$f{qw/ dir root sock /};
	my $backend = _backend();
	my $git = _git_path();

	my $listen = "127.0.0.1:$f->{port}" . ($f->{tls} ? ' ssl' : '');
	my $ssl = $f->{tls} ? <<"EOF" : '';
        ssl_certificate      $f->{cert};
        ssl_certificate_key  $f->{key};
EOF

	return <<"EOF";
# fake forge '$f->{name}' (Test::Bottle::Forge), no bottle module
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log info;

events {
    worker_connections 1024;
}

http {
    client_body_temp_path $dir/client_body_temp;
    proxy_temp_path $dir/proxy_temp;
    fastcgi_temp_path $dir/fastcgi_temp;
    uwsgi_temp_path $dir/uwsgi_temp;
    scgi_temp_path $dir/scgi_temp;

    log_format forge escape=json '{"time":"\$time_iso8601","msec":\$msec,'
        '"method":"\$request_method","uri":"\$request_uri",'
        '"status":\$status,"auth":"\$forge_auth\$upstream_http_x_forge_auth",'
        '"user":"\$remote_user",'
        '"user_agent":"\$http_user_agent","git_protocol":"\$http_git_protocol",'
        '"host":"\$http_host","scheme":"\$scheme","conn":\$connection,'
        '"bytes_in":\$request_length,"bytes_out":\$bytes_sent,'
        '"request_time":\$request_time}';

    server {
        listen $listen;
        server_name _;
$ssl
        access_log $root/requests.jsonl forge;
        client_max_body_size 0;

        set \$forge_auth "";

        location = /.forge/status {
            stub_status;
            access_log off;
        }

        location = /.forge/auth {
            internal;
            fastcgi_pass unix:$sock;
            fastcgi_pass_request_body off;
            fastcgi_pass_request_headers off;
            fastcgi_param SCRIPT_FILENAME $dir/forge-auth.pl;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param REQUEST_METHOD \$request_method;
            fastcgi_param CONTENT_LENGTH "";
            fastcgi_param HTTP_AUTHORIZATION \$http_authorization;
            fastcgi_param FORGE_URI \$request_uri;
            fastcgi_param FORGE_AUTH_FILE $dir/auth.conf;
        }

        location ~ ^/api/v[13]/ {
            fastcgi_pass unix:$sock;
            fastcgi_param SCRIPT_FILENAME $dir/forge-api.pl;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param REQUEST_METHOD \$request_method;
            fastcgi_param CONTENT_TYPE \$content_type;
            fastcgi_param CONTENT_LENGTH \$content_length;
            fastcgi_param HTTP_AUTHORIZATION \$http_authorization;
            fastcgi_param FORGE_URI \$request_uri;
            fastcgi_param FORGE_HOST \$http_host;
            fastcgi_param FORGE_SCHEME \$scheme;
            fastcgi_param FORGE_AUTH_FILE $dir/auth.conf;
            fastcgi_param FORGE_ROOT $root;
            fastcgi_param FORGE_GIT $git;
        }

        location ~ "^/(?<forge_owner>[^/]+)/(?<forge_repo>[^/]+?)(?:\\.git)?(?<forge_path>/.*)\$" {
            auth_request /.forge/auth;
            auth_request_set \$forge_auth \$upstream_http_x_forge_auth;

            fastcgi_pass unix:$sock;
            fastcgi_buffering off;
            fastcgi_read_timeout 600s;
            fastcgi_send_timeout 600s;

            fastcgi_param SCRIPT_FILENAME $backend;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param SERVER_PROTOCOL \$server_protocol;
            fastcgi_param REQUEST_METHOD \$request_method;
            fastcgi_param QUERY_STRING \$query_string;
            fastcgi_param CONTENT_TYPE \$content_type;
            fastcgi_param CONTENT_LENGTH \$content_length;
            fastcgi_param REMOTE_ADDR \$remote_addr;
            fastcgi_param REMOTE_USER \$remote_user;
            fastcgi_param PATH_INFO /\$forge_owner/\$forge_repo.git\$forge_path;
            fastcgi_param GIT_PROJECT_ROOT $root;
            fastcgi_param GIT_HTTP_EXPORT_ALL 1;
            fastcgi_param GIT_CONFIG_NOSYSTEM 1;
            fastcgi_param GIT_CONFIG_GLOBAL /dev/null;
            fastcgi_param HOME $dir;
        }

        location / {
            return 404;
        }
    }
}
EOF
}

# One attempt: undef when nginx listens, else why not.

sub _start_nginx {
	my ($t, $f) = @_;
	my $dir = $f->{dir};

	open my $fh, '>', "$dir/nginx.conf" or die "nginx.conf: $!\n";
	print $fh _nginx_conf($f);
	close $fh;

	unlink "$dir/nginx.pid";
	my $offset = -s "$dir/error.log" || 0;

	$t->run_daemon(sub {
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', "$dir/stderr.log";
		open STDERR, '>&', \*STDOUT;
		exec($Test::Nginx::NGINX, '-p', "$dir/", '-c', 'nginx.conf',
			'-e', 'error.log')
			or die "exec nginx: $!\n";
	});
	my $pid = $t->last_daemon_pid();

	my $deadline = time() + 15;
	while (time() < $deadline) {
		if (-e "$dir/nginx.pid" && Test::Nginx::_listening($f->{port})) {
			$f->{pid} = $pid;
			return undef;
		}
		last if waitpid($pid, WNOHANG) != 0;
		sleep 0.05;
	}

	kill 'KILL', -$pid, $pid;
	waitpid($pid, 0);
	$t->{_daemons} = [ grep { $_ != $pid } @{$t->{_daemons}} ];

	my $log = '';
	for my $file ("$dir/error.log", "$dir/stderr.log") {
		next unless -e $file;
		$log .= substr($t->read_file($file),
			$file =~ /error/ ? $offset : 0);
	}

	# the failed try's lines are no alerts of the test
	if (open my $keep, '>>', "$dir/port-retry.log") {
		print $keep $log;
		truncate "$dir/error.log", $offset;
		unlink "$dir/stderr.log";
	}

	return "forge nginx does not start on 127.0.0.1:$f->{port}:\n$log\n";
}

###############################################################################
# repositories

sub _run {
	my ($t, $out, @cmd) = @_;
	my $pid = fork();
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		$ENV{GIT_CONFIG_NOSYSTEM} = 1;
		$ENV{GIT_CONFIG_GLOBAL} = '/dev/null';
		open STDIN, '<', '/dev/null';
		open STDOUT, '>>', $out;
		open STDERR, '>&', \*STDOUT;
		exec(@cmd) or POSIX::_exit(127);
	}
	waitpid($pid, 0);
	die "@cmd failed:\n" . $t->read_file($out) . "\n" if $?;
}

sub _size {
	my ($s) = @_;
	my %m = (K => 1 << 10, M => 1 << 20, G => 1 << 30);
	die "forge: bad size '$s'\n" unless $s =~ /^(\d+)([KMG]?)i?B?$/i;
	return $1 * ($2 ? $m{uc $2} : 1);
}

# repo($t, 'owner/repo', forge => name, commits => N, size => '100M',
#      file_size => '1M', branch => 'main')
# A bare repository on the forge (http.receivepack on), seeded with
# `git fast-import`: with size, one commit holding that many bytes of
# incompressible data in files of file_size (data/blob-NNNN.bin, AES-CTR
# keystream from openssl, the same for the same repo name); then commits
# adding commit-N.txt up to `commits` commits in all.  Author and dates
# are fixed, so the same options give the same object ids.  Returns
# { name, path, url, auth_url, branch, head } (head: the branch's commit
# id, undef for an empty repository).

sub repo {
	my ($t, $name, %o) = @_;
	my $f = get($t, $o{forge});

	die "forge_repo: 'owner/repo' expected, got '$name'\n"
		unless $name =~ m{^([\w.-]+)/([\w.-]+?)(?:\.git)?$};
	my ($owner, $repo) = ($1, $2);
	my $path = "$f->{root}/$owner/$repo.git";
	my $branch = $o{branch} // 'main';
	my $out = "$f->{dir}/git.log";

	die "forge_repo: $path exists\n" if -e $path;
	make_path("$f->{root}/$owner");

	_run($t, $out, $GIT, 'init', '-q', '--bare', "--initial-branch=$branch",
		$path);
	_run($t, $out, $GIT, "--git-dir=$path", 'config', 'http.receivepack',
		'true');

	my $size = defined $o{size} ? _size($o{size}) : 0;
	my $commits = $o{commits} // ($size ? 1 : 0);
	$commits = 1 if $size && $commits < 1;

	_seed($t, $f, $path, "$owner/$repo", $branch, $commits, $size,
		_size($o{file_size} // '1M'))
		if $commits;

	my $url = "$f->{url}/$owner/$repo.git";
	(my $auth_url = $url) =~ s{://}{://x-access-token:$f->{token}@};

	my $r = { name => "$owner/$repo", path => $path, url => $url,
		auth_url => $auth_url, branch => $branch };
	$r->{head} = refs($t, "$owner/$repo", forge => $f->{name})
		->{"refs/heads/$branch"};
	return $r;
}

sub _seed {
	my ($t, $f, $path, $name, $branch, $commits, $size, $file_size) = @_;
	my $out = "$f->{dir}/git.log";

	my $pid = open(my $fi, '|-');
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		$ENV{GIT_CONFIG_NOSYSTEM} = 1;
		$ENV{GIT_CONFIG_GLOBAL} = '/dev/null';
		open STDOUT, '>>', $out;
		open STDERR, '>&', \*STDOUT;
		# random data does not compress: zlib would only cost time
		exec($GIT, '-c', 'core.compression=0', "--git-dir=$path",
			'fast-import', '--quiet', '--big-file-threshold=1k')
			or POSIX::_exit(127);
	}
	binmode $fi;

	my $who = 'Forge Seed <seed@forge.test>';
	my $data = sub { my ($s) = @_; print $fi 'data ' . length($s) . "\n$s\n"; };

	for my $i (1 .. $commits) {
		my $when = $SEED_TIME + $i;
		print $fi "commit refs/heads/$branch\n",
			"author $who $when +0000\n",
			"committer $who $when +0000\n";
		$data->("commit $i of $name\n");

		if ($i == 1) {
			print $fi "M 644 inline README.md\n";
			$data->("# $name\n\nSeeded by Test::Bottle::Forge.\n");
			_data_files($t, $fi, $name, $size, $file_size) if $size;
		}
		print $fi "M 644 inline commit-$i.txt\n";
		$data->("commit $i of $name\n");
	}

	close $fi or die "git fast-import failed:\n"
		. $t->read_file($out) . "\n";

	# one pack with a bitmap, as a forge keeps it: a clone then sends
	# the pack as it is (pack-objects would otherwise look for deltas
	# between the random blobs: seconds for nothing)
	_run($t, $out, $GIT, '-c', 'pack.compression=0', "--git-dir=$path",
		'repack', '-adq', '--window=0', '-b')
		if $size;
}

# $size bytes of AES-128-CTR keystream (incompressible, made at
# hundreds of MB/s, the same for the same name) as inline blobs.

sub _data_files {
	my ($t, $fi, $name, $size, $file_size) = @_;
	require Digest::SHA;
	my $key = substr(Digest::SHA::sha256_hex($name), 0, 32);

	my $openssl = $Test::Bottle::OPENSSL // 'openssl';
	my $pid = open(my $rnd, '-|');
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		open STDERR, '>', '/dev/null';	# "error writing output file"
		exec($openssl, 'enc', '-aes-128-ctr', '-K', $key,
			'-iv', '0' x 32, '-in', '/dev/zero')
			or POSIX::_exit(127);
	}
	binmode $rnd;

	my $n = 0;
	while ($size > 0) {
		my $len = $size < $file_size ? $size : $file_size;
		my $buf = '';
		while (length $buf < $len) {
			my $got = read($rnd, $buf, $len - length $buf,
				length $buf);
			die "openssl: short read\n" unless $got;
		}
		printf $fi "M 644 inline data/blob-%04d.bin\n", $n++;
		print $fi "data $len\n", $buf, "\n";
		$size -= $len;
	}

	# openssl, writing on, ends on SIGPIPE
	close $rnd;
}

# refs($t, 'owner/repo', forge => name): { 'refs/heads/main' => id, ... }
# as the forge has them now.

sub refs {
	my ($t, $name, %o) = @_;
	my $f = get($t, $o{forge});
	$name =~ s/\.git$//;
	my $path = "$f->{root}/$name.git";
	die "forge_refs: no repository $path\n" unless -d $path;

	local $ENV{GIT_CONFIG_NOSYSTEM} = 1;
	local $ENV{GIT_CONFIG_GLOBAL} = '/dev/null';
	open my $fh, '-|', $GIT, "--git-dir=$path", 'for-each-ref',
		'--format=%(objectname) %(refname)'
		or die "git for-each-ref: $!\n";
	my %r;
	while (<$fh>) {
		$r{$2} = $1 if /^(\S+) (\S+)$/;
	}
	close $fh;
	return \%r;
}

###############################################################################
# what the forge received

# stub_status of the forge: { active, accepts, handled, requests,
# reading, writing, waiting }; counts itself in accepts and writing.

sub status {
	my ($t, %o) = @_;
	my $f = get($t, $o{forge});

	$f->{status_queries}++;
	my $r = Test::Nginx::http_get('/.forge/status',
		PeerAddr => "127.0.0.1:$f->{port}",
		$f->{tls} ? (SSL => 1) : ()) // '';

	my %s;
	@s{qw/ active /} = $r =~ /Active connections:\s*(\d+)/;
	@s{qw/ accepts handled requests /} = $r =~ /^\s*(\d+)\s+(\d+)\s+(\d+)/m;
	@s{qw/ reading writing waiting /} =
		$r =~ /Reading:\s*(\d+)\s+Writing:\s*(\d+)\s+Waiting:\s*(\d+)/;
	die "forge: no status from $f->{url}\n" unless defined $s{accepts};
	return \%s;
}

# connections($t, forge => name): TCP connections the forge accepted
# (failed TLS handshakes and idle connections too), its own status
# queries left out.

sub connections {
	my ($t, %o) = @_;
	my $f = get($t, $o{forge});
	gate_settled($t);
	my $s = status($t, %o);
	return $s->{accepts} - $f->{status_queries};
}

# log($t, forge => name, wait => seconds): the requests received, in
# order (arrayref of records), once no request is in progress any more
# (the log line of a request is written when it ends), waiting up to
# `wait` seconds (default 5) for that.

sub log {
	my ($t, %o) = @_;
	my $f = get($t, $o{forge});
	gate_settled($t);

	my $deadline = time() + ($o{wait} // 5);
	for (;;) {
		my $s = status($t, %o);
		last if $s->{reading} == 0 && $s->{writing} <= 1;
		last if time() > $deadline;
		sleep 0.05;
	}

	require Test::Bottle;
	my $l = Test::Bottle::read_jsonl($t, $f->{log});
	return $o{since} ? [ @$l[$o{since} .. $#$l] ] : $l;
}

# gate_settled($t): every first fill of a git-gate copy under the test's
# directory (GITGATE_DIR <testdir>/gate*) done: a first clone's answer ends
# before the copy is indexed and refreshed from the forge, by a child that
# holds <copy>/gitgate-first.lock until then (docs/gitgate.md, "First
# clone"); what the forge counts after a clone waits for it (60 s at most).

sub gate_settled {
	my ($t) = @_;
	my $d = $t->testdir();
	for my $lock (glob "$d/gate*/*/*/*.git/gitgate-first.lock") {
		for (1 .. 600) {
			open my $fh, '<', $lock or last;
			last if flock($fh, 6);    # LOCK_EX | LOCK_NB
			close $fh;
			sleep 0.1;
		}
	}
}

###############################################################################
# the git client

# git($t, [{ dir => path, env => { ... } },] @args): the real git client,
# run as a test's agent would and isolated from the machine: no system or
# global config (a <testdir>/gitconfig with a user name instead), no
# prompt for credentials, no proxy from the environment.  Returns
# ($exit_status, $output) (stdout and stderr together), in scalar context
# the output.

sub git {
	my ($t, @args) = @_;
	my $o = ref $args[0] eq 'HASH' ? shift @args : {};
	my $d = $t->testdir();
	# one file per calling process: a test may run git from forked
	# children at once
	my $out = "$d/git-client.$$.out";

	my $cfg = "$d/gitconfig";
	if (!-e $cfg) {
		open my $fh, '>', $cfg or die "$cfg: $!\n";
		print $fh "[user]\n\tname = Test Agent\n"
			. "\temail = agent\@bottle.test\n"
			. "[init]\n\tdefaultBranch = main\n";
		close $fh;
	}

	unlink $out;
	my $pid = fork();
	die "fork: $!\n" unless defined $pid;
	if ($pid == 0) {
		delete @ENV{grep { /^(?:GIT_|SSH_ASKPASS$)/ || /_proxy$/i }
			keys %ENV};
		$ENV{GIT_CONFIG_NOSYSTEM} = 1;
		$ENV{GIT_CONFIG_GLOBAL} = $cfg;
		$ENV{GIT_TERMINAL_PROMPT} = 0;
		%ENV = (%ENV, %{$o->{env} || {}});
		chdir($o->{dir} // $d) or POSIX::_exit(126);
		open STDIN, '<', '/dev/null';
		open STDOUT, '>', $out;
		open STDERR, '>&', \*STDOUT;
		exec($GIT, @args) or POSIX::_exit(127);
	}
	waitpid($pid, 0);
	my $rc = $? >> 8;

	my $text = -e $out ? $t->read_file($out) : '';
	Test::Nginx::log_core('git', "git @args: exit $rc\n$text");
	return wantarray ? ($rc, $text) : $text;
}

###############################################################################

1;
