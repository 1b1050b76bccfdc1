#!/bin/sh
# Runs the policy change warning unit tests (t/unit/warn_test.c) built by
# `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/warn_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/warn_test not built (run make unit)"
    exit 0
fi

exec "$bin"
