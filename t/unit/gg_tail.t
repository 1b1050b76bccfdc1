#!/bin/sh
# Runs the C unit test of git-gate's blob tails' cache (gg_tail.c: its
# bound, buckets and checks).  GG_TAIL_TEST=build-asan/unit/gg_tail_test
# runs the sanitizer build (make asan; docs/testing.md).
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${GG_TAIL_TEST:-$root/build/unit/gg_tail_test}"
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP $bin not built (run make unit)"
    exit 0
fi
exec "$bin"
