package engine

import (
	"encoding/binary"
	"errors"
	"unsafe"
)

// List is a list's elements (KindList), from the head (index 0) to the
// tail.
//
// The elements are Go strings in one slice, items[head:], with free room
// kept before head and after the last element, so that a push or pop at
// either end costs one element, not a copy of the list: a sliding-window
// limiter pushes at the head and trims the tail on every request. An
// element costs its bytes and a 16-byte string header, about what a
// quicklist node's listpack entry plus its share of the node cost Redis.
//
// OBJECT ENCODING answers "quicklist" for every list, as Redis 7.0 does
// (listpack-encoded lists came with Redis 7.2).
type List struct {
	items []string
	head  int   // the first element's index in items
	bytes int64 // the elements' bytes
}

// NewList returns an empty list.
func NewList() *List { return &List{} }

// Len is the number of elements.
func (l *List) Len() int { return len(l.items) - l.head }

// Encoding is what OBJECT ENCODING answers.
func (l *List) Encoding() string { return "quicklist" }

// Index returns element i, 0 <= i < Len(). The slice shares the element's
// memory, which never changes: it stays valid after the list changes, but
// must not be written to.
func (l *List) Index(i int) []byte { return bytesOf(l.items[l.head+i]) }

func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// PushHead pushes v (copied) at the head: LPUSH k a b leaves b first.
func (l *List) PushHead(v []byte) {
	if l.head == 0 {
		l.regrow(l.Len() + 1)
	}
	l.head--
	l.items[l.head] = string(v)
	l.bytes += int64(len(v))
}

// PushTail pushes v (copied) at the tail.
func (l *List) PushTail(v []byte) {
	if len(l.items) == cap(l.items) {
		l.regrow(l.Len() + 1)
	}
	l.items = append(l.items, string(v))
	l.bytes += int64(len(v))
}

// regrow copies the list into a new slice with room for at least n
// elements, the spare room split between the two ends. (append would grow
// the slice with the room before the head in it, and keep that room
// unused.)
func (l *List) regrow(n int) {
	size := max(2*n, 8)
	head := (size - l.Len()) / 2
	items := make([]string, head+l.Len(), size)
	copy(items[head:], l.items[l.head:])
	l.items, l.head = items, head
}

// PopHead removes and returns the first element; the list must not be
// empty. The slice stays valid (see Index).
func (l *List) PopHead() []byte {
	s := l.items[l.head]
	l.items[l.head] = ""
	l.head++
	l.bytes -= int64(len(s))
	l.shrink()
	return bytesOf(s)
}

// PopTail removes and returns the last element; the list must not be
// empty.
func (l *List) PopTail() []byte {
	last := len(l.items) - 1
	s := l.items[last]
	l.items[last] = ""
	l.items = l.items[:last]
	l.bytes -= int64(len(s))
	l.shrink()
	return bytesOf(s)
}

// shrink gives back the slice's memory once the list fills less than a
// quarter of it, so that a list that grew and was trimmed does not keep
// its peak. An empty list keeps nothing.
func (l *List) shrink() {
	switch n := l.Len(); {
	case n == 0:
		l.items, l.head = nil, 0
	case cap(l.items) > 32 && 4*n < cap(l.items):
		l.regrow(n)
	}
}

// Set replaces element i, 0 <= i < Len(), with v (copied).
func (l *List) Set(i int, v []byte) {
	p := &l.items[l.head+i]
	l.bytes += int64(len(v) - len(*p))
	*p = string(v)
}

// Insert inserts v (copied) before element i, 0 <= i <= Len().
func (l *List) Insert(i int, v []byte) {
	if i == 0 {
		l.PushHead(v)
		return
	}
	if len(l.items) == cap(l.items) {
		l.regrow(l.Len() + 1)
	}
	l.items = append(l.items, "")
	copy(l.items[l.head+i+1:], l.items[l.head+i:])
	l.items[l.head+i] = string(v)
	l.bytes += int64(len(v))
}

// Trim keeps elements start..stop (inclusive, 0 <= start <= stop < Len())
// and drops the rest.
func (l *List) Trim(start, stop int) {
	end := l.head + stop + 1
	for _, s := range l.items[end:] {
		l.bytes -= int64(len(s))
	}
	clear(l.items[end:])
	l.items = l.items[:end]
	for _, s := range l.items[l.head : l.head+start] {
		l.bytes -= int64(len(s))
	}
	clear(l.items[l.head : l.head+start])
	l.head += start
	l.shrink()
}

// Clear drops every element.
func (l *List) Clear() { *l = List{} }

// Remove removes up to count elements equal to v (every one when count is
// 0), scanning from the head, or from the tail when fromTail, and returns
// how many it removed.
func (l *List) Remove(v []byte, count int, fromTail bool) int {
	keep := l.items[l.head:]
	removed := 0
	match := func(s string) bool {
		if s == string(v) && (count == 0 || removed < count) {
			removed++
			l.bytes -= int64(len(s))
			return true
		}
		return false
	}
	if fromTail {
		w := len(keep)
		for r := len(keep) - 1; r >= 0; r-- {
			if !match(keep[r]) {
				w--
				keep[w] = keep[r]
			}
		}
		clear(keep[:w])
		l.head += w
	} else {
		w := 0
		for _, s := range keep {
			if !match(s) {
				keep[w] = s
				w++
			}
		}
		clear(keep[w:])
		l.items = l.items[:l.head+w]
	}
	if removed > 0 {
		l.shrink()
	}
	return removed
}

// extBytes is the list's memory: itself, its slice and its elements.
func (l *List) extBytes() int64 {
	return int64(unsafe.Sizeof(*l)) + int64(unsafe.Sizeof(""))*int64(cap(l.items)) + l.bytes
}

func (l *List) cloneExt() any {
	c := &List{items: make([]string, l.Len()), bytes: l.bytes}
	copy(c.items, l.items[l.head:])
	return c
}

// listExt serialises a list as its element count, then each element from
// the head behind its uvarint length.
var listExt = ExtCodec{
	Append: func(b []byte, e *Entry) ([]byte, error) {
		l, ok := e.Ext.(*List)
		if !ok {
			return nil, errors.New("list ext is not *List")
		}
		b = binary.AppendUvarint(b, uint64(l.Len()))
		for _, s := range l.items[l.head:] {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		return b, nil
	},
	Decode: func(b []byte, e *Entry) error {
		n, b, err := readCount(b)
		if err != nil {
			return err
		}
		l := &List{items: make([]string, 0, n)}
		for i := 0; i < n; i++ {
			var v []byte
			if v, b, err = readBytes(b); err != nil {
				return err
			}
			l.PushTail(v)
		}
		if len(b) != 0 {
			return errors.New("bytes after a list")
		}
		e.Ext = l
		return nil
	},
}
