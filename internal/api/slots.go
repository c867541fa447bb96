package api

import (
	"net"
	"sync"
)

// slots counts open connections, all together and by a key (a peer's uid,
// a remote host), within a total and a per-key bound (0: none). Both
// listeners of the daemon admit by it.
type slots[K comparable] struct {
	total, perKey int

	mu    sync.Mutex
	open  int
	byKey map[K]int
}

func newSlots[K comparable](total, perKey int) *slots[K] {
	return &slots[K]{total: total, perKey: perKey, byKey: map[K]int{}}
}

// take admits one more connection of key k, unless a bound is reached
// (exempt keys are held to the total only); why says which.
func (s *slots[K]) take(k K, exempt bool) (ok bool, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.total > 0 && s.open >= s.total:
		return false, "total"
	case !exempt && s.perKey > 0 && s.byKey[k] >= s.perKey:
		return false, "per key"
	}
	s.open++
	s.byKey[k]++
	return true, ""
}

// give returns the place of a connection of key k.
func (s *slots[K]) give(k K) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.byKey[k]--; s.byKey[k] <= 0 {
		delete(s.byKey, k)
	}
}

// counts reports the open connections of key k and of all.
func (s *slots[K]) counts(k K) (ofKey, all int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byKey[k], s.open
}

// slotConn gives its place back when it is closed, once.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	c.once.Do(c.free)
	return c.Conn.Close()
}
