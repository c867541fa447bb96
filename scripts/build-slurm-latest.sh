#!/usr/bin/env bash
# build-slurm-latest: builds today's Slurm (SchedMD's source tarball, see
# SLURM_TARBALL) once, into a prefix outside the checkout, for
# `make test-slurm-latest`. A second run finds the build and does nothing.
# Prints the prefix on its last line.
#
# Without json-c, configure silently leaves out the burst_buffer plugins:
# the build checks that burst_buffer_lua.so was made. The test cluster runs
# several slurmd on one host, which needs --enable-multiple-slurmd (Debian's
# build has it): without it srun cannot reach the second node. A build
# without the marker file .multiple-slurmd is built again.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARBALL=${SLURM_TARBALL:-$HERE/../shared/tools/slurm-25.11.7.tar.gz}
[[ -r $TARBALL ]] || { echo "build-slurm-latest: no Slurm source at $TARBALL (set SLURM_TARBALL)" >&2; exit 1; }
NAME=$(basename "$TARBALL" .tar.gz)
CACHE=${RSA_SLURM_CACHE:-/var/cache/rsa-test}
PREFIX=$CACHE/$NAME
if [[ -x $PREFIX/sbin/slurmctld && -e $PREFIX/lib/slurm/burst_buffer_lua.so && -e $PREFIX/.multiple-slurmd ]]; then
	echo "$PREFIX"
	exit 0
fi
missing=$(for p in build-essential pkg-config libmunge-dev liblua5.1-0-dev libjson-c-dev; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [[ -n $missing ]]; then
	echo "installing: $missing" >&2
	# shellcheck disable=SC2086 # one word a package
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >&2
fi
src=$(mktemp -d "$CACHE.src.XXXXXX" 2>/dev/null || { mkdir -p "$CACHE" && mktemp -d "$CACHE/src.XXXXXX"; })
trap 'rm -rf "$src"' EXIT
tar -xzf "$TARBALL" -C "$src"
cd "$src/$NAME"
echo "build-slurm-latest: configuring and building $NAME into $PREFIX (a few minutes)" >&2
./configure --prefix="$PREFIX" --sysconfdir="$PREFIX/etc" --disable-debug --enable-multiple-slurmd >"$src/configure.log" 2>&1 ||
	{ tail -30 "$src/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$src/make.log" 2>&1 || { tail -30 "$src/make.log" >&2; exit 1; }
make install >"$src/install.log" 2>&1 || { tail -30 "$src/install.log" >&2; exit 1; }
[[ -e $PREFIX/lib/slurm/burst_buffer_lua.so ]] ||
	{ echo "build-slurm-latest: no burst_buffer/lua plugin was built (json-c or lua missing?)" >&2; exit 1; }
touch "$PREFIX/.multiple-slurmd"
echo "$PREFIX"
