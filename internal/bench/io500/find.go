package io500

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Query is IO500's find: files whose name holds Name, of Size bytes,
// modified after Newer (find's -name "*01*" -size 3901c -newer FILE).
type Query struct {
	Name  string
	Size  int64
	Newer time.Time
}

// Found is what a find counted.
type Found struct {
	Scanned int64 // files (not directories) looked at
	Matched int64
	Took    time.Duration
}

// Find walks root with workers directories read at once and counts the
// files that match q. The name is tested before the file is stat'ed, as
// a find that orders its tests well does; the count and the matches are
// what find -name -size -newer gives. Symbolic links are not followed.
func Find(ctx context.Context, root string, q Query, workers int) (Found, error) {
	start := time.Now()
	workers = max(workers, 1)
	var (
		mu       sync.Mutex
		found    Found
		firstErr error
		pending  sync.WaitGroup
	)
	dirs := make(chan string, workers)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	var queue func(string)
	visit := func(dir string) {
		defer pending.Done()
		if ctx.Err() != nil {
			fail(ctx.Err())
			return
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			fail(fmt.Errorf("find: %w", err))
			return
		}
		var scanned, matched int64
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				queue(p)
				continue
			}
			scanned++
			if !strings.Contains(e.Name(), q.Name) || !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				fail(fmt.Errorf("find: %w", err))
				return
			}
			if fi.Size() == q.Size && fi.ModTime().After(q.Newer) {
				matched++
			}
		}
		mu.Lock()
		found.Scanned += scanned
		found.Matched += matched
		mu.Unlock()
	}
	// A directory is handed to an idle worker, or read by the one that
	// found it: a worker never blocks on the channel, so a deep tree
	// cannot deadlock the pool.
	queue = func(dir string) {
		pending.Add(1)
		select {
		case dirs <- dir:
		default:
			visit(dir)
		}
	}
	var workersDone sync.WaitGroup
	for range workers {
		workersDone.Add(1)
		go func() {
			defer workersDone.Done()
			for d := range dirs {
				visit(d)
			}
		}()
	}
	queue(root)
	pending.Wait()
	close(dirs)
	workersDone.Wait()
	found.Took = time.Since(start)
	return found, firstErr
}
