#!/usr/bin/env bash
# The thesis' example job (ch. 5: 2,048 processes, one file each), run by an
# unprivileged user with its I/O on disk, through RSA, and on shared@1g (rsa-lab
# bench's stand-in for a shared parallel file system: GlusterFS behind a
# 1 Gbit/s link, up in a few seconds; docs/bench.md). Prints RSA's timeline
# and how long the command held its "compute" each way. Cleans up everything
# it started or created, also on failure.
#
# Knobs: DEMO_FILES (2048), DEMO_KIB (256 KiB per file), DEMO_COMPUTE (3 s),
# DEMO_SHARED (1; 0 leaves out the shared@1g run).
set -euo pipefail

files=${DEMO_FILES:-2048}
kib=${DEMO_KIB:-256}
compute=${DEMO_COMPUTE:-3}
with_shared=${DEMO_SHARED:-1}
top=$(cd "$(dirname "$0")/.." && pwd)
rsa="$top/bin/rsa"
lab="$top/bin/rsa-lab" # brings shared@1g up and down
demo_user=rsademo
work=/var/tmp/rsa-demo
# The demo's daemon has a state, socket and RAMDISK root of its own: it never
# touches an installed RSA's /var/lib/rsa or /run/rsa.
daemon_dir=/var/tmp/rsa-demo-daemon
export RSA_CONFIG=$daemon_dir/rsa.toml

[ "$(id -u)" = 0 ] || { echo "make demo needs root (it starts the RSA daemon)" >&2; exit 1; }
[ -x "$rsa" ] || { echo "build first: make build" >&2; exit 1; }
[ "$with_shared" != 1 ] || [ -x "$lab" ] || { echo "build first: make build-lab (or DEMO_SHARED=0)" >&2; exit 1; }
if [ -e "$daemon_dir" ]; then
	echo "$daemon_dir exists: another make demo runs, or one was killed (remove it after checking)" >&2
	exit 1
fi

daemon_pid=""
created_user=0
shared_up=0
shared_dir=""
cleanup() {
	set +e
	[ -n "$shared_dir" ] && rm -rf "$shared_dir"
	[ "$shared_up" = 1 ] && "$lab" bench target down shared@1g >/dev/null
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null
		wait "$daemon_pid" 2>/dev/null
	fi
	# Anything of ours still mounted (after a failure): innermost first.
	findmnt -rn -o TARGET | grep -E "^($work|$daemon_dir)/" | sort -r | while read -r m; do umount -l "$m"; done
	rm -rf "$work" "$daemon_dir"
	[ "$created_user" = 1 ] && userdel --remove "$demo_user" 2>/dev/null
	return 0
}
trap cleanup EXIT

if ! id "$demo_user" >/dev/null 2>&1; then
	useradd --create-home --user-group --shell /bin/sh "$demo_user"
	created_user=1
fi

as_user() { setpriv --reuid "$demo_user" --regid "$demo_user" --init-groups -- env -i PATH=/usr/bin:/bin HOME=/tmp "$@"; }

rm -rf "$work"
install -d -m 0755 -o "$demo_user" -g "$demo_user" "$work" "$work/input" "$work/results-disk" "$work/results"

echo "== preparing $files input files of ${kib} KiB"
# shellcheck disable=SC2016 # the inner script expands its own arguments
as_user sh -c 'i=0; while [ $i -lt "$1" ]; do head -c "$2" /dev/urandom > "$3/part-$i"; i=$((i+1)); done' sh "$files" $((kib * 1024)) "$work/input"
sync

# The job: read every input file, compute, write one result per process and
# commit it (fsync), as a checkpointing code would. Under RSA it waits, at
# most a few seconds, for its output directory to be switched to RAM.
cat > "$work/job.sh" <<'EOF'
#!/bin/sh
set -eu
in=$1 out=$2 compute=$3
t0=$(date +%s.%N)
cat "$in"/part-* > /dev/null
t1=$(date +%s.%N)
sleep "$compute"
if [ -n "${RSA_JOB_ID:-}" ]; then
	n=0; until findmnt -n --mountpoint "$out" >/dev/null; do n=$((n+1)); [ $n -lt 100 ] || break; sleep 0.05; done
fi
t2=$(date +%s.%N)
cp "$in"/part-* "$out"/
sync "$out"/part-*
t3=$(date +%s.%N)
echo "$(echo "$t3 - $t0" | bc) read $(echo "$t1 - $t0" | bc) s, write $(echo "$t3 - $t2" | bc) s" > "$out/.timing"
EOF
chmod 0755 "$work/job.sh"

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

now() { date +%s.%N; }
secs() { echo "$2 - $1" | bc; }

echo "== run 1: the job with its I/O on disk"
drop_caches
as_user "$work/job.sh" "$work/input" "$work/results-disk" "$compute"
read -r disk_held disk_io < "$work/results-disk/.timing"

echo "== starting the RSA daemon (one local RSA node, half of free RAM; its files in $daemon_dir)"
install -d -m 0755 "$daemon_dir"
cat > "$RSA_CONFIG" <<EOF
state_dir = "$daemon_dir/state"
socket = "$daemon_dir/run/rsa.sock"
ramdisk_root = "$daemon_dir/ramdisk"
EOF
"$rsa" serve > "$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do "$rsa" version >/dev/null 2>&1 && break; sleep 0.1; done
"$rsa" nodes

echo "== run 2: the same job through RSA"
drop_caches
need=$(( (files * kib * 1024 * 3 / 2) / 1048576 + 64 ))M
s0=$(now)
as_user env RSA_CONFIG="$RSA_CONFIG" "$rsa" run --in "$work/input" --out "$work/results" --delay 1 --capacity "$need" \
	-- "$work/job.sh" "$work/input" "$work/results" "$compute" 2> "$work/run.err"
s1=$(now)
cat "$work/run.err"
job=$(sed -n 's/^rsa: job \([0-9]*\) submitted.*/\1/p' "$work/run.err")
as_user env RSA_CONFIG="$RSA_CONFIG" "$rsa" wait "$job"
s2=$(now)
read -r rsa_held rsa_io < "$work/results/.timing"

echo "== verifying: every result equals its input, on disk, after stage-out"
for f in "$work"/input/part-*; do
	cmp -s "$f" "$work/results/${f##*/}" || { echo "MISMATCH: ${f##*/}" >&2; exit 1; }
done
echo "all $files results verified"

echo "== RSA timeline of job $job (seconds after submission)"
"$rsa" log "$job" | awk '$3 == "job" { ts = $1; if (!t0) t0 = ts; sub(/^[^ ]+ [^ ]+ job [0-9]+ /, ""); printf "%7.3f %s\n", ts - t0, $0 }'

shared_line="  compute held, I/O on shared@1g : not run (DEMO_SHARED=0); make evidence compares RSA with it"
if [ "$with_shared" = 1 ]; then
	echo "== run 3: the same job with its I/O on shared@1g (GlusterFS behind a 1 Gbit/s link)"
	# Taken down at the end only if this demo brought it up.
	findmnt -rn -o TARGET | grep -q '/rsa-bench/shared@1g$' || shared_up=1
	if mnt=$("$lab" bench target up shared@1g 2>"$work/shared.err" | awk -F'\t' '$1 == "shared@1g" && $2 ~ /^\// { print $2 }') && [ -n "$mnt" ]; then
		shared_dir=$mnt/rsa-demo
		install -d -m 0755 -o "$demo_user" -g "$demo_user" "$shared_dir" "$shared_dir/results"
		as_user cp -r "$work/input" "$shared_dir/input"
		drop_caches
		as_user "$work/job.sh" "$shared_dir/input" "$shared_dir/results" "$compute"
		read -r shared_held shared_io < "$shared_dir/results/.timing"
		shared_line=$(printf '  compute held, I/O on shared@1g : %6.2f s   (%s)' "$shared_held" "$shared_io")
	else
		shared_line="  compute held, I/O on shared@1g : shared@1g did not come up ($(tr '\n' ' ' < "$work/shared.err")); see make evidence"
	fi
fi

stage_in=$(secs "$s0" "$s1")
printf '\n== result (%s files x %s KiB in, the same out; compute %s s)\n' "$files" "$kib" "$compute"
printf '  compute held, I/O on disk      : %6.2f s   (%s)\n' "$disk_held" "$disk_io"
printf '  compute held, I/O via RSA      : %6.2f s   (%s)\n' "$rsa_held" "$rsa_io"
echo "$shared_line"
printf '  rsa run, from submit           : %6.2f s   (includes stage-in before the job started)\n' "$stage_in"
printf '  stage-out + teardown after the command (compute already free): %.2f s\n' "$(secs "$s1" "$s2")"
echo "== done; cleaning up"
