package replication

import (
	"bufio"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
)

// fakePrimary accepts a replica's connections and, for each, does what the
// test sends it on script: fail closes the connection at once (an attempt
// that fails before the stream flows); cont answers the handshake and
// PSYNC with +CONTINUE, then keeps the link until the test closes it
// through closeNow.
type fakePrimary struct {
	ln       net.Listener
	clk      *clock.Fake
	accepted chan time.Duration // each connection's arrival, on clk's Mono
	script   chan string        // "fail" or "cont", one per connection
	flowing  chan struct{}      // a cont connection answered +CONTINUE
	closeNow chan struct{}      // close the cont connection
}

func newFakePrimary(t *testing.T, clk *clock.Fake) *fakePrimary {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &fakePrimary{ln: ln, clk: clk, accepted: make(chan time.Duration, 16), script: make(chan string, 16),
		flowing: make(chan struct{}, 1), closeNow: make(chan struct{}, 1)}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *fakePrimary) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted <- p.clk.Mono()
		if <-p.script == "fail" {
			c.Close()
			continue
		}
		br := bufio.NewReader(c)
		for {
			args, err := readCommand(br)
			if err != nil {
				break
			}
			switch strings.ToUpper(args[0]) {
			case "PING":
				io.WriteString(c, "+PONG\r\n")
			case "REPLCONF":
				if !strings.EqualFold(args[1], "ACK") {
					io.WriteString(c, "+OK\r\n")
				}
			case "PSYNC":
				io.WriteString(c, "+CONTINUE\r\n")
				p.flowing <- struct{}{}
				go func() { <-p.closeNow; c.Close() }()
			}
		}
		c.Close()
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	args := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if _, err := br.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		s, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args = append(args, strings.TrimRight(s, "\r\n"))
	}
	return args, nil
}

// TestReconnectBacksOff walks a replica's link through failed attempts on
// the fake clock: the first retry is immediate, then 50 ms, doubling to a
// second and staying there; an attempt that reaches the stream resets it,
// so the link reconnects at once when that connection fails, and backs off
// from 50 ms again after.
func TestReconnectBacksOff(t *testing.T) {
	clk := clock.NewFake(1_700_000_000e9)
	m := New(engine.New(clk, 2), log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
	defer m.Close()
	p := newFakePrimary(t, clk)
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	portN, _ := strconv.Atoi(port)

	next := func(step int) time.Duration { // the next attempt's arrival
		t.Helper()
		select {
		case at := <-p.accepted:
			return at
		case <-time.After(30 * time.Second):
			t.Fatalf("step %d: no attempt", step)
			return 0
		}
	}
	// expect checks the attempt after last comes want later on the clock
	// and not before: the link waits on the clock, not in real time.
	stale := 0 // the clock's waiters that are not the link's
	expect := func(step int, last time.Duration, want time.Duration, outcome string) time.Duration {
		t.Helper()
		if want > 0 {
			if !clk.WaitForWaiters(stale+1, 30*time.Second) {
				t.Fatalf("step %d: the link is not waiting on the clock", step)
			}
			clk.Advance(want - time.Millisecond)
			select {
			case at := <-p.accepted:
				t.Fatalf("step %d: an attempt %v after the last, want %v", step, at-last, want)
			case <-time.After(50 * time.Millisecond):
			}
			clk.Advance(time.Millisecond)
		}
		p.script <- outcome
		at := next(step)
		if got := at - last; got != want {
			t.Fatalf("step %d: attempt %v after the last, want %v", step, got, want)
		}
		return at
	}

	p.script <- "fail"
	m.ReplicaOf(host, portN)
	last := next(0)
	waits := []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
		400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i, w := range waits {
		last = expect(i+1, last, w, "fail")
	}
	// An attempt that reaches the stream.
	last = expect(len(waits)+1, last, time.Second, "cont")
	<-p.flowing
	// Its acknowledgement loop waits on the clock too: let it register
	// before the link fails, so the waiters counted next are the link's.
	if !clk.WaitForWaiters(1, 30*time.Second) {
		t.Fatal("the acknowledgement loop is not waiting")
	}
	stale = 1 // its wait stays registered (a second, longer than what follows)
	p.closeNow <- struct{}{}
	step := len(waits) + 2
	last = expect(step, last, 0, "fail")
	last = expect(step+1, last, 50*time.Millisecond, "fail")
	expect(step+2, last, 100*time.Millisecond, "fail")
}
