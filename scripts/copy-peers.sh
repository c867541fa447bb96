# shellcheck shell=bash
# copy-peers.sh: the tools rsa copy is measured against, defined once for
# make bench-copy and make profile-copy, so that both time and profile the
# same commands. Sourced, not run.

# peer TOOL SRC DST: copies the contents of directory SRC into the existing
# directory DST with TOOL (for "unpack tar", SRC is an archive); status 2
# for a TOOL it does not know.
peer() {
	local tool=$1 src=$2 dst=$3 f
	case $tool in
	"cp -a") cp -a "$src/." "$dst/" ;;
	# cp -a of the top-level entries, 8 processes at a time.
	"xargs -P cp")
		dst=$(cd "$dst" && pwd) # it is named from inside SRC
		(cd "$src" && find . -mindepth 1 -maxdepth 1 -print0 | xargs -0 -r -P 8 -n 16 cp -a -t "$dst")
		;;
	"rsync -a") rsync -a "$src/" "$dst/" ;;
	"tar|tar") tar -C "$src" -cf - . | tar -C "$dst" -xf - ;;
	# Every file of a flat directory (dot files too) in 4 MiB blocks: the
	# copy limit for (c), 4 x 1 GiB.
	"dd bs=4M")
		for f in "$src"/* "$src"/.[!.]*; do
			[ -f "$f" ] && dd if="$f" of="$dst/${f##*/}" bs=4M status=none
		done
		return 0
		;;
	# The whole tree into one archive in DST (what rsa copy --pack makes).
	"pack tar") tar -C "$src" -cf "$dst/all.tar" . ;;
	# SRC is a tar archive here: its contents into DST (rsa copy --unpack).
	"unpack tar") tar -C "$dst" -xf "$src" ;;
	*)
		echo "unknown peer $tool (cp -a, xargs -P cp, rsync -a, tar|tar, dd bs=4M, pack tar, unpack tar)" >&2
		return 2
		;;
	esac
}
