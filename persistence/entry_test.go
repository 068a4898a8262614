package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

// emptyCollections are entries limitdb never writes, in their serialised
// form: each collection kind with no contents at all, and with a count of
// zero. Every one decodes with engine.DecodeEntry.
func emptyCollections(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, k := range []engine.Kind{engine.KindHash, engine.KindSet, engine.KindZSet, engine.KindList} {
		out[fmt.Sprintf("%v with no contents", k)] = []byte{byte(k), 0, 0, 0, 0}
		out[fmt.Sprintf("%v of 0 elements", k)] = []byte{byte(k), 0, 0, 0, 1, 0}
	}
	for name, b := range out {
		if _, n, err := engine.DecodeEntry(b); err != nil || n != len(b) {
			t.Fatalf("%s: the codec refuses it (%v): the test no longer covers what it means to", name, err)
		}
	}
	return out
}

// An empty collection is refused by every decoder of entries another
// process wrote: DUMP payloads (RESTORE, MIGRATE), the stream's records (a
// replica, the append-only file) and snapshots (a full resynchronisation,
// a start-up); nothing of it reaches the keyspace.
func TestEmptyCollectionsAreRefused(t *testing.T) {
	t.Parallel()
	for name, entry := range emptyCollections(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseDump(payload(entry)); !errors.Is(err, ErrDumpFormat) {
				t.Errorf("DUMP payload: %v, want ErrDumpFormat", err)
			}

			eng := engine.New(clock.NewFake(t0), 2)
			ap := Applier{Eng: eng, Sections: &Sections{}}
			if err := ap.Apply(t0, [][]byte{[]byte(VerbApply), []byte("k"), entry}); !errors.Is(err, ErrBadEntry) {
				t.Errorf("APPLY record: %v, want ErrBadEntry", err)
			}
			if eng.Len() != 0 {
				t.Errorf("the refused record left %d keys", eng.Len())
			}

			snap := snapshotWith(t, "k", entry)
			if _, err := LoadBytes(snap, eng, &Sections{}); !errors.Is(err, ErrBadEntry) {
				t.Errorf("snapshot: %v, want ErrBadEntry", err)
			}
			if eng.Len() != 0 {
				t.Errorf("the refused snapshot left %d keys", eng.Len())
			}

			dir := t.TempDir()
			a := openAOF(t, dir)
			a.Reopen()
			a.Append([]byte(rec("APPLY", "good", "") + rec("APPLY", "k", string(entry))))
			a.Close()
			ap = Applier{Eng: eng, Sections: &Sections{}}
			_, err := openAOF(t, dir).Load(eng, &Sections{}, func(args [][]byte) error { return ap.Apply(t0, args) }, true)
			if !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), "incr.aof") {
				t.Errorf("append-only file: %v, want ErrBadEntry naming the file", err)
			}
		})
	}
}

// payload is entry's DUMP payload.
func payload(entry []byte) []byte {
	p := binary.LittleEndian.AppendUint16(bytes.Clone(entry), DumpVersion)
	return binary.LittleEndian.AppendUint64(p, crc64.Checksum(p, crcECMA))
}

// snapshotWith is a snapshot image of one key whose entry is entry, with
// a checksum that matches: what a primary or a file could hand over.
func snapshotWith(t testing.TB, key string, entry []byte) []byte {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.ldb")
	if _, err := Save(path, engine.New(clock.NewFake(t0), 2), &Sections{}); err != nil {
		t.Fatal(err)
	}
	empty, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Header, one key record, then the end record counting it.
	img := append([]byte(nil), empty[:headerLen]...)
	img = append(img, recKey, byte(len(key)))
	img = append(img, key...)
	img = append(img, byte(len(entry)))
	img = append(img, entry...)
	img = append(img, recEnd, 1, 0)
	return binary.LittleEndian.AppendUint32(img, crc32.Checksum(img, castagnoli))
}

// checkKeyspace fails t for any entry of eng that CheckEntry refuses:
// whatever a decoder let in must be a key later commands can serve.
func checkKeyspace(t testing.TB, eng *engine.Engine) {
	t.Helper()
	for i := 0; i < eng.Shards(); i++ {
		eng.RangeShardTransient(i, eng.Now(), func(key string, ent *engine.Entry) bool {
			if err := CheckEntry(*ent); err != nil {
				t.Fatalf("key %q was stored: %v", key, err)
			}
			return true
		})
	}
}

// FuzzDecodeEntry: any bytes decode to an entry CheckEntry accepts, which
// serialises to bytes that decode again, or are refused; never a panic.
func FuzzDecodeEntry(f *testing.F) {
	h := engine.NewHash()
	h.Set([]byte("f"), []byte("v"))
	for _, ent := range []engine.Entry{
		engine.StringEntry([]byte("value"), 0),
		engine.StringOfInt(42, t0),
		{Kind: engine.KindGCRA, A: t0, Expire: t0 + 1},
		{Kind: engine.KindHash, Ext: h},
	} {
		b, err := ent.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range emptyCollections(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ent, err := DecodeEntry(b)
		if err != nil {
			return
		}
		if err := CheckEntry(ent); err != nil {
			t.Fatalf("DecodeEntry accepted what CheckEntry refuses: %v", err)
		}
		again, err := ent.AppendBinary(nil)
		if err != nil {
			t.Fatalf("a decoded entry does not encode: %v", err)
		}
		if _, err := DecodeEntry(again); err != nil {
			t.Fatalf("a decoded entry encodes to bytes that do not decode: %v", err)
		}
	})
}

// FuzzDecodeSnapshot: any snapshot image whose checksum matches (the
// fuzzer's bytes with a CRC appended) is refused or restores a keyspace
// of entries CheckEntry accepts; never a panic.
func FuzzDecodeSnapshot(f *testing.F) {
	entries := [][]byte{{byte(engine.KindString), 0, 0, 0, 1, 'v'}}
	for _, entry := range emptyCollections(f) {
		entries = append(entries, entry)
	}
	for _, entry := range entries {
		img := snapshotWith(f, "k", entry)
		f.Add(img[:len(img)-4])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		img := binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, castagnoli))
		eng := engine.New(clock.NewFake(t0), 2)
		snap, err := Decode(img, t0)
		if err != nil {
			return
		}
		if _, err := snap.Restore(eng, &Sections{}, true); err != nil {
			return
		}
		checkKeyspace(t, eng)
	})
}

// FuzzAOFLoad: whatever an incr file holds, loading it stops at a clear
// error or loads entries CheckEntry accepts; never a panic.
func FuzzAOFLoad(f *testing.F) {
	f.Add([]byte(rec("APPLY", "k", "\x07\x00\x00\x00\x01v") + rec("DROP", "k")))
	f.Add([]byte(rec("RESET") + rec("PING")))
	f.Add(AppendDrop(nil, [][]byte{[]byte("k")}))
	for _, entry := range emptyCollections(f) {
		f.Add([]byte(rec("APPLY", "k", string(entry))))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		a := openAOF(t, dir)
		a.Reopen()
		a.Append(data)
		a.Close()
		eng := engine.New(clock.NewFake(t0), 2)
		ap := Applier{Eng: eng, Sections: &Sections{}}
		openAOF(t, dir).Load(eng, &Sections{}, func(args [][]byte) error { return ap.Apply(t0, args) }, true)
		checkKeyspace(t, eng)
	})
}
