#!/usr/bin/env bash
# make test's runner: every package's tests with CI=true, so that a test
# missing what it needs (root, a tool) fails instead of skipping, and any
# skip that remains fails the run too: a skipped test checks nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# One package at a time (-p 1): packages that make mount namespaces (the
# Slurm cluster's compute nodes, internal/node) would otherwise copy another
# package's RAMDISK mounts into them, and a root process holding a RAMDISK
# is one RSA rightly refuses to kill, so that package's teardown fails.
CI=true "${GO:-go}" test -p 1 -count=1 -timeout 25m -v "$@" ./... >"$log" 2>&1 || status=$?
# Passing tests' names are noise here; failures, logs and package lines stay.
grep -vE '^[[:space:]]*(=== (RUN|PAUSE|CONT|NAME)|--- PASS)' "$log" || true
if grep -qE '^[[:space:]]*--- SKIP' "$log"; then
	echo "skipped tests (make test allows none):"
	grep -E -A2 '^[[:space:]]*--- SKIP' "$log"
	status=1
fi
# Where the time goes (CI has a budget): the slowest tests and subtests.
echo "slowest tests:"
grep -E '^[[:space:]]*--- (PASS|FAIL)' "$log" | sed -E 's/^[[:space:]]*--- [A-Z]+: //' |
	awk '{d = $NF; gsub(/[()s]/, "", d); print d, $1}' | sort -rn | head -20 || true
passed=$(grep -cE '^[[:space:]]*--- PASS' "$log" || true)
failed=$(grep -cE '^[[:space:]]*--- FAIL' "$log" || true)
echo "tests: $passed passed, $failed failed"
exit "$status"
