#!/usr/bin/env bash
# make evidence: the seeds' experiments at the sources' sizes (rsa bench
# --profile full; EVIDENCE_PROFILE=quick for make test's) on this machine, each result beside the source's number,
# written to docs/evidence.md (and its plots under docs/evidence/). Takes
# the whole machine for a long while: run nothing else meanwhile. Takes
# down the targets it brought up, also on failure.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rsa="$top/bin/rsa"
out=${EVIDENCE_DIR:-$top/bin/evidence}
latencies=${EVIDENCE_LATENCIES:-0,1ms,5ms,20ms,100ms}
# full: the sources' sizes (hours); quick: make test's sizes (minutes).
profile=${EVIDENCE_PROFILE:-full}

[ "$(id -u)" = 0 ] || { echo "make evidence needs root (it mounts targets and starts a daemon)" >&2; exit 1; }
[ -x "$rsa" ] || { echo "build first: make build" >&2; exit 1; }

cleanup() { "$rsa" bench target down ram shared@1g disk >/dev/null 2>&1 || true; }
trap cleanup EXIT

mkdir -p "$out"
rm -f "$out"/*.jsonl
commands=()
bench() { # bench NAME ARGS...: one benchmark's rows into $out/NAME.jsonl
	local name=$1
	shift
	commands+=("rsa bench $* --json")
	echo "== rsa bench $*" >&2
	"$rsa" bench "$@" --json >"$out/$name.jsonl"
}

bench thesis thesis --profile "$profile" --latency "$latencies" --ram-at-1g
for t in ram disk shared@1g; do
	bench "mptio-$t" mptio --profile "$profile" --target "$t"
	# -k: each test's files go after it (untimed, as the source's -k);
	# the full profile's otherwise outgrow the ram target.
	bench "metabench-$t" metabench --profile "$profile" --target "$t" -k
done
# MPTIO drops no cache between its tests: on shared@1g its reads come from
# this host's page cache unless opened O_DIRECT, which makes them cross
# the link as another client's would.
bench "mptio-shared@1g-direct" mptio --profile "$profile" --target shared@1g -I
bench sweep sweep --profile "$profile"

args=()
for c in "${commands[@]}"; do args+=(--command "$c"); done
"$rsa" bench report --out "$top/docs/evidence.md" --plots "$top/docs/evidence" "${args[@]}" "$out"/*.jsonl
echo "wrote $top/docs/evidence.md" >&2
