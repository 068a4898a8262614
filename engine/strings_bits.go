package engine

import "errors"

// String ranges and bits (APPEND, SETRANGE, SETBIT, BITFIELD, BITOP): the
// commands change a string's bytes, so a string they write keeps its
// value as bytes (Ext []byte, nil for ""), never as a number, as Redis
// keeps their results raw. A []byte value is the key's own: these writes
// change it in place under the shard's lock, as collections are changed
// (extbox.go), and Get hands out a copy.

// DoStringBytes runs fn on key's string value under the shard's lock. v
// is the value, which fn may change in place or append to; exists is
// false when the key is absent (v is then empty). fn returns the value to
// store and whether to store it; a stored value keeps the key's expiry.
// A key of another kind is ErrWrongType, and fn does not run.
func (e *Engine) DoStringBytes(key []byte, now int64, fn func(v []byte, exists bool) (out []byte, write bool)) (err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		var v []byte
		switch {
		case ent.Kind == KindNone:
		case ent.Kind != KindString:
			err = ErrWrongType
			return ent, false
		case ent.B == strInt || ent.B == strFloat:
			v = AppendString(nil, ent)
		default:
			v, _ = ent.Ext.([]byte)
		}
		out, write := fn(v, ent.Kind != KindNone)
		if !write {
			return ent, false
		}
		next := BytesEntry(out)
		next.Expire = ent.Expire
		return next, true
	})
	return err
}

// rawString, in A of a string entry that keeps its value as bytes, marks
// a value that APPEND, SETRANGE, SETBIT, BITFIELD or BITOP wrote, which
// OBJECT ENCODING calls raw whatever its length, as Redis does.
const rawString = 1

// BytesEntry is the string entry whose value is b (not copied), kept as
// bytes whatever it reads as (OBJECT ENCODING raw).
func BytesEntry(b []byte) Entry {
	ent := Entry{Kind: KindString, A: rawString}
	if len(b) > 0 {
		ent.Ext = b
	}
	return ent
}

// StringBytes is a string entry's value: its own bytes when it keeps
// them (valid while the entry is), else a fresh copy of its text.
func StringBytes(ent Entry) []byte {
	if ent.B == strInt || ent.B == strFloat {
		return AppendString(nil, ent)
	}
	v, _ := ent.Ext.([]byte)
	return v
}

// GrowZero returns b extended with zero bytes to at least n bytes.
func GrowZero(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	if cap(b) >= n {
		l := len(b)
		b = b[:n]
		clear(b[l:])
		return b
	}
	return append(b, make([]byte, n-len(b))...)
}

// ErrStringTooLong is a write that would make a string longer than the
// longest the server accepts (proto-max-bulk-len), which Redis refuses
// before it writes.
var ErrStringTooLong = errors.New("string exceeds maximum allowed size (proto-max-bulk-len)")

// Append appends val to key's string value (an absent key gets val as it
// is, kept as a number when it reads as one, as SET keeps it) and returns
// the new length. A result longer than maxLen bytes is ErrStringTooLong
// and changes nothing.
func (e *Engine) Append(key []byte, now int64, val []byte, maxLen int64) (n int, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		switch ent.Kind {
		case KindNone:
			n = len(val)
			return StringEntry(val, 0), true
		case KindString:
		default:
			err = ErrWrongType
			return ent, false
		}
		cur := StringBytes(ent)
		if int64(len(cur))+int64(len(val)) > maxLen {
			err = ErrStringTooLong
			return ent, false
		}
		out := append(cur, val...)
		n = len(out)
		next := BytesEntry(out)
		next.Expire = ent.Expire
		return next, true
	})
	return n, err
}

// Bit i of b counts from the most significant bit of b[0], as Redis's
// SETBIT and BITFIELD number them.

// GetBits reads bits bits at bit offset off of b as an unsigned number;
// bits past the end of b read as 0.
func GetBits(b []byte, off uint64, bits int) uint64 {
	var v uint64
	for j := 0; j < bits; j++ {
		p := off + uint64(j)
		bit := uint64(0)
		if byteAt := p >> 3; byteAt < uint64(len(b)) && b[byteAt]&(1<<(7-p&7)) != 0 {
			bit = 1
		}
		v = v<<1 | bit
	}
	return v
}

// GetSignedBits is GetBits read as a two's complement number of bits bits.
func GetSignedBits(b []byte, off uint64, bits int) int64 {
	v := GetBits(b, off, bits)
	if bits < 64 && v&(1<<(bits-1)) != 0 {
		v |= ^uint64(0) << bits
	}
	return int64(v)
}

// SetBits writes the low bits bits of v at bit offset off of b, which
// must be long enough.
func SetBits(b []byte, off uint64, bits int, v uint64) {
	for j := 0; j < bits; j++ {
		p := off + uint64(j)
		mask := byte(1 << (7 - p&7))
		if v&(1<<(bits-1-j)) != 0 {
			b[p>>3] |= mask
		} else {
			b[p>>3] &^= mask
		}
	}
}
