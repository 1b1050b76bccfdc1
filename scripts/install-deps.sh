#!/bin/sh
# Install what ngx_bottle needs to build, run and test, from Debian's
# packages.  Idempotent: a second run installs nothing new.  Used by the
# README commands, .ci/run and the Dockerfile.
#
#   install-deps.sh             everything: build, run, the tests, the benches
#   install-deps.sh --runtime   only what `make`, `make run`, `make demo`
#                               and `make install` need
set -eu

# make (the module, libbottle, bottlectl, gitgate-scan) and make run /
# make demo (nginx with the stream module, the CA made with openssl, the
# system's trust store for upstreams, dnsmasq as the demo's resolver,
# curl for the README's "Try it")
RUNTIME_PKGS="
build-essential pkg-config
nginx-core nginx-dev libnginx-mod-stream
libhiredis-dev libssl-dev libpcre2-dev libjansson-dev zlib1g-dev libbrotli-dev libvectorscan-dev
libgit2-dev
openssl ca-certificates dnsmasq-base curl
"

# the test suite, the fuzzers and the benches
TEST_PKGS="
clang llvm libclang-rt-14-dev
redis-server
perl libio-socket-ssl-perl libjson-pp-perl
git python3 iproute2 valgrind procps brotli fcgiwrap
mitmproxy hey nodejs node-undici
"

case "${1:-}" in
--runtime) PKGS=$RUNTIME_PKGS ;;
"") PKGS="$RUNTIME_PKGS $TEST_PKGS" ;;
*) echo "usage: $0 [--runtime]" >&2; exit 2 ;;
esac

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

# Packaged services (nginx, redis) must not start on install: the gateway
# and the tests run their own instances.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    own_policy=1
fi
cleanup() { if [ "$own_policy" = 1 ]; then $SUDO rm -f "$policy"; fi; }
trap cleanup EXIT

echo "install-deps: installing$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends $missing
