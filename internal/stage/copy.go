// Package stage moves a job's data between persistent storage and its
// RAMDISK: the parallel Mover, its verifier, tar packing, and the Runner that
// starts staging children with the job's uid, gid and groups, so that user
// paths are never touched with root's rights. It owns copy semantics; it must
// not know about job states or mounts.
package stage

import (
	"io/fs"
	"path/filepath"
	"time"
)

// Stats counts what a copy did.
type Stats struct {
	Files     int64 `json:"files"`
	Dirs      int64 `json:"dirs"`
	Links     int64 `json:"symlinks"`
	HardLinks int64 `json:"hard_links"`
	Bytes     int64 `json:"bytes"`
	Skipped   int64 `json:"skipped"` // already identical (resumed copy)
	Failed    int64 `json:"failed"`
}

// Progress is reported while copying.
type Progress struct {
	Files      int64 `json:"files"`
	Bytes      int64 `json:"bytes"`
	TotalFiles int64 `json:"total_files,omitempty"`
	TotalBytes int64 `json:"total_bytes,omitempty"`
}

// Line is one line of `rsa copy --progress=json` output: a progress report,
// or the summary at the end.
type Line struct {
	Progress *Progress     `json:"progress,omitempty"`
	Done     *Stats        `json:"done,omitempty"`
	Seconds  float64       `json:"seconds,omitempty"`
	Error    string        `json:"error,omitempty"`
	Elapsed  time.Duration `json:"-"`
}

// Measure counts the regular files and bytes under root.
func Measure(root string) (files, bytes int64, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			files++
			bytes += info.Size()
		}
		return nil
	})
	return files, bytes, err
}
