#!/usr/bin/env bash
# copyright.sh BIN: the Debian copyright file (DEP-5) of the rsa package,
# on stdout: RSA's own license, then each Go module compiled into BIN
# (go version -m) and the Go standard library, each with its license's text
# as it ships it (a file with two licenses is named by the first). A module
# whose license this script cannot name stops the build: a package must
# not ship code under terms nobody read.
set -euo pipefail

bin=${1:?usage: copyright.sh BIN}
go=${GO:-go}

# indent: a DEP-5 text block (each line one space in; an empty one " .").
indent() { sed -e 's/[[:space:]]*$//' -e 's/^$/./' -e 's/^/ /'; }

# name FILE: the SPDX name of the license text in FILE.
name() {
	local t
	t=$(tr -s '[:space:]' ' ' <"$1")
	case $t in
	*"your choice of exactly one of"*"FreeType License"*"GNU General Public License"*) echo "FTL or GPL-2+" ;;
	*"The FreeType Project LICENSE"*) echo FTL ;;
	*"GNU GENERAL PUBLIC LICENSE"*"Version 2, June 1991"*) echo GPL-2 ;;
	*"Third-Party Software Notices"*) echo third-party-notices ;;
	*"Is Public Domain"*"dedicated to the public domain"*) echo public-domain ;;
	*"Apache License"*"Version 2.0"*) echo Apache-2.0 ;;
	*"Mozilla Public License Version 2.0"*) echo MPL-2.0 ;;
	*"SIL OPEN FONT LICENSE"*) echo OFL-1.1 ;;
	*"Creative Commons Attribution 4.0 International"*) echo CC-BY-4.0 ;;
	*"Redistribution and use in source and binary forms"*"Neither the name"*) echo BSD-3-Clause ;;
	*"Redistribution and use in source and binary forms"*) echo BSD-2-Clause ;;
	*"Permission is hereby granted, free of charge"*) echo Expat ;;
	*"Permission to use, copy, modify, and"*"distribute this software for any"*) echo ISC ;;
	*) return 1 ;;
	esac
}

cat <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rsa
Upstream-Contact: https://github.com/rsa-hpc/rsa
Source: https://github.com/rsa-hpc/rsa

Files: *
Copyright: The RSA authors
License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0; it is also the file LICENSE of the
 source.
EOF

# The Go standard library, compiled into every Go binary.
goroot=$("$go" env GOROOT)
printf '\nFiles: go-module/std/*\nComment: the Go standard library, %s, compiled into /usr/bin/rsa\nCopyright: The Go Authors\nLicense: %s\n' \
	"$("$go" version -m "$bin" | head -1 | awk '{ print $2 }')" "$(name "$goroot/LICENSE")"
indent <"$goroot/LICENSE"

"$go" version -m "$bin" | awk '$1 == "dep" { print $2, $3 }' | while read -r mod ver; do
	dir=$("$go" mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[[ -d $dir ]] || { echo "copyright.sh: no source of $mod $ver in the module cache (go mod download)" >&2; exit 1; }
	found=0
	for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/License* "$dir"/licenses/*; do
		[[ -f $f ]] || continue
		# The license of a logo, an image no binary holds.
		[[ ${f##*/} == *LOGO* ]] && continue
		lic=$(name "$f") || { echo "copyright.sh: $mod $ver: cannot name the license in ${f##*/}; read it and teach this script" >&2; exit 1; }
		printf '\nFiles: go-module/%s/*\nComment: Go module %s %s, compiled into /usr/bin/rsa (%s)\nCopyright: see the license text\nLicense: %s\n' \
			"$mod" "$mod" "$ver" "${f##*/}" "$lic"
		indent <"$f"
		found=1
	done
	[[ $found = 1 ]] || { echo "copyright.sh: $mod $ver has no license file at its root" >&2; exit 1; }
done
