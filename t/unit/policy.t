#!/bin/sh
# Runs the bottle_policy unit tests (t/unit/policy_test.c) built by `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/policy_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/policy_test not built (run make unit)"
    exit 0
fi

exec "$bin" "$dir/data"
