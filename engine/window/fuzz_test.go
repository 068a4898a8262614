package window

import "testing"

// The decoders read snapshot bytes: whatever they are given, they return
// an error or a usable state whose encoding decodes to the same state
// (overlong varints are accepted and come back canonical), never panic.

func FuzzDecodeRing(f *testing.F) {
	l, _ := NewLog(5, 100)
	r := &Ring{}
	for now := int64(1000); now < 1200; now += 13 {
		if d, _ := l.Decide(r, now, 1); !d.Limited {
			next := l.Record(r, now, 1)
			r = &next
		}
	}
	f.Add(r.AppendBinary(nil))
	f.Add([]byte{0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeRing(b)
		if err != nil {
			return
		}
		enc := got.AppendBinary(nil)
		again, err := DecodeRing(enc)
		if err != nil || string(again.AppendBinary(nil)) != string(enc) {
			t.Fatalf("decoded %x, re-encoded %x: %v", b, enc, err)
		}
		// A decoded ring is usable.
		if _, err := l.Decide(&got, got.Seen, 1); err != nil && got.Seen <= maxNow && got.Seen >= -maxNow {
			t.Fatal(err)
		}
	})
}

func FuzzDecodeSliding(f *testing.F) {
	st := &SlidingState{Start: 1000, Counts: []int64{1, 2, 3}}
	f.Add(st.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeSliding(b)
		if err != nil {
			return
		}
		enc := got.AppendBinary(nil)
		again, err := DecodeSliding(enc)
		if err != nil || string(again.AppendBinary(nil)) != string(enc) {
			t.Fatalf("decoded %x, re-encoded %x: %v", b, enc, err)
		}
		s, _ := NewSliding(10, 1000, 2)
		st := s.Adopt(got)
		if _, err := s.Decide(st, 5000, 1); err != nil {
			t.Fatal(err)
		}
	})
}
