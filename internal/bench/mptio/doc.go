// Package mptio re-implements GUPFS' MPTIO (NERSC GUPFS FY2002 report,
// Appendix A.1): a parallel, multi-threaded POSIX I/O benchmark. NP ranks
// of nth threads each write and read disjoint regions of one global file
// (-G), of one file per rank (-P), of one file per thread (-T) or of block
// devices (-R), in five timed tests, and rank 0 reports each test's
// aggregate rates and each rank's rate, time and system time.
//
// The work is three steps, each usable alone: a Config (MPTIO's flags) is
// turned into a Plan by NewPlan, a pure function that applies MPTIO's size
// rule and lays out every thread's segment; Run executes a Plan; Report
// and Rows render the Result.
//
// # Ranks are threads, not processes
//
// MPTIO ran one MPI process per client node. Here every rank runs on this
// one host, so separate processes would buy nothing a rank needs: they
// would share one kernel and one page cache all the same. A rank is
// therefore a group of goroutines, one per MPTIO worker thread, each locked
// to its own OS thread for the whole run. That keeps what MPTIO measured
// per rank: the kernel accounts system time per thread
// (getrusage(RUSAGE_THREAD)), so a rank's %Sys is the sum over its threads,
// as MPTIO's per-process figure was. MPI's barriers become a start gate
// every thread waits on and the collection of every thread's result.
//
// # The cross-check
//
// CrossCheck has fio (and IOR, when built) do the same I/O on the same
// target after the run: a fio job for every MPTIO thread, on files of
// fio's own with the same names, regions and offsets, in the same
// records, with the same system calls (see FioJobFile). Checks.Apply sets
// fio's aggregate rate beside each sequential and random Rate; one more
// than 10% away is marked disagree, and its note says how the two tools
// measure otherwise. Read-modify-write has no fio counterpart.
package mptio
