package engine

import "github.com/limitdb/limitdb/engine/window"

// A sliding log's box and its stamps in one allocation.
//
// A ring's stamps in a buffer of their own cost SL.INCR on a random key one
// more page and one more pointer to chase after the box: the box gives the
// buffer, and only then can the oldest stamps be read. So when a ring needs
// a new buffer of up to maxInlineStamps slots, SL.INCR gives the key a new
// box with the buffer after it (a logBoxN) instead; the old box goes with
// the write that replaces it, as a new key's box does. A larger ring keeps
// a buffer of its own; so does a ring decoded or cloned (Get), until its
// next move.

// maxInlineStamps is the largest ring kept beside its box: 128 stamps,
// 2 KiB, a limit of 100 at its fullest.
const maxInlineStamps = 128

// ringBox is a sliding log's box.
type ringBox = extBox[window.Ring, *window.Ring]

type logBox4 struct {
	box   ringBox
	slots [4]window.Stamp
}

type logBox8 struct {
	box   ringBox
	slots [8]window.Stamp
}

type logBox16 struct {
	box   ringBox
	slots [16]window.Stamp
}

type logBox32 struct {
	box   ringBox
	slots [32]window.Stamp
}

type logBox64 struct {
	box   ringBox
	slots [64]window.Stamp
}

type logBox128 struct {
	box   ringBox
	slots [128]window.Stamp
}

// newLogBox returns an empty box whose stamps, at least size of them, follow
// it in memory; or, for a ring larger than maxInlineStamps, an empty box
// and a nil buffer.
func newLogBox(size int) (*ringBox, []window.Stamp) {
	var b *ringBox
	var buf []window.Stamp
	switch {
	case size <= 4:
		x := new(logBox4)
		b, buf = &x.box, x.slots[:]
	case size <= 8:
		x := new(logBox8)
		b, buf = &x.box, x.slots[:]
	case size <= 16:
		x := new(logBox16)
		b, buf = &x.box, x.slots[:]
	case size <= 32:
		x := new(logBox32)
		b, buf = &x.box, x.slots[:]
	case size <= 64:
		x := new(logBox64)
		b, buf = &x.box, x.slots[:]
	case size <= maxInlineStamps:
		x := new(logBox128)
		b, buf = &x.box, x.slots[:]
	default:
		b = new(ringBox)
	}
	b.stage.home = b
	return b, buf
}
