package Test::Bottle::Gateway;

# The gateway's nginx.conf as most tests run it: the CONNECT front on
# 127.0.0.1:8080 (stream), the plain and TLS servers behind it on unix
# sockets, each with its pool of kept upstream connections, and a failed
# upstream answered by bottle_upstream_failed.  The tests that need more
# add their pieces through the options; the ones built another way write
# their own.
#
#   $t->write_file_expand('nginx.conf', gateway_conf(
#       main     => "worker_processes 2;",  # before bottle_policy
#       policy   => ' zone=32k',            # bottle_policy's parameters
#       global   => "bottle_jar_zone 64k;", # after bottle_policy
#       front    => "bottle_head_buffer_size 16k;",
#       http     => "large_client_header_buffers 4 16k;",
#       http2    => 0,                      # the TLS server without http2
#       failed   => 0,                      # no error_page @failed
#       servers  => "server { ... }",       # more servers in http
#   ));
#
# gateway_plain_conf(policy => 'redis://...', main => ..., global => ...,
#   servers => ...):
# the front and the plain server only, proxying straight to
# $bottle_upstream (no pool, no TLS server): the control plane's tests.
#
# gitgate_conf(policy => ..., port => $GP, gate => gitgate_fastcgi(...),
# realm => 0, servers => ...): git-gate's server alone, as the shipped
# config has it (bottle_attribute git, realm "git-gate" unless realm => 0).

use warnings;
use strict;

use base qw/ Exporter /;
our @EXPORT = qw/ gateway_conf gateway_plain_conf gitgate_conf /;

sub _indent {
	my ($text, $n) = @_;
	return '' unless defined $text && $text ne '';
	my $pad = ' ' x $n;
	return join('', map { /\S/ ? "$pad$_" : $_ } split /^/, "$text\n");
}

sub gateway_conf {
	my (%o) = @_;

	my $failed = ($o{failed} // 1) ? <<'EOF' : '';
            error_page 502 504 = @failed;
        }

        location @failed {
            bottle_upstream_failed;
EOF
	my $http2 = ($o{http2} // 1) ? ' http2' : '';
	my $main = _indent($o{main}, 0);
	my $global = _indent($o{global}, 0);
	my $front = _indent($o{front}, 8);
	my $http = _indent($o{http}, 4);
	my $servers = _indent($o{servers}, 4);
	my $policy = $o{policy} // '';

	my $conf = <<"EOF";

%%TEST_GLOBALS%%

daemon off;
${main}
bottle_policy %%TESTDIR%%/policy.json$policy;
${global}
events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:8080;
        bottle_front on;
${front}        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        bottle_tls_pass unix:%%TESTDIR%%/tls.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    resolver 127.0.0.1:%%PORT_8053_UDP%%;
    resolver_timeout 3s;
${http}
    upstream bottle_plain {
        bottle_upstream;
    }

    upstream bottle_tls {
        bottle_upstream;
    }

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://bottle_plain\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
${failed}        }
    }

    server {
        listen unix:%%TESTDIR%%/tls.sock ssl$http2 proxy_protocol;
        bottle on;
        bottle_ca %%TESTDIR%%/gwca.crt %%TESTDIR%%/gwca.key;

        location / {
            proxy_pass https://bottle_tls\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_ssl_server_name on;
            proxy_ssl_name \$bottle_host;
            proxy_ssl_verify on;
            proxy_ssl_trusted_certificate %%TESTDIR%%/upca.crt;
${failed}        }
    }
${servers}}

EOF
	return $conf;
}

sub gateway_plain_conf {
	my (%o) = @_;

	my $main = _indent($o{main}, 0);
	my $global = _indent($o{global}, 0);
	my $servers = _indent($o{servers}, 4);

	return <<"EOF";

%%TEST_GLOBALS%%

daemon off;
${main}
bottle_policy $o{policy};
${global}
events {
}

stream {
    %%TEST_GLOBALS_STREAM%%

    server {
        listen 127.0.0.1:8080;
        bottle_front on;
        bottle_plain_pass unix:%%TESTDIR%%/plain.sock;
        bottle_tls_pass unix:%%TESTDIR%%/tls.sock;
        proxy_pass \$bottle_upstream;
    }
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen unix:%%TESTDIR%%/plain.sock proxy_protocol;
        bottle on;

        location / {
            proxy_pass http://\$bottle_upstream\$bottle_uri;
            proxy_set_header Host \$bottle_host_header;
        }
    }
${servers}}

EOF
}

sub gitgate_conf {
	my (%o) = @_;

	my $realm = ($o{realm} // 1) ? "\n            bottle_realm git-gate;" : '';
	my $servers = _indent($o{servers}, 4);

	return <<"EOF";

%%TEST_GLOBALS%%

daemon off;

bottle_policy $o{policy};

events {
}

http {
    %%TEST_GLOBALS_HTTP%%

    server {
        listen 127.0.0.1:$o{port};
        client_max_body_size 0;

        location / {
            bottle_attribute git;$realm

$o{gate}
        }
    }
${servers}}

EOF
}

1;
