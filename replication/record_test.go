package replication

import (
	"bufio"
	"bytes"
	"errors"
	"testing"

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
			err = (&Applier{Eng: engine.New(nil, 2), Sections: &persistence.Sections{}}).Apply(0, args)
		}
		if err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestApplyRefusesWhatItCannotDecode(t *testing.T) {
	eng := engine.New(nil, 2)
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
	f.Fuzz(func(t *testing.T, data []byte) {
		ap := Applier{Eng: engine.New(nil, 2), Sections: &persistence.Sections{}}
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
