package resp

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
func transcript(next func() ([]Command, error)) string {
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

// redconTranscript reads data with redcon's reader one byte at a time, so
// that every batch holds at most one command: redcon drops the commands
// read with a bad one in the same batch, where Redis (and limitdb) run
// them first and then answer the error.
func redconTranscript(data []byte) string {
	rd := redcon.NewReader(&chunkReader{data: data, size: 1})
	return transcript(func() ([]Command, error) {
		cmds, err := rd.ReadCommands()
		out := make([]Command, len(cmds))
		for i, c := range cmds {
			out[i] = Command{Raw: c.Raw, Args: c.Args}
		}
		return out, err
	})
}

func readerTranscript(data []byte, size int, lim Limits) string {
	rd := NewReader(&chunkReader{data: data, size: size})
	return transcript(func() ([]Command, error) {
		cmds, err := rd.Read(lim)
		return cloneCommands(cmds), err
	})
}

// cloneCommands copies commands out of the reader's buffers, which the
// next read reuses.
func cloneCommands(cmds []Command) []Command {
	out := make([]Command, len(cmds))
	for i, c := range cmds {
		out[i].Raw = bytes.Clone(c.Raw)
		for _, a := range c.Args {
			out[i].Args = append(out[i].Args, bytes.Clone(a))
		}
	}
	return out
}

var readerCases = []string{
	"*1\r\n$4\r\nPING\r\n",
	"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
	"*5\r\n$11\r\nCL.THROTTLE\r\n$6\r\nuser:1\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n",
	"PING\r\n",
	"set k \"a b\\n\" 'c'\r\nget k\n",
	"   \r\nPING\r\n",
	"ping \"unbalanced\r\n",
	"PING\r\nping \"unbalanced\r\n",
	"*x\r\n",
	"*1\n",
	"*1\r\n+PING\r\n",
	"*1\r\n$x\r\nPING\r\n",
	"*1\r\n$-1\r\n",
	"*1\r\n$4\nPING\r\n",
	"*1\r\n$4\r\nPINGXX",
	"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI",
	"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPINGXX",
	"*2\r\n$4\r\nECHO\r\n$3\r\n\r\n\r\n\r\n",
	"*1\r\n$4\r\nPING\r\nECHO hi\r\n*1\r\n$4\r\nPING\r\n",
	"*1\r\n$" + "100000\r\n" + strings.Repeat("x", 100000) + "\r\n",
}

// TestReaderMatchesRedcon feeds redcon's reader and limitdb's the same
// bytes, whole and in small chunks, and wants the same commands and the
// same error.
func TestReaderMatchesRedcon(t *testing.T) {
	t.Parallel()
	for i, in := range readerCases {
		want := redconTranscript([]byte(in))
		for _, size := range []int{1, 3, 7, 1 << 20} {
			t.Run(fmt.Sprintf("%d/%d", i, size), func(t *testing.T) {
				if got := readerTranscript([]byte(in), size, Unlimited()); got != want {
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

// emptyLength matches a count or length with no digits, which redcon reads
// as 0 and Redis and limitdb refuse, and a count of 0 or less, which redcon
// refuses and Redis and limitdb ignore (TestReaderIgnoresEmptyCommands).
var emptyLength = regexp.MustCompile(`[*$]-?\r|\*(0|-[0-9])`)

func FuzzReaderMatchesRedcon(f *testing.F) {
	f.Add([]byte("*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"), 3)
	f.Add([]byte("echo 'a\\'b' \"c\\x\"\r\n"), 1)
	f.Add([]byte("*1\r\n$4\r\nPING\r\n*1\r\n$"), 5)
	for _, in := range readerCases {
		f.Add([]byte(in), 2)
	}
	f.Fuzz(func(t *testing.T, in []byte, size int) {
		if longNumber.Match(in) || emptyLength.Match(in) || size < 1 {
			t.Skip()
		}
		want := redconTranscript(in)
		if got := readerTranscript(in, size, Unlimited()); !sameOrEarlier(got, want) {
			t.Errorf("input %q in chunks of %d:\nlimitdb:\n%s\nredcon:\n%s", in, size, got, want)
		}
	})
}

// sameOrEarlier reports whether limitdb's transcript equals redcon's, or
// differs only where limitdb refuses a malformed length or count at its
// first bad byte and redcon waits for the line to end (and so reaches the
// end of the input instead), or where limitdb names an unprintable byte
// in hex.
func sameOrEarlier(got, want string) bool {
	if got == want {
		return true
	}
	cut := func(s string) (string, string) {
		i := strings.LastIndex(strings.TrimSuffix(s, "\n"), "\n")
		return s[:i+1], s[i+1:]
	}
	gotCmds, gotEnd := cut(got)
	wantCmds, wantEnd := cut(want)
	if gotCmds != wantCmds {
		return false
	}
	const dollar = "error \"Protocol error: expected '$', got "
	return (wantEnd == "error \"EOF\"\n" && strings.HasPrefix(gotEnd, "error \"Protocol error: ")) ||
		(strings.HasPrefix(wantEnd, dollar) && strings.HasPrefix(gotEnd, dollar))
}

// FuzzReaderLimits reads arbitrary bytes under small limits, whole and in
// chunks: the reader never panics and makes the same commands and the
// same error however the bytes arrive (its scanner's state carries across
// reads exactly).
func FuzzReaderLimits(f *testing.F) {
	for _, in := range readerCases {
		f.Add([]byte(in), 3)
	}
	f.Add([]byte("*65\r\n"), 1)
	f.Add([]byte("*1\r\n$70000\r\n"), 2)
	lim := Limits{MaxArgs: 64, MaxBulk: 1 << 16, MaxQuery: 1 << 17}
	f.Fuzz(func(t *testing.T, in []byte, size int) {
		if size < 1 {
			t.Skip()
		}
		whole := readerTranscript(in, len(in)+1, lim)
		if got := readerTranscript(in, size, lim); got != whole {
			t.Errorf("input %q in chunks of %d:\n%s\nwhole:\n%s", in, size, got, whole)
		}
	})
}

// TestReaderIgnoresEmptyCommands: *0 and *-n make no command and no
// error, as in Redis (redis-server 7.0 answers "*0 PING *-1 PING" with two
// PONGs); a count with no digits is still an error.
func TestReaderIgnoresEmptyCommands(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"*0\r\nPING\r\n*-1\r\nPING\r\n*-5\r\nECHO a\r\n", "raw \"*1\\r\\n$4\\r\\nPING\\r\\n\" args [\"PING\"]\n" +
			"raw \"*1\\r\\n$4\\r\\nPING\\r\\n\" args [\"PING\"]\nraw \"*2\\r\\n$4\\r\\nECHO\\r\\n$1\\r\\na\\r\\n\" args [\"ECHO\" \"a\"]\nerror \"EOF\"\n"},
		{"*0\r\n*1\r\n$4\r\nPING\r\n", "raw \"*1\\r\\n$4\\r\\nPING\\r\\n\" args [\"PING\"]\nerror \"EOF\"\n"},
		{"*-\r\nPING\r\n", "error \"Protocol error: invalid multibulk length\"\n"},
	}
	for _, tc := range cases {
		for _, size := range []int{1, 4, 1 << 20} {
			if got := readerTranscript([]byte(tc.in), size, Unlimited()); got != tc.want {
				t.Errorf("%q in chunks of %d:\n%s\nwant:\n%s", tc.in, size, got, tc.want)
			}
		}
	}
}

// TestReaderLimits: a command over a limit is refused as soon as its bytes
// break it, with Redis's error, before the rest of it arrives.
func TestReaderLimits(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxArgs: 3, MaxBulk: 100, MaxQuery: 64}
	cases := []struct {
		name, in, want string
	}{
		{"too many arguments", "*4\r\n", "Protocol error: invalid multibulk length"},
		{"argument too long", "*1\r\n$101\r\n", "Protocol error: invalid bulk length"},
		{"query buffer", "*1\r\n$100\r\n" + strings.Repeat("x", 60), "Protocol error: client query buffer limit reached"},
		{"inline too long", strings.Repeat("x", maxInline+1), "Protocol error: too big inline request"},
		{"not a length", "*1\r\n$1x", "Protocol error: invalid bulk length"},
		{"no dollar", "*1\r\n:1\r\n", "Protocol error: expected '$', got ':'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lim := lim
			if tc.name == "inline too long" {
				lim.MaxQuery = math.MaxInt64
			}
			// No EOF behind the bytes: the error must come from them.
			rd := NewReader(io.MultiReader(strings.NewReader(tc.in), blockingReader{}))
			_, err := rd.Read(lim)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// blockingReader fails the test's read if the reader asks for more bytes
// than the input holds.
type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// TestReaderJudgesAfterEarlierCommands: a command over the limits that
// follows others in the same read is held back, and judged on the next
// Read under the limits then.
func TestReaderJudgesAfterEarlierCommands(t *testing.T) {
	t.Parallel()
	auth := "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n"
	big := "*2\r\n$4\r\nECHO\r\n$20\r\n" + strings.Repeat("x", 20) + "\r\n"
	rd := NewReader(strings.NewReader(auth + big))
	small := Limits{MaxArgs: 10, MaxBulk: 16, MaxQuery: 1 << 20}
	cmds, err := rd.Read(small)
	if err != nil || len(cmds) != 1 || string(cmds[0].Args[0]) != "AUTH" {
		t.Fatalf("first read: %q, %v; want AUTH alone", cmds, err)
	}
	if !rd.Buffered() {
		t.Fatal("Buffered() = false with a command held back")
	}
	cmds, err = rd.Read(Unlimited())
	if err != nil || len(cmds) != 1 || len(cmds[0].Args[1]) != 20 {
		t.Fatalf("second read under new limits: %q, %v; want the ECHO", cmds, err)
	}
	rd = NewReader(strings.NewReader(auth + big))
	rd.Read(small)
	if _, err := rd.Read(small); err == nil || err.Error() != "Protocol error: invalid bulk length" {
		t.Fatalf("second read under the same limits: %v, want invalid bulk length", err)
	}
}

func TestAppendInt(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 1, -1, 9, 10, 99, 100, -100, 123456789, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		want := ":" + strconv.FormatInt(n, 10) + "\r\n"
		if got := string(AppendInt([]byte("x"), n)); got != "x"+want {
			t.Errorf("AppendInt(%d) = %q, want %q", n, got, "x"+want)
		}
	}
}

func TestWriterRESP2AndRESP3(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		write      func(w *Writer)
		two, three string
	}{
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"map", func(w *Writer) { w.Map(2) }, "*4\r\n", "%2\r\n"},
		{"set", func(w *Writer) { w.Set(3) }, "*3\r\n", "~3\r\n"},
		{"push", func(w *Writer) { w.Push(3) }, "*3\r\n", ">3\r\n"},
		{"double", func(w *Writer) { w.Double(1.5) }, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"infinity", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("hi") }, "$2\r\nhi\r\n", "=6\r\ntxt:hi\r\n"},
		{"error", func(w *Writer) { w.Error("ERR a\r\nb") }, "-ERR a  b\r\n", "-ERR a  b\r\n"},
		{"simple", func(w *Writer) { w.Simple("OK") }, "+OK\r\n", "+OK\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for proto, want := range map[int]string{2: tc.two, 3: tc.three} {
				var out bytes.Buffer
				w := NewWriter(&out)
				w.Proto = proto
				tc.write(w)
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				if out.String() != want {
					t.Errorf("RESP%d: %q, want %q", proto, out.String(), want)
				}
			}
		})
	}
}

// BenchmarkReader parses the same pipelines of CL.THROTTLE with redcon's
// reader and with limitdb's, which enforces the limits as it parses.
func BenchmarkReader(b *testing.B) {
	var batch []byte
	for i := 0; i < 16; i++ {
		batch = redcon.AppendArray(batch, 5)
		for _, a := range []string{"CL.THROTTLE", fmt.Sprint("k:", i*7919%100_000), "99", "100", "60"} {
			batch = redcon.AppendBulkString(batch, a)
		}
	}
	b.Run("redcon", func(b *testing.B) {
		rd := redcon.NewReader(&repeatReader{batch: batch})
		b.ReportAllocs()
		for done := 0; done < b.N; {
			cmds, err := rd.ReadCommands()
			if err != nil {
				b.Fatal(err)
			}
			done += len(cmds)
		}
	})
	b.Run("limitdb", func(b *testing.B) {
		rd := NewReader(&repeatReader{batch: batch})
		lim := Limits{MaxArgs: 1 << 20, MaxBulk: 512 << 20, MaxQuery: 1 << 30}
		b.ReportAllocs()
		for done := 0; done < b.N; {
			cmds, err := rd.Read(lim)
			if err != nil {
				b.Fatal(err)
			}
			done += len(cmds)
		}
	})
}

// repeatReader delivers the same batch on every Read.
type repeatReader struct{ batch []byte }

func (r *repeatReader) Read(p []byte) (int, error) { return copy(p, r.batch), nil }
