#!/usr/bin/env bash
# What one slow Redis reply does to clients: cmd/api with REDIS_URL
# pointing at bench/cmd/slowredis, which delays every EVERY-th reply chunk
# by DELAY, answers N initialize requests; prints their HTTP statuses.
# COMPARE="label=/path/to/api ..." runs other builds the same way first.
#
# Usage: bench/slow_redis.sh     (needs Redis on 127.0.0.1:6379)
# Environment: N=100 EVERY=50 DELAY=80ms PORT=18701 RELAY_PORT=16390
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100}
EVERY=${EVERY:-50}
DELAY=${DELAY:-80ms}
PORT=${PORT:-18701}
RELAY_PORT=${RELAY_PORT:-16390}
COMPARE=${COMPARE:-}

# shellcheck source=bench/lib.sh
source bench/lib.sh
(cd bench && go build -o "$tmp/slowredis" ./cmd/slowredis)

run() { # label binary
  "$tmp/slowredis" -listen "127.0.0.1:$RELAY_PORT" -every "$EVERY" -delay "$DELAY" & local relay=$!
  pids+=("$relay")
  REDIS_URL="redis://127.0.0.1:$RELAY_PORT/0" MCP_ADDR="127.0.0.1:$PORT" "$2" >"$tmp/$1.log" 2>&1 & local api=$!
  pids+=("$api")
  wait_healthy "$PORT"
  printf '%s: ' "$1"
  for _ in $(seq "$N"); do
    curl -s -o /dev/null -w '%{http_code}\n' -X POST "http://127.0.0.1:$PORT/mcp" \
      -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      --data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}'
  done | sort | uniq -c | awk '{ printf "%s × %s  ", $1, $2 } END { print "" }'
  kill "$api" "$relay"
  wait "$api" "$relay" 2>/dev/null || true
}

for spec in $COMPARE; do
  run "${spec%%=*}" "${spec#*=}"
done
run this "$tmp/api"
