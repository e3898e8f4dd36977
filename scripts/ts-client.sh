#!/usr/bin/env bash
# cmd/api as the official TypeScript client of the 2026-07-28 era sees it:
# starts cmd/api with its default settings and runs test/tsclient/probe.mjs
# (@modelcontextprotocol/client, pinned, auto and legacy modes).
#
# Needs `scripts/install-tools.sh node` (make ts-client runs both).
# TSCLIENT_API_BIN=path uses that cmd/api binary instead of building one.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

say() { printf '[ts-client] %s\n' "$*"; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-ts-client.XXXXXX")"
pid=""
cleanup() {
	local rc=$?
	[[ -z "${pid}" ]] || kill "${pid}" 2>/dev/null || true
	wait 2>/dev/null || true
	if ((rc != 0)); then
		say "---- cmd/api log (last 60 lines)"
		tail -n 60 "${WORK}/api.log" || true
	fi
	rm -rf "${WORK}"
	exit "${rc}"
}
trap cleanup EXIT

api="${TSCLIENT_API_BIN:-}"
if [[ -z "${api}" ]]; then
	api="${WORK}/api"
	go build -o "${api}" ./cmd/api
fi

port="$(free_port)"
MCP_ADDR="127.0.0.1:${port}" "${api}" >"${WORK}/api.log" 2>&1 </dev/null &
pid="$!"
wait_listening "${port}" cmd/api "${pid}"

# The probe's imports resolve from where it lies: run it beside the
# package it needs.
cp test/tsclient/probe.mjs "${TSCLIENT_DIR}/probe.mjs"
say "cmd/api on ${port}, @modelcontextprotocol/client ${TSCLIENT_VERSION}"
timeout --kill-after=10 120 "${NODE22}" "${TSCLIENT_DIR}/probe.mjs" "http://127.0.0.1:${port}/mcp"
