#!/usr/bin/env bash
# The scaling curve of the mixed workload: throughput with 1, 2 and 3
# replicas of cmd/api sharing PostgreSQL and Redis (the production
# scale-out of README "Scale-out"), and with one replica at 16, 64 and 256
# concurrent clients, with where the CPU goes at each step.
#
# The load is README's mixed workload ("Load testing with cmd/mcpload"):
# runtime_echo, memory_retrieve and memory_store on 500 keys, and a
# -mix-mutating memory_store on k1 that -subscribers sessions subscribed to
# memory://default/k1 hear of. The client sessions and the subscribers are
# spread over the replicas in turn (-url and -subscribe-urls lists), so
# most notifications cross replicas through Redis.
#
# Every run starts its replicas afresh on the same PostgreSQL database
# (created by this script, migrations applied at start-up, dropped on exit)
# and on a flushed Redis database, with default settings otherwise. The
# CPU time (utime+stime of /proc/PID/stat) of each process group is read
# when mcpload's warmup ends and again a quarter second before its
# measured phase does, so the window lies inside the measured phase. The
# groups are the api replicas (summed), every postgres process,
# redis-server and mcpload, and the machine's busy time from /proc/stat
# besides. Everything shares the machine's cores: more
# replicas on one machine do not add cores, they show what the
# coordination between replicas costs.
#
# Prints one markdown row per (round, replicas, C), then the medians of
# the rounds and the per-request CPU of each group; "other" is the rest of
# the machine's busy time (kernel threads, this script, anything else
# running), so a large one in a round says the machine was not quiet.
# "irq" is the part of the machine's busy time spent in interrupts, mostly
# the loopback networking between the processes; the kernel charges it to
# the process it interrupted, so it is inside the groups, not beside them.
#
# Usage:  bench/scaling.sh                (from any directory)
# Environment:
#   ROUNDS=3  DURATION=10s  WARMUP=3s  (WARMUP > 0: the window starts at its end)
#   REPLICAS="1 2 3"  REPLICA_C="64"   part A: replicas at these concurrencies
#   CONCURRENCY="16 64 256"            part B: one replica at these
#   SUBSCRIBERS=50  NOTIFY_WAIT=2s     (mcpload -notify-wait)
#   PGURL=postgres://postgres@127.0.0.1:5432   (trust auth; the database is made here)
#   REDIS_ADDR=127.0.0.1:6379  REDIS_DB=12     (flushed before every run)
#   BASE_PORT=18620
#   API_ENV=""                         extra environment of every replica
#   RESULTS=FILE                       keep the raw rows (TSV) in FILE
#   REPORT=FILE                        only print the tables of the rows kept in FILE
#   QUIET=60                           before each run, wait up to this many
#                                      seconds for the machine to be under 15 %
#                                      busy over 3 s (0: do not wait)
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-3s}
REPLICAS=${REPLICAS:-1 2 3}
REPLICA_C=${REPLICA_C:-64}
CONCURRENCY=${CONCURRENCY:-16 64 256}
SUBSCRIBERS=${SUBSCRIBERS:-50}
NOTIFY_WAIT=${NOTIFY_WAIT:-2s}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
REDIS_ADDR=${REDIS_ADDR:-127.0.0.1:6379}
REDIS_DB=${REDIS_DB:-12}
BASE_PORT=${BASE_PORT:-18620}
API_ENV=${API_ENV:-}
QUIET=${QUIET:-60}

seconds() { # a Go duration of s, ms or m, in seconds
	case $1 in
	*ms) awk -v v="${1%ms}" 'BEGIN {print v / 1000}' ;;
	*s) echo "${1%s}" ;;
	*m) awk -v v="${1%m}" 'BEGIN {print v * 60}' ;;
	*) echo "want a duration such as 10s, got $1" >&2; return 1 ;;
	esac
}
duration_s=$(seconds "$DURATION")
warmup_s=$(seconds "$WARMUP")
if awk -v w="$warmup_s" 'BEGIN {exit !(w <= 0)}'; then
	echo "WARMUP must be positive: the measured window starts when it ends" >&2
	exit 2
fi

# report FILE prints the tables of the raw rows in FILE.
report() {
	python3 - "$1" "$(getconf CLK_TCK)" "$(nproc)" <<'PY'
import json, statistics, sys
from collections import defaultdict

path, hz, cores = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
groups = ["api", "postgres", "redis", "mcpload"]
runs = defaultdict(list)
print("| round | replicas | C | req/s | p50 µs | p99 µs | errors | notifications received/expected | notification p99 µs | "
      "updates dropped | Redis fallbacks | CPU s: api, postgres, redis, mcpload, other (irq) | machine busy | req/s per api core |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
for line in open(path):
    rnd, n, c, wall, *ticks, dropped, fallbacks, out = line.rstrip("\n").split("\t", 13)
    wall = float(wall)
    api, pg, redis, load, irq, busy = (int(t) / hz for t in ticks)
    s = json.loads(out)
    nt = s["notifications"]
    reqs = s["rps"] * wall  # requests in the CPU window
    r = {
        "rps": s["rps"], "p50": s["latency_us"]["p50"], "p99": s["latency_us"]["p99"], "errors": s["errors"],
        "received": nt["received"], "expected": nt["expected"], "np99": nt["latency_us"]["p99"],
        "busy": busy / wall / cores, "per_core": s["rps"] / (api / wall) if api else float("nan"),
        "dropped": int(dropped), "fallbacks": int(fallbacks),
    }
    for g, v in zip(groups + ["irq"], (api, pg, redis, load, irq)):
        r[g] = v
        r[g + "_us"] = v * 1e6 / reqs if reqs else float("nan")
        r[g + "_cores"] = v / wall
    # Interrupt time is charged to the process a CPU was running, so it
    # is inside the groups already: irq is a part, not another group.
    other = busy - api - pg - redis - load
    r["other_us"] = other * 1e6 / reqs if reqs else float("nan")
    r["other_cores"] = other / wall
    runs[(int(n), int(c))].append(r)
    print(f"| {rnd} | {n} | {c} | {r['rps']:.0f} | {r['p50']} | {r['p99']} | {r['errors']} | {r['received']}/{r['expected']} | "
          f"{r['np99']} | {r['dropped']} | {r['fallbacks']} | {api:.2f}, {pg:.2f}, {redis:.2f}, {load:.2f}, {other:.2f} ({irq:.2f}) | {r['busy']:.0%} | {r['per_core']:.0f} |")

med = lambda rs, k: statistics.median(x[k] for x in rs)
print()
print(f"Medians of the rounds ({cores} cores; CPU in cores busy over the window, and µs per request)")
print()
print("| replicas | C | req/s | p50 µs | p99 µs | errors (sum) | missed notifications (sum) | notification p99 µs | updates dropped (sum) | "
      "api cores | postgres cores | redis cores | mcpload cores | other cores | machine busy | "
      "api µs/req | postgres µs/req | redis µs/req | mcpload µs/req | other µs/req | of all, in irq µs/req | req/s per api core |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (n, c), rs in sorted(runs.items()):
    cells = [f"{med(rs, 'rps'):.0f}", f"{med(rs, 'p50'):.0f}", f"{med(rs, 'p99'):.0f}", str(sum(x["errors"] for x in rs)),
             str(sum(max(0, x["expected"] - x["received"]) for x in rs)), f"{med(rs, 'np99'):.0f}", str(sum(x["dropped"] for x in rs))]
    cells += [f"{med(rs, g + '_cores'):.2f}" for g in groups + ["other"]] + [f"{med(rs, 'busy'):.0%}"]
    cells += [f"{med(rs, g + '_us'):.0f}" for g in groups + ["other", "irq"]] + [f"{med(rs, 'per_core'):.0f}"]
    print(f"| {n} | {c} | " + " | ".join(cells) + " |")
PY
}
if [[ -n ${REPORT:-} ]]; then
	report "$REPORT"
	exit
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh # $tmp, cleanup of $pids, $tmp/api and $tmp/mcpload, cpu_ticks, wait_healthy

db=mcp_scaling_$$
psql "$PGURL/postgres" -qAtc "CREATE DATABASE $db" >/dev/null
# After lib.sh's cleanup has stopped the replicas, so no connection is left.
trap 'cleanup; psql "$PGURL/postgres" -qAtc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
redis() { redis-cli -h "${REDIS_ADDR%:*}" -p "${REDIS_ADDR##*:}" -n "$REDIS_DB" "$@"; }
redis_pid=$(redis info server | sed -n 's/^process_id:\([0-9]*\).*/\1/p')
[[ -n $redis_pid && -r /proc/$redis_pid/stat ]] || { echo "redis-server at $REDIS_ADDR is not a process of this machine" >&2; exit 1; }
# The same secret on every replica, as README's configuration table asks
# of requestState.key; the legacy era measured here does not use it.
state_key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

replica_pids=()
start_replicas() { # N
	redis flushdb >/dev/null
	replica_pids=()
	local i port
	for i in $(seq 0 $(($1 - 1))); do
		port=$((BASE_PORT + i))
		# shellcheck disable=SC2086 # API_ENV is words
		env DATABASE_URL="$PGURL/$db?sslmode=disable" REDIS_URL="redis://$REDIS_ADDR/$REDIS_DB" \
			MCP_REQUEST_STATE_KEY="$state_key" MCP_ADDR="127.0.0.1:$port" $API_ENV \
			"$tmp/api" >"$tmp/api-$i.log" 2>&1 &
		replica_pids+=($!)
		pids+=($!)
	done
	for i in $(seq 0 $(($1 - 1))); do wait_healthy $((BASE_PORT + i)); done
}
stop_replicas() {
	local p
	for p in "${replica_pids[@]}"; do kill "$p"; done
	for p in "${replica_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
endpoints() { # N: the endpoints of N replicas, comma-separated
	local i out=""
	for i in $(seq 0 $(($1 - 1))); do out+=${out:+,}http://127.0.0.1:$((BASE_PORT + i))/mcp; done
	echo "$out"
}

# A process may end between pgrep and the read: it then counts 0.
ticks() { { cpu_ticks "$1" 2>/dev/null; } || echo 0; }
# The machine's busy time, and of it the interrupts' (mostly the kernel's
# loopback networking, which no process is charged with).
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
irq_ticks() { awk '/^cpu / {print $7 + $8; exit}' /proc/stat; }
# Both samples read the same things in the same order, the many postgres
# processes last.
declare -A pg_before
sample_before() {
	local p
	wall_before=$(date +%s%N)
	load_before=$(ticks "$load_pid")
	api_before=0
	for p in "${replica_pids[@]}"; do api_before=$((api_before + $(ticks "$p"))); done
	redis_before=$(ticks "$redis_pid")
	irq_before=$(irq_ticks)
	busy_before=$(busy_ticks)
	pg_before=()
	for p in $(pgrep -x postgres); do pg_before[$p]=$(ticks "$p"); done
}
sample_after() { # prints: wall_s api pg redis mcpload irq busy (ticks)
	local p wall load api=0 redis irq busy pg=0
	wall=$(date +%s%N)
	load=$(($(ticks "$load_pid") - load_before))
	for p in "${replica_pids[@]}"; do api=$((api + $(ticks "$p"))); done
	redis=$(($(ticks "$redis_pid") - redis_before))
	irq=$(($(irq_ticks) - irq_before))
	busy=$(($(busy_ticks) - busy_before))
	# A postgres process started inside the window (a new pool
	# connection) counts from 0.
	for p in $(pgrep -x postgres); do pg=$((pg + $(ticks "$p") - ${pg_before[$p]:-0})); done
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(awk -v n=$((wall - wall_before)) 'BEGIN {printf "%.3f", n / 1e9}')" \
		$((api - api_before)) "$pg" "$redis" "$load" "$irq" "$busy"
}
# The sum over the replicas of a counter of /metrics: what the run cost
# the notifications (updates dropped on a full shared-session log queue)
# and Redis (calls that fell back to the database), warmup included.
metric() {
	local i n=0 v
	for i in $(seq 0 $((${#replica_pids[@]} - 1))); do
		v=$(curl -sf "http://127.0.0.1:$((BASE_PORT + i))/metrics" | awk -v m="$1" '$1 == m {printf "%d", $2}')
		n=$((n + ${v:-0}))
	done
	echo "$n"
}

mix=(-mix 'runtime_echo:4:{"text":"hi {{seq}}"}'
	-mix 'memory_retrieve:3:{"key":"r{{rand:500}}"}'
	-mix 'memory_store:2:{"key":"r{{rand:500}}","value":{{seq}}}'
	-mix-mutating 'memory_store:1:{"key":"k1","value":{{seq}}}')

# On a shared machine, another's build or benchmark would be charged to
# "other" and slow every group: wait for a quiet moment, as the other
# measurements in BENCHMARKS.md do.
quiet() {
	local b1 t1 b2 t2 waited=0
	while ((waited < QUIET)); do
		read -r b1 t1 < <(awk '/^cpu / {b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6; exit}' /proc/stat)
		sleep 3
		read -r b2 t2 < <(awk '/^cpu / {b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6; exit}' /proc/stat)
		((100 * (b2 - b1) < 15 * (t2 - t1))) && return
		waited=$((waited + 3))
	done
	echo "the machine is still busy after ${QUIET}s; measuring anyway" >&2
}

run() { # ROUND REPLICAS C: one measured run, one TSV row
	local urls
	quiet
	start_replicas "$2"
	urls=$(endpoints "$2")
	"$tmp/mcpload" -url "$urls" -sessions "$3" -concurrency "$3" -duration "$DURATION" -warmup "$WARMUP" -seed "$1" \
		"${mix[@]}" -subscribers "$SUBSCRIBERS" -subscribe-uri memory://default/k1 -subscribe-urls "$urls" \
		-notify-wait "$NOTIFY_WAIT" -json >"$tmp/out.json" 2>"$tmp/load.err" &
	load_pid=$!
	until grep -q 'warming up' "$tmp/load.err"; do
		kill -0 "$load_pid" 2>/dev/null || { cat "$tmp/load.err" >&2; exit 1; }
		sleep 0.01
	done
	# The window starts a little after the measured phase (the polling
	# above) and ends a quarter second before it, so that mcpload, which
	# exits as soon as its notifications are in, is still there to be read.
	sleep "$warmup_s"
	sample_before
	sleep "$(awk -v d="$duration_s" 'BEGIN {print d - 0.25}')"
	window=$(sample_after)
	wait "$load_pid" || { cat "$tmp/load.err" >&2; tail -n 20 "$tmp"/api-*.log >&2; exit 1; }
	counters="$(metric mcp_shared_session_dropped_total)	$(metric mcp_redis_degradations_total)"
	stop_replicas
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$window" "$counters" "$(cat "$tmp/out.json")" >>"$rows"
	echo "round $1: $2 replica(s), C=$3 done" >&2
}

# Every retrieved key exists before the first measurement: 10,000 stores
# over 500 keys leave none out (the chance of missing one is 500·e^-20).
start_replicas 1
"$tmp/mcpload" -url "$(endpoints 1)" -sessions 4 -concurrency 4 -requests 10000 -warmup 0 -tool memory_store \
	-args '{"key":"r{{rand:500}}","value":{{seq}}}' >/dev/null 2>&1
stop_replicas

configs=()
for n in $REPLICAS; do for c in $REPLICA_C; do configs+=("$n $c"); done; done
for c in $CONCURRENCY; do [[ " ${configs[*]} " == *" 1 $c "* ]] || configs+=("1 $c"); done

rows=${RESULTS:-$tmp/rows.tsv}
: >"$rows"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $(uname -r); $(go version | cut -d' ' -f3)"
for round in $(seq "$ROUNDS"); do
	for cfg in "${configs[@]}"; do
		# shellcheck disable=SC2086 # "N C"
		run "$round" $cfg
	done
done
report "$rows"
