package replication

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

func bufioReader(b []byte) *bufio.Reader {
	r := bufio.NewReaderSize(bytes.NewReader(b), 64<<10)
	r.Peek(1)
	return r
}

func TestBadRecordsAreErrors(t *testing.T) {
	for _, bad := range []string{
		"PING\r\n",                         // inline: not an array
		"*0\r\n",                           // empty
		"*1\r\n:5\r\n",                     // not a bulk string
		"*1\r\n$3\r\nab\r\n",               // short
		"*1\r\n$99999999999\r\nx\r\n",      // too long
		"*2\r\n$5\r\nAPPLY\r\n$1\r\nk\r\n", // torn: no second argument... and an odd APPLY
		"*1\r\n$-5\r\n",                    // negative
		"*1\r\n$2\r\nabXY",                 // no CRLF
	} {
		args, _, err := persistence.ReadRecord(bufioReader([]byte(bad)), nil, nil)
		if err == nil {
			err = (&Applier{Eng: engine.New(clock.NewFake(0), 2), Sections: &persistence.Sections{}}).Apply(0, args)
		}
		if err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestApplyRefusesWhatItCannotDecode(t *testing.T) {
	eng := engine.New(clock.NewFake(0), 2)
	ap := Applier{Eng: eng, Sections: &persistence.Sections{}}
	for _, args := range [][]string{
		{"APPLY", "k", "\xff\x00garbage"},
		{"APPLY", "k"},
		{"FROB", "k"},
		{"SECTION", "nobody", "x"},
	} {
		var b [][]byte
		for _, a := range args {
			b = append(b, []byte(a))
		}
		err := ap.Apply(0, b)
		if err == nil {
			t.Errorf("%q: no error", args)
		}
		if args[0] != "SECTION" && !errors.Is(err, persistence.ErrBadRecord) {
			t.Errorf("%q: %v is not a bad record", args, err)
		}
	}
	if eng.Len() != 0 {
		t.Errorf("refused records left %d keys", eng.Len())
	}
}

// FuzzApply: whatever a primary sends, the replica never panics.
func FuzzApply(f *testing.F) {
	f.Add([]byte("*3\r\n$5\r\nAPPLY\r\n$1\r\nk\r\n$4\r\n\x01\x02\x02\x00\r\n"))
	f.Add([]byte("*1\r\n$5\r\nRESET\r\n"))
	f.Add([]byte("*3\r\n$4\r\nDROP\r\n$1\r\nk\r\n$1\r\nj\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ap := Applier{Eng: engine.New(clock.NewFake(0), 2), Sections: &persistence.Sections{}}
		br := bufioReader(data)
		for br.Buffered() > 0 {
			args, _, err := persistence.ReadRecord(br, nil, nil)
			if err != nil {
				return
			}
			ap.Apply(1, args)
		}
	})
}

// TestAOFOfEitherDeletionFormLoads: an append-only file holds active
// expiry's deletions as DROP records, or, written by a version before
// DROP, as one "APPLY key <empty>" per key; both load to the same
// keyspace.
func TestAOFOfEitherDeletionFormLoads(t *testing.T) {
	const now = int64(1_700_000_000e9)
	entry, err := engine.Entry{Kind: engine.KindGCRA, A: now + 60e6, Expire: now + 60e6}.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	var sets []byte
	for _, k := range []string{"a", "b", "c"} {
		sets = AppendCommand(sets, verbApply, k, string(entry))
	}
	forms := map[string][]byte{
		"APPLY key <empty>": AppendCommand(AppendCommand(sets, verbApply, "a", ""), verbApply, "c", ""),
		"DROP":              appendDrop(sets, [][]byte{[]byte("a"), []byte("c")}),
	}
	for name, data := range forms {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			a, err := persistence.OpenAOF(dir, "appendonly.aof")
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Reopen(); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Append(data); err != nil {
				t.Fatal(err)
			}
			a.Close()
			b, err := persistence.OpenAOF(dir, "appendonly.aof")
			if err != nil {
				t.Fatal(err)
			}
			eng := engine.New(clock.NewFake(0), 4)
			ap := Applier{Eng: eng, Sections: &persistence.Sections{}}
			st, err := b.Load(eng, ap.Sections, func(args [][]byte) error { return ap.Apply(now, args) }, false)
			if err != nil {
				t.Fatal(err)
			}
			if st.Records == 0 {
				t.Fatal("nothing loaded")
			}
			for k, want := range map[string]bool{"a": false, "b": true, "c": false} {
				if _, ok := eng.Get([]byte(k), now); ok != want {
					t.Errorf("key %s stored: %v, want %v", k, ok, want)
				}
			}
		})
	}
}

func TestAppendCount(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 42, 99, 100, 12345, 1 << 40} {
		if got, want := string(appendCount([]byte("x"), n)), "x"+strconv.Itoa(n); got != want {
			t.Errorf("appendCount(%d) = %q, want %q", n, got, want)
		}
	}
}
