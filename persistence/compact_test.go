package persistence

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

// compactCases are entries of every shape the compact form tells apart:
// a limiter whose Expire is its A and whose B is 0, one with B, Expire
// far from A (the difference wraps), a string with ext bytes, a hash, a
// deletion.
func compactCases(t testing.TB) map[string]engine.Entry {
	h := engine.NewHash()
	h.Set([]byte("f"), []byte("v"))
	s := engine.NewSet()
	s.Add([]byte("m"))
	return map[string]engine.Entry{
		"gcra":          {Kind: engine.KindGCRA, A: t0 + 60e6, Expire: t0 + 60e6},
		"token bucket":  {Kind: engine.KindTokenBucket, A: t0, B: 7, Expire: t0 + 1e9},
		"wrapping":      {Kind: engine.KindFixedWindow, A: math.MinInt64, B: math.MaxInt64, Expire: math.MaxInt64},
		"integer":       engine.StringOfInt(-42, 0),
		"string":        engine.StringEntry([]byte("hello"), t0+5e9),
		"hash":          {Kind: engine.KindHash, Ext: h},
		"set, expiring": {Kind: engine.KindSet, Ext: s, Expire: t0 + 1},
		"deletion":      {},
	}
}

// TestCompactUnitRoundTrips: a unit AppendUnit writes compact reads back,
// through ParseRecord and ReadRecord, to the same keys and entries, in
// one record per key and in one record of them all.
func TestCompactUnitRoundTrips(t *testing.T) {
	cases := compactCases(t)
	var all []engine.Change
	for name, ent := range cases {
		all = append(all, engine.Change{Key: []byte(name), Entry: ent})
	}
	units := [][]engine.Change{all}
	for i := range all {
		units = append(units, all[i:i+1])
	}
	for _, unit := range units {
		rec, _, err := AppendUnit(nil, nil, false, unit)
		if err != nil {
			t.Fatal(err)
		}
		if rec[0] != TagApply {
			t.Fatalf("%s: not a compact record: %q", unit[0].Key, rec)
		}
		args, n, err := ParseRecord(append(rec, '*'), nil)
		if err != nil || n != len(rec) {
			t.Fatalf("%s: ParseRecord: %d of %d bytes, %v", unit[0].Key, n, len(rec), err)
		}
		read, raw, err := ReadRecord(bufio.NewReader(bytes.NewReader(rec)), nil, nil)
		if err != nil || !bytes.Equal(raw, rec) || len(read) != len(args) {
			t.Fatalf("%s: ReadRecord: %q, %v", unit[0].Key, raw, err)
		}
		eng := engine.New(clock.NewFake(t0), 2)
		ap := Applier{Eng: eng}
		if err := ap.Apply(t0, args); err != nil {
			t.Fatalf("%s: %v", unit[0].Key, err)
		}
		for _, c := range unit {
			want, _ := c.Entry.AppendBinary(nil)
			if c.Entry.Kind == engine.KindNone {
				want = nil
			}
			got, ok := eng.Get(c.Key, t0)
			var gb []byte
			if ok {
				gb, _ = got.AppendBinary(nil)
			}
			if !bytes.Equal(gb, want) {
				t.Errorf("%s: stored %x, want %x", c.Key, gb, want)
			}
		}
	}
}

// TestCompactRecordSize: the stream's record of one CL.THROTTLE (a GCRA
// state) on a 14-byte key takes 27 bytes, where Redis propagates a write
// on the same key (INCR key) in 35, and the RESP form took 64.
func TestCompactRecordSize(t *testing.T) {
	key := []byte("k:000000012345")
	unit := []engine.Change{{Key: key, Entry: compactCases(t)["gcra"]}}
	rec, _, err := AppendUnit(nil, nil, false, unit)
	if err != nil {
		t.Fatal(err)
	}
	resp, _, _ := appendUnitRESP(nil, nil, false, unit)
	incr := AppendCommand(nil, "INCR", string(key))
	t.Logf("CL.THROTTLE's record: %d bytes (RESP form %d; Redis's INCR on the key %d)", len(rec), len(resp), len(incr))
	if want := 3 + len(key) + 10; len(rec) != want {
		t.Errorf("record of %d bytes, want %d: %q", len(rec), want, rec)
	}
	if len(rec) >= len(incr) {
		t.Errorf("record of %d bytes, no smaller than Redis's %d", len(rec), len(incr))
	}
	drop := AppendDrop(nil, [][]byte{key, key})
	if want := 2 + 2*(1+len(key)); len(drop) != want {
		t.Errorf("DROP of two keys: %d bytes, want %d", len(drop), want)
	}
}

// TestCompactLongBody: a body of 128 bytes or more takes a longer length,
// which the writer inserts in front of it.
func TestCompactLongBody(t *testing.T) {
	for _, n := range []int{100, 127, 128, 300, 20000} {
		key := []byte(strings.Repeat("k", n))
		rec := AppendDrop([]byte("prefix"), [][]byte{key})
		args, used, err := ParseRecord(rec[len("prefix"):], nil)
		if err != nil || used != len(rec)-len("prefix") || len(args) != 2 || !bytes.Equal(args[1], key) {
			t.Fatalf("key of %d bytes: %d args, %d used, %v", n, len(args), used, err)
		}
	}
}

// TestCompactRefusesBadInput: what a primary or a file may hold that is
// not a compact record is an ErrBadRecord, a torn one incomplete.
func TestCompactRefusesBadInput(t *testing.T) {
	good, _, _ := AppendUnit(nil, nil, false, []engine.Change{{Key: []byte("k"), Entry: compactCases(t)["token bucket"]}})
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty body", []byte{TagApply, 0}},
		{"key past the body", []byte{TagDrop, 2, 9, 'k'}},
		{"entry cut short", []byte{TagApply, 3, 1, 'k', 0x01}},
		{"deletion with flags", []byte{TagApply, 3, 1, 'k', 0x20}},
		{"ext length 0", []byte{TagApply, 5, 1, 'k', 0x07 | flagExpireIsA | flagNoB, 0, 0}},
		{"ext past the body", []byte{TagApply, 5, 1, 'k', 0x07 | flagExpireIsA | flagNoB, 0, 9}},
		{"length overflows", append([]byte{TagApply}, bytes.Repeat([]byte{0xff}, 11)...)},
		{"length too large", []byte{TagApply, 0xff, 0xff, 0xff, 0xff, 0x7f}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, n, err := ParseRecord(tc.in, nil); err == nil {
				t.Fatalf("ParseRecord accepted %q (%d bytes)", tc.in, n)
			}
			if _, _, err := ReadRecord(bufio.NewReader(bytes.NewReader(tc.in)), nil, nil); err == nil {
				t.Fatalf("ReadRecord accepted %q", tc.in)
			}
		})
	}
	for cut := 1; cut < len(good); cut++ {
		if _, n, err := ParseRecord(good[:cut], nil); n != 0 || err != nil {
			t.Fatalf("cut at %d: %d, %v; want more input", cut, n, err)
		}
		if _, _, err := ReadRecord(bufio.NewReader(bytes.NewReader(good[:cut])), nil, nil); err == nil {
			t.Fatalf("cut at %d: ReadRecord read a whole record", cut)
		}
	}
}

// FuzzCompactRecord: whatever bytes follow a compact tag, ParseRecord and
// ReadRecord agree, never panic, and what they accept the Applier applies
// or refuses, storing only entries CheckEntry accepts.
func FuzzCompactRecord(f *testing.F) {
	for name, ent := range compactCases(f) {
		rec, _, _ := AppendUnit(nil, nil, false, []engine.Change{{Key: []byte(name), Entry: ent}})
		f.Add(rec)
	}
	f.Add(AppendDrop(nil, [][]byte{[]byte("a"), []byte("b")}))
	f.Fuzz(func(t *testing.T, data []byte) {
		args, n, perr := ParseRecord(data, nil)
		read, raw, rerr := ReadRecord(bufio.NewReader(bytes.NewReader(data)), nil, nil)
		if perr == nil && n > 0 {
			if rerr != nil || len(raw) != n || fmt.Sprint(read) != fmt.Sprint(args) {
				t.Fatalf("ParseRecord took %d bytes (%q), ReadRecord %d (%q), %v", n, args, len(raw), read, rerr)
			}
			eng := engine.New(clock.NewFake(t0), 2)
			ap := Applier{Eng: eng, Sections: &Sections{}}
			ap.Apply(t0, args)
			checkKeyspace(t, eng)
		}
	})
}
