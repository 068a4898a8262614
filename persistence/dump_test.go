package persistence

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
	"testing"

	"github.com/limitdb/limitdb/engine"
)

// dumpOf is ent's payload.
func dumpOf(t testing.TB, ent engine.Entry) []byte {
	t.Helper()
	p, err := AppendDump(nil, ent)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDumpRoundTrip: a payload decodes to the entry it was made of, with
// no expiry: RESTORE's ttl sets that.
func TestDumpRoundTrip(t *testing.T) {
	t.Parallel()
	h := engine.NewHash()
	h.Set([]byte("tokens"), []byte("5"))
	for _, tc := range []struct {
		name string
		ent  engine.Entry
	}{
		{"gcra", engine.Entry{Kind: engine.KindGCRA, Expire: t0 + 5e9, A: t0 + 5e9}},
		{"counter", engine.StringEntry([]byte("42"), t0)},
		{"string", engine.StringEntry([]byte("hello\x00world"), 0)},
		{"hash", engine.Entry{Kind: engine.KindHash, Ext: h}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDump(dumpOf(t, tc.ent))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.ent
			want.Expire = 0
			a, _ := got.AppendBinary(nil)
			b, _ := want.AppendBinary(nil)
			if string(a) != string(b) {
				t.Fatalf("decoded %x, want %x", a, b)
			}
		})
	}
}

// TestDumpRefusesDamage: every flipped byte, every truncation, another
// version and trailing bytes behind a valid checksum are refused.
func TestDumpRefusesDamage(t *testing.T) {
	t.Parallel()
	p := dumpOf(t, engine.StringEntry([]byte("some value"), 0))
	for i := range p {
		bad := append([]byte(nil), p...)
		bad[i] ^= 0x01
		if _, err := ParseDump(bad); !errors.Is(err, ErrDumpChecksum) {
			t.Errorf("byte %d flipped: err = %v, want ErrDumpChecksum", i, err)
		}
	}
	for n := 0; n < len(p); n++ {
		if _, err := ParseDump(p[:n]); !errors.Is(err, ErrDumpChecksum) {
			t.Errorf("truncated to %d bytes: err = %v, want ErrDumpChecksum", n, err)
		}
	}
	// A version other than ours, with a checksum that matches it.
	other := append([]byte(nil), p[:len(p)-8]...)
	binary.LittleEndian.PutUint16(other[len(other)-2:], DumpVersion+1)
	other = binary.LittleEndian.AppendUint64(other, crc64.Checksum(other, crcECMA))
	if _, err := ParseDump(other); !errors.Is(err, ErrDumpChecksum) {
		t.Errorf("version %d: err = %v, want ErrDumpChecksum", DumpVersion+1, err)
	}
	// A well-formed trailer behind bytes that are not one entry.
	entry := p[:len(p)-dumpTrailer]
	extra := append(append([]byte(nil), entry...), 0)
	extra = binary.LittleEndian.AppendUint16(extra, DumpVersion)
	extra = binary.LittleEndian.AppendUint64(extra, crc64.Checksum(extra, crcECMA))
	if _, err := ParseDump(extra); !errors.Is(err, ErrDumpFormat) {
		t.Errorf("a byte after the entry: err = %v, want ErrDumpFormat", err)
	}
}

// FuzzParseDump: any bytes are refused or decode, never panic; what
// decodes dumps again to a payload that decodes.
func FuzzParseDump(f *testing.F) {
	f.Add(dumpOf(f, engine.StringEntry([]byte("v"), 0)))
	f.Add(dumpOf(f, engine.Entry{Kind: engine.KindTokenBucket, A: t0, B: 3}))
	f.Fuzz(func(t *testing.T, p []byte) {
		ent, err := ParseDump(p)
		if err != nil {
			return
		}
		if _, err := ParseDump(dumpOf(t, ent)); err != nil {
			t.Fatalf("a decoded entry dumps to a payload that does not parse: %v", err)
		}
	})
}
