#!/usr/bin/env bash
# What one slow Redis reply does to clients: cmd/api with REDIS_URL
# pointing at bench/cmd/slowredis, which delays every EVERY-th reply chunk
# by DELAY, opens N client sessions one after another and in each calls
# memory_store and memory_retrieve (the cache tier's write and read);
# prints the HTTP statuses of each kind of request, and how many answers
# were JSON-RPC errors or tool errors, and the cache tier's Redis hits,
# misses and fallbacks from /metrics. COMPARE="label=/path/to/api ..."
# runs other builds the same way first.
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
  local h='Content-Type: application/json' a='Accept: application/json, text/event-stream' v='MCP-Protocol-Version: 2025-11-25'
  : >"$tmp/$1.statuses"
  : >"$tmp/$1.errors"
  for i in $(seq "$N"); do
    local sid
    sid=$(curl -s -o "$tmp/body" -D - -w '' -X POST "http://127.0.0.1:$PORT/mcp" -H "$h" -H "$a" \
      --data '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' |
      tee "$tmp/head" | awk -F': ' 'tolower($1)=="mcp-session-id" { sub(/\r$/, "", $2); print $2 }')
    echo "initialize $(awk 'NR==1 { print $2 }' "$tmp/head")" >>"$tmp/$1.statuses"
    [[ -n "$sid" ]] || continue
    curl -s -o /dev/null -X POST "http://127.0.0.1:$PORT/mcp" -H "$h" -H "$a" -H "$v" -H "Mcp-Session-Id: $sid" \
      --data '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    for call in "memory_store\",\"arguments\":{\"key\":\"k$i\",\"value\":$i}" "memory_retrieve\",\"arguments\":{\"key\":\"k$i\"}"; do
      local code
      code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/mcp" -H "$h" -H "$a" -H "$v" -H "Mcp-Session-Id: $sid" \
        --data "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"$call}}")
      echo "${call%%\"*} $code" >>"$tmp/$1.statuses"
      if grep -q -e '"error"' -e '"isError":true' "$tmp/body"; then echo "${call%%\"*}" >>"$tmp/$1.errors"; fi
    done
  done
  printf '%s: ' "$1"
  sort "$tmp/$1.statuses" | uniq -c | awk '{ printf "%s %s × %s  ", $2, $1, $3 } END { printf "| errors: " }'
  if [[ -s "$tmp/$1.errors" ]]; then sort "$tmp/$1.errors" | uniq -c | awk '{ printf "%s × %s  ", $2, $1 }'; else printf 'none'; fi
  # How much the cache tier used Redis: a fallback is a call that skipped
  # it or failed in it.
  curl -s "http://127.0.0.1:$PORT/metrics" |
    awk '/^mcp_cache_redis_(hits|misses)_total|^mcp_redis_degradations_total/ { printf "| %s %s ", $1, $2 } END { print "" }'
  kill "$api" "$relay"
  wait "$api" "$relay" 2>/dev/null || true
}

for spec in $COMPARE; do
  run "${spec%%=*}" "${spec#*=}"
done
run this "$tmp/api"
