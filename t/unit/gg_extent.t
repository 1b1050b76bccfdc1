#!/bin/sh
# Runs the C unit test of git-gate's added lines from extents (neither
# version built), against git's diff over packs git writes.
# GG_EXTENT_TEST=build-asan/unit/gg_extent_test runs the sanitizer build
# (make asan; docs/testing.md).
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${GG_EXTENT_TEST:-$root/build/unit/gg_extent_test}"
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP $bin not built (run make unit)"
    exit 0
fi
exec "$bin"
