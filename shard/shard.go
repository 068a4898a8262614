// Package shard partitions a keyspace into independently locked shards.
//
// A key hashes to one shard; each shard is a compact hash table guarded by its
// own mutex (see Shard for its memory layout), so at any instant one
// goroutine touches a shard's state and there is no global lock on the hot
// path. Operations on several keys lock their shards
// in ascending index order, which rules out deadlock between them.
//
// shard knows nothing about what it stores (V is opaque), about time or about
// the protocol; it must never import engine or resp.
package shard

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"reflect"
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

// New returns a table with n shards, rounded up to a power of two (at least
// 1). It panics if V holds pointers: values are kept in byte arrays the
// garbage collector does not scan (see Shard).
func New[V any](n int) *Table[V] {
	if !pointerFree(reflect.TypeFor[V]()) {
		panic("shard: values must not hold pointers")
	}
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

// ErrFull is what an insert into a shard whose arena is at its bound
// (256 MiB) panics with; the protocol layer answers it as an OOM error.
// With the default 256 shards the keyspace holds 64 GiB of keys.
var ErrFull = errors.New("a keyspace shard is full (256 MiB of keys); use more shards (--shards)")

// Shard is one partition: a compact open-addressing hash table.
//
// Memory layout, chosen so that a small live key costs a few dozen bytes
// rather than a Go map entry plus a string allocation, and so that a lookup
// touches two places (an index slot, one arena entry) rather than
// one array per field:
//
//   - slot is the index: one uint32 per slot, linear probing, at most 7/8
//     full, growing by half. A slot is 0 when empty, 1 when deleted, and
//     for a key holds its entry's arena offset (in units of align, plus
//     one) above 7 bits of the key's hash, its tag, so that a probe rarely
//     touches a key it does not want. Offset and tag share one word so that
//     a probe reads one cache line, not a control byte array and then a
//     slot array, each a cache miss under random keys (go test ./shard
//     -bench GetRandom, go test ./engine -bench ThrottleChurn;
//     docs/performance-history.md). 7 tag bits, not 5: with 5, an insert,
//     whose probe passes several full slots, compares too many keys. The 25
//     bits left for the offset bound a shard's arena to 256 MiB (ErrFull).
//   - arena holds one entry per key, value and key side by side, so that
//     finding the key brings its value into the cache with it (layout
//     below). A value is updated in place: updating an existing key never
//     allocates.
//   - a deleted key's entry stays where it is, marked free, and goes on a
//     free list of entries of its size, threaded through the free entries'
//     value fields. A new key of that size takes it back, so keys that expire
//     and come back (the usual life of a rate-limit key) are stored again
//     without growing anything. Reuse is exact-size so that the arena stays
//     a walkable sequence of entries: Scan reads it in order, skipping free
//     entries by their size.
//   - Compact rebuilds the arena and index when the free entries are more
//     than the keys the caller expects back (its reserve) need, which is how
//     memory comes back after keys expire.
//
// An entry is
//
//	[V, padded to a multiple of 8][tag byte][uvarint len<<2 | words<<1 | free][key bytes]
//	    [uvarint number of words, if words is set][padding to 8][the words]
//
// V comes first so that it is 8-aligned: the arena's base is page- or
// malloc-aligned and every entry's size is a multiple of 8. The tag byte is
// the caller's (see GetTagged). The low bit of the length field marks a
// free entry, so a key under 32 bytes has a one-byte length field. The
// words are a caller's state that does not fit V, kept with the key
// (InsertWords, Words): a lookup that brings in the key brings in their
// page, and often their first cache line, with it. Most entries have none,
// and pay no byte for the possibility.
//
// V must hold no pointers (New panics otherwise): values live in a byte
// arena the garbage collector does not scan. These arrays live outside the
// Go heap (see storage.go), so key strings from Range are valid only during
// the call.
//
// Every method but Lock requires the caller to hold the lock.
type Shard[V any] struct {
	mu   sync.Mutex
	seed maphash.Seed

	slot []uint32
	used int // full and deleted slots: what the load factor counts
	n    int // live keys

	arena   []byte
	free    []uint32          // per size class (size/align): first free entry's offset+1, 0 when none
	bigFree map[uint32]uint32 // the same for entries of maxClass*align bytes and more
	nfree   int               // free entries
	dead    int               // arena bytes in free entries
	gen     uint32            // bumped when the arena is rebuilt: Scan cursors from before are stale

	_ [64]byte // keep neighbouring shards' locks on separate cache lines
}

const (
	slotEmpty   = 0
	slotDeleted = 1
	tagBits     = 7
	tagMask     = 1<<tagBits - 1
	minSlots    = 8
	align       = 8   // of every entry's offset and size
	maxClass    = 128 // entries under maxClass*align bytes have their free list in Shard.free
	freeFlag    = 1   // in an entry's length field
	wordsFlag   = 2   // in an entry's length field: the entry has words

	// maxArena bounds the arena so that an entry's offset/align+1 fits in
	// a slot's bits above the tag: 256 MiB, some 4 million small keys.
	maxArena = (1<<(32-tagBits) - 1) * align
)

// Lock and Unlock guard the shard.
func (s *Shard[V]) Lock()   { s.mu.Lock() }
func (s *Shard[V]) Unlock() { s.mu.Unlock() }

// TryLock locks the shard if it is free and reports whether it did.
func (s *Shard[V]) TryLock() bool { return s.mu.TryLock() }

// split derives a key's index position and tag from its hash (see
// Table.Hash). The table uses the low bits to pick the shard; these use
// others.
func split(h uint64) (pos uint64, tag uint32) { return h >> 32, uint32(h>>(32-tagBits)) & tagMask }

// full is the slot of a key of tag whose entry is at off; offOf and
// isFull read it back.
func full(off int, tag uint32) uint32 { return uint32(off/align+1)<<tagBits | tag }
func offOf(v uint32) int              { return int(v>>tagBits-1) * align }
func isFull(v uint32) bool            { return v > slotDeleted }

func (s *Shard[V]) hash(key []byte) (pos uint64, tag uint32) {
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

func roundUp(n int) int { return (n + align - 1) &^ (align - 1) }

// valSize is the bytes an entry gives its value: V's size rounded up to
// the alignment, and at least room for a free list link.
func valSize[V any]() int {
	var v V
	return max(roundUp(int(unsafe.Sizeof(v))), align)
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// EntrySize is the arena bytes a key of length n takes with its value V:
// the memory a live key costs beyond its share of the index.
func EntrySize[V any](n int) int { return EntrySizeWords[V](n, 0) }

// EntrySizeWords is EntrySize for a key that keeps words words with it
// (InsertWords).
func EntrySizeWords[V any](n, words int) int {
	size := valSize[V]() + 1 + uvarintLen(uint64(n)<<2) + n
	if words > 0 {
		size += uvarintLen(uint64(words))
	}
	return roundUp(size) + 8*words
}

// entryAt decodes the header of the entry at off: where its key starts,
// the key's length, the entry's size and whether the entry is free.
func (s *Shard[V]) entryAt(off int) (k, n, size int, free bool) {
	k, n, size, free, _, _ = header(s.arena, off, valSize[V]())
	return k, n, size, free
}

// header is entryAt for the entry at off of arena a, whose values take vs
// bytes, that also returns where the entry's words start and how many
// there are.
func header(a []byte, off, vs int) (k, n, size int, free bool, at, words int) {
	h := off + vs + 1
	x, w := uint64(a[h]), 1
	if x >= 0x80 {
		x, w = uvarint(a[h:])
	}
	k, n = h+w, int(x>>2)
	end := k + n
	if x&wordsFlag != 0 {
		c, cw := uvarint(a[end:])
		end += cw
		words = int(c)
	}
	at = off + roundUp(end-off)
	return k, n, at - off + 8*words, x&freeFlag != 0, at, words
}

// keyAt returns the key of the entry at off, aliasing the arena.
func (s *Shard[V]) keyAt(off int) []byte {
	k, n, _, _ := s.entryAt(off)
	return s.arena[k : k+n]
}

// valAt and tagAt point into the entry at off.
func (s *Shard[V]) valAt(off int) *V { return (*V)(unsafe.Pointer(&s.arena[off])) }
func (s *Shard[V]) tagAt(off int) *byte {
	return &s.arena[off+valSize[V]()]
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
func (s *Shard[V]) find(key []byte, pos uint64, tag uint32) int {
	size := len(s.slot)
	if size == 0 {
		return -1
	}
	for p := home(pos, size); ; p = nextSlot(p, size) {
		switch v := s.slot[p]; {
		case v == slotEmpty:
			return -1
		case v&tagMask == tag && isFull(v) && s.keyIs(offOf(v), key):
			return p
		}
	}
}

// keyIs reports whether the entry at off holds key. A short key (under 32
// bytes: a one-byte length field) is compared without decoding a uvarint.
func (s *Shard[V]) keyIs(off int, key []byte) bool {
	h := off + valSize[V]() + 1
	if x := s.arena[h]; x < 0x80 {
		return int(x>>2) == len(key) && string(s.arena[h+1:h+1+len(key)]) == string(key)
	}
	return string(s.keyAt(off)) == string(key)
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
	off := offOf(s.slot[p])
	return s.valAt(off), s.tagAt(off)
}

// Insert adds key with a zero value, or returns its existing value.
func (s *Shard[V]) Insert(key []byte) *V {
	v, _ := s.InsertTagged(key, maphash.Bytes(s.seed, key))
	return v
}

// InsertTagged is Insert for a key of hash h (Table.Hash) that also returns
// the key's tag (0 for a new key).
func (s *Shard[V]) InsertTagged(key []byte, h uint64) (*V, *byte) {
	return s.InsertWords(key, h, 0)
}

// InsertWords is InsertTagged for a key that keeps words int64 words with
// it, zeroed, which Words returns. A key already present is returned as it
// is, with the words it has: to change their number, Delete the key first.
func (s *Shard[V]) InsertWords(key []byte, h uint64, words int) (*V, *byte) {
	pos, tag := split(h)
	if p := s.find(key, pos, tag); p >= 0 {
		off := offOf(s.slot[p])
		return s.valAt(off), s.tagAt(off)
	}
	if (s.used+1)*8 > len(s.slot)*7 {
		size := len(s.slot)
		if (s.n+1)*2 > size { // mostly live: grow; mostly deleted: just rehash
			size += size / 2
		}
		s.rehash(max(size, minSlots))
	}
	off := s.place(key, words)
	size := len(s.slot)
	p := home(pos, size)
	for isFull(s.slot[p]) {
		p = nextSlot(p, size)
	}
	if s.slot[p] == slotEmpty {
		s.used++
	}
	s.slot[p] = full(off, tag)
	s.n++
	return s.valAt(off), s.tagAt(off)
}

// place stores key in an entry with a zero value, tag and words, a free
// entry of its size if there is one, else a new one at the end of the
// arena, and returns the entry's offset.
func (s *Shard[V]) place(key []byte, words int) int {
	size := EntrySizeWords[V](len(key), words)
	off, ok := s.popFree(size)
	if !ok {
		if len(s.arena)+size >= maxArena {
			panic(ErrFull)
		}
		off = len(s.arena)
		if off+size > cap(s.arena) {
			next := makeArray[byte](off, max(2*cap(s.arena), off+size, 64))
			copy(next, s.arena)
			freeArray(s.arena)
			s.arena = next
		}
		s.arena = s.arena[:off+size]
	}
	e := s.arena[off : off+size]
	vs := valSize[V]()
	clear(e[:vs+1]) // value and tag
	x := uint64(len(key)) << 2
	if words > 0 {
		x |= wordsFlag
	}
	end := vs + 1 + binary.PutUvarint(e[vs+1:], x)
	end += copy(e[end:], key)
	if words > 0 {
		end += binary.PutUvarint(e[end:], uint64(words))
	}
	clear(e[end:]) // padding and words: a reused entry's are old bytes
	return off
}

// Words returns the words of the entry whose value v points at (from Get,
// GetTagged or Insert, under the same validity rule), nil if it has none.
// They alias the arena: they stay valid as long as v does.
func (s *Shard[V]) Words(v *V) []int64 {
	off := int(uintptr(unsafe.Pointer(v)) - uintptr(unsafe.Pointer(unsafe.SliceData(s.arena))))
	if s.arena[off+valSize[V]()+1]&wordsFlag == 0 {
		return nil
	}
	_, _, _, _, at, words := header(s.arena, off, valSize[V]())
	return unsafe.Slice((*int64)(unsafe.Pointer(&s.arena[at])), words)
}

// popFree takes a free entry of size bytes off its list.
func (s *Shard[V]) popFree(size int) (int, bool) {
	c := size / align
	var head uint32
	if c < maxClass {
		if c >= len(s.free) || s.free[c] == 0 {
			return 0, false
		}
		head = s.free[c]
	} else if head = s.bigFree[uint32(c)]; head == 0 {
		return 0, false
	}
	off := int(head - 1)
	next := binary.LittleEndian.Uint32(s.arena[off:])
	if c < maxClass {
		s.free[c] = next
	} else if next == 0 {
		delete(s.bigFree, uint32(c))
	} else {
		s.bigFree[uint32(c)] = next
	}
	s.nfree--
	s.dead -= size
	return off, true
}

// pushFree puts the free entry at off, of size bytes, on its list.
func (s *Shard[V]) pushFree(off, size int) {
	c := size / align
	var head uint32
	if c < maxClass {
		if c >= len(s.free) {
			s.free = append(s.free, make([]uint32, c+1-len(s.free))...)
		}
		head, s.free[c] = s.free[c], uint32(off+1)
	} else {
		if s.bigFree == nil {
			s.bigFree = map[uint32]uint32{}
		}
		head = s.bigFree[uint32(c)]
		s.bigFree[uint32(c)] = uint32(off + 1)
	}
	binary.LittleEndian.PutUint32(s.arena[off:], head)
	s.nfree++
	s.dead += size
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
	off := offOf(s.slot[p])
	_, _, size, _ := s.entryAt(off)
	s.arena[off+valSize[V]()+1] |= freeFlag // the length field's low bit, whatever its width
	s.pushFree(off, size)
	// A probe that reached p would stop at an empty next slot anyway.
	if s.slot[nextSlot(p, len(s.slot))] == slotEmpty {
		s.slot[p] = slotEmpty
		s.used--
	} else {
		s.slot[p] = slotDeleted
	}
	s.n--
}

// rehash rebuilds the index with size slots. It walks the arena rather
// than the old index, reading the keys it hashes in order.
func (s *Shard[V]) rehash(size int) {
	freeArray(s.slot)
	s.slot, s.used = makeArray[uint32](size, size), 0
	for off := 0; off < len(s.arena); {
		k, n, esize, free := s.entryAt(off)
		if !free {
			s.index(s.arena[k:k+n], off)
		}
		off += esize
	}
}

// index puts the entry at off, of key key, in an empty slot of an index
// that has room and no deleted slots.
func (s *Shard[V]) index(key []byte, off int) {
	pos, tag := s.hash(key)
	size := len(s.slot)
	p := home(pos, size)
	for s.slot[p] != slotEmpty {
		p = nextSlot(p, size)
	}
	s.slot[p] = full(off, tag)
	s.used++
}

// Compact gives memory back once free entries dominate: when there are
// more than twice as many entries (live and free) as keys to keep room
// for, or the free entries' bytes beyond what that room needs are more
// than half the arena, or the index is under 1/8 full, it copies the live
// entries into right-sized storage. It reports whether it did. Pointers
// from Get and Insert, and Scan cursors, are invalid afterwards (a stale
// cursor restarts the walk).
//
// reserve is how many keys to keep room for, live or not: a shard whose
// keys expire and come back all the time would otherwise be shrunk by each
// expiry cycle and grown again by the next inserts, copying everything
// twice per cycle. The caller passes the number of keys it saw recently
// (engine: a decaying peak), so memory still comes back once the keys
// stop coming.
func (s *Shard[V]) Compact(reserve int) bool {
	want := max(s.n, reserve)
	entries := s.n + s.nfree
	spare := 0 // free bytes the reserve may take back, at the average entry size
	if entries > 0 {
		spare = (want - s.n) * (len(s.arena) / entries)
	}
	if !(entries > 2*want && entries > minSlots ||
		(s.dead-spare)*2 > len(s.arena) && len(s.arena) > 1024 ||
		want*8 < len(s.slot) && len(s.slot) > minSlots) {
		return false
	}
	old := s.arena
	defer freeArray(old)
	// Live entries keep their order (the order keys arrived in), so that
	// walking the arena stays a sequential read.
	s.arena = makeArray[byte](0, roundUp(len(old)-s.dead+len(old)/16))
	s.free, s.bigFree, s.nfree, s.dead = nil, nil, 0, 0
	s.gen++
	freeArray(s.slot)
	size := max(want*8/7+want/4, minSlots) // about 70% full after a compaction
	vs := valSize[V]()
	s.slot, s.used = makeArray[uint32](size, size), 0
	for off := 0; off < len(old); {
		k, n, esize, free, _, _ := header(old, off, vs)
		if !free {
			at := len(s.arena)
			s.arena = appendArray(s.arena, old[off:off+esize]...)
			s.index(old[k:k+n], at)
		}
		off += esize
	}
	return true
}

// Len is the number of keys in the shard.
func (s *Shard[V]) Len() int { return s.n }

// Fits reports whether entries of size bytes in all (EntrySize) can be
// added without reaching the bound that makes an insert panic with ErrFull.
// It ignores free entries that could be reused, so it may say no a little
// early, never yes too late.
func (s *Shard[V]) Fits(size int) bool { return len(s.arena)+size < maxArena }

// Bytes is the memory the shard's storage holds (capacity, not just use).
func (s *Shard[V]) Bytes() int {
	return 4*cap(s.slot) + cap(s.arena) + 4*cap(s.free) + 8*len(s.bigFree)
}

// LiveBytes estimates the memory the live keys need: their entries and
// their share of the index, without the capacity held for growth or by
// deleted keys. It falls as soon as keys are deleted.
func (s *Shard[V]) LiveBytes() int {
	return (len(s.arena) - s.dead) + s.n*5 // 5: index bytes per key at 7/8 load
}

// Range calls fn for every key until fn returns false. fn may Delete the
// key it is given but must not Insert or Compact. The key string shares the
// shard's key storage: it is valid only during the call (strings.Clone it
// to keep it).
func (s *Shard[V]) Range(fn func(key string, v *V) bool) {
	s.Scan(0, -1, func(key string, v *V, _ byte) bool { return fn(key, v) })
}

// Scan is Range over at most count keys (all of them if count < 0) from
// cursor, 0 being the start; it returns the cursor to continue from, 0 once
// it has reached the end. Active expiry walks a shard a bounded step at a
// time with it. It walks the arena in order, so it reads memory
// sequentially and sees a key at most once per walk however the index
// changes.
//
// A cursor is an arena offset and the arena's generation: a cursor from
// before a Compact or Reset starts the walk again from the start rather
// than land in the middle of an entry. Cursors other than 0 must come from
// this shard's Scan.
func (s *Shard[V]) Scan(cursor uint64, count int, fn func(key string, v *V, tag byte) bool) uint64 {
	off := 0
	if uint32(cursor>>32) == s.gen {
		off = int(uint32(cursor))
	}
	vs := valSize[V]()
	for off < len(s.arena) {
		k, n, size, free := s.entryAt(off)
		if free {
			off += size
			continue
		}
		if count == 0 {
			break
		}
		count--
		key := s.arena[k : k+n]
		more := fn(unsafe.String(unsafe.SliceData(key), n), s.valAt(off), s.arena[off+vs])
		off += size
		if !more {
			break
		}
	}
	if off >= len(s.arena) {
		return 0
	}
	return uint64(s.gen)<<32 | uint64(off)
}

// Sample calls fn for the key in the first full index slot at or after
// slot i modulo the index's size, and reports whether the shard had a key.
// Over random i it picks keys at random, whatever order they arrived in.
// fn may Delete the key; its return value is ignored (it has Scan's type so
// that one function can serve both).
func (s *Shard[V]) Sample(i uint64, fn func(key string, v *V, tag byte) bool) bool {
	if s.n == 0 {
		return false
	}
	size := len(s.slot)
	p := int(i % uint64(size))
	for !isFull(s.slot[p]) {
		p = nextSlot(p, size)
	}
	off := offOf(s.slot[p])
	key := s.keyAt(off)
	fn(unsafe.String(unsafe.SliceData(key), len(key)), s.valAt(off), *s.tagAt(off))
	return true
}

// Reset drops every key.
func (s *Shard[V]) Reset() {
	freeArray(s.slot)
	freeArray(s.arena)
	s.slot, s.used, s.n = nil, 0, 0
	s.arena, s.free, s.bigFree, s.nfree, s.dead = nil, nil, nil, 0, 0
	s.gen++
}
