# shellcheck shell=bash
# guest-memory.sh: keeps a virtual machine's memory backed for the length of
# a benchmark, for make bench-copy and make profile-copy. Sourced, not run.
#
# In a VM whose balloon reports free pages to the host (Firecracker, QEMU's
# free-page-reporting), memory the guest has left free for 2 s goes back to
# the host, and the next write to it waits while the host faults a page in.
# On the 2-core VM of 2026-11-29 dd wrote 16 GiB into a tmpfs at 0.44 GB/s
# onto such memory and at 2.8 GB/s once it was backed; a 2 GiB pack spent
# 81% of 6.1 s in the kernel's copy into new tmpfs pages (perf record), where
# 0.9 s is usual. Which pages a run is given is luck, so with reporting on a
# run times the hypervisor as much as the tool; no bare-metal RSA node pays it.

reporting=/sys/module/page_reporting/parameters/page_reporting_order
reporting_was=

# hold_guest_memory SCRATCH: free page reporting off (no order is large
# enough), then every free page but 1 GiB written once, through a tmpfs
# mounted at SCRATCH and removed again. The page cache is left as it is.
hold_guest_memory() {
	local scratch=$1 orders free_kib fill_mib
	if [ -w "$reporting" ]; then
		reporting_was=$(cat "$reporting")
		orders=$(awk '/zone/ { print NF - 4; exit }' /proc/buddyinfo)
		echo "$orders" > "$reporting" ||
			echo "warning: free page reporting stays on; runs may time the host's page faults" >&2
	fi
	free_kib=$(awk '/^MemFree:/ { print $2 }' /proc/meminfo)
	fill_mib=$((free_kib / 1024 - 1024))
	[ "$fill_mib" -gt 1024 ] || return 0
	mkdir -p "$scratch"
	mount -t tmpfs -o size="${fill_mib}m" rsa-bench-fill "$scratch"
	dd if=/dev/zero of="$scratch/fill" bs=1M count="$fill_mib" status=none
	umount "$scratch"
	rmdir "$scratch"
}

# release_guest_memory SCRATCH: reporting as it was; for an EXIT trap.
release_guest_memory() {
	[ -z "$reporting_was" ] || echo "$reporting_was" > "$reporting"
	! mountpoint -q "$1" || umount -l "$1"
	rmdir "$1" 2>/dev/null || true
}
