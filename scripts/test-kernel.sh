#!/usr/bin/env bash
# make test-kernel: some of the mount tests on Debian 12's own kernel (6.1,
# which has no listmount/statmount and no file-backed erofs), not the
# host's. The kernel of bookworm's linux-image-amd64 boots under QEMU (TCG:
# no KVM needed) with an initramfs of busybox, the statically linked test
# binaries, the kernel modules they need (erofs, loop) and the test users;
# its /init runs each package's tests as root under CI=true and prints a
# marker with each one's exit status, which this script reads. It exits 0
# only if every package passed, none of their tests skipped, and the VM
# finished in time.
#
# The first run installs what it needs (qemu-system-x86, busybox-static,
# cpio, kmod, erofs-utils) and fetches the kernel package once into
# RSA_KERNEL_CACHE; later runs only build the tests and boot (the kernel
# reaches /init in 3 to 4 s, the whole run takes 15 to 25 s on 2 cores).
#
# Environment:
#   GO                       the go command (make passes its own)
#   RSA_KERNEL_CACHE=DIR     where the kernel package is kept, unpacked
#                            (default /var/cache/rsa-test-kernel)
#   RSA_KERNEL_TEST_ENV="K=V ..."
#                            more environment for the tests in the VM, as
#                            KEY=VALUE words (e.g. RSA_MOUNT_TABLE=mountinfo)
#   RSA_KERNEL_TEST_ARGS="..."
#                            more arguments for every test binary, after the
#                            script's own (a later -test.run replaces the
#                            package's, e.g. -test.run TestFSTypeIn)
#   RSA_KERNEL_TEST_TIMEOUT  each test binary's -test.timeout (default 240s)
#   RSA_KERNEL_TIMEOUT=SECS  how long the VM may run before qemu is killed
#                            (default 600)
#   RSA_KERNEL_TEST_LOG=FILE keep the VM's whole console log
set -euo pipefail
cd "$(dirname "$0")/.."

go=${GO:-go}
cache=${RSA_KERNEL_CACHE:-/var/cache/rsa-test-kernel}
vm_timeout=${RSA_KERNEL_TIMEOUT:-600}
test_timeout=${RSA_KERNEL_TEST_TIMEOUT:-240s}
extra_env=${RSA_KERNEL_TEST_ENV:-}
extra_args=${RSA_KERNEL_TEST_ARGS:-}

# The packages whose tests run in the VM, one after another, each with the
# tests it runs (-test.run; empty: all of them).
tests=(
	"internal/mount|"
	"internal/engine|Local"
)
# The kernel modules the tests need (fuse: the tests mount FUSE file
# systems of a user, with no server behind them), loaded with what they
# depend on.
modules=(erofs loop fuse)
# Host programs the tests run besides busybox's applets, copied with their
# shared libraries: coreutils' id, which TestBindIsUnprivileged copies and
# runs set-user-ID (a copy of busybox would not know it is id), and
# erofs-utils' tools, for tests that check images with them (none of the
# packages above does yet).
tools=(/usr/bin/id /usr/bin/mkfs.erofs /usr/bin/fsck.erofs /usr/bin/dump.erofs)
# The accounts each package's tests may ask for (testutil.TestUserName and
# its suffixes), made in advance: busybox has no useradd.
user_suffixes=("" -b -suite -1 -2 -3)

die() {
	echo "test-kernel: $*" >&2
	exit 1
}
log() { echo "test-kernel: $*"; }
now() { echo "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

[[ $(id -u) == 0 ]] || die "run as root (it installs packages, and the initramfs holds files of the test users)"
[[ $vm_timeout =~ ^[0-9]+$ ]] || die "RSA_KERNEL_TIMEOUT=$vm_timeout: a number of seconds"
command -v "$go" >/dev/null || die "no $go: run make test-kernel (make deps installs Go)"
t_start=$(now)

# What qemu, the kernel and initramfs need, from Debian. A busybox-static
# is wanted (the initramfs has no C library for busybox's applets), but it
# conflicts with Debian's busybox, which initramfs-tools may want: where
# that is installed, the static one is unpacked into the cache instead.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
command -v modprobe >/dev/null && command -v depmod >/dev/null || need+=(kmod)
command -v xz >/dev/null || need+=(xz-utils)
command -v mkfs.erofs >/dev/null || need+=(erofs-utils)
busybox_deb=
if ! dpkg -s busybox-static >/dev/null 2>&1; then
	if dpkg -s busybox >/dev/null 2>&1; then
		busybox_deb=1
	else
		need+=(busybox-static)
	fi
fi
apt_updated=
apt_update() {
	[[ -n $apt_updated ]] || apt-get update -qq
	apt_updated=1
}
if ((${#need[@]})); then
	log "installing: ${need[*]}"
	apt_update
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${need[@]}"
fi

work=$(mktemp -d /tmp/rsa-test-kernel.XXXXXX)
qemu_pid=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill -KILL "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# fetch PACKAGE prints the directory (in the cache) that holds PACKAGE's
# .deb, unpacked in root/: downloaded and unpacked the first time, under a
# lock, so that runs at once fetch it once. A package list too old for the
# mirror (which keeps only the current kernel) is updated and the download
# tried again.
fetch() {
	local pkg=$1 version dir tmp
	version=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
	[[ -n $version ]] || die "apt knows no package $pkg"
	dir=$cache/${pkg}_${version}
	if [[ ! -e $dir/.complete ]]; then
		mkdir -p "$cache"
		exec 9>"$cache/.lock"
		flock 9
		if [[ ! -e $dir/.complete ]]; then
			log "fetching $pkg $version into $cache (once)" >&2
			# What an interrupted fetch left.
			rm -rf "$dir" "$cache"/.fetch.*
			tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
			chmod 0755 "$tmp"
			if ! (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg=$version") >&2; then
				apt_update >&2
				(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg") >&2 || {
					rm -rf "$tmp"
					die "could not download $pkg"
				}
			fi
			dpkg-deb -x "$tmp"/*.deb "$tmp/root" || {
				rm -rf "$tmp"
				die "could not unpack $pkg"
			}
			touch "$tmp/.complete"
			mv "$tmp" "$dir"
		fi
		exec 9>&-
	fi
	echo "$dir"
}

# The kernel: the one bookworm's linux-image-amd64 depends on.
kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}
kpkg=$(kernel_pkg)
if [[ -z $kpkg ]]; then
	apt_update
	kpkg=$(kernel_pkg)
fi
[[ -n $kpkg ]] || die "apt-cache depends linux-image-amd64 names no kernel package: is bookworm in apt's sources?"
kdir=$(fetch "$kpkg")
kroot=$kdir/root
kver=$(basename "$(ls -d "$kroot"/lib/modules/*/)")
vmlinuz=$kroot/boot/vmlinuz-$kver
[[ -f $vmlinuz ]] || die "$kpkg has no boot/vmlinuz-$kver"
# Debian's package ships no modules.dep (its postinst runs depmod).
if [[ ! -e $kroot/lib/modules/$kver/modules.dep ]]; then
	depmod -b "$kroot" "$kver" || die "depmod of $kver failed"
fi
# The kernel uncompressed, once: QEMU boots its ELF straight through the
# PVH entry (CONFIG_PVH), where decompressing the bzImage under TCG, after
# the firmware, took 4 of the 6 s the boot took. Another compression than
# xz or gzip, or no PVH, boots the bzImage.
kconfig=$kroot/boot/config-$kver
vmlinux=$kdir/vmlinux
if [[ ! -e $vmlinux ]] && grep -qx 'CONFIG_PVH=y' "$kconfig"; then
	magic=''
	unpack=()
	if grep -qx 'CONFIG_KERNEL_XZ=y' "$kconfig"; then
		magic=$'\xfd7zXZ' unpack=(xz -dcq)
	elif grep -qx 'CONFIG_KERNEL_GZIP=y' "$kconfig"; then
		magic=$'\x1f\x8b\x08' unpack=(gzip -dcq)
	fi
	if [[ -n $magic ]]; then
		# The first payload that unpacks to an ELF file (a decompressor
		# reports the bzImage's bytes after the payload: no status).
		while IFS=: read -r off _; do
			tail -c +"$((off + 1))" "$vmlinuz" | "${unpack[@]}" >"$vmlinux.tmp.$$" 2>/dev/null || true
			if cmp -s -n 4 "$vmlinux.tmp.$$" <(printf '\177ELF'); then
				mv "$vmlinux.tmp.$$" "$vmlinux"
				break
			fi
		done < <(LC_ALL=C grep -abo "$magic" "$vmlinuz")
		rm -f "$vmlinux.tmp.$$"
	fi
fi
boot_image=$vmlinuz
[[ ! -e $vmlinux ]] || boot_image=$vmlinux
busybox=/bin/busybox
if [[ -n $busybox_deb ]]; then
	busybox=$(fetch busybox-static)/root/bin/busybox
fi
log "kernel $kver ($kpkg), ready in $(since "$t_start") s"

# The tests, linked statically (the initramfs has no C library for Go's
# cgo resolver), stripped: a panic's trace needs neither symbol table.
t_build=$(now)
root=$work/root
bindir=/opt/rsa-test
mkdir -p "$root$bindir"
pkgs=()
for t in "${tests[@]}"; do
	pkgs+=("./${t%%|*}")
done
CGO_ENABLED=0 "$go" test -c -ldflags='-s -w' -o "$root$bindir/" "${pkgs[@]}"
# A package whose tests run rsa (testutil.RunWithRSA) gets it built once,
# through RSA_TEST_BIN.
need_rsa=
for p in "${pkgs[@]}"; do
	if grep -qsE 'RunWithRSA|BuildRSA' "$p"/*_test.go; then
		need_rsa=1
	fi
done
if [[ -n $need_rsa ]]; then
	CGO_ENABLED=0 "$go" build -ldflags='-s -w' -o "$root$bindir/rsa" ./cmd/rsa
fi
log "tests built in $(since "$t_build") s"

# The initramfs.
t_initrd=$(now)
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc/rsa-test,proc,sys,dev,tmp,root,home,src}
chmod 0700 "$root/root"
chmod 1777 "$root/tmp"

# copy_elf FILE copies FILE and the shared libraries and loader it needs
# to the same paths in the initramfs.
copy_elf() {
	local f=$1 lib
	[[ -x $f ]] || die "$f is missing"
	mkdir -p "$root$(dirname "$f")"
	cp -L "$f" "$root$f"
	# ldd fails on a static program: it needs nothing.
	for lib in $(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
		if [[ ! -e $root$lib ]]; then
			mkdir -p "$root$(dirname "$lib")"
			cp -L "$lib" "$root$lib"
		fi
	done
}
for f in "${tools[@]}"; do
	copy_elf "$f"
done
cp "$busybox" "$root/bin/busybox"
applets=$("$root/bin/busybox" --list-full) || die "$busybox does not run"
while read -r applet; do
	[[ -e $root/$applet || -L $root/$applet ]] || ln -s /bin/busybox "$root/$applet"
done <<<"$applets"

# The modules, in the order modprobe would load them (dependencies and
# soft dependencies first), decompressed: the kernel then needs no
# decompressor for them. Some may fail to load (crc32c-intel without
# SSE4.2, a soft dependency with an alternative): /init checks that the
# modules asked for are live.
kmods=$kroot/lib/modules/$kver
: >"$root/etc/rsa-test/modules"
: >"$root/etc/rsa-test/required"
declare -A packed=()
for m in "${modules[@]}"; do
	deps=$(modprobe -d "$kroot" -S "$kver" --show-depends "$m") || die "kernel $kver has no module $m"
	last=
	while read -r kind path; do
		if [[ $kind == builtin ]]; then
			log "module $m: built into the kernel"
			continue
		fi
		[[ $kind == insmod ]] || die "modprobe --show-depends $m: unexpected line: $kind $path"
		rel=${path#"$kmods"/}
		out=/lib/modules/$kver/${rel%.ko*}.ko
		if [[ -z ${packed[$out]:-} ]]; then
			packed[$out]=1
			mkdir -p "$(dirname "$root$out")"
			case $path in
			*.ko.xz) xz -dc "$path" >"$root$out" ;;
			*.ko.zst) zstd -qdc "$path" >"$root$out" ;;
			*.ko.gz) gzip -dc "$path" >"$root$out" ;;
			*) cp "$path" "$root$out" ;;
			esac
			echo "$out" >>"$root/etc/rsa-test/modules"
		fi
		last=$out
	done <<<"$deps"
	if [[ -n $last ]]; then
		name=$(basename "$last" .ko)
		echo "${name//-/_}" >>"$root/etc/rsa-test/required"
	fi
done

# The accounts: root, nobody and each package's test users (uids from
# 2001, each with a group of its own and a home it owns), so that
# user.Lookup finds them and no test runs useradd.
{
	echo "root:x:0:0:root:/root:/bin/sh"
	echo "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"
} >"$root/etc/passwd"
{
	echo "root:x:0:"
	echo "nogroup:x:65534:"
} >"$root/etc/group"
uid=2001
for t in "${tests[@]}"; do
	pkg=${t%%|*}
	mkdir -p "$root/src/$pkg"
	for s in "${user_suffixes[@]}"; do
		name=rsatest-${pkg//\//-}$s
		echo "$name:x:$uid:$uid::/home/$name:/bin/sh" >>"$root/etc/passwd"
		echo "$name:x:$uid:" >>"$root/etc/group"
		install -d -m 0755 -o "$uid" -g "$uid" "$root/home/$name"
		uid=$((uid + 1))
	done
done
# testutil.TestUserName: the test's working directory below go.mod's.
cp go.mod "$root/src/go.mod"

# The tests /init runs, and their environment.
nonce=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
mark="RSA-KERNEL-TEST[$nonce]"
names=()
for t in "${tests[@]}"; do
	pkg=${t%%|*}
	run=${t#*|}
	name=$(basename "$pkg")
	[[ -x $root$bindir/$name.test ]] || die "go test -c wrote no $name.test for ./$pkg (no tests?)"
	args="-test.v -test.count=1 -test.timeout=$test_timeout"
	[[ -z $run ]] || args+=" -test.run $run"
	[[ -z $extra_args ]] || args+=" $extra_args"
	echo "$name|/src/$pkg|$bindir/$name.test|$args" >>"$root/etc/rsa-test/tests"
	names+=("$name")
done
{
	echo "MARK='$mark'"
	[[ -z $need_rsa ]] || echo "export RSA_TEST_BIN=$bindir/rsa"
	for kv in $extra_env; do
		[[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "RSA_KERNEL_TEST_ENV: $kv is not KEY=VALUE"
		v=${kv#*=}
		echo "export ${kv%%=*}='${v//\'/\'\\\'\'}'"
	done
} >"$root/etc/rsa-test/conf"

cat >"$root/init" <<'EOF'
#!/bin/sh
# make test-kernel's /init (scripts/test-kernel.sh): mounts, modules, the
# tests, a marker with each one's exit status, power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TMPDIR=/tmp CI=true USER=root LOGNAME=root
. /etc/rsa-test/conf
say() { echo "$MARK: $*"; }
up() { cut -d' ' -f1 /proc/uptime; }
setup=0
fail() {
	echo "test-kernel VM: $*"
	setup=1
}
mount -t proc proc /proc || fail "mounting /proc"
mount -t sysfs sysfs /sys || fail "mounting /sys"
mount -t devtmpfs devtmpfs /dev || fail "mounting /dev"
mount -t tmpfs -o mode=1777 tmpfs /tmp || fail "mounting /tmp"
mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "mounting /sys/fs/cgroup"
while read -r m; do
	insmod "$m" || echo "test-kernel VM: insmod $m failed"
done </etc/rsa-test/modules
for m in $(cat /etc/rsa-test/required); do
	[ "$(cat "/sys/module/$m/initstate" 2>/dev/null)" = live ] || fail "module $m is not loaded"
done
say "setup rc=$setup uptime=$(up) kernel=$(uname -r)"
set -f # the arguments are words, not patterns
while IFS='|' read -r name dir bin args; do
	say "begin $name"
	(cd "$dir" && exec $bin $args) </dev/null
	say "$name rc=$? uptime=$(up)"
done </etc/rsa-test/tests
say "end"
sync
poweroff -f
echo o >/proc/sysrq-trigger
EOF
chmod 0755 "$root/init"
initrd=$work/initrd.gz
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null --create --format=newc --quiet) | gzip -1 >"$initrd"
log "initramfs: $(du -k "$initrd" | cut -f1) KiB, built in $(since "$t_initrd") s"

# The VM. Its console is the serial port, written to a file that is
# printed as it grows; qemu exits when /init powers off (or, -no-reboot
# with panic=-1, when the kernel panics: /init died).
# One virtual CPU: TCG runs a thread per CPU, and make test runs this beside
# the emulated cluster's tests, which need the other core; the tests in the
# VM take about as long with one (13 s in the VM against 11.5 s with two).
console=$work/console.log
: >"$console"
log "booting $kver under QEMU (TCG), for at most $vm_timeout s"
t_boot=$(now)
qemu-system-x86_64 -accel tcg -cpu max -m 2G -smp 1 -nodefaults -no-user-config \
	-display none -no-reboot -serial "file:$console" \
	-kernel "$boot_image" -initrd "$initrd" \
	-append 'console=ttyS0 panic=-1 quiet' </dev/null 2>"$work/qemu.err" &
qemu_pid=$!
printed=0
show() {
	local n
	n=$(wc -l <"$console")
	if ((n > printed)); then
		sed -n "$((printed + 1)),${n}p" "$console" | tr -d '\r'
		printed=$n
	fi
}
booted=
timed_out=
while kill -0 "$qemu_pid" 2>/dev/null; do
	show
	if [[ -z $booted ]] && grep -qF "$mark: setup" "$console"; then
		booted=$(since "$t_boot")
	fi
	if awk -v a="$t_boot" -v b="$(now)" -v t="$vm_timeout" 'BEGIN { exit !(b - a > t) }'; then
		timed_out=1
		echo "test-kernel: the VM still runs after $vm_timeout s (RSA_KERNEL_TIMEOUT): killing qemu (pid $qemu_pid)" >&2
		kill -TERM "$qemu_pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$qemu_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$qemu_pid" 2>/dev/null || true
		break
	fi
	sleep 0.25
done
qemu_rc=0
wait "$qemu_pid" || qemu_rc=$?
qemu_pid=
vm_time=$(since "$t_boot")
show
tail -n +"$((printed + 1))" "$console" | tr -d '\r'
[[ -z ${RSA_KERNEL_TEST_LOG:-} ]] || tr -d '\r' <"$console" >"$RSA_KERNEL_TEST_LOG"

# The verdict: every marker present with rc=0, and no test skipped (under
# CI=true a skip hides a gap, as in make test).
echo
echo "== test-kernel: $kver, VM $vm_time s (/init ready after ${booted:-?} s), all $(since "$t_start") s"
ok=1
marker_rc() {
	tr -d '\r' <"$console" | grep -F "$mark: $1 rc=" | tail -1 | sed 's/.* rc=\([0-9]*\).*/\1/' || true
}
if [[ -n $timed_out ]]; then
	echo "FAIL: the VM ran past $vm_timeout s and was killed"
	ok=
fi
if [[ $qemu_rc != 0 && -z $timed_out ]]; then
	echo "FAIL: qemu exited with status $qemu_rc: $(cat "$work/qemu.err")"
	ok=
fi
rc=$(marker_rc setup)
if [[ $rc != 0 ]]; then
	echo "FAIL: setup in the VM: ${rc:-no marker (the kernel or /init failed: see the console above)}"
	ok=
fi
# Each package's tests: its section's top-level results, and skips at
# any level.
for name in "${names[@]}"; do
	rc=$(marker_rc "$name")
	read -r passed failed skipped failed_names < <(tr -d '\r' <"$console" | awk -v begin="$mark: begin $name" -v end="$mark: $name rc=" '
		index($0, begin) { on = 1; next }
		on && index($0, end) { on = 0 }
		on && /^--- PASS/ { p++ }
		on && /^--- FAIL/ { f++; names = names " " $3 }
		on && /^ *--- SKIP/ { s++ }
		END { print p + 0, f + 0, s + 0, names }')
	counts="$passed passed, $failed failed, $skipped skipped"
	[[ -z $failed_names ]] || counts+=": $failed_names"
	if [[ -z $rc ]]; then
		echo "FAIL: $name: no exit status (it did not finish); $counts"
		ok=
	elif [[ $rc != 0 ]]; then
		echo "FAIL: $name: exit status $rc; $counts"
		ok=
	else
		echo "ok:   $name: $counts"
	fi
	if [[ $rc == 0 ]] && ((passed == 0)); then
		if [[ -n $extra_args ]]; then
			echo "note: $name ran no tests (RSA_KERNEL_TEST_ARGS=$extra_args)"
		else
			echo "FAIL: $name ran no tests"
			ok=
		fi
	fi
	if ((skipped)); then
		echo "FAIL: $name: $skipped tests skipped; under CI=true a skip fails the run"
		ok=
	fi
done
if ! tr -d '\r' <"$console" | grep -qF "$mark: end"; then
	echo "FAIL: /init did not reach its end"
	ok=
fi
[[ -n $ok ]] || exit 1
echo "PASS"
