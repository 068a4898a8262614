package command

import "sync/atomic"

// Keys made ready for blocked clients, as Redis's signalKeyAsReady and
// handleClientsBlockedOnKeys: while a family has clients blocked on keys
// (BLPOP), every write command notes the keys it names once it has run,
// and once the connection's command is done with (EXEC's queue or a
// script whole, its shards released) the family is handed them, to serve
// the clients blocked on them. With no client blocked, a write pays one
// atomic load.

// OnKeysReady sets what serves the clients blocked on keys that a
// command wrote, and returns the count the family keeps of clients that
// are blocked or about to be: it must be raised before a client's last
// look at its keys, so that no write after that look goes unnoticed, and
// lowered once the client is no longer blocked. Set once.
func (t *Table) OnKeysReady(fn func(keys [][]byte)) *atomic.Int64 {
	if t.onReady != nil {
		panic("command: keys-ready hook set twice")
	}
	t.onReady = fn
	return &t.blockers
}

// serveReady hands the keys c's command wrote to the family that serves
// blocked clients, once c is outside any transaction.
func (c *Client) serveReady() {
	if len(c.ready) == 0 || c.tx != nil || c.calling {
		return
	}
	keys := c.ready
	c.ready = nil
	if fn := c.srv.table.onReady; fn != nil {
		fn(keys)
	}
}
