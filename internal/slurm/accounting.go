package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// accountingPrefix starts RSA's token in a job's AdminComment.
const accountingPrefix = "rsa:"

// AccountingToken is what RSA writes into a Slurm job's AdminComment for
// sacct: the bytes and files its stage-in copied into RAM, as one
// lowercase token without spaces ("rsa:in=1048576b/12f"), which Slurm 22.05's
// sacctmgr would not change and a site's scripts split easily.
func AccountingToken(inBytes, inFiles int64) string {
	return fmt.Sprintf("%sin=%db/%df", accountingPrefix, inBytes, inFiles)
}

// MergeAccounting puts token into an AdminComment that may already hold a
// site's own text: RSA's earlier token (one starting "rsa:") is replaced,
// anything else kept as it was, the parts joined by ';'.
func MergeAccounting(comment, token string) string {
	var parts []string
	for p := range strings.SplitSeq(comment, ";") {
		if t := strings.TrimSpace(p); t != "" && !strings.HasPrefix(t, accountingPrefix) {
			parts = append(parts, p)
		}
	}
	return strings.Join(append(parts, token), ";")
}

// ParseAccounting reads RSA's token back out of a job's AdminComment (as
// sacct lists it): the bytes and files its stage-in copied. ok is false
// when the comment holds no token of RSA's, or one it cannot read.
func ParseAccounting(comment string) (bytes, files int64, ok bool) {
	for p := range strings.SplitSeq(comment, ";") {
		in, found := strings.CutPrefix(strings.TrimSpace(p), accountingPrefix+"in=")
		if !found {
			continue
		}
		b, f, found := strings.Cut(in, "/")
		if !found || !strings.HasSuffix(b, "b") || !strings.HasSuffix(f, "f") {
			return 0, 0, false
		}
		var err1, err2 error
		bytes, err1 = strconv.ParseInt(strings.TrimSuffix(b, "b"), 10, 64)
		files, err2 = strconv.ParseInt(strings.TrimSuffix(f, "f"), 10, 64)
		if err1 != nil || err2 != nil || bytes < 0 || files < 0 {
			return 0, 0, false
		}
		return bytes, files, true
	}
	return 0, 0, false
}
