package persistence

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
)

// Compact records (doc.go, "Change-stream records", version 2): the
// stream's two most frequent records, a unit's APPLY and active expiry's
// DROP, in a binary form a third the size of their RESP arrays. Each is a
// tag byte, uvarint(len(body)) and the body; the tag can never start a
// RESP array ('*'), so readers tell the two forms apart by the first byte.
const (
	TagApply byte = 0xA1 // body: (uvarint(len(key)) key compact-entry)+
	TagDrop  byte = 0xD1 // body: (uvarint(len(key)) key)+
)

// A compact entry is engine.Entry.AppendBinary's form with what a
// limiter's entry repeats left out:
//
//	head   kind | flagExpireIsA | flagNoB | flagNoExt   (kind 0: delete the key, nothing follows)
//	A      varint
//	Expire varint(Expire - A)       unless flagExpireIsA
//	B      varint                   unless flagNoB
//	ext    uvarint(len(ext)) ext    unless flagNoExt
//
// A GCRA state (A = Expire = TAT, B = 0, no ext) takes 10 bytes.
const (
	flagExpireIsA = 0x20
	flagNoB       = 0x40
	flagNoExt     = 0x80
	kindMask      = 0x1f
)

// appendCompactEntry appends the compact form of ent, an entry's
// AppendBinary form (empty: a deletion); false when its kind does not fit
// the head byte, and the caller writes a RESP record instead.
func appendCompactEntry(b, ent []byte) ([]byte, bool) {
	if len(ent) == 0 {
		return append(b, 0), true
	}
	kind := ent[0]
	if kind == 0 || kind > kindMask {
		return b, false
	}
	var nums [3]int64 // Expire, A, B
	off := 1
	for i := range nums {
		v, n := binary.Varint(ent[off:])
		if n <= 0 {
			return b, false
		}
		nums[i], off = v, off+n
	}
	l, n := binary.Uvarint(ent[off:])
	if n <= 0 || l != uint64(len(ent)-off-n) {
		return b, false
	}
	ext := ent[off+n:]
	expire, a, bb := nums[0], nums[1], nums[2]
	head := kind
	if expire == a {
		head |= flagExpireIsA
	}
	if bb == 0 {
		head |= flagNoB
	}
	if len(ext) == 0 {
		head |= flagNoExt
	}
	b = append(b, head)
	b = binary.AppendVarint(b, a)
	if head&flagExpireIsA == 0 {
		b = binary.AppendVarint(b, expire-a)
	}
	if head&flagNoB == 0 {
		b = binary.AppendVarint(b, bb)
	}
	if head&flagNoExt == 0 {
		b = binary.AppendUvarint(b, uint64(len(ext)))
		b = append(b, ext...)
	}
	return b, true
}

// compactEntryLen is the length of the compact entry at the front of b.
func compactEntryLen(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, errCompact("an entry is cut short")
	}
	head := b[0]
	if head&kindMask == 0 {
		if head != 0 {
			return 0, errCompact("a deletion with flags")
		}
		return 1, nil
	}
	off := 1
	fields := 1
	if head&flagExpireIsA == 0 {
		fields++
	}
	if head&flagNoB == 0 {
		fields++
	}
	for i := 0; i < fields; i++ {
		_, n := binary.Varint(b[off:])
		if n <= 0 {
			return 0, errCompact("a bad varint")
		}
		off += n
	}
	if head&flagNoExt == 0 {
		l, n := binary.Uvarint(b[off:])
		if n <= 0 || l == 0 || l > uint64(len(b)-off-n) {
			return 0, errCompact("a bad ext length")
		}
		off += n + int(l)
	}
	return off, nil
}

// expandEntry appends the AppendBinary form of the compact entry c (whole,
// as compactEntryLen measured it); a deletion expands to nothing.
func expandEntry(b, c []byte) []byte {
	head := c[0]
	if head == 0 {
		return b
	}
	a, off := binary.Varint(c[1:])
	off++
	expire, bb := a, int64(0)
	if head&flagExpireIsA == 0 {
		d, n := binary.Varint(c[off:])
		expire, off = a+d, off+n
	}
	if head&flagNoB == 0 {
		v, n := binary.Varint(c[off:])
		bb, off = v, off+n
	}
	b = append(b, head&kindMask)
	b = binary.AppendVarint(b, expire)
	b = binary.AppendVarint(b, a)
	b = binary.AppendVarint(b, bb)
	if head&flagNoExt != 0 {
		return append(b, 0)
	}
	return append(b, c[off:]...) // uvarint(len(ext)) ext, as AppendBinary writes them
}

func errCompact(what string) error { return fmt.Errorf("%w: compact record: %s", ErrBadRecord, what) }

// appendCompact appends a compact record of tag whose body fill appends:
// the body's length is written in front of it once it is known.
func appendCompact(b []byte, tag byte, fill func([]byte) ([]byte, bool)) ([]byte, bool) {
	start := len(b)
	b = append(b, tag, 0) // a one-byte length, the usual case
	body := len(b)
	b, ok := fill(b)
	if !ok {
		return b[:start], false
	}
	n := len(b) - body
	if n < 0x80 {
		b[body-1] = byte(n)
		return b, true
	}
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(n))
	b = slices.Insert(b, body, l[1:k]...)
	copy(b[body-1:], l[:k])
	return b, true
}

// splitCompact appends to args the record's tag (a one-byte slice of rec)
// then the keys and, for TagApply, their compact entries, all slices of
// body; body is rec's after the tag and length.
func splitCompact(args [][]byte, tag []byte, body []byte) ([][]byte, error) {
	if len(body) == 0 {
		return args, errCompact("an empty body")
	}
	args = append(args, tag)
	for off := 0; off < len(body); {
		l, n := binary.Uvarint(body[off:])
		if n <= 0 || l > uint64(len(body)-off-n) {
			return args, errCompact("a bad key length")
		}
		off += n
		args = append(args, body[off:off+int(l):off+int(l)])
		off += int(l)
		if tag[0] == TagApply {
			e, err := compactEntryLen(body[off:])
			if err != nil {
				return args, err
			}
			args = append(args, body[off:off+e:off+e])
			off += e
		}
	}
	if len(args)-1 > maxRecordArgs {
		return args, errCompact("too many keys")
	}
	return args, nil
}

// isCompact reports whether a record starting with c is compact.
func isCompact(c byte) bool { return c == TagApply || c == TagDrop }

// parseCompact is ParseRecord of a compact record at the front of b.
func parseCompact(b []byte, args [][]byte) ([][]byte, int, error) {
	first := len(args)
	l, n := binary.Uvarint(b[1:])
	if n == 0 {
		return args, 0, nil // the length is cut short
	}
	if n < 0 || l > maxRecordBytes {
		return args, 0, errCompact("a bad length")
	}
	end := 1 + n + int(l)
	if len(b) < end {
		return args, 0, nil
	}
	args, err := splitCompact(args, b[:1:1], b[1+n:end:end])
	if err != nil {
		return args[:first], 0, err
	}
	return args, end, nil
}

// readCompact is ReadRecord of a compact record, its tag not yet read.
func readCompact(r *bufio.Reader, raw []byte, args [][]byte) ([][]byte, []byte, error) {
	tag, err := r.ReadByte()
	if err != nil {
		return args, raw, err
	}
	at := len(raw)
	raw = append(raw, tag)
	l, err := binary.ReadUvarint(byteCounter{r, &raw})
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return args, raw, ErrTorn
		}
		return args, raw, errCompact("a bad length")
	}
	if l > maxRecordBytes {
		return args, raw, errCompact("a bad length")
	}
	start := len(raw)
	raw = slices.Grow(raw, int(l))[:start+int(l)]
	if _, err := io.ReadFull(r, raw[start:]); err != nil {
		return args, raw, noEOF(err)
	}
	args, err = splitCompact(args, raw[at:at+1:at+1], raw[start:])
	return args, raw, err
}

// byteCounter reads bytes from r, appending each to raw.
type byteCounter struct {
	r   *bufio.Reader
	raw *[]byte
}

func (c byteCounter) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		*c.raw = append(*c.raw, b)
	}
	return b, err
}
