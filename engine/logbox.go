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

// maxInlineWords is the largest ring kept beside its box: 256 words,
// 2 KiB, a limit of 100 at its fullest even with costs.
const maxInlineWords = 256

// ringBox is a sliding log's box.
type ringBox = extBox[window.Ring, *window.Ring]

type logBox4 struct {
	box   ringBox
	words [4]int64
}

type logBox8 struct {
	box   ringBox
	words [8]int64
}

type logBox16 struct {
	box   ringBox
	words [16]int64
}

type logBox32 struct {
	box   ringBox
	words [32]int64
}

type logBox64 struct {
	box   ringBox
	words [64]int64
}

type logBox128 struct {
	box   ringBox
	words [128]int64
}

type logBox256 struct {
	box   ringBox
	words [256]int64
}

// newLogBox returns an empty box whose buffer, at least size words,
// follows it in memory; or, for a ring larger than maxInlineWords, an
// empty box and a nil buffer.
func newLogBox(size int) (*ringBox, []int64) {
	var b *ringBox
	var buf []int64
	switch {
	case size <= 4:
		x := new(logBox4)
		b, buf = &x.box, x.words[:]
	case size <= 8:
		x := new(logBox8)
		b, buf = &x.box, x.words[:]
	case size <= 16:
		x := new(logBox16)
		b, buf = &x.box, x.words[:]
	case size <= 32:
		x := new(logBox32)
		b, buf = &x.box, x.words[:]
	case size <= 64:
		x := new(logBox64)
		b, buf = &x.box, x.words[:]
	case size <= 128:
		x := new(logBox128)
		b, buf = &x.box, x.words[:]
	case size <= maxInlineWords:
		x := new(logBox256)
		b, buf = &x.box, x.words[:]
	default:
		b = new(ringBox)
	}
	b.stage.home = b
	return b, buf
}
