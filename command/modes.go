package command

import "sync/atomic"

// A connection in a mode (subscribed, monitoring), a busy server and a
// server that refuses writes (a failed snapshot with
// stop-writes-on-bgsave-error, a read-only replica) each restrict what a
// command may do. One gate checks them all, so that the common case, none
// of them, costs a few atomic loads and one call per command.

// Mode is one bit of a connection's mode, owned by the family that added
// it (AddMode): while it is on, the family's check runs before each of the
// connection's commands, in the GateModes slot of the gate order.
type Mode uint32

// maxModes bounds the modes the families may add.
const maxModes = 8

// AddMode adds a connection mode whose check runs, while the mode is on,
// before every command of the connection; checks run in the order the
// modes were added.
func (t *Table) AddMode(check GateFunc) Mode {
	if t.nModes == maxModes {
		panic("command: too many connection modes")
	}
	t.modeChecks[t.nModes] = check
	t.nModes++
	return Mode(1) << (t.nModes - 1)
}

func registerModes(t *Table) { t.SetGate(GateModes, modeGate) }

func modeGate(c *Client, cmd *Command, args [][]byte) bool {
	m := c.mode.Load()
	t := c.srv.table
	busy := t.busy != nil && t.busy.Load() != 0
	readOnly := t.readOnly != nil && t.readOnly.Load()
	misconf := t.refusingWrites()
	noReplicas := t.noReplicas != nil && t.noReplicas.Load()
	if m == 0 && !misconf && !readOnly && !busy && !noReplicas {
		return true
	}
	if busy && !t.busyCheck(c, cmd, args) {
		return false
	}
	for i := 0; m != 0; i, m = i+1, m>>1 {
		if m&1 != 0 && !t.modeChecks[i](c, cmd, args) {
			return false
		}
	}
	return (!misconf || t.misconfCheck(c, cmd, args)) && (!noReplicas || t.noReplicasCheck(c, cmd, args)) &&
		(!readOnly || t.readOnlyCheck(c, cmd, args))
}

// SetNoReplicasCheck makes the server refuse writes while *refuse is true
// (a primary with fewer good replicas than min-replicas-to-write): then
// check runs before every command of every client, in the modes gate
// after the misconf check and before the read-only check, Redis's order.
// The family that owns the flag (the replicas') sets it once, at
// registration.
func (t *Table) SetNoReplicasCheck(refuse *atomic.Bool, check GateFunc) {
	if t.noReplicas != nil {
		panic("command: no-replicas check set twice")
	}
	t.noReplicas, t.noReplicasCheck = refuse, check
}

// SetMisconfCheck makes the server refuse writes while *refuse is true (a
// failed snapshot under stop-writes-on-bgsave-error, an append-only file
// that cannot be written): then check runs before every command of every
// client, in the modes gate (GateModes) after the connection modes and
// before the read-only check, and may refuse it (MISCONF); WritesUnchecked
// reports false. The family that owns the flag (the persistence family)
// sets it once, at registration; while the flag is false the gate does
// not call check.
func (t *Table) SetMisconfCheck(refuse *atomic.Bool, check GateFunc) {
	if t.misconf != nil {
		panic("command: misconf check set twice")
	}
	t.misconf, t.misconfCheck = refuse, check
}

// refusingWrites reports whether the misconf check is on (SetMisconfCheck).
func (t *Table) refusingWrites() bool { return t.misconf != nil && t.misconf.Load() }

// SetReadOnlyCheck makes the server read-only while *readOnly is true:
// then check runs before every command of every client, last in the modes
// gate (GateModes, after the misconf check), and may refuse it; WritesUnchecked
// reports false and ReadOnly true. The family that owns the flag (the
// replicas', for a read-only replica) sets it once, at registration; while
// the flag is false the gate does not call check.
func (t *Table) SetReadOnlyCheck(readOnly *atomic.Bool, check GateFunc) {
	if t.readOnly != nil {
		panic("command: read-only check set twice")
	}
	t.readOnly, t.readOnlyCheck = readOnly, check
}

// ReadOnly reports whether the server is read-only (SetReadOnlyCheck): a
// read-only replica, which refuses writes. Any goroutine may call it.
func (s *Server) ReadOnly() bool {
	ro := s.table.readOnly
	return ro != nil && ro.Load()
}

// SetMode turns one mode of c on or off; any goroutine may call it.
func (c *Client) SetMode(m Mode, on bool) {
	for {
		old := c.mode.Load()
		next := old &^ uint32(m)
		if on {
			next |= uint32(m)
		}
		if c.mode.CompareAndSwap(old, next) {
			return
		}
	}
}

// InMode reports whether mode m of c is on.
func (c *Client) InMode(m Mode) bool { return c.mode.Load()&uint32(m) != 0 }
