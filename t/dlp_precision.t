#!/usr/bin/perl

# DLP precision and recall (issue 12): documentation examples and
# placeholders of vendor shapes pass, while the canary and registered tokens
# shaped like them still block; %0D%0A in a URL-valued header is data;
# private key blocks, reversed registered secrets, HTML numeric entities and
# JSON escaped twice block.  Over HTTP/1.1 and HTTP/2 (an intercepted
# tunnel), in headers, query, path and bodies (plain and gzip).

###############################################################################

use warnings;
use strict;

use Test::More;
use IO::Compress::Gzip qw/ gzip /;

BEGIN { use FindBin; chdir($FindBin::Bin); }

use lib 'lib';
use Test::Nginx;
use Test::Bottle;
use Test::Bottle::Gateway;

###############################################################################

select STDERR; $| = 1;
select STDOUT; $| = 1;

my $t = Test::Nginx->new()->has(qw/stream http proxy http_ssl http_v2 bottle/)
	->has(qw/dnsmasq openssl socket_ssl_sni/)->has_daemon('curl');

$t->write_file_expand('nginx.conf', gateway_conf(
	failed => 0,
));

my $gwca = gen_ca($t, 'gwca');
my $upca = gen_ca($t, 'upca');
my $up = gen_cert($t, $upca, 'up', 'sec.allowed.test');

my $TOKEN = 'alice-token-0123456789';
my $CANARY = 'CANARY-7f3a9c2e5b1d4086';
my $SECRET = 'Zq8vT2mK5xR9wB4n';
my $P = port(8081);
my $S = port(8443);
my $T = JSON::PP::true;

write_policy($t, 'policy.json', { bottles => [
	{ id => 'alice', token => $TOKEN, canary => $CANARY,
		egress_tokens => { API => $SECRET,
			PH => 'ghp_' . ('z' x 36) },
		routes => [
		{ host => 'block.allowed.test', port => $P, internal => $T,
			methods => [ '*' ], dlp => { on_match => 'block' } },
		{ host => 'sec.allowed.test', port => $S, internal => $T,
			methods => [ '*' ], dlp => { on_match => 'block' } },
		{ host => 'llm.allowed.test', port => $P, internal => $T,
			methods => [ '*' ], agent_provider => $T },
	] },
] });

dns_start($t, port => port(8053), hosts => { map { ($_ => '127.0.0.1') }
	qw/block.allowed.test sec.allowed.test llm.allowed.test/ });

fake_upstream($t, port => 8081, name => 'plain');
fake_upstream($t, port => 8443, name => 'tls', tls => 1,
	cert => $up->{cert}, key => $up->{key});

$t->run()->plan(63);

###############################################################################

my $auth = 'Proxy-Authorization: ' . basic('agent', $TOKEN) . "\r\n";
my $PROXY = "http://agent:$TOKEN\@127.0.0.1:" . port(8080);
my $SEC = "https://sec.allowed.test:$S";

# HTTP/1.1, plain, on the block route
sub req {
	my ($method, $path, %o) = @_;
	my $host = ($o{host} // 'block') . ".allowed.test:$P";
	my $r = "$method http://$host$path HTTP/1.1\r\nHost: $host"
		. "\r\nConnection: close\r\n$auth";
	$r .= join '', map { "$_\r\n" } @{$o{headers} || []};
	if (defined $o{body}) {
		$r .= "Content-Length: " . length($o{body}) . "\r\n\r\n$o{body}";
	} else {
		$r .= "\r\n";
	}
	return proxy_request(8080, $r);
}

# HTTP/2 inside an intercepted tunnel
sub h2 {
	my (@args) = @_;
	open my $fh, '-|', 'curl', '-s', '-S', '-i', '--http2', '--max-time',
		'10', '--proxy', $PROXY, '--cacert', $gwca->{cert}, @args
		or die "curl: $!";
	local $/;
	my $out = <$fh>;
	close $fh;
	return $out // '';
}

sub gz { my $o; gzip(\$_[0] => \$o) or die; $o }

sub nplain { scalar @{upstream_requests($t, 'plain')} }
sub ntls { scalar @{upstream_requests($t, 'tls')} }
sub last_plain { upstream_requests($t, 'plain')->[-1] }

my $OK = qr/^HTTP\/1\.1 200 /;
my $OK2 = qr/^HTTP\/2 200 /m;
sub refused { my ($rule) = @_; qr/^HTTP\/1\.1 403 .*X-Bottle-Rule: $rule/s }
sub refused2 { my ($rule) = @_; qr/^HTTP\/2 403 .*x-bottle-rule: $rule/msi }

# a random-looking token of a vendor's shape
my @A = ('A' .. 'Z', 'a' .. 'z', 0 .. 9);
my $GHP = 'ghp_' . join('', map { $A[($_ * 7 + 3) % 62] } 1 .. 36);
my $JWT_HP = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkw'
	. 'IiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ';
my $JWT_IO = "$JWT_HP.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

###############################################################################

# 1. placeholders and documentation examples pass, vendor shapes only

my $doc = '{"messages":[{"role":"user","content":"From the AWS docs: '
	. 'AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY; '
	. "jwt.io: $JWT_IO; set GITHUB_TOKEN=ghp_" . ('x' x 36)
	. ' or NPM_TOKEN=npm_' . ('0' x 36) . ' or ANTHROPIC_API_KEY=sk-ant-api03-'
	. ('X' x 93) . 'AA"}]}';

my $n = nplain();
like(req('POST', '/v1/messages', body => $doc), $OK,
	'placeholders: documentation examples and placeholders in a body pass');
is(last_plain()->{body}, $doc, 'placeholders: the body reached the upstream whole');
like(req('GET', '/x?key=AKIAIOSFODNN7EXAMPLE&t=ghp_' . ('x' x 36),
	headers => [ "Authorization: Bearer $JWT_IO" ]), $OK,
	'placeholders: in the query and a header');
like(req('GET', '/docs/AKIAIOSFODNN7EXAMPLE/npm_' . ('0' x 36)), $OK,
	'placeholders: in the path');
like(req('POST', '/x', headers => [ 'Content-Encoding: gzip' ],
	body => gz($doc)), $OK, 'placeholders: in a gzip body');
is(nplain(), $n + 4, 'placeholders: all reached the upstream');
like(h2('--data-binary', $doc, "$SEC/v1/messages"), $OK2,
	'placeholders: HTTP/2 body passes');

$n = nplain();
like(req('POST', '/x', body => "{\"content\":\"for example: $GHP\"}"),
	refused('dlp'), 'placeholders: a random token in prose about examples blocks');
like(req('GET', '/x?k=AKIAIOSFODNN7EXAMPLF'), refused('dlp'),
	'placeholders: the example key id one character off blocks');
like(req('GET', '/x', headers => [ "X-T: $JWT_HP.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5d" ]),
	refused('dlp'), 'placeholders: jwt.io\'s token re-signed blocks');
like(req('POST', '/x', body => 'ghp_' . ('abcde' x 7) . 'a'), refused('dlp'),
	'placeholders: five distinct characters block');
like(req('POST', '/x', body => 'token ghp_' . ('z' x 36)),
	qr/^HTTP\/1\.1 403 .*known_secrets \(egress_token:PH\)/s,
	'placeholders: a registered token shaped like a placeholder blocks');
like(h2('--data-binary', "k=$GHP", "$SEC/x"), refused2('dlp'),
	'placeholders: HTTP/2, a random token blocks');
is(nplain(), $n, 'placeholders: refused requests never reached the upstream');

###############################################################################

# 2. %0D%0A in a URL-valued header is data; raw or in another header, not

$n = nplain();
my $ref = "http://docs.example.test/search?q=crlf%0D%0Ainjection%0d%0aSet-Cookie:x";
like(req('GET', '/x', headers => [ "Referer: $ref" ]), $OK,
	'crlf: %0D%0A in the Referer passes');
is(header_value(last_plain(), 'Referer'), $ref,
	'crlf: the Referer reached the upstream unchanged');
like(req('GET', '/x', headers => [ 'Origin: http://a.test%0D%0A',
	'Link: <http://a.test/%0d%0ax>; rel="next"' ]), $OK,
	'crlf: %0D%0A in Origin and Link passes');
like(h2('-H', "Referer: $ref", "$SEC/x"), $OK2,
	'crlf: HTTP/2, %0D%0A in the Referer passes');
like(req('GET', '/x', headers => [ 'X-Inject: a%0D%0AEvil: yes' ]),
	refused('crlf'), 'crlf: %0D%0A in another header: 403');
like(req('GET', '/x', headers => [ 'X-Referer: http://a.test/%0d%0aEvil: yes' ]),
	refused('crlf'), 'crlf: a name that merely contains Referer: 403');
like(h2('-H', 'X-Inject: a%0D%0AEvil: yes', "$SEC/x"), refused2('crlf'),
	'crlf: HTTP/2, %0D%0A in another header: 403');
unlike(req('GET', '/x', headers => [ "Referer: http://a.test/\rEvil: yes" ]),
	$OK, 'crlf: a raw CR in the Referer is refused');
(my $pcan = $CANARY) =~ s/(.)/sprintf('%%%02X', ord $1)/ge;
like(req('GET', '/x', headers => [ "Referer: http://a.test/?q=$pcan%0D%0A" ]),
	refused('canary'), 'crlf: the Referer is still scanned for the canary');
is(nplain(), $n + 2, 'crlf: refused requests never reached the upstream');

###############################################################################

# 3. private key blocks

my $RSA = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
	. "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u\n"
	. "-----END RSA PRIVATE KEY-----\n";
(my $RSA_JSON = $RSA) =~ s/\n/\\n/g;
my $PUB = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKC\n"
	. "-----END PUBLIC KEY-----\n";

$n = nplain();
like(req('POST', '/x', body => $RSA), refused('dlp'),
	'private key: a PEM block in a body: 403');
like(req('POST', '/x', body => "{\"content\":\"here: $RSA_JSON\"}"),
	qr/^HTTP\/1\.1 403 .*token_patterns \(private_key\) in the body/s,
	'private key: in a JSON string with \n escapes: 403');
like(req('POST', '/x', headers => [ 'Content-Encoding: gzip' ],
	body => gz("{\"k\":\"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjE\"}")),
	refused('dlp'), 'private key: OpenSSH in a gzip body: 403');
like(req('GET', '/x?k=-----BEGIN+EC+PRIVATE+KEY-----%0AMHcCAQEEIB'),
	refused('dlp'), 'private key: form-encoded in the query: 403');
like(req('GET', '/x', headers => [ 'X-Key: -----BEGIN PRIVATE KEY----- MIIEvQIBADAN' ]),
	refused('dlp'), 'private key: on one line in a header: 403');
like(req('POST', '/v1', host => 'llm', body => "{\"content\":\"$RSA_JSON\"}"),
	refused('dlp'), 'private key: refused, not redacted, on a redact route');
like(h2('--data-binary', "{\"k\":\"-----BEGIN PGP PRIVATE KEY BLOCK-----\\n\\nlQOYBGV\"}",
	"$SEC/x"), refused2('dlp'), 'private key: HTTP/2, PGP in a body: 403');
like(req('GET', '/keys/-----BEGIN%20RSA%20PRIVATE%20KEY-----%0AMIIEowIBAAK'),
	refused('dlp'), 'private key: percent-encoded in the path: 403');
is(nplain(), $n, 'private key: refused requests never reached the upstream');

like(req('POST', '/x', body => "{\"content\":\"$PUB\"}"), $OK,
	'private key: a public key passes');
like(req('POST', '/x', body => 'if line == "-----BEGIN RSA PRIVATE KEY-----":'),
	$OK, 'private key: code naming the header passes');
like(req('POST', '/x', body => "-----BEGIN RSA PRIVATE KEY-----\n...\n"
	. "-----END RSA PRIVATE KEY-----"), $OK,
	'private key: an elided example block passes');

###############################################################################

# 4. registered secrets and the canary written backwards

my $RCAN = reverse $CANARY;
my $RSEC = reverse $SECRET;
(my $RSEC_PCT = $RSEC) =~ s/(.)/sprintf('%%%02X', ord $1)/ge;

$n = nplain();
like(req('GET', "/x/$RCAN"), refused('canary'),
	'reversed: the canary backwards in the path: 403');
like(req('GET', "/x?q=$RSEC_PCT"),
	qr/^HTTP\/1\.1 403 .*known_secrets \(egress_token:API\) in the query/s,
	'reversed: a registered token backwards, percent-encoded, in the query');
like(req('GET', '/x', headers => [ "X-Note: \L$RSEC" ]), refused('dlp'),
	'reversed: backwards and lowercased in a header: 403');
like(req('POST', '/x', headers => [ 'Content-Encoding: gzip' ],
	body => gz("{\"a\":\"$RSEC\"}")), refused('dlp'),
	'reversed: backwards in a gzip body: 403');
like(h2('--data-binary', "{\"a\":\"$RCAN\"}", "$SEC/x"), refused2('canary'),
	'reversed: HTTP/2, the canary backwards in a body: 403');
is(nplain(), $n, 'reversed: refused requests never reached the upstream');

(my $near = $RSEC) =~ s/^(.{8})(.)/$1 . ($2 eq 'x' ? 'y' : 'x')/e;
like(req('POST', '/x', body => "{\"a\":\"$near\"}"), $OK,
	'reversed: one character off passes');

###############################################################################

# 5. HTML numeric character references

my $i = 0;
my $ESEC = join '', map { $i++ % 2 ? sprintf('&#x%x;', ord $_)
	: sprintf('&#%d;', ord $_) } split //, $SECRET;
my $ECAN = join '', map { sprintf('&#%03d', ord $_) } split //, $CANARY;

$n = nplain();
like(req('POST', '/x', body => "<p>$ESEC</p>"),
	qr/^HTTP\/1\.1 403 .*known_secrets \(egress_token:API\) in the body/s,
	'entities: a registered token in references in a body: 403');
like(req('POST', '/x', body => "{\"html\":\"<b>$ECAN</b>\"}"), refused('canary'),
	'entities: the canary in zero-padded references without ;: 403');
like(req('GET', '/x', headers => [ "X-Html: $ESEC" ]), refused('dlp'),
	'entities: in a header: 403');
like(req('POST', '/x', headers => [ 'Content-Encoding: gzip' ],
	body => gz($ESEC)), refused('dlp'), 'entities: in a gzip body: 403');
like(h2('--data-binary', $ESEC, "$SEC/x"), refused2('dlp'),
	'entities: HTTP/2, in a body: 403');
unlike(req('GET', "/x?h=$ESEC"), $OK,
	'entities: in the query (its # is refused as a fragment anyway)');
is(nplain(), $n, 'entities: refused requests never reached the upstream');

my $html = '<p>a &amp; b &lt; c &#169; 2024 &#x2014; &#8220;quoted&#8221;</p>';
like(req('POST', '/x', body => $html), $OK, 'entities: ordinary HTML passes');
is(last_plain()->{body}, $html, 'entities: forwarded unchanged');

###############################################################################

# 6. JSON escaped twice (a tool result carrying a JSON document)

my $DGHP = '\\\\u0067' . substr($GHP, 1);
my $DSEC = join '', map { sprintf('\\\\u%04x', ord $_) } split //, $SECRET;
my $TRIPLE = join '', map { sprintf('\\\\\\\\u%04x', ord $_) } split //, $CANARY;

$n = nplain();
like(req('POST', '/v1', body => "{\"tool_result\":\"{\\\"token\\\":\\\"$DGHP\\\"}\"}"),
	qr/^HTTP\/1\.1 403 .*token_patterns \(github_pat_classic\) in the body/s,
	'twice: a token behind \\\\u0067 in JSON in a JSON string: 403');
like(req('POST', '/v1', body => "{\"r\":\"{\\\"k\\\":\\\"$DSEC\\\"}\"}"),
	qr/^HTTP\/1\.1 403 .*known_secrets \(egress_token:API\)/s,
	'twice: a registered token in \\\\u escapes: 403');
like(req('POST', '/v1', body => "{\"r\":\"$TRIPLE\"}"), refused('canary'),
	'three levels: the canary: 403');
like(req('POST', '/v1', headers => [ 'Content-Encoding: gzip' ],
	body => gz("{\"r\":\"{\\\"k\\\":\\\"$DSEC\\\"}\"}")), refused('dlp'),
	'twice: in a gzip body: 403');
like(req('GET', '/x', headers => [ "X-Result: {\\\"t\\\":\\\"$DGHP\\\"}" ]),
	refused('dlp'), 'twice: in a header: 403');
like(h2('--data-binary', "{\"r\":\"{\\\"t\\\":\\\"$DGHP\\\"}\"}", "$SEC/x"),
	refused2('dlp'), 'twice: HTTP/2, in a body: 403');
like(req('POST', '/v1', host => 'llm',
	body => "{\"r\":\"{\\\"t\\\":\\\"$DGHP\\\"}\"}"), $OK,
	'twice: redact route forwards');
is(last_plain()->{body}, "{\"r\":\"{\\\"t\\\":\\\"[REDACTED]\\\"}\"}",
	'twice: the escaped token redacted whole, escapes included');
is(nplain(), $n + 1, 'twice: refused requests never reached the upstream');

my $code = '{"tool_result":"{\\"code\\":\\"print(\\\\\\"a\\\\\\\\nb\\\\\\")\\\\n'
	. 'path = \\\\\\"C:\\\\\\\\\\\\\\\\new\\\\\\"\\"}"}';
like(req('POST', '/v1', body => $code), $OK,
	'twice: ordinary nested JSON with escaped escapes passes');
is(last_plain()->{body}, $code, 'twice: forwarded unchanged');
