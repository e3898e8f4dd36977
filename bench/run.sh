#!/usr/bin/env bash
# Benchmark Streamable HTTP MCP servers with cmd/mcpload.
#
# Builds the comparison servers of this module (bench/cmd/...) and
# ../cmd/mcpload, then for each server in turn: starts it on a free loopback
# port, waits until it answers `initialize`, and for each load level runs an
# unmeasured warmup followed by a measured mcpload run (-sessions N
# -concurrency N). The server process's CPU time (utime+stime from
# /proc/PID/stat) is sampled around the measured run. Prints a markdown table.
#
# Usage:  bench/run.sh                     (from any directory)
#
# Environment:
#   DURATION=10s        length of each measured run
#   WARMUP=2s           unmeasured load before each measured run (0 = none)
#   LOADS="16 64"       load levels; each is used as -sessions and -concurrency
#   SERVERS="bare mcpgo gosdk"
#                       built-in servers to run, in order ("" = none)
#   EXTRA_SERVERS       more servers, one per line:
#                         name|command[|tool[|args-json[|path]]]
#                       command   run with bash; every {addr} in it becomes
#                                 127.0.0.1:PORT; without {addr},
#                                 "-addr 127.0.0.1:PORT" is appended
#                       tool      tool to call (default: echo)
#                       args-json tool arguments (default: {"text":"hello"})
#                       path      endpoint path (default: /mcp)
#                       The command must run the server in the foreground
#                       (its CPU time is read from the process bash execs).
#   MCPLOAD_FLAGS       extra flags for every mcpload run, shell-quoted, e.g.
#                       MCPLOAD_FLAGS="-header 'Authorization: Bearer x'"
#   RESULTS             if set, a file that receives every mcpload JSON line
#
# Example:
#   EXTRA_SERVERS='mcp-runtime|/tmp/mcp-runtime serve --listen {addr}|echo' \
#     DURATION=5s bench/run.sh
set -euo pipefail

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
LOADS=${LOADS:-16 64}
SERVERS=${SERVERS-bare mcpgo gosdk}
EXTRA_SERVERS=${EXTRA_SERVERS:-}
MCPLOAD_FLAGS=${MCPLOAD_FLAGS:-}
DEFAULT_TOOL="echo"
DEFAULT_ARGS='{"text":"hello"}'
DEFAULT_PATH=/mcp

bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root_dir=$(cd "$bench_dir/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/mcpbench.XXXXXX")
bin=$work/bin
server_pid=""
load_pid=""

stop_pid() {
	if [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; then
		kill "$1" 2>/dev/null || true
		wait "$1" 2>/dev/null || true
	fi
}

cleanup() {
	stop_pid "$load_pid"
	stop_pid "$server_pid"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
	echo "run.sh: $*" >&2
	exit 1
}

command -v python3 >/dev/null || die "python3 is required"
command -v curl >/dev/null || die "curl is required"
clk_tck=$(getconf CLK_TCK)

echo "building into $bin" >&2
mkdir -p "$bin"
(cd "$bench_dir" && go build -buildvcs=false -o "$bin/" ./cmd/...) || die "build of bench servers failed"
(cd "$root_dir" && go build -buildvcs=false -o "$bin/mcpload" ./cmd/mcpload) || die "build of mcpload failed"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# cpu_ticks PID: utime+stime of the process, in clock ticks. The comm field
# may contain spaces, so fields are counted after its closing parenthesis.
cpu_ticks() {
	local stat
	stat=$(<"/proc/$1/stat") || return 1
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	echo $(( ${12} + ${13} ))
}

# wait_ready URL: until the server answers initialize with 200 (max ~10s).
wait_ready() {
	local url=$1 code
	local body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"run.sh","version":"0"}}}'
	for _ in $(seq 100); do
		kill -0 "$server_pid" 2>/dev/null || return 1
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST \
			-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
			--data "$body" "$url" || true)
		[[ $code == 200 ]] && return 0
		sleep 0.1
	done
	return 1
}

# mcpload OUT ARGS...: runs mcpload with stdout to OUT. It runs in the
# background so that a signal to this script is handled at once (bash runs
# traps only between foreground commands) and cleanup can stop it.
mcpload() {
	local out=$1
	shift
	"$bin/mcpload" "$@" >"$out" &
	load_pid=$!
	local rc=0
	wait "$load_pid" || rc=$?
	load_pid=""
	return "$rc"
}

rows=$work/rows.tsv
: >"$rows"

# bench_server NAME COMMAND TOOL ARGS PATH
bench_server() {
	local name=$1 cmd=$2 tool=${3:-$DEFAULT_TOOL} args=${4:-$DEFAULT_ARGS} path=${5:-$DEFAULT_PATH}
	local port addr url log load before after out
	port=$(free_port)
	addr=127.0.0.1:$port
	if [[ $cmd == *"{addr}"* ]]; then
		cmd=${cmd//\{addr\}/$addr}
	else
		cmd="$cmd -addr $addr"
	fi
	url=http://$addr$path
	log=$work/$name.log
	echo "== $name: $cmd" >&2
	bash -c "exec $cmd" >"$log" 2>&1 &
	server_pid=$!
	if ! wait_ready "$url"; then
		tail -n 20 "$log" >&2 || true
		die "$name did not answer initialize at $url"
	fi
	for load in $LOADS; do
		local common=(-url "$url" -sessions "$load" -concurrency "$load" -tool "$tool" -args "$args")
		eval "common+=($MCPLOAD_FLAGS)"
		if [[ $WARMUP != 0 && $WARMUP != 0s ]]; then
			mcpload /dev/null "${common[@]}" -duration "$WARMUP" -warmup 0 2>/dev/null ||
				die "$name: warmup run failed"
		fi
		before=$(cpu_ticks "$server_pid") || die "$name exited during the run"
		mcpload "$work/out.json" "${common[@]}" -duration "$DURATION" -warmup 0 -json ||
			die "$name: mcpload failed at load $load"
		after=$(cpu_ticks "$server_pid") || die "$name exited during the run"
		out=$(<"$work/out.json")
		[[ -n ${RESULTS:-} ]] && printf '%s\n' "$out" >>"$RESULTS"
		printf '%s\t%s\t%s\t%s\n' "$name" "$load" "$((after - before))" "$out" >>"$rows"
	done
	stop_pid "$server_pid"
	server_pid=""
}

for s in $SERVERS; do
	[[ -x $bin/$s ]] || die "unknown built-in server $s"
	bench_server "$s" "$(printf '%q' "$bin/$s")"
done
while IFS= read -r spec; do
	[[ -z ${spec//[[:space:]]/} ]] && continue
	IFS='|' read -r name cmd tool args path <<<"$spec"
	[[ -n $name && -n $cmd ]] || die "bad EXTRA_SERVERS entry: $spec"
	bench_server "$name" "$cmd" "$tool" "$args" "$path"
done <<<"$EXTRA_SERVERS"

echo >&2
python3 - "$rows" "$clk_tck" "$DURATION" <<'PY'
import json, sys

rows_path, clk_tck, duration = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(f"duration {duration} per run; sessions = concurrency; latency and CPU in µs\n")
print("| server | concurrency | req/s | p50 µs | p99 µs | CPU µs/call | errors |")
print("|---|---:|---:|---:|---:|---:|---:|")
with open(rows_path) as f:
    for line in f:
        name, load, ticks, out = line.rstrip("\n").split("\t", 3)
        s = json.loads(out)
        reqs = s["requests"]
        cpu = f"{int(ticks) / clk_tck * 1e6 / reqs:.1f}" if reqs else "n/a"
        lat = s["latency_us"]
        print(f"| {name} | {load} | {s['rps']:.0f} | {lat['p50']} | {lat['p99']} | {cpu} | {s['errors']} |")
PY
