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
// time it came.
type pushLog struct {
	mu     sync.Mutex
	pushes [][]byte
	at     []time.Time
}

func (p *pushLog) Push(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushes = append(p.pushes, bytes.Clone(b))
	p.at = append(p.at, time.Now())
}

func (p *pushLog) Kill() {}

// waitFor returns the index of the first push from index from on that
// holds rec, and when it came; it fails the test after limit.
func (p *pushLog) waitFor(t *testing.T, from int, rec []byte, limit time.Duration) (int, time.Time) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for i := from; i < len(p.pushes); i++ {
			if bytes.Contains(p.pushes[i], rec) {
				at := p.at[i]
				p.mu.Unlock()
				return i, at
			}
		}
		p.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%q was not sent within %v", rec, limit)
	return 0, time.Time{}
}

// TestSendIntervalPacesTheStream: with repl-send-interval set, a quiet
// link sends a record at once, records that follow within the interval go
// in one write no sooner than the interval after the last, and a WAIT
// sends what is pending without waiting for the interval.
func TestSendIntervalPacesTheStream(t *testing.T) {
	eng := engine.New(clock.NewFake(int64(1_800_000_000)*int64(time.Second)), 0)
	m := New(eng, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
	defer m.Close()
	const interval = time.Second
	m.SetSendInterval(interval)
	sink := &pushLog{}
	r := m.Attach(sink, "127.0.0.1", 6380, "?", 0)
	for r.State() != StateOnline {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(interval + 100*time.Millisecond) // the link has been quiet for an interval

	rec := func(s string) []byte { return persistence.AppendCommand(nil, "PING", s) }
	start := time.Now()
	m.stream.Append(rec("first"))
	i, first := sink.waitFor(t, 0, rec("first"), interval/2)
	t.Logf("after a quiet interval: sent in %v", first.Sub(start))

	m.stream.Append(rec("second"))
	m.stream.Append(rec("third"))
	j, second := sink.waitFor(t, i+1, rec("second"), 5*interval)
	if k, _ := sink.waitFor(t, i+1, rec("third"), time.Second); k != j {
		t.Errorf("second and third went in writes %d and %d, want one", j, k)
	}
	if gap := second.Sub(first); gap < interval-10*time.Millisecond {
		t.Errorf("second write %v after the first, want at least the interval %v", gap, interval)
	}

	m.SetSendInterval(time.Hour)
	m.stream.Append(rec("fourth"))
	start = time.Now()
	m.Wait(1, 0, func(int) {})
	_, fourth := sink.waitFor(t, j+1, rec("fourth"), 10*time.Second)
	t.Logf("under WAIT, with an interval of an hour: sent in %v", fourth.Sub(start))
}
