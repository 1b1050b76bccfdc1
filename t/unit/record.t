#!/bin/sh
# Runs the C unit test of the request records (full log, firehose) under prove.
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/build/unit/record_test"
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/record_test not built (run make unit)"
    exit 0
fi
exec "$bin"
