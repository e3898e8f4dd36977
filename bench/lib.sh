# Shared by the A/B benchmark scripts (gateway_hop.sh, shared_sessions.sh,
# cached_read.sh) and scaling.sh:
# source it after `cd` to the repository root.
#
# It makes $tmp (removed on exit, with every process whose pid is in
# $pids killed), builds cmd/api and cmd/mcpload into it, and defines:
#   wait_healthy PORT         until GET /healthz answers on PORT
#   field NAME <json          a top-level number of mcpload's -json summary
#   lat NAME <json            a latency_us percentile of it (p50, p99, ...)
#   row ROUND C LABEL [CELL...] <json
#                             one markdown row of the shared table, with
#                             CELLs appended
#   median COLUMN LABEL C     the median of a table column over the rounds
#                             of one (LABEL, C), read from $tmp/rows
#   cpu_ticks PID             utime+stime of a process, in clock ticks
#   cpu_per_call TICKS N      µs of CPU per call: TICKS over N calls

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

go build -o "$tmp/api" ./cmd/api
go build -o "$tmp/mcpload" ./cmd/mcpload

wait_healthy() { until curl -sf "http://127.0.0.1:$1/healthz" >/dev/null; do sleep 0.05; done; }
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
lat() { sed -n "s/.*\"latency_us\":{[^}]*\"$1\":\([0-9.]*\).*/\1/p"; }
row() { # ROUND C LABEL [EXTRA CELL...] <json
  local out extra=""
  out=$(cat)
  for cell in "${@:4}"; do extra+=" $cell |"; done
  printf '| %s | %s | %s | %s | %s | %s | %s |%s\n' "$1" "$2" "$3" \
    "$(echo "$out" | field rps)" "$(echo "$out" | lat p50)" "$(echo "$out" | lat p99)" "$(echo "$out" | field errors)" "$extra"
}
# The comm field of /proc/PID/stat may contain spaces, so fields are
# counted after its closing parenthesis.
cpu_ticks() {
  local stat
  stat=$(<"/proc/$1/stat")
  stat=${stat##*) }
  # shellcheck disable=SC2086
  set -- $stat
  echo $((${12} + ${13}))
}
cpu_per_call() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", n ? t / hz * 1e6 / n : 0}'; }
median() {
  awk -F'|' -v c="$3" -v l="$2" -v col="$1" '{p = $4; gsub(/ /, "", p)} $3+0 == c && p == l {print $col+0}' "$tmp/rows" |
    sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
