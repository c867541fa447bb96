// Package version holds RSA's version, which `make build` sets from
// `git describe` (v0.N.M, or v0.N.M-K-gHASH between releases) with
//
//	-ldflags "-X github.com/rsa-hpc/rsa/internal/version.version=..."
//
// The daemon and its agents send it to each other, so that either can say
// when they differ.
package version

import (
	"fmt"
	"strconv"
	"strings"
)

// version is written by the linker only.
var version = "dev"

// String is this binary's version; "dev" when built without make.
func String() string { return version }

// Header carries the sender's version on every request between the daemon
// and an agent, and on the agent's answers.
const Header = "Rsa-Version"

// Compatible reports whether an rsa serve and an agent of versions a and b
// (either way round) work together: RSA supports one release line apart,
// so that hosts can be upgraded one by one (docs/operations.md, Upgrades).
// A release line is MAJOR.MINOR; versions of one major whose minors differ
// by at most one are compatible. A version that names no release ("dev",
// a build without make, or an agent too old to say) cannot be judged and
// counts as compatible; why is empty then, and when they are.
func Compatible(a, b string) (ok bool, why string) {
	am, an, aok := line(a)
	bm, bn, bok := line(b)
	if !aok || !bok {
		return true, ""
	}
	if am == bm && an-bn <= 1 && bn-an <= 1 {
		return true, ""
	}
	return false, fmt.Sprintf("versions %d.%d and %d.%d are more than one release apart; RSA supports one (upgrade the older first)", am, an, bm, bn)
}

// line is the release line (major, minor) of v: "v0.1.0", "0.1.0",
// "v0.1.0-3-gabc1234", "0.1.0+3.gabc1234".
func line(v string) (major, minor int, ok bool) {
	v = strings.TrimPrefix(v, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 3 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, false
	}
	return major, minor, true
}
