package persistence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

func TestParseRecord(t *testing.T) {
	whole := "*3\r\n$5\r\nAPPLY\r\n$1\r\nk\r\n$0\r\n\r\n"
	cases := []struct {
		name string
		in   string
		n    int // the record's length; 0: b ends inside it
		args []string
		bad  bool
	}{
		{name: "a record", in: whole, n: len(whole), args: []string{"APPLY", "k", ""}},
		{name: "a record and more", in: whole + "*1\r\n", n: len(whole), args: []string{"APPLY", "k", ""}},
		{name: "nothing", in: ""},
		{name: "inside the header", in: "*3\r"},
		{name: "inside an argument's header", in: "*3\r\n$5"},
		{name: "inside an argument", in: "*3\r\n$5\r\nAPP"},
		{name: "before the last CRLF", in: whole[:len(whole)-1]},
		{name: "not an array", in: "PING\r\n", bad: true},
		{name: "an empty array", in: "*0\r\n", bad: true},
		{name: "not a bulk string", in: "*1\r\n:5\r\n", bad: true},
		{name: "a negative length", in: "*1\r\n$-5\r\n", bad: true},
		{name: "no CRLF after the bulk", in: "*1\r\n$2\r\nabXY", bad: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args, n, err := ParseRecord([]byte(c.in), nil)
			if c.bad {
				if !errors.Is(err, ErrBadRecord) {
					t.Fatalf("err = %v, want a bad record", err)
				}
				return
			}
			if err != nil || n != c.n || len(args) != len(c.args) {
				t.Fatalf("= %q, %d, %v; want %q, %d", args, n, err, c.args, c.n)
			}
			for i := range args {
				if string(args[i]) != c.args[i] {
					t.Errorf("argument %d = %q, want %q", i, args[i], c.args[i])
				}
			}
		})
	}
}

// FuzzParseRecord: ParseRecord parses what ReadRecord reads, to the same
// arguments and length, and refuses nothing that ReadRecord reads.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte("*3\r\n$5\r\nAPPLY\r\n$1\r\nk\r\n$4\r\n\x01\x02\x02\x00\r\n"))
	f.Add([]byte("*2\r\n$4\r\nDROP\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		args, n, perr := ParseRecord(data, nil)
		want, raw, rerr := ReadRecord(bufio.NewReaderSize(bytes.NewReader(data), 1<<16), nil, nil)
		switch {
		case perr != nil && rerr == nil:
			t.Fatalf("ParseRecord refuses what ReadRecord reads: %v", perr)
		case n > 0 && rerr != nil:
			t.Fatalf("ParseRecord parses what ReadRecord refuses: %v", rerr)
		case n > 0 && (n != len(raw) || fmt.Sprintf("%q", args) != fmt.Sprintf("%q", want)):
			t.Fatalf("ParseRecord: %q in %d bytes; ReadRecord: %q in %d", args, n, want, len(raw))
		}
	})
}

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
		args, _, err := ReadRecord(bufioReader([]byte(bad)), nil, nil)
		if err == nil {
			err = (&Applier{Eng: engine.New(clock.NewFake(0), 2), Sections: &Sections{}}).Apply(0, args)
		}
		if err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestApplyRefusesWhatItCannotDecode(t *testing.T) {
	eng := engine.New(clock.NewFake(0), 2)
	ap := Applier{Eng: eng, Sections: &Sections{}}
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
		if args[0] != "SECTION" && !errors.Is(err, ErrBadRecord) {
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
		ap := Applier{Eng: engine.New(clock.NewFake(0), 2), Sections: &Sections{}}
		br := bufioReader(data)
		for br.Buffered() > 0 {
			args, _, err := ReadRecord(br, nil, nil)
			if err != nil {
				return
			}
			ap.Apply(1, args)
		}
		checkKeyspace(t, ap.Eng)
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
		sets = AppendCommand(sets, VerbApply, k, string(entry))
	}
	sets = sets[:len(sets):len(sets)] // each form appends to a copy
	forms := map[string][]byte{
		"APPLY key <empty>": AppendCommand(AppendCommand(sets, VerbApply, "a", ""), VerbApply, "c", ""),
		"DROP":              appendDropRESP(sets, [][]byte{[]byte("a"), []byte("c")}),
		"compact DROP":      AppendDrop(sets, [][]byte{[]byte("a"), []byte("c")}),
	}
	for name, data := range forms {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			a, err := OpenAOF(dir, "appendonly.aof")
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
			b, err := OpenAOF(dir, "appendonly.aof")
			if err != nil {
				t.Fatal(err)
			}
			eng := engine.New(clock.NewFake(0), 4)
			ap := Applier{Eng: eng, Sections: &Sections{}}
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

// AppendArgs encodes what AppendCommand does, from bytes.
func TestAppendArgsIsAppendCommand(t *testing.T) {
	for _, args := range [][]string{{"PING"}, {"AUTH", "user", "p\r\nw"}, {"SET", "", "0123456789"}} {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		if got, want := string(AppendArgs(nil, b)), string(AppendCommand(nil, args...)); got != want {
			t.Errorf("%q: AppendArgs %q, AppendCommand %q", args, got, want)
		}
	}
}
