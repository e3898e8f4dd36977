#!/usr/bin/env bash
# Run every Go fuzz target in the main module for a short time.
#
#   scripts/fuzz-short.sh [PACKAGES...]     (default ./...)
#   FUZZTIME=30s scripts/fuzz-short.sh      (default 10s per target)
#
# Targets are discovered with `go test -list '^Fuzz'`, so a new FuzzXxx joins
# automatically. Each runs alone (`-fuzz` takes one target in one package):
#   go test -run '^$' -fuzz '^FuzzXxx$' -fuzztime "$FUZZTIME" <package>
# All targets run even if one fails; a failing input is written by go test to
# <package>/testdata/fuzz/FuzzXxx/, which is committed as a regression case.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime expires while a worker is mid-call (golang/go#75804,
# fixed in Go 1.27): no input failed and none is written. Such a run is tried
# again, up to FUZZ_RETRIES times; a run that wrote a failing input, or failed
# in any other way, is a failure at once.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${REPO_ROOT}"

FUZZTIME="${FUZZTIME:-10s}"
FUZZ_RETRIES="${FUZZ_RETRIES:-2}"
(($# > 0)) || set -- ./...

say() { printf '[fuzz-short] %s\n' "$*"; }

list_out="$(mktemp)"
run_out="$(mktemp)"
trap 'rm -f "${list_out}" "${run_out}"' EXIT

# deadline_flake FILE: the run in FILE failed only by the coordinator's
# deadline race: "context deadline exceeded" and no sign of a failing input.
deadline_flake() {
	grep -q 'context deadline exceeded' "$1" &&
		! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:|fuzzing process hung|fuzz: minimizing' "$1"
}

# fuzz_one PKG NAME: run one target, retrying the deadline race only.
fuzz_one() {
	local attempt
	for ((attempt = 0; attempt <= FUZZ_RETRIES; attempt++)); do
		if go test -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME}" -fuzzminimizetime 200x "$1" 2>&1 | tee "${run_out}"; then
			return 0
		fi
		deadline_flake "${run_out}" || return 1
		say "$2: the fuzz coordinator's deadline race (golang/go#75804), no failing input; running it again"
	done
	return 1
}

# `go test -list` prints the matching names, then "ok  <pkg> <time>" per package.
if ! go test -list '^Fuzz' "$@" >"${list_out}" 2>&1; then
	if grep -q 'matched no packages' "${list_out}"; then
		say "no Go packages yet: nothing to fuzz"
		exit 0
	fi
	cat "${list_out}"
	say "go test -list failed"
	exit 1
fi

declare -a targets=() pending=()
while IFS= read -r line; do
	if [[ "${line}" =~ ^Fuzz[[:alnum:]_]*$ ]]; then
		pending+=("${line}")
	elif [[ "${line}" =~ ^ok[[:space:]]+([^[:space:]]+) ]]; then
		for name in "${pending[@]}"; do
			targets+=("${BASH_REMATCH[1]} ${name}")
		done
		pending=()
	fi
done <"${list_out}"

if ((${#targets[@]} == 0)); then
	say "no fuzz targets found: nothing to do"
	exit 0
fi

say "${#targets[@]} fuzz target(s), ${FUZZTIME} each"
declare -a failed=()
passed=0
for t in "${targets[@]}"; do
	pkg="${t% *}"
	name="${t#* }"
	say "==> ${pkg} ${name}"
	if fuzz_one "${pkg}" "${name}"; then
		passed=$((passed + 1))
	else
		failed+=("${pkg} ${name}")
	fi
done

for t in "${failed[@]}"; do
	say "FAILED: ${t}"
done
printf 'fuzz-short: %d passed, %d failed\n' "${passed}" "${#failed[@]}"
((${#failed[@]} == 0))
