package engine

import (
	"unsafe"

	"github.com/limitdb/limitdb/engine/window"
)

// Ext state written in place.
//
// A sliding window of several sub-windows (SW.INCR PRECISION n) keeps its
// state in Ext, on the heap. Returning a fresh state from every Apply would
// allocate on every admitted request. Instead such a key's Ext is an
// extBox, kept in the key's ext slot (extslab.go) for the key's life (a
// sliding log does the same without a box, in its entry's words:
// logbuf.go):
//
//   - Apply reads the box's current state and builds the next one in the
//     box's stage, which changes nothing the current state says, and returns
//     the stage as the next entry's Ext;
//   - store commits a stage to its box (staged.commit): only then does the
//     key's state change. A caller that drops the entry instead (a denial
//     elsewhere in RL.HITALL, an error) leaves the key as it was, and the
//     next Apply overwrites the stage.
//
// What follows for callers:
//
//   - Ext state read from the engine (Do, DoMulti, RangeShard) is valid
//     only under the shard's lock, since the next write changes it in
//     place; Get hands out a copy. Copy it (Get, or AppendBinary) to keep
//     it, or to give it to another key.
//   - Of two results of Apply on the same entry, only the later is valid:
//     they share the stage.
//   - Apply on a staged entry (the same key charged twice in one
//     RL.HITALL) cannot build in the stage, which holds its input: it uses
//     memory of its own (allocating, on that rare path only), still homed
//     in the key's box so that committing it allocates nothing more.

// extState is what a box holds: a state that can be copied deep.
type extState[T any] interface {
	*T
	Clone() T
}

// extBox is a key's Ext state written in place: cur is the key's state,
// stage the next one while an Apply builds it.
type extBox[T any, P extState[T]] struct {
	cur   T
	stage staged[T, P]
}

// staged is a state built by Apply and not yet stored: the entry's Ext
// until store commits it to home.
type staged[T any, P extState[T]] struct {
	next T
	home *extBox[T, P]
}

func newExtBox[T any, P extState[T]](cur T) *extBox[T, P] {
	b := &extBox[T, P]{cur: cur}
	b.stage.home = b
	return b
}

// stagedExt is Ext state that store commits rather than stores.
type stagedExt interface {
	// commit makes the staged state the key's, given the Ext the key holds
	// (nil if none). When that is the state's home it updates the home in
	// place and reports inPlace; otherwise it returns a box of its own for
	// the key.
	commit(stored any) (ext any, inPlace bool)
}

// clonedExt is Ext state the engine changes in place: Get copies it.
type clonedExt interface{ cloneExt() any }

func (s *staged[T, P]) commit(stored any) (any, bool) {
	h, ok := stored.(*extBox[T, P])
	if !ok || h != s.home {
		// Not this key's box (the key was new, or the state came from
		// elsewhere): sharing memory with another key would let one key's
		// writes change the other's state.
		return newExtBox[T, P](P(&s.next).Clone()), false
	}
	if s == &h.stage {
		// Swap, so that the stage reuses the old state's memory (a
		// sliding window's counts) on the next write.
		h.cur, h.stage.next = h.stage.next, h.cur
	} else {
		h.cur = s.next
	}
	return h, true
}

func (b *extBox[T, P]) cloneExt() any { return newExtBox[T, P](P(&b.cur).Clone()) }

// extBytes is the box and the heap memory of its two states (a sliding
// window's counts).
func (b *extBox[T, P]) extBytes() int64 {
	n := int64(unsafe.Sizeof(*b))
	for _, s := range []any{P(&b.cur), P(&b.stage.next)} {
		if st, ok := s.(*window.SlidingState); ok {
			n += 8 * int64(cap(st.Counts))
		}
	}
	return n
}

func (s *staged[T, P]) cloneExt() any { return newExtBox[T, P](P(&s.next).Clone()) }

// extRead is the state an entry's Ext says, if it is a T: a box's current
// state, a staged state, or a bare *T (nil otherwise). The caller must not
// change it.
func extRead[T any, P extState[T]](ext any) P {
	switch x := ext.(type) {
	case *extBox[T, P]:
		return &x.cur
	case *staged[T, P]:
		return &x.next
	case P:
		return x
	}
	return nil
}

// extWrite is where Apply builds the state that follows ext's, and the Ext
// to return with it: the stage of ext's box; for a staged ext, memory of
// its own homed in the same box (chained reports that the input is staged,
// and may share memory with the key's current state); for anything else, a
// new box.
func extWrite[T any, P extState[T]](ext any) (dst P, next any, chained bool) {
	switch x := ext.(type) {
	case *extBox[T, P]:
		return &x.stage.next, &x.stage, false
	case *staged[T, P]:
		s := &staged[T, P]{home: x.home}
		return &s.next, s, true
	}
	var zero T
	b := newExtBox[T, P](zero)
	return &b.cur, b, false
}
