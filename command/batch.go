package command

import (
	"math/bits"
	"time"
)

// A batch is what one read from a connection delivered: a pipeline, or part
// of one. Per-command work that does not need to be per command is done
// once per batch here (go test -bench Pipeline ./node/ shows each):
//
//   - The clocks. The engine's clock is read once per batch and every
//     command of the batch gets that instant from c.Now(), so commands of
//     one pipeline are consistent with each other. A command that is not
//     FlagFast may take a while, so the clock is read again after it,
//     unless it ran in constant time after all (ranFast: a script run by
//     its native twin).
//     Stats timing reads the monotonic clock once per command: each
//     command's duration runs from the end of the previous one.
//   - The shared counters. A command's calls, time, failures and latency
//     bucket are summed per run of identical commands in the client and
//     published to its Command's atomics when the command changes or the
//     batch ends, so that connections on different cores do not write the
//     same cache lines per command; INFO, CLIENT LIST and metrics lag by at
//     most the batch being answered.
type batch struct {
	open  bool
	now   int64         // engine clock for the batch (valid when haveNow)
	wall  int64         // wall clock at the batch start, Unix ns
	mark  time.Duration // the clock's Mono when the previous command ended
	total int64         // commands read, for total_commands_processed
	ran   int64         // commands that passed the checks, for CLIENT LIST cmd count

	haveNow bool
	ranFast bool     // the running command, though not FlagFast, took constant time
	last    *Command // what c.lastCmd holds, to skip storing the same pointer
	named   *Command // the last command looked up by name, tried first

	// the current run of one command, not yet published
	run    *Command
	calls  int64
	ns     int64
	failed int64
	// limiter decisions of the run (CountLimit, info_limits.go)
	admitted, denied int64
	hist             [latencyBuckets]int32
	used             uint32 // bit i set: hist[i] > 0
}

// begin opens the batch at its first command.
func (c *Client) begin() {
	clk := c.srv.env.Clock
	c.bt.open = true
	c.bt.haveNow = false
	c.bt.wall = clk.Now()
	c.bt.mark = clk.Mono()
	c.lastActive.Store(c.bt.wall)
}

// Now is the instant the current command runs at, from the engine clock:
// read once per batch (see batch), so handlers may call it freely.
func (c *Client) Now() int64 {
	if !c.bt.haveNow {
		c.bt.now = c.Engine().Now()
		c.bt.haveNow = true
	}
	return c.bt.now
}

// enter records that cmd is about to run: it publishes the previous run if
// cmd differs, so INFO and CONFIG RESETSTAT see every earlier command.
func (c *Client) enter(cmd *Command) {
	c.bt.ran++
	c.bt.ranFast = false
	if c.bt.run != cmd {
		c.publish()
		c.bt.run = cmd
	}
	if c.bt.last != cmd {
		c.lastCmd.Store(cmd)
		c.bt.last = cmd
	}
}

// leave accounts for cmd once its handler has returned.
func (c *Client) leave(cmd *Command, args [][]byte) {
	m := c.srv.env.Clock.Mono()
	d := m - c.bt.mark
	c.bt.mark = m
	c.bt.calls++
	c.bt.ns += int64(d)
	if c.failed {
		c.bt.failed++
	}
	i := bits.Len64(uint64(d.Microseconds()))
	if i >= latencyBuckets {
		i = latencyBuckets - 1
	}
	c.bt.hist[i]++
	c.bt.used |= 1 << i
	c.srv.logIfSlow(c, cmd, args, d)
	if cmd.Flags&FlagFast == 0 && !c.bt.ranFast {
		c.bt.haveNow = false
	}
	c.bt.ranFast = false
}

// publish adds the current run to its command's shared counters.
func (c *Client) publish() {
	cmd := c.bt.run
	if cmd == nil || (c.bt.calls == 0 && c.bt.admitted == 0 && c.bt.denied == 0) {
		return
	}
	st := &cmd.stats
	if c.bt.admitted > 0 {
		st.admitted.Add(c.bt.admitted)
	}
	if c.bt.denied > 0 {
		st.denied.Add(c.bt.denied)
	}
	c.bt.admitted, c.bt.denied = 0, 0
	st.calls.Add(c.bt.calls)
	st.usec.Add(c.bt.ns / 1000)
	if c.bt.failed > 0 {
		st.failed.Add(c.bt.failed)
	}
	for u := c.bt.used; u != 0; u &= u - 1 {
		i := bits.TrailingZeros32(u)
		st.lat[i].Add(int64(c.bt.hist[i]))
		c.bt.hist[i] = 0
	}
	c.bt.calls, c.bt.ns, c.bt.failed, c.bt.used = 0, 0, 0, 0
}

// endBatch publishes what the batch counted; the connection loop calls it
// before flushing the replies.
func (c *Client) endBatch() {
	c.settleBlocked()
	c.settleReplicaHold()

	if !c.bt.open {
		return
	}
	c.publish()
	c.bt.run = nil
	c.srv.clients.commands.Add(c.bt.total)
	c.cmdCount.Add(c.bt.ran)
	c.bt.total, c.bt.ran = 0, 0
	c.bt.open = false
}
