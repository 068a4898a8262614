package scripts

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/scripting"
)

// A script that runs past busy-reply-threshold makes the server busy, as
// in Redis: other clients get -BUSY, except for the commands Redis allows
// while busy (busyCheck), until it ends or SCRIPT KILL stops it (only a
// script that wrote nothing). A watchdog, ten times a second of the
// engine's clock, marks the runs past the threshold; the modes gate costs
// one atomic load while none is (command.Table.SetBusyCheck).
//
// A script runs on its connection's goroutine, which on an event loop is
// the loop's: it runs inside Client.RunLong, so that the loop's other
// connections are served from another goroutine while it runs (the
// transport's hand-over, server/poll_linux.go), and every connection can
// send SCRIPT KILL. SCRIPT KILL sent before the script is busy waits for
// it to be (Redis reads it only then) and kills it.

// scriptRun is one script or function running.
type scriptRun struct {
	h        scripting.Handle
	c        *command.Client
	start    time.Duration // on the watchdog's clock
	wrote    atomic.Bool
	function bool   // FCALL's, not EVAL's
	seq      uint64 // the order it started in; guarded by busyScripts.mu
	busy     bool   // guarded by busyScripts.mu
	heap     uint64 // the heap's size when the watchdog first saw the run; guarded by busyScripts.mu
}

// busyScripts are the runs under way.
type busyScripts struct {
	clk     clock.Clock
	mu      sync.Mutex
	changed sync.Cond // on mu: a run ended or became busy (kill waits for it)
	runs    map[*scriptRun]struct{}
	started uint64       // runs started so far
	count   atomic.Int32 // runs past the threshold: the server is busy while it is above zero

	tickHeap uint64 // the heap at the watchdog's last tick (watchMemory's goroutine only)
}

func newBusyScripts() *busyScripts {
	b := &busyScripts{runs: map[*scriptRun]struct{}{}}
	b.changed.L = &b.mu
	return b
}

// start registers r, the caller's own (reused from run to run), as c's
// run from now.
func (b *busyScripts) start(r *scriptRun, c *command.Client, function bool) *scriptRun {
	r.c, r.start, r.busy, r.heap, r.function = c, b.clk.Mono(), false, 0, function
	r.wrote.Store(false)
	r.h.Reset()
	b.mu.Lock()
	b.started++
	r.seq = b.started
	b.runs[r] = struct{}{}
	b.mu.Unlock()
	return r
}

func (b *busyScripts) end(r *scriptRun) {
	b.mu.Lock()
	delete(b.runs, r)
	if r.busy {
		b.count.Add(-1)
	}
	b.mu.Unlock()
	b.changed.Broadcast()
}

// watch marks the runs past threshold as busy.
func (b *busyScripts) watch(threshold time.Duration, logf func(string, ...any)) {
	now := b.clk.Mono()
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.runs {
		if !r.busy && threshold > 0 && now-r.start >= threshold {
			r.busy = true
			b.count.Add(1)
			b.changed.Broadcast()
			logf("Slow script detected: still in execution after %d milliseconds. You can try killing the script using the SCRIPT KILL command.", (now-r.start)/time.Millisecond)
		}
	}
}

// watchMemory stops the runs under way while the heap has grown by more
// than limit (script-memory-limit; 0: none) since just before the
// watchdog first saw them, once a collection has shown that the growth is
// not garbage: a run is measured from the heap of the tick before it (or
// the heap now, if smaller), so the first tick that sees it over the limit
// stops it, within the watchdog's period of its passing the limit. A
// script that makes a large string or table is stopped by the interpreter
// before it allocates (scripting/memory.go); this catches growth by many
// small values. The heap is the server's: what other clients add while a
// long script runs counts too.
func (b *busyScripts) watchMemory(limit uint64, logf func(string, ...any)) {
	if limit == 0 {
		b.tickHeap = 0
		return
	}
	before := b.tickHeap
	// over counts the runs over the limit, and stops them once collected.
	over := func(collected bool) (n int) {
		heap := heapBytes()
		if !collected {
			b.tickHeap = heap
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		for r := range b.runs {
			if r.heap == 0 {
				r.heap = heap
				if before != 0 {
					r.heap = min(before, heap)
				}
			}
			if heap > r.heap+limit {
				n++
				if collected {
					logf("Script stopped: the heap grew by more than script-memory-limit (%d bytes) while it ran.", limit)
					r.h.StopOverMemory()
				}
			}
		}
		return n
	}
	if over(false) > 0 {
		runtime.GC()
		over(true)
	}
}

// heapBytes is the size of the heap's objects, live or not yet collected.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// The -BUSY replies, as Redis words them for a script (EVAL) and for a
// function (FCALL).
const (
	errBusyScript   = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)

// kill stops the busy runs, unless one of them wrote: SCRIPT KILL (the
// runs of EVAL) or FUNCTION KILL (of FCALL). Runs under way that are not
// busy yet are waited for, until one is busy or all have ended: Redis
// reads SCRIPT KILL only once its script is busy, and an early one is
// answered then. With no threshold (0: never busy), the runs under way
// are killed at once.
func (b *busyScripts) kill(function bool, threshold time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	upTo := b.started // the runs under way now, not those started while this waits
	killable := func() (busy []*scriptRun, waiting bool) {
		for r := range b.runs {
			switch {
			case r.busy || threshold <= 0:
				busy = append(busy, r)
			case r.seq <= upTo:
				waiting = true
			}
		}
		return busy, waiting
	}
	busy, waiting := killable()
	for len(busy) == 0 && waiting {
		b.changed.Wait()
		busy, waiting = killable()
	}
	if len(busy) == 0 {
		return command.WireError("NOTBUSY No scripts in execution right now.")
	}
	for _, r := range busy {
		if r.wrote.Load() {
			return command.WireError("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
		}
	}
	for _, r := range busy {
		switch {
		case r.function && !function:
			return command.WireError(errBusyFunction)
		case !r.function && function:
			return command.WireError(errBusyScript)
		}
	}
	for _, r := range busy {
		r.h.Kill()
	}
	return nil
}

// busyReply is the -BUSY reply while runs are busy: a function's when
// every busy run is a function's, as Redis words it.
func (b *busyScripts) busyReply() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.runs {
		if r.busy && !r.function {
			return errBusyScript
		}
	}
	return errBusyFunction
}

// killAll stops every run, written or not: the server is closing.
func (b *busyScripts) killAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.runs {
		r.h.Kill()
	}
}

// Watch runs the busy-script watchdog on the engine's clock until the
// command layer closes: it marks the runs past busy-reply-threshold busy
// and stops those over script-memory-limit.
func (f *Family) Watch() {
	t := f.busy.clk.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-f.env.Done:
			return
		case <-t.C():
			cfg := f.env.Config()
			f.busy.watch(time.Duration(cfg.BusyReplyThreshold)*time.Millisecond, f.env.Logger.Printf)
			f.busy.watchMemory(uint64(max(cfg.ScriptMemoryLimit, 0)), f.env.Logger.Printf)
		}
	}
}

// busyCheck answers -BUSY while a script is busy, to every client but the
// script's own, for every command but those Redis 7 flags allow-busy (the
// ones that end a busy script, SHUTDOWN with NOSAVE only, the
// connection's identity, and MULTI,
// DISCARD, WATCH and UNWATCH, so that a transaction pipelined across the
// threshold is refused whole) and the replication handshake. A command
// refused inside MULTI fails the transaction (EXECABORT at EXEC); EXEC
// itself is refused with the transaction discarded, as Redis does.
func (f *Family) busyCheck(c *command.Client, cmd *command.Command, args [][]byte) bool {
	if c.Calling() {
		return true
	}
	switch cmd.Name {
	case "script|kill", "function|kill", "auth", "hello", "quit", "reset",
		"multi", "discard", "watch", "unwatch", "replconf", "psync", "sync":
		return true
	case "shutdown":
		// Only SHUTDOWN NOSAVE: a snapshot would hold what the script has
		// written so far.
		for _, a := range args[1:] {
			if command.EqualFold(a, "nosave") {
				return true
			}
		}
	}
	msg := f.busy.busyReply()
	if cmd.Name == "exec" {
		c.DiscardMulti()
		c.Err("EXECABORT Transaction discarded because of: " + msg)
		return false
	}
	c.Err(msg)
	return false
}
