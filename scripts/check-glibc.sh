#!/usr/bin/env bash
# check-glibc.sh BIN [MAX]: make deb's and make rpm's check that BIN runs
# on the oldest glibc the packages are for, MAX (default 2.34: RHEL and
# Rocky 9's; Debian 12 has 2.36). rsa is built with cgo (os/user asks NSS,
# so that sites' LDAP and SSSD users resolve) and so linked against the
# build host's glibc, whose symbols carry the version that introduced them
# (objdump -T: "(GLIBC_2.34) pthread_create"). It fails naming each symbol
# version newer than MAX and the symbols that need it; otherwise it prints
# the newest version BIN needs (nothing for a binary that needs no glibc),
# which the packages require.
set -euo pipefail

bin=${1:?usage: check-glibc.sh BIN [MAX]}
max=${2:-2.34}
command -v objdump >/dev/null || {
	echo "check-glibc.sh: objdump is missing (apt-get install binutils)" >&2
	exit 1
}
[[ -f $bin ]] || {
	echo "check-glibc.sh: $bin: no such file" >&2
	exit 1
}

if ! dyn=$(objdump -T "$bin" 2>&1); then
	# A static binary (CGO_ENABLED=0) has no dynamic symbols and needs no
	# glibc at all.
	[[ $dyn == *"not a dynamic object"* ]] && exit 0
	echo "check-glibc.sh: objdump -T $bin: $dyn" >&2
	exit 1
fi

# "VERSION SYMBOL" for each symbol BIN takes from glibc, e.g. "2.34 pthread_create".
needs=$(awk 'match($0, /GLIBC_[0-9]+(\.[0-9]+)+/) { print substr($0, RSTART + 6, RLENGTH - 6), $NF }' <<<"$dyn" | sort -u)
[[ -n $needs ]] || exit 0
newest=$(cut -d' ' -f1 <<<"$needs" | sort -uV | tail -1)

# newer A B: version A is newer than B.
newer() { [[ $1 != "$2" && $(printf '%s\n' "$1" "$2" | sort -V | tail -1) == "$1" ]]; }

if newer "$newest" "$max"; then
	{
		echo "check-glibc.sh: $bin needs glibc $newest, newer than $max, the oldest glibc it must run on (GLIBC_MAX in the Makefile; 2.34 is RHEL/Rocky 9's), for these symbols:"
		cut -d' ' -f1 <<<"$needs" | sort -uV | while read -r v; do
			newer "$v" "$max" || continue
			echo "  GLIBC_$v: $(awk -v v="$v" '$1 == v { print $2 }' <<<"$needs" | paste -sd' ')"
		done
		echo "Build it where glibc is $max or older, or find what brought these symbols in (a new cgo call, C library or Go release)."
	} >&2
	exit 1
fi
echo "$newest"
