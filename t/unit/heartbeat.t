#!/bin/sh
# Runs the bottle_heartbeat unit tests (t/unit/heartbeat_test.c) built by `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/heartbeat_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/heartbeat_test not built (run make unit)"
    exit 0
fi

exec "$bin"
