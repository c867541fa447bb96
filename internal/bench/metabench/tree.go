package metabench

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Tree describes the synthetic source tree Untar unpacks. The source used
// glibc 2.3's: 9,188 files and 459 directories, 75.8 MB. We cannot ship
// glibc, so we make a tree of the same shape from a seed: the same counts,
// exactly Bytes bytes of file data, sizes drawn log-normal, directories
// nested a few levels deep as a source tree's are.
type Tree struct {
	Files int    // regular files
	Dirs  int    // directories, the top one included
	Bytes int64  // file data in all, exactly
	Seed  uint64 // the same seed gives the same archive, byte for byte
	Scale int    // the tree is glibc 2.3's divided by this; 1 for the full size
}

// glibcSeed is the seed of the default tree; any fixed value would do.
const glibcSeed = 20021002

// GlibcTree is the shape of the source's tarball: glibc 2.3, 9,188 files
// in 459 directories, 75.8 MB, taken as 75,800,000 bytes (the report's MB
// is not stated; decimal is the closer reading of a rounded "75.8").
func GlibcTree() Tree {
	return Tree{Files: 9188, Dirs: 459, Bytes: 75_800_000, Seed: glibcSeed, Scale: 1}
}

// Scaled is t divided by div: counts and bytes rounded to the nearest,
// at least one file and one directory.
func (t Tree) Scaled(div int) Tree {
	if div <= 1 {
		return t
	}
	round := func(n int64) int64 { return (n + int64(div)/2) / int64(div) }
	return Tree{
		Files: max(1, int(round(int64(t.Files)))),
		Dirs:  max(1, int(round(int64(t.Dirs)))),
		Bytes: round(t.Bytes),
		Seed:  t.Seed,
		Scale: t.Scale * div,
	}
}

// Validate reports a tree that cannot be made.
func (t Tree) Validate() error {
	switch {
	case t.Files < 1:
		return fmt.Errorf("%d files: a tree needs at least one", t.Files)
	case t.Dirs < 1:
		return fmt.Errorf("%d directories: a tree needs at least the top one", t.Dirs)
	case t.Bytes < 0:
		return errors.New("negative size")
	}
	return nil
}

// String describes the tree for a report.
func (t Tree) String() string {
	s := fmt.Sprintf("synthetic glibc 2.3 tree: %d files, %d dirs, %d bytes", t.Files, t.Dirs, t.Bytes)
	if t.Scale > 1 {
		s += fmt.Sprintf(", scaled 1/%d", t.Scale)
	}
	return s
}

// treeDir is one directory of the laid-out tree.
type treeDir struct {
	path    string
	subdirs []int // indexes into the tree's directories
	files   []treeFile
}

type treeFile struct {
	name string
	size int64
}

// Shape of the layout. glibc's top level holds some sixty subsystems,
// and its deepest paths (sysdeps/unix/sysv/linux/<arch>/...) reach five or
// six levels; file sizes have a median of a few kB and a long tail.
const (
	topLevelDirs = 60
	maxDepth     = 5
	sizeSigma    = 1.5 // of the log of a file's size
)

// layout lays the tree out: directories in creation order (index 0 is the
// top) with their files. Everything is drawn from t.Seed.
func (t Tree) layout() []treeDir {
	rng := rand.New(rand.NewPCG(t.Seed, t.Seed^0x9e3779b97f4a7c15))
	// Suffixes give the files the look of a C library's source.
	suffixes := [...]string{".c", ".c", ".c", ".h", ".h", ".S", ".texi", ".awk", ".sh", ""}

	dirs := make([]treeDir, t.Dirs)
	depth := make([]int, t.Dirs)
	dirs[0].path = "glibc-2.3"
	canParent := []int{0} // directories shallow enough to hold another
	for i := 1; i < t.Dirs; i++ {
		parent := 0
		if i > topLevelDirs {
			parent = canParent[rng.IntN(len(canParent))]
		}
		dirs[i].path = dirs[parent].path + "/d" + strconv.Itoa(i)
		depth[i] = depth[parent] + 1
		dirs[parent].subdirs = append(dirs[parent].subdirs, i)
		if depth[i] < maxDepth {
			canParent = append(canParent, i)
		}
	}

	// Log-normal sizes with the target mean, then scaled so that they sum
	// to exactly t.Bytes: floors first, the remainder a byte each to the
	// first files.
	mean := float64(t.Bytes) / float64(t.Files)
	mu := math.Log(max(mean, 1)) - sizeSigma*sizeSigma/2
	raw := make([]float64, t.Files)
	var sum float64
	for i := range raw {
		raw[i] = math.Exp(mu + sizeSigma*rng.NormFloat64())
		sum += raw[i]
	}
	sizes := make([]int64, t.Files)
	var total int64
	for i, r := range raw {
		sizes[i] = int64(r / sum * float64(t.Bytes))
		total += sizes[i]
	}
	for i := 0; total < t.Bytes; i = (i + 1) % len(sizes) {
		sizes[i]++
		total++
	}

	for i, size := range sizes {
		d := rng.IntN(t.Dirs)
		name := "f" + strconv.Itoa(i) + suffixes[rng.IntN(len(suffixes))]
		dirs[d].files = append(dirs[d].files, treeFile{name: name, size: size})
	}
	for i := range dirs {
		slices.SortFunc(dirs[i].files, func(a, b treeFile) int { return cmp.Compare(a.name, b.name) })
	}
	return dirs
}
