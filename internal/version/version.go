// Package version holds RSA's version, which `make build` sets from
// `git describe` (v0.N.M, or v0.N.M-K-gHASH between releases) with
//
//	-ldflags "-X github.com/rsa-hpc/rsa/internal/version.version=..."
//
// The daemon and its agents send it to each other, so that either can say
// when they differ.
package version

// version is written by the linker only.
var version = "dev"

// String is this binary's version; "dev" when built without make.
func String() string { return version }

// Header carries the sender's version on every request between the daemon
// and an agent, and on the agent's answers.
const Header = "Rsa-Version"
