package persistence

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

// rec is one record: a RESP array of bulk strings.
func rec(args ...string) string {
	s := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	return s
}

// collect returns an apply that records what it is given.
func collect(got *[]string) func([][]byte) error {
	return func(args [][]byte) error {
		var parts []string
		for _, a := range args {
			parts = append(parts, string(a))
		}
		*got = append(*got, strings.Join(parts, " "))
		return nil
	}
}

func openAOF(t *testing.T, dir string) *AOF {
	t.Helper()
	a, err := OpenAOF(dir, "appendonly.aof")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func load(t *testing.T, a *AOF, truncatedOK bool) ([]string, AOFLoadStats, error) {
	t.Helper()
	var got []string
	st, err := a.Load(engine.New(clock.NewFake(t0), 2), &Sections{}, collect(&got), truncatedOK)
	return got, st, err
}

func TestAOFAppendsAndLoadsInOrder(t *testing.T) {
	dir := t.TempDir()
	a := openAOF(t, dir)
	if a.Exists() {
		t.Fatal("an empty directory has an AOF")
	}
	if err := a.Reopen(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := a.Append([]byte(rec("APPLY", fmt.Sprint("k", i), "v"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := openAOF(t, dir)
	got, st, err := load(t, b, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"APPLY k0 v", "APPLY k1 v", "APPLY k2 v"}
	if strings.Join(got, "|") != strings.Join(want, "|") || st.Records != 3 {
		t.Fatalf("loaded %q (%d records), want %q", got, st.Records, want)
	}
	// A restarted server appends to the same file.
	if err := b.Reopen(); err != nil {
		t.Fatal(err)
	}
	b.Append([]byte(rec("APPLY", "k3", "v")))
	b.Close()
	got, _, err = load(t, openAOF(t, dir), false)
	if err != nil || len(got) != 4 || got[3] != "APPLY k3 v" {
		t.Fatalf("after a restart: %q, %v", got, err)
	}
	m, _ := os.ReadFile(filepath.Join(dir, "appendonly.aof.manifest"))
	if string(m) != "file appendonly.aof.1.incr.aof seq 1 type i\n" {
		t.Errorf("manifest %q", m)
	}
}

// TestAOFTornLastRecord: a crash in the middle of a write leaves part of a
// record at the end of the last file. aof-load-truncated yes loads what
// comes before it and cuts it off; no refuses, naming the offset.
func TestAOFTornLastRecord(t *testing.T) {
	whole := rec("APPLY", "a", "1") + rec("APPLY", "b", "2")
	for cut := 1; cut < len(rec("APPLY", "c", "3")); cut++ {
		dir := t.TempDir()
		a := openAOF(t, dir)
		a.Reopen()
		a.Append([]byte(whole + rec("APPLY", "c", "3")[:cut]))
		a.Close()
		_, _, err := load(t, openAOF(t, dir), false)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", len(whole))) {
			t.Fatalf("cut %d, aof-load-truncated no: %v, want the offset %d named", cut, err, len(whole))
		}
		got, st, err := load(t, openAOF(t, dir), true)
		if err != nil || len(got) != 2 || st.Truncated != int64(cut) {
			t.Fatalf("cut %d, aof-load-truncated yes: %q, %d truncated, %v", cut, got, st.Truncated, err)
		}
		fi, _ := os.Stat(filepath.Join(dir, "appendonly.aof.1.incr.aof"))
		if fi.Size() != int64(len(whole)) {
			t.Fatalf("cut %d: the file was left at %d bytes, want %d", cut, fi.Size(), len(whole))
		}
	}
}

// TestAOFCorruptRecordRefused: damage that is not a torn end refuses to
// load whatever aof-load-truncated says, with the file and offset named.
func TestAOFCorruptRecordRefused(t *testing.T) {
	first := rec("APPLY", "a", "1")
	for name, bad := range map[string]string{
		"bad header":   "?3\r\nxx\r\n",
		"bad length":   "*1\r\n$x\r\n",
		"missing CRLF": "*1\r\n$1\r\nabc\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			a := openAOF(t, dir)
			a.Reopen()
			a.Append([]byte(first + bad + rec("APPLY", "b", "2")))
			a.Close()
			_, _, err := load(t, openAOF(t, dir), true)
			want := fmt.Sprintf("appendonly.aof.1.incr.aof: bad record at offset %d", len(first))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%v, want %q", err, want)
			}
		})
	}
	// A record that parses but that the server refuses is named too.
	dir := t.TempDir()
	a := openAOF(t, dir)
	a.Reopen()
	a.Append([]byte(first + rec("FROB")))
	a.Close()
	_, err := openAOF(t, dir).Load(engine.New(clock.NewFake(t0), 2), &Sections{}, func(args [][]byte) error {
		if string(args[0]) == "FROB" {
			return fmt.Errorf("unknown verb")
		}
		return nil
	}, true)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("record at offset %d: unknown verb", len(first))) {
		t.Fatalf("refused record: %v", err)
	}
}

// TestAOFRewrite: after a rotation, a new base plus the incr files from
// the rotation on replace everything before; the old files go.
func TestAOFRewrite(t *testing.T) {
	dir := t.TempDir()
	a := openAOF(t, dir)
	a.Reopen()
	a.Append([]byte(rec("APPLY", "old", "1")))
	seq, err := a.Rotate()
	if err != nil || seq != 2 {
		t.Fatalf("rotate: %d, %v", seq, err)
	}
	a.Append([]byte(rec("APPLY", "new", "2")))
	eng := engine.New(clock.NewFake(t0), 2)
	fill(eng, 10)
	if err := a.Rewrite(seq, func(path string) error { _, err := Save(path, eng, &Sections{}); return err }); err != nil {
		t.Fatal(err)
	}
	a.Append([]byte(rec("APPLY", "newer", "3")))
	a.Close()
	m, _ := os.ReadFile(filepath.Join(dir, "appendonly.aof.manifest"))
	if want := "file appendonly.aof.1.base.ldb seq 1 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\n"; string(m) != want {
		t.Errorf("manifest %q, want %q", m, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "appendonly.aof.1.incr.aof")); !os.IsNotExist(err) {
		t.Errorf("the replaced incr file is still there: %v", err)
	}
	b := openAOF(t, dir)
	dst := engine.New(clock.NewFake(t0), 2)
	var got []string
	st, err := b.Load(dst, &Sections{}, collect(&got), false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Base.Keys != 10 || dst.Len() != 10 || strings.Join(got, "|") != "APPLY new 2|APPLY newer 3" {
		t.Fatalf("base keys %d, engine %d, records %q", st.Base.Keys, dst.Len(), got)
	}
	if s := b.Stats(); s.BaseSize == 0 || s.CurrentSize <= s.BaseSize || s.Files != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestAOFBadManifest(t *testing.T) {
	for name, m := range map[string]string{
		"no type":     "file a.1.incr.aof seq 1\n",
		"odd":         "file a.1.incr.aof seq\n",
		"bad seq":     "file a.1.incr.aof seq x type i\n",
		"two bases":   "file b1 seq 1 type b\nfile b2 seq 2 type b\n",
		"out of dir":  "file ../x seq 1 type i\n",
		"missing":     "file nothere seq 1 type i\n",
		"unknown":     "file x seq 1 type q\n",
		"seq order":   "file x seq 2 type i\nfile y seq 1 type i\n",
		"empty lists": "# nothing\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
			os.WriteFile(filepath.Join(dir, "y"), nil, 0o644)
			os.WriteFile(filepath.Join(dir, "appendonly.aof.manifest"), []byte(m), 0o644)
			if _, err := OpenAOF(dir, "appendonly.aof"); err == nil || !strings.HasPrefix(err.Error(), "aof: ") {
				t.Errorf("%q: %v", m, err)
			}
		})
	}
}

// FuzzManifest: whatever the manifest holds, opening the directory never
// panics, and what it accepts names only files inside the directory.
func FuzzManifest(f *testing.F) {
	f.Add([]byte("file appendonly.aof.1.base.ldb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"))
	f.Add([]byte("file x seq 2 type i\n# comment\n\nfile y seq 3 type i\n"))
	f.Fuzz(func(t *testing.T, m []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "appendonly.aof.manifest"), m, 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := OpenAOF(dir, "appendonly.aof")
		if err != nil {
			return
		}
		for _, file := range a.files() {
			if strings.ContainsAny(file.name, "/\\\\") {
				t.Fatalf("accepted a file outside the directory: %q", file.name)
			}
		}
	})
}
