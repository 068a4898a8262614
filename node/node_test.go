package node

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/testlog"
)

// serveTest runs a server on a loopback port with a fake clock.
func serveTest(t testing.TB) (*Node, string, *testlog.Buffer) {
	t.Helper()
	return serveTestWith(t, nil)
}

// serveTestWith is serveTest, calling prepare (when not nil) on the server
// before it serves: the table is fixed from then on.
func serveTestWith(t testing.TB, prepare func(*Node)) (*Node, string, *testlog.Buffer) {
	t.Helper()
	cfg := config.Default()
	cfg.Port, cfg.Dir = 0, t.TempDir()
	logs := &testlog.Buffer{}
	s := New(cfg, engine.New(clock.NewFake(1_700_000_000e9), 0), log.New(logs, "", 0))
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

// FuzzServerInput sends arbitrary bytes to a real server on one connection
// and checks that a bystander connection is still answered, exactly, after
// each input, and that nothing panicked.
func FuzzServerInput(f *testing.F) {
	for _, s := range seedFrames {
		f.Add([]byte(s))
	}
	s, addr, logs := serveTest(f)
	s.CommandServer().RequestShutdown = func(bool) {} // SHUTDOWN in the input must not end the run
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
		if s.Config().RequirePass != "" {
			s.CommandServer().SetConfig([2]string{"requirepass", ""}) // CONFIG SET requirepass in the input locks the bystander out
		}
	})
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

// TestBackgroundLoopsOnTheFakeClock runs commands with no socket on a node
// whose clock is a fake: stepping it drives active expiry and automatic
// snapshots, as time drives them in production, with no sleep.
func TestBackgroundLoopsOnTheFakeClock(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(1_700_000_000e9)
	cfg := config.Default()
	cfg.Dir, cfg.Save = t.TempDir(), 60
	n := New(cfg, engine.New(clk, 0), log.New(io.Discard, "", 0))
	if err := n.Prepare(); err != nil {
		t.Fatal(err)
	}
	n.Start()
	t.Cleanup(func() { n.Close() })
	if !clk.WaitForWaiters(2, 5*time.Second) {
		t.Fatal("the background loops are not waiting on the clock")
	}
	c := n.CommandServer().NewLocalClient()
	for i := 0; i < 200; i++ {
		if got := string(c.DoString("SET", fmt.Sprint("k", i), "v", "PX", "50")); got != "+OK\r\n" {
			t.Fatalf("SET: %q", got)
		}
	}
	if got := n.Engine().Len(); got != 200 {
		t.Fatalf("%d keys stored, want 200", got)
	}
	// Steps of 10 ms: each is an expiry slice, a tenth of the shards, and
	// the keys go without any command touching them. Each step waits for
	// the loops to take its tick, so that none is dropped.
	steps := 0
	for ; n.Engine().Len() > 0 && steps < 1000; steps++ {
		step(t, clk, 10*time.Millisecond)
	}
	if got := n.Engine().Len(); got != 0 {
		t.Fatalf("%d keys left after %d steps of active expiry", got, steps)
	}
	if !n.persist.LastSave().IsZero() {
		t.Fatal("a snapshot before any was due")
	}
	// A change, then a minute: the automatic snapshot falls due.
	c.DoString("SET", "kept", "1")
	for i := 0; i < 61; i++ {
		step(t, clk, time.Second)
	}
	if !eventually(func() bool { return !n.persist.LastSave().IsZero() }) {
		t.Fatal("no automatic snapshot a minute after a change")
	}
}

// step advances clk by d and waits until the background loops have
// taken the ticks it fired.
func step(t *testing.T, clk *clock.Fake, d time.Duration) {
	t.Helper()
	clk.Advance(d)
	if !clk.WaitForTicksTaken(10 * time.Second) {
		t.Fatal("a background loop did not take its tick")
	}
}

// eventually reports whether cond holds within a few seconds: for work a
// background goroutine does once the clock has stepped.
func eventually(cond func() bool) bool {
	for i := 0; i < 500; i++ {
		if cond() {
			return true
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	return cond()
}
