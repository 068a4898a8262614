package server

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// looper is a Handler whose LONG command says it may run long and waits
// for release; LOOP answers which event loop serves the connection, PUSH
// pushes a message to the connection that sent LONG.
type looper struct {
	entered chan struct{} // LONG has begun
	release chan struct{} // LONG returns once it is closed
	longC   chan *Conn    // the connection of LONG
}

func (h *looper) Open(*Conn) bool { return true }

func (h *looper) Command(c *Conn, args [][]byte) {
	switch string(args[0]) {
	case "LONG":
		c.BeginLong()
		h.longC <- c
		close(h.entered)
		<-h.release
		c.EndLong()
		c.Writer().Simple("DONE")
	case "LOOP":
		c.Writer().Simple(fmt.Sprintf("%p", c.fc.p))
	default:
		c.Writer().Simple(strings.ToUpper(string(args[0])))
	}
}

func (h *looper) EndBatch(*Conn)      {}
func (h *looper) EndRound()           {}
func (h *looper) Closed(*Conn, error) {}
func (h *looper) dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc, bufio.NewReader(nc)
}

// reply reads one line, stepping clk while it waits: the event loop is
// taken over on clk's ticks. It fails after a generous real deadline.
func reply(t *testing.T, clk *clock.Fake, rd *bufio.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		l, err := rd.ReadString('\n')
		if err != nil {
			l = "read error: " + err.Error()
		}
		got <- strings.TrimRight(l, "\r\n")
	}()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l := <-got:
			return l
		case <-deadline:
			t.Fatal("no reply within 20s")
		case <-time.After(time.Millisecond):
			clk.Advance(tick)
		}
	}
}

// TestLongCommandFreesItsLoop: while a command that said it may run long
// (BeginLong) runs, the other connections of its event loop are answered;
// once it returns, its own replies and what it pipelined after it arrive
// in order, mail pushed to it meanwhile after them, and the connection is
// served by the loop again.
func TestLongCommandFreesItsLoop(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("event loops are Linux's")
	}
	clk := clock.NewFake(0)
	h := &looper{entered: make(chan struct{}), release: make(chan struct{}), longC: make(chan *Conn, 1)}
	s := New(h, limits(), true, clk)
	ln, _ := serveOne(t, s)
	addr := ln.Addr().String()

	// The connection that runs LONG, and the next that shares its loop.
	long, longRd := h.dial(t, addr)
	fmt.Fprint(long, "LOOP\r\n")
	loop := reply(t, clk, longRd)
	var peer net.Conn
	var peerRd *bufio.Reader
	for i := 0; i <= runtime.GOMAXPROCS(0) && peer == nil; i++ {
		nc, rd := h.dial(t, addr)
		fmt.Fprint(nc, "LOOP\r\n")
		if reply(t, clk, rd) == loop {
			peer, peerRd = nc, rd
		}
	}
	if peer == nil {
		t.Fatal("no connection shares the first one's loop")
	}

	fmt.Fprint(long, "LONG\r\nAFTER\r\n")
	<-h.entered
	c := <-h.longC
	for i := 0; i < 3; i++ {
		fmt.Fprint(peer, "PING\r\n")
		if got := reply(t, clk, peerRd); got != "+PING" {
			t.Fatalf("peer on the held loop: %q, want +PING", got)
		}
	}
	c.Push([]byte("+MAIL\r\n"))
	close(h.release)
	for _, want := range []string{"+DONE", "+AFTER", "+MAIL"} {
		if got := reply(t, clk, longRd); got != want {
			t.Fatalf("long connection: %q, want %q", got, want)
		}
	}
	fmt.Fprint(long, "AGAIN\r\n")
	if got := reply(t, clk, longRd); got != "+AGAIN" {
		t.Fatalf("long connection after its command: %q, want +AGAIN", got)
	}
	fmt.Fprint(peer, "PING\r\n")
	if got := reply(t, clk, peerRd); got != "+PING" {
		t.Fatalf("peer after the long command: %q, want +PING", got)
	}
}

// TestLongCommandOutlivesItsLoop: a connection whose long command is still
// running when the server closes is closed once the command returns.
func TestLongCommandOutlivesItsLoop(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(0)
	h := &looper{entered: make(chan struct{}), release: make(chan struct{}), longC: make(chan *Conn, 1)}
	s := New(h, limits(), true, clk)
	ln, _ := serveOne(t, s)
	long, longRd := h.dial(t, ln.Addr().String())
	fmt.Fprint(long, "LONG\r\n")
	<-h.entered
	<-h.longC
	for i := 0; i < 3; i++ {
		clk.Advance(tick) // taken over
	}
	s.Close()
	close(h.release)
	long.SetReadDeadline(time.Now().Add(20 * time.Second))
	rest, _ := longRd.ReadString(0) // until EOF
	if rest != "+DONE\r\n" && rest != "" {
		t.Fatalf("after close: %q", rest)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.Conns() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := s.Conns(); n != 0 {
		t.Fatalf("%d connections left open", n)
	}
}
