#!/bin/sh
# Runs the bottle_decide unit tests (t/unit/decide_test.c) built by `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/decide_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/decide_test not built (run make unit)"
    exit 0
fi

exec "$bin" "$dir/data"
