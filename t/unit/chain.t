#!/bin/sh
# Runs the audit chain's Lua tests (t/unit/chain_test.c) built by `make
# unit`, against a redis-server of its own on a unix socket.

dir=$(dirname "$0")
bin="$dir/../../build/unit/chain_test"

if [ ! -x "$bin" ]; then
    echo "1..0 # SKIP build/unit/chain_test not built (run make unit)"
    exit 0
fi

if ! command -v redis-server >/dev/null; then
    echo "1..0 # SKIP no redis-server"
    exit 0
fi

tmp=$(mktemp -d /tmp/chain-test.XXXXXX)
redis-server --port 0 --unixsocket "$tmp/r.sock" --save '' \
    --appendonly no --dir "$tmp" --logfile "$tmp/r.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT

i=0
while [ ! -S "$tmp/r.sock" ] && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done

BOTTLE_TEST_REDIS_SOCK="$tmp/r.sock" "$bin"
