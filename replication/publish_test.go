package replication

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
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

// online attaches sink as a replica of m and steps clk until the
// replica is online and the event loops push to it (Publish).
func online(t *testing.T, m *Manager, clk *clock.Fake, sink Sink) *Replica {
	t.Helper()
	r := m.Attach(sink, "127.0.0.1", 6380, "?", 0)
	// The snapshot goes out first, the sender looking at the connection's
	// progress on the clock: step it until the replica is online.
	for deadline := time.Now().Add(20 * time.Second); ; {
		if rs := m.streamed.Load(); rs != nil && len(*rs) == 1 {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica never came online")
		}
		clk.WaitForWaiters(1, time.Second)
		clk.Advance(5 * time.Millisecond)
	}
}

// TestPublishPushesTheRoundBeforeItReturns: the writes of a round are on
// the replica's connection when Publish (the end of the round, before its
// replies are flushed) returns, all of them in one push, with the clock
// never stepped: no timer and no other goroutine carries them.
func TestPublishPushesTheRoundBeforeItReturns(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(int64(1_800_000_000) * int64(time.Second))
	eng := engine.New(clk, 0)
	m := New(eng, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
	defer m.Close()
	sink := newPushLog(clk)
	online(t, m, clk, sink)

	for round := 0; round < 50; round++ {
		keys := []string{fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round), fmt.Sprintf("c%d", round)}
		sink.mu.Lock()
		before := len(sink.pushes)
		sink.mu.Unlock()
		for _, k := range keys { // a pipeline of three writes
			eng.SetString([]byte(k), clk.Now(), []byte("v"), engine.SetOptions{}, nil)
		}
		m.Publish()
		sink.mu.Lock()
		got := sink.pushes[before:]
		sink.mu.Unlock()
		if len(got) != 1 {
			t.Fatalf("round %d: %d pushes, want the round's records in one", round, len(got))
		}
		for _, k := range keys {
			if !bytes.Contains(got[0], []byte(k)) {
				t.Fatalf("round %d: the write of %s was not pushed when Publish returned", round, k)
			}
		}
	}
}

// TestPublishFromManyLoops: event loops publishing their rounds at once
// each return only once their own writes were pushed, and the replica's
// connection gets the stream whole and in order.
func TestPublishFromManyLoops(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(int64(1_800_000_000) * int64(time.Second))
	eng := engine.New(clk, 4)
	m := New(eng, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
	defer m.Close()
	sink := newPushLog(clk)
	online(t, m, clk, sink)
	from := m.stream.Offset()
	var wg sync.WaitGroup
	for loop := 0; loop < 4; loop++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				eng.SetString([]byte(fmt.Sprintf("k%d-%d", loop, i)), clk.Now(), []byte("v"), engine.SetOptions{}, nil)
				end := m.stream.Offset()
				m.Publish()
				if r := (*m.streamed.Load())[0]; r.sent.Load() < end {
					t.Errorf("loop %d: Publish returned with the stream pushed to %d, its write ends at %d", loop, r.sent.Load(), end)
					return
				}
			}
		}()
	}
	wg.Wait()
	sink.mu.Lock()
	got := bytes.Join(sink.pushes, nil)
	sink.mu.Unlock()
	want := m.stream.Offset() - from
	if int64(len(got)) < want || !bytes.HasSuffix(got, tailOf(t, m, from)) {
		t.Fatalf("the replica got %d bytes, want the stream's %d in order", len(got), want)
	}
}

// tailOf is the stream from offset from to its end.
func tailOf(t *testing.T, m *Manager, from int64) []byte {
	t.Helper()
	r := m.stream.Continue(m.stream.id, from+1)
	if r == nil {
		t.Fatal("the stream no longer holds what the replica was sent")
	}
	defer r.Close()
	b, err := r.Next(nil, math.MaxInt)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
