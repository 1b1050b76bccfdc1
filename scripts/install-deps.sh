#!/bin/sh
# Install what ngx_bottle needs to build, run and test, from Debian's
# packages.  Idempotent: a second run installs nothing new.  Used by the
# README commands, .ci/run and the Dockerfile.
set -eu

PKGS="
build-essential pkg-config clang llvm libclang-rt-14-dev
nginx-core nginx-dev libnginx-mod-stream
libhiredis-dev libmicrohttpd-dev libssl-dev libpcre2-dev libjansson-dev zlib1g-dev libbrotli-dev libvectorscan-dev
libgit2-dev
dnsmasq-base redis-server
perl libio-socket-ssl-perl libjson-pp-perl
curl git openssl python3 iproute2 valgrind procps brotli fcgiwrap
mitmproxy hey nodejs node-undici
libmicrohttpd-dev xxd chromium
"

# t/operator_page.t drives Debian's chromium with npm's playwright-core
# (t/operator/package-lock.json; never a browser download of its own)
npm_deps() {
    dir=$(dirname "$0")/../t/operator
    if [ -f "$dir/package-lock.json" ] && command -v npm >/dev/null 2>&1; then
        (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
            npm ci --no-audit --no-fund --loglevel=error)
    fi
}

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing="$missing $p"
done

# The tests' node packages (the MCP SDK client of t/supervise_sdk.t),
# from t/mcp-client/package-lock.json
npm_deps() {
    dir=$(dirname "$0")/../t/mcp-client
    if [ -f "$dir/package-lock.json" ] && command -v npm >/dev/null; then
        (cd "$dir" && npm ci --no-audit --no-fund --silent) \
            || echo "install-deps: npm ci in t/mcp-client failed" >&2
    fi
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
