package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/resp"
)

// echo is a Handler that answers each command with its arguments joined,
// and records the calls it gets.
type echo struct {
	slow    chan struct{} // SLOW waits for it to close
	mu      sync.Mutex
	calls   []string
	authed  bool
	refuse  bool
	batches int
}

func (h *echo) Open(c *Conn) bool {
	if h.refuse {
		c.Writer().Error("ERR go away")
		return false
	}
	c.SetAuthenticated(h.authed)
	return true
}

func (h *echo) Command(c *Conn, args [][]byte) {
	h.mu.Lock()
	h.calls = append(h.calls, string(bytes.Join(args, []byte(" "))))
	h.mu.Unlock()
	if string(args[0]) == "SLOW" {
		<-h.slow
	}
	if string(args[0]) == "BIG" {
		c.Writer().BulkString(strings.Repeat("x", 1000))
		return
	}
	if string(args[0]) == "QUIT" {
		c.Writer().Simple("OK")
		c.Close()
		return
	}
	c.Writer().BulkString(string(bytes.Join(args, []byte(" "))))
}

func (h *echo) EndRound() {}

func (h *echo) EndBatch(*Conn) {
	h.mu.Lock()
	h.batches++
	h.mu.Unlock()
}

func (h *echo) Closed(*Conn, error) {}

// serveOne serves s on a loopback port until the test ends, and dials it.
func serveOne(t *testing.T, s *Server) (net.Listener, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { s.Serve(ln); close(served) }()
	t.Cleanup(func() { s.Close(); <-served })
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return ln, nc
}

func limits() Limits {
	return Limits{Frame: resp.Limits{MaxArgs: 1 << 20, MaxBulk: 512 << 20, MaxQuery: 1 << 30}}
}

func TestServeStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		authed bool
		in     string
		calls  []string
		out    string
	}{
		{"pipeline in order", true, "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nGET k\r\n",
			[]string{"PING", "ECHO hi", "GET k"}, "$4\r\nPING\r\n$7\r\nECHO hi\r\n$5\r\nGET k\r\n"},
		{"protocol error after good commands", true, "PING\r\n*1\r\n$x\r\n",
			[]string{"PING"}, "$4\r\nPING\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"close stops the batch", true, "QUIT\r\nPING\r\n",
			[]string{"QUIT"}, "+OK\r\n"},
		{"unauthenticated: at most 10 arguments", false, "*11\r\n",
			nil, "-ERR Protocol error: unauthenticated multibulk length\r\n"},
		{"unauthenticated: arguments of at most 16 KiB", false, "*1\r\n$16385\r\n",
			nil, "-ERR Protocol error: unauthenticated bulk length\r\n"},
		{"unauthenticated: a whole command of 11 arguments", false, "*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11),
			nil, "-ERR Protocol error: unauthenticated multibulk length\r\n"},
		{"authenticated: the configured limits", true, "*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11),
			[]string{strings.TrimSpace(strings.Repeat("x ", 11))}, "$21\r\n" + strings.TrimSpace(strings.Repeat("x ", 11)) + "\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := &echo{authed: tc.authed}
			var out bytes.Buffer
			New(h, limits(), false, clock.Real()).ServeStream(strings.NewReader(tc.in), &out)
			if strings.Join(h.calls, "|") != strings.Join(tc.calls, "|") {
				t.Errorf("commands %q, want %q", h.calls, tc.calls)
			}
			if out.String() != tc.out {
				t.Errorf("replies %q, want %q", out.String(), tc.out)
			}
		})
	}
}

// TestRefusedConnection: a connection the handler refuses gets its refusal
// and is closed.
func TestRefusedConnection(t *testing.T) {
	t.Parallel()
	_, nc := serveOne(t, New(&echo{refuse: true}, limits(), false, clock.Real()))
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	got, _ := io.ReadAll(nc)
	if string(got) != "-ERR go away\r\n" {
		t.Fatalf("refused connection read %q", got)
	}
}

// TestDrainWaitsForTheGraceOnItsClock: Drain closes the listener, ends
// idle connections' reads and returns once no connection is left; a
// connection that stays holds it until the grace passes on the server's
// clock.
func TestDrainWaitsForTheGraceOnItsClock(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(1_700_000_000e9)
	s := New(&echo{authed: true}, limits(), false, clk)
	ln, nc := serveOne(t, s)
	rd := bufio.NewReader(nc)
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(nc, "PING\r\n")
	if line, _ := rd.ReadString('\n'); line != "$4\r\n" {
		t.Fatalf("before the drain: %q", line)
	}
	drained := make(chan struct{})
	go func() { s.Drain(time.Second); close(drained) }()
	// The idle connection's read ends at once and it closes: Drain returns
	// without the clock moving.
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not return once its only connection had gone")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("a new connection was accepted while draining")
	}
}

func TestDrainGivesUpAfterItsGrace(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(1_700_000_000e9)
	h := &echo{authed: true, slow: make(chan struct{})}
	defer close(h.slow)
	s := New(h, limits(), false, clk)
	_, nc := serveOne(t, s)
	io.WriteString(nc, "SLOW\r\n")
	for i := 0; s.Conns() == 0 || len(h.snapshot()) == 0; i++ {
		if i == 5000 {
			t.Fatal("the slow command never started")
		}
		time.Sleep(time.Millisecond)
	}
	drained := make(chan struct{})
	go func() { s.Drain(time.Second); close(drained) }()
	if !clk.WaitForWaiters(1, 5*time.Second) {
		t.Fatal("Drain is not waiting on the clock")
	}
	clk.Advance(999 * time.Millisecond)
	select {
	case <-drained:
		t.Fatal("Drain returned before its grace, with a command still running")
	case <-time.After(20 * time.Millisecond):
	}
	clk.Advance(5 * time.Millisecond)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not give up once its grace had passed")
	}
}

func (h *echo) snapshot() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

// failingListener fails Accept with EMFILE a number of times, then as
// closed.
type failingListener struct {
	net.Listener
	left int
	mu   sync.Mutex
}

func (l *failingListener) Close() error   { return nil }
func (l *failingListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.left == 0 {
		return nil, net.ErrClosed
	}
	l.left--
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
}

// TestAcceptErrorsBackOff: out of file descriptors, accept fails at once
// on every call; the server waits between tries on its clock, doubling up
// to a second, and says so in its log, once.
func TestAcceptErrorsBackOff(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(1_700_000_000e9)
	s := New(&echo{}, limits(), false, clk)
	logs := make(chan string, 10)
	s.Logf = func(format string, args ...any) { logs <- fmt.Sprintf(format, args...) }
	done := make(chan struct{})
	go func() { s.Serve(&failingListener{left: 3}); close(done) }()
	for _, wait := range []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		if !clk.WaitForWaiters(1, 5*time.Second) {
			t.Fatal("no back-off after a failed accept")
		}
		clk.Advance(wait - time.Millisecond)
		if clk.Waiters() != 1 {
			t.Fatalf("the back-off of %v ended early", wait)
		}
		clk.Advance(time.Millisecond)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if got := len(logs); got != 1 {
		t.Fatalf("%d log lines for three failures in a minute, want 1", got)
	}
	if l := <-logs; !strings.Contains(l, "too many open files") {
		t.Errorf("log line %q does not name the error", l)
	}
}

// TestOutputBufferLimit: a batch whose replies pass the class's hard
// limit closes the client, its replies dropped, and says so; under the
// limit, replies go out.
func TestOutputBufferLimit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		in      string
		hard    int64
		replies int // BIG replies the client gets
		closed  bool
	}{
		{"under the limit", strings.Repeat("BIG\r\n", 3), 4000, 3, false},
		{"over it", strings.Repeat("BIG\r\n", 5), 4000, 0, true},
		{"no limit", strings.Repeat("BIG\r\n", 5), 0, 5, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lim := limits()
			lim.Output[ClassNormal] = OutputLimit{Hard: tc.hard}
			s := New(&echo{authed: true}, lim, false, clock.Real())
			var logs []string
			s.Logf = func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
			var out bytes.Buffer
			err := s.ServeStream(strings.NewReader(tc.in), &out)
			if got := strings.Count(out.String(), "$1000\r\n"); got != tc.replies {
				t.Errorf("%d replies sent, want %d", got, tc.replies)
			}
			if closed := errors.Is(err, errOutputLimit); closed != tc.closed {
				t.Errorf("ServeStream = %v, closed for the limit: %v, want %v", err, closed, tc.closed)
			}
			if tc.closed && (len(logs) != 1 || !strings.Contains(logs[0], "output buffer limits")) {
				t.Errorf("log %q", logs)
			}
			if m := s.ClientMemory(); m != 0 {
				t.Errorf("ClientMemory = %d once the connection has gone, want 0", m)
			}
		})
	}
}

// TestStoppedBeforeServe: a Close or a Drain that comes before Serve has
// its listener (a signal right after start-up) still stops Serve at once.
func TestStoppedBeforeServe(t *testing.T) {
	for _, loops := range []bool{false, true} {
		for name, stop := range map[string]func(s *Server){
			"close": func(s *Server) { s.Close() },
			"drain": func(s *Server) { s.Drain(time.Millisecond); s.Close() },
		} {
			s := New(&echo{}, limits(), loops, clock.Real())
			stop(s)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Serve(ln) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s before Serve (loops %v): Serve never returned", name, loops)
			}
		}
	}
}
