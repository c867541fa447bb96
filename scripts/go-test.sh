#!/usr/bin/env bash
# make test's runner (make test-long and make unit too): every package's
# tests with CI=true, so that a test missing what it needs (root, a tool)
# fails instead of skipping, and any skip that remains fails the run too: a
# skipped test checks nothing.
#
# Arguments: package patterns (default ./...). Environment:
#   RSA_TEST_LOG=FILE     keep the whole -v log (every test's time and t.Log
#                         lines), to see where the minutes go beyond the
#                         slowest twenty
#   RSA_TEST_LANES=1      every package in one lane, one after another (the
#                         escape hatch; default 2, below)
#   RSA_TEST_CLUSTERS=N   test/cluster's parallel tests (default 2)
#   RSA_TEST_LONG=1       the long cases too (make test-long; tests read it
#                         through testutil.Long to choose the cases they
#                         register); the test binaries inherit it
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
lanes=${RSA_TEST_LANES:-2}
[[ $lanes == 1 || $lanes == 2 ]] || {
	echo "go-test.sh: RSA_TEST_LANES=$lanes: use 1 or 2" >&2
	exit 2
}
timeout=40m
# A top-level test whose name ends in Long is a measurement or a soak that
# make test-long alone runs (a subtest that belongs there is left out by
# its test, through testutil.Long); go test's -test.skip leaves it out
# unreported, which is not a skip of a test that ran.
skip=(-test.skip '^Test[A-Za-z0-9_]*Long$')
if [[ -n ${RSA_TEST_LONG:-} ]]; then
	timeout=80m
	skip=()
fi

work=$(mktemp -d)
# The lanes running, by process id: each runs in a process group of its
# own (set -m below), so that the test binary it runs, and whatever that
# started in its group, is stopped with it: on an interrupt, or when this
# script fails, no lane goes on running tests behind it.
declare -A lanes_running=()
# shellcheck disable=SC2317 # called by the traps
stop_lanes() {
	local pid
	for pid in "${!lanes_running[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || true
	done
	for pid in "${!lanes_running[@]}"; do
		for _ in $(seq 50); do
			kill -0 -- "-$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
	done
	lanes_running=()
}
# shellcheck disable=SC2317 # called by the trap
on_exit() {
	stop_lanes
	rm -rf "$work"
}
trap on_exit EXIT
trap 'echo "go-test.sh: interrupted: stopping the lanes" >&2; exit 130' INT
trap 'echo "go-test.sh: terminated: stopping the lanes" >&2; exit 143' TERM

# phase prints what the run does now, with the time of day, so that a CI
# log shows where the minutes went (the build's share among them).
phase() { printf 'go-test: %(%H:%M:%S)T %s\n' -1 "$*"; }
# packages prints "1 package" or "N packages".
packages() { if [ "$1" = 1 ]; then echo "1 package"; else echo "$1 packages"; fi; }
# seconds prints the nanoseconds since $1 as seconds with milliseconds.
seconds() {
	local took=$((($(date +%s%N) - $1) / 1000000))
	printf '%d.%03ds' $((took / 1000)) $((took % 1000))
}

# Building need not wait for anything: every test binary is built first,
# on every core, and rsa once for all (RSA_TEST_BIN: testutil.BuildRSA
# copies it). go test -p 1 would instead compile and link each package's
# tests between two packages' runs, on one core.
run_start=$(date +%s%N)
phase "build: rsa and the test binaries"
"$go" build -o "$work/rsa" ./cmd/rsa
export RSA_TEST_BIN=$work/rsa
# A line a package: import path, directory, test binary. Each binary is
# named by its import path: three test packages share a name.
mkdir "$work/bin"
"$go" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{"\t"}}{{.Dir}}{{end}}' "${@:-./...}" |
	awk -F'\t' -v OFS='\t' -v bin="$work/bin" '{ b = $1; gsub("/", "_", b); print $1, $2, bin "/" b ".test" }' >"$work/packages"
status=0
awk -F'\t' '{ print $3; print $1 }' "$work/packages" |
	xargs -d '\n' -n 2 -P "$(nproc)" "$go" test -c -o >"$work/build.log" 2>&1 || status=$?
cat "$work/build.log"
build_took=$(seconds "$run_start")
phase "build: done in $build_took"

# The lanes. Packages in one lane run one at a time: a package that makes
# mount namespaces (test/slurm's compute nodes, internal/access, ...) copies
# into them every RAMDISK mount that exists in the root namespace at that
# moment, another package's too, and a root process holding a RAMDISK is
# one RSA rightly refuses to kill, so that other package's teardown would
# fail. test/cluster runs in a lane of its own (A) beside all the others in
# turn (B): it keeps its RAMDISKs, bricks and FUSE mounts inside its hosts'
# namespaces (in the root namespace it adds only the rsa-cluster-ns tmpfs),
# and what it could still meet from the other lane is handled where it
# starts: cluster-up and slurm-up drop every foreign ^rsa- mount in the
# namespaces they make, slurm-up checks for munged's socket, not for any
# munged, testutil retries useradd and userdel while another package holds
# the account files' lock, and the benchmark's emulated cluster (test/bench)
# has an id, and so a bridge, of its own. Lane B runs the light packages
# first (the unit packages, then e2e, pkg, bench and slurm), so that a
# broken build or unit shows within minutes. RSA_TEST_LANES=1 runs every
# package in lane B, in go list's order.
if [ "$lanes" = 1 ]; then
	: >"$work/lane-A"
	cp "$work/packages" "$work/lane-B"
else
	awk -F'\t' '$1 ~ /\/test\/cluster$/' "$work/packages" >"$work/lane-A"
	awk -F'\t' -v OFS='\t' '
		$1 ~ /\/test\/cluster$/ { next }
		{ rank = 9 }
		$1 ~ /\/(internal|cmd)\// { rank = 0 }
		$1 ~ /\/test\/e2e$/ { rank = 1 }
		$1 ~ /\/test\/pkg$/ { rank = 2 }
		$1 ~ /\/test\/bench$/ { rank = 3 }
		$1 ~ /\/test\/slurm$/ { rank = 4 }
		{ print rank, $0 }
	' "$work/packages" | sort -s -n -k1,1 | cut -f2- >"$work/lane-B"
fi
# The mount tests once more on the path of kernels before 6.8, which have
# no listmount (/proc/self/mountinfo; make test-kernel runs them on
# Debian 12's own kernel). A fourth field is the environment of a run.
awk -F'\t' -v OFS='\t' '$1 ~ /\/internal\/(mount|engine|node)$/ { print $0, "RSA_MOUNT_TABLE=mountinfo" }' \
	"$work/packages" >>"$work/lane-B"
# And on Debian 12's own kernel (6.1) under QEMU, last in lane B, which
# ends a minute or two before lane A (scripts/test-kernel.sh; a whole run
# only, not one of chosen packages).
if [ $# = 0 ]; then
	printf '%s\t%s\t%s\n' "kernel 6.1 (Debian 12, QEMU): internal/mount, internal/engine" "$PWD" "$PWD/scripts/test-kernel.sh" >>"$work/lane-B"
fi

# run_lane NAME runs the packages listed in $work/lane-NAME, one at a
# time, into $work/lane-NAME.log, and fails if one failed. Inside a
# package, up to four parallel tests (-parallel 4, where the default is a
# test per core); test/cluster two (RSA_TEST_CLUSTERS): each of its Gluster
# tests runs an emulated cluster of its own, whose every byte crosses
# Gluster's TLS, and four at once on two cores starved glusterd past the
# tests' timeouts (restarts of 40-90 s against 5 s alone). The lines go
# test itself would print (ok, FAIL, a package's time) are written to the
# log, and the lane's own time last.
run_lane() {
	local name=$1 list=$work/lane-$1 log=$work/lane-$1.log
	local failed=0 count=0 lane_start start rc parallel verdict pkg dir bin runenv
	lane_start=$(date +%s%N)
	while IFS=$'\t' read -r pkg dir bin runenv; do
		[ -z "$runenv" ] || pkg="$pkg [$runenv]"
		count=$((count + 1))
		if [ ! -x "$bin" ]; then
			printf 'FAIL\t%s [build failed]\n' "$pkg" >>"$log"
			failed=1
			continue
		fi
		start=$(date +%s%N)
		rc=0
		parallel=4
		[[ $pkg == */test/cluster ]] && parallel=${RSA_TEST_CLUSTERS:-2}
		if [[ $bin == *.sh ]]; then
			(cd "$dir" && GO=$go CI=true "$bin" </dev/null) >>"$log" 2>&1 || rc=$?
		else
			(cd "$dir" && env CI=true ${runenv:+"$runenv"} "$bin" -test.v -test.count=1 -test.parallel "$parallel" -test.timeout "$timeout" "${skip[@]}" </dev/null) >>"$log" 2>&1 || rc=$?
		fi
		verdict='ok  '
		if [ "$rc" != 0 ]; then
			verdict=FAIL
			failed=1
		fi
		printf '%s\t%s\t%s\n' "$verdict" "$pkg" "$(seconds "$start")" >>"$log"
	done <"$list"
	printf 'lane %s: %s (%s)\n' "$name" "$(seconds "$lane_start")" "$(packages "$count")" >>"$log"
	return "$failed"
}

: >"$work/lane-A.log"
: >"$work/lane-B.log"
lanes_start=$(date +%s%N)
if [ -s "$work/lane-A" ]; then
	phase "tests: lane A $(cut -f1 "$work/lane-A" | sed 's|^github.com/rsa-hpc/rsa/||' | paste -sd ' ' -), lane B $(packages "$(wc -l <"$work/lane-B")")"
else
	phase "tests: one lane, $(packages "$(wc -l <"$work/lane-B")")"
fi
set -m
for name in A B; do
	if [ -s "$work/lane-$name" ]; then
		run_lane "$name" &
		lanes_running[$!]=$name
	fi
done
set +m
while [ "${#lanes_running[@]}" -gt 0 ]; do
	rc=0
	wait -n -p pid "${!lanes_running[@]}" || rc=$?
	[ "$rc" = 0 ] || status=1
	phase "lane ${lanes_running[$pid]}: done$([ "$rc" = 0 ] || echo ", a package failed")"
	unset "lanes_running[$pid]"
done
phase "tests: done in $(seconds "$lanes_start"); with the build, $(seconds "$run_start")"

log=$work/log
cat "$work/lane-A.log" "$work/lane-B.log" >"$log"
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
# Where the time goes (CI has a budget): the build, each lane, and the
# slowest tests and subtests.
echo "time: build $build_took; $(grep -hE '^lane [AB]: ' "$log" | paste -sd ';' - | sed 's/;/; /g')"
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
