#!/usr/bin/env bash
# The thesis' example job across hosts: an emulated cluster (scripts/cluster-up:
# a control host, 3 RSA hosts with glusterd and an agent, 2 compute hosts with
# slurmd and an agent), a normal user submits the job of 2,048 input files with
# sbatch -N 2, its RAMDISK is one Gluster volume over 2 RSA hosts, and the demo
# prints the job's timeline and where its data physically lived: how many
# files each brick held. Stops everything it started, also on failure.
#
# Knobs: DEMO_FILES (2048), DEMO_KIB (256 KiB per file).
set -euo pipefail

files=${DEMO_FILES:-2048}
kib=${DEMO_KIB:-256}
top=$(cd "$(dirname "$0")/.." && pwd)
export RSA_CLUSTER_DIR=/var/tmp/rsa-cluster-demo RSA_CLUSTER_MODE=bb RSA_BIN="$top/bin/rsa" RSA_CLUSTER_CAPACITY=1G
demo_user=rsademo
work=/var/tmp/rsa-demo-cluster

[ "$(id -u)" = 0 ] || { echo "make demo-cluster needs root (it starts namespaces, Gluster, Slurm and RSA)" >&2; exit 1; }
[ -x "$RSA_BIN" ] || { echo "build first: make build" >&2; exit 1; }

created_user=0
cleanup() {
	set +e
	"$top/scripts/cluster-down"
	rm -rf "$work"
	[ "$created_user" = 1 ] && userdel --remove "$demo_user" 2>/dev/null
	return 0
}
trap cleanup EXIT

if ! id "$demo_user" >/dev/null 2>&1; then
	useradd --create-home --user-group --shell /bin/bash "$demo_user"
	created_user=1
fi
"$top/scripts/cluster-up"
export SLURM_CONF=$RSA_CLUSTER_DIR/etc/slurm.conf
on() { "$top/scripts/cluster-up" exec "$@"; }
rsa() { on ctl "$RSA_CLUSTER_DIR/rsa/rsa" --config "$RSA_CLUSTER_DIR/rsa/rsa.toml" "$@"; }
as_user() { runuser -u "$demo_user" -- env SLURM_CONF="$SLURM_CONF" "$@"; }

rm -rf "$work"
install -d -m 0755 -o "$demo_user" -g "$demo_user" "$work" "$work/input" "$work/results"
echo "== preparing $files input files of ${kib} KiB"
# shellcheck disable=SC2016 # the inner script expands its own arguments
as_user sh -c 'i=0; while [ $i -lt "$1" ]; do head -c "$2" /dev/urandom > "$3/part-$i"; i=$((i+1)); done' sh "$files" $((kib * 1024)) "$work/input"

cat >"$work/job.sh" <<SH
#!/bin/bash
#SBATCH -N 2
#SBATCH -o $work/job.out
#RSA_DATA_IN=$work/input
#RSA_DATA_OUT=$work/results
#RSA_DELAY=15
srun -N2 bash -c 'echo "\$(hostname): \$(findmnt -n -o FSTYPE --mountpoint $work/input) at $work/input, \$(cat $work/input/* | wc -c) bytes read"'
# The switch: after RSA_DELAY the RAMDISK leaves the input path and comes
# back, rebuilt, at the output path.
srun -N2 bash -c 'for i in \$(seq 300); do [ "\$(findmnt -n -o FSTYPE --mountpoint $work/results)" = fuse.glusterfs ] && break; sleep 0.1; done
echo "\$(hostname): writing into \$(findmnt -n -o FSTYPE --mountpoint $work/results || echo disk) at $work/results"
head -c 1M /dev/urandom > $work/results/from-\$(hostname)'
SH
chown "$demo_user:$demo_user" "$work/job.sh"
echo "== the job script"
grep '^#' "$work/job.sh"

id=$(as_user sbatch --parsable "$work/job.sh")
echo "== submitted Slurm job $id; following it"
last="" bricks=""
while :; do
	sq=$(squeue -h -t all -j "$id" -o '%T %N' 2>/dev/null || true)
	st=$(rsa status --all | awk 'NR > 1 { line = $0 } END { print line }')
	now="slurm: $sq | rsa: $st"
	if [ "$now" != "$last" ]; then
		printf '%s  %s\n' "$(date +%T.%N | cut -c1-12)" "$now"
		last=$now
	fi
	# Where the input lives, once it is staged in: count the files on
	# every RSA host's brick of the job's volume.
	if [ -z "$bricks" ] && [[ $st == *INUSE_IN* || $st == *STAGED_IN* || $st == *MOUNTED_IN* ]]; then
		rid=$(awk '{ print $1 }' <<<"$st")
		for h in $(seq -f 'rsa%g' "${RSA_CLUSTER_RSA:-3}"); do
			n=$(on "$h" sh -c "find /run/rsa/bricks/rsa-job-$rid/brick -path '*/.glusterfs' -prune -o -type f ! -perm -1000 -print 2>/dev/null | wc -l")
			bricks+="$h: $n files; "
		done
	fi
	case "$st" in *RELEASED*) break ;; esac
	sleep 0.2
done
echo "== where the input lived (files per brick of the job's Gluster volume)"
echo "${bricks:-(not seen: the job passed too fast)}"
echo "== the job's output"
cat "$work/job.out"
echo "== RSA's log of the job"
rsa log "$(rsa status --all | awk 'NR > 1 { id = $1 } END { print id }')"
echo "== output on disk"
ls -l "$work/results"
