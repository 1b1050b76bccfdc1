#!/bin/sh
# Runs the parents and children unit tests (t/unit/family_test.c) built by
# `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/family_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/family_test not built (run make unit)"
    exit 0
fi

exec "$bin"
