#!/bin/sh
# Runs the proposal unit tests (t/unit/proposal_test.c) built by `make unit`.

dir=$(dirname "$0")
bin="$dir/../../build/unit/proposal_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/proposal_test not built (run make unit)"
    exit 0
fi

exec "$bin"
