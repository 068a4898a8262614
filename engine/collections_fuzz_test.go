package engine

import (
	"strings"
	"testing"
)

// FuzzDecodeCollection: any bytes decode to a hash, set, sorted set or list, or
// to an error, never a panic; what decodes serialises to bytes that decode
// and serialise to themselves again, so a replica's copy of a state is its
// primary's byte for byte. (The input itself need not be that form: a
// varint may be padded, a set's members in any order.)
func FuzzDecodeCollection(f *testing.F) {
	h := NewHash()
	h.Set([]byte("tokens"), []byte("5"))
	h.Set([]byte("ts"), []byte("1700000000"))
	s := NewSet()
	s.Add([]byte("7"))
	s.Add([]byte("word"))
	z := NewZSet()
	z.Set(1.5, []byte("a"))
	z.Set(-2, []byte("b"))
	l := NewList()
	l.PushTail([]byte("1700000000.5"))
	l.PushTail(nil)
	seedEntries(f, Entry{Kind: KindHash, Ext: h}, Entry{Kind: KindSet, Ext: s}, Entry{Kind: KindZSet, Ext: z}, Entry{Kind: KindList, Ext: l})
	f.Fuzz(decodesToItself)
}

// FuzzDecodeList is FuzzDecodeCollection seeded with lists only, so that
// its mutations start from a list's bytes: a count, then elements behind
// their lengths.
func FuzzDecodeList(f *testing.F) {
	var ents []Entry
	for _, items := range [][]string{{"a"}, {"1700000000.123", "1700000000.001", ""}, {strings.Repeat("x", 200), "y"}} {
		l := NewList()
		for _, v := range items {
			l.PushTail([]byte(v))
		}
		ents = append(ents, Entry{Kind: KindList, Expire: 5, Ext: l})
	}
	seedEntries(f, ents...)
	f.Fuzz(decodesToItself)
}

func seedEntries(f *testing.F, ents ...Entry) {
	for _, ent := range ents {
		b, err := ent.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func decodesToItself(t *testing.T, b []byte) {
	ent, _, err := DecodeEntry(b)
	if err != nil || ent.Ext == nil {
		return
	}
	first, err := ent.AppendBinary(nil)
	if err != nil {
		t.Fatalf("a decoded %v does not encode: %v", ent.Kind, err)
	}
	dec, n, err := DecodeEntry(first)
	if err != nil || n != len(first) {
		t.Fatalf("%v's encoding does not decode: %v", ent.Kind, err)
	}
	second, err := dec.AppendBinary(nil)
	if err != nil || string(second) != string(first) {
		t.Fatalf("%v encodes one state two ways:\n%x\n%x", ent.Kind, first, second)
	}
}
