package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/config"
	"github.com/stretchr/testify/require"
)

// The tests in this file are about how connections are driven: on Linux a
// poller owns each TCP socket (resp/poll_linux.go), elsewhere or with
// event-loop no a goroutine does. Each runs with both.

// eachLoop runs test on a server with the event loop and on one without.
func eachLoop(t *testing.T, test func(t *testing.T, ts *testServer)) {
	for _, loop := range []bool{true, false} {
		t.Run(fmt.Sprintf("event-loop=%v", loop), func(t *testing.T) {
			ts, _ := startWith(t, func(c *config.Config) { c.EventLoop = loop }, nil)
			test(t, ts)
		})
	}
}

// TestSlowReaderGetsEveryReplyInOrder pipelines megabytes of replies to a
// client that starts reading late: the socket fills, the server keeps the
// rest and writes it as room appears, and every reply arrives once, in
// order, with nothing lost or doubled.
func TestSlowReaderGetsEveryReplyInOrder(t *testing.T) {
	t.Parallel()
	eachLoop(t, testSlowReaderGetsEveryReplyInOrder)
}

func testSlowReaderGetsEveryReplyInOrder(t *testing.T, ts *testServer) {
	nc := dialRaw(t, ts.addr).nc
	const n = 3000
	pad := strings.Repeat("p", 2000)
	sent := make(chan error, 1)
	go func() {
		w := bufio.NewWriter(nc)
		for i := 0; i < n; i++ {
			w.WriteString(cmd("INCR", "slow"))
			w.WriteString(cmd("ECHO", pad+strconv.Itoa(i)))
		}
		sent <- w.Flush()
	}()
	time.Sleep(300 * time.Millisecond) // let the replies pile up unread
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(nc)
	line := func() string {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return strings.TrimRight(l, "\r\n")
	}
	for i := 0; i < n; i++ {
		if got, want := line(), ":"+strconv.Itoa(i+1); got != want {
			t.Fatalf("reply %d to INCR: %q, want %q", i, got, want)
		}
		echo := pad + strconv.Itoa(i)
		if got := line(); got != "$"+strconv.Itoa(len(echo)) {
			t.Fatalf("reply %d to ECHO: header %q", i, got)
		}
		if got := line(); got != echo {
			t.Fatalf("reply %d to ECHO: %q", i, clipStr(got))
		}
	}
	require.NoError(t, <-sent)
}

// TestHalfClosedClientGetsItsReplies sends a pipeline, closes its write
// side, and still reads every reply before the server closes.
func TestHalfClosedClientGetsItsReplies(t *testing.T) {
	t.Parallel()
	eachLoop(t, testHalfClosedClientGetsItsReplies)
}

func testHalfClosedClientGetsItsReplies(t *testing.T, ts *testServer) {
	nc := dialRaw(t, ts.addr).nc
	var b strings.Builder
	for i := 0; i < 500; i++ {
		b.WriteString(cmd("INCR", "half"))
	}
	if _, err := io.WriteString(nc, b.String()); err != nil {
		t.Fatal(err)
	}
	nc.(*net.TCPConn).CloseWrite()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	all, err := io.ReadAll(nc)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(all), "\r\n"), "\r\n")
	if len(lines) != 500 || lines[499] != ":500" {
		t.Fatalf("%d replies, last %q; want 500 ending in :500", len(lines), lines[len(lines)-1])
	}
}

// TestKillClientWaitingToWrite kills a client whose replies are stuck in a
// full socket: it goes at once, not when its write timeout passes.
func TestKillClientWaitingToWrite(t *testing.T) { eachLoop(t, testKillClientWaitingToWrite) }

func testKillClientWaitingToWrite(t *testing.T, ts *testServer) {
	stuck := dialRaw(t, ts.addr).nc
	stuck.(*net.TCPConn).SetReadBuffer(4096)
	io.WriteString(stuck, cmd("CLIENT", "ID"))
	idLine, err := bufio.NewReader(stuck).ReadString('\n')
	require.NoError(t, err)
	id := strings.TrimSpace(strings.TrimPrefix(idLine, ":"))
	big := strings.Repeat("k", 64<<10)
	go func() { // megabytes of replies the client does not read
		for i := 0; i < 200; i++ {
			if _, err := io.WriteString(stuck, cmd("ECHO", big)); err != nil {
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	admin := ts.client(t, 2)
	if n, err := admin.Do(ctx, "CLIENT", "KILL", "ID", id).Int64(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL ID %s: %d, %v", id, n, err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(ts.srv.CommandServer().Clients()) > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("killed client still connected after 3 s (%d clients)", len(ts.srv.CommandServer().Clients()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestManyConnectionsOneCounter runs many connections at once, spread over
// the pollers, against one counter: every increment counts once and every
// connection sees its own replies in order.
func TestManyConnectionsOneCounter(t *testing.T) { eachLoop(t, testManyConnectionsOneCounter) }

func testManyConnectionsOneCounter(t *testing.T, ts *testServer) {
	const conns, per = 40, 200
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			rd := bufio.NewReader(nc)
			for i := 0; i < per; i++ {
				key := fmt.Sprintf("own:%d", c)
				io.WriteString(nc, cmd("INCR", "shared")+cmd("INCR", key))
				if _, err := rd.ReadString('\n'); err != nil {
					errs <- err
					return
				}
				l, err := rd.ReadString('\n')
				if err != nil {
					errs <- err
					return
				}
				if got, want := strings.TrimSpace(l), ":"+strconv.Itoa(i+1); got != want {
					errs <- fmt.Errorf("connection %d, reply %d: %q, want %q", c, i, got, want)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, err := ts.client(t, 2).Get(ctx, "shared").Int(); err != nil || n != conns*per {
		t.Fatalf("shared = %d, %v; want %d", n, err, conns*per)
	}
}
