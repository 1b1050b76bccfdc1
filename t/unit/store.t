#!/bin/sh
# Runs the bottle_store unit tests (t/unit/store_test.c) built by `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/store_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/store_test not built (run make unit)"
    exit 0
fi

exec "$bin"
