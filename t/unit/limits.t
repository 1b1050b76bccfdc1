#!/bin/sh
# Runs the bottle_limits unit tests (t/unit/limits_test.c) built by `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/limits_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/limits_test not built (run make unit)"
    exit 0
fi

exec "$bin"
