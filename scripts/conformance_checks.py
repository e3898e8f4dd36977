#!/usr/bin/env python3
"""Decide the prerelease conformance run from its checks.json files.

Usage: conformance_checks.py RESULTS_DIR [RESULTS_DIR ...]

RESULTS_DIR is what `conformance server ... -o RESULTS_DIR` wrote:
RESULTS_DIR/server-<scenario>-<timestamp>/checks.json, each a JSON array of
{id, name, description, status, errorMessage?, details?, specReferences}.

Pass criterion (scripts/conformance.sh, step "prerelease"):
  * the server-session-lifecycle scenario ran, every check it reported is
    SUCCESS, and the three lifecycle checks below are among them (a stateless
    server's INFO "skipped", a WARNING on DELETE, or a 400 instead of 404 on
    the dead session all fail);
  * every `wire-schema-valid` check in any scenario is SUCCESS (the server's
    messages validate against the spec JSON schema), and at least one was
    reported when scenarios other than the lifecycle one ran.
Other scenario results are printed for information only.
Exit status: 0 pass, 1 fail, 2 no usable results.
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path

LIFECYCLE_SCENARIO = "server-session-lifecycle"
LIFECYCLE_REQUIRED = (
    "server-session-initialized-accepted",
    "server-session-delete-accepted",
    "server-session-terminated-returns-404",
)
WIRE_CHECK = "wire-schema-valid"
DIR_RE = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def load(results_dirs):
    """Yield (scenario, checks, path) for every checks.json found."""
    for root in results_dirs:
        for path in sorted(Path(root).glob("*/checks.json")):
            m = DIR_RE.match(path.parent.name)
            scenario = m.group("scenario") if m else path.parent.name
            try:
                checks = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                checks = [{"id": "checks-json-unreadable", "status": "FAILURE",
                           "errorMessage": f"{path}: {exc}"}]
            if not isinstance(checks, list):
                checks = [{"id": "checks-json-unexpected", "status": "FAILURE",
                           "errorMessage": f"{path}: not a JSON array"}]
            yield scenario, checks, path


def describe(check, limit=600):
    msg = check.get("errorMessage") or ""
    details = check.get("details")
    if check.get("id") == WIRE_CHECK and isinstance(details, dict):
        violations = details.get("violations") or []
        if violations:
            msg += " violations: " + json.dumps(violations[:5])
    elif details and not msg:
        msg = json.dumps(details)
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = list(load(argv[1:]))
    if not results:
        print(f"prerelease: no checks.json under {', '.join(argv[1:])}")
        return 2

    failures = []  # (scenario, check) that break the criterion
    info = []  # other non-success checks, reported only
    lifecycle_runs = 0
    wire_total = wire_ok = 0

    for scenario, checks, _path in results:
        if scenario == LIFECYCLE_SCENARIO:
            lifecycle_runs += 1
            seen = {c.get("id") for c in checks}
            for c in checks:
                if c.get("status") != "SUCCESS":
                    failures.append((scenario, c))
            for cid in LIFECYCLE_REQUIRED:
                if cid not in seen:
                    failures.append((scenario, {"id": cid, "status": "MISSING",
                                                "errorMessage": "check not reported"}))
        for c in checks:
            if c.get("id") == WIRE_CHECK:
                wire_total += 1
                if c.get("status") == "SUCCESS":
                    wire_ok += 1
                elif scenario != LIFECYCLE_SCENARIO:
                    failures.append((scenario, c))
            elif scenario != LIFECYCLE_SCENARIO and c.get("status") in ("FAILURE", "WARNING"):
                info.append((scenario, c))

    if lifecycle_runs == 0:
        failures.append((LIFECYCLE_SCENARIO, {"id": LIFECYCLE_SCENARIO, "status": "MISSING",
                                              "errorMessage": "scenario produced no results"}))
    # server-session-lifecycle speaks raw HTTP and reports no wire-schema-valid
    # check; any other scenario that ran should have produced some.
    if wire_total == 0 and any(sc != LIFECYCLE_SCENARIO for sc, _c, _p in results):
        failures.append(("*", {"id": WIRE_CHECK, "status": "MISSING",
                               "errorMessage": "no wire-schema-valid check was reported"}))

    statuses = Counter(c.get("status") for _s, checks, _p in results for c in checks)
    print(f"prerelease: {len(results)} scenario result(s); check statuses: "
          + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items(), key=lambda kv: str(kv[0]))))
    print(f"prerelease: {LIFECYCLE_SCENARIO} runs: {lifecycle_runs}; "
          f"{WIRE_CHECK}: {wire_ok}/{wire_total} SUCCESS")

    if info:
        print(f"\nnot scored (other FAILURE/WARNING checks, {len(info)}):")
        for scenario, c in info:
            print(f"  ~ {scenario}: {c.get('id')} [{c.get('status')}] {describe(c, 200)}")

    if failures:
        print(f"\nFAILED prerelease criterion ({len(failures)}):")
        for scenario, c in failures:
            print(f"  x {scenario}: {c.get('id')} [{c.get('status')}] {describe(c)}")
        return 1
    print("\nprerelease criterion met: session lifecycle and wire-schema-valid all SUCCESS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
