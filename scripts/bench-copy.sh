#!/usr/bin/env bash
# make bench-copy: times rsa copy beside cp -a, rsync -a, tar|tar and fpsync
# (and dd bs=4M for large files), from disk to a tmpfs and back, with warm
# and cold page cache, RUNS times each; prints medians and the ratio
# best-peer-median / rsa-median (above 1: rsa copy is faster). Every timed
# command ends with `sync -f DST`, so data written to disk is counted once it
# is durable, for every tool alike. Pack/unpack are timed against GNU tar.
#
# Knobs: RUNS (3), DATASETS ("a b c d"), BENCH_DIR (/var/tmp/rsa-bench),
# OUT (markdown table, default docs/performance.md when run from the repo).
# Builds its datasets once and removes its tmpfs on exit; the datasets stay
# for the next run (rm -rf "$BENCH_DIR" to drop them).
set -euo pipefail

runs=${RUNS:-3}
datasets=${DATASETS:-a b c d}
base=${BENCH_DIR:-/var/tmp/rsa-bench}
top=$(cd "$(dirname "$0")/.." && pwd)
rsa="$top/bin/rsa"
out=${OUT:-$top/docs/performance.md}
ram="$base-ram"

[ "$(id -u)" = 0 ] || { echo "bench-copy needs root (tmpfs, dropping caches)" >&2; exit 1; }
[ -x "$rsa" ] || { echo "build first: make build" >&2; exit 1; }
for t in rsync fpsync tar cp dd bc python3; do
	command -v "$t" >/dev/null || { echo "missing $t (make bench-copy installs rsync and fpart)" >&2; exit 1; }
done

cleanup() {
	set +e
	mountpoint -q "$ram" && umount -l "$ram"
	rmdir "$ram" 2>/dev/null
	rm -rf "$base/work"
	return 0
}
trap cleanup EXIT

mkdir -p "$base" "$ram" "$base/work"
mountpoint -q "$ram" || mount -t tmpfs -o size=12g,mode=0755 rsa-bench "$ram"

# --- datasets, made once --------------------------------------------------
make_dataset() {
	local name=$1 dir=$base/src-$1
	[ -e "$dir/.complete" ] && return 0
	rm -rf "$dir"
	mkdir -p "$dir"
	echo "building dataset $name in $dir" >&2
	python3 - "$name" "$dir" <<'EOF'
import os, random, sys
name, root = sys.argv[1], sys.argv[2]
rnd = random.Random(42)
def write(path, size):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    block = os.urandom(min(size, 1 << 20)) if size else b""
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
if name == "a":      # the thesis' file-per-process output: 2,048 x 1 MiB
    for i in range(2048):
        write(f"{root}/rank-{i:04d}.out", 1 << 20)
elif name == "b":    # 100,000 x 4 KiB in 100 directories
    buf = os.urandom(4096)
    for d in range(100):
        os.makedirs(f"{root}/d{d:03d}")
        for i in range(1000):
            with open(f"{root}/d{d:03d}/f{i:04d}", "wb") as f:
                f.write(buf)
elif name == "c":    # 4 x 1 GiB
    for i in range(4):
        write(f"{root}/big-{i}.dat", 1 << 30)
elif name == "d":    # a 10-deep tree of mixed sizes (512 B .. 8 MiB, log-uniform)
    def tree(path, depth):
        for i in range(8):
            write(f"{path}/file-{i}", int(2 ** rnd.uniform(9, 23)))
        if depth < 10:
            for k in range(3 if depth < 4 else 1):
                tree(f"{path}/level{depth}-{k}", depth + 1)
    tree(root, 1)
EOF
	touch "$dir/.complete"
}

# --- timing ---------------------------------------------------------------
now() { date +%s.%N; }

# timed LABEL DST CMD...: one run into an empty DST, then sync -f DST.
timed() {
	local dst=$1; shift
	rm -rf "$dst"
	mkdir -p "$dst"
	sync
	[ "$cache" = cold ] && echo 3 > /proc/sys/vm/drop_caches
	local s e
	s=$(now)
	"$@" > /dev/null 2>&1 || { echo "FAILED: $*" >&2; return 1; }
	sync -f "$dst"
	e=$(now)
	echo "$e - $s" | bc
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

dd_all() { # dd bs=4M of every file of a flat directory: the copy limit for (c)
	local f
	for f in "$1"/*; do dd if="$f" of="$2/${f##*/}" bs=4M status=none; done
}
tar_pipe() { tar -C "$1" -cf - . | tar -C "$2" -xf -; }
fpsync_run() { fpsync -n 4 -t "$base/work/fpsync" "$1/" "$2/"; }

declare -A result
rows=()

bench() { # bench DATASET DIRECTION CACHE SRC DSTROOT
	local ds=$1 dirn=$2 src=$4 dstroot=$5 tool t
	cache=$3
	local tools=(rsa "cp -a" "rsync -a" "tar|tar" fpsync)
	[ "$ds" = c ] && tools+=("dd bs=4M")
	declare -A times=()
	# Settle: nothing dirty from before, and for warm runs the source in
	# the page cache. Tools take turns, run by run, so drift hits all alike.
	sync
	[ "$cache" = warm ] && tar -C "$src" -cf - . > /dev/null
	for _ in $(seq "$runs"); do
		for tool in "${tools[@]}"; do
			case $tool in
			rsa) t=$(timed "$dstroot/x" "$rsa" copy --progress=none "$src" "$dstroot/x") ;;
			"cp -a") t=$(timed "$dstroot/x" cp -a "$src/." "$dstroot/x/") ;;
			"rsync -a") t=$(timed "$dstroot/x" rsync -a "$src/" "$dstroot/x/") ;;
			"tar|tar") t=$(timed "$dstroot/x" tar_pipe "$src" "$dstroot/x") ;;
			fpsync) t=$(timed "$dstroot/x" fpsync_run "$src" "$dstroot/x") ;;
			"dd bs=4M") t=$(timed "$dstroot/x" dd_all "$src" "$dstroot/x") ;;
			esac
			times[$tool]+="$t "
		done
	done
	for tool in "${tools[@]}"; do
		result["$ds|$dirn|$cache|$tool"]=$(tr ' ' '\n' <<< "${times[$tool]}" | grep . | median)
	done
	rows+=("$ds|$dirn|$cache|${tools[*]}")
}

for ds in $datasets; do
	make_dataset "$ds"
	src=$base/src-$ds
	# disk -> tmpfs, warm and cold
	bench "$ds" "disk->tmpfs" warm "$src" "$ram"
	bench "$ds" "disk->tmpfs" cold "$src" "$ram"
	# tmpfs -> disk (the source is RAM, so only warm exists)
	rm -rf "$ram/src"
	"$rsa" copy --progress=none "$src" "$ram/src" > /dev/null
	bench "$ds" "tmpfs->disk" warm "$ram/src" "$base/work"
	rm -rf "$ram/src"
done

# --- pack / unpack against GNU tar -----------------------------------------
declare -A pack
for ds in $datasets; do
	case $ds in a | b) ;; *) continue ;; esac
	src=$base/src-$ds
	cache=warm
	for tool in rsa tar; do
		local_times=()
		for _ in $(seq "$runs"); do
			if [ "$tool" = rsa ]; then
				local_times+=("$(timed "$ram/p" "$rsa" copy --progress=none --pack "$src" "$ram/p/all.tar")")
			else
				local_times+=("$(timed "$ram/p" tar -C "$src" -cf "$ram/p/all.tar" .)")
			fi
		done
		pack["$ds|pack|$tool"]=$(printf '%s\n' "${local_times[@]}" | median)
	done
	tar -C "$src" -cf "$base/work/all.tar" .
	for tool in rsa tar; do
		local_times=()
		for _ in $(seq "$runs"); do
			if [ "$tool" = rsa ]; then
				local_times+=("$(timed "$ram/u" "$rsa" copy --progress=none --unpack "$base/work/all.tar" "$ram/u")")
			else
				local_times+=("$(timed "$ram/u" tar -C "$ram/u" -xf "$base/work/all.tar")")
			fi
		done
		pack["$ds|unpack|$tool"]=$(printf '%s\n' "${local_times[@]}" | median)
	done
	rm -f "$base/work/all.tar"
done

# --- report ------------------------------------------------------------------
{
	echo "Made by \`make bench-copy\` (scripts/bench-copy.sh, RUNS=$runs) on $(date -u +%Y-%m-%d):"
	echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/ { print $2 }') GiB RAM,"
	echo "kernel $(uname -r), disk: $(df -T "$base" | awk 'NR == 2 { print $2 }') on $(df "$base" | awk 'NR == 2 { print $1 }'), RAM side: tmpfs."
	echo "Datasets: (a) 2,048 x 1 MiB; (b) 100,000 x 4 KiB in 100 directories; (c) 4 x 1 GiB;"
	echo "(d) a 10-deep tree of mixed sizes. Times are medians of $runs runs in seconds, each ending"
	echo "with \`sync -f DST\`; cold = page cache dropped before the run. Ratio = the best peer's"
	echo "median / rsa copy's median (above 1: rsa copy is faster); for (c) dd bs=4M counts as a peer."
	echo
	echo "| data | direction | cache | rsa copy | cp -a | rsync -a | tar\\|tar | fpsync | dd bs=4M | ratio |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for row in "${rows[@]}"; do
		IFS='|' read -r ds dirn cache _ <<< "$row"
		k="$ds|$dirn|$cache"
		r=${result["$k|rsa"]}
		best=""
		for tool in "cp -a" "rsync -a" "tar|tar" fpsync "dd bs=4M"; do
			v=${result["$k|$tool"]:-}
			[ -z "$v" ] && continue
			if [ -z "$best" ] || [ "$(echo "$v < $best" | bc)" = 1 ]; then best=$v; fi
		done
		printf '| (%s) | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s | **%.2fx** |\n' "$ds" "$dirn" "$cache" "$r" \
			"${result["$k|cp -a"]}" "${result["$k|rsync -a"]}" "${result["$k|tar|tar"]}" "${result["$k|fpsync"]}" \
			"$( [ -n "${result["$k|dd bs=4M"]:-}" ] && printf '%.2f' "${result["$k|dd bs=4M"]}" || echo -)" \
			"$(echo "$best / $r" | bc -l)"
	done
	if [ ${#pack[@]} -gt 0 ]; then
		echo
		echo "Pack and unpack (disk dataset to a tar on tmpfs, and that tar's members into tmpfs), warm:"
		echo
		echo "| data | operation | rsa copy | GNU tar | ratio |"
		echo "|---|---|---|---|---|"
		for ds in a b; do
			for op in pack unpack; do
				r=${pack["$ds|$op|rsa"]:-}
				[ -z "$r" ] && continue
				t=${pack["$ds|$op|tar"]}
				printf '| (%s) | %s | %.2f | %.2f | **%.2fx** |\n' "$ds" "$op" "$r" "$t" "$(echo "$t / $r" | bc -l)"
			done
		done
	fi
} | tee "$base/work/table.md"
# The table replaces the marked block of $out; the text around it stays.
begin='<!-- bench-copy:begin -->' end='<!-- bench-copy:end -->'
[ -f "$out" ] && grep -q "$begin" "$out" || printf '%s\n%s\n' "$begin" "$end" >> "$out"
awk -v b="$begin" -v e="$end" -v tbl="$base/work/table.md" '
	$0 == b { print; while ((getline l < tbl) > 0) print l; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }' "$out" > "$out.new"
mv "$out.new" "$out"
echo "table written into $out" >&2
