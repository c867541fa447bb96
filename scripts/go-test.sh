#!/usr/bin/env bash
# make test's runner: every package's tests with CI=true, so that a test
# missing what it needs (root, a tool) fails instead of skipping, and any
# skip that remains fails the run too: a skipped test checks nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
# RSA_TEST_LOG=FILE keeps the whole -v log (every test's time and t.Log
# lines), to see where CI's minutes go beyond the slowest twenty.
# Arguments: package patterns (default ./...).
go=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/log
status=0
# Packages run one at a time (-p 1 in go test's terms): packages that make
# mount namespaces (the Slurm cluster's compute nodes, internal/node) would
# otherwise copy another package's RAMDISK mounts into them, and a root
# process holding a RAMDISK is one RSA rightly refuses to kill, so that
# package's teardown fails. Building need not wait like that: go test -p 1
# would compile and link each package's tests between two packages' runs,
# on one core. So every test binary is built first, on every core, and rsa
# once for all (RSA_TEST_BIN: testutil.BuildRSA copies it).
"$go" build -o "$work/rsa" ./cmd/rsa
export RSA_TEST_BIN=$work/rsa
# A line a package: import path, directory, test binary. Each binary is
# named by its import path: three test packages share a name.
mkdir "$work/bin"
"$go" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{"\t"}}{{.Dir}}{{end}}' "${@:-./...}" |
	awk -F'\t' -v OFS='\t' -v bin="$work/bin" '{ b = $1; gsub("/", "_", b); print $1, $2, bin "/" b ".test" }' >"$work/packages"
awk -F'\t' '{ print $3; print $1 }' "$work/packages" |
	xargs -d '\n' -n 2 -P "$(nproc)" "$go" test -c -o >"$work/build.log" 2>&1 || status=$?
cat "$work/build.log"
# Inside a package, up to four parallel tests (-parallel 4, where the
# default is a test per core); test/cluster two (RSA_TEST_CLUSTERS): each
# of its Gluster tests runs an emulated cluster of its own, whose every
# byte now crosses Gluster's TLS, and four at once on two cores starved
# glusterd past the tests' timeouts (restarts of 40-90 s against 5 s
# alone). The lines go test itself would print (ok, FAIL, a package's
# time) are written here.
while IFS=$'\t' read -r pkg dir bin; do
	if [ ! -x "$bin" ]; then
		printf 'FAIL\t%s [build failed]\n' "$pkg" >>"$log"
		status=1
		continue
	fi
	start=$(date +%s%N)
	rc=0
	parallel=4
	[[ $pkg == */test/cluster ]] && parallel=${RSA_TEST_CLUSTERS:-2}
	(cd "$dir" && CI=true "$bin" -test.v -test.count=1 -test.parallel "$parallel" -test.timeout 40m </dev/null) >>"$log" 2>&1 || rc=$?
	took=$((($(date +%s%N) - start) / 1000000))
	verdict='ok  '
	if [ "$rc" != 0 ]; then
		verdict=FAIL
		status=1
	fi
	printf '%s\t%s\t%d.%03ds\n' "$verdict" "$pkg" $((took / 1000)) $((took % 1000)) >>"$log"
done <"$work/packages"
if [ -n "${RSA_TEST_LOG:-}" ]; then
	cp "$log" "$RSA_TEST_LOG"
fi
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
# Why each test failed, last, where a CI page that shows only the end of
# this output finds it: the last three messages each failed test wrote
# from its _test.go (t.Error, t.Fatal, the t.Log before them), each cut to
# eight lines.
if grep -qE '^[[:space:]]*--- FAIL' "$log"; then
	echo "why they failed (each failed test's last messages):"
	awk '
		function flush() { if (cur != "" && entry != "") { ring[cur, n[cur] % 3] = entry; n[cur]++ } entry = ""; cont = 0 }
		/^=== (RUN|CONT|NAME) / { flush(); cur = $3; next }
		/^[[:space:]]*--- (FAIL|PASS|SKIP): / {
			flush()
			if ($2 != "FAIL:" || ($3 in said)) next
			said[$3] = 1
			print "  " $3 ":"
			for (i = (n[$3] > 3 ? n[$3] - 3 : 0); i < n[$3]; i++) printf "%s", ring[$3, i % 3]
			next
		}
		/^[[:space:]]+[A-Za-z0-9_]+_test\.go:[0-9]+: / { flush(); entry = "    " substr($0, 1, 300) "\n"; next }
		entry != "" && /^[[:space:]]/ && cont < 7 { cont++; entry = entry "    " substr($0, 1, 300) "\n"; next }
	' "$log" | head -120
fi
passed=$(grep -cE '^[[:space:]]*--- PASS' "$log" || true)
failed=$(grep -cE '^[[:space:]]*--- FAIL' "$log" || true)
echo "tests: $passed passed, $failed failed"
exit "$status"
