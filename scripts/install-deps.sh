#!/bin/sh
# Install what ngx_bottle needs to build, run and test, from Debian's
# packages.  Idempotent: a second run installs nothing new.  Used by the
# README commands, .ci/run and the Dockerfile.
#
#   install-deps.sh             everything: build, run, the tests, the benches
#   install-deps.sh --runtime   only what `make`, `make run`, `make demo`
#                               and `make install` need
#   install-deps.sh --installed only what an installed gateway runs with:
#                               no compiler, no -dev package (the image's
#                               final stage, docs/install.md)
#   install-deps.sh --list [--runtime|--installed]
#                               print the packages instead (t/image.t)
set -eu

# what an installed gateway runs with: nginx (not nginx-core: its mail,
# geoip, image and xslt modules are not needed) and its stream module, the
# libraries the module, bottlectl and the helpers link (libcurl4 also as
# what gitgate-cgi loads when it first asks a forge), openssl for
# bottle-ca, the system's trust store for upstreams, curl (the health
# check), s6 (bottle-init, the image's PID 1), fcgiwrap and git (git-gate).
# spawn-fcgi satisfies fcgiwrap's "systemd | spawn-fcgi": without it apt
# takes systemd and its libraries (docs/install.md, "What the image holds")
INSTALLED_PKGS="
nginx libnginx-mod-stream
libhiredis0.14 libssl3 libpcre2-8-0 libjansson4 zlib1g libbrotli1 libvectorscan5
libgit2-1.5 libmicrohttpd12 libcurl4 libisal2
openssl ca-certificates curl s6 spawn-fcgi fcgiwrap git
"

# make (the module, libbottle, bottlectl, gitgate-scan, gitgate-hook built
# static with musl-tools, supervise-helper
# with its operator page embedded by xxd, libcurl for bottlectl's and the
# operator page's calls of a forge's API) and make demo
# (dnsmasq as the demo's resolver)
BUILD_PKGS="
build-essential pkg-config xxd nginx-dev musl-tools
libhiredis-dev libmicrohttpd-dev libssl-dev libpcre2-dev libjansson-dev zlib1g-dev libbrotli-dev libvectorscan-dev
libgit2-dev libcurl4-openssl-dev libisal-dev
dnsmasq-base
"
RUNTIME_PKGS="$BUILD_PKGS $INSTALLED_PKGS"

# the test suite, the fuzzers and the benches (prometheus: promtool, which
# checks and unit-tests the shipped alert rules, t/monitoring.t; logrotate:
# the installed rotation, t/install.t; buildah and debootstrap: the image
# built and run, t/image_smoke.t)
TEST_PKGS="
clang llvm libclang-rt-14-dev
redis-server prometheus
perl libio-socket-ssl-perl libjson-pp-perl
git python3 iproute2 valgrind procps brotli fcgiwrap logrotate
buildah debootstrap
mitmproxy hey nodejs node-undici
chromium
"

list=0
if [ "${1:-}" = --list ]; then list=1; shift; fi

mode=${1:-all}
case "${1:-}" in
--runtime) PKGS=$RUNTIME_PKGS ;;
--installed) PKGS=$INSTALLED_PKGS ;;
"") PKGS="$RUNTIME_PKGS $TEST_PKGS" ;;
*) echo "usage: $0 [--list] [--runtime|--installed]" >&2; exit 2 ;;
esac

if [ "$list" = 1 ]; then
    printf '%s\n' $PKGS | awk '!seen[$0]++'
    exit 0
fi

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done

# The tests' node packages, from each directory's package-lock.json: the
# MCP SDK client of t/supervise_sdk.t (t/mcp-client) and playwright-core,
# which drives Debian's chromium in t/operator_page.t (t/operator; never a
# browser download of its own)
npm_deps() {
    [ "$mode" = all ] || return 0
    command -v npm >/dev/null 2>&1 || return 0
    for dir in mcp-client operator; do
        dir=$(dirname "$0")/../t/$dir
        [ -f "$dir/package-lock.json" ] || continue
        (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
            npm ci --no-audit --no-fund --loglevel=error) \
            || echo "install-deps: npm ci in $dir failed" >&2
    done
}

if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    npm_deps
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

npm_deps
