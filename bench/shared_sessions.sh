#!/usr/bin/env bash
# tools/call throughput with client sessions in Redis against the
# in-memory session mode (the target: at least 80 % of it), and with the
# sessions on a Redis Cluster against a single Redis node (the target: at
# least 90 % of it), with the same load tool, on the same machine, in one
# run.
#
# Starts one cmd/api process on the embedded store per mode in MODES:
#   memory   no Redis: client sessions in memory
#   redis    REDIS_URL: client sessions shared through one Redis node
#   cluster  CLUSTER_URL with MCP_REDIS_MODE=cluster: shared through a
#            Redis Cluster (scripts/redis-cluster.sh start brings one up;
#            the default URL is that cluster's)
# For each round and each concurrency C it runs mcpload against each mode
# in turn.
#
# Prints one markdown row per (round, C, mode), the median of each mode
# and its ratio to the first mode's.
#
# Usage:  bench/shared_sessions.sh        (from any directory)
# Environment:
#   ROUNDS=5  CONCURRENCY="1 16"  DURATION=10s  WARMUP=2s
#   MODES="memory redis"  (e.g. MODES="redis cluster")
#   REDIS_URL=redis://127.0.0.1:6379/15
#   CLUSTER_URL=$(scripts/redis-cluster.sh url)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
CONCURRENCY=${CONCURRENCY:-1 16}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
MODES=${MODES:-memory redis}
BASE_PORT=${BASE_PORT:-18493}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/15}

# shellcheck source=bench/lib.sh
source bench/lib.sh
declare -A port
i=0
for mode in $MODES; do
  port[$mode]=$((BASE_PORT + i))
  i=$((i + 1))
  case $mode in
  memory) env=() ;;
  redis) env=("REDIS_URL=$REDIS_URL") ;;
  cluster) env=("REDIS_URL=${CLUSTER_URL:-$(scripts/redis-cluster.sh url)}" MCP_REDIS_MODE=cluster) ;;
  *) echo "unknown mode $mode (memory, redis or cluster)" >&2; exit 2 ;;
  esac
  env "${env[@]}" MCP_ADDR="127.0.0.1:${port[$mode]}" "$tmp/api" >"$tmp/$mode.log" 2>&1 & pids+=($!)
done
for mode in $MODES; do wait_healthy "${port[$mode]}"; done

run() { # port C
  "$tmp/mcpload" -url "http://127.0.0.1:$1/mcp" -tool runtime_echo -args '{"text":"hello"}' -sessions "$2" -concurrency "$2" \
    -duration "$DURATION" -warmup "$WARMUP" -json 2>/dev/null
}

echo "| round | C | sessions | req/s | p50 µs | p99 µs | errors |"
echo "|---:|---:|---|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do for c in $CONCURRENCY; do
  for mode in $MODES; do run "${port[$mode]}" "$c" | row "$round" "$c" "$mode"; done
done; done | tee "$tmp/rows"
echo
read -r first _ <<<"$MODES"
# The machine's speed drifts between rounds: besides each mode's median,
# the median of the ratios within each round, where both modes ran back
# to back.
echo "Medians of the rounds (req/s); in brackets the median of the per-round ratios to $first"
for c in $CONCURRENCY; do
  line="C=$c:"
  for mode in $MODES; do
    r=$(awk -F'|' -v c="$c" -v f="$first" -v m="$mode" '
      {p = $4; gsub(/ /, "", p)} $3+0 == c && p == f {base[$2+0] = $5+0} $3+0 == c && p == m {v[$2+0] = $5+0}
      END {for (k in v) if (base[k] > 0) print v[k] / base[k]}' "$tmp/rows" | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}')
    line+=" $mode $(median 5 "$mode" "$c") ($r)"
  done
  echo "$line"
done
