// Package joblog keeps each job's log: the lines about its RAMDISK, its
// staging programs' output and what RSA did on its behalf, which `rsa log`
// shows the job's user. It is the one writer of those files.
//
// A log is named by the job's id and the creation time of its record, so
// that a state directory reset (or restored) never shows one user the log
// of an earlier job that had the same id. Logs are root's, mode 0600: the
// daemon reads them out to the user, who never opens them.
package joblog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// Logs is the directory of the job logs. Its methods are safe for
// concurrent use: each append is one write of whole lines to a file
// opened O_APPEND.
type Logs struct {
	dir string
	log *slog.Logger // where a log that cannot be written is reported
}

// New returns the job logs under stateDir/logs; MakeDir creates that
// directory.
func New(stateDir string, log *slog.Logger) *Logs {
	return &Logs{dir: filepath.Join(stateDir, "logs"), log: log}
}

// MakeDir creates the logs' directory (mode 0700) if it is missing.
func (l *Logs) MakeDir() error {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("creating the job logs' directory: %w", err)
	}
	return nil
}

// Path is the file of the log of job id whose record was created at
// created.
func (l *Logs) Path(id int64, created time.Time) string {
	return filepath.Join(l.dir, fmt.Sprintf("%d-%d.log", id, created.UnixNano()))
}

// Open opens the log for appending, for a writer that streams into it
// (a staging program's output). The caller closes it.
func (l *Logs) Open(id int64, created time.Time) (*os.File, error) {
	f, err := os.OpenFile(l.Path(id, created), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the job's log: %w", err)
	}
	return f, nil
}

// Append adds line, stamped with the time, and the lines of more as they
// are (a list under it). A job with no creation time (a RAMDISK no record
// holds) has no log: nothing is written. A failure to write is logged,
// not returned: the job's log never stops what the daemon does.
func (l *Logs) Append(id int64, created time.Time, line string, more ...string) {
	if created.IsZero() {
		return
	}
	b := fmt.Appendf(nil, "%s %s\n", time.Now().Format(time.RFC3339), line)
	for _, m := range more {
		b = fmt.Appendf(b, "%s\n", m)
	}
	f, err := l.Open(id, created)
	if err == nil {
		_, err = f.Write(b)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		l.log.Error("writing the job's log", "job", id, "err", err)
	}
}

// Tail is the last n bytes of the log ("" if it has none).
func (l *Logs) Tail(id int64, created time.Time, n int64) string {
	f, err := os.Open(l.Path(id, created))
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// Remove deletes the log; one that does not exist is no error.
func (l *Logs) Remove(id int64, created time.Time) error {
	if err := os.Remove(l.Path(id, created)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
