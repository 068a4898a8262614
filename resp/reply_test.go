package resp

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadReply: each reply is consumed whole and its head returned, so
// the next reply starts where it should.
func TestReadReply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     Reply
	}{
		{"ok", "+OK\r\n", Reply{'+', "OK"}},
		{"error", "-BUSYKEY Target key name already exists.\r\n", Reply{'-', "BUSYKEY Target key name already exists."}},
		{"integer", ":-3\r\n", Reply{':', "-3"}},
		{"bulk", "$5\r\na\r\nbc\r\n", Reply{'$', "5"}},
		{"null bulk", "$-1\r\n", Reply{'$', "-1"}},
		{"array", "*2\r\n$1\r\na\r\n*1\r\n:1\r\n", Reply{'*', "2"}},
		{"map", "%1\r\n+k\r\n+v\r\n", Reply{'%', "1"}},
		{"bulk error", "!9\r\nERR oops!\r\n", Reply{'!', "ERR oops!"}},
		{"attribute", "|1\r\n+a\r\n+b\r\n+OK\r\n", Reply{'+', "OK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tc.in + "+NEXT\r\n"))
			got, err := ReadReply(r)
			if err != nil || got != tc.want {
				t.Fatalf("ReadReply = %+v, %v; want %+v", got, err, tc.want)
			}
			if next, err := ReadReply(r); err != nil || next.Line != "NEXT" {
				t.Fatalf("the reply after it = %+v, %v", next, err)
			}
		})
	}
}

// TestReadReplyRefuses: a broken or cut reply is an error, never a reply.
func TestReadReplyRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "+OK", "+OK\n", "$3\r\nab", "$3\r\nabcd\r\n", "*2\r\n+a\r\n", "?x\r\n", "$x\r\n", "*-5\r\n"} {
		if got, err := ReadReply(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%q: ReadReply = %+v, want an error", in, got)
		} else if in == "" && !errors.Is(err, io.EOF) {
			t.Errorf("empty input: err = %v, want io.EOF", err)
		}
	}
}

// FuzzReadReply: any bytes give a reply or an error, never a panic.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "|1\r\n+a\r\n+b\r\n-ERR x\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ReadReply(bufio.NewReader(strings.NewReader(string(b))))
	})
}

// TestReadBulk: a bulk string's body is returned, other replies are read
// as ReadReply reads them, and a body over the limit is refused.
func TestReadBulk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     Reply
		body     string
		err      bool
	}{
		{"bulk", "$5\r\na\r\nbc\r\n", Reply{'$', "5"}, "a\r\nbc", false},
		{"null", "$-1\r\n", Reply{'$', "-1"}, "", false},
		{"error", "-ERR no\r\n", Reply{'-', "ERR no"}, "", false},
		{"array", "*1\r\n$1\r\na\r\n", Reply{'*', "1"}, "", false},
		{"too long", "$20\r\n01234567890123456789\r\n", Reply{}, "", true},
		{"cut", "$5\r\nab", Reply{}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tc.in + "+NEXT\r\n"))
			got, body, err := ReadBulk(r, 10)
			if tc.err {
				if err == nil {
					t.Fatalf("ReadBulk(%q) = %v, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want || string(body) != tc.body {
				t.Fatalf("ReadBulk(%q) = %v %q %v, want %v %q", tc.in, got, body, err, tc.want, tc.body)
			}
			if next, err := ReadReply(r); err != nil || next.Line != "NEXT" {
				t.Fatalf("after %q: %v %v", tc.in, next, err)
			}
		})
	}
}
