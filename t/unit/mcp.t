#!/bin/sh
# Runs the C unit test of MCP gating's parser, matcher and readers.
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/build/unit/mcp_test"
if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/mcp_test not built (run make unit)"
    exit 0
fi
exec "$bin"
