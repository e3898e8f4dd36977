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

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

go build -o "$tmp/api" ./cmd/api
go build -o "$tmp/mcpload" ./cmd/mcpload
cat >"$tmp/gateway.yaml" <<YAML
listen: "127.0.0.1:$GATEWAY_PORT"
upstreams:
  - {id: runtime2, url: "http://127.0.0.1:$UPSTREAM_PORT/mcp", category: query}
YAML

MCP_ADDR=127.0.0.1:$UPSTREAM_PORT "$tmp/api" >"$tmp/upstream.log" 2>&1 & pids+=($!)
until curl -sf "http://127.0.0.1:$UPSTREAM_PORT/healthz" >/dev/null; do sleep 0.05; done
MCP_CONFIG="$tmp/gateway.yaml" "$tmp/api" >"$tmp/gateway.log" 2>&1 & pids+=($!)
until curl -sf "http://127.0.0.1:$GATEWAY_PORT/healthz" >/dev/null; do sleep 0.05; done
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
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
lat() { sed -n "s/.*\"latency_us\":{[^}]*\"$1\":\([0-9.]*\).*/\1/p"; }

echo "| round | C | path | req/s | p50 µs | p99 µs | errors |"
echo "|---:|---:|---|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do for c in $CONCURRENCY; do
  for path in direct gateway; do
    if [ "$path" = direct ]; then out=$(run "http://127.0.0.1:$UPSTREAM_PORT/mcp" runtime_echo "$c")
    else out=$(run "http://127.0.0.1:$GATEWAY_PORT/mcp" runtime2_runtime_echo "$c"); fi
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$c" "$path" \
      "$(echo "$out" | field rps)" "$(echo "$out" | lat p50)" "$(echo "$out" | lat p99)" "$(echo "$out" | field errors)"
  done
done; done | tee "$tmp/rows"
echo
echo "Medians of the rounds (p50 µs): hop = gateway - direct"
for c in $CONCURRENCY; do
  d=$(awk -F'|' -v c="$c" '$3+0==c && $4 ~ /direct/ {print $6+0}' "$tmp/rows" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  g=$(awk -F'|' -v c="$c" '$3+0==c && $4 ~ /gateway/ {print $6+0}' "$tmp/rows" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  echo "C=$c: direct $d µs, gateway $g µs, hop $((g - d)) µs"
done
