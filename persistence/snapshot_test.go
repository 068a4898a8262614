package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// fill stores n GCRA keys, half of them expiring within a minute.
func fill(e *engine.Engine, n int) {
	now := e.Now()
	for i := 0; i < n; i++ {
		exp := now + int64(time.Hour)
		if i%2 == 1 {
			exp = now + int64(time.Minute)
		}
		ent := engine.Entry{Kind: engine.KindGCRA, A: exp, B: int64(i), Expire: exp}
		e.Do([]byte(fmt.Sprintf("key:%d", i)), now, func(engine.Entry) (engine.Entry, bool) { return ent, true })
	}
}

func dump(t *testing.T, e *engine.Engine) map[string]engine.Entry {
	t.Helper()
	out := map[string]engine.Entry{}
	for i := 0; i < e.Shards(); i++ {
		e.RangeShard(i, e.Now(), func(k string, ent *engine.Entry) bool {
			out[strings.Clone(k)] = *ent
			return true
		})
	}
	return out
}

func TestSaveLoadRoundTrip(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	src := engine.New(clk, 8)
	fill(src, 1000)
	path := filepath.Join(t.TempDir(), "dump.ldb")
	st, err := Save(path, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys != 1000 {
		t.Fatalf("saved %d keys, want 1000", st.Keys)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file left behind: %v", err)
	}

	t.Run("same instant", func(t *testing.T) {
		dst := engine.New(clk, 4) // another shard count: the format does not depend on it
		ls, err := Load(path, dst, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ls.Keys != 1000 || ls.Expired != 0 {
			t.Fatalf("loaded %d, expired %d; want 1000, 0", ls.Keys, ls.Expired)
		}
		want, got := dump(t, src), dump(t, dst)
		if len(got) != len(want) {
			t.Fatalf("%d keys after load, want %d", len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Fatalf("%s: %+v, want %+v", k, got[k], w)
			}
		}
	})
	t.Run("after the short keys expired", func(t *testing.T) {
		later := clock.NewFake(t0 + int64(2*time.Minute))
		dst := engine.New(later, 4)
		ls, err := Load(path, dst, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ls.Keys != 500 || ls.Expired != 500 {
			t.Fatalf("loaded %d, expired %d; want 500, 500", ls.Keys, ls.Expired)
		}
	})
}

func TestLoadRefusesDamage(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	src := engine.New(clk, 4)
	fill(src, 50)
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.ldb")
	if _, err := Save(path, src, nil); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	flip := bytes.Clone(good)
	flip[len(flip)/2] ^= 0x40
	badVersion := bytes.Clone(good)
	badVersion[len(magic)] = 9
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"header only", good[:headerLen], "truncated"},
		{"cut in the middle", good[:len(good)/2], "crc mismatch"},
		{"last byte missing", good[:len(good)-1], "crc mismatch"},
		{"bit flipped", flip, "crc mismatch"},
		{"trailing garbage", append(bytes.Clone(good), 0), "crc mismatch"},
		{"not a snapshot", []byte("REDIS0011 this is an rdb file, not ours"), "bad magic"},
		{"future version", badVersion, "unsupported version 9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "case.ldb")
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			dst := engine.New(clk, 4)
			_, err := Load(p, dst, nil)
			if err == nil || !strings.HasPrefix(err.Error(), "snapshot: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a 'snapshot: ...%s...' error", err, tc.want)
			}
			if dst.Len() != 0 {
				t.Fatalf("%d keys loaded from a damaged file", dst.Len())
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "nope.ldb"), engine.New(clk, 4), nil)
		if !errors.Is(err, ErrNotExist) {
			t.Fatalf("err = %v, want ErrNotExist", err)
		}
	})
}

func TestSections(t *testing.T) {
	t.Parallel()
	var stored []byte
	var with Sections
	with.Add("test-section", func() ([]byte, error) { return []byte("policy data"), nil },
		func(b []byte) error { stored = bytes.Clone(b); return nil })
	clk := clock.NewFake(t0)
	path := filepath.Join(t.TempDir(), "dump.ldb")
	if _, err := Save(path, engine.New(clk, 1), &with); err != nil {
		t.Fatal(err)
	}
	st, err := Load(path, engine.New(clk, 1), &with)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sections != 1 || string(stored) != "policy data" {
		t.Fatalf("sections %d, data %q", st.Sections, stored)
	}

	st, err = Load(path, engine.New(clk, 1), &Sections{})
	if err != nil || len(st.UnknownSections) != 1 || st.UnknownSections[0] != "test-section" {
		t.Fatalf("unknown section: %v, %+v", err, st)
	}
	var failing Sections
	failing.Add("test-section", func() ([]byte, error) { return nil, nil },
		func([]byte) error { return errors.New("bad policy") })
	if _, err := Load(path, engine.New(clk, 1), &failing); err == nil || !strings.Contains(err.Error(), "snapshot: section test-section: bad policy") {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkSave writes a snapshot of a million GCRA keys; besides the time
// per snapshot it reports the longest single shard hold, the longest a
// client could wait on the save, and the mean (on a busy machine the max
// mostly measures the save's thread being descheduled while it holds a
// lock; the mean is the work itself).
func BenchmarkSave(b *testing.B) {
	e := engine.New(clock.NewFake(t0), 0)
	fill(e, 1_000_000)
	path := filepath.Join(b.TempDir(), "dump.ldb")
	b.ResetTimer()
	var hold, mean time.Duration
	for i := 0; i < b.N; i++ {
		st, err := Save(path, e, nil)
		if err != nil {
			b.Fatal(err)
		}
		hold = max(hold, st.MaxShardHold)
		mean += st.MeanShardHold / time.Duration(b.N)
	}
	b.ReportMetric(float64(hold.Microseconds()), "max-shard-hold-µs")
	b.ReportMetric(float64(mean.Microseconds()), "mean-shard-hold-µs")
}

// TestLoadIntoTooFewShards loads a snapshot whose keys fill more than one
// shard can hold into a server with one shard: an error naming the cause,
// not a panic at start-up.
func TestLoadIntoTooFewShards(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("saves and loads 300 MiB of keys")
	}
	clk := clock.NewFake(t0)
	src := engine.New(clk, 4)
	key := make([]byte, 1<<20) // 300 keys of 1 MiB: more than a shard's 256 MiB
	exp := t0 + int64(time.Hour)
	for i := 0; i < 300; i++ {
		copy(key, fmt.Sprint(i, ":"))
		src.Do(key, t0, func(engine.Entry) (engine.Entry, bool) {
			return engine.Entry{Kind: engine.KindGCRA, A: exp, Expire: exp}, true
		})
	}
	path := filepath.Join(t.TempDir(), "dump.ldb")
	if _, err := Save(path, src, nil); err != nil {
		t.Fatal(err)
	}
	src = nil
	st, err := Load(path, engine.New(clk, 1), nil)
	if !errors.Is(err, engine.ErrShardFull) || !strings.Contains(err.Error(), "--shards") {
		t.Fatalf("Load into one shard: %v, want ErrShardFull and advice", err)
	}
	if st.Keys < 200 || st.Keys >= 300 {
		t.Errorf("%d keys loaded before the shard filled, want 200-299", st.Keys)
	}
	if st, err := Load(path, engine.New(clk, 2), nil); err != nil || st.Keys != 300 {
		t.Errorf("Load into two shards: %d keys, %v; want all 300", st.Keys, err)
	}
}

// TestLoadRefusesAbsurdTimestamps: a limiter state fresh again only after
// longer than any limit spans was not written by limitdb: the load fails
// naming the key, as for a corrupt file. A string may expire that late.
func TestLoadRefusesAbsurdTimestamps(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	cases := []struct {
		name string
		ent  engine.Entry
		ok   bool
	}{
		{"GCRA a year ahead", engine.Entry{Kind: engine.KindGCRA, A: t0 + 365*24*int64(time.Hour), Expire: t0 + 365*24*int64(time.Hour)}, true},
		{"GCRA 235 years ahead", engine.Entry{Kind: engine.KindGCRA, A: t0 + 235*365*24*int64(time.Hour), Expire: t0 + 235*365*24*int64(time.Hour)}, false},
		{"a string 235 years ahead", engine.Entry{Kind: engine.KindString, A: 7, B: 1, Expire: t0 + 235*365*24*int64(time.Hour)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := engine.New(clk, 1)
			src.Do([]byte("k"), t0, func(engine.Entry) (engine.Entry, bool) { return tc.ent, true })
			path := filepath.Join(t.TempDir(), "dump.ldb")
			if _, err := Save(path, src, nil); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, engine.New(clk, 1), nil)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Load: %v", err)
			case !tc.ok && (err == nil || !strings.Contains(err.Error(), `key "k"`) || !strings.Contains(err.Error(), "corrupt")):
				t.Fatalf("Load = %v, want a refusal naming the key", err)
			}
		})
	}
}

// TestSaveToAFullDisk: the snapshot's writes fail (its temporary file is
// /dev/full, whose every write is ENOSPC): Save reports it, the previous
// snapshot survives whole and loads, and no half-written file is left.
func TestSaveToAFullDisk(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	clk := clock.NewFake(t0)
	e := engine.New(clk, 4)
	exp := t0 + int64(time.Hour)
	put := func(n int) {
		for i := 0; i < n; i++ {
			e.Do([]byte(fmt.Sprint("k", i)), t0, func(engine.Entry) (engine.Entry, bool) {
				return engine.Entry{Kind: engine.KindGCRA, A: exp, Expire: exp}, true
			})
		}
	}
	put(100)
	path := filepath.Join(t.TempDir(), "dump.ldb")
	if _, err := Save(path, e, nil); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	put(5000) // more than a buffer's worth, so the writes reach the file
	if err := os.Symlink("/dev/full", path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(path, e, nil); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Save onto a full disk = %v, want ENOSPC", err)
	}
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, good) {
		t.Fatalf("the previous snapshot changed (%v)", err)
	}
	if st, err := Load(path, engine.New(clk, 4), nil); err != nil || st.Keys != 100 {
		t.Fatalf("the previous snapshot loads %d keys, %v; want 100", st.Keys, err)
	}
	if _, err := os.Lstat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
}
