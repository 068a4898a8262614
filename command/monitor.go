package command

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// MONITOR, as Redis has it: every command a client runs is streamed to
// the monitoring connections, administration commands excepted (Redis
// hides them: they would show passwords and configuration), AUTH's
// arguments redacted.

func registerMonitor(t *Table) {
	t.Register(&Command{Name: "monitor", Arity: 1, Flags: FlagAdmin | FlagNoMulti | FlagLoading | FlagStale, Group: "server", Since: "0.1.0",
		Complexity: "O(1)", Summary: "Streams every command the server runs, administration commands excepted, to this connection.",
		Handler: cmdMonitor})
	t.monitorMode = t.AddMode(monitorGate)
}

// monitors are the connections in MONITOR mode.
type monitors struct {
	n  atomic.Int32 // len(set), read on every command
	mu sync.Mutex
	to map[*Client]struct{}
}

func cmdMonitor(c *Client, _ [][]byte) {
	if c.conn == nil {
		c.Err("ERR a client with no connection cannot monitor")
		return
	}
	m := &c.srv.monitors
	m.mu.Lock()
	if m.to == nil {
		m.to = map[*Client]struct{}{}
	}
	if _, ok := m.to[c]; !ok {
		m.to[c] = struct{}{}
		m.n.Add(1)
	}
	m.mu.Unlock()
	c.monitoring.Store(true)
	c.SetMode(c.srv.table.monitorMode, true)
	c.OK()
}

// stopMonitoring takes c out of MONITOR mode (RESET, or the client gone).
func (s *Server) stopMonitoring(c *Client) {
	if !c.monitoring.Load() {
		return
	}
	m := &s.monitors
	m.mu.Lock()
	if _, ok := m.to[c]; ok {
		delete(m.to, c)
		m.n.Add(-1)
	}
	m.mu.Unlock()
	c.monitoring.Store(false)
	c.SetMode(c.srv.table.monitorMode, false)
}

// monitorGate refuses a monitoring client the keyspace, as Redis does
// (modeGate calls it).
func monitorGate(c *Client, cmd *Command, _ [][]byte) bool {
	if !c.monitoring.Load() || cmd.Flags&(FlagWrite|FlagReadonly) == 0 {
		return true
	}
	c.Err("ERR Replica can't interact with the keyspace")
	return false
}

// feedMonitors streams one command that ran to every monitor, as
// '+<seconds>.<micros> [0 <addr>] "arg" ...'.
func (s *Server) feedMonitors(c *Client, cmd *Command, args [][]byte) {
	if cmd.Flags&FlagAdmin != 0 {
		return
	}
	now := s.clk.Now()
	b := []byte{'+'}
	b = strconv.AppendInt(b, now/1e9, 10)
	b = append(b, '.')
	us := strconv.AppendInt(nil, now%1e9/1e3, 10)
	for i := len(us); i < 6; i++ {
		b = append(b, '0')
	}
	b = append(b, us...)
	b = append(b, " [0 "...)
	b = append(b, c.Addr...)
	b = append(b, ']')
	secret := SecretArgs(cmd, args)
	for i, a := range args {
		b = append(b, ' ')
		if secret != nil && secret[i] {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	b = append(b, '\r', '\n')
	m := &s.monitors
	m.mu.Lock()
	to := make([]*Client, 0, len(m.to))
	for mc := range m.to {
		to = append(to, mc)
	}
	m.mu.Unlock()
	for _, mc := range to {
		mc.conn.Push(b)
	}
}

// appendRepr appends a quoted, escaped argument as Redis's sdscatrepr
// writes it.
func appendRepr(b, a []byte) []byte {
	b = append(b, '"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= ' ' && ch <= '~' {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', "0123456789abcdef"[ch>>4], "0123456789abcdef"[ch&15])
			}
		}
	}
	return append(b, '"')
}
