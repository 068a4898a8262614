package command

import (
	"bytes"

	"github.com/limitdb/limitdb/engine"
)

// MULTI, EXEC, DISCARD, WATCH and UNWATCH with Redis's semantics: between
// MULTI and EXEC commands are queued (+QUEUED); a command refused while
// queueing (unknown, wrong arity, not allowed in a transaction, refused by
// a gate) makes EXEC answer EXECABORT; errors raised while running are
// returned in place in EXEC's array and do not stop the others.
//
// Atomicity: EXEC locks the shards of every key the queued (and watched)
// commands name, from the command table's key positions, in ascending
// order, and runs the queue while holding them (engine.Exclusive), so no
// other client reads or writes those keys in between. A queued command
// without key positions that reaches the keyspace (DBSIZE, KEYS, SCAN,
// FLUSHALL, INFO, ...) makes EXEC lock every shard instead. Nothing is
// rolled back: as in Redis, a command that fails leaves the others' effects.
//
// WATCH compares values rather than versions: EXEC aborts (null reply)
// when a watched key's state differs from what it was at WATCH time,
// including a key that appeared, disappeared or expired; a key changed and
// changed back to the same state is not seen as modified.

func registerMulti(t *Table) {
	tx := func(name string, arity int, flags Flag, first, last, step int, summary, syntax string, h func(*Client, [][]byte)) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags | FlagLoading | FlagStale, FirstKey: first, LastKey: last, Step: step,
			Group: "transactions", Since: "0.1.0", Complexity: "O(1)", Summary: summary, Syntax: syntax, Handler: h}
	}
	t.Register(
		tx("multi", 1, FlagFast, 0, 0, 0, "Starts a transaction: later commands are queued until EXEC.", "", cmdMulti),
		tx("exec", 1, 0, 0, 0, 0, "Runs the queued commands atomically and returns their replies in an array.", "", cmdExec),
		tx("discard", 1, FlagFast, 0, 0, 0, "Drops the queued commands and ends the transaction.", "", cmdDiscard),
		tx("watch", -2, FlagFast, 1, -1, 1, "Makes the next EXEC abort if any of the keys changes before it.", "key [key ...]", cmdWatch),
		tx("unwatch", 1, FlagFast, 0, 0, 0, "Forgets the watched keys.", "", cmdUnwatch),
	)
	// Last of the gates, so that a command refused by authentication or a
	// memory limit at queue time aborts the transaction, as in Redis.
	t.SetGate(GateMulti, multiGate)
}

type multiState struct {
	active  bool // between MULTI and EXEC or DISCARD
	dirty   bool // a command was refused while queueing
	queue   []queued
	watched []watchedKey
}

type queued struct {
	cmd  *Command
	args [][]byte
}

type watchedKey struct {
	key   []byte
	state []byte // the entry's serialised form at WATCH time; nil when absent
}

// queueError is called for every error reply: while queueing, it dooms the
// transaction.
func (m *multiState) queueError() {
	if m.active {
		m.dirty = true
	}
}

// errKeep answers an error that Redis does not count against the
// transaction (nested MULTI, WATCH inside MULTI).
func (c *Client) errKeep(msg string) {
	dirty := c.multi.dirty
	c.Err(msg)
	c.multi.dirty = dirty
}

func multiGate(c *Client, cmd *Command, args [][]byte) bool {
	m := c.multi
	if m == nil || !m.active {
		return true
	}
	switch cmd.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	if cmd.Flags&FlagNoMulti != 0 {
		c.Err("ERR Command not allowed inside a transaction")
		return false
	}
	// The arguments live in the connection's read buffer: keep a copy.
	size := 0
	for _, a := range args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	cp := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		cp[i] = buf[len(buf)-len(a):]
	}
	m.queue = append(m.queue, queued{cmd, cp})
	c.multiShown.Store(int32(len(m.queue)) + 1)
	c.Simple("QUEUED")
	return false
}

// Queued calls fn on each command queued in c's transaction, in order,
// until fn returns false; it calls none outside MULTI or when a refused
// command has already failed the transaction (EXEC discards it). The
// cluster gate checks EXEC's commands as one request with it.
func (c *Client) Queued(fn func(cmd *Command, args [][]byte) bool) {
	m := c.multi
	if m == nil || !m.active || m.dirty {
		return
	}
	for i := range m.queue {
		if !fn(m.queue[i].cmd, m.queue[i].args) {
			return
		}
	}
}

// DiscardMulti ends c's transaction, dropping what it queued and its
// WATCHes, as EXEC does when a gate refuses it.
func (c *Client) DiscardMulti() { c.endMulti() }

// endMulti ends the connection's MULTI, dropping its queue, and forgets
// its WATCHed keys.
func (c *Client) endMulti() {
	if c.multi != nil {
		*c.multi = multiState{}
	}
	c.multiShown.Store(0)
}

func (c *Client) multiState() *multiState {
	if c.multi == nil {
		c.multi = &multiState{}
	}
	return c.multi
}

func cmdMulti(c *Client, _ [][]byte) {
	m := c.multiState()
	if m.active {
		c.errKeep("ERR MULTI calls can not be nested")
		return
	}
	m.active = true
	c.multiShown.Store(1)
	c.OK()
}

func cmdDiscard(c *Client, _ [][]byte) {
	m := c.multi
	if m == nil || !m.active {
		c.Err("ERR DISCARD without MULTI")
		return
	}
	c.endMulti()
	c.OK()
}

func cmdWatch(c *Client, args [][]byte) {
	m := c.multiState()
	if m.active {
		c.errKeep("ERR WATCH inside MULTI is not allowed")
		return
	}
	now := c.Now()
	watch := func() {
		for _, k := range args[1:] {
			key := append([]byte(nil), k...)
			m.watched = append(m.watched, watchedKey{key, entryState(c.Engine(), key, now)})
		}
	}
	// WATCH is served while a script is busy, and a key's state is read
	// under its shard's lock, which the script may hold until it ends:
	// then the connections that share this one's event loop are served
	// meanwhile.
	if t := c.srv.table; t.busy != nil && t.busy.Load() != 0 {
		c.RunLong(watch)
	} else {
		watch()
	}
	c.OK()
}

func cmdUnwatch(c *Client, _ [][]byte) {
	if c.multi != nil {
		c.multi.watched = nil
	}
	c.OK()
}

// entryState is key's serialised entry at now, nil when absent. State that
// cannot be serialised is a marker no other state equals: an empty,
// non-nil slice of its own, which sameState never takes for equal.
func entryState(eng *engine.Engine, key []byte, now int64) []byte {
	ent, ok := eng.Get(key, now)
	if !ok {
		return nil
	}
	b, err := ent.AppendBinary(nil)
	if err != nil {
		return []byte{}
	}
	return b
}

// sameState reports whether a watched key's state is unchanged.
func sameState(now, then []byte) bool {
	if (now != nil && len(now) == 0) || (then != nil && len(then) == 0) {
		return false // state that cannot be serialised: never the same
	}
	return bytes.Equal(now, then)
}

func cmdExec(c *Client, _ [][]byte) {
	m := c.multi
	if m == nil || !m.active {
		c.Err("ERR EXEC without MULTI")
		return
	}
	queue, watched, dirty := m.queue, m.watched, m.dirty
	c.endMulti()
	if dirty {
		c.Err("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	keys, all := transactionKeys(queue, watched)
	self := c.lastCmd.Load()
	s := c.srv
	s.env.Engine.Exclusive(keys, all, func(tx *engine.Engine) {
		c.tx = tx // the queued commands reach the keyspace through the transaction
		defer func() { c.tx = nil }()
		now := c.Now()
		for _, w := range watched {
			if !sameState(entryState(tx, w.key, now), w.state) {
				c.NullArray()
				return
			}
		}
		c.Array(len(queue))
		for _, q := range queue {
			s.call(c, q.cmd, q.args)
		}
	})
	c.lastCmd.Store(self)
	c.bt.last = self
	c.failed = false // errors inside the transaction were EXEC's replies, not its failure
}

// transactionKeys lists the keys EXEC must hold, from the command table's
// key positions; all is true when a queued command reaches the keyspace
// without naming its keys.
func transactionKeys(queue []queued, watched []watchedKey) (keys [][]byte, all bool) {
	for _, w := range watched {
		keys = append(keys, w.key)
	}
	for _, q := range queue {
		k, a := commandKeys(q.cmd, q.args)
		keys, all = append(keys, k...), all || a
	}
	return keys, all
}

// keyspaceFree reports whether a command with no keys never reaches the
// keyspace: a connection, transaction or publish/subscribe command, or
// TIME. A script may PUBLISH as in Redis (bottleneck's scripts do).
func keyspaceFree(cmd *Command) bool {
	return cmd.Group == "connection" || cmd.Group == "transactions" || cmd.Group == "pubsub" || cmd.Name == "time"
}

// commandKeys lists the keys of one command, from the command table's key
// positions; all is true when it reaches the keyspace without naming its
// keys (KEYS, FLUSHALL, EVAL).
func commandKeys(cmd *Command, args [][]byte) (keys [][]byte, all bool) {
	return appendCommandKeys(nil, cmd, args)
}

// appendCommandKeys is commandKeys appending to keys.
func appendCommandKeys(keys [][]byte, cmd *Command, args [][]byte) ([][]byte, bool) {
	if cmd.Keys != nil {
		return append(keys, cmd.Keys(args)...), false
	}
	if cmd.FirstKey <= 0 {
		return keys, !keyspaceFree(cmd)
	}
	last, step := cmd.LastKey, cmd.Step
	if last < 0 {
		last += len(args)
	}
	if step < 1 {
		step = 1
	}
	for i := cmd.FirstKey; i <= last && i < len(args); i += step {
		keys = append(keys, args[i])
	}
	return keys, false
}

// call runs one queued command with the accounting handle gives a command
// read from the connection (batch.go), then hands the batch back to EXEC.
func (s *Server) call(c *Client, cmd *Command, args [][]byte) {
	outer := c.bt.run
	c.enter(cmd)
	c.failed = false
	s.run(c, cmd, args)
	c.leave(cmd, args)
	c.publish()
	c.bt.run = outer
}
