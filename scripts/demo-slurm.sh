#!/usr/bin/env bash
# The thesis' example job through real Slurm: a cluster of two compute nodes
# on this host (scripts/slurm-up, burst_buffer/lua), a normal user submits a
# job script with the thesis' #RSA_ lines (App. U) using sbatch, and the
# demo follows it: staged in while pending (BurstBufferStageIn), input in
# RAM on both nodes, output caught in RAM, nodes released while RSA stages
# the output out. Stops everything it started, also on failure.
#
# Knobs: DEMO_FILES (2048), DEMO_KIB (256 KiB per file).
set -euo pipefail

files=${DEMO_FILES:-2048}
kib=${DEMO_KIB:-256}
top=$(cd "$(dirname "$0")/.." && pwd)
export RSA_SLURM_DIR=/run/rsa-slurm-demo RSA_SLURM_MODE=bb RSA_SLURM_NODES=2 RSA_BIN="$top/bin/rsa" RSA_SLURM_CAPACITY=2G
demo_user=rsademo
work=/var/tmp/rsa-demo-slurm

[ "$(id -u)" = 0 ] || { echo "make demo-slurm needs root (it starts Slurm and the RSA daemon)" >&2; exit 1; }
[ -x "$RSA_BIN" ] || { echo "build first: make build" >&2; exit 1; }

created_user=0
cleanup() {
	set +e
	"$top/scripts/slurm-down"
	rm -rf "$work"
	[ "$created_user" = 1 ] && userdel --remove "$demo_user" 2>/dev/null
	return 0
}
trap cleanup EXIT

if ! id "$demo_user" >/dev/null 2>&1; then
	useradd --create-home --user-group --shell /bin/bash "$demo_user"
	created_user=1
fi
"$top/scripts/slurm-up"
export SLURM_CONF=$RSA_SLURM_DIR/etc/slurm.conf
rsa() { "$RSA_SLURM_DIR/rsa/rsa" --config "$RSA_SLURM_DIR/rsa/rsa.toml" "$@"; }
as_user() { runuser -u "$demo_user" -- env SLURM_CONF="$SLURM_CONF" "$@"; }

rm -rf "$work"
install -d -m 0755 -o "$demo_user" -g "$demo_user" "$work" "$work/input" "$work/results"
echo "== preparing $files input files of ${kib} KiB"
# shellcheck disable=SC2016 # the inner script expands its own arguments
as_user sh -c 'i=0; while [ $i -lt "$1" ]; do head -c "$2" /dev/urandom > "$3/part-$i"; i=$((i+1)); done' sh "$files" $((kib * 1024)) "$work/input"

# The user's staging programs and job script, as in App. U.
cat >"$work/stage-out.sh" <<'SH'
#!/bin/bash
# $1 is the RAMDISK, $2 the output directory: pack the results into one tar.
tar -C "$1" -cf "$2/results.tar" .
SH
cat >"$work/job.sh" <<SH
#!/bin/bash
#SBATCH -N 2
#SBATCH -o $work/job.out
# set stage-in data directory:
#RSA_DATA_IN=$work/input
# set stage-out directory and a custom stage-out script:
#RSA_DATA_OUT=$work/results
#RSA_STAGE_OUT=$work/stage-out.sh
#RSA_DELAY=3
srun -N2 bash -c 'echo "\$SLURMD_NODENAME: \$(findmnt -n -o FSTYPE --mountpoint $work/input) at $work/input, \$(cat $work/input/* | wc -c) bytes read"'
sleep 4
srun -N2 bash -c 'findmnt -n -o FSTYPE --mountpoint $work/results >/dev/null && head -c 1M /dev/urandom > $work/results/from-\$SLURMD_NODENAME'
SH
chown "$demo_user:$demo_user" "$work/stage-out.sh" "$work/job.sh"
chmod 755 "$work/stage-out.sh"
echo "== the job script"
grep '^#' "$work/job.sh"

id=$(as_user sbatch --parsable "$work/job.sh")
echo "== submitted Slurm job $id; following it"
last=""
while :; do
	sq=$(squeue -h -t all -j "$id" -o '%T %r' 2>/dev/null || true)
	st=$(rsa status --all | awk -v n="$id" 'NR > 1 { line = $0 } END { print line }')
	nodes=$(sinfo -h -N -o '%N=%t' | tr '\n' ' ')
	now="slurm: $sq | nodes: $nodes| rsa: $st"
	if [ "$now" != "$last" ]; then
		printf '%s  %s\n' "$(date +%T.%N | cut -c1-12)" "$now"
		last=$now
	fi
	case "$st" in *RELEASED*) break ;; esac
	sleep 0.2
done
echo "== the job's output"
cat "$work/job.out"
echo "== RSA's log of the job"
rsa log "$(rsa status --all --json | grep -o '"id": [0-9]*' | tail -1 | grep -o '[0-9]*')"
echo "== output on disk"
tar -tvf "$work/results/results.tar"
