package command

import (
	"sync/atomic"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
)

// What a family needs to run commands of its own on behalf of a client
// from inside the command the client is running (a script's redis.call),
// to hold several shards for a whole run (a script's transaction), and to
// make the server busy (a script past busy-reply-threshold): the entry
// points the scripts family is built on.

// Resolve is the command args name: the subcommand args[1] names when the
// command has one by that name, else the command itself; nil when args[0]
// names no command. Unlike a connection's dispatch, an unknown
// subcommand resolves to its container, which Runnable then refuses
// unless the container runs alone.
func (t *Table) Resolve(args [][]byte) *Command {
	cmd := t.Lookup(args[0])
	if cmd != nil && len(cmd.Subs) > 0 && len(args) >= 2 {
		if sub := cmd.sub(args[1]); sub != nil {
			cmd = sub
		}
	}
	return cmd
}

// Runnable reports whether cmd runs with n arguments (its name included):
// the count fits its arity and it has a handler.
func (cmd *Command) Runnable(n int) bool { return cmd.arityOK(n) && cmd.Handler != nil }

// Peeks reports whether args only peek at a write command's state (a
// limiter's cost 0), which writes nothing: a read-only replica and a
// server refusing writes still answer it.
func (cmd *Command) Peeks(args [][]byte) bool { return isPeek(cmd, args) }

// AppendKeys appends to keys the keyspace keys cmd touches with args, from
// the table's key positions; all is true when it reaches the keyspace
// without naming its keys (KEYS, FLUSHALL), so that a transaction would
// have to hold every shard.
func (cmd *Command) AppendKeys(keys, args [][]byte) (_ [][]byte, all bool) {
	return appendCommandKeys(keys, cmd, args)
}

// Writer is where c's current command writes its reply. A family that
// writes a whole reply itself (a script's) writes here, and says whether
// it was an error with SetFailed.
func (c *Client) Writer() *resp.Writer { return c.w }

// SetFailed records whether c's current command failed, for statistics
// and the slow log, when its reply was written to Writer rather than
// through Err.
func (c *Client) SetFailed(failed bool) { c.failed = failed }

// Failed reports whether c's current command has answered with an
// error so far.
func (c *Client) Failed() bool { return c.failed }

// AfterRun makes fn run once c's current command is done with: after its
// handler, or at once when a later gate refuses or queues it (MULTI). One
// fn at a time: a later call replaces it. The cluster gate ends its hold
// on a migrating slot with it, so that no refused command keeps a slot
// from moving.
func (c *Client) AfterRun(fn func(c *Client)) { c.afterRun = fn }

// KeepInstant says that c's current command, though not FlagFast, ran in
// constant time: the commands after it in the batch keep the batch's
// instant (Now), as after a fast command.
func (c *Client) KeepInstant() { c.bt.ranFast = true }

// Exclusive runs fn inside c's transaction: the one c already runs in
// (EXEC running a queued script) or else a new one holding the shards of
// keys. While fn runs, c.Engine() is tx, and the commands c Calls run
// inside it; its writes reach replicas and the append-only file as one
// unit when it ends.
func (c *Client) Exclusive(keys [][]byte, fn func(tx *engine.Engine)) {
	if c.tx != nil {
		fn(c.tx)
		return
	}
	c.srv.env.Engine.Exclusive(keys, false, func(tx *engine.Engine) {
		c.tx = tx
		defer func() { c.tx = nil }()
		fn(tx)
	})
}

// Admit runs the gates, in their order, for cmd as a command of c's called
// from inside the command c is running; a refusal is written to w, not to
// c's connection, and Admit returns false. Such a call is never
// redirected to another cluster node (its keys are the running command's,
// already routed) and passes a busy check (Calling).
func (c *Client) Admit(w *resp.Writer, cmd *Command, args [][]byte) bool {
	t := c.srv.table
	if t.nGates == 0 {
		return true
	}
	outer, calling := c.w, c.calling
	c.w, c.calling = w, true
	ok := t.admit(c, cmd, args)
	c.w, c.calling = outer, calling
	return ok
}

// Call runs cmd, admitted, as a command of c's called from inside the
// command c is running, inside c's transaction when it runs in one: with
// the statistics, slow log and MONITOR feed of a command of its own, its
// reply written to w. c.Engine() is unchanged; the calling command's
// accounting resumes when it returns.
func (c *Client) Call(w *resp.Writer, cmd *Command, args [][]byte) {
	outer, calling := c.w, c.calling
	c.w, c.calling = w, true
	c.srv.call(c, cmd, args)
	c.w, c.calling = outer, calling
}

// Calling reports whether c's command is being admitted or run from inside
// another command of c's (Admit, Call) rather than read from its
// connection.
func (c *Client) Calling() bool { return c.calling }

// WritesUnchecked reports whether a write of c's would pass every gate
// that can refuse one: the server is no read-only replica and refuses no
// writes (MISCONF, NOREPLICAS), c's user may run every command, and the keyspace is
// within maxmemory. A family that writes to the keyspace without running
// commands (a script's native twin) does so only then, and otherwise runs
// commands, which the gates answer.
func (c *Client) WritesUnchecked() bool {
	s := c.srv
	if s.ReadOnly() || s.table.refusingWrites() || (s.table.noReplicas != nil && s.table.noReplicas.Load()) {
		return false
	}
	if !unrestricted(s.guard.acl.Load(), c) {
		return false
	}
	max, limited := s.memoryLimit()
	return !limited || s.env.Engine.UsedBytes() <= max
}

// SetBusyCheck makes the server busy while *busy is above zero: then check
// runs before every command of every client, first in the modes gate
// (GateModes), and may refuse it. The family that owns the count (the
// scripts', for a script past busy-reply-threshold) sets it once, at
// registration; while the count is zero the gate does not call it.
func (t *Table) SetBusyCheck(busy *atomic.Int32, check GateFunc) {
	if t.busy != nil {
		panic("command: busy check set twice")
	}
	t.busy, t.busyCheck = busy, check
}
