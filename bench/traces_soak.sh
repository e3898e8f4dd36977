#!/usr/bin/env bash
# Resident set of cmd/api on the embedded store under full-speed
# tools/call load: every call adds a trace, and traces.maxInMemory must
# keep the process flat once the store holds that many.
#
# Starts cmd/api with its default configuration (embedded store,
# traces.maxInMemory 100000) on PORT, runs mcpload with TOOL for
# DURATION (for memory_retrieve, after storing the entry it reads), and every INTERVAL seconds prints a markdown row: seconds
# since the start, the server's VmRSS, and the traces the store holds and
# has evicted (from /metrics). At the end: the load's summary and how far
# the resident set rose after WARMUP_S seconds.
#
# Usage:  bench/traces_soak.sh        (from any directory)
# Environment:
#   DURATION=10m  INTERVAL=30  WARMUP_S=120  CONCURRENCY=16  PORT=18495
#   TOOL=runtime_echo (or memory_retrieve: a cached read of key "bench")
#   LOG_LEVEL=info (the default; the server's log goes to /dev/null, since
#   at full speed it writes about a gigabyte in ten minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10m}
INTERVAL=${INTERVAL:-30}
WARMUP_S=${WARMUP_S:-120}
CONCURRENCY=${CONCURRENCY:-16}
PORT=${PORT:-18495}
LOG_LEVEL=${LOG_LEVEL:-info}
TOOL=${TOOL:-runtime_echo}
case $TOOL in
runtime_echo) ARGS='{"text":"hi"}' ;;
memory_retrieve) ARGS='{"key":"bench"}' ;;
*) echo "traces_soak.sh: TOOL is runtime_echo or memory_retrieve" >&2; exit 2 ;;
esac

# shellcheck source=bench/lib.sh
source bench/lib.sh
MCP_ADDR=127.0.0.1:$PORT MCP_LOG_LEVEL=$LOG_LEVEL "$tmp/api" >/dev/null 2>&1 & api=$!
pids+=("$api")
wait_healthy "$PORT"
if [[ $TOOL == memory_retrieve ]]; then
  "$tmp/mcpload" -url "http://127.0.0.1:$PORT/mcp" -requests 1 -concurrency 1 -warmup 0 -tool memory_store \
    -args '{"key":"bench","value":{"text":"hello","n":1},"tags":["bench"]}' >/dev/null
fi
"$tmp/mcpload" -url "http://127.0.0.1:$PORT/mcp" -tool "$TOOL" -args "$ARGS" \
  -sessions "$CONCURRENCY" -concurrency "$CONCURRENCY" -duration "$DURATION" -json >"$tmp/load.json" 2>/dev/null & load=$!
pids+=("$load")

metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
rss() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$api/status"; }
start=$(date +%s)
echo "| t (s) | RSS (MiB) | traces held | traces evicted |"
echo "|---:|---:|---:|---:|"
while kill -0 "$load" 2>/dev/null; do
  printf '| %d | %s | %s | %s |\n' $(($(date +%s) - start)) "$(rss)" "$(metric mcp_traces_in_memory)" "$(metric mcp_traces_evicted_total)"
  sleep "$INTERVAL"
done | tee "$tmp/rows"
wait "$load"

echo
echo "mcpload: $(field requests <"$tmp/load.json") calls, $(field rps <"$tmp/load.json") req/s, $(field errors <"$tmp/load.json") errors"
awk -F'|' -v w="$WARMUP_S" '$2 + 0 >= w && $3 + 0 > 0 {
    if (base == "") base = $3 + 0
    if ($3 + 0 > top) top = $3 + 0
  }
  END {
    if (base == "") { print "no sample after the warm-up: make DURATION longer than WARMUP_S"; exit 1 }
    printf "RSS at the first sample after %d s: %.1f MiB; highest after it: %.1f MiB; growth: %.1f MiB\n", w, base, top, top - base
  }' "$tmp/rows"
