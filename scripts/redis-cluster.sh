#!/usr/bin/env bash
# A Redis Cluster of three masters and three replicas on loopback, for the
# tests that run against a cluster (internal/redisconn and the users of
# Redis). Its nodes keep their data under .cache/redis-cluster.
#
#   scripts/redis-cluster.sh start   start it unless it answers (idempotent)
#   scripts/redis-cluster.sh stop    stop its nodes and forget its state
#   scripts/redis-cluster.sh url     print the REDIS_URL of it (cluster mode)
#
# REDIS_CLUSTER_PORT (default 7100) is the first node's port; the others
# follow it. Needs redis-server and redis-cli 7 or later (sharded pub/sub).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BASE="${REDIS_CLUSTER_PORT:-7100}"
DIR="${CACHE_DIR}/redis-cluster"
NODES=6

say() { printf '[redis-cluster] %s\n' "$*"; }
ports() { seq "${BASE}" $((BASE + NODES - 1)); }

url() {
	local u="redis://127.0.0.1:${BASE}" sep="?" p
	for p in $(ports); do
		((p == BASE)) && continue
		u+="${sep}addr=127.0.0.1:${p}"
		sep="&"
	done
	printf '%s\n' "${u}"
}

# healthy: every slot served, and every node sees three masters and three
# replicas (replicas are attached a moment after the slots are).
healthy() {
	local p nodes
	for p in $(ports); do
		[[ "$(redis-cli -p "${p}" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p')" == ok ]] || return 1
		nodes="$(redis-cli -p "${p}" cluster nodes 2>/dev/null)" || return 1
		[[ "$(awk '$3 ~ /master/' <<<"${nodes}" | wc -l)" -eq 3 && "$(awk '$3 ~ /slave/' <<<"${nodes}" | wc -l)" -eq 3 ]] || return 1
	done
}

# ours PORT: the Redis on PORT is one of this cluster's nodes (its data
# directory is ours), not some other server that took the port.
ours() {
	[[ "$(redis-cli -p "$1" config get dir 2>/dev/null | sed -n 2p)" == "${DIR}/$1" ]]
}

stop() {
	local p
	for p in $(ports); do
		if ours "${p}"; then
			redis-cli -p "${p}" shutdown nosave >/dev/null 2>&1 || true
		fi
	done
	rm -rf "${DIR}"
}

start() {
	if healthy; then
		say "up on ports ${BASE}-$((BASE + NODES - 1))"
		return 0
	fi
	stop
	local p i
	for p in $(ports); do
		if redis-cli -p "${p}" ping >/dev/null 2>&1; then
			say "port ${p} is taken by a server that is not this cluster's; set REDIS_CLUSTER_PORT"
			return 1
		fi
	done
	for p in $(ports); do
		mkdir -p "${DIR}/${p}"
		# appendfsync always: a write a master acknowledged is on its
		# disk, so a failover test loses nothing the client was told of.
		redis-server --port "${p}" --bind 127.0.0.1 --daemonize yes \
			--dir "${DIR}/${p}" --logfile "${DIR}/${p}/redis.log" \
			--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000 \
			--appendonly yes --appendfsync always --save ""
	done
	for p in $(ports); do
		for ((i = 0; i < 100; i++)); do
			redis-cli -p "${p}" ping >/dev/null 2>&1 && break
			sleep 0.1
		done
	done
	# shellcheck disable=SC2046
	redis-cli --cluster create $(for p in $(ports); do printf '127.0.0.1:%s ' "${p}"; done) \
		--cluster-replicas 1 --cluster-yes >"${DIR}/create.log" 2>&1 || {
		cat "${DIR}/create.log"
		return 1
	}
	for ((i = 0; i < 300; i++)); do
		if healthy; then
			say "up on ports ${BASE}-$((BASE + NODES - 1))"
			return 0
		fi
		sleep 0.1
	done
	say "the cluster did not reach cluster_state:ok"
	redis-cli -p "${BASE}" cluster info || true
	return 1
}

case "${1:-}" in
start) start ;;
stop) stop ;;
url) url ;;
*)
	echo "usage: $0 start|stop|url" >&2
	exit 2
	;;
esac
