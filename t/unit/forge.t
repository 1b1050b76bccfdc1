#!/bin/sh
# Runs the C unit test of the repo grants and forges under prove.
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/build/unit/forge_test"
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/forge_test not built (run make unit)"
    exit 0
fi
exec "$bin"
