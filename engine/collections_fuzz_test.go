package engine

import (
	"testing"
)

// FuzzDecodeCollection: any bytes decode to a hash, set or sorted set, or
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
	for _, ent := range []Entry{{Kind: KindHash, Ext: h}, {Kind: KindSet, Ext: s}, {Kind: KindZSet, Ext: z}} {
		b, err := ent.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
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
	})
}
