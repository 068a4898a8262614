// Package monitor is the MONITOR command, as Redis has it: every command a
// client runs is streamed to the monitoring connections, administration
// commands excepted (Redis hides them: they would show passwords and
// configuration), AUTH's arguments redacted.
//
// It owns the set of monitoring connections and their connection mode, and
// watches the commands that run through the table's observer only while
// someone monitors, so that dispatch pays one atomic load when nobody does.
//
// It imports the command core and clock; never another family, the
// transport or the assembly.
package monitor

import (
	"strconv"
	"sync"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
)

// Family is MONITOR and the connections that monitor.
type Family struct {
	table *command.Table
	clk   clock.Clock
	mode  command.Mode // on while a client monitors

	mu sync.Mutex
	to map[*command.Client]struct{}
}

// New returns the family with no monitors yet.
func New() *Family { return &Family{to: map[*command.Client]struct{}{}} }

// Register adds MONITOR, its connection mode and what it forgets of a
// client reset or gone to t.
func (f *Family) Register(t *command.Table, env command.Env) {
	f.table, f.clk = t, env.Clock
	t.Register(&command.Command{Name: "monitor", Arity: 1, Flags: command.FlagAdmin | command.FlagNoMulti | command.FlagLoading | command.FlagStale, Group: "server", Since: "0.1.0",
		Complexity: "O(1)", Summary: "Streams every command the server runs, administration commands excepted, to this connection.",
		Handler: f.cmdMonitor})
	f.mode = t.AddMode(f.gate)
	t.OnClientReset(f.stop)
	t.OnClientClosed(f.stop)
}

func (f *Family) cmdMonitor(c *command.Client, _ [][]byte) {
	if !c.HasConn() {
		c.Err("ERR a client with no connection cannot monitor")
		return
	}
	f.mu.Lock()
	if _, ok := f.to[c]; !ok {
		f.to[c] = struct{}{}
		if len(f.to) == 1 {
			f.table.ObserveCommands(f.feed)
		}
	}
	f.mu.Unlock()
	c.SetMode(f.mode, true)
	c.OK()
}

// stop takes c out of MONITOR mode (RESET, or the client gone).
func (f *Family) stop(c *command.Client) {
	if !c.InMode(f.mode) {
		return
	}
	f.mu.Lock()
	if _, ok := f.to[c]; ok {
		delete(f.to, c)
		if len(f.to) == 0 {
			f.table.ObserveCommands(nil)
		}
	}
	f.mu.Unlock()
	c.SetMode(f.mode, false)
}

// gate refuses a monitoring client the keyspace, as Redis does (the modes
// gate calls it while the client's mode is on).
func (f *Family) gate(c *command.Client, cmd *command.Command, _ [][]byte) bool {
	if cmd.Flags&(command.FlagWrite|command.FlagReadonly) == 0 {
		return true
	}
	c.Err("ERR Replica can't interact with the keyspace")
	return false
}

// feed streams one command that ran to every monitor, as
// '+<seconds>.<micros> [0 <addr>] "arg" ...', with "lua" for the address
// of a command a script called.
func (f *Family) feed(c *command.Client, cmd *command.Command, args [][]byte) {
	if cmd.Flags&command.FlagAdmin != 0 {
		return
	}
	now := f.clk.Now()
	b := []byte{'+'}
	b = strconv.AppendInt(b, now/1e9, 10)
	b = append(b, '.')
	us := strconv.AppendInt(nil, now%1e9/1e3, 10)
	for i := len(us); i < 6; i++ {
		b = append(b, '0')
	}
	b = append(b, us...)
	if c.Calling() { // a script's redis.call
		b = append(b, " [0 lua]"...)
	} else {
		b = append(b, " [0 "...)
		b = append(b, c.Addr...)
		b = append(b, ']')
	}
	secret := command.SecretArgs(cmd, args)
	for i, a := range args {
		b = append(b, ' ')
		if secret != nil && secret[i] {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	b = append(b, '\r', '\n')
	f.mu.Lock()
	to := make([]*command.Client, 0, len(f.to))
	for mc := range f.to {
		to = append(to, mc)
	}
	f.mu.Unlock()
	for _, mc := range to {
		mc.Deliver(b)
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
