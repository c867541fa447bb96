package rsatest

import (
	"errors"
	"os"
	"path/filepath"
)

// ModuleRoot is the nearest directory at or above the working directory
// that holds a go.mod: the repository's root for go test, which runs a
// package's tests in the package's directory.
func ModuleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("no go.mod at or above " + wd)
}
