package persistence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"testing"
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
