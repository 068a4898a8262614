// Package shard partitions a keyspace into independently locked shards.
//
// A key hashes to one shard; each shard is a small hash map guarded by its own
// mutex, so at any instant one goroutine touches a shard's state and there is
// no global lock on the hot path. Operations on several keys lock their shards
// in ascending index order, which rules out deadlock between them.
//
// shard knows nothing about what it stores (V is opaque), about time or about
// the protocol; it must never import engine or resp.
package shard

import (
	"hash/maphash"
	"slices"
	"sync"
)

// DefaultShards is the shard count used when none is given: enough that two
// busy keys rarely share a lock on a machine with dozens of cores.
const DefaultShards = 256

// Table is a keyspace split over a power-of-two number of shards.
type Table[V any] struct {
	shards []Shard[V]
	mask   uint64
	seed   maphash.Seed
}

// New returns a table with n shards, rounded up to a power of two (at least 1).
func New[V any](n int) *Table[V] {
	size := 1
	for size < n {
		size <<= 1
	}
	t := &Table[V]{shards: make([]Shard[V], size), mask: uint64(size - 1), seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].init()
	}
	return t
}

// Count is the number of shards.
func (t *Table[V]) Count() int { return len(t.shards) }

// Index is the shard that owns key.
func (t *Table[V]) Index(key []byte) int {
	return int(maphash.Bytes(t.seed, key) & t.mask)
}

// Shard returns shard i, unlocked.
func (t *Table[V]) Shard(i int) *Shard[V] { return &t.shards[i] }

// Lock locks and returns the shard that owns key.
func (t *Table[V]) Lock(key []byte) *Shard[V] {
	s := &t.shards[t.Index(key)]
	s.mu.Lock()
	return s
}

// LockKeys locks the shards owning keys in ascending order and returns their
// sorted, distinct indexes, to be passed to UnlockIndexes.
func (t *Table[V]) LockKeys(keys [][]byte) []int {
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, t.Index(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		t.shards[i].mu.Lock()
	}
	return idx
}

// UnlockIndexes unlocks the shards LockKeys locked.
func (t *Table[V]) UnlockIndexes(idx []int) {
	for i := len(idx) - 1; i >= 0; i-- {
		t.shards[idx[i]].mu.Unlock()
	}
}

// Len counts the keys of every shard, locking each in turn; the total is a
// moment-by-moment sum, not an atomic snapshot.
func (t *Table[V]) Len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += s.Len()
		s.mu.Unlock()
	}
	return n
}

// Shard is one partition: a map from key to a slot in a value slab. Values
// live in the slab so that updating an existing key never allocates.
// Every method but Lock requires the caller to hold the lock.
type Shard[V any] struct {
	mu   sync.Mutex
	idx  map[string]int32
	vals []V
	free []int32
	_    [64]byte // keep neighbouring shards' locks on separate cache lines
}

func (s *Shard[V]) init() { s.idx = make(map[string]int32) }

// Lock and Unlock guard the shard.
func (s *Shard[V]) Lock()   { s.mu.Lock() }
func (s *Shard[V]) Unlock() { s.mu.Unlock() }

// TryLock locks the shard if it is free and reports whether it did.
func (s *Shard[V]) TryLock() bool { return s.mu.TryLock() }

// Get returns the value stored for key, or nil. The pointer stays valid
// until the next Insert or Reset on this shard.
func (s *Shard[V]) Get(key []byte) *V {
	i, ok := s.idx[string(key)]
	if !ok {
		return nil
	}
	return &s.vals[i]
}

// Insert adds key with a zero value, or returns its existing value.
func (s *Shard[V]) Insert(key []byte) *V {
	if i, ok := s.idx[string(key)]; ok {
		return &s.vals[i]
	}
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		var zero V
		s.vals = append(s.vals, zero)
		i = int32(len(s.vals) - 1)
	}
	s.idx[string(key)] = i
	return &s.vals[i]
}

// Delete removes key and reports whether it was there.
func (s *Shard[V]) Delete(key []byte) bool {
	i, ok := s.idx[string(key)]
	if !ok {
		return false
	}
	delete(s.idx, string(key))
	var zero V
	s.vals[i] = zero // drop references held by the value
	s.free = append(s.free, i)
	return true
}

// Len is the number of keys in the shard.
func (s *Shard[V]) Len() int { return len(s.idx) }

// Range calls fn for every key until fn returns false. fn may Delete the
// key it is given but must not Insert. The order is unspecified and differs
// from call to call, which makes a short Range a cheap random sample.
func (s *Shard[V]) Range(fn func(key string, v *V) bool) {
	for k, i := range s.idx {
		if !fn(k, &s.vals[i]) {
			return
		}
	}
}

// Reset drops every key.
func (s *Shard[V]) Reset() {
	s.idx = make(map[string]int32)
	s.vals = nil
	s.free = nil
}
