#!/bin/sh
# Runs the C unit test of git-gate's line matcher (gg_lmatch.c) through
# gg_match_lines(), against a reference LCS and git diff --no-index.
# GG_LMATCH_TEST=build-asan/unit/gg_lmatch_test runs the sanitizer build
# (make asan; docs/testing.md).
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="${GG_LMATCH_TEST:-$root/build/unit/gg_lmatch_test}"
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP $bin not built (run make unit)"
    exit 0
fi
exec "$bin"
