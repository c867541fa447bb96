#!/usr/bin/env bash
# make bench-copy: times rsa copy beside cp -a, a parallel cp (xargs -P 8),
# rsync -a, tar|tar and fpsync (and dd bs=4M for large files), from disk to a
# tmpfs and back, with warm and cold page cache, RUNS times each, the tools in
# a new random order each round; prints medians with their spread and the
# ratio best-peer-median / rsa-median (above 1: rsa copy is faster). Every
# timed command ends with `sync -f DST`, so data written to disk is counted
# once it is durable, for every tool alike. After each run, outside the
# timed part, the copy's file count and content hash are checked against the
# source's: a tool that copied less fails the benchmark instead of looking
# fast.
#
# The "limit" column is bench/floor.c, a minimal copier built here as a
# measuring instrument (not a product): the least kernel work per file a
# copy needs. rsa copy's share of it says how close to the machine it is.
# Pack/unpack are timed against GNU tar, warm and cold.
#
# Knobs: RUNS (5), DATASETS ("a b c d"), DIRECTIONS ("disk->tmpfs tmpfs->disk"),
# PACK (1: time pack and unpack), BENCH_DIR (/var/tmp/rsa-bench),
# FLOOR_THREADS (4), OUT (markdown table, default docs/performance.md when run
# from the repo).
# In a virtual machine, free page reporting is off while it runs (see
# scripts/guest-memory.sh). Builds its datasets once and removes its tmpfs
# on exit; the datasets stay for the next run (rm -rf "$BENCH_DIR" to drop
# them).
set -euo pipefail

runs=${RUNS:-5}
directions=${DIRECTIONS:-disk->tmpfs tmpfs->disk}
floor_threads=${FLOOR_THREADS:-4}
datasets=${DATASETS:-a b c d}
base=${BENCH_DIR:-/var/tmp/rsa-bench}
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/copy-peers.sh
. "$top/scripts/copy-peers.sh"
# shellcheck source=scripts/guest-memory.sh
. "$top/scripts/guest-memory.sh"
rsa="$top/bin/rsa"
out=${OUT:-$top/docs/performance.md}
ram="$base-ram"

[ "$(id -u)" = 0 ] || { echo "bench-copy needs root (tmpfs, dropping caches)" >&2; exit 1; }
[ -x "$rsa" ] || { echo "build first: make build" >&2; exit 1; }
for t in rsync fpsync tar cp dd bc python3 cc shuf md5sum; do
	command -v "$t" >/dev/null || { echo "missing $t (make bench-copy installs rsync and fpart)" >&2; exit 1; }
done

cleanup() {
	set +e
	release_guest_memory "$base-fill"
	mountpoint -q "$ram" && umount -l "$ram"
	rmdir "$ram" 2>/dev/null
	rm -rf "$base/work"
	return 0
}
trap cleanup EXIT

mkdir -p "$base" "$ram" "$base/work"
mountpoint -q "$ram" || mount -t tmpfs -o size=12g,mode=0755 rsa-bench "$ram"
hold_guest_memory "$base-fill"
floor=$base/work/floor
cc -O2 -Wall -pthread -o "$floor" "$top/bench/floor.c"

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
spread() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'; }

# digest DIR: the file count and a hash of every file's path and content.
digest() {
	(cd "$1" && find . -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 -r md5sum | md5sum | cut -d' ' -f1) &&
		find "$1" -type f | wc -l
}
declare -A want_digest
# checked TOOL SRC DST: DST holds what SRC does, or the benchmark stops.
checked() {
	local got
	[ -n "${want_digest[$2]:-}" ] || want_digest[$2]=$(digest "$2")
	got=$(digest "$3")
	if [ "$got" != "${want_digest[$2]}" ]; then
		echo "$1 copied $2 wrongly: $(tr '\n' ' ' <<< "$got") != $(tr '\n' ' ' <<< "${want_digest[$2]}") (hash, files)" >&2
		exit 1
	fi
}
# warm SRC: every byte of SRC in the page cache (tar writing to /dev/null
# reads no file data, GNU tar's shortcut, so its output goes through cat).
warm_up() { tar -C "$1" -cf - . | cat > /dev/null; }

# fpsync with real parallelism: 8 rsync jobs at a time, each of at most
# 64 entries or a 32nd of the tree, whichever is more (64 alone makes 1,600
# rsync runs of (b), each costing more than its files).
fpsync_run() {
	local n
	n=$(find "$1" -mindepth 1 | wc -l)
	fpsync -n 8 -f $((n / 32 > 64 ? n / 32 : 64)) -t "$base/work/fpsync" "$1/" "$2/"
}

declare -A result=() range=()
rows=()

bench() { # bench DATASET DIRECTION CACHE SRC DSTROOT
	local ds=$1 dirn=$2 src=$4 dstroot=$5 tool t
	cache=$3
	local tools=(rsa limit "cp -a" "xargs -P cp" "rsync -a" "tar|tar" fpsync)
	[ "$ds" = c ] && tools+=("dd bs=4M")
	declare -A times=()
	# Settle: nothing dirty from before, and for warm runs the source in
	# the page cache. Tools take turns in a new random order each round,
	# so neither drift nor going first favours one.
	sync
	[ "$cache" = warm ] && warm_up "$src"
	for _ in $(seq "$runs"); do
		while IFS= read -r tool; do
			case $tool in
			rsa) t=$(timed "$dstroot/x" "$rsa" copy --progress=none "$src" "$dstroot/x") ;;
			limit) t=$(timed "$dstroot/x" "$floor" "$floor_threads" "$src" "$dstroot/x") ;;
			fpsync) t=$(timed "$dstroot/x" fpsync_run "$src" "$dstroot/x") ;;
			*) t=$(timed "$dstroot/x" peer "$tool" "$src" "$dstroot/x") ;;
			esac
			checked "$tool" "$src" "$dstroot/x"
			times[$tool]+="$t "
			# The check read the copy and, cold, the source: settle again.
			[ "$cache" = warm ] || sync
		done < <(printf '%s\n' "${tools[@]}" | shuf)
	done
	for tool in "${tools[@]}"; do
		result["$ds|$dirn|$cache|$tool"]=$(tr ' ' '\n' <<< "${times[$tool]}" | grep . | median)
		range["$ds|$dirn|$cache|$tool"]=$(tr ' ' '\n' <<< "${times[$tool]}" | grep . | spread)
	done
	rows+=("$ds|$dirn|$cache|${tools[*]}")
}

for ds in $datasets; do
	make_dataset "$ds"
	src=$base/src-$ds
	# disk -> tmpfs, warm and cold
	if [[ " $directions " == *" disk->tmpfs "* ]]; then
		bench "$ds" "disk->tmpfs" warm "$src" "$ram"
		bench "$ds" "disk->tmpfs" cold "$src" "$ram"
	fi
	# tmpfs -> disk (the source is RAM, so only warm exists)
	if [[ " $directions " == *" tmpfs->disk "* ]]; then
		rm -rf "$ram/src"
		unset 'want_digest[$ram/src]'
		"$rsa" copy --progress=none "$src" "$ram/src" > /dev/null
		bench "$ds" "tmpfs->disk" warm "$ram/src" "$base/work"
		rm -rf "$ram/src"
	fi
done

# --- pack / unpack against GNU tar -----------------------------------------
# pack: the disk dataset into one tar on tmpfs; unpack: that tar from disk
# into tmpfs, as the daemon's unpack stage-in into a local RAMDISK runs it
# (final names at once in the empty target, as tar writes them). Each checked
# like the copies (the archive by unpacking it).
declare -A pack=() packrange=()
packed=$base/work/all.tar
for ds in $datasets; do
	case $ds in a | b) [ "${PACK:-1}" = 1 ] || continue ;; *) continue ;; esac
	src=$base/src-$ds
	tar -C "$src" -cf "$packed" .
	for cache in warm cold; do
		declare -A ptimes=()
		sync
		[ "$cache" = warm ] && warm_up "$src" && cat "$packed" > /dev/null
		for _ in $(seq "$runs"); do
			while IFS= read -r job; do
				case $job in
				"pack rsa") t=$(timed "$ram/p" "$rsa" copy --progress=none --pack "$src" "$ram/p/all.tar") ;;
				"pack tar") t=$(timed "$ram/p" peer "pack tar" "$src" "$ram/p") ;;
				"unpack rsa") t=$(timed "$ram/u" "$rsa" copy --progress=none --unpack "$packed" "$ram/u") ;;
				"unpack tar") t=$(timed "$ram/u" peer "unpack tar" "$packed" "$ram/u") ;;
				esac
				if [ "${job%% *}" = pack ]; then
					rm -rf "$ram/u" && mkdir -p "$ram/u" && tar -C "$ram/u" -xf "$ram/p/all.tar"
					rm -rf "$ram/p"
				fi
				checked "$job" "$src" "$ram/u"
				ptimes[$job]+="$t "
			done < <(printf '%s\n' "pack rsa" "pack tar" "unpack rsa" "unpack tar" | shuf)
		done
		for job in "pack rsa" "pack tar" "unpack rsa" "unpack tar"; do
			pack["$ds|${job% *}|$cache|${job#* }"]=$(tr ' ' '\n' <<< "${ptimes[$job]}" | grep . | median)
			packrange["$ds|${job% *}|$cache|${job#* }"]=$(tr ' ' '\n' <<< "${ptimes[$job]}" | grep . | spread)
		done
		unset ptimes
	done
	rm -rf "$packed" "$ram/u" "$ram/p"
done

# --- report ------------------------------------------------------------------
cell() { printf '%.2f <sub>%s</sub>' "$1" "$2"; }
{
	echo "Made by \`make bench-copy\` (scripts/bench-copy.sh, RUNS=$runs) on $(date -u +%Y-%m-%d):"
	echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/ { print $2 }') GiB RAM,"
	echo "kernel $(uname -r), disk: $(df -T "$base" | awk 'NR == 2 { print $2 }') on $(df "$base" | awk 'NR == 2 { print $1 }'), RAM side: tmpfs."
	echo "Datasets: (a) 2,048 x 1 MiB; (b) 100,000 x 4 KiB in 100 directories; (c) 4 x 1 GiB;"
	echo "(d) a 10-deep tree of mixed sizes. Times are medians of $runs runs in seconds (min-max below),"
	echo "each ending with \`sync -f DST\`, the tools in a random order each round; cold = page cache"
	echo "dropped before the run. Every run's copy was checked (file count, content hash)."
	echo "Ratio = the best peer's median / rsa copy's median (above 1: rsa copy is faster); for (c)"
	echo "dd bs=4M counts as a peer. Limit = bench/floor.c with $floor_threads threads, the least work a"
	echo "copy needs per file; share = limit / rsa copy (1.00: at the machine's limit). Into tmpfs,"
	echo "rsa copy runs its default: final names at once in the empty DST it is given, as tar and cp."
	echo
	echo "| data | direction | cache | rsa copy | limit | cp -a | xargs -P cp | rsync -a | tar\\|tar | fpsync | dd bs=4M | ratio | share |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for row in "${rows[@]}"; do
		IFS='|' read -r ds dirn cache _ <<< "$row"
		k="$ds|$dirn|$cache"
		r=${result["$k|rsa"]}
		best=""
		for tool in "cp -a" "xargs -P cp" "rsync -a" "tar|tar" fpsync "dd bs=4M"; do
			v=${result["$k|$tool"]:-}
			[ -z "$v" ] && continue
			if [ -z "$best" ] || [ "$(echo "$v < $best" | bc)" = 1 ]; then best=$v; fi
		done
		line="| ($ds) | $dirn | $cache"
		for tool in rsa limit "cp -a" "xargs -P cp" "rsync -a" "tar|tar" fpsync "dd bs=4M"; do
			if [ -n "${result["$k|$tool"]:-}" ]; then
				line+=" | $(cell "${result["$k|$tool"]}" "${range["$k|$tool"]}")"
			else
				line+=" | -"
			fi
		done
		printf '%s | **%.2fx** | %.2f |\n' "$line" "$(echo "$best / $r" | bc -l)" "$(echo "${result["$k|limit"]} / $r" | bc -l)"
	done
	if [ ${#pack[@]} -gt 0 ]; then
		echo
		echo "Pack (the disk dataset into one tar on tmpfs) and unpack (that tar, on disk, into tmpfs):"
		echo
		echo "| data | operation | cache | rsa copy | GNU tar | ratio |"
		echo "|---|---|---|---|---|---|"
		for ds in a b; do
			for op in pack unpack; do
				for cache in warm cold; do
					k="$ds|$op|$cache"
					r=${pack["$k|rsa"]:-}
					[ -z "$r" ] && continue
					t=${pack["$k|tar"]}
					printf '| (%s) | %s | %s | %s | %s | **%.2fx** |\n' "$ds" "$op" "$cache" \
						"$(cell "$r" "${packrange["$k|rsa"]}")" "$(cell "$t" "${packrange["$k|tar"]}")" "$(echo "$t / $r" | bc -l)"
				done
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
