package rsatest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Account is a local user account that jobs run as.
type Account struct {
	Name     string
	UID, GID uint32
	Home     string
}

// LookupAccount returns the account name.
func LookupAccount(name string) (Account, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Account{}, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return Account{}, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return Account{}, fmt.Errorf("user %s: gid %q: %w", name, u.Gid, err)
	}
	return Account{Name: name, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}, nil
}

// EnsureAccount returns the account name, creating it first with useradd
// (useradd's options, then --user-group and the name) if it does not
// exist; made says whether it did, so that the caller removes it
// (RemoveAccount) when done and leaves an account it did not make.
func EnsureAccount(name string, useradd ...string) (a Account, made bool, err error) {
	if a, err := LookupAccount(name); err == nil {
		return a, false, nil
	}
	if err := RunAccountTool("useradd", slices.Concat(useradd, []string{"--user-group", name})...); err != nil {
		return Account{}, false, err
	}
	a, err = LookupAccount(name)
	return a, true, err
}

// RemoveAccount removes the account name with userdel (userdel's options,
// then the name).
func RemoveAccount(name string, userdel ...string) error {
	return RunAccountTool("userdel", slices.Concat(userdel, []string{name})...)
}

// accountToolPatience bounds how long RunAccountTool retries: a lock is
// held for the milliseconds another useradd or userdel takes, and a
// process of a user being removed takes a moment to exit.
const accountToolPatience = 20 * time.Second

// RunAccountTool runs useradd, userdel or another of shadow's tools (with
// the C locale, whose messages it reads) and runs it again, after a pause
// that doubles up to a second, while it fails for a reason that passes:
//   - exit status 1 (the passwd or shadow file) or 10 (the group or
//     gshadow file) with "cannot lock": shadow's tools exit at once when
//     another of them holds a lock, as when test packages running in
//     parallel make or remove their own accounts;
//   - userdel's exit status 8: a process of the user's is still exiting.
//
// Any other failure, or one that lasts past accountToolPatience, is
// returned with the tool's output.
func RunAccountTool(name string, args ...string) error {
	deadline := time.Now().Add(accountToolPatience)
	pause := 50 * time.Millisecond
	for {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		if !accountToolRetries(name, err, out) || time.Now().Add(pause).After(deadline) {
			return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Second)
	}
}

// accountToolRetries reports whether a failure of useradd or userdel
// (RunAccountTool) is one that passes.
func accountToolRetries(name string, err error, out []byte) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return false
	}
	switch code := exit.ExitCode(); {
	case (code == 1 || code == 10) && bytes.Contains(out, []byte("cannot lock")):
		return true
	case code == 8 && name == "userdel":
		return true
	}
	return false
}
