package engine

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"unsafe"
)

// Hash is a hash's fields and values (KindHash).
//
// While it has at most 128 fields and none of its fields or values is over
// 64 bytes, it is packed: one byte slice of field, value, field, value...,
// each behind its uvarint length, in the order the fields were first set,
// found by a linear scan. That is Redis's listpack encoding: the same
// memory per field (a byte or two beyond the text) and the same reply
// order for HGETALL, HKEYS and HVALS. Past either bound it becomes a map
// for good ("hashtable"), whose reply order is unspecified, as in Redis.
type Hash struct {
	packed []byte            // while small; nil once m is set
	n      int               // fields in packed
	m      map[string]string // once big
	mBytes int64             // m's accounted memory
}

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{} }

// Len is the number of fields.
func (h *Hash) Len() int {
	if h.m != nil {
		return len(h.m)
	}
	return h.n
}

// Encoding is what OBJECT ENCODING answers: listpack or hashtable.
func (h *Hash) Encoding() string {
	if h.m != nil {
		return "hashtable"
	}
	return "listpack"
}

// find returns where field's pair starts in packed, where its value (with
// its length) starts and where it ends; start is -1 when field is absent.
func (h *Hash) find(field []byte) (start, vstart, end int) {
	b := h.packed
	for off := 0; off < len(b); {
		fs, fe, ok := span(b, off)
		if !ok {
			break
		}
		_, ve, ok := span(b, fe)
		if !ok {
			break
		}
		if string(b[fs:fe]) == string(field) {
			return off, fe, ve
		}
		off = ve
	}
	return -1, 0, 0
}

// Get returns field's value, valid until the hash changes.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	if h.m != nil {
		v, ok := h.m[string(field)]
		return unsafe.Slice(unsafe.StringData(v), len(v)), ok
	}
	start, vs, _ := h.find(field)
	if start < 0 {
		return nil, false
	}
	v, _, _ := readBytes(h.packed[vs:])
	return v, true
}

// Set sets field to value (both copied) and reports whether field is new.
func (h *Hash) Set(field, value []byte) (added bool) {
	if h.m == nil && (len(field) > maxPackedValue || len(value) > maxPackedValue) {
		h.unpack()
	}
	if h.m != nil {
		old, ok := h.m[string(field)]
		if ok {
			h.mBytes += int64(len(value) - len(old))
		} else {
			h.mBytes += stringBytes(len(field)) + stringBytes(len(value)) + mapEntryBytes
		}
		h.m[string(field)] = string(value)
		return !ok
	}
	if start, vs, end := h.find(field); start >= 0 {
		var buf [binary.MaxVarintLen64 + maxPackedValue]byte
		h.packed = splice(h.packed, vs, end, appendBytes(buf[:0], value))
		return false
	}
	if h.n+1 > maxPackedEntries {
		h.unpack()
		return h.Set(field, value)
	}
	h.packed = appendBytes(appendBytes(h.packed, field), value)
	h.n++
	return true
}

// Delete removes field and reports whether it was there.
func (h *Hash) Delete(field []byte) bool {
	if h.m != nil {
		old, ok := h.m[string(field)]
		if ok {
			h.mBytes -= stringBytes(len(field)) + stringBytes(len(old)) + mapEntryBytes
			delete(h.m, string(field))
		}
		return ok
	}
	start, _, end := h.find(field)
	if start < 0 {
		return false
	}
	h.packed = splice(h.packed, start, end, nil)
	h.n--
	return true
}

// Range calls fn for each field and value until it returns false: in
// insertion order while packed, in no set order once a map. The slices are
// valid until the hash changes; fn must not change it.
func (h *Hash) Range(fn func(field, value []byte) bool) {
	if h.m != nil {
		for f, v := range h.m {
			if !fn(unsafe.Slice(unsafe.StringData(f), len(f)), unsafe.Slice(unsafe.StringData(v), len(v))) {
				return
			}
		}
		return
	}
	b := h.packed
	for len(b) > 0 {
		f, rest, _ := readBytes(b)
		v, rest, _ := readBytes(rest)
		if !fn(f, v) {
			return
		}
		b = rest
	}
}

// unpack turns a packed hash into a map.
func (h *Hash) unpack() {
	m := make(map[string]string, h.n+1)
	h.Range(func(f, v []byte) bool {
		m[string(f)] = string(v)
		h.mBytes += stringBytes(len(f)) + stringBytes(len(v)) + mapEntryBytes
		return true
	})
	h.m, h.packed, h.n = m, nil, 0
}

// extBytes is the hash's memory: itself, its packed bytes or its map.
func (h *Hash) extBytes() int64 {
	n := int64(unsafe.Sizeof(*h)) + int64(cap(h.packed))
	if h.m != nil {
		n += 48 + h.mBytes // the map's header
	}
	return n
}

func (h *Hash) cloneExt() any {
	c := &Hash{packed: slices.Clone(h.packed), n: h.n, mBytes: h.mBytes}
	if h.m != nil {
		c.m = maps.Clone(h.m)
	}
	return c
}

// splice replaces b[start:end] with repl, in place when b has room.
func splice(b []byte, start, end int, repl []byte) []byte {
	delta := len(repl) - (end - start)
	switch {
	case delta > 0:
		l := len(b)
		b = append(b, make([]byte, delta)...)
		copy(b[end+delta:], b[end:l])
	case delta < 0:
		copy(b[end+delta:], b[end:])
		b = b[:len(b)+delta]
	}
	copy(b[start:], repl)
	return b
}

// hashExt serialises a hash as its field count, then each field and value
// behind its uvarint length: in insertion order while packed, sorted by
// field once a map, so that one state always serialises to the same bytes
// (a replica's copy compares equal to its primary's).
var hashExt = ExtCodec{
	Append: func(b []byte, e *Entry) ([]byte, error) {
		h, ok := e.Ext.(*Hash)
		if !ok {
			return nil, errors.New("hash ext is not *Hash")
		}
		b = binary.AppendUvarint(b, uint64(h.Len()))
		if h.m == nil {
			return append(b, h.packed...), nil
		}
		for _, f := range slices.Sorted(maps.Keys(h.m)) {
			b = appendBytes(appendBytes(b, []byte(f)), []byte(h.m[f]))
		}
		return b, nil
	},
	Decode: func(b []byte, e *Entry) error {
		n, b, err := readCount(b)
		if err != nil {
			return err
		}
		h := &Hash{}
		for i := 0; i < n; i++ {
			var f, v []byte
			if f, b, err = readBytes(b); err != nil {
				return err
			}
			if v, b, err = readBytes(b); err != nil {
				return err
			}
			if !h.Set(f, v) {
				return errors.New("hash field repeated")
			}
		}
		if len(b) != 0 {
			return errors.New("bytes after a hash")
		}
		e.Ext = h
		return nil
	},
}
