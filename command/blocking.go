package command

import (
	"sync"

	"github.com/limitdb/limitdb/resp"
)

// blocked is a client whose command answers later, from another goroutine
// (WAIT). The connection keeps being served: the replies of the commands
// it runs meanwhile are held, and pushed after the blocked command's reply,
// so the client reads every reply in the order it sent the commands.
type blocked struct {
	hold *resp.Writer // the client's writer while blocked

	mu   sync.Mutex
	done bool   // the blocked command has answered
	held []byte // replies written before it answered, not pushed yet
}

// block redirects c's replies until the blocked command answers (finish)
// and the connection's goroutine has caught up (settleBlocked).
func (c *Client) block() *blocked {
	b := &blocked{hold: resp.NewWriter(nil)}
	b.hold.Proto = c.w.Proto
	c.blk, c.w = b, b.hold
	return b
}

// unblock undoes block when the command can answer at once.
func (c *Client) unblock() {
	c.w.Reset()
	c.blk, c.w = nil, c.conn.Writer()
}

// finish sends the blocked command's reply, then what was held. Safe from
// any goroutine.
func (b *blocked) finish(c *Client, reply []byte) {
	b.mu.Lock()
	b.done = true
	out := append(reply, b.held...)
	b.held = nil
	c.conn.Push(out)
	b.mu.Unlock()
}

// settleBlocked moves the replies written while blocked to the held ones,
// or pushes them once the blocked command has answered, and then gives c
// its writer back. The connection's goroutine calls it after each batch.
func (c *Client) settleBlocked() {
	b := c.blk
	if b == nil {
		return
	}
	data := b.hold.Bytes()
	b.mu.Lock()
	done := b.done
	if done {
		if len(data) > 0 {
			c.conn.Push(append([]byte(nil), data...))
		}
	} else {
		b.held = append(b.held, data...)
	}
	b.mu.Unlock()
	b.hold.Reset()
	if done {
		c.blk, c.w = nil, c.conn.Writer()
	}
}

// Block makes c's current command answer later, from another goroutine,
// as WAIT does: the commands c runs meanwhile are served, their replies
// held and sent after the blocked command's. finish sends that reply, a
// whole RESP value, and may be called once from any goroutine. Until then
// the command may still answer at once instead: Unblock, then write the
// reply as usual. ok is false, and nothing is blocked, when c cannot
// wait: inside EXEC, with no connection (a LocalClient), or while its
// replies wait for replicas (replicawait.go); the command answers at once.
func (c *Client) Block() (finish func(reply []byte), ok bool) {
	if c.tx != nil || c.conn == nil || c.rh != nil { // replies held for replicas keep their own order
		return nil, false
	}
	b := c.block()
	return func(reply []byte) { b.finish(c, reply) }, true
}

// Unblock undoes Block when the blocked command answers at once after
// all, before finish is called: c writes its replies as usual again.
func (c *Client) Unblock() { c.unblock() }
