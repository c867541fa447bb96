#!/usr/bin/env bash
# Benchmarks of the gluster engine on the emulated cluster (not tests):
#   1. RAMDISK construct and destroy time over 1, 2 and 3 RSA hosts;
#   2. stage-in throughput of 2,048 x 1 MiB and 100,000 x 4 KiB into a
#      volume over 2 and 3 RSA hosts, and into a tmpfs as the local engine
#      stages (rsa copy, the same mover), for a floor to compare with;
#   3. the RAM Gluster's processes take per job outside the bricks;
#   4. a cold read of 20,000 x 4 KiB on one compute host, and on both at
#      once, in the tree's order, and on one host in a shuffled order, the
#      input staged as files and as an image (runs interleaved);
#   5. the brick operations per file of each stage-in (gluster volume
#      profile, started as the stage-in starts, read as the job runs);
#   6. the floor of an image's build: the big set's bytes written by one
#      process (cat) through one Gluster client into an image job's
#      volume over 2 RSA hosts (sharded, TLS), as the image builder writes
#      its one file, fsync'd; no image build can be faster.
# Stage-in runs once per input mode: files (a tree in the volume) and image
# (one erofs image of it).
# Every job goes through Slurm (burst_buffer/lua) as a normal user. Prints
# one "bench-cluster: ..." line per measurement. Run on a quiet machine:
# every emulated host shares its cores.
#
# Knobs: BENCH_REPEAT (3), BENCH_BIG_FILES (2048), BENCH_SMALL_FILES (100000),
# BENCH_PARTS (which of "construct stage-in read profile floor memory" to run;
# default all),
# BENCH_SETS (which of "big small" to stage in; default both), BENCH_MODES
# (which of "files image" to stage in as; default both), BENCH_HOSTS (over
# how many RSA hosts to stage in: "2 3"), BENCH_STAGE_REPEAT (stage-in runs
# per cell, 1: the small set's files mode takes minutes a run),
# BENCH_READS (the cold reads' cells, HOSTS:ORDER: "1:tree 2:tree 1:shuffled").
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
repeat=${BENCH_REPEAT:-3}
big=${BENCH_BIG_FILES:-2048}
small=${BENCH_SMALL_FILES:-100000}
export RSA_CLUSTER_DIR=/var/tmp/rsa-cluster-bench RSA_CLUSTER_MODE=bb RSA_BIN="$top/bin/rsa" RSA_CLUSTER_CAPACITY=3G RSA_CLUSTER_LEAD=0
user=rsabench
work=/var/tmp/rsa-bench-cluster

[ "$(id -u)" = 0 ] || { echo "bench-cluster needs root" >&2; exit 1; }
[ -x "$RSA_BIN" ] || { echo "build first: make build" >&2; exit 1; }

created_user=0 ram=""
cleanup() {
	set +e
	"$top/scripts/cluster-down"
	[ -n "$ram" ] && umount "$ram" && rmdir "$ram"
	[ "${BENCH_KEEP_DATA:-0}" = 1 ] || rm -rf "$work"
	[ "$created_user" = 1 ] && userdel --remove "$user" 2>/dev/null
	return 0
}
trap cleanup EXIT
if ! id "$user" >/dev/null 2>&1; then
	useradd --create-home --user-group --shell /bin/bash "$user"
	created_user=1
fi
export SLURM_CONF=$RSA_CLUSTER_DIR/etc/slurm.conf
on() { "$top/scripts/cluster-up" exec "$@"; }
rsa() { "$RSA_CLUSTER_DIR/rsa/rsa" --config "$RSA_CLUSTER_DIR/rsa/rsa.toml" "$@"; }
as_user() { runuser -u "$user" -- env SLURM_CONF="$SLURM_CONF" "$@"; }

# The data sets take minutes to write: a run cut short leaves them for the
# next (BENCH_KEEP_DATA=1 keeps them at the end too).
if [[ $(find "$work/big" -type f 2>/dev/null | wc -l) != "$big" || $(find "$work/small" -type f 2>/dev/null | wc -l) != "$small" ||
	$(find "$work/read" -type f 2>/dev/null | wc -l) != 20000 ]]; then
	rm -rf "$work"
	install -d -m 0755 -o "$user" -g "$user" "$work" "$work/big" "$work/small" "$work/read"
	echo "bench-cluster: writing the data sets" >&2
	# shellcheck disable=SC2016 # the inner scripts expand their own arguments
	as_user sh -c 'i=0; while [ $i -lt "$1" ]; do head -c 1048576 /dev/urandom > "$2/f$i"; i=$((i+1)); done' sh "$big" "$work/big"
	# shellcheck disable=SC2016
	as_user python3 -c 'import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    sub = os.path.join(d, "d%03d" % (i % 100))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%d" % i), "wb") as f:
        f.write(os.urandom(4096))' "$work/small" "$small"
	# shellcheck disable=SC2016
	as_user python3 -c 'import os, sys
d = sys.argv[1]
for i in range(20000):
    sub = os.path.join(d, "d%02d" % (i % 20))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%d" % i), "wb") as f:
        f.write(os.urandom(4096))' "$work/read"
	sync
fi
find "$work" -mindepth 1 -maxdepth 1 ! -name big ! -name small ! -name read -exec rm -rf {} +
install -d -m 0755 -o "$user" -g "$user" "$work/none"

"$top/scripts/cluster-up" >&2

# run_job NAME CAPACITY INPUT [MODE [NODES [BODY]]]: a job on NODES compute
# hosts (1) with that capacity (split over as many RSA hosts as the
# allocator needs) and input, staged in as MODE (files); BODY is its
# script (true). Waits until RSA released it and prints RSA's job id.
run_job() {
	local name=$1 capacity=$2 input=$3 mode=${4:-files} nodes=${5:-1} body=${6:-true} id rid st
	cat >"$work/$name.sh" <<SH
#!/bin/bash
#SBATCH -N $nodes
#SBATCH -o $work/$name.out
#RSA capacity=$capacity pool=rsa input=$mode
#RSA_DATA_IN=$input
#RSA_DATA_OUT=$work/out-$name
$body
SH
	install -d -o "$user" -g "$user" "$work/out-$name"
	chown "$user:" "$work/$name.sh"
	id=$(as_user sbatch --parsable "$work/$name.sh") || { echo "bench-cluster: sbatch $name failed" >&2; exit 1; }
	for _ in $(seq 6000); do
		st=$(rsa status --all | awk -v s="$id" '$2 == s { print $1, $5 }' | tail -1)
		rid=${st% *}
		[[ $st == *RELEASED* || $st == *FAILED* ]] && break
		sleep 0.1
	done
	[[ $st == *RELEASED* ]] || { echo "bench-cluster: job $name ended $st" >&2; exit 1; }
	echo "$rid"
}

parts=${BENCH_PARTS:-construct stage-in read profile floor memory}

# 1. construct and destroy.
[[ $parts == *construct* ]] && for n in 1 2 3; do
	capacity=$(( (n - 1) * 3 + 2 ))G # 2G fits one host, 5G two, 8G three (3G each)
	for r in $(seq "$repeat"); do
		rid=$(run_job "cd-$n-$r" "$capacity" "$work/none")
		c=$(grep "\"RAMDISK constructed\" job=$rid " "$RSA_CLUSTER_DIR/log/rsa.out" | tail -1 | grep -o 'total_s=[0-9.]*' | cut -d= -f2)
		d=$(grep "\"RAMDISK destroyed\" job=$rid " "$RSA_CLUSTER_DIR/log/rsa.out" | tail -1 | grep -o 'total_s=[0-9.]*' | cut -d= -f2)
		echo "bench-cluster: construct hosts=$n run=$r seconds=$c"
		echo "bench-cluster: destroy hosts=$n run=$r seconds=$d"
	done
done

# 2. stage-in time: the daemon's "stage-in done in" line of the job's log
# (the whole stage, from the mover's start to its verified end), and the
# mover's or the image builder's own line.
[[ $parts == *stage-in* ]] && for set in ${BENCH_SETS:-big small}; do
	for n in ${BENCH_HOSTS:-2 3}; do
		capacity=$(( (n - 1) * 3 + 2 ))G
		# The modes interleaved, run by run: a drift of the machine
		# meets both alike.
		for r in $(seq "${BENCH_STAGE_REPEAT:-1}"); do
			for mode in ${BENCH_MODES:-files image}; do
				rid=$(run_job "in-$set-$n-$mode-$r" "$capacity" "$work/$set" "$mode")
				log=$(rsa log "$rid")
				took=$(grep -o 'stage-in done in [0-9.a-z]*' <<<"$log" | head -1 | awk '{print $4}')
				line=$(grep -E '^copied|input image of' <<<"$log" | head -1 | sed 's/^[^ ]* stage-in: //')
				echo "bench-cluster: stage-in set=$set hosts=$n mode=$mode run=$r took=$took $line"
			done
		done
	done
	ram=$(mktemp -d /run/rsa-bench-ram.XXXX)
	mount -t tmpfs -o size=4G,mode=0777 rsa-bench "$ram"
	start=$EPOCHREALTIME
	as_user "$RSA_BIN" copy --sync -- "$work/$set" "$ram/$set" >/dev/null
	took=$(bc <<<"${EPOCHREALTIME/,/.} - ${start/,/.}")
	bytes=$(du -sb "$ram/$set" | cut -f1)
	echo "bench-cluster: stage-in set=$set local-tmpfs seconds=$took bytes=$bytes"
	umount "$ram" && rmdir "$ram"
	ram=""
done

# 4. cold reads of the 20,000 files staged in as files and as an image; each
# host's time in the job's output.
# read-node.sh DIR ORDER: reads every file under DIR, in the tree's order
# (tree) or in one fixed shuffle of it (shuffled: as a training job samples a
# data set, or an interpreter imports its modules).
cat >"$work/read-node.sh" <<'SH'
#!/bin/bash
s=$EPOCHREALTIME
if [ "$2" = shuffled ]; then
	find "$1" -type f -print0 | shuf -z --random-source=<(yes) | xargs -0 cat > /dev/null
else
	find "$1" -type f -print0 | xargs -0 cat > /dev/null
fi
echo "read host=$(hostname) seconds=$(bc <<<"${EPOCHREALTIME/,/.} - ${s/,/.}")"
SH
chmod 0755 "$work/read-node.sh"
[[ $parts == *read* ]] && for r in $(seq "$repeat"); do
	for mode in ${BENCH_MODES:-files image}; do
		for cell in ${BENCH_READS:-1:tree 2:tree 1:shuffled}; do
			n=${cell%:*} order=${cell#*:}
			run_job "read-$mode-$n-$r" 5G "$work/read" "$mode" "$n" "srun -N$n $work/read-node.sh $work/read $order" >/dev/null
			grep '^read ' "$work/read-$mode-$n-$r.out" | sed "s/^/bench-cluster: cold-read mode=$mode hosts-reading=$n order=$order run=$r files=20000 /"
		done
	done
done

# 5. brick operations per file: each set staged in on 2 RSA hosts in each
# mode, profiled from its STAGING_IN to its job's start (the job waits for
# a gate, so the volume is there to be read), summed over the bricks.
state_of() { rsa status --all | awk -v s="$1" '$2 == s { print $1, $5 }' | tail -1; }
# held_job NAME INPUT MODE: submits, as the user, a one-host job whose
# input is staged in as MODE and which holds its RAMDISK until
# $work/go-NAME exists; prints its Slurm id.
held_job() {
	local name=$1 input=$2 mode=$3
	rm -f "$work/go-$name"
	cat >"$work/$name.sh" <<SH
#!/bin/bash
#SBATCH -N 1
#SBATCH -o $work/$name.out
#RSA capacity=5G pool=rsa input=$mode
#RSA_DATA_IN=$input
#RSA_DATA_OUT=$work/out-$name
while [ ! -e $work/go-$name ]; do sleep 0.2; done
SH
	install -d -o "$user" -g "$user" "$work/out-$name"
	chown "$user:" "$work/$name.sh"
	as_user sbatch --parsable "$work/$name.sh"
}
# wait_state ID STATE...: waits (10 min at most) until the RSA state of
# Slurm job ID is one of STATE, and prints "RSA-ID STATE".
wait_state() {
	local id=$1 st="" s
	shift
	for _ in $(seq 12000); do
		st=$(state_of "$id")
		for s in "$@"; do [[ $st == *"$s"* ]] && break 2; done
		sleep 0.05
	done
	echo "$st"
}
[[ $parts == *profile* ]] && for set in ${BENCH_SETS:-big small}; do
	files=$(find "$work/$set" -type f | wc -l)
	for mode in ${BENCH_MODES:-files image}; do
		name=prof-$set-$mode
		id=$(held_job "$name" "$work/$set" "$mode")
		st=$(wait_state "$id" BOOTED STAGING_IN)
		rid=${st% *}
		vol=rsa-job-$rid
		on rsa1 gluster --mode=script volume profile "$vol" start >/dev/null
		wait_state "$id" INUSE_IN RELEASED >/dev/null
		on rsa1 gluster --mode=script volume profile "$vol" info cumulative |
			awk -v set="$set" -v mode="$mode" -v files="$files" '
				$NF ~ /^[A-Z]+$/ && $(NF-1) ~ /^[0-9]+$/ { calls[$NF] += $(NF-1); all += $(NF-1) }
				END {
					line = ""
					for (f in calls) if (calls[f] / files >= 0.05) line = line sprintf(" %s=%.2f", f, calls[f] / files)
					printf "bench-cluster: profile set=%s mode=%s hosts=2 files=%d ops-per-file=%.2f%s\n", set, mode, files, all / files, line
				}'
		touch "$work/go-$name"
		wait_state "$id" RELEASED >/dev/null
	done
done

# 6. the floor of an image build: an image job (an empty input) holds its
# volume, mounted on the control host, while root writes the big set's
# bytes into one file there, as the builder does.
[[ $parts == *floor* ]] && for r in $(seq "$repeat"); do
	name=floor-$r
	id=$(held_job "$name" "$work/none" image)
	st=$(wait_state "$id" INUSE_IN RELEASED)
	rid=${st% *}
	dir=$(rsa status --json --all | python3 -c 'import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if j["id"] == int(sys.argv[1]): print(j["ramdisk"])' "$rid")
	bytes=$(du -sb "$work/big" | cut -f1)
	# shellcheck disable=SC2016 # the inner script expands its own arguments
	took=$(on ctl bash -c 's=$EPOCHREALTIME; cat "$1"/* > "$2/floor"; sync -f "$2/floor"; e=$EPOCHREALTIME; rm -f "$2/floor"; bc <<<"${e/,/.} - ${s/,/.}"' sh "$work/big" "$dir")
	echo "bench-cluster: floor set=big hosts=2 writer=one-client run=$r bytes=$bytes seconds=$took"
	# The same bytes as two halves of the one file, written at once through
	# two clients of the volume on the same host (a second mount): what an
	# image written by several writers could reach.
	# shellcheck disable=SC2016 # the inner script expands its own arguments
	[[ ${BENCH_FLOOR_TWO:-0} = 1 ]] && on ctl bash -c 'set -e
		src=$(findmnt -n -o SOURCE --mountpoint "$2"); m2=$(mktemp -d /run/rsa-bench-m2.XXXX)
		mount -t glusterfs -o nosuid,nodev "$src" "$m2"
		files=("$1"/*); half=$(( ${#files[@]} / 2 ))
		: > "$2/floor"; s=$EPOCHREALTIME
		cat "${files[@]:0:half}" | dd of="$2/floor" bs=1M iflag=fullblock conv=notrunc status=none &
		cat "${files[@]:half}" | dd of="$m2/floor" bs=1M seek="$half" iflag=fullblock conv=notrunc status=none &
		wait; sync -f "$2/floor"; sync -f "$m2/floor"; e=$EPOCHREALTIME
		size=$(stat -c %s "$2/floor"); rm -f "$2/floor"; umount "$m2"; rmdir "$m2"
		echo "$(bc <<<"${e/,/.} - ${s/,/.}") $size"' sh "$work/big" "$dir" | {
		read -r took size
		echo "bench-cluster: floor set=big hosts=2 writer=two-clients run=$r bytes=$bytes seconds=$took size-seen=$size"
	}
	touch "$work/go-$name"
	wait_state "$id" RELEASED >/dev/null
done

# 3. Gluster's RAM per job: a job over 2 RSA hosts on both compute hosts,
# held while its processes are measured.
[[ $parts == *memory* ]] || exit 0
cat >"$work/mem.sh" <<SH
#!/bin/bash
#SBATCH -N 2
#SBATCH -o $work/mem.out
#RSA_DATA_IN=$work/small/d000
#RSA_DELAY=600
srun -N2 bash -c 'cat $work/small/d000/* > /dev/null; while [ ! -e $work/go ]; do sleep 0.2; done'
SH
chown "$user:" "$work/mem.sh"
id=$(as_user sbatch --parsable "$work/mem.sh")
for _ in $(seq 3000); do
	rsa status --all | awk -v s="$id" '$2 == s' | grep -q INUSE_IN && break
	sleep 0.2
done
sleep 3
rid=$(rsa status --all | awk -v s="$id" '$2 == s { print $1 }' | tail -1)
# One process table: the hosts are namespaces of one kernel. Brick
# processes are glusterfsd, clients (FUSE mounts on ctl, c1, c2) glusterfs.
ps -o rss=,comm=,args= -p "$(pgrep -d, -f -- "rsa-job-$rid")" |
	awk -v j="$rid" '{ n[$2]++; kb[$2] += $1; t += $1 }
		END { for (c in n) printf "bench-cluster: gluster-rss job=%s process=%s count=%d kib=%d\n", j, c, n[c], kb[c]
		      printf "bench-cluster: gluster-rss job=%s total kib=%d\n", j, t }'
touch "$work/go"
