#!/usr/bin/env bash
# A cached read over Streamable HTTP, side by side: mcp-runtime's
# memory_retrieve with its default settings against the same lookup in
# the bare net/http handler, mcp-go and the go-sdk (bench/cmd/..., whose
# memory_retrieve reads bench/internal/lookup's in-memory entry), in both
# protocol eras.
#
# Each measurement starts the server afresh, stores the entry (mcp-runtime
# only: the peers are seeded), reads it once, runs $WARMUP of unmeasured
# load and then $DURATION of measured load with cmd/mcpload, and reads the
# server's CPU time (utime+stime of /proc/PID/stat) around the measured
# run and its peak RSS (VmHWM of /proc/PID/status) at the end. Servers
# and eras alternate within each round, so a change in the machine's
# speed touches every server alike; the ratios to the bare handler are
# taken per round.
#
# Usage:  bench/cached_read.sh            (from any directory)
# Environment:
#   ROUNDS=5  DURATION=10s  WARMUP=2s  CONCURRENCY=16
#   ERAS="2025-11-25 2026-07-28"
#   SERVERS="bare mcpgo gosdk mcp-runtime"
#                                  and, on request, mcp-runtime exporting
#                                  OpenTelemetry traces to a sink
#                                  (bench/cmd/otlpsink): otel-1pct (1 % of
#                                  traces sampled), otel-all (every one)
#   API_ENV="MCP_LOG_LEVEL=warn"   extra environment of mcp-runtime
#   BASELINE=<git revision>        also measure cmd/api as built at that
#                                  revision, as server "baseline"
#   RESULTS=FILE                   keep the raw rows (TSV) in FILE
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CONCURRENCY=${CONCURRENCY:-16}
ERAS=${ERAS:-2025-11-25 2026-07-28}
SERVERS=${SERVERS:-bare mcpgo gosdk mcp-runtime}
API_ENV=${API_ENV:-}

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh # $tmp, cleanup of $pids, $tmp/api and $tmp/mcpload, cpu_ticks
(cd bench && go build -buildvcs=false -o "$tmp/" ./cmd/bare ./cmd/mcpgo ./cmd/gosdk ./cmd/otlpsink)
if [[ -n ${BASELINE:-} ]]; then
	git worktree add -q --detach "$tmp/baseline-src" "$BASELINE"
	(cd "$tmp/baseline-src" && go build -buildvcs=false -o "$tmp/baseline" ./cmd/api)
	git worktree remove --force "$tmp/baseline-src"
	SERVERS="$SERVERS baseline"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
peak_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
wait_ready() { # URL: until the server answers initialize with 200
	local body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cached_read.sh","version":"0"}}}'
	for _ in $(seq 200); do
		kill -0 "$server_pid" 2>/dev/null || return 1
		[[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST -H 'Content-Type: application/json' \
			-H 'Accept: application/json, text/event-stream' --data "$body" "$1" || true) == 200 ]] && return 0
		sleep 0.05
	done
	return 1
}

if [[ " $SERVERS " == *" otel-"* ]]; then
	sink_port=$(free_port)
	"$tmp/otlpsink" -addr "127.0.0.1:$sink_port" >"$tmp/sink.log" 2>&1 &
	pids+=("$!")
	otel="OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$sink_port"
fi

rows=${RESULTS:-$tmp/rows.tsv}
: >"$rows"
for round in $(seq "$ROUNDS"); do
	for era in $ERAS; do
		for s in $SERVERS; do
			port=$(free_port)
			url=http://127.0.0.1:$port/mcp
			if [[ $s == mcp-runtime || $s == baseline || $s == otel-* ]]; then
				bin=$tmp/api
				[[ $s == baseline ]] && bin=$tmp/baseline
				extra=()
				[[ $s == otel-1pct ]] && extra=("$otel" OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.01)
				[[ $s == otel-all ]] && extra=("$otel")
				# shellcheck disable=SC2086 # API_ENV is words
				env MCP_ADDR="127.0.0.1:$port" $API_ENV "${extra[@]}" "$bin" >"$tmp/server.log" 2>&1 &
			else
				"$tmp/$s" -addr "127.0.0.1:$port" >"$tmp/server.log" 2>&1 &
			fi
			server_pid=$!
			pids+=("$server_pid")
			wait_ready "$url" || { tail -n 20 "$tmp/server.log" >&2; echo "$s did not start" >&2; exit 1; }
			load=("$tmp/mcpload" -url "$url" -protocol-version "$era" -sessions "$CONCURRENCY" -concurrency "$CONCURRENCY"
				-tool memory_retrieve -args '{"key":"bench"}' -warmup 0)
			if [[ $s == mcp-runtime || $s == baseline || $s == otel-* ]]; then
				"$tmp/mcpload" -url "$url" -protocol-version "$era" -requests 1 -concurrency 1 -warmup 0 -tool memory_store \
					-args '{"key":"bench","value":{"text":"hello","n":1},"tags":["bench"]}' >/dev/null
			fi
			"${load[@]}" -requests 1 -concurrency 1 -sessions 1 >/dev/null
			[[ $WARMUP == 0 || $WARMUP == 0s ]] || "${load[@]}" -duration "$WARMUP" >/dev/null 2>&1
			before=$(cpu_ticks "$server_pid")
			out=$("${load[@]}" -duration "$DURATION" -json 2>/dev/null)
			after=$(cpu_ticks "$server_pid")
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$era" "$s" "$((after - before))" "$(peak_kib "$server_pid")" "$out" >>"$rows"
			kill "$server_pid"
			wait "$server_pid" 2>/dev/null || true
			echo "round $round $era $s done" >&2
		done
	done
done

python3 - "$rows" "$(getconf CLK_TCK)" "$SERVERS" <<'PY'
import json, statistics, sys
from collections import defaultdict

rows_path, hz, servers = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
cpu, rss, rps, errs, p50 = (defaultdict(list) for _ in range(5))
per_round = defaultdict(dict)
for line in open(rows_path):
    rnd, era, name, ticks, kib, out = line.rstrip("\n").split("\t", 5)
    s = json.loads(out)
    ok = s["requests"] - s["errors"]
    us = int(ticks) / hz * 1e6 / ok if ok else float("nan")
    k = (era, name)
    cpu[k].append(us); rss[k].append(int(kib) / 1024); rps[k].append(s["rps"])
    errs[k].append(s["errors"]); p50[k].append(s["latency_us"]["p50"])
    per_round[(rnd, era)][name] = us
print("| era | server | CPU µs per call, per round | median | × bare (median of rounds) | peak RSS MiB (max) | req/s (median) | p50 µs | errors |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|")
for era in sorted({k[0] for k in cpu}):
    for name in servers:
        k = (era, name)
        if k not in cpu:
            continue
        ratios = [r[name] / r["bare"] for (rnd, e), r in per_round.items() if e == era and "bare" in r and name in r]
        ratio = f"{statistics.median(ratios):.2f}" if ratios else "n/a"
        print(f"| {era} | {name} | {', '.join(f'{x:.1f}' for x in cpu[k])} | {statistics.median(cpu[k]):.1f} | {ratio} | "
              f"{max(rss[k]):.0f} | {statistics.median(rps[k]):.0f} | {statistics.median(p50[k]):.0f} | {sum(errs[k])} |")
PY
