package report

import "strings"

// nodeLocal reports whether target is, or sets beside another, the local
// engine's tmpfs on the job's own host ("ram", "ram vs shared@1g", "ram ->
// shared@1g"): a node-local RAM disk reached with no network, which any
// node-local RAM disk matches, and not RSA's design of RAM on RSA nodes
// across a link (ram@1g emulates that). The seeds' RSA numbers were
// measured across a link; a node-local row is never set beside them.
func nodeLocal(target string) bool {
	return target == "ram" || strings.HasPrefix(target, "ram vs ") || strings.HasPrefix(target, "ram -> ")
}

// machineLimits is what this page's numbers can and cannot show; the
// machine line names the one they came from.
const machineLimits = `## What this machine can and cannot show

All numbers on this page come from one virtual machine:

- 2 vCPUs, shared with the host's other guests (Intel Xeon on some days, AMD EPYC on others; hosts of the same type differed 2× in system-call cost); E1's rows carry the steal and softirq during each job, older rows none;
- 24 GiB of RAM that the hypervisor reclaims when the guest frees it: a first write to reclaimed memory ran a tmpfs at 0.44 GB/s instead of 2.8 GB/s;
- a virtio disk that the host caches, so "cold" is cold in the guest only;
- links shaped for bandwidth alone (tbf, one queue of up to 50 ms, no fair queueing, no netem), no RDMA, and no kernel client for NFS, Lustre, BeeGFS, GPFS or OrangeFS.

Every emulated host (compute, RSA node, the shared file system's server, Slurm's and RSA's control) is a network, mount and UTS namespace of the same kernel on the same 2 vCPUs, and the harness runs there too. The "shared file system" (` + "`shared@1g`" + `) is GlusterFS on one ext4 brick: the same software as RSA's RAMDISK. Its cost per create, where a row names a ` + "`shared_latency`" + `, is a constant delay injected per operation (Gluster's delay-gen), which RSA's own stage-out pays as well. Slurm runs without slurmdbd: its accounting here is the job-completion log (` + "`sacct --completion`" + `, from ` + "`jobcomp/filetxt`" + `).

So:

- absolute rates say nothing about a site; a ratio means something only between sides that ran in the same session;
- scaling across RSA nodes cannot be measured here: the nodes share two cores and one memory bus;
- the mechanism behind the thesis' 30× (a directory-lock storm across many clients, whose cost grows with contention) is modelled only in E4: a shim in the shared file system's brick makes a create dearer the more client hosts contend for its directory, calibrated to the thesis' two numbers; it is a reading of GPFS's token, not GPFS, and at most 8 client hosts contend here (the emulation allows 9). Elsewhere a constant delay per create stands in for it, and cannot make RSA's stage-out cheaper than the job's own writes;
- E3's IO500 phases run with a 10 s stonewall (IO500 asks 300 s) and caps per rank, with find by a walker of rsa-lab's own from one host (the harness' pfind is not built here): not a valid IO500 submission, and its scores compare only with each other;
- rows marked **(node-local)** measure a tmpfs on the job's own host (the local engine), reached with no network. Any node-local RAM disk gives them; they are not RSA's design (RAM on RSA nodes across a link, ` + "`ram@1g`" + `) and are not set beside the seeds' numbers.
`

// relatedSystems places RSA among the designs closest to it.
const relatedSystems = `## Related systems

- **Cray DataWarp**: dedicated burst-buffer nodes with flash, a per-job instance made and staged by the workload manager (Slurm's burst_buffer/datawarp); on NERSC's Cori, 288 nodes gave about 1.7 TB/s. RSA's shape is the same (dedicated nodes, a per-job file system, Slurm staging) with RAM for flash and GlusterFS for DataWarp's own file system.
- **BeeOND**: a BeeGFS instance per job on the compute nodes' own drives, started and stopped from the prolog and epilog, with a parallel copy tool for staging. It uses the job's nodes, not dedicated ones, so it takes nothing from other jobs and gives nothing after the job ends; RSA releases the compute nodes while it stages out.
- **GekkoFS**: a temporary file system of the job's nodes that intercepts I/O in user space and relaxes POSIX (no distributed locking), reporting metadata rates of millions of operations per second on tens to hundreds of nodes (Vef et al., IEEE Cluster 2018). RSA keeps POSIX and the kernel's VFS through a FUSE client: in E3 its shared Gluster RAMDISK creates files at about 0.2% of a local tmpfs' rate per node, the cost that design avoids; RSA's image modes keep the namespace in the compute host's own kernel instead (the private output image's metadata at 40% of a tmpfs per node).
- **UnifyFS** and **Hermes**: user-level layers over node-local storage (UnifyFS a per-job file system with lamination, Hermes a multi-tier buffer), both linked into the application; RSA needs no change to the application.
- **HPE Rabbit** (LLNL's El Capitan): near-node flash per chassis, from which the scheduler (Flux) builds a file system per job (XFS, GFS2 or Lustre) and stages data in and out; the nearest to RSA's "a file system per job on nodes beside the compute nodes", with flash on the fabric where RSA has RAM behind a link.

What can be compared from a 2-core VM is not absolute rates but each design's efficiency: the share of a node's own local capability a client gets from the distributed file system.
`
