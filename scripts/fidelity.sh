#!/usr/bin/env bash
# The gateway's fidelity with a real third-party upstream: starts
# @modelcontextprotocol/server-everything (Streamable HTTP) and cmd/api
# federating it as server "everything", then runs test/fidelity/probe.mjs,
# which calls the upstream directly and through cmd/api with the official
# TypeScript client and fails on any answer that differs.
#
# Needs `scripts/install-tools.sh node` (make fidelity runs both).
# FIDELITY_API_BIN=path uses that cmd/api binary instead of building one.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

say() { printf '[fidelity] %s\n' "$*"; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-fidelity.XXXXXX")"
pids=()
cleanup() {
	local rc=$? p
	for p in "${pids[@]}"; do kill "${p}" 2>/dev/null || true; done
	wait 2>/dev/null || true
	# The gateway's log last, where a CI page that shows only the end of
	# the output shows it; server-everything's without the line it writes
	# for every request.
	if ((rc != 0)); then
		for log in server-everything gateway; do
			say "---- ${log}.log (last 60 lines)"
			grep -v '^Received MCP POST request$' "${WORK}/${log}.log" | tail -n 60 || true
		done
	fi
	rm -rf "${WORK}"
	exit "${rc}"
}
trap cleanup EXIT

api="${FIDELITY_API_BIN:-}"
if [[ -z "${api}" ]]; then
	api="${WORK}/api"
	go build -o "${api}" ./cmd/api
fi

up_port="$(free_port)"
PORT="${up_port}" "${NODE22}" "${FIDELITY_DIR}/node_modules/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp \
	>"${WORK}/server-everything.log" 2>&1 </dev/null &
pids+=("$!")
wait_listening "${up_port}" server-everything "$!"

gw_port="$(free_port)"
cat >"${WORK}/gateway.yaml" <<YAML
listen: "127.0.0.1:${gw_port}"
upstreams:
  - {id: everything, url: "http://127.0.0.1:${up_port}/mcp", category: query}
YAML
MCP_CONFIG="${WORK}/gateway.yaml" "${api}" >"${WORK}/gateway.log" 2>&1 </dev/null &
pids+=("$!")
wait_listening "${gw_port}" cmd/api "$!"

# The probe's imports resolve from where it lies: run it beside the
# packages it needs.
cp test/fidelity/probe.mjs "${FIDELITY_DIR}/probe.mjs"
say "server-everything ${FIDELITY_EVERYTHING_VERSION} on ${up_port}, cmd/api on ${gw_port}, @modelcontextprotocol/sdk ${FIDELITY_SDK_VERSION}"
timeout --kill-after=10 300 "${NODE22}" "${FIDELITY_DIR}/probe.mjs" \
	"http://127.0.0.1:${up_port}/mcp" "http://127.0.0.1:${gw_port}/mcp" everything_
