package replication

import (
	"time"
)

// MasterClient is a replica's link to its primary as CLIENT LIST shows it
// and CLIENT KILL finds it: Redis's master client (flags=M, TYPE master).
// It exists while the link applies the stream. Its ID is given when a
// full resynchronisation (or the first continued one) makes it and kept
// across partial resynchronisations, as Redis keeps its cached master's.
type MasterClient struct {
	ID          int64
	Addr, LAddr string // the primary's address and the link's own, as the socket has them
	Age, Idle   int64  // seconds since it was made and since the last byte from the primary
}

// SetClientIDs gives the manager the server's client ID counter, from
// which the link to a primary takes its master client's ID. Without it
// the master client's ID is 0.
func (m *Manager) SetClientIDs(next func() int64) {
	m.mu.Lock()
	m.nextClientID = next
	m.mu.Unlock()
}

// newClientID is a new client ID from the server's counter (0 without one).
func (m *Manager) newClientID() int64 {
	m.mu.Lock()
	next := m.nextClientID
	m.mu.Unlock()
	if next == nil {
		return 0
	}
	return next()
}

// MasterClient returns the link's master client while the link applies
// the stream.
func (m *Manager) MasterClient() (MasterClient, bool) {
	m.mu.Lock()
	l := m.link
	m.mu.Unlock()
	if l == nil || !l.up() {
		return MasterClient{}, false
	}
	now := m.clk.Mono()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return MasterClient{}, false
	}
	return MasterClient{
		ID:    l.clientID,
		Addr:  l.conn.RemoteAddr().String(),
		LAddr: l.conn.LocalAddr().String(),
		Age:   int64((now - l.clientMade) / time.Second),
		Idle:  int64((now - time.Duration(l.lastIO.Load())) / time.Second),
	}, true
}

// KillMasterClient cuts the link's connection when its master client is
// id (CLIENT KILL TYPE master): the replica reconnects at once and asks to
// continue where it stopped, as Redis's does. It reports whether it cut.
func (m *Manager) KillMasterClient(id int64) bool {
	m.mu.Lock()
	l := m.link
	m.mu.Unlock()
	if l == nil || !l.up() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil || l.clientID != id {
		return false
	}
	l.conn.Close()
	return true
}
