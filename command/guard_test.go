package command

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// lockedBuffer is a log destination safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveTest runs a server on a loopback port with a fake clock.
func serveTest(t testing.TB) (*Server, string, *lockedBuffer) {
	t.Helper()
	return serveTestWith(t, nil)
}

// serveTestWith is serveTest, calling prepare (when not nil) on the server
// before it serves: the table is fixed from then on.
func serveTestWith(t testing.TB, prepare func(*Server)) (*Server, string, *lockedBuffer) {
	t.Helper()
	cfg := config.Default()
	cfg.Port, cfg.Dir = 0, t.TempDir()
	logs := &lockedBuffer{}
	s := New(cfg, engine.New(engine.NewFakeClock(1_700_000_000e9), 0), log.New(logs, "", 0))
	if prepare != nil {
		prepare(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().String(), logs
}

func roundTrip(t testing.TB, nc net.Conn, rd *bufio.Reader, send string) string {
	t.Helper()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(nc, send); err != nil {
		t.Fatal(err)
	}
	l, err := rd.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return strings.TrimRight(l, "\r\n")
}

// TestPanicRecovered adds a command that panics to one server's table:
// its caller gets an error, the panic is logged with a stack, and that
// connection and every other keep working.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	_, addr, logs := serveTestWith(t, func(s *Server) {
		s.Commands().register(&Command{Name: "test.panic", Arity: 1, Group: "server", Since: "0.1.0", Complexity: "O(1)", Summary: "test only",
			Handler: func(c *Client, _ [][]byte) {
				var m map[string]int
				m["boom"]++ // assignment to a nil map
			}})
	})
	a, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := net.Dial("tcp", addr)
	defer a.Close()
	defer b.Close()
	ra, rb := bufio.NewReader(a), bufio.NewReader(b)
	for i := 0; i < 3; i++ {
		if got := roundTrip(t, a, ra, "TEST.PANIC\r\n"); got != "-ERR internal error while running 'test.panic'" {
			t.Fatalf("panicking command answered %q", got)
		}
		if got := roundTrip(t, a, ra, "PING\r\n"); got != "+PONG" {
			t.Fatalf("same connection after the panic: %q", got)
		}
		if got := roundTrip(t, b, rb, "PING\r\n"); got != "+PONG" {
			t.Fatalf("other connection after the panic: %q", got)
		}
	}
	if l := logs.String(); !strings.Contains(l, "panic in TEST.PANIC: assignment to entry in nil map") || !strings.Contains(l, "goroutine") {
		t.Errorf("panic not logged with its stack:\n%s", l)
	}
}

// ---- fuzzing ------------------------------------------------------------

// FuzzServerInput sends arbitrary bytes to a real server on one connection
// and checks that a bystander connection is still answered, exactly, after
// each input, and that nothing panicked.
func FuzzServerInput(f *testing.F) {
	for _, s := range seedFrames {
		f.Add([]byte(s))
	}
	s, addr, logs := serveTest(f)
	s.OnShutdown = func(bool) error { return nil } // SHUTDOWN in the input must not end the run
	by, err := net.Dial("tcp", addr)
	if err != nil {
		f.Fatal(err)
	}
	defer by.Close()
	rby := bufio.NewReader(by)
	n := 0
	f.Fuzz(func(t *testing.T, b []byte) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		nc.Write(b)
		nc.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, nc) // until the server answers everything and closes, or the deadline
		nc.Close()
		n++
		if got := roundTrip(t, by, rby, "ECHO "+strconv.Itoa(n)+"\r\n"); got != "$"+strconv.Itoa(len(strconv.Itoa(n))) {
			t.Fatalf("bystander: %q", got)
		}
		rby.ReadString('\n')
		if strings.Contains(logs.String(), "panic") {
			t.Fatalf("panic on %q:\n%s", b, logs.String())
		}
		if s.guard.acl.Load() == nil || !s.guard.acl.Load().open {
			s.SetConfig([2]string{"requirepass", ""}) // CONFIG SET requirepass in the input locks the bystander out
		}
	})
}

// FuzzCommandArgs sends arbitrary arguments to every command of the table
// through dispatch (gates included), and checks that each call answers
// exactly one well-formed reply (or closes the connection) and never
// panics. The first byte picks the command, the rest is split on NUL into
// arguments.
func FuzzCommandArgs(f *testing.F) {
	var names []string
	NewTable().eachRunnable(func(c *Command) { names = append(names, strings.ReplaceAll(c.Name, "|", "\x00")) })
	for i, name := range names {
		f.Add(append([]byte{byte(i)}, name...))
	}
	for _, s := range seedArgs {
		f.Add([]byte(s))
	}
	logs := &lockedBuffer{}
	cfg := config.Default()
	// Not f.TempDir: a SAVE, BGSAVE or SHUTDOWN among the inputs may still
	// be writing there when the test ends, and TempDir's cleanup fails then.
	dir, err := os.MkdirTemp("", "FuzzCommandArgs")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		for i := 0; i < 100 && os.RemoveAll(dir) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	cfg.Dir = dir
	clock := engine.NewFakeClock(1_700_000_000e9)
	newServer := func() *Server {
		s := New(cfg, engine.New(clock, 0), log.New(logs, "", 0))
		s.OnShutdown = func(bool) error { return nil }
		if err := s.Prepare(); err != nil {
			f.Fatal(err)
		}
		return s
	}
	s := newServer()
	f.Fuzz(func(t *testing.T, in []byte) {
		if s.shutting.Load() { // a SHUTDOWN went through: wait for it, start afresh
			select {
			case <-s.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("SHUTDOWN did not finish")
			}
			s = newServer()
		}
		if len(in) == 0 {
			return
		}
		name := names[int(in[0])%len(names)]
		args := [][]byte{}
		for _, a := range bytes.Split([]byte(name), []byte{0}) {
			args = append(args, a)
		}
		if len(in) > 1 {
			args = append(args, bytes.Split(in[1:], []byte{0})...)
		}
		c := s.NewLocalClient()
		out := bytes.Clone(c.Do(args...))
		closed := c.closing
		c.Close()
		clock.Advance(time.Millisecond)
		if strings.Contains(logs.String(), "panic") {
			t.Fatalf("%q panicked:\n%s", args, logs.String())
		}
		n, err := countReplies(out)
		if err != nil || (n != 1 && !(n == 0 && closed)) {
			t.Fatalf("%q: %d replies (%v): %q", args, n, err, out)
		}
		if s.authRequired() {
			s.SetConfig([2]string{"requirepass", ""})
		}
	})
}

// countReplies counts the top-level RESP2/RESP3 values in b and fails on
// anything malformed or truncated.
func countReplies(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		rest, err := skipValue(b)
		if err != nil {
			return n, err
		}
		b = rest
		n++
	}
	return n, nil
}

func skipValue(b []byte) ([]byte, error) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 1 {
		return nil, errors.New("no line")
	}
	line, rest := b[1:i], b[i+2:]
	switch b[0] {
	case '+', '-', ':', ',', '_', '#', '(':
		return rest, nil
	case '$', '=', '!':
		size, err := strconv.Atoi(string(line))
		if err != nil || size < -1 {
			return nil, fmt.Errorf("bad length %q", line)
		}
		if size == -1 {
			return rest, nil
		}
		if len(rest) < size+2 || string(rest[size:size+2]) != "\r\n" {
			return nil, errors.New("short bulk")
		}
		return rest[size+2:], nil
	case '*', '~', '>', '%', '|':
		count, err := strconv.Atoi(string(line))
		if err != nil || count < -1 {
			return nil, fmt.Errorf("bad count %q", line)
		}
		if b[0] == '%' || b[0] == '|' {
			count *= 2
		}
		for j := 0; j < count; j++ {
			if rest, err = skipValue(rest); err != nil {
				return nil, err
			}
		}
		return rest, nil
	}
	return nil, fmt.Errorf("unknown type %q", b[0])
}

// seedFrames are real traffic and malformed frames: the corpus every fuzz
// run starts from.
var seedFrames = []string{
	"PING\r\n",
	"*1\r\n$4\r\nPING\r\n",
	"*5\r\n$11\r\nCL.THROTTLE\r\n$7\r\nuser:42\r\n$2\r\n15\r\n$2\r\n30\r\n$2\r\n60\r\n",
	"*3\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*1\r\n$4\r\nPING\r\n",
	"*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n",
	"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
	"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n*1\r\n$4\r\nEXEC\r\n",
	"*2\r\n$4\r\nPING\r\n$9223372036854775806\r\n",
	"*99999999999999999999\r\n",
	"*-1\r\n", "*0\r\n", "$5\r\nhello\r\n", "*1\r\n:4\r\n",
	"*1\r\n$2\r\nPING\r\n", "*2\r\n$4\r\nECHO\r\n$-1\r\n",
	"ECHO \"unbalanced\r\n", "\x00\x01\x02\xff\r\n", "\r\n\r\n",
	"*1\r\n$4\r\nPI", "*3\r\n$3\r\nSET\r\n$1\r\nk",
}

var seedArgs = []string{
	"\x00k\x0015\x0030\x0060", "\x00k\x00-1\x00x\x00\x00", "\x00\x00\x00\x00\x00\x00\x00\x00",
	"\x009223372036854775807\x009223372036854775807\x009223372036854775807",
	"\x00k\x001e308\x00NaN\x00inf", "\x00*\x00MATCH\x00[\x00COUNT\x00-5",
}
