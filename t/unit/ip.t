#!/bin/sh
# Runs the bottle_ip unit tests (t/unit/ip_test.c) built by `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/ip_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/ip_test not built (run make unit)"
    exit 0
fi

exec "$bin"
