// Package shard partitions a keyspace into independently locked shards.
//
// A key hashes to one shard; each shard is a compact hash table guarded by its
// own mutex (see Shard for its memory layout), so at any instant one goroutine touches a shard's state and there is
// no global lock on the hot path. Operations on several keys lock their shards
// in ascending index order, which rules out deadlock between them.
//
// shard knows nothing about what it stores (V is opaque), about time or about
// the protocol; it must never import engine or resp.
package shard

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"unsafe"
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
		t.shards[i].seed = t.seed
	}
	return t
}

// Count is the number of shards.
func (t *Table[V]) Count() int { return len(t.shards) }

// Hash is key's hash. An operation computes it once and passes it to
// IndexOf and to the shard's methods that take one, instead of hashing the
// key again at every step (find, delete, insert).
func (t *Table[V]) Hash(key []byte) uint64 { return maphash.Bytes(t.seed, key) }

// IndexOf is the shard that owns a key of hash h.
func (t *Table[V]) IndexOf(h uint64) int { return int(h & t.mask) }

// Index is the shard that owns key.
func (t *Table[V]) Index(key []byte) int { return t.IndexOf(t.Hash(key)) }

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

// Shard is one partition: a compact open-addressing hash table.
//
// Memory layout, chosen so that a small live key costs a few dozen bytes
// rather than a Go map entry plus a string allocation:
//
//   - ctrl and slot are the index, one byte and one uint32 per slot, linear
//     probing, at most 7/8 full, growing by half. ctrl is 0 for an empty slot, 1 for a deleted
//     one and 0x80|7 bits of the key's hash for a full one, so a probe rarely
//     touches a key it does not want. slot holds the record number.
//   - records are two parallel slabs: vals (the V values, updated in place, so
//     updating an existing key never allocates) and koff (where the key starts
//     in the arena). Freed records are reused, and so is a freed record's
//     place in the arena when the new key fits in it: keys that expire and
//     come back (the usual life of a rate-limit key) are stored again
//     without growing anything.
//   - arena holds every key as a tag byte, a uvarint length and its bytes.
//     Compact rebuilds the arena, slabs and index when deleted keys hold
//     more than half of them, which is how memory comes back after keys
//     expire; its reserve argument keeps room for keys that come and go.
//
// When V holds no pointers these arrays live outside the Go heap (see
// storage.go), so key strings from Range are valid only during the call.
//
// Every method but Lock requires the caller to hold the lock.
type Shard[V any] struct {
	mu   sync.Mutex
	seed maphash.Seed

	ctrl []uint8
	slot []uint32
	used int // full and deleted slots: what the load factor counts
	n    int // live keys

	vals     []V
	koff     []uint32 // arena offset; freeBit set on a free record, which keeps its old place
	free     []uint32
	arena    []byte
	dead     int // arena bytes not holding a live key
	reusable int // of dead, the bytes free records can reuse in place

	_ [64]byte // keep neighbouring shards' locks on separate cache lines
}

const (
	ctrlEmpty   = 0
	ctrlDeleted = 1
	ctrlFull    = 0x80
	minSlots    = 8
	freeBit     = 1 << 31 // in koff: the record is free
	maxArena    = freeBit // the arena's offsets must stay below freeBit
)

// Lock and Unlock guard the shard.
func (s *Shard[V]) Lock()   { s.mu.Lock() }
func (s *Shard[V]) Unlock() { s.mu.Unlock() }

// TryLock locks the shard if it is free and reports whether it did.
func (s *Shard[V]) TryLock() bool { return s.mu.TryLock() }

// split derives a key's index position and control tag from its hash (see
// Table.Hash). The table uses the low bits to pick the shard; these use
// others.
func split(h uint64) (pos uint64, tag uint8) { return h >> 32, uint8(h>>25) | ctrlFull }

func (s *Shard[V]) hash(key []byte) (pos uint64, tag uint8) {
	return split(maphash.Bytes(s.seed, key))
}

// home maps a 32-bit hash onto [0, size) without division or a power-of-two
// size (Lemire's multiply-shift), so the index can grow by half at a time
// and stay between 58% and 87% full instead of 44% and 87%.
func home(pos uint64, size int) int { return int((pos * uint64(size)) >> 32) }

// nextSlot is linear probing's step, wrapping at the end.
func nextSlot(p, size int) int {
	if p++; p == size {
		return 0
	}
	return p
}

// key returns record r's key bytes, aliasing the arena.
func (s *Shard[V]) key(r uint32) []byte { return s.keyAt(int(s.koff[r])) }

// keyAt returns the key stored at arena offset off, aliasing the arena.
func (s *Shard[V]) keyAt(off int) []byte {
	off++ // past the tag byte
	l := int(s.arena[off])
	if l < 0x80 {
		return s.arena[off+1 : off+1+l]
	}
	ul, n := uvarint(s.arena[off:])
	return s.arena[off+n : off+n+int(ul)]
}

// encodedLen is the arena bytes a key of length n takes: tag, uvarint
// length, bytes.
func encodedLen(n int) int {
	var l [binary.MaxVarintLen64]byte
	return 1 + binary.PutUvarint(l[:], uint64(n)) + n
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	var sh uint
	for i, c := range b {
		if c < 0x80 {
			return x | uint64(c)<<sh, i + 1
		}
		x |= uint64(c&0x7f) << sh
		sh += 7
	}
	return 0, 0
}

// find returns the slot holding key, or -1.
func (s *Shard[V]) find(key []byte, pos uint64, tag uint8) int {
	if len(s.ctrl) == 0 {
		return -1
	}
	size := len(s.ctrl)
	for p := home(pos, size); ; p = nextSlot(p, size) {
		switch c := s.ctrl[p]; {
		case c == ctrlEmpty:
			return -1
		case c == tag && string(s.key(s.slot[p])) == string(key):
			return p
		}
	}
}

// Get returns the value stored for key, or nil. The pointer stays valid
// until the next Insert, Compact or Reset on this shard.
func (s *Shard[V]) Get(key []byte) *V {
	v, _ := s.GetTagged(key, maphash.Bytes(s.seed, key))
	return v
}

// GetTagged is Get for a key of hash h (Table.Hash) that also returns the
// key's tag: one byte stored beside the key for the caller's use (engine
// keeps an entry's kind there, saving a padded word per value). Both
// pointers follow Get's validity rule.
func (s *Shard[V]) GetTagged(key []byte, h uint64) (*V, *byte) {
	pos, tag := split(h)
	p := s.find(key, pos, tag)
	if p < 0 {
		return nil, nil
	}
	r := s.slot[p]
	return &s.vals[r], &s.arena[s.koff[r]]
}

// Insert adds key with a zero value, or returns its existing value.
func (s *Shard[V]) Insert(key []byte) *V {
	v, _ := s.InsertTagged(key, maphash.Bytes(s.seed, key))
	return v
}

// InsertTagged is Insert for a key of hash h (Table.Hash) that also returns
// the key's tag (0 for a new key).
func (s *Shard[V]) InsertTagged(key []byte, h uint64) (*V, *byte) {
	pos, tag := split(h)
	if p := s.find(key, pos, tag); p >= 0 {
		r := s.slot[p]
		return &s.vals[r], &s.arena[s.koff[r]]
	}
	if (s.used+1)*8 > len(s.ctrl)*7 {
		size := len(s.ctrl)
		if (s.n+1)*2 > size { // mostly live: grow; mostly deleted: just rehash
			size += size / 2
		}
		s.rehash(max(size, minSlots))
	}
	r := s.place(key)
	size := len(s.ctrl)
	p := home(pos, size)
	for s.ctrl[p] >= ctrlFull {
		p = nextSlot(p, size)
	}
	if s.ctrl[p] == ctrlEmpty {
		s.used++
	}
	s.ctrl[p], s.slot[p] = tag, r
	s.n++
	return &s.vals[r], &s.arena[s.koff[r]]
}

// place stores key in a record, a free one if there is one, and returns the
// record. The key goes where the record's last key was if it fits there,
// else at the end of the arena.
func (s *Shard[V]) place(key []byte) uint32 {
	need := encodedLen(len(key))
	var r uint32
	off := -1
	if k := len(s.free); k > 0 {
		r = s.free[k-1]
		s.free = s.free[:k-1]
		old := int(s.koff[r] &^ freeBit)
		had := encodedLen(len(s.keyAt(old)))
		s.reusable -= had
		if need <= had {
			off = old
			s.dead -= need
		}
	} else {
		var zero V
		s.vals = appendArray(s.vals, zero)
		s.koff = appendArray(s.koff, 0)
		r = uint32(len(s.vals) - 1)
	}
	var l [1 + binary.MaxVarintLen64]byte // tag, then the key's length
	hdr := l[:1+binary.PutUvarint(l[1:], uint64(len(key)))]
	if off < 0 {
		if len(s.arena)+need >= maxArena {
			panic("shard: more than 2 GiB of keys in one shard; use more shards")
		}
		off = len(s.arena)
		s.arena = appendArray(s.arena, hdr...)
		s.arena = appendArray(s.arena, key...)
	} else {
		copy(s.arena[off+copy(s.arena[off:], hdr):], key)
	}
	s.koff[r] = uint32(off)
	return r
}

// Delete removes key and reports whether it was there.
func (s *Shard[V]) Delete(key []byte) bool {
	return s.DeleteHashed(key, maphash.Bytes(s.seed, key))
}

// DeleteHashed is Delete for a key of hash h (Table.Hash).
func (s *Shard[V]) DeleteHashed(key []byte, h uint64) bool {
	pos, tag := split(h)
	p := s.find(key, pos, tag)
	if p < 0 {
		return false
	}
	s.deleteSlot(p)
	return true
}

func (s *Shard[V]) deleteSlot(p int) {
	r := s.slot[p]
	size := encodedLen(len(s.key(r)))
	s.dead += size
	s.reusable += size
	var zero V
	s.vals[r] = zero // drop references held by the value
	s.koff[r] |= freeBit
	s.free = append(s.free, r)
	// A probe that reached p would stop at an empty next slot anyway.
	if s.ctrl[nextSlot(p, len(s.ctrl))] == ctrlEmpty {
		s.ctrl[p] = ctrlEmpty
		s.used--
	} else {
		s.ctrl[p] = ctrlDeleted
	}
	s.n--
}

// rehash rebuilds the index with size slots.
func (s *Shard[V]) rehash(size int) {
	ctrl, slot := s.ctrl, s.slot
	defer freeArray(ctrl)
	defer freeArray(slot)
	s.ctrl, s.slot, s.used = makeArray[uint8](size, size), makeArray[uint32](size, size), 0

	for p, c := range ctrl {
		if c < ctrlFull {
			continue
		}
		r := slot[p]
		pos, tag := s.hash(s.key(r))
		q := home(pos, size)
		for s.ctrl[q] != ctrlEmpty {
			q = nextSlot(q, size)
		}
		s.ctrl[q], s.slot[q] = tag, r
		s.used++
	}
}

// Compact gives memory back once deleted keys dominate: when more than half
// of the records, or of the arena bytes no free record can reuse, are dead,
// or the index is under 1/8 full, it copies the live keys and values into
// right-sized storage. It reports whether it did. Pointers from Get and
// Insert are invalid afterwards.
//
// reserve is how many keys to keep room for, live or not: a shard whose
// keys expire and come back all the time would otherwise be shrunk by each
// expiry cycle and grown again by the next inserts, copying everything
// twice per cycle. The caller passes the number of keys it saw recently
// (engine: a decaying peak), so memory still comes back once the keys
// stop coming.
func (s *Shard[V]) Compact(reserve int) bool {
	want := max(s.n, reserve)
	if !(len(s.vals) > 2*want && len(s.vals) > minSlots ||
		(s.dead-s.reusable)*2 > len(s.arena) && len(s.arena) > 1024 ||
		want*8 < len(s.ctrl) && len(s.ctrl) > minSlots) {
		return false
	}
	vals := makeArray[V](0, max(s.n+s.n/8, want))
	koff := makeArray[uint32](0, cap(vals))
	arena := makeArray[byte](0, len(s.arena)-s.dead+len(s.arena)/16)
	var l [1 + binary.MaxVarintLen64]byte
	// Live records keep their order (the order keys arrived in), so that
	// walking records stays a sequential read.
	remap := makeArray[uint32](len(s.vals), len(s.vals))
	for r := range s.vals {
		if s.koff[r]&freeBit != 0 {
			continue
		}
		k := s.key(uint32(r))
		koff = appendArray(koff, uint32(len(arena)))
		l[0] = s.arena[s.koff[r]]
		arena = appendArray(arena, l[:1+binary.PutUvarint(l[1:], uint64(len(k)))]...)
		arena = appendArray(arena, k...)
		vals = appendArray(vals, s.vals[r])
		remap[r] = uint32(len(vals) - 1)
	}
	for p, c := range s.ctrl {
		if c >= ctrlFull {
			s.slot[p] = remap[s.slot[p]]
		}
	}
	freeArray(remap)
	freeArray(s.vals)
	freeArray(s.koff)
	freeArray(s.arena)
	s.vals, s.koff, s.arena, s.free, s.dead, s.reusable = vals, koff, arena, nil, 0, 0
	size := max(want*8/7+want/4, minSlots) // about 70% full after a compaction
	s.rehash(size)
	return true
}

// Len is the number of keys in the shard.
func (s *Shard[V]) Len() int { return s.n }

// Bytes is the memory the shard's storage holds (capacity, not just use).
func (s *Shard[V]) Bytes() int {
	var v V
	return cap(s.ctrl) + 4*cap(s.slot) + int(unsafe.Sizeof(v))*cap(s.vals) + 4*cap(s.koff) + 4*cap(s.free) + cap(s.arena)
}

// LiveBytes estimates the memory the live keys need: their values, key
// bytes and bookkeeping, without the capacity held for growth or by
// deleted keys. It falls as soon as keys are deleted.
func (s *Shard[V]) LiveBytes() int {
	var v V
	return (len(s.arena) - s.dead) + s.n*(int(unsafe.Sizeof(v))+4+6) // 6: index bytes per key at 7/8 load
}

// Range calls fn for every key until fn returns false. fn may Delete the
// key it is given but must not Insert or Compact. The key string shares the
// shard's key storage: it is valid only during the call (strings.Clone it
// to keep it).
func (s *Shard[V]) Range(fn func(key string, v *V) bool) {
	s.Scan(0, -1, func(key string, v *V, _ byte) bool { return fn(key, v) })
}

// Scan is Range over at most count keys starting at record cursor; it
// returns the cursor to continue from, 0 once it has reached the end.
// Active expiry walks a shard a bounded step at a time with it. It walks
// the records, not the index, so that it reads memory in order.
func (s *Shard[V]) Scan(cursor, count int, fn func(key string, v *V, tag byte) bool) int {
	for r := cursor; r < len(s.vals); r++ {
		if s.koff[r]&freeBit != 0 {
			continue
		}
		if count == 0 {
			return r
		}
		count--
		k := s.key(uint32(r))
		if !fn(unsafe.String(unsafe.SliceData(k), len(k)), &s.vals[r], s.arena[s.koff[r]]) {
			if r+1 == len(s.vals) {
				return 0
			}
			return r + 1
		}
	}
	return 0
}

// Records is the number of record positions Scan walks (live or free).
func (s *Shard[V]) Records() int { return len(s.vals) }

// Reset drops every key.
func (s *Shard[V]) Reset() {
	freeArray(s.ctrl)
	freeArray(s.slot)
	freeArray(s.vals)
	freeArray(s.koff)
	freeArray(s.arena)
	s.ctrl, s.slot, s.used, s.n = nil, nil, 0, 0
	s.vals, s.koff, s.free, s.arena, s.dead, s.reusable = nil, nil, nil, nil, 0, 0
}
