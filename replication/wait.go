package replication

import (
	"time"

	"github.com/limitdb/limitdb/persistence"
)

// waiter is one WAIT: done is called once, with the replicas that
// acknowledged target, when n of them have or when the timeout passes.
type waiter struct {
	target int64
	n      int
	done   func(acked int)
	stop   chan struct{}
}

// Wait is WAIT n timeout: it counts the replicas that acknowledged the
// stream up to its current offset. When n have already, it returns that
// count and true. Otherwise it asks every replica for an acknowledgement
// now (REPLCONF GETACK) and returns false; done gets the count later, from
// another goroutine, once n replicas acknowledged or timeout passed (0:
// never).
func (m *Manager) Wait(n int, timeout time.Duration, done func(acked int)) (int, bool) {
	target := m.stream.Offset()
	m.mu.Lock()
	if c := m.ackedLocked(target); c >= n {
		m.mu.Unlock()
		return c, true
	}
	w := &waiter{target: target, n: n, done: done, stop: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	getack := len(m.replicas) > 0 && m.link == nil
	m.mu.Unlock()
	if getack {
		m.stream.Append(persistence.AppendCommand(nil, persistence.VerbReplconf, "GETACK", "*"))
	}
	if timeout > 0 {
		go func() {
			select {
			case <-m.clk.After(timeout):
				m.mu.Lock()
				fire := m.removeWaiterLocked(w)
				c := m.ackedLocked(w.target)
				m.mu.Unlock()
				if fire {
					w.done(c)
				}
			case <-w.stop:
			}
		}()
	}
	return 0, false
}

// ackedLocked counts the online replicas that acknowledged off since they
// had their snapshot. The caller holds m.mu.
func (m *Manager) ackedLocked(off int64) int {
	c := 0
	for _, r := range m.replicas {
		if r.State() == StateOnline && r.acked.Load() && r.ack.Load() >= off {
			c++
		}
	}
	return c
}

// removeWaiterLocked removes w and reports whether it was still waiting.
func (m *Manager) removeWaiterLocked(w *waiter) bool {
	for i, x := range m.waiters {
		if x == w {
			m.waiters = append(m.waiters[:i], m.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// checkWaiters answers the waiters that enough replicas acknowledged.
func (m *Manager) checkWaiters() {
	type fired struct {
		w *waiter
		c int
	}
	var out []fired
	m.mu.Lock()
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if c := m.ackedLocked(w.target); c >= w.n {
			out = append(out, fired{w, c})
			continue
		}
		kept = append(kept, w)
	}
	m.waiters = kept
	m.mu.Unlock()
	for _, f := range out {
		close(f.w.stop)
		f.w.done(f.c)
	}
}

// failWaiters answers every waiter with its current count (the server is
// closing). The caller holds m.mu.
func (m *Manager) failWaiters() {
	ws := m.waiters
	m.waiters = nil
	for _, w := range ws {
		close(w.stop)
		c := m.ackedLocked(w.target)
		go w.done(c)
	}
}

// Acked counts the replicas that acknowledged the stream's current offset.
func (m *Manager) Acked() int {
	target := m.stream.Offset()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ackedLocked(target)
}

// WaitAt is the wait of a reply held until n replicas acknowledged target
// (limiter-wait-replicas): as Wait, but the acknowledgements are asked
// for once for every waiter of a round, by the GETACK that the round's
// Publish appends, rather than one GETACK each. done gets the count from
// another goroutine, once n replicas acknowledged or timeout passed (0:
// never), unless WaitAt returns true: then they already had.
func (m *Manager) WaitAt(target int64, n int, timeout time.Duration, done func(acked int)) bool {
	m.mu.Lock()
	if m.ackedLocked(target) >= n {
		m.mu.Unlock()
		return true
	}
	w := &waiter{target: target, n: n, done: done, stop: make(chan struct{})}
	m.waiters = append(m.waiters, w)
	m.mu.Unlock()
	m.wantAck.Store(true)
	if timeout > 0 {
		expired := m.clk.After(timeout) // from now, not from when the goroutine runs
		go func() {
			select {
			case <-expired:
				m.mu.Lock()
				fire := m.removeWaiterLocked(w)
				c := m.ackedLocked(w.target)
				m.mu.Unlock()
				if fire {
					w.done(c)
				}
			case <-w.stop:
			}
		}()
	}
	return false
}

// askAcks appends one GETACK for the waiters WaitAt registered since the
// last call; Publish calls it before it pushes the round.
func (m *Manager) askAcks() {
	if m.wantAck.Load() && m.wantAck.Swap(false) {
		m.stream.Append(persistence.AppendCommand(nil, persistence.VerbReplconf, "GETACK", "*"))
	}
}

// SetLimiterWait sets limiter-wait-replicas and limiter-wait-timeout.
func (m *Manager) SetLimiterWait(n int, timeout time.Duration) {
	m.limiterWait.Store(int64(n))
	m.limiterWaitTimeout.Store(int64(timeout))
}

// LimiterWait is limiter-wait-replicas and limiter-wait-timeout.
func (m *Manager) LimiterWait() (int, time.Duration) {
	return int(m.limiterWait.Load()), time.Duration(m.limiterWaitTimeout.Load())
}
