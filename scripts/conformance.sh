#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance)
# against the fixture server (./test/conformance) and the real server (./cmd/api).
#
#   scripts/conformance.sh                 # all steps
#   scripts/conformance.sh fixture api     # only some step groups
#
# Step groups (see test/conformance/README.md):
#   fixture     0.1.16 --suite active  vs fixture, baseline expected-failures.yml
#   pending     0.1.16 --suite pending vs fixture, baseline expected-failures-pending.yml
#   api         0.1.16 one --scenario run per product scenario vs cmd/api
#   prerelease  0.2.0-alpha.12 --spec-version 2025-11-25 vs fixture:
#               server-session-lifecycle + active suite; passes when the
#               session-lifecycle checks and every wire-schema-valid check
#               succeed (scripts/conformance_checks.py reads the checks.json)
#   requirements 0.2.0-alpha.12 --requirements REV vs fixture, for each
#               revision (2026-07-28, 2025-11-25), baseline
#               expected-failures-REV.yml; then, vs cmd/api, one
#               --scenario run per fixture-free scenario of each revision
#               (--spec-version REV; a scenario with a baseline of its own
#               has it in expected-failures-api-REV-SCENARIO.yml)
#
# Needs scripts/install-tools.sh to have run (make conformance does both).
# Every step runs even when an earlier one failed; the exit status is non-zero
# if any step failed. Environment knobs:
#   CONFORMANCE_FIXTURE_BIN / CONFORMANCE_API_BIN  use these binaries instead of building
#   CONFORMANCE_STEP_TIMEOUT  seconds per conformance invocation (default 900)
#   CONFORMANCE_READY_TIMEOUT seconds to wait for a server's POST /mcp (default 60)
#   CONFORMANCE_KEEP=1        keep the temp dir (logs, -o results) even on success
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

STEP_TIMEOUT="${CONFORMANCE_STEP_TIMEOUT:-900}"
READY_TIMEOUT="${CONFORMANCE_READY_TIMEOUT:-60}"
BASELINE_ACTIVE="test/conformance/expected-failures.yml"
BASELINE_PENDING="test/conformance/expected-failures-pending.yml"
PRE_SPEC_VERSION="2025-11-25"
# Scenarios that any correct server passes (no test fixtures needed): run against cmd/api.
API_SCENARIOS=(
	server-initialize
	ping
	logging-set-level
	tools-list
	resources-list
	prompts-list
	server-sse-multiple-streams
	dns-rebinding-protection
)
# The revisions scored with --requirements, and the scenarios of each that
# need no fixture, run against cmd/api at that revision's wire version.
REQUIREMENTS=(2026-07-28 2025-11-25)
API_SCENARIOS_2026_07_28=(
	server-stateless
	tools-list
	resources-list
	prompts-list
	sep-2164-resource-not-found
	caching
	server-sse-multiple-streams
	dns-rebinding-protection
	http-header-validation
	input-required-result-unsupported-methods
)
API_SCENARIOS_2025_11_25=(
	server-initialize
	server-session-lifecycle
	ping
	logging-set-level
	tools-list
	resources-list
	resources-subscribe
	resources-unsubscribe
	prompts-list
	server-sse-multiple-streams
	dns-rebinding-protection
)

# ------------------------------------------------------------------ helpers --

say() { printf '[conformance] %s\n' "$*"; }
header() {
	printf '\n%s\n' "======================================================================"
	printf '== %s\n' "$*"
	printf '%s\n' "======================================================================"
}

# conf VERSION ARGS... : run that conformance CLI with Node 22, bounded in time.
conf() {
	local version="$1"
	shift
	timeout --kill-after=15 "${STEP_TIMEOUT}" "${NODE22}" "$(conformance_entry "${version}")" "$@"
}

# --------------------------------------------------------- state + cleanup --

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")"
RESULTS="${WORK}/results"
mkdir -p "${WORK}/bin" "${RESULTS}"

declare -A SERVER_BIN=() SERVER_PID=() SERVER_PORT=() SERVER_LOG=() SERVER_BROKEN=()
declare -a STEP_IDS=() STEP_STATUS=() STEP_SECS=() STEP_NOTE=()
FAILED=0

stop_server() {
	local name="$1" pid="${SERVER_PID[$1]:-}" i
	[[ -n "${pid}" ]] || return 0
	if kill -0 "${pid}" 2>/dev/null; then
		kill -TERM "${pid}" 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do
			kill -0 "${pid}" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "${pid}" 2>/dev/null || true
	fi
	wait "${pid}" 2>/dev/null || true
	SERVER_PID[${name}]=""
}

cleanup() {
	local rc=$? name
	trap - EXIT INT TERM
	for name in "${!SERVER_PID[@]}"; do
		stop_server "${name}"
	done
	if ((FAILED == 0 && rc == 0)) && [[ "${CONFORMANCE_KEEP:-0}" != 1 ]]; then
		rm -rf "${WORK}"
	else
		say "logs and results kept in ${WORK}"
	fi
	exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

show_log() {
	local name="$1" log="${SERVER_LOG[$1]:-}"
	[[ -n "${log}" && -f "${log}" ]] || return 0
	printf -- '---- last 60 lines of %s server log (%s) ----\n' "${name}" "${log}"
	tail -n 60 "${log}" || true
	printf -- '---- end of %s server log ----\n' "${name}"
}

# ------------------------------------------------------------------ servers --

# build NAME PKG: go build PKG unless CONFORMANCE_<NAME>_BIN points at a binary.
build() {
	local name="$1" pkg="$2" override_var
	override_var="CONFORMANCE_${name^^}_BIN"
	if [[ -n "${!override_var:-}" ]]; then
		SERVER_BIN[${name}]="${!override_var}"
		say "using ${name} binary ${SERVER_BIN[${name}]} (from ${override_var})"
		return 0
	fi
	header "build ${name}: go build ${pkg}"
	if go build -o "${WORK}/bin/${name}" "${pkg}"; then
		SERVER_BIN[${name}]="${WORK}/bin/${name}"
	else
		say "BUILD FAILED: ${pkg}; every step that needs the ${name} server fails"
		SERVER_BROKEN[${name}]="go build ${pkg} failed"
	fi
}

# start_server NAME: start it on a free loopback port and wait for POST /mcp.
start_server() {
	local name="$1" port log pid code="000" deadline
	port="$(free_port)"
	log="${WORK}/${name}.log"
	SERVER_LOG[${name}]="${log}"
	SERVER_PORT[${name}]="${port}"
	printf '\n==== %s starting on 127.0.0.1:%s (%s) ====\n' "${name}" "${port}" "$(date -u +%FT%TZ)" >>"${log}"
	case "${name}" in
	fixture) "${SERVER_BIN[fixture]}" -addr "127.0.0.1:${port}" >>"${log}" 2>&1 </dev/null & ;;
	api) MCP_ADDR="127.0.0.1:${port}" "${SERVER_BIN[api]}" >>"${log}" 2>&1 </dev/null & ;;
	*)
		say "unknown server ${name}"
		return 1
		;;
	esac
	pid=$!
	SERVER_PID[${name}]="${pid}"
	deadline=$((SECONDS + READY_TIMEOUT))
	while ((SECONDS < deadline)); do
		if ! kill -0 "${pid}" 2>/dev/null; then
			wait "${pid}" 2>/dev/null || true
			SERVER_PID[${name}]=""
			say "${name} server exited during start-up"
			show_log "${name}"
			return 1
		fi
		# Any HTTP status means the listener is up.
		code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST \
			-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
			--data '{}' "http://127.0.0.1:${port}/mcp" 2>/dev/null)" || true
		if [[ "${code}" != "000" && -n "${code}" ]]; then
			say "${name} server up: pid ${pid}, http://127.0.0.1:${port}/mcp (POST -> HTTP ${code})"
			return 0
		fi
		sleep 0.2
	done
	say "${name} server did not answer POST /mcp within ${READY_TIMEOUT}s"
	show_log "${name}"
	stop_server "${name}"
	return 1
}

# ensure_server NAME: (re)start it if it is not running. Fails if it cannot.
ensure_server() {
	local name="$1" pid="${SERVER_PID[$1]:-}"
	if [[ -n "${SERVER_BROKEN[${name}]:-}" ]]; then
		say "${name}: ${SERVER_BROKEN[${name}]}"
		return 1
	fi
	if [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null; then
		return 0
	fi
	if [[ -n "${pid}" ]]; then
		say "${name} server (pid ${pid}) is no longer running; restarting it"
		wait "${pid}" 2>/dev/null || true
	fi
	if ! start_server "${name}"; then
		# Do not retry (and wait READY_TIMEOUT again) for every later step.
		SERVER_BROKEN[${name}]="server failed to start (log shown above)"
		return 1
	fi
}

url() { printf 'http://127.0.0.1:%s/mcp\n' "${SERVER_PORT[$1]}"; }

# -------------------------------------------------------------------- steps --

# step ID SERVER TITLE -- COMMAND...: run one step against SERVER and record it.
# COMMAND may use the placeholder @URL@, replaced by the server's MCP URL.
step() {
	local id="$1" server="$2" title="$3" rc=0 start="${SECONDS}" arg note=""
	shift 4
	header "[${id}] ${title}"
	if ! ensure_server "${server}"; then
		rc=1
		note="${server} server unavailable: ${SERVER_BROKEN[${server}]:-start failed}"
	else
		local -a cmd=()
		for arg in "$@"; do cmd+=("${arg//@URL@/$(url "${server}")}"); done
		if [[ "${cmd[0]}" == conf ]]; then
			printf '$ conformance@%s' "${cmd[1]}"
			printf ' %q' "${cmd[@]:2}"
		else
			printf '$'
			printf ' %q' "${cmd[@]}"
		fi
		printf '\n'
		"${cmd[@]}" || rc=$?
		((rc == 124 || rc == 137)) && note="timed out after ${STEP_TIMEOUT}s"
		if ((rc != 0)) && [[ -n "${SERVER_PID[${server}]:-}" ]] &&
			! kill -0 "${SERVER_PID[${server}]}" 2>/dev/null; then
			note="${note:+${note}; }${server} server died"
		fi
	fi
	STEP_IDS+=("${id}")
	STEP_SECS+=("$((SECONDS - start))")
	STEP_NOTE+=("${note:-exit ${rc}}")
	if ((rc == 0)); then
		STEP_STATUS+=(PASS)
		say "[${id}] PASS ($((SECONDS - start))s)"
	else
		STEP_STATUS+=(FAIL)
		FAILED=$((FAILED + 1))
		say "[${id}] FAIL (${note:-exit ${rc}}, $((SECONDS - start))s)"
		[[ -n "${SERVER_BROKEN[${server}]:-}" ]] || show_log "${server}"
	fi
}

# prerelease_eval DIR ARGS...: run the prerelease CLI (its exit status is only
# informational) and then judge DIR's checks.json with conformance_checks.py.
prerelease_eval() {
	local dir="$1" rc=0
	shift
	mkdir -p "${dir}"
	conf "${CONFORMANCE_PRE_VERSION}" "$@" -o "${dir}" || rc=$?
	say "conformance ${CONFORMANCE_PRE_VERSION} exited ${rc} (not the criterion; judging checks.json)"
	((rc == 124 || rc == 137)) && return "${rc}"
	python3 "${REPO_ROOT}/scripts/conformance_checks.py" "${dir}"
}

run_fixture() {
	step "fixture/active" fixture "${CONFORMANCE_VERSION} --suite active vs fixture (baseline ${BASELINE_ACTIVE})" -- \
		conf "${CONFORMANCE_VERSION}" server --url @URL@ --suite active \
		--expected-failures "${BASELINE_ACTIVE}" -o "${RESULTS}/fixture-active"
}

run_pending() {
	step "fixture/pending" fixture "${CONFORMANCE_VERSION} --suite pending vs fixture (baseline ${BASELINE_PENDING})" -- \
		conf "${CONFORMANCE_VERSION}" server --url @URL@ --suite pending \
		--expected-failures "${BASELINE_PENDING}" -o "${RESULTS}/fixture-pending"
}

run_api() {
	local s
	for s in "${API_SCENARIOS[@]}"; do
		step "api/${s}" api "${CONFORMANCE_VERSION} --scenario ${s} vs cmd/api" -- \
			conf "${CONFORMANCE_VERSION}" server --url @URL@ --scenario "${s}" -o "${RESULTS}/api"
	done
}

run_prerelease() {
	step "prerelease/session-lifecycle" fixture \
		"${CONFORMANCE_PRE_VERSION} --scenario server-session-lifecycle --spec-version ${PRE_SPEC_VERSION} vs fixture" -- \
		prerelease_eval "${RESULTS}/pre-lifecycle" server --url @URL@ \
		--scenario server-session-lifecycle --spec-version "${PRE_SPEC_VERSION}"
	step "prerelease/active" fixture \
		"${CONFORMANCE_PRE_VERSION} --suite active --spec-version ${PRE_SPEC_VERSION} vs fixture (lifecycle + wire-schema-valid)" -- \
		prerelease_eval "${RESULTS}/pre-active" server --url @URL@ \
		--suite active --spec-version "${PRE_SPEC_VERSION}"
}

run_requirements() {
	local rev s baseline
	local -a scenarios extra
	for rev in "${REQUIREMENTS[@]}"; do
		baseline="test/conformance/expected-failures-${rev}.yml"
		step "requirements/${rev}" fixture "${CONFORMANCE_PRE_VERSION} --requirements ${rev} vs fixture (baseline ${baseline})" -- \
			conf "${CONFORMANCE_PRE_VERSION}" server --url @URL@ --requirements "${rev}" \
			--expected-failures "${baseline}" -o "${RESULTS}/requirements-${rev}"
	done
	for rev in "${REQUIREMENTS[@]}"; do
		local -n list="API_SCENARIOS_${rev//-/_}"
		scenarios=("${list[@]}")
		unset -n list
		for s in "${scenarios[@]}"; do
			extra=()
			baseline="test/conformance/expected-failures-api-${rev}-${s}.yml"
			[[ -f "${baseline}" ]] && extra=(--expected-failures "${baseline}")
			step "api@${rev}/${s}" api "${CONFORMANCE_PRE_VERSION} --scenario ${s} --spec-version ${rev} vs cmd/api" -- \
				conf "${CONFORMANCE_PRE_VERSION}" server --url @URL@ --scenario "${s}" --spec-version "${rev}" \
				"${extra[@]}" -o "${RESULTS}/api-${rev}"
		done
	done
}

# --------------------------------------------------------------------- main --

main() {
	local -a groups=("$@")
	local g
	((${#groups[@]})) || groups=(fixture pending api prerelease requirements)
	for g in "${groups[@]}"; do
		case "${g}" in
		fixture | pending | api | prerelease | requirements) ;;
		-h | --help)
			awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
			exit 0
			;;
		*)
			say "unknown step group '${g}' (expected: fixture pending api prerelease requirements)"
			exit 2
			;;
		esac
	done

	local v
	[[ -x "${NODE22}" ]] || {
		say "Node 22 missing at ${NODE22}: run scripts/install-tools.sh"
		exit 2
	}
	for v in "${CONFORMANCE_VERSION}" "${CONFORMANCE_PRE_VERSION}"; do
		[[ -f "$(conformance_entry "${v}")" ]] || {
			say "conformance ${v} missing: run scripts/install-tools.sh"
			exit 2
		}
	done
	for v in "${BASELINE_ACTIVE}" "${BASELINE_PENDING}"; do
		[[ -f "${v}" ]] || {
			say "baseline file ${v} missing"
			exit 2
		}
	done
	export PATH="${NODE22_BIN_DIR}:${PATH}"
	say "node $("${NODE22}" --version); conformance ${CONFORMANCE_VERSION} and ${CONFORMANCE_PRE_VERSION}; temp dir ${WORK}"

	local need_fixture=0 need_api=0
	for g in "${groups[@]}"; do
		case "${g}" in
		api) need_api=1 ;;
		requirements) need_api=1 need_fixture=1 ;;
		*) need_fixture=1 ;;
		esac
	done
	((need_fixture == 0)) || build fixture ./test/conformance
	((need_api == 0)) || build api ./cmd/api

	for g in "${groups[@]}"; do
		"run_${g}"
	done

	header "conformance summary"
	local i passed=0
	for i in "${!STEP_IDS[@]}"; do
		printf '%-4s  %-40s %5ss  %s\n' "${STEP_STATUS[i]}" "${STEP_IDS[i]}" "${STEP_SECS[i]}" "${STEP_NOTE[i]}"
		[[ "${STEP_STATUS[i]}" == PASS ]] && passed=$((passed + 1))
	done
	printf '\nconformance: %d passed, %d failed\n' "${passed}" "${FAILED}"
	((FAILED == 0))
}

main "$@"
