#!/usr/bin/env bash
# memory_store through cmd/api against pgbench running the same single-row
# upsert, at the same client count, on the same PostgreSQL, in one run.
#
# Builds cmd/api and cmd/mcpload, creates a fresh database, starts cmd/api
# on it (which migrates it) and seeds KEYS entries in namespace "bench" of
# the default tenant, so that every write on either side updates an
# existing row. Then, for each client count C in CLIENTS:
#
#   1. mcpload -sessions C -concurrency C calls memory_store with a random
#      key of 1..KEYS ({{rand:KEYS}}) for DURATION seconds after WARMUP
#      seconds of unmeasured load. The server also queues a trace per call
#      and writes them in batches: that is part of what memory_store costs.
#   2. VACUUM and CHECKPOINT, so neither side inherits the other's dead
#      rows or dirty buffers.
#   3. pgbench -c C runs the statement the store runs for an unconditional
#      memory_store (internal/store/pgstore/memory.go, upsertMemory with
#      RETURNING), with the same tenant, namespace, value, tags and random
#      key, as a prepared statement (pgx caches prepared statements too),
#      for WARMUP then DURATION seconds.
#
# Prints one markdown table: requests or transactions per second, latency,
# the server's CPU time per call, the traces it wrote during the measured
# run, and the ratio of memory_store to pgbench. The load generators share
# the machine with the server and PostgreSQL.
#
# Usage:  bench/store_vs_pgbench.sh          (from any directory)
#
# Environment:
#   CLIENTS="16 4"   client counts (mcpload -concurrency, pgbench -c)
#   DURATION=30      measured seconds per run
#   WARMUP=5         unmeasured seconds before each run (0 = none)
#   KEYS=10000       size of the key space both sides write
#   POOL_MAX_CONNS   if set, the server's pgxpool size (pool_max_conns in
#                    its DATABASE_URL); unset, the server's default
#   PGBENCH_THREADS  pgbench -j (default: the number of CPUs, at most C)
#   MCP_TEST_DATABASE_URL
#                    admin URL of the server to use (default: the local
#                    postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
#   RESULTS          if set, a file that receives every mcpload JSON line
set -euo pipefail

CLIENTS=${CLIENTS:-16 4}
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-5}
KEYS=${KEYS:-10000}
ADMIN_URL=${MCP_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
NAMESPACE=bench
# The value and tags both sides write; the value as the store keeps it
# (jsonb), the tags sorted as the store normalizes them.
VALUE='{"n": 42, "text": "the quick brown fox jumps over the lazy dog"}'
TAGS='{bench}'

bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root_dir=$(cd "$bench_dir/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/storebench.XXXXXX")
db=mcp_bench_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
server_pid=""
child_pid=""
db_created=""

die() {
	echo "store_vs_pgbench.sh: $*" >&2
	exit 1
}

stop_pid() {
	if [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; then
		kill "$1" 2>/dev/null || true
		wait "$1" 2>/dev/null || true
	fi
}

cleanup() {
	stop_pid "$child_pid"
	stop_pid "$server_pid"
	if [[ -n $db_created ]]; then
		psql -q -X "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in psql pgbench python3 curl; do
	command -v "$tool" >/dev/null || die "$tool is required"
done

# run_bg OUT CMD...: runs CMD with stdout to OUT in the background and waits,
# so a signal to this script is handled at once and cleanup can stop it.
run_bg() {
	local out=$1
	shift
	"$@" >"$out" &
	child_pid=$!
	local rc=0
	wait "$child_pid" || rc=$?
	child_pid=""
	return "$rc"
}

# db_url NAME [QUERY]: ADMIN_URL with its database replaced by NAME and
# QUERY (k=v&...) added to its query string.
db_url() {
	python3 - "$ADMIN_URL" "$1" "${2:-}" <<'PY'
import sys, urllib.parse as u
admin, name, extra = sys.argv[1:]
p = u.urlsplit(admin)
q = "&".join(x for x in (p.query, extra) if x)
print(u.urlunsplit((p.scheme, p.netloc, "/" + name, q, p.fragment)))
PY
}

sql() { psql -q -X -v ON_ERROR_STOP=1 "$(db_url "$db")" "$@"; }

cpu_ticks() {
	local stat
	stat=$(<"/proc/$1/stat") || return 1
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	echo $((${12} + ${13}))
}

# pg_ticks: CPU time of every process named postgres (backends, WAL
# writer, autovacuum...), plus what the postmaster (the oldest) has
# collected from children that exited, such as pgbench's backends; in
# clock ticks, 0 where PostgreSQL is remote.
pg_ticks() {
	local t=0 p n stat postmaster
	postmaster=$(pgrep -o -x postgres || true)
	for p in $(pgrep -x postgres || true); do
		n=$(cpu_ticks "$p" 2>/dev/null) && t=$((t + n))
	done
	if [[ -n $postmaster ]] && stat=$(<"/proc/$postmaster/stat"); then
		stat=${stat##*) }
		# shellcheck disable=SC2086
		set -- $stat
		t=$((t + ${14} + ${15}))
	fi
	echo "$t"
}

# busy_ticks: busy CPU time of the whole machine, in clock ticks.
busy_ticks() {
	local _ u n s i w x y z
	read -r _ u n s i w x y z _ </proc/stat
	echo $((u + n + s + x + y + z))
}

echo "building into $work" >&2
(cd "$root_dir" && go build -o "$work/api" ./cmd/api && go build -o "$work/mcpload" ./cmd/mcpload) ||
	die "build failed"

psql -q -X -v ON_ERROR_STOP=1 "$ADMIN_URL" -c "CREATE DATABASE $db" >/dev/null || die "cannot create database $db"
db_created=1
server_db_url=$(db_url "$db" "${POOL_MAX_CONNS:+pool_max_conns=$POOL_MAX_CONNS}")

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
addr=127.0.0.1:$port
url=http://$addr/mcp
echo "== cmd/api on $addr, database $db${POOL_MAX_CONNS:+, pool_max_conns=$POOL_MAX_CONNS}" >&2
env MCP_ADDR="$addr" DATABASE_URL="$server_db_url" "$work/api" >"$work/api.log" 2>&1 &
server_pid=$!
for _ in $(seq 300); do
	curl -sf "http://$addr/healthz" >/dev/null 2>&1 && break
	kill -0 "$server_pid" 2>/dev/null || { tail -n 20 "$work/api.log" >&2; die "cmd/api exited"; }
	sleep 0.1
done
curl -sf "http://$addr/healthz" >/dev/null || die "cmd/api did not become ready"

# Seed the key space as the store would have written it.
sql -c "INSERT INTO memory_entries (tenant, namespace, key, value, tags, version, created_at, updated_at)
	SELECT 'default', '$NAMESPACE', 'k-' || i, '$VALUE'::jsonb, '$TAGS', 1, now(), now()
	FROM generate_series(1, $KEYS) AS i" -c "VACUUM ANALYZE memory_entries"

cat >"$work/upsert.sql" <<EOF
\\set k random(1, $KEYS)
INSERT INTO memory_entries AS m (tenant, namespace, key, value, tags, version, created_at, updated_at, expires_at)
VALUES ('default', '$NAMESPACE', 'k-' || :k, '$VALUE', '$TAGS', 1, now(), now(), NULL)
ON CONFLICT (tenant, namespace, key) DO UPDATE SET
    value = excluded.value,
    tags = excluded.tags,
    version = CASE WHEN m.expires_at <= excluded.updated_at THEN 1 ELSE m.version + 1 END,
    created_at = CASE WHEN m.expires_at <= excluded.updated_at THEN excluded.created_at ELSE m.created_at END,
    updated_at = greatest(m.updated_at, excluded.updated_at),
    expires_at = excluded.expires_at
RETURNING namespace, key, value, tags, version, created_at, updated_at, expires_at;
EOF

settle() { sql -c "VACUUM memory_entries" -c "VACUUM traces" -c "CHECKPOINT"; }

# pgbench_run C SECONDS OUT
pgbench_run() {
	local c=$1 secs=$2 out=$3 threads
	threads=${PGBENCH_THREADS:-$(nproc)}
	((threads > c)) && threads=$c
	run_bg "$out" pgbench -n -M prepared -c "$c" -j "$threads" -T "$secs" -f "$work/upsert.sql" "$(db_url "$db")" 2>&1
}

clk_tck=$(getconf CLK_TCK)
rows=$work/rows.tsv
: >"$rows"
args="{\"namespace\":\"$NAMESPACE\",\"key\":\"k-{{rand:$KEYS}}\",\"value\":$VALUE,\"tags\":[\"bench\"]}"
for c in $CLIENTS; do
	echo "== C=$c: memory_store" >&2
	common=(-url "$url" -sessions "$c" -concurrency "$c" -tool memory_store -args "$args" -json)
	if ((WARMUP > 0)); then
		run_bg /dev/null "$work/mcpload" "${common[@]}" -duration "${WARMUP}s" -warmup 0 2>/dev/null || die "warmup failed"
	fi
	sleep 1 # the warmup's last batch of traces
	traces_before=$(sql -At -c "SELECT count(*) FROM traces")
	before=$(cpu_ticks "$server_pid") pg_before=$(pg_ticks) busy_before=$(busy_ticks)
	run_bg "$work/mcp.json" "$work/mcpload" "${common[@]}" -duration "${DURATION}s" -warmup 0 2>/dev/null ||
		die "mcpload failed at C=$c"
	after=$(cpu_ticks "$server_pid") mcp_pg=$(($(pg_ticks) - pg_before)) mcp_busy=$(($(busy_ticks) - busy_before))
	[[ -n ${RESULTS:-} ]] && cat "$work/mcp.json" >>"$RESULTS"
	sleep 1 # the last batch of traces
	traces=$(($(sql -At -c "SELECT count(*) FROM traces") - traces_before))
	settle
	echo "== C=$c: pgbench" >&2
	if ((WARMUP > 0)); then
		pgbench_run "$c" "$WARMUP" /dev/null || die "pgbench warmup failed"
	fi
	pg_before=$(pg_ticks) busy_before=$(busy_ticks)
	pgbench_run "$c" "$DURATION" "$work/pgbench.out" || { cat "$work/pgbench.out" >&2; die "pgbench failed at C=$c"; }
	pgb_pg=$(($(pg_ticks) - pg_before)) pgb_busy=$(($(busy_ticks) - busy_before))
	settle
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$((after - before))" "$mcp_pg" "$mcp_busy" "$pgb_pg" "$pgb_busy" \
		"$traces" "$(tr '\n' ' ' <"$work/pgbench.out")" "$(<"$work/mcp.json")" >>"$rows"
done

echo >&2
python3 - "$rows" "$clk_tck" "$DURATION" "$KEYS" "${POOL_MAX_CONNS:-default}" <<'PY'
import json, re, sys

rows_path, clk_tck, duration, keys, pool = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
us = lambda ticks, n: f"{int(ticks) / clk_tck * 1e6 / n:.0f}" if n else "n/a"
print(f"{duration} s per run; random key of 1..{keys}; server pool_max_conns: {pool}. "
      "CPU columns are µs of CPU time per call or transaction: the server process, every postgres process, "
      "and the rest of the machine's busy time (the load generator, and anything else running).\n")
print("| C | memory_store req/s | p50 µs | p99 µs | errors | traces written | server CPU | PostgreSQL CPU | rest CPU "
      "| pgbench TPS | pgbench avg ms | PostgreSQL CPU | rest CPU | ratio |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
with open(rows_path) as f:
    for line in f:
        c, srv, mpg, mbusy, ppg, pbusy, traces, pgb, out = line.rstrip("\n").split("\t", 8)
        s = json.loads(out)
        n = s["requests"]
        m = re.search(r"tps = ([0-9.]+) \(without initial connection time\)", pgb)
        lat = re.search(r"latency average = ([0-9.]+) ms", pgb)
        txs = re.search(r"number of transactions actually processed: ([0-9]+)", pgb)
        failed = re.search(r"number of failed transactions: ([0-9]+)", pgb)
        tps = float(m.group(1)) if m else float("nan")
        if failed and int(failed.group(1)):
            tps = float("nan")
        t = int(txs.group(1)) if txs else 0
        l = s["latency_us"]
        print(f"| {c} | {s['rps']:.0f} | {l['p50']} | {l['p99']} | {s['errors']} | {traces} "
              f"| {us(srv, n)} | {us(mpg, n)} | {us(int(mbusy) - int(srv) - int(mpg), n)} "
              f"| {tps:.0f} | {lat.group(1) if lat else 'n/a'} | {us(ppg, t)} | {us(int(pbusy) - int(ppg), t)} "
              f"| **{s['rps'] / tps:.2f}** |")
PY
