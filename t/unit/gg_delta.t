#!/bin/sh
# Runs the C unit test of git-gate's added lines from a pack's delta (it builds
# real packs with git).  GG_DELTA_TEST=build-asan/unit/gg_delta_test runs
# the sanitizer build (make BUILD=build-asan CC_OPT=... LD_OPT=...
# build-asan/unit/gg_delta_test; docs/testing.md).
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${GG_DELTA_TEST:-$root/build/unit/gg_delta_test}"
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP $bin not built (run make unit)"
    exit 0
fi
exec "$bin"
