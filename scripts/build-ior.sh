#!/usr/bin/env bash
# build-ior: builds IOR and mdtest (third_party/ior, unchanged upstream
# source) once, into a prefix outside the checkout, for rsa-lab bench's
# cross-checks (internal/bench/crosscheck). A second run with the same
# source finds the build and does nothing. Prints the prefix, holding
# bin/ior and bin/mdtest, on its last line.
#
# The prefix is named by a hash of the source tree (contents, executable
# bits, symlinks) and of the configure flags, so an updated third_party/ior
# gets a new build instead of a stale one. The build happens in a copy under
# the cache: autoreconf and configure write into the tree they run in, and
# the checkout must stay clean (the tarball's own .gitignore would hide that
# output from git status). The backends that configure probes for by default
# (GPFS, CUDA, GPUDirect, Lustre) are turned off, so that the same source
# gives the same ior on every machine whatever headers it has: POSIX, MPIIO,
# MMAP and DUMMY are built.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=${IOR_SRC:-$HERE/third_party/ior}
[[ -r $SRC/configure.ac && -x $SRC/bootstrap ]] || { echo "build-ior: no IOR source at $SRC (set IOR_SRC)" >&2; exit 1; }
CACHE=${RSA_BENCH_CACHE:-/var/cache/rsa-bench}
CONFIGURE_FLAGS=(--without-gpfs --without-cuda --without-gpuDirect --without-lustre)

# Modes other than the executable bit depend on the umask of whoever
# unpacked or checked out the tree, so they stay out of the hash.
hash=$(
	cd "$SRC"
	{
		printf '%s\n' "${CONFIGURE_FLAGS[@]}"
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
		find . -type f -perm -u+x | LC_ALL=C sort
		find . -type l -printf '%p -> %l\n' | LC_ALL=C sort
	} | sha256sum | cut -c1-16
)
PREFIX=$CACHE/ior-$hash
built() { [[ -x $PREFIX/bin/ior && -x $PREFIX/bin/mdtest && -e $PREFIX/.built ]]; }
if built; then
	echo "$PREFIX"
	exit 0
fi

missing=$(for p in build-essential autoconf automake pkg-config libopenmpi-dev openmpi-bin; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || echo "$p"
done)
if [[ -n $missing ]]; then
	echo "installing: ${missing//$'\n'/ }" >&2
	# shellcheck disable=SC2086 # one word a package
	apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 &&
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >&2
fi

mkdir -p "$CACHE"
# Two runs at once (parallel CI jobs) would install into the same prefix:
# the second waits for the first and then finds its build.
exec 9>"$CACHE/.ior-$hash.lock"
flock 9
if built; then
	echo "$PREFIX"
	exit 0
fi
build=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$build"' EXIT
cp -a "$SRC/." "$build/ior"
cd "$build/ior"
echo "build-ior: bootstrapping, configuring and building $SRC into $PREFIX (about ten seconds on two cores)" >&2
./bootstrap >"$build/bootstrap.log" 2>&1 || { tail -30 "$build/bootstrap.log" >&2; exit 1; }
./configure --prefix="$PREFIX" "${CONFIGURE_FLAGS[@]}" >"$build/configure.log" 2>&1 ||
	{ tail -30 "$build/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$build/make.log" 2>&1 || { tail -30 "$build/make.log" >&2; exit 1; }
# A half-installed prefix from an interrupted run has no .built: start it anew.
rm -rf "$PREFIX"
make install >"$build/install.log" 2>&1 || { tail -30 "$build/install.log" >&2; exit 1; }
for b in "$PREFIX/bin/ior" "$PREFIX/bin/mdtest"; do
	[[ -x $b ]] || { echo "build-ior: make install left no $b" >&2; exit 1; }
done
touch "$PREFIX/.built"
echo "$PREFIX"
