package command

import (
	"sync"

	"github.com/limitdb/limitdb/resp"
)

// Replies that wait for replicas (limiter-wait-replicas, a policy's
// wait_replicas): a limiter command's reply leaves only once n replicas
// acknowledged the stream up to its effect. The connection keeps being
// served; its replies from the first that waits on are held, in order, in
// segments, one per batch of commands: at the end of the batch its
// segment waits for the stream's offset then (every write of the batch is
// in it), and the round's Publish asks the replicas for one
// acknowledgement for every segment of the round (REPLCONF GETACK), so a
// pipeline costs one replica round trip, not one per command.
//
// A segment is sent once it and every segment before it are released.
// Past limiter-wait-timeout, the replies that waited are replaced by
// errNotAcked: the effect is on this primary but may be lost by a
// failover, and the client is not told it was admitted.

// errNotAcked is the reply of a limiter command whose effect too few
// replicas acknowledged within limiter-wait-timeout.
const errNotAcked = "NOREPLICAS Not enough good replicas acknowledged the write in time."

// replicaHold is a client's replies held for replicas. Its writer is the
// client's while it exists; segs and the release are guarded by mu, as
// acknowledgements release segments from other goroutines.
type replicaHold struct {
	w    *resp.Writer // c.w while holding: this batch's replies
	open *holdSeg     // this batch's segment, when a reply of it waits
	n    int          // the replicas the open segment waits for

	mu   sync.Mutex
	segs []*holdSeg // registered, in order, not sent yet
}

// holdSeg is the replies of one batch, from the first that waits.
type holdSeg struct {
	data  []byte
	spans [][2]int // the replies that waited, within data
	done  bool     // released
	acked bool     // enough replicas acknowledged (else timed out)
}

// noteReplicaWait holds c's replies from mark, where the reply of a
// command whose effect must reach n replicas starts, when c can hold
// them: a connection's own command, outside MULTI and scripts, with no
// WAIT blocked.
func (c *Client) noteReplicaWait(mark, n int) {
	if c.conn == nil || c.tx != nil || c.calling || c.blk != nil {
		return
	}
	h := c.rh
	if h == nil {
		h = &replicaHold{w: resp.NewWriter(nil)}
		h.w.Proto = c.w.Proto
		c.rh = h
	}
	if c.w != h.w { // the conn's writer: move this reply to the hold
		h.w.Raw(c.w.Bytes()[mark:])
		c.w.Truncate(mark)
		c.w, mark = h.w, 0
	}
	if h.open == nil {
		h.open = &holdSeg{}
	}
	h.open.spans = append(h.open.spans, [2]int{mark, h.w.Buffered()})
	h.n = max(h.n, n)
}

// settleReplicaHold ends c's batch for the held replies: its segment is
// registered to wait for the stream as it is now, or, when nothing of it
// waits, its replies follow the segments still waiting. Once none waits
// and everything pushed has left, c writes its replies directly again.
func (c *Client) settleReplicaHold() {
	h := c.rh
	if h == nil {
		return
	}
	data := append([]byte(nil), h.w.Bytes()...)
	h.w.Reset()
	if seg := h.open; seg != nil {
		seg.data = data
		h.open = nil
		n := h.n
		h.n = 0
		h.mu.Lock()
		h.segs = append(h.segs, seg)
		h.mu.Unlock()
		repl := c.srv.stream
		_, timeout := repl.LimiterWait()
		if repl.WaitAt(repl.Stream().Offset(), n, timeout, func(acked int) { h.release(c, seg, acked >= n) }) {
			h.release(c, seg, true)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if k := len(h.segs); k > 0 {
		h.segs[k-1].data = append(h.segs[k-1].data, data...)
		return
	}
	if len(data) > 0 {
		c.conn.Push(data)
	}
	if c.conn.OutputMemory() == 0 { // what was pushed has left: replies may go directly again
		c.w, c.rh = c.conn.Writer(), nil
	}
}

// release marks seg released and pushes every released segment at the
// front, in order. Any goroutine.
func (h *replicaHold) release(c *Client, seg *holdSeg, acked bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seg.done, seg.acked = true, acked
	var out []byte
	i := 0
	for ; i < len(h.segs) && h.segs[i].done; i++ {
		out = h.segs[i].appendTo(out)
	}
	if i == 0 {
		return
	}
	h.segs = append(h.segs[:0], h.segs[i:]...)
	c.conn.Push(out)
}

// appendTo appends the segment's replies, those that waited replaced by
// errNotAcked when it timed out.
func (s *holdSeg) appendTo(out []byte) []byte {
	if s.acked {
		return append(out, s.data...)
	}
	at := 0
	for _, sp := range s.spans {
		out = append(out, s.data[at:sp[0]]...)
		out = append(out, '-')
		out = append(out, errNotAcked...)
		out = append(out, '\r', '\n')
		at = sp[1]
	}
	return append(out, s.data[at:]...)
}
