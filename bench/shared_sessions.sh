#!/usr/bin/env bash
# tools/call throughput with client sessions in Redis against the
# in-memory session mode (the target: at least 80 % of it), with the same load
# tool, on the same machine, in one run.
#
# Starts two cmd/api processes on the embedded store: one without Redis
# (client sessions in memory) on MEMORY_PORT, one with REDIS_URL (client
# sessions shared through Redis) on REDIS_PORT. For each round and each
# concurrency C it runs mcpload against one, then the other, alternating.
#
# Prints one markdown row per (round, C, mode) and the median ratio.
#
# Usage:  bench/shared_sessions.sh        (from any directory)
# Environment:
#   ROUNDS=5  CONCURRENCY="1 16"  DURATION=10s  WARMUP=2s
#   REDIS_URL=redis://127.0.0.1:6379/15
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
CONCURRENCY=${CONCURRENCY:-1 16}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
MEMORY_PORT=${MEMORY_PORT:-18493}
REDIS_PORT=${REDIS_PORT:-18494}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/15}

# shellcheck source=bench/lib.sh
source bench/lib.sh
MCP_ADDR=127.0.0.1:$MEMORY_PORT "$tmp/api" >"$tmp/memory.log" 2>&1 & pids+=($!)
MCP_ADDR=127.0.0.1:$REDIS_PORT REDIS_URL=$REDIS_URL "$tmp/api" >"$tmp/redis.log" 2>&1 & pids+=($!)
wait_healthy "$MEMORY_PORT"
wait_healthy "$REDIS_PORT"

run() { # port C
  "$tmp/mcpload" -url "http://127.0.0.1:$1/mcp" -tool runtime_echo -args '{"text":"hello"}' -sessions "$2" -concurrency "$2" \
    -duration "$DURATION" -warmup "$WARMUP" -json 2>/dev/null
}

echo "| round | C | sessions | req/s | p50 µs | p99 µs | errors |"
echo "|---:|---:|---|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do for c in $CONCURRENCY; do
  for mode in memory redis; do
    if [ "$mode" = memory ]; then run "$MEMORY_PORT" "$c"; else run "$REDIS_PORT" "$c"; fi | row "$round" "$c" "$mode"
  done
done; done | tee "$tmp/rows"
echo
echo "Medians of the rounds (req/s): ratio = redis / memory"
for c in $CONCURRENCY; do
  m=$(median 5 memory "$c")
  r=$(median 5 redis "$c")
  echo "C=$c: memory $m req/s, redis $r req/s, ratio $(awk -v m="$m" -v r="$r" 'BEGIN {printf "%.2f", r/m}')"
done
