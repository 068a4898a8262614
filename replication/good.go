package replication

import (
	"sync/atomic"
	"time"
)

// minReplicas is min-replicas-to-write and min-replicas-max-lag: a primary
// refuses writes while fewer than n replicas are good, online and
// acknowledged within maxLag (Redis's repl_good_slaves_count, refreshed as
// Redis refreshes it: once a second, and when a replica comes online, goes
// or acknowledges).
type minReplicas struct {
	n      atomic.Int64
	maxLag atomic.Int64 // nanoseconds
	short  atomic.Bool  // refuse writes now
}

// SetMinReplicas sets min-replicas-to-write (n) and min-replicas-max-lag;
// either 0 turns the check off, as in Redis.
func (m *Manager) SetMinReplicas(n int, maxLag time.Duration) {
	m.min.n.Store(int64(n))
	m.min.maxLag.Store(int64(maxLag))
	m.refreshGood()
}

// ShortOfReplicas is set while this primary has fewer good replicas than
// min-replicas-to-write asks: writes are then refused (-NOREPLICAS). The
// command layer's gate reads it on every command.
func (m *Manager) ShortOfReplicas() *atomic.Bool { return &m.min.short }

// GoodReplicas counts the replicas online that acknowledged within
// min-replicas-max-lag (INFO's min_slaves_good_slaves).
func (m *Manager) GoodReplicas() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.goodLocked()
}

func (m *Manager) goodLocked() int {
	maxLag := time.Duration(m.min.maxLag.Load())
	now := m.clk.Mono()
	good := 0
	for _, r := range m.replicas {
		// Redis compares whole seconds: lag <= max-lag.
		lag := (now - time.Duration(r.ackMono.Load())) / time.Second * time.Second
		if r.State() == StateOnline && lag <= maxLag {
			good++
		}
	}
	return good
}

// refreshGood recomputes ShortOfReplicas.
func (m *Manager) refreshGood() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refreshGoodLocked()
}

func (m *Manager) refreshGoodLocked() {
	n, maxLag := m.min.n.Load(), m.min.maxLag.Load()
	short := m.link == nil && n > 0 && maxLag > 0 && int64(m.goodLocked()) < n
	if m.min.short.Load() != short {
		m.min.short.Store(short)
	}
}
