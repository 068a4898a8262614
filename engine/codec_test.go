package engine

import (
	"errors"
	"testing"
)

func TestEntryRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []Entry{
		{Kind: KindGCRA, A: t0 + 5e9, Expire: t0 + 5e9},
		{Kind: KindTokenBucket, A: -3, B: 1 << 60, Expire: 0},
	}
	for _, want := range cases {
		b, err := want.AppendBinary([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := DecodeEntry(b[len("prefix"):])
		if err != nil || n != len(b)-len("prefix") || got != want {
			t.Errorf("round trip of %+v: %+v, n=%d, %v", want, got, n, err)
		}
	}
}

func TestDecodeRejectsCorruption(t *testing.T) {
	t.Parallel()
	good, _ := Entry{Kind: KindGCRA, A: 1, Expire: 1}.AppendBinary(nil)
	bad := [][]byte{nil, {0}, {200}, good[:2], append([]byte{byte(KindGCRA)}, 0, 0, 0, 5)}
	for _, b := range bad {
		if _, _, err := DecodeEntry(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeEntry(%v) err = %v, want ErrCorrupt", b, err)
		}
	}
}

// The journal encodes, and a replica decodes, an entry on every write: an
// entry without Ext state does it without allocating.
func TestEntryCodecAllocatesNothing(t *testing.T) {
	// Not parallel: AllocsPerRun counts the whole process's allocations.
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ent := Entry{Kind: KindGCRA, A: t0 + 5e9, Expire: t0 + 5e9}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(1000, func() { buf, _ = ent.AppendBinary(buf[:0]) }); n != 0 {
		t.Errorf("AppendBinary: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { DecodeEntry(buf) }); n != 0 {
		t.Errorf("DecodeEntry: %v allocations, want 0", n)
	}
}
