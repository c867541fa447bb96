#!/usr/bin/env bash
# make evidence: the seeds' experiments at the sources' sizes (rsa-lab bench
# --profile full; EVIDENCE_PROFILE=quick for make test's) on this machine, each result beside the source's number,
# written to docs/evidence.md (and its plots under docs/evidence/). Takes
# the whole machine for a long while: run nothing else meanwhile. Takes
# down the targets it brought up, also on failure.
#
# At the sources' sizes the whole takes hours, so a run goes on where an
# earlier one stopped: a benchmark whose rows a run before wrote, with the
# same command, is not run again (EVIDENCE_FRESH=1 runs every one anew).
# The rows are kept in EVIDENCE_DIR, by default docs/evidence/runs, in the
# repository: they are the record the page is written from, a clone
# carries them to the next machine, and a part measured on one day is
# kept on the next (the page gives each command its date). To measure a
# part again after its code changed: EVIDENCE_FRESH=1 EVIDENCE_ONLY=NAME.
# EVIDENCE_ONLY="NAME ..."
# runs only the named benchmarks (the names of their rows' files, e.g.
# "thesis-t52-20ms tools-ior-ram"), in the order given, and leaves
# docs/evidence.md as it is: the page is written only from a run that has
# every benchmark.
# EVIDENCE_PAGE_ONLY=1 runs nothing: it writes docs/evidence.md from the
# rows in EVIDENCE_DIR as they are, each part's command and date from its
# NAME.cmd and NAME.when (whatever profile it ran at), and fails if a part
# has no rows. It needs neither root nor the targets.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# The lab runs the benchmarks; its thesis runs jobs through the product's
# rsa beside it.
lab="$top/bin/rsa-lab"
out=${EVIDENCE_DIR:-$top/docs/evidence/runs}
latencies=${EVIDENCE_LATENCIES:-0,1ms,5ms,20ms,100ms}
# full: the sources' sizes (hours); quick: make test's sizes (minutes).
profile=${EVIDENCE_PROFILE:-full}

page_only=${EVIDENCE_PAGE_ONLY:-0}

if [ "$page_only" = 1 ]; then
	[ -x "$lab" ] || { echo "build first: make build-lab" >&2; exit 1; }
	ior=PREFIX # only in the commands of parts that have no rows yet
else
	[ "$(id -u)" = 0 ] || { echo "make evidence needs root (it mounts targets and starts a daemon)" >&2; exit 1; }
	for b in "$top/bin/rsa" "$lab"; do
		[ -x "$b" ] || { echo "build first: make build build-lab" >&2; exit 1; }
	done
	cleanup() { "$lab" bench target down ram shared@1g disk >/dev/null 2>&1 9>&- || true; }
	trap cleanup EXIT
	# IOR and mdtest, for the tools' parts (built once; seconds when built).
	ior=$("$top/scripts/build-ior.sh" | tail -n1)
fi

mkdir -p "$out"
# One run at a time per EVIDENCE_DIR: a second would remove the first's
# half-written rows (the .part files) and share its targets.
exec 9>"$out/.lock"
flock -n 9 || { echo "make evidence: another run is using $out; wait for it, or set EVIDENCE_DIR" >&2; exit 1; }
rm -f "$out"/*.part
names=()
declare -A argv
bench() { # bench NAME ARGS...: one benchmark, in its place in the page
	local name=$1
	shift
	names+=("$name")
	argv[$name]="$*"
}
command_of() { echo "rsa-lab bench ${argv[$1]} --json"; } # what the page and NAME.cmd say
# when_of NAME: when its rows were written, from NAME.when: a clone or a
# checkout gives the files the time it wrote them, not the run's.
when_of() {
	if [ -s "$out/$1.when" ]; then
		cat "$out/$1.when"
	else
		date -u -r "$out/$1.jsonl" '+%F %R UTC'
	fi
}
run() { # run NAME: its rows into $out/NAME.jsonl, unless a run before wrote them
	local name=$1 cmd
	local -a args # the arguments are words without spaces
	read -ra args <<<"${argv[$name]}"
	cmd=$(command_of "$name")
	if [ "${EVIDENCE_FRESH:-0}" != 1 ] && [ -s "$out/$name.jsonl" ] && [ "$(cat "$out/$name.cmd" 2>/dev/null)" = "$cmd" ]; then
		echo "== $cmd: kept, run $(when_of "$name") (EVIDENCE_FRESH=1 runs it again)" >&2
		return
	fi
	echo "== $cmd" >&2
	# 9>&-: the targets' servers it starts must not hold the lock.
	"$lab" bench "${args[@]}" --json >"$out/$name.jsonl.part" 9>&-
	# Only now: a run stopped before here leaves the rows of the last
	# complete one, with their command, as they were.
	rm -f "$out/$name.cmd" "$out/$name.when"
	mv "$out/$name.jsonl.part" "$out/$name.jsonl"
	date -u '+%F %R UTC' >"$out/$name.when"
	printf '%s\n' "$cmd" >"$out/$name.cmd"
}

# One benchmark per case, and T52 one per latency: the longest parts are
# the units a run resumes by. TLC reads T52's RSA jobs too: it runs with
# the first latency's.
# T54 is cross-checked by fio, not IOR: IOR takes a rank a file, and the
# full profile's 1,024 files would be 1,024 MPI processes on this host's
# cores (256 took 49 s to start and end and 25 MB each, 2026-11-25).
for c in t51 t53 t54 t55; do
	bench "thesis-$c" thesis --profile "$profile" --case "$c"
done
IFS=, read -ra lats <<<"$latencies"
# At 100 ms a create, one run of T52 (2,048 files created directly, and
# again by each stage-out) takes about 20 min: at the latencies named in
# EVIDENCE_ONCE_AT T52 runs once, elsewhere the full profile's three times.
once=${EVIDENCE_ONCE_AT:-100ms}
cases=t52,tlc
for l in "${lats[@]}"; do
	runs=()
	[[ ",$once," == *",$l,"* ]] && runs=(--runs 1)
	bench "thesis-t52-$l" thesis --profile "$profile" --case "$cases" --latency "$l" --ram-at-1g "${runs[@]}"
	cases=t52
done
# The seeds' codes (GUPFS' MPTIO and METABENCH, the TMS device sweep) are
# stood in for by IOR, mdtest and fio jobs (rsa-lab bench tools; the job
# files are cmd/rsa-lab/jobs): a part a tool and target, so that a run
# resumes by them (mdtest on shared@1g takes hours at full size).
for t in ram disk shared@1g; do
	for tool in ior mdtest fio; do
		bench "tools-$tool-$t" tools --profile "$profile" --tool "$tool" --target "$t" --ior "$ior"
	done
done
# E1, T52 on ram@1g as a designed experiment: ten pairs a cell, each
# pair's order drawn, the compute link at each of EVIDENCE_E1_RATES with
# 2,048 files (about 25, 15 and 12 min), and 512 files of 4 MiB at
# 1 Gbit/s (the same bytes).
read -ra e1_rates <<<"${EVIDENCE_E1_RATES:-500mbit 1gbit 2gbit}"
for rate in "${e1_rates[@]}"; do
	bench "e1-t52-$rate" thesis --profile "$profile" --case t52 --latency 0 --ram-at-1g --local=false --runs 10 --ram-at-1g-rate "$rate"
done
bench "e1-t52-512x4M" thesis --profile "$profile" --case t52 --latency 0 --ram-at-1g --local=false --runs 10 --ranks 512 --size 4M
# E2, the model: micro-benchmarks on E1's cluster at each of E1's rates
# (rsa-lab bench model), from which the two-term model and rsa-lab sim
# predict E1's cells; the page sets each beside E1's median.
e2_cells=()
for rate in "${e1_rates[@]}"; do
	e2_cells+=("$rate:2048x1M")
	[ "$rate" != 1gbit ] || e2_cells+=("1gbit:512x4M")
done
bench e2-model model --ior "$ior" --runs 3 --rates "$(IFS=,; echo "${e1_rates[*]}")" --cells "$(IFS=,; echo "${e2_cells[*]}")"
# E4, the thesis' mechanism: shared@1g's creates contend as GPFS's did
# (rsa-lab bench contention), the job spread over 1, 2 and 4 compute
# hosts. The thesis' 2 GiB as 512 files of 4 MiB: its 2,048 files would
# take about 45 min a run (creates cost up to 0.52 s each, one at a time).
bench contention contention --hosts 1,2,4 --ranks 512 --size 4M
# and at 4 hosts, where the thesis' headlines are, five times: the
# intervals (about 6 min a run).
bench contention-4 contention --hosts 4 --ranks 512 --size 4M --runs 5
# and at 1 and 2 hosts, five times each (about 35 min).
bench contention-12 contention --hosts 1,2 --ranks 512 --size 4M --runs 5
# and at 8 hosts, the most run here (the emulation allows 9), three
# times (about 25 min).
bench contention-8 contention --hosts 8 --ranks 512 --size 4M --runs 3

# E3, IO500's phases (rsa-lab bench io500): ranks over both compute hosts
# on RSA's RAMDISK and on shared@1g, and one host's tmpfs as the per-node
# ceiling; a 10 s stonewall (not a valid IO500 run, as its rows say), five
# runs, the cells in a drawn order each.
bench e3-io500 io500 --ior "$ior" --runs 5

if [ -n "${EVIDENCE_ONLY:-}" ]; then
	read -ra only <<<"$EVIDENCE_ONLY"
	for n in "${only[@]}"; do [ -n "${argv[$n]+set}" ] || { echo "EVIDENCE_ONLY: no benchmark $n; there are: ${names[*]}" >&2; exit 2; }; done
	for n in "${only[@]}"; do run "$n"; done
	have=0
	for n in "${names[@]}"; do [ -s "$out/$n.jsonl" ] && have=$((have + 1)); done
	echo "$have of ${#names[@]} benchmarks have rows in $out; docs/evidence.md is written by a run without EVIDENCE_ONLY" >&2
	exit 0
fi
args=()
if [ "$page_only" = 1 ]; then
	missing=()
	for n in "${names[@]}"; do [ -s "$out/$n.jsonl" ] && [ -s "$out/$n.cmd" ] || missing+=("$n"); done
	[ ${#missing[@]} = 0 ] || { echo "EVIDENCE_PAGE_ONLY: no rows in $out for: ${missing[*]}" >&2; exit 1; }
	# The commands the rows were written by, which may differ from
	# this run's (another profile).
	for n in "${names[@]}"; do args+=(--command "$(cat "$out/$n.cmd")  # $(when_of "$n")"); done
else
	for n in "${names[@]}"; do run "$n"; done
	# Each command with when its rows were written: a page may gather
	# runs of several days.
	for n in "${names[@]}"; do args+=(--command "$(command_of "$n")  # $(when_of "$n")"); done
fi
for n in "${names[@]}"; do args+=("$out/$n.jsonl"); done
"$lab" bench report --out "$top/docs/evidence.md" --plots "$top/docs/evidence" "${args[@]}"
echo "wrote $top/docs/evidence.md" >&2
