#!/usr/bin/env bash
# The latency and CPU the gateway adds: runtime_echo called directly on an
# upstream mcp-runtime, and the same tool called through a second
# mcp-runtime that federates it (runtime2_runtime_echo), with the same load
# tool, on the same machine, in one run (the target: under 1 ms at p50;
# docs/gateway-hop.md).
#
# Starts two cmd/api processes on the embedded store: the upstream on
# UPSTREAM_PORT and the gateway on GATEWAY_PORT, whose YAML declares the
# upstream as server "runtime2". For each round and each concurrency C it
# runs mcpload against the upstream directly, then through the gateway,
# alternating, so that both see the same machine state. Each measured run
# follows a warm-up run of its own; the CPU time (utime+stime from
# /proc/PID/stat) of the gateway and of the upstream is read around the
# measured run only and divided by its calls.
#
# COMPARE="label=/path/to/api ..." runs each such cmd/api binary (an older
# build, or a script exec'ing one with its own environment) as a further
# gateway of the same upstream, on the ports after BASE_PORT, and each round
# measures the direct path, then each of them and the gateway built from
# this tree, in an order that rotates from round to round: a before/after
# in one run.
#
# Prints one markdown row per (round, C, path) and the medians.
#
# Usage:  bench/gateway_hop.sh        (from any directory)
# Environment:
#   ROUNDS=5  CONCURRENCY="1 16"  DURATION=10s  WARMUP=2s
#   COMPARE=           labelled cmd/api binaries to compare with (see above)
#   GATEWAY_ENV=       extra environment of the gateway process(es), e.g. GOGC=200
#   GATEWAY_CPUS=      CPUs (taskset -c list) for the gateway(s) alone; the
#                      upstream and the load tool then run on the others, so
#                      the gateway has cores of its own, as in a deployment
#                      where it runs in a pod of its own. Needs taskset.
set -euo pipefail
if [[ -n ${GATEWAY_CPUS:-} && -z ${HOP_PINNED:-} ]]; then
  others=$(python3 -c 'import os,sys; g=set(); [g.update(range(int(a),int(b or a)+1)) for a,_,b in (r.partition("-") for r in sys.argv[1].split(","))]; print(",".join(str(c) for c in sorted(os.sched_getaffinity(0)-g)))' "$GATEWAY_CPUS")
  [[ -n $others ]] || { echo "GATEWAY_CPUS=$GATEWAY_CPUS leaves no CPU for the upstream and the load tool" >&2; exit 2; }
  HOP_PINNED=1 exec taskset -c "$others" "$0" "$@"
fi
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
CONCURRENCY=${CONCURRENCY:-1 16}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
UPSTREAM_PORT=${UPSTREAM_PORT:-18491}
GATEWAY_PORT=${GATEWAY_PORT:-18492}
BASE_PORT=${BASE_PORT:-18500}
COMPARE=${COMPARE:-}
GATEWAY_ENV=${GATEWAY_ENV:-}

# shellcheck source=bench/lib.sh
source bench/lib.sh
gateway_yaml() { # port
  cat >"$tmp/gateway-$1.yaml" <<YAML
listen: "127.0.0.1:$1"
upstreams:
  - {id: runtime2, url: "http://127.0.0.1:$UPSTREAM_PORT/mcp", category: query}
YAML
  echo "$tmp/gateway-$1.yaml"
}
start_gateway() { # binary port; sets gw_pid
  # shellcheck disable=SC2086
  env $GATEWAY_ENV MCP_CONFIG="$(gateway_yaml "$2")" ${GATEWAY_CPUS:+taskset -c "$GATEWAY_CPUS"} "$1" >"$tmp/gateway-$2.log" 2>&1 & gw_pid=$!
  pids+=("$gw_pid")
  wait_healthy "$2"
  # The gateway connects to its upstream in the background.
  for _ in $(seq 100); do
    "$tmp/mcpload" -url "http://127.0.0.1:$2/mcp" -requests 1 -warmup 0 -concurrency 1 \
      -tool runtime2_runtime_echo -args '{"text":"hello"}' -json 2>/dev/null | grep -q '"errors":0' && break
    sleep 0.1
  done
}

MCP_ADDR=127.0.0.1:$UPSTREAM_PORT "$tmp/api" >"$tmp/upstream.log" 2>&1 & upstream_pid=$!
pids+=("$upstream_pid")
wait_healthy "$UPSTREAM_PORT"
declare -A gw_port gw_pids
paths=direct
port=$BASE_PORT
for spec in $COMPARE; do
  label=${spec%%=*}
  port=$((port + 1))
  start_gateway "${spec#*=}" "$port"
  gw_port[$label]=$port gw_pids[$label]=$gw_pid
  paths+=" $label"
done
start_gateway "$tmp/api" "$GATEWAY_PORT"
gw_port[gateway]=$GATEWAY_PORT gw_pids[gateway]=$gw_pid
paths+=" gateway"

run() { # path C
  local url tool=runtime2_runtime_echo gw=0 out up0 gw0 up1 gw1 n
  if [ "$1" = direct ]; then
    url=http://127.0.0.1:$UPSTREAM_PORT/mcp tool=runtime_echo
  else
    url=http://127.0.0.1:${gw_port[$1]}/mcp gw=${gw_pids[$1]}
  fi
  local args=(-url "$url" -tool "$tool" -args '{"text":"hello"}' -sessions "$2" -concurrency "$2" -json)
  "$tmp/mcpload" "${args[@]}" -duration "$WARMUP" -warmup 0 >/dev/null 2>&1
  up0=$(cpu_ticks "$upstream_pid")
  if [ "$gw" != 0 ]; then gw0=$(cpu_ticks "$gw"); fi
  out=$("$tmp/mcpload" "${args[@]}" -duration "$DURATION" -warmup 0 2>/dev/null)
  up1=$(cpu_ticks "$upstream_pid")
  if [ "$gw" != 0 ]; then gw1=$(cpu_ticks "$gw"); fi
  n=$(echo "$out" | sed -n 's/^{[^[]*"requests":\([0-9]*\).*/\1/p')
  local gwcpu=-
  if [ "$gw" != 0 ]; then gwcpu=$(cpu_per_call $((gw1 - gw0)) "$n"); fi
  echo "$out" | row "$round" "$2" "$1" "$gwcpu" "$(cpu_per_call $((up1 - up0)) "$n")"
}

echo "| round | C | path | req/s | p50 µs | p99 µs | errors | gateway CPU µs/call | upstream CPU µs/call |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|---:|"
# The gateways take turns going first: round r starts with the r-th, so
# that no build is always measured right after the same other one.
read -ra gws <<<"${paths#direct }"
for round in $(seq "$ROUNDS"); do for c in $CONCURRENCY; do
  run direct "$c"
  for i in "${!gws[@]}"; do run "${gws[$(((i + round - 1) % ${#gws[@]}))]}" "$c"; done
done; done | tee "$tmp/rows"
echo
echo "Medians of the rounds: hop = gateway p50 - direct p50; CPU per call of the gateway process, and of the upstream on the direct path"
for c in $CONCURRENCY; do
  d=$(median 6 direct "$c")
  line="C=$c: direct $d µs (upstream CPU $(median 10 direct "$c") µs/call)"
  for path in $paths; do
    [ "$path" = direct ] && continue
    g=$(median 6 "$path" "$c")
    line+="; $path $g µs, hop $((g - d)) µs, gateway CPU $(median 9 "$path" "$c") µs/call"
  done
  echo "$line"
done
