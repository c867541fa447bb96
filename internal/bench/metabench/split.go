package metabench

import "strconv"

// share is participant k's part of n files among p participants: the
// files numbered start to start+count-1. The source gives each nfile/p;
// the nfile mod p files that leaves over go one each to the first
// participants, so that every phase does all nfile operations and its rate
// is comparable across N.
func share(n, p, k int) (start, count int) {
	q, r := n/p, n%p
	start = k*q + min(k, r)
	count = q
	if k < r {
		count++
	}
	return start, count
}

// fileName names file i of a test. Numbers are unique across
// participants, so shares can meet in one directory (Create-C).
func fileName(i int) string {
	return "f" + strconv.Itoa(i)
}

// participantDir names participant k's directory in a phase that gives
// each its own.
func participantDir(k int) string {
	return "p" + strconv.Itoa(k)
}
