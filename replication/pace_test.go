package replication

import (
	"bytes"
	"io"
	"log"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

// pushLog is a replica's connection that keeps every push apart, with the
// time it came on clk.
type pushLog struct {
	clk    clock.Clock
	mu     sync.Mutex
	pushes [][]byte
	at     []time.Duration // on clk's Mono
	pushed chan struct{}   // signalled after each push
}

func newPushLog(clk clock.Clock) *pushLog {
	return &pushLog{clk: clk, pushed: make(chan struct{}, 1)}
}

func (p *pushLog) Push(b []byte) {
	p.mu.Lock()
	p.pushes = append(p.pushes, bytes.Clone(b))
	p.at = append(p.at, p.clk.Mono())
	p.mu.Unlock()
	select {
	case p.pushed <- struct{}{}:
	default:
	}
}

func (p *pushLog) Kill()              {}
func (p *pushLog) Unsent() int64      { return 0 }
func (p *pushLog) Limit() OutputLimit { return OutputLimit{} }

// find returns the index of the first push from index from on that holds
// rec, and when it came, or -1.
func (p *pushLog) find(from int, rec []byte) (int, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := from; i < len(p.pushes); i++ {
		if bytes.Contains(p.pushes[i], rec) {
			return i, p.at[i]
		}
	}
	return -1, 0
}

// waitFor returns the index of the first push from index from on that
// holds rec, and when it came; it fails the test if none comes within 10
// s of real time, a bound for a broken build.
func (p *pushLog) waitFor(t *testing.T, from int, rec []byte) (int, time.Duration) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if i, at := p.find(from, rec); i >= 0 {
			return i, at
		}
		select {
		case <-p.pushed:
		case <-deadline:
			t.Fatalf("%q was not sent", rec)
		}
	}
}

// TestSendIntervalPacesTheStream: with repl-send-interval set, a quiet
// link sends a record at once, records that follow within the interval go
// in one write exactly the interval after the last, and a WAIT sends what
// is pending without waiting for the interval.
func TestSendIntervalPacesTheStream(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(int64(1_800_000_000) * int64(time.Second))
	m := New(engine.New(clk, 0), log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
	defer m.Close()
	const interval = time.Second
	m.SetSendInterval(interval)
	sink := newPushLog(clk)
	r := m.Attach(sink, "127.0.0.1", 6380, "?", 0)
	// The snapshot goes out first, the sender looking at the connection's
	// progress on the clock: step it until the replica is online.
	for deadline := time.Now().Add(10 * time.Second); r.State() != StateOnline; {
		if time.Now().After(deadline) {
			t.Fatal("the replica never came online")
		}
		clk.WaitForWaiters(1, time.Second)
		clk.Advance(5 * time.Millisecond)
	}
	if !clk.WaitForWaiters(1, 10*time.Second) {
		t.Fatal("the replica's sender never started")
	}
	base := clk.Mono()
	clk.Advance(interval) // the link has been quiet for an interval

	rec := func(s string) []byte { return persistence.AppendCommand(nil, "PING", s) }
	m.stream.Append(rec("first"))
	i, first := sink.waitFor(t, 0, rec("first"))
	if first != base+interval {
		t.Errorf("after a quiet interval the first record went at %v, want at once (%v)", first, base+interval)
	}

	m.stream.Append(rec("second"))
	m.stream.Append(rec("third"))
	if !clk.WaitForWaiters(2, 10*time.Second) { // the sender's look-out and its pace
		t.Fatal("the sender never paced")
	}
	clk.Advance(interval - time.Millisecond)
	if k, _ := sink.find(i+1, rec("second")); k >= 0 {
		t.Fatal("the second record went before the interval had passed")
	}
	clk.Advance(time.Millisecond)
	j, second := sink.waitFor(t, i+1, rec("second"))
	if k, _ := sink.waitFor(t, i+1, rec("third")); k != j {
		t.Errorf("second and third went in writes %d and %d, want one", j, k)
	}
	if gap := second - first; gap != interval {
		t.Errorf("second write %v after the first, want the interval %v", gap, interval)
	}

	m.SetSendInterval(time.Hour)
	m.stream.Append(rec("fourth"))
	m.Wait(1, 0, func(int) {})
	if _, fourth := sink.waitFor(t, j+1, rec("fourth")); fourth != second {
		t.Errorf("under WAIT, with an interval of an hour, sent at %v, want at once (%v)", fourth, second)
	}
}
