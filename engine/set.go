package engine

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strconv"
	"unsafe"
)

// Set is a set's members (KindSet).
//
// While every member is an integer in canonical form and there are at most
// 512, the set is a sorted []int64: Redis's intset, 8 bytes a member,
// answering SMEMBERS in numeric order as Redis does. A member that is not
// such an integer, or the 513th, turns it into a map for good
// ("hashtable"), whose order is unspecified, as in Redis 7.0 (which has no
// listpack sets).
type Set struct {
	ints   []int64
	m      map[string]struct{}
	mBytes int64
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{} }

// Len is the number of members.
func (s *Set) Len() int {
	if s.m != nil {
		return len(s.m)
	}
	return len(s.ints)
}

// Encoding is what OBJECT ENCODING answers: intset or hashtable.
func (s *Set) Encoding() string {
	if s.m != nil {
		return "hashtable"
	}
	return "intset"
}

// Has reports whether member is in the set.
func (s *Set) Has(member []byte) bool {
	if s.m != nil {
		_, ok := s.m[string(member)]
		return ok
	}
	n, ok := canonicalInt(member)
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(s.ints, n)
	return found
}

// Add adds member (copied) and reports whether it is new.
func (s *Set) Add(member []byte) bool {
	if s.m == nil {
		n, ok := canonicalInt(member)
		if ok {
			i, found := slices.BinarySearch(s.ints, n)
			if found {
				return false
			}
			if len(s.ints) < maxIntsetEntries {
				s.ints = slices.Insert(s.ints, i, n)
				return true
			}
		}
		s.unpack()
	}
	if _, ok := s.m[string(member)]; ok {
		return false
	}
	s.m[string(member)] = struct{}{}
	s.mBytes += stringBytes(len(member)) + mapEntryBytes
	return true
}

// Remove removes member and reports whether it was there.
func (s *Set) Remove(member []byte) bool {
	if s.m != nil {
		if _, ok := s.m[string(member)]; !ok {
			return false
		}
		delete(s.m, string(member))
		s.mBytes -= stringBytes(len(member)) + mapEntryBytes
		return true
	}
	n, ok := canonicalInt(member)
	if !ok {
		return false
	}
	i, found := slices.BinarySearch(s.ints, n)
	if found {
		s.ints = slices.Delete(s.ints, i, i+1)
	}
	return found
}

// Range calls fn for each member until it returns false: in numeric order
// while an intset. member is valid only during the call.
func (s *Set) Range(fn func(member []byte) bool) {
	if s.m != nil {
		for k := range s.m {
			if !fn(unsafe.Slice(unsafe.StringData(k), len(k))) {
				return
			}
		}
		return
	}
	var buf [20]byte
	for _, n := range s.ints {
		if !fn(strconv.AppendInt(buf[:0], n, 10)) {
			return
		}
	}
}

func (s *Set) unpack() {
	s.m = make(map[string]struct{}, len(s.ints)+1)
	for _, n := range s.ints {
		member := strconv.FormatInt(n, 10)
		s.m[member] = struct{}{}
		s.mBytes += stringBytes(len(member)) + mapEntryBytes
	}
	s.ints = nil
}

func (s *Set) extBytes() int64 {
	n := int64(unsafe.Sizeof(*s)) + 8*int64(cap(s.ints))
	if s.m != nil {
		n += 48 + s.mBytes
	}
	return n
}

func (s *Set) cloneExt() any {
	c := &Set{ints: slices.Clone(s.ints), mBytes: s.mBytes}
	if s.m != nil {
		c.m = maps.Clone(s.m)
	}
	return c
}

// setExt serialises a set as its member count, then each member behind its
// uvarint length: in numeric order while an intset, sorted bytewise once a
// map, so that one state always serialises to the same bytes.
var setExt = ExtCodec{
	Append: func(b []byte, e *Entry) ([]byte, error) {
		s, ok := e.Ext.(*Set)
		if !ok {
			return nil, errors.New("set ext is not *Set")
		}
		b = binary.AppendUvarint(b, uint64(s.Len()))
		if s.m == nil {
			var buf [20]byte
			for _, n := range s.ints {
				b = appendBytes(b, strconv.AppendInt(buf[:0], n, 10))
			}
			return b, nil
		}
		for _, k := range slices.Sorted(maps.Keys(s.m)) {
			b = appendBytes(b, []byte(k))
		}
		return b, nil
	},
	Decode: func(b []byte, e *Entry) error {
		n, b, err := readCount(b)
		if err != nil {
			return err
		}
		s := &Set{}
		for i := 0; i < n; i++ {
			var v []byte
			if v, b, err = readBytes(b); err != nil {
				return err
			}
			if !s.Add(v) {
				return errors.New("set member repeated")
			}
		}
		if len(b) != 0 {
			return errors.New("bytes after a set")
		}
		e.Ext = s
		return nil
	},
}
