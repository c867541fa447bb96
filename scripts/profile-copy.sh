#!/usr/bin/env bash
# make profile-copy: where the time of a copy goes, per syscall. Issue 12
# asks that a speed target still missed be shown by a profile, not argued.
# For a dataset of make bench-copy, disk -> tmpfs, warm and cold, each tool
# runs three times:
#   1. under perf stat -e task-clock: wall time, CPU time, and the disk's
#      busy time, reads and their mean size from /sys/block/DEV/stat
#      around the run;
#   2. under perf stat counting every syscalls:sys_enter_* tracepoint: each
#      syscall's calls (the tracepoints slow the run, so no time is taken);
#   3. under perf record (cpu-clock, one sample every 100 us of CPU, call
#      chains): a sample in a syscall counts for the kernel function
#      do_syscall_64 called, the syscall's own code with all it calls.
#      Since Linux 6.9 the dispatch (x64_sys_call) is a switch into which
#      the compiler inlines many __x64_sys_NAME wrappers, so that function
#      is often ksys_read, do_sys_openat2 or the like; the table names the
#      syscall it serves. The rest is the kernel outside syscalls (page
#      faults, interrupts), the program's own code and, for rsa, the Go
#      runtime.
# Datasets (DATASET): b, 100,000 x 4 KiB in 100 directories, each cell per
# file in microseconds; c, 4 x 1 GiB, each cell per GiB in milliseconds.
# Tools: rsa copy (as bench-copy runs it), the floor
# (bench/floor.c, FLOOR_THREADS threads), and the best peers: for (b)
# tar|tar and the parallel cp, for (c) cp -a and dd bs=4M; "pack rsa" and
# "pack tar" (rsa copy --pack, tar -cf: the dataset into one tar on tmpfs)
# profile pack; "unpack rsa" and "unpack tar" (rsa copy --unpack
# as the stage-in into a local RAMDISK and bench-copy run it, tar -xf:
# a tar of the dataset, on the dataset's disk, into tmpfs) unpack.
#
# Knobs: DATASET (b), BENCH_DIR (/var/tmp/rsa-bench, where bench-copy keeps
# its datasets), FLOOR_THREADS (4), CACHES ("warm cold"), TOOLS
# (comma-separated, default by dataset as above).
set -euo pipefail

# The script runs itself under perf as `profile-copy.sh __run TOOL SRC DST
# FLOOR THREADS`: the one copy that is measured, nothing around it.
if [ "${1:-}" = __run ]; then
	tool=$2 src=$3 dst=$4 floor=$5 threads=$6
	case $tool in
	rsa) exec "$(dirname "$0")/../bin/rsa" copy --progress=none "$src" "$dst" > /dev/null ;;
	limit) exec "$floor" "$threads" "$src" "$dst" ;;
	"pack rsa") exec "$(dirname "$0")/../bin/rsa" copy --progress=none --pack "$src" "$dst/all.tar" > /dev/null ;;
	"unpack rsa") exec "$(dirname "$0")/../bin/rsa" copy --progress=none --unpack "$src" "$dst" > /dev/null ;;
	*)
		# shellcheck source=scripts/copy-peers.sh
		. "$(dirname "$0")/copy-peers.sh"
		peer "$tool" "$src" "$dst"
		;;
	esac
	exit
fi

base=${BENCH_DIR:-/var/tmp/rsa-bench}
floor_threads=${FLOOR_THREADS:-4}
caches=${CACHES:-warm cold}
top=$(cd "$(dirname "$0")/.." && pwd)
self=$top/scripts/profile-copy.sh
rsa="$top/bin/rsa"
dataset=${DATASET:-b}
case $dataset in
b) default_tools="rsa,limit,tar|tar,xargs -P cp" ;;
c) default_tools="rsa,limit,cp -a,dd bs=4M" ;;
*) echo "DATASET=$dataset: profile-copy knows b (100,000 x 4 KiB) and c (4 x 1 GiB)" >&2; exit 2 ;;
esac
src=$base/src-$dataset
ram="$base-profile-ram"
work=$(mktemp -d "${TMPDIR:-/tmp}/rsa-profile.XXXXXX")

[ "$(id -u)" = 0 ] || { echo "profile-copy needs root (tmpfs, dropping caches, perf)" >&2; exit 1; }
[ -x "$rsa" ] || { echo "build first: make build" >&2; exit 1; }
[ -e "$src/.complete" ] || { echo "no dataset ($dataset) in $src: make it with: DATASETS=$dataset DIRECTIONS='disk->tmpfs' PACK=0 RUNS=1 OUT=/tmp/bench-copy.md make bench-copy" >&2; exit 1; }
for t in perf cc tar xargs python3; do
	command -v "$t" >/dev/null || { echo "missing $t (apt-get install linux-perf gcc)" >&2; exit 1; }
done

# shellcheck source=scripts/guest-memory.sh
. "$top/scripts/guest-memory.sh"
cleanup() {
	set +e
	release_guest_memory "$ram-fill"
	mountpoint -q "$ram" && umount -l "$ram"
	rmdir "$ram" 2>/dev/null
	rm -rf "$work"
	return 0
}
trap cleanup EXIT

mkdir -p "$ram"
mountpoint -q "$ram" || mount -t tmpfs -o size=6g,mode=0755 rsa-profile "$ram"
hold_guest_memory "$ram-fill"
cc -O2 -Wall -pthread -o "$work/floor" "$top/bench/floor.c"

# The block device under the dataset, for its busy time (field 10 of its
# stat file, in ms), completed reads (field 1) and sectors read (field 3).
dev=$(findmnt -n -o SOURCE --target "$src")
devstat=/sys/class/block/$(basename "$(realpath "$dev")")/stat
[ -r "$devstat" ] || { echo "cannot read $devstat, the statistics of $dev under $src" >&2; exit 1; }


# The unpack tools read a tar of the dataset, made once beside it (on the
# same disk, as bench-copy keeps its own).
archive=$base/work/profile-$dataset.tar
input() { # what TOOL reads: the dataset, or its archive
	case $1 in "unpack "*) echo "$archive" ;; *) echo "$src" ;; esac
}

prepare() { # an empty destination, and the page cache as $cache wants it
	rm -rf "$ram/x"
	mkdir "$ram/x"
	sync
	if [ "$cache" = cold ]; then
		echo 3 > /proc/sys/vm/drop_caches
	elif [ "$1" = "$archive" ]; then
		cat "$archive" > /dev/null
	else
		tar -C "$src" -cf - . | cat > /dev/null
	fi
}

files=$(find "$src" -type f | wc -l) # .complete, bench-copy's mark, is copied too
bytes=$(du -sb "$src" | cut -f1)
IFS=',' read -r -a toollist <<< "${TOOLS:-$default_tools}"
for tool in "${toollist[@]}"; do
	if [ "$(input "$tool")" = "$archive" ] && [ ! -e "$archive" ]; then
		mkdir -p "${archive%/*}"
		tar -C "$src" -cf "$archive.tmp" . && mv "$archive.tmp" "$archive"
	fi
done

for cache in $caches; do
	for tool in "${toollist[@]}"; do
		tag=${cache}_$(tr -c 'a-z0-9\n' '_' <<< "$tool")
		in=$(input "$tool")
		prepare "$in"
		read -r -a before < "$devstat"
		s=$(date +%s.%N)
		perf stat -x, -e task-clock -o "$work/$tag.clock" -- "$self" __run "$tool" "$in" "$ram/x" "$work/floor" "$floor_threads"
		sync -f "$ram/x"
		e=$(date +%s.%N)
		read -r -a after < "$devstat"
		echo "$e $s ${before[0]} ${after[0]} ${before[9]} ${after[9]} ${before[2]} ${after[2]}" > "$work/$tag.wall"
		prepare "$in"
		perf stat -x, -e 'syscalls:sys_enter_*' -o "$work/$tag.calls" -- "$self" __run "$tool" "$in" "$ram/x" "$work/floor" "$floor_threads"
		prepare "$in"
		perf record -q -e cpu-clock -c 100000 -g -o "$work/$tag.data" -- "$self" __run "$tool" "$in" "$ram/x" "$work/floor" "$floor_threads" 2> /dev/null
		perf script -i "$work/$tag.data" -F ip,sym 2> /dev/null > "$work/$tag.stacks"
		echo "profiled $cache $tool" >&2
	done
done

python3 - "$work" "$dataset" "$files" "$bytes" "$caches" "${toollist[@]}" <<'EOF'
import collections, re, sys
work, dataset, files, nbytes, caches, tools = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(), sys.argv[6:]
SAMPLE_US = 100  # perf record -c 100000 on cpu-clock (ns)
# A cell is per file (small files) or per GiB (large ones): what a copy of
# that dataset pays for.
# A syscall gets a row if it is called MIN_CALLS times a unit or takes
# MIN_CPU of it: per GiB, the calls of starting a process would fill rows.
if dataset == "c":
    TITLE, PER, UNIT, SCALE = "(c) 4 x 1 GiB", nbytes / (1 << 30), "ms a GiB", SAMPLE_US / 1000
    MIN_CALLS, MIN_CPU = 100, 1.0
else:
    TITLE, PER, UNIT, SCALE = "(b) 100,000 x 4 KiB", files, "us a file", SAMPLE_US
    MIN_CALLS, MIN_CPU = 0.01, 0.1

# The kernel function do_syscall_64 calls, when it is not __x64_sys_NAME
# itself (inlined into the dispatch): the syscall it serves.
SERVES = {
    "do_sys_openat2": "openat", "vm_mmap_pgoff": "mmap", "__vm_munmap": "munmap",
    "vfs_fstatat": "newfstatat", "vfs_fstat": "newfstat", "do_utimes": "utimensat",
    "file_close_fd": "close", "close_fd": "close", "do_vfs_ioctl": "ioctl",
    "hrtimer_nanosleep": "nanosleep", "do_futex": "futex", "do_renameat2": "renameat",
    "do_mkdirat": "mkdirat", "do_unlinkat": "unlinkat", "do_sys_ftruncate": "ftruncate",
    "chown_common": "fchown", "chmod_common": "fchmod", "vfs_fchown": "fchown", "vfs_fchmod": "fchmod",
    "generic_fadvise": "fadvise64", "vfs_fadvise": "fadvise64", "vfs_copy_file_range": "copy_file_range",
    "filename_listxattr": "listxattr", "file_listxattr": "flistxattr",
    # Linux 6.18: rsa copy calls flistxattr alone of the *listxattr
    # calls (counted by the tracepoints), and its samples are here.
    "path_listxattrat": "flistxattr",
    "file_getxattr": "fgetxattr", "file_setxattr": "fsetxattr",
}

def serves(fn):
    for prefix in ("__x64_sys_", "__do_sys_", "__se_sys_", "ksys_"):
        if fn.startswith(prefix):
            return fn[len(prefix):]
    return SERVES.get(fn, "kernel " + fn)

GO_RUNTIME = ("runtime.", "runtime/", "internal/runtime", "syscall.", "golang.org/x/sys/unix.")

def tag(cache, tool):
    return cache + "_" + re.sub(r"[^a-z0-9\n]", "_", tool)

def profile(path):
    """CPU samples by where they fell: a syscall, or outside one."""
    where = collections.Counter()
    def sample(frames):
        if not frames:
            return
        for i, (addr, sym) in enumerate(frames):
            if sym.startswith("do_syscall_64"):
                where["syscall entry and exit" if i == 0 else serves(frames[i - 1][1])] += 1
                return
        addr, sym = frames[0]
        if addr.startswith("ffffffff"):
            where["outside: kernel (page faults, interrupts)"] += 1
        elif sym.startswith(GO_RUNTIME):
            where["outside: Go runtime and syscall wrappers"] += 1
        else:
            where["outside: the program"] += 1
    frames = []
    for line in open(path):
        f = line.split(None, 1)
        if not f:
            sample(frames)
            frames = []
        else:
            frames.append((f[0], f[1].strip() if len(f) > 1 else "?"))
    sample(frames)
    return where

def load(cache, tool):
    t = tag(cache, tool)
    r = {}
    e, s, rd0, rd1, busy0, busy1, sec0, sec1 = open(f"{work}/{t}.wall").read().split()
    r["wall"] = float(e) - float(s)
    r["reads"] = int(rd1) - int(rd0)
    r["read_kib"] = (int(sec1) - int(sec0)) / 2 / max(r["reads"], 1)  # 512-byte sectors
    r["busy"] = (int(busy1) - int(busy0)) / 1000
    for line in open(f"{work}/{t}.clock"):
        f = line.split(",")
        if len(f) > 2 and f[2] == "task-clock":
            r["cpu"] = float(f[0]) / 1000  # msec -> s
    r["calls"] = {}
    for line in open(f"{work}/{t}.calls"):
        f = line.split(",")
        if len(f) > 2 and f[2].startswith("syscalls:sys_enter_") and f[0].isdigit() and int(f[0]) > 0:
            r["calls"][f[2][len("syscalls:sys_enter_"):]] = int(f[0])
    r["where"] = profile(f"{work}/{t}.stacks")
    return r

def us(n):
    return n * SCALE / PER

for cache in caches:
    res = {tool: load(cache, tool) for tool in tools}
    print(f"\n### {TITLE}, disk -> tmpfs, {cache}\n")
    print(f"A syscall's cell: its calls and the CPU it took, {UNIT} (what it called included).\n")
    print("| | " + " | ".join(tools) + " |")
    print("|---|" + "---|" * len(tools))
    print("| wall s | " + " | ".join(f"{res[t]['wall']:.2f}" for t in tools) + " |")
    print("| CPU s | " + " | ".join(f"{res[t]['cpu']:.2f}" for t in tools) + " |")
    print("| cores busy (CPU / wall) | " + " | ".join(f"{res[t]['cpu'] / res[t]['wall']:.2f}" for t in tools) + " |")
    print("| disk busy s / reads / KiB a read | " + " | ".join(f"{res[t]['busy']:.2f} / {res[t]['reads']} / {res[t]['read_kib']:.0f}" for t in tools) + " |")
    print(f"| CPU {UNIT}, profiled | " + " | ".join(f"{us(sum(res[t]['where'].values())):.1f}" for t in tools) + " |")
    syscalls = set()
    for t in tools:
        syscalls |= {n for n, c in res[t]["calls"].items() if c / PER >= MIN_CALLS}
        syscalls |= {n for n, c in res[t]["where"].items() if not n.startswith("outside") and us(c) >= MIN_CPU}
    def cost(n):
        return max(res[t]["where"].get(n, 0) for t in tools)
    for n in sorted(syscalls, key=lambda n: (-cost(n), n)):
        cells = []
        for t in tools:
            c, w = res[t]["calls"].get(n, 0) / PER, res[t]["where"].get(n, 0)
            cells.append(f"{c:.2f} x, {us(w):.1f}" if c else (f"{us(w):.1f}" if w else "-"))
        print(f"| {n} | " + " | ".join(cells) + " |")
    for n in ("outside: kernel (page faults, interrupts)", "outside: the program", "outside: Go runtime and syscall wrappers"):
        print(f"| {n} | " + " | ".join(f"{us(res[t]['where'].get(n, 0)):.1f}" for t in tools) + " |")
EOF
