#!/usr/bin/env bash
# promtool, Prometheus' checker of rule files, for make lint: the
# promtool on PATH if there is one, else the one of Debian 12's
# prometheus package, extracted once into a cache. Only usr/bin/promtool
# is taken from the package: nothing is installed, no service starts.
#
#   scripts/promtool.sh check rules contrib/prometheus/rsa-alerts.yml
#   scripts/promtool.sh test rules contrib/prometheus/rsa-alerts_test.yml
#
# The first run needs apt (apt-get download, dpkg-deb); as root it runs
# apt-get update if apt's lists do not have the package. Elsewhere (RHEL),
# put promtool on PATH: any release of Prometheus 2.x or later has it.
#
# Environment:
#   RSA_PROMTOOL_CACHE=DIR  where promtool is kept (default
#                           /var/cache/rsa-test/promtool, or
#                           ~/.cache/rsa-test/promtool for a user who
#                           cannot write /var/cache)
set -euo pipefail

if command -v promtool >/dev/null 2>&1; then
	exec promtool "$@"
fi

die() {
	echo "promtool.sh: $*" >&2
	exit 1
}

cache=${RSA_PROMTOOL_CACHE:-}
if [[ -z $cache ]]; then
	cache=/var/cache/rsa-test/promtool
	if ! mkdir -p "$cache" 2>/dev/null || [[ ! -w $cache ]]; then
		cache=${XDG_CACHE_HOME:-$HOME/.cache}/rsa-test/promtool
	fi
fi
bin=$cache/promtool

if [[ ! -x $bin ]]; then
	for c in apt-get dpkg-deb; do
		command -v "$c" >/dev/null 2>&1 ||
			die "no promtool on PATH, and no $c to take it from Debian's prometheus package: install promtool (Prometheus 2.x or later)"
	done
	mkdir -p "$cache" || die "cannot make $cache (set RSA_PROMTOOL_CACHE)"
	# A directory of its own, renamed into place at the end: two runs at
	# once each fetch, and neither sees the other's half-written file.
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "promtool.sh: fetching Debian's prometheus package once, for its promtool, into $cache" >&2
	# APT::Sandbox::User=root: _apt may not write the directory.
	download() { (cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root prometheus) >&2; }
	if ! download; then
		[[ $(id -u) == 0 ]] || die "apt-get download prometheus failed (as root, this script runs apt-get update first)"
		apt-get update -qq >&2
		download || die "apt-get download prometheus failed"
	fi
	debs=("$tmp"/prometheus_*.deb)
	[[ -f ${debs[0]} ]] || die "apt-get download left no prometheus_*.deb"
	dpkg-deb --fsys-tarfile "${debs[0]}" | tar -x -C "$tmp" ./usr/bin/promtool ||
		die "no ./usr/bin/promtool in ${debs[0]##*/}"
	"$tmp/usr/bin/promtool" --version >/dev/null || die "the extracted promtool does not run"
	echo "promtool.sh: $(basename "${debs[0]}" .deb): $bin" >&2
	mv -f "$tmp/usr/bin/promtool" "$bin"
	rm -rf "$tmp"
	trap - EXIT
fi

exec "$bin" "$@"
