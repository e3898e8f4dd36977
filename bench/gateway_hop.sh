#!/usr/bin/env bash
# The latency the gateway adds: runtime_echo called directly on an
# upstream mcp-runtime, and the same tool called through a second
# mcp-runtime that federates it (runtime2_runtime_echo), with the same load
# tool, on the same machine, in one run (issue 6: under 1 ms at p50).
#
# Starts two cmd/api processes on the embedded store: the upstream on
# UPSTREAM_PORT and the gateway on GATEWAY_PORT, whose YAML declares the
# upstream as server "runtime2". For each round and each concurrency C it
# runs mcpload against the upstream directly, then through the gateway,
# alternating, so that both see the same machine state.
#
# Prints one markdown row per (round, C, path) and the medians.
#
# Usage:  bench/gateway_hop.sh        (from any directory)
# Environment:
#   ROUNDS=5  CONCURRENCY="1 16"  DURATION=10s  WARMUP=2s
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
CONCURRENCY=${CONCURRENCY:-1 16}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
UPSTREAM_PORT=${UPSTREAM_PORT:-18491}
GATEWAY_PORT=${GATEWAY_PORT:-18492}

# shellcheck source=bench/lib.sh
source bench/lib.sh
cat >"$tmp/gateway.yaml" <<YAML
listen: "127.0.0.1:$GATEWAY_PORT"
upstreams:
  - {id: runtime2, url: "http://127.0.0.1:$UPSTREAM_PORT/mcp", category: query}
YAML

MCP_ADDR=127.0.0.1:$UPSTREAM_PORT "$tmp/api" >"$tmp/upstream.log" 2>&1 & pids+=($!)
wait_healthy "$UPSTREAM_PORT"
MCP_CONFIG="$tmp/gateway.yaml" "$tmp/api" >"$tmp/gateway.log" 2>&1 & pids+=($!)
wait_healthy "$GATEWAY_PORT"
# The gateway connects to its upstream in the background.
for _ in $(seq 100); do
  "$tmp/mcpload" -url "http://127.0.0.1:$GATEWAY_PORT/mcp" -requests 1 -warmup 0 -concurrency 1 \
    -tool runtime2_runtime_echo -args '{"text":"hello"}' -json 2>/dev/null | grep -q '"errors":0' && break
  sleep 0.1
done

run() { # url tool C
  "$tmp/mcpload" -url "$1" -tool "$2" -args '{"text":"hello"}' -sessions "$3" -concurrency "$3" \
    -duration "$DURATION" -warmup "$WARMUP" -json 2>/dev/null
}

echo "| round | C | path | req/s | p50 µs | p99 µs | errors |"
echo "|---:|---:|---|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do for c in $CONCURRENCY; do
  for path in direct gateway; do
    if [ "$path" = direct ]; then run "http://127.0.0.1:$UPSTREAM_PORT/mcp" runtime_echo "$c"
    else run "http://127.0.0.1:$GATEWAY_PORT/mcp" runtime2_runtime_echo "$c"; fi | row "$round" "$c" "$path"
  done
done; done | tee "$tmp/rows"
echo
echo "Medians of the rounds (p50 µs): hop = gateway - direct"
for c in $CONCURRENCY; do
  d=$(median 6 direct "$c")
  g=$(median 6 gateway "$c")
  echo "C=$c: direct $d µs, gateway $g µs, hop $((g - d)) µs"
done
