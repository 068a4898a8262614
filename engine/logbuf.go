package engine

import (
	"unsafe"

	"github.com/limitdb/limitdb/engine/window"
)

// A sliding log's state, kept apart.
//
// SL.INCR on a random key pays a cache miss for each place its state is
// read from before it can decide. A sliding log's window.Ring is therefore
// kept in three parts: its Seen, State (window.Ring.State) and Oldest in
// the entry's A, B and C, which the engine has loaded with the key, and its
// stamps' buffer in Ext, as a pointer to an array (a logRing): the slot of
// the oldest stamp is then known from B and the pointer alone, with no box
// to read first. A ring of more than maxInlineWords has a bigLog, whose
// buffer is a pointer further.
//
// Staging is as in extbox.go, without a box: Record appends past the
// stamps the key's state sees, so Apply returns the same buffer as a
// logStage, which store commits back to the key's logRing; a dropped write
// leaves the key's A, B, C and stamps as they were. A ring that moves gets a
// new logRing, which store puts in place of the old. Apply on a staged
// entry records on a copy. Get copies the buffer (cloneExt).

// maxInlineWords is the largest buffer kept as an array: 256 words, 2 KiB,
// a limit of 100 at its fullest even with costs.
const maxInlineWords = 256

// logWords is a sliding log's buffer, stored or staged.
type logWords interface{ words() []int64 }

// storedLog is a key's buffer as stored.
type storedLog interface {
	logWords
	clonedExt
	// staged is the same buffer as the Ext of an entry Apply returns.
	staged() any
}

// loadRing sets r to the ring of a sliding log's entry e; false if its
// Ext is something else.
func loadRing(r *window.Ring, e *Entry) bool {
	if e.Ext == nil {
		*r = window.Ring{}
		return true
	}
	x, ok := e.Ext.(logWords)
	if ok {
		r.Unpack(e.A, e.B, e.C, x.words())
	}
	return ok
}

// The array types of the buffers.
type (
	words4   [4]int64
	words8   [8]int64
	words16  [16]int64
	words32  [32]int64
	words64  [64]int64
	words128 [128]int64
	words256 [256]int64
)

// logRing is a key's stamps as stored; logStage, the same memory as an
// entry Apply returned and store has not committed. A is one of the
// arrays above.
type (
	logRing[A any]  struct{ w A }
	logStage[A any] struct{ w A }
)

// wordsAt is the buffer of size bytes at p, made without reading it:
// slicing the array (r.w[:]) would load from it to check p for nil, a
// cache miss on a random key that a request which drops no stamp (window.
// Ring.Oldest) does not otherwise pay.
func wordsAt(p unsafe.Pointer, size uintptr) []int64 {
	return unsafe.Slice((*int64)(p), size/8)
}

func (r *logRing[A]) words() []int64  { return wordsAt(unsafe.Pointer(r), unsafe.Sizeof(r.w)) }
func (r *logRing[A]) staged() any     { return (*logStage[A])(r) }
func (r *logRing[A]) cloneExt() any   { c := *r; return &c }
func (r *logRing[A]) extBytes() int64 { return int64(unsafe.Sizeof(*r)) }

func (s *logStage[A]) words() []int64 { return wordsAt(unsafe.Pointer(s), unsafe.Sizeof(s.w)) }
func (s *logStage[A]) cloneExt() any  { c := logRing[A](*s); return &c }

func (s *logStage[A]) commit(stored any) (any, bool) {
	r := (*logRing[A])(s)
	if x, ok := stored.(*logRing[A]); ok && x == r {
		return r, true
	}
	// Not this key's buffer (the entry came from another key): sharing
	// it would let one key's writes change the other's stamps.
	return r.cloneExt(), false
}

// bigLog is a buffer of more than maxInlineWords; bigStage, as staged.
type (
	bigLog   struct{ w []int64 }
	bigStage bigLog
)

func (r *bigLog) words() []int64  { return r.w }
func (r *bigLog) staged() any     { return (*bigStage)(r) }
func (r *bigLog) cloneExt() any   { return &bigLog{w: append([]int64(nil), r.w...)} }
func (r *bigLog) extBytes() int64 { return 24 + 8*int64(cap(r.w)) }

func (s *bigStage) words() []int64 { return s.w }
func (s *bigStage) cloneExt() any  { return (*bigLog)(s).cloneExt() }

func (s *bigStage) commit(stored any) (any, bool) {
	r := (*bigLog)(s)
	if x, ok := stored.(*bigLog); ok && x == r {
		return r, true
	}
	return r.cloneExt(), false
}

// newLogRing makes the buffers of one array type, for newLogBuf.
func newLogRing[A any]() storedLog { return new(logRing[A]) }

// newLogRings is indexed by size class: 4<<class words.
var newLogRings = [...]func() storedLog{
	newLogRing[words4], newLogRing[words8], newLogRing[words16], newLogRing[words32],
	newLogRing[words64], newLogRing[words128], newLogRing[words256],
}

// newLogBuf returns a new buffer of at least words words, zeroed, as
// stored, and its words.
func newLogBuf(words int) (ext any, buf []int64) {
	if words > maxInlineWords {
		x := &bigLog{w: make([]int64, words)}
		return x, x.w
	}
	class := 0
	for 4<<class < words {
		class++
	}
	x := newLogRings[class]()
	return x, x.words()
}
