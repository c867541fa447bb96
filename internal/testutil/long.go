package testutil

import "os"

// Long reports whether this is the long run (make test-long, which sets
// RSA_TEST_LONG): the exhaustive matrices, production timers, soaks and
// full-size benchmarks that make test leaves out to stay within its time.
//
// A test uses it to choose which cases it registers, for example adding
// the rest of a matrix to its table when Long is true, so that each run
// reports exactly the cases it ran. It never uses it to skip: a skipped
// test checks nothing, and the runner (scripts/go-test.sh) fails a run
// with any skip in it.
func Long() bool { return os.Getenv("RSA_TEST_LONG") != "" }
