// Package rsatest drives a real RSA on this host for the programs that
// exercise it whole: the integration suites (test/e2e, test/slurm,
// test/cluster) and the thesis re-runs (internal/bench/thesis). It starts
// rsa serve and waits for its socket, creates and removes accounts, runs
// commands and the repository's scripts, submits and watches Slurm jobs,
// reads RSA's job records, keeps logs and finds what a run left mounted.
//
// It is a package of its own, beside internal/testutil rather than in it,
// because the thesis re-runs are linked into the rsa binary: nothing here
// imports testing, and every function reports an error instead of failing
// a test. internal/testutil builds the test-facing helpers (t.Fatal,
// t.Cleanup, skips under CI) on top of it, so a suite imports both and
// the thesis only this one.
package rsatest
