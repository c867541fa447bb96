#!/usr/bin/env bash
# What Gluster's TLS costs RSA's data path (a benchmark, not a test): on the
# emulated cluster, one volume over bricks on rsa1 and rsa2 with RSA's
# options, mounted on c1 as a compute host mounts it, once with the I/O
# path in TLS (client.ssl, server.ssl: what RSA makes) and once without,
# alternating, BENCH_REPEAT (3) times each:
#   stage-in  rsa copy of BENCH_FILES (1024) files of 1 MiB, page-cached,
#             into the volume (the built-in mover, as root here)
#   small     rsa copy of BENCH_SMALL (4000) files of 4 KiB
#   read      dd of a 1 GiB file from the volume, the client remounted first
# Management TLS (glusterd, volume layouts) stays on throughout: it carries
# no data. Prints one "bench-tls: ..." line per run and the medians. Run it
# alone on a quiet machine: every emulated host shares its cores.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
repeat=${BENCH_REPEAT:-3}
files=${BENCH_FILES:-1024}
small=${BENCH_SMALL:-4000}
export RSA_CLUSTER_DIR=/var/tmp/rsa-cluster-tls RSA_CLUSTER_ID=7 RSA_CLUSTER_NO_RSA=1 RSA_BIN=${RSA_BIN:-$top/bin/rsa}
up="$top/scripts/cluster-up"
work=/var/tmp/rsa-bench-tls
vol=rsa-job-1

[ "$(id -u)" = 0 ] || { echo "bench-tls needs root" >&2; exit 1; }
[ -x "$RSA_BIN" ] || { echo "build first: make build" >&2; exit 1; }
cleanup() {
	set +e
	"$top/scripts/cluster-down" >/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
"$up" >/dev/null

mkdir -p "$work/big" "$work/small"
for i in $(seq "$files"); do head -c 1048576 /dev/urandom >"$work/big/f$i"; done
for i in $(seq "$small"); do head -c 4096 /dev/urandom >"$work/small/f$i"; done
head -c 1073741824 /dev/zero >"$work/one"
cat "$work"/big/* "$work"/small/* "$work/one" >/dev/null

net=$(awk '$2 == "rsa1" {print $1}' "$RSA_CLUSTER_DIR/etc/hosts")
for h in rsa1 rsa2; do
	"$up" exec "$h" sh -c "mkdir -p /run/tlsbrick && mount -t tmpfs -o size=3G,nosuid,nodev tlsbrick /run/tlsbrick && mkdir /run/tlsbrick/b"
done
rsa2=$(awk '$2 == "rsa2" {print $1}' "$RSA_CLUSTER_DIR/etc/hosts")
g() { "$up" exec rsa1 gluster --mode=script "$@" >/dev/null; }
g volume create "$vol" "$net:/run/tlsbrick/b" "$rsa2:/run/tlsbrick/b" force
g volume set "$vol" performance.write-behind off performance.nl-cache off storage.health-check-interval 0 \
	auth.ssl-allow 'ctl,rsa1,rsa2,rsa3,c1,c2'

# round SSL: one measurement of each kind, with client.ssl and server.ssl SSL.
round() {
	local ssl=$1 mnt=/run/tlsmnt t0 t1 t2 t3
	g volume stop "$vol" force || true
	g volume set "$vol" client.ssl "$ssl" server.ssl "$ssl"
	g volume start "$vol"
	"$up" exec c1 sh -c "mkdir -p $mnt && mount -t glusterfs -o nosuid,nodev $net:/$vol $mnt && rm -rf $mnt/big $mnt/small $mnt/one"
	t0=$EPOCHREALTIME
	"$up" exec c1 "$RSA_BIN" copy -- "$work/big" "$mnt/big" >/dev/null
	t1=$EPOCHREALTIME
	"$up" exec c1 "$RSA_BIN" copy -- "$work/small" "$mnt/small" >/dev/null
	t2=$EPOCHREALTIME
	"$up" exec c1 cp "$work/one" "$mnt/one"
	"$up" exec c1 sh -c "umount $mnt && mount -t glusterfs -o nosuid,nodev $net:/$vol $mnt"
	t3=$EPOCHREALTIME
	"$up" exec c1 dd if="$mnt/one" of=/dev/null bs=1M status=none
	local t4=$EPOCHREALTIME
	"$up" exec c1 umount "$mnt"
	printf 'bench-tls: ssl=%-3s stage-in %6.1f MB/s  small %6.0f files/s  read %6.1f MB/s\n' "$ssl" \
		"$(bc -l <<<"$files * 1.048576 / (${t1/,/.} - ${t0/,/.})")" \
		"$(bc -l <<<"$small / (${t2/,/.} - ${t1/,/.})")" \
		"$(bc -l <<<"1073.741824 / (${t4/,/.} - ${t3/,/.})")"
}
for _ in $(seq "$repeat"); do
	round on
	round off
done | tee "$work/runs"
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for ssl in on off; do
	line=$(grep "ssl=$ssl " "$work/runs")
	printf 'bench-tls: median ssl=%s: stage-in %s MB/s, small %s files/s, read %s MB/s\n' "$ssl" \
		"$(awk '{print $4}' <<<"$line" | median)" "$(awk '{print $7}' <<<"$line" | median)" "$(awk '{print $10}' <<<"$line" | median)"
done
