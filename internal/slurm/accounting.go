package slurm

import (
	"fmt"
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
