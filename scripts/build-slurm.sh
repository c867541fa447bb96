#!/usr/bin/env bash
# build-slurm VERSION [LUA]: builds SchedMD's Slurm VERSION (the source
# tarball ../shared/tools/slurm-VERSION.tar.gz, or SLURM_TARBALL) once,
# linked with Lua LUA (5.1, the default, or 5.4, as EL9's Slurm is), into
# a prefix outside the checkout ($RSA_SLURM_CACHE/slurm-VERSION-luaLUA),
# for `make test-slurm` and `make test-slurm-matrix`. A second run finds
# the build and does nothing. Prints the prefix on its last line.
#
# Without json-c, configure silently leaves out the burst_buffer plugins:
# the build checks that burst_buffer_lua.so was made, and that it links
# the Lua asked for. Slurm's configure takes the first of the pkg-config
# packages lua, lua5.4, ..., lua5.1 it finds; a directory of our own
# holding lua.pc for the Lua asked for comes first in PKG_CONFIG_PATH. The
# test cluster runs several slurmd on one host, which needs
# --enable-multiple-slurmd (Debian's build has it): without it srun cannot
# reach the second node. A build without the marker file .multiple-slurmd
# is built again.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VERSION=${1:?usage: build-slurm VERSION [LUA], e.g. build-slurm 23.11.11 5.4}
LUA=${2:-5.1}
case $LUA in
5.1) luadev=liblua5.1-0-dev ;;
5.4) luadev=liblua5.4-dev ;;
*)
	echo "build-slurm: Lua $LUA: give 5.1 or 5.4" >&2
	exit 1
	;;
esac
TARBALL=${SLURM_TARBALL:-$HERE/../shared/tools/slurm-$VERSION.tar.gz}
[[ -r $TARBALL ]] || { echo "build-slurm: no Slurm source at $TARBALL (set SLURM_TARBALL)" >&2; exit 1; }
NAME=$(basename "$TARBALL" .tar.gz)
CACHE=${RSA_SLURM_CACHE:-/var/cache/rsa-test}
PREFIX=$CACHE/$NAME-lua$LUA
if [[ -x $PREFIX/sbin/slurmctld && -e $PREFIX/lib/slurm/burst_buffer_lua.so && -e $PREFIX/.multiple-slurmd ]]; then
	echo "$PREFIX"
	exit 0
fi
missing=$(for p in build-essential pkg-config libmunge-dev "$luadev" "lua$LUA" libjson-c-dev; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [[ -n $missing ]]; then
	echo "installing: $missing" >&2
	# shellcheck disable=SC2086 # one word a package
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >&2
fi
mkdir -p "$CACHE"
src=$(mktemp -d "$CACHE/src.XXXXXX")
trap 'rm -rf "$src"' EXIT
pc=$(pkg-config --variable=pcfiledir "lua$LUA")/lua$LUA.pc
mkdir "$src/pkgconfig"
ln -s "$pc" "$src/pkgconfig/lua.pc"
tar -xzf "$TARBALL" -C "$src"
cd "$src/$NAME"
echo "build-slurm: configuring and building $NAME with Lua $LUA into $PREFIX (a few minutes)" >&2
PKG_CONFIG_PATH=$src/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
	./configure --prefix="$PREFIX" --sysconfdir="$PREFIX/etc" --disable-debug --enable-multiple-slurmd >"$src/configure.log" 2>&1 ||
	{ tail -30 "$src/configure.log" >&2; exit 1; }
make -j"$(nproc)" >"$src/make.log" 2>&1 || { tail -30 "$src/make.log" >&2; exit 1; }
make install >"$src/install.log" 2>&1 || { tail -30 "$src/install.log" >&2; exit 1; }
[[ -e $PREFIX/lib/slurm/burst_buffer_lua.so ]] ||
	{ echo "build-slurm: no burst_buffer/lua plugin was built (json-c or lua missing?)" >&2; exit 1; }
ldd "$PREFIX/lib/slurm/burst_buffer_lua.so" | grep -q "liblua$LUA" ||
	{ echo "build-slurm: burst_buffer_lua.so does not link Lua $LUA:" >&2; ldd "$PREFIX/lib/slurm/burst_buffer_lua.so" >&2; exit 1; }
touch "$PREFIX/.multiple-slurmd"
echo "$PREFIX"
