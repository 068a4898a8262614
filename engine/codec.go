package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ExtCodec turns one kind's Ext state into bytes and back. Kinds whose state
// fits in A and B need none; a kind with Ext state defines its codec in the
// file that defines the state, and extCodecOf names it.
type ExtCodec struct {
	// Append appends the bytes of e's Ext state to b. A kind that keeps
	// part of that state in A and B may serialise it there too, and set
	// e's A and B to what the serialised entry carries instead.
	Append func(b []byte, e *Entry) ([]byte, error)
	// Decode sets e's Ext state from b; e holds the Kind, Expire, A and B
	// read, and Decode may set A and B too.
	Decode func(b []byte, e *Entry) error
}

// extCodecOf is the codec of kind's Ext state; false for kinds without
// Ext state.
func extCodecOf(kind Kind) (ExtCodec, bool) {
	switch kind {
	case KindString:
		return stringExt, true
	case KindSlidingWindow:
		return slidingWindowExt, true
	case KindSlidingLog:
		return slidingLogExt, true
	case KindHash:
		return hashExt, true
	case KindSet:
		return setExt, true
	case KindZSet:
		return zsetExt, true
	case KindList:
		return listExt, true

	case KindReserve:
		return reservedExt(), true

	case KindLease:
		return leaseExt, true
	}
	return ExtCodec{}, false
}

// ErrCorrupt is returned when bytes do not decode to an entry.
var ErrCorrupt = errors.New("engine: corrupt entry")

// AppendBinary appends the entry's serialised form to b: the kind byte, then
// Expire, A and B as signed varints, then the Ext bytes behind a uvarint
// length (0 when there is no Ext). The form is part of the snapshot format
// and of DUMP's payload (persistence/doc.go), which other nodes and later
// versions read: change it only with their versions. A string value kept
// as a float's bits (StringOfFloat) is written as its text, as any other
// string that is not a canonical integer is.
func (e Entry) AppendBinary(b []byte) ([]byte, error) {
	if e.Kind == KindString && e.B == strFloat {
		e = Entry{Kind: KindString, Expire: e.Expire, Ext: AppendString(nil, e)}
	}
	var ext []byte
	if e.Ext != nil {
		var err error
		if ext, err = encodeExt(&e); err != nil {
			return nil, err
		}
	}
	b = append(b, byte(e.Kind))
	b = binary.AppendVarint(b, e.Expire)
	b = binary.AppendVarint(b, e.A)
	b = binary.AppendVarint(b, e.B)
	b = binary.AppendUvarint(b, uint64(len(ext)))
	return append(b, ext...), nil
}

// encodeExt is the bytes of e's Ext state; it may set e's A and B
// (ExtCodec.Append). It works on a copy of the entry, which the codec's
// pointer takes to the heap: AppendBinary, whose entry has no Ext state
// on a limiter's every write, allocates nothing.
func encodeExt(e *Entry) ([]byte, error) {
	c, ok := extCodecOf(e.Kind)
	if !ok {
		return nil, fmt.Errorf("engine: no codec for %v ext state", e.Kind)
	}
	cp := *e
	ext, err := c.Append(nil, &cp)
	if err != nil {
		return nil, fmt.Errorf("engine: encoding %v ext state: %w", e.Kind, err)
	}
	e.A, e.B = cp.A, cp.B
	return ext, nil
}

// DecodeEntry reads one entry from the front of b and returns it with the
// number of bytes it used.
func DecodeEntry(b []byte) (Entry, int, error) {
	var e Entry
	if len(b) < 1 {
		return e, 0, ErrCorrupt
	}
	e.Kind = Kind(b[0])
	if e.Kind == KindNone || e.Kind >= kindCount {
		return e, 0, fmt.Errorf("%w: unknown kind %d", ErrCorrupt, b[0])
	}
	off := 1
	var nums [3]int64 // Expire, A, B
	for i := range nums {
		v, n := binary.Varint(b[off:])
		if n <= 0 {
			return e, 0, ErrCorrupt
		}
		nums[i] = v
		off += n
	}
	e.Expire, e.A, e.B = nums[0], nums[1], nums[2]
	if e.Kind == KindString && e.B == strFloat {
		return e, 0, fmt.Errorf("%w: a string as a float's bits", ErrCorrupt)
	}
	l, n := binary.Uvarint(b[off:])
	if n <= 0 || l > uint64(len(b)-off-n) {
		return e, 0, ErrCorrupt
	}
	off += n
	if l > 0 {
		var err error
		if e, err = decodeExt(b[off:off+int(l)], e); err != nil {
			return e, 0, err
		}
		off += int(l)
	}
	return e, off, nil
}

// decodeExt is e with its Ext state decoded from b (ExtCodec.Decode). Like
// encodeExt it keeps the codec's pointer off DecodeEntry's own entry, so
// that decoding a limiter's entry allocates nothing.
func decodeExt(b []byte, e Entry) (Entry, error) {
	c, ok := extCodecOf(e.Kind)
	if !ok {
		return e, fmt.Errorf("%w: %v has no ext codec", ErrCorrupt, e.Kind)
	}
	if err := c.Decode(b, &e); err != nil {
		return e, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return e, nil
}
