// Package metabench re-implements GUPFS METABENCH (NERSC GUPFS FY2002
// report, Appendix A.2; results in §5.4, Table 1): a parallel metadata
// benchmark that times file creation, stat, utime, append and untar across
// the clients of a file system.
//
// The source is an MPI program. Here each MPI rank is a goroutine: the tool
// runs on one host, and what separated METABENCH's clients was their
// metadata caches, not their address spaces. Separate caches come from
// separate mounts of one shared volume, given as Config.Dirs (rank i works
// through Dirs[i%len(Dirs)]); with a single directory every rank shares one
// kernel cache, and the source's N = 1 against N = 2 cliff is not expected.
//
// Process 0 sets up each phase and collects the timings; it takes part
// only when there is one process or with -0 (Config.Proc0). Every phase is
// timed from a barrier to the last participant's end. The Delete phases are
// an extension: METABENCH's -k cleanup is untimed, so the source has no
// delete numbers.
package metabench
