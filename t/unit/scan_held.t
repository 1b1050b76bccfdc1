#!/bin/sh
# Runs the C unit test of the held secrets of the secret scanner under prove.
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/build/unit/scan_held_test"
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/scan_held_test not built (run make unit)"
    exit 0
fi
exec "$bin"
