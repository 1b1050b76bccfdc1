#!/bin/sh
# Runs the C unit test of the cookie filter and Set-Cookie reader under prove.
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/build/unit/cookie_test"
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/cookie_test not built (run make unit)"
    exit 0
fi
exec "$bin"
