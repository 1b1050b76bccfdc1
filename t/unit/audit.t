#!/bin/sh
# Runs the bottle_audit unit tests (t/unit/audit_test.c) built by `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/audit_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/audit_test not built (run make unit)"
    exit 0
fi

exec "$bin"
