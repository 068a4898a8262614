package command

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/engine"
	"github.com/tidwall/redcon"
)

// chunkReader delivers data size bytes per Read, as a slow socket would.
type chunkReader struct {
	data []byte
	size int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.size, len(r.data), len(p))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// transcript is what a reader made of a byte stream: every command's raw
// bytes and arguments, in order, then the error that ended it.
func transcript(next func() ([]redcon.Command, error)) string {
	var b bytes.Buffer
	for i := 0; i < 10_000; i++ {
		cmds, err := next()
		for _, c := range cmds {
			fmt.Fprintf(&b, "raw %q args %q\n", c.Raw, c.Args)
		}
		if err != nil {
			fmt.Fprintf(&b, "error %q\n", err.Error())
			return b.String()
		}
	}
	return b.String() + "no end\n"
}

func redconTranscript(data []byte, size int) string {
	rd := redcon.NewReader(&chunkReader{data: data, size: size})
	return transcript(rd.ReadCommands)
}

func limitdbTranscript(data []byte, size int) string {
	rd := reader{rd: &chunkReader{data: data, size: size}}
	return transcript(func() ([]redcon.Command, error) {
		cmds, err := rd.read()
		return cloneCommands(cmds), err
	})
}

// TestReaderMatchesRedcon feeds redcon's reader and limitdb's the same
// bytes, whole and in small chunks, and wants the same commands and the
// same error.
func TestReaderMatchesRedcon(t *testing.T) {
	cases := []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"*5\r\n$11\r\nCL.THROTTLE\r\n$6\r\nuser:1\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n",
		"PING\r\n",
		"set k \"a b\\n\" 'c'\r\nget k\n",
		"   \r\nPING\r\n",
		"ping \"unbalanced\r\n",
		"*0\r\n",
		"*-1\r\n",
		"*x\r\n",
		"*1\n",
		"*1\r\n+PING\r\n",
		"*1\r\n$x\r\nPING\r\n",
		"*1\r\n$-1\r\n",
		"*1\r\n$4\nPING\r\n",
		"*1\r\n$4\r\nPINGXX",
		"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI",
		"*2\r\n$4\r\nECHO\r\n$3\r\n\r\n\r\n\r\n",
		"*1\r\n$4\r\nPING\r\nECHO hi\r\n*1\r\n$4\r\nPING\r\n",
		"*1\r\n$" + "100000\r\n" + string(bytes.Repeat([]byte("x"), 100000)) + "\r\n",
	}
	for i, in := range cases {
		for _, size := range []int{1, 3, 7, 1 << 20} {
			t.Run(fmt.Sprintf("%d/%d", i, size), func(t *testing.T) {
				want := redconTranscript([]byte(in), size)
				if got := limitdbTranscript([]byte(in), size); got != want {
					t.Errorf("input %.60q in chunks of %d:\nlimitdb:\n%.500s\nredcon:\n%.500s", in, size, got, want)
				}
			})
		}
	}
}

// longNumber matches lengths where redcon's parser overflows or spins (it
// loops once per declared argument, data or not); limitdb's refuses or
// waits for the data instead, so those inputs are not compared.
var longNumber = regexp.MustCompile(`[0-9]{4}`)

func FuzzReaderMatchesRedcon(f *testing.F) {
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"), 3)
	f.Add([]byte("echo 'a\\'b' \"c\\x\"\r\n"), 1)
	f.Add([]byte("*1\r\n$4\r\nPING\r\n*1\r\n$"), 5)
	f.Fuzz(func(t *testing.T, in []byte, size int) {
		if longNumber.Match(in) || size < 1 {
			t.Skip()
		}
		want := redconTranscript(in, size)
		if got := limitdbTranscript(in, size); got != want {
			t.Errorf("input %q in chunks of %d:\nlimitdb:\n%s\nredcon:\n%s", in, size, got, want)
		}
	})
}

func TestAppendInt(t *testing.T) {
	for _, n := range []int64{0, 1, -1, 9, 10, 99, 100, -100, 123456789, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		want := ":" + strconv.FormatInt(n, 10) + "\r\n"
		if got := string(appendInt([]byte("x"), n)); got != "x"+want {
			t.Errorf("appendInt(%d) = %q, want %q", n, got, "x"+want)
		}
	}
}

// TestGuardSplitMatchesReader reads valid pipelines through the guard, in
// chunks of several sizes, and wants the same commands as the reader alone
// makes of them: the guard's split (limits.go), which the reader takes
// instead of parsing when it covers a whole read, must be the same parse.
// With whole reads of multibulk commands, the split must be what is used.
func TestGuardSplitMatchesReader(t *testing.T) {
	s := New(DefaultConfig(), engine.New(nil, 0), nil)
	s.guard.loadLimits(s.Config().Limits)
	throttle := "*5\r\n$11\r\nCL.THROTTLE\r\n$6\r\nuser:1\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n"
	cases := []struct {
		in       string
		allSplit bool // every read of the whole input is taken from the split
	}{
		{strings.Repeat(throttle, 16), true},
		{"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", true},
		{"PING\r\n" + throttle + "ECHO hi\r\n" + throttle, false},
		{throttle + "*2\r\n$4\r\nECHO\r\n$70000\r\n" + strings.Repeat("x", 70000) + "\r\n" + throttle, false},
	}
	for i, tc := range cases {
		for _, size := range []int{1, 3, 7, 64, 1 << 20} {
			t.Run(fmt.Sprintf("%d/%d", i, size), func(t *testing.T) {
				want := limitdbTranscript([]byte(tc.in), size)
				g := &guardConn{Conn: fakeNetConn{&chunkReader{data: []byte(tc.in), size: size}}, s: s}
				rd := reader{rd: g}
				reads, fromSplit := 0, 0
				got := transcript(func() ([]redcon.Command, error) {
					cmds, err := rd.read()
					if len(cmds) > 0 {
						reads++
						if len(g.split.cmds) > 0 && &cmds[0] == &g.split.cmds[0] {
							fromSplit++
						}
					}
					return cloneCommands(cmds), err
				})
				if got != want {
					t.Errorf("input %.60q in chunks of %d through the guard:\n%.500s\nwithout:\n%.500s", tc.in, size, got, want)
				}
				if tc.allSplit && size == 1<<20 && fromSplit != reads {
					t.Errorf("%d of %d reads taken from the guard's split, want all", fromSplit, reads)
				}
			})
		}
	}
}

// cloneCommands copies commands out of the reader's buffers, which the
// next read reuses.
func cloneCommands(cmds []redcon.Command) []redcon.Command {
	out := make([]redcon.Command, len(cmds))
	for i, c := range cmds {
		out[i].Raw = bytes.Clone(c.Raw)
		for _, a := range c.Args {
			out[i].Args = append(out[i].Args, bytes.Clone(a))
		}
	}
	return out
}
