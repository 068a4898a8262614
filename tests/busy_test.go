package tests

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/stretchr/testify/require"
)

// The tests in this file are about a script that runs long on an event
// loop: every connection is still answered, whichever loop it landed on.

const (
	spin         = "local n = 0 while true do n = n + 1 end"
	errBusy      = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errKilledPfx = "-ERR Script killed by user with SCRIPT KILL... script: "
)

// startLoops starts limitdb on its event loops with busy-reply-threshold
// at threshold of its fake clock, and opens n raw connections in the order
// the server accepts them: connections i and i+runtime.GOMAXPROCS(0)
// share an event loop (the server gives each new connection to the next
// loop in turn, one loop per P).
func startLoops(t *testing.T, threshold time.Duration, n int) (*testServer, []*raw) {
	t.Helper()
	ts, _ := startWith(t, func(c *config.Config) {
		c.EventLoop = true
		c.BusyReplyThreshold = int(threshold / time.Millisecond)
	}, nil)
	conns := make([]*raw, n)
	for i := range conns {
		conns[i] = dialRaw(t, ts.addr)
		require.Equal(t, "+OK\r\n", conns[i].do("CLIENT", "SETNAME", fmt.Sprintf("c%d", i)))
	}
	return ts, conns
}

// await reads one reply line, waiting as long as a loaded machine may
// need; the fake clock moves only if the test is stepping it.
func (r *raw) await() string {
	r.t.Helper()
	l, err := r.tryAwait()
	if err != nil {
		r.t.Fatalf("read: %v (got %q)", err, l)
	}
	return l
}

// tryAwait is await for another goroutine than the test's.
func (r *raw) tryAwait() (string, error) {
	r.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, err := r.rd.ReadString('\n')
	return strings.TrimRight(l, "\r\n"), err
}

// awaitBusy sends PING on r until it is answered -BUSY.
func awaitBusy(t *testing.T, r *raw) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.send(cmd("PING"))
		l := r.await()
		if l == errBusy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never busy: PING answers %q", l)
		}
	}
}

// awaitCommand polls CLIENT LIST on r until the client named name is
// running cmd.
func awaitCommand(t *testing.T, r *raw, name, command string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list := r.do("CLIENT", "LIST")
		for _, l := range strings.Split(list, "\n") {
			if strings.Contains(l, " name="+name+" ") && strings.Contains(l, " cmd="+command+" ") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never ran %s: %s", name, command, list)
		}
	}
}

// TestBusyScriptAnswersEveryConnection: while a runaway script runs, eight
// connections, those on its event loop too, are answered -BUSY past the
// threshold, and one on the script's loop kills it with SCRIPT KILL.
func TestBusyScriptAnswersEveryConnection(t *testing.T) {
	t.Parallel()
	loops := runtime.GOMAXPROCS(0)
	ts, conns := startLoops(t, time.Minute, 1+max(8, loops))
	script, killer := conns[0], conns[loops] // on the same loop
	stop := ts.stepping(time.Second)
	defer stop()
	script.send(cmd("EVAL", spin, "0"))
	awaitBusy(t, conns[1])

	var wg sync.WaitGroup
	replies := make([]string, len(conns))
	for i, c := range conns[1:] {
		if c == killer {
			continue
		}
		wg.Add(1)
		c.send(cmd("PING"))
		go func() {
			defer wg.Done()
			l, err := c.tryAwait()
			if err != nil {
				l = "read: " + err.Error()
			}
			replies[i+1] = l
		}()
	}
	wg.Wait()
	for i, r := range replies[1:] {
		if conns[i+1] != killer {
			require.Equal(t, errBusy, r, "connection %d", i+1)
		}
	}
	killer.send(cmd("SCRIPT", "KILL"))
	require.Equal(t, "+OK", killer.await())
	require.True(t, strings.HasPrefix(script.await(), errKilledPfx))
	for _, c := range conns {
		require.Equal(t, "+PONG\r\n", c.do("PING"))
	}
}

// TestEarlyScriptKillKillsTheScript: SCRIPT KILL sent before the script is
// busy, from a connection on the script's event loop, is answered once the
// script is busy, and kills it, as Redis does.
func TestEarlyScriptKillKillsTheScript(t *testing.T) {
	t.Parallel()
	loops := runtime.GOMAXPROCS(0)
	// Ten hours of the fake clock: the small steps below never get there.
	ts, conns := startLoops(t, 10*time.Hour, 2+loops)
	script, killer, watcher := conns[0], conns[loops], conns[loops+1]
	stop := ts.stepping(100 * time.Millisecond)
	script.send(cmd("EVAL", spin, "0"))
	awaitCommand(t, watcher, "c0", "eval")
	killer.send(cmd("SCRIPT", "KILL"))
	awaitCommand(t, watcher, fmt.Sprintf("c%d", loops), "script|kill")
	stop()
	require.Equal(t, "+PONG\r\n", watcher.do("PING"), "busy before its threshold")
	stop = ts.stepping(time.Hour)
	defer stop()
	require.Equal(t, "+OK", killer.await())
	require.True(t, strings.HasPrefix(script.await(), errKilledPfx))
	require.Equal(t, "+PONG\r\n", script.do("PING"))
}

// TestBusyTransactionsAnswerAsRedis: MULTI, DISCARD, WATCH and UNWATCH
// are served while a script is busy, a command refused -BUSY inside MULTI
// makes EXEC answer EXECABORT, and EXEC refused while busy discards the
// transaction: the same replies as redis-server's, and the key unchanged.
func TestBusyTransactionsAnswerAsRedis(t *testing.T) {
	t.Parallel()
	// Each sequence runs with a script busy; "KILL" kills it there.
	steps := [][]string{
		{"SET", "xx", "1"},
		{"BUSY"},
		{"MULTI"}, {"INCR", "xx"}, {"EXEC"},
		{"GET", "xx"},
		{"EXEC"},
		{"WATCH", "xx"}, {"UNWATCH"}, {"MULTI"}, {"DISCARD"},
		{"FUNCTION", "KILL"}, {"SHUTDOWN"}, {"SHUTDOWN", "SAVE"},
		{"MULTI"}, {"INCR", "xx"},
		{"KILL"},
		{"EXEC"},
		{"GET", "xx"},
		{"MULTI"}, {"INCR", "xx"},
		{"BUSY"},
		{"EXEC"},
		{"KILL"},
		{"GET", "xx"},
	}
	run := func(busyConn, script, c *raw, busy func(), unbusy func()) []string {
		var out []string
		for _, s := range steps {
			switch s[0] {
			case "BUSY":
				script.send(cmd("EVAL", spin, "0"))
				busy()
				awaitBusy(t, busyConn)
				unbusy()
			case "KILL":
				require.Equal(t, "+OK\r\n", busyConn.do("SCRIPT", "KILL"))
				require.True(t, strings.HasPrefix(script.await(), errKilledPfx))
			default:
				out = append(out, strings.Join(s, " ")+" -> "+strings.TrimSpace(c.do(s...)))
			}
		}
		return out
	}

	rc, port := startRedisTCP(t)
	require.NoError(t, rc.ConfigSet(ctx, "busy-reply-threshold", "100").Err())
	redisAddr := "127.0.0.1:" + port
	want := run(dialRaw(t, redisAddr), dialRaw(t, redisAddr), dialRaw(t, redisAddr), func() {}, func() {})

	ts, conns := startLoops(t, time.Minute, 3)
	var stop func()
	got := run(conns[1], conns[0], conns[2], func() { stop = ts.stepping(time.Second) }, func() { stop() })
	require.Equal(t, want, got)
	require.Contains(t, got, "EXEC -> -EXECABORT Transaction discarded because of previous errors.")
	require.Equal(t, "GET xx -> $1\r\n1", got[len(got)-1])
}

// TestMigrateWaitFreesItsLoop: MIGRATE waiting for a target that does not
// answer holds up no other connection of its event loop.
func TestMigrateWaitFreesItsLoop(t *testing.T) {
	t.Parallel()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var held []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			nc, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, nc)
		}
	}()
	loops := runtime.GOMAXPROCS(0)
	ts, conns := startLoops(t, time.Minute, 1+loops)
	migrating, peer := conns[0], conns[loops] // on the same loop
	require.Equal(t, "+OK\r\n", migrating.do("SET", "k", "v"))
	host, port := hostPort(t, silent.Addr().String())
	stop := ts.stepping(100 * time.Millisecond)
	defer stop()
	migrating.send(cmd("MIGRATE", host, port, "k", "0", "600000"))
	awaitCommand(t, peer, "c0", "migrate")
	require.Equal(t, "+PONG\r\n", peer.do("PING"))
	silent.Close()
	<-accepted
	for _, nc := range held {
		nc.Close()
	}
	require.True(t, strings.HasPrefix(migrating.await(), "-IOERR"))
	require.Equal(t, "$1\r\nv\r\n", migrating.do("GET", "k"))
}
