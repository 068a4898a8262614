package command

// RunLong runs fn, a part of the current command that may run long (a
// script, a wait for a script to become killable, a walk of the whole
// keyspace), telling the transport so: an event loop then serves the
// other connections it shares with c from another goroutine once fn has
// run for a moment, instead of holding them until fn returns. c's own
// replies keep their order. Commands that always finish quickly must not
// call it: it is for the few that may not, and costs them two calls.
func (c *Client) RunLong(fn func()) {
	if c.conn == nil || c.calling {
		fn()
		return
	}
	c.conn.BeginLong()
	defer c.conn.EndLong()
	fn()
}
