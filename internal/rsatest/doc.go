// Package rsatest is the harness of the programs that exercise RSA whole
// on this host: the integration suites (test/e2e, test/slurm,
// test/cluster) and the thesis re-runs (internal/bench/thesis). It creates
// and removes accounts, runs commands and the repository's scripts, polls
// for a condition, submits and watches Slurm jobs, keeps logs and finds
// the loop devices a run left bound. Its subpackage live starts rsa serve
// and reads the job records it keeps.
//
// It is one package beside internal/testutil rather than a part of it for
// two reasons, each a rule of its imports:
//   - It never imports testing, and reports an error where a test would
//     fail: the thesis re-runs are linked into the rsa binary.
//     internal/testutil builds the test-facing helpers (t.Fatal,
//     t.Cleanup, skips outside CI) on top of it, so a suite imports both
//     and the thesis this one.
//   - It imports nothing of RSA's, only the standard library: testutil
//     imports it, and the unit tests of every package import testutil.
//     What needs RSA's own types (internal/api) is in live.
package rsatest
