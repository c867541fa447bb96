#!/usr/bin/env bash
# gluster-version MAJOR: makes this machine's GlusterFS the given major
# release, for `make test-cluster GLUSTER=MAJOR`: 10 is Debian 12's own
# (10.3), 11 bookworm-backports' (11.1; EL9 gets 11 from the CentOS Storage
# SIG). Every Gluster package moves together, down as well as up; apt's
# bookworm-backports source is added beside bookworm's if it is missing.
# Nothing is done when the machine already has that release. The emulated
# cluster runs its own glusterd in each host's namespaces, never the
# system's service, so the packages alone change.
set -euo pipefail

major=${1:?usage: gluster-version 10|11}
case $major in
10) release=bookworm ;;
11) release=bookworm-backports ;;
*)
	echo "gluster-version: GlusterFS $major: give 10 (Debian 12's 10.3) or 11 (bookworm-backports' 11.1)" >&2
	exit 1
	;;
esac
installed=$(dpkg-query -W -f '${Version}' glusterfs-server 2>/dev/null || true)
if [[ $installed == "$major".* ]]; then
	echo "gluster-version: GlusterFS $installed is installed"
	exit 0
fi
if [[ $release == bookworm-backports ]]; then
	# shellcheck disable=SC2016 # apt's own $(FIELD) placeholders
	targets=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(TARGET_OF)')
	if ! grep -q ' bookworm-backports deb$' <<<"$targets"; then
		mirror=$(awk '$2 == "bookworm" && $3 == "deb" { print $1; exit }' <<<"$targets")
		[[ -n $mirror ]] || { echo "gluster-version: apt has no bookworm source to add bookworm-backports beside" >&2; exit 1; }
		echo "gluster-version: adding bookworm-backports ($mirror) to apt's sources"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main" >/etc/apt/sources.list.d/bookworm-backports.list
	fi
fi
apt-get update -qq
# The packages of the Gluster installed now (or the server and client),
# each taken from the release asked for.
mapfile -t pkgs < <(dpkg-query -W -f '${Package} ${Status}\n' 'glusterfs-*' 'libgluster*' 'libgfapi*' 'libgfchangelog*' 'libgfrpc*' 'libgfxdr*' 2>/dev/null |
	awk '$NF == "installed" { print $1 }')
[[ ${#pkgs[@]} -gt 0 ]] || pkgs=(glusterfs-server glusterfs-client)
# A library one release has and the other has not (11 has no
# libglusterd0) is left to apt, which replaces it.
have=()
for p in "${pkgs[@]}"; do
	if apt-cache madison "$p" | grep -q " $release/"; then
		have+=("$p")
	fi
done
pkgs=("${have[@]}")
echo "gluster-version: installing GlusterFS $major from $release: ${pkgs[*]}"
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends --allow-downgrades \
	"${pkgs[@]/%//$release}"
now=$(dpkg-query -W -f '${Version}' glusterfs-server)
[[ $now == "$major".* ]] || { echo "gluster-version: glusterfs-server is $now after the install, not $major" >&2; exit 1; }
echo "gluster-version: GlusterFS $now"
