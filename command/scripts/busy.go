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
// in Redis: other clients get -BUSY, except for the commands that end it
// (SCRIPT KILL, FUNCTION KILL, SHUTDOWN) and a few connection commands,
// until it ends or SCRIPT KILL stops it (only a script that wrote
// nothing). A watchdog, ten times a second of the engine's clock, marks
// the runs past the threshold; the modes gate costs one atomic load while
// none is (command.Table.SetBusyCheck).

// scriptRun is one script or function running.
type scriptRun struct {
	h     scripting.Handle
	c     *command.Client
	start time.Duration // on the watchdog's clock
	wrote atomic.Bool
	busy  bool   // guarded by busyScripts.mu
	heap  uint64 // the heap's size when the watchdog first saw the run; guarded by busyScripts.mu
}

// busyScripts are the runs under way.
type busyScripts struct {
	clk   clock.Clock
	mu    sync.Mutex
	runs  map[*scriptRun]struct{}
	count atomic.Int32 // runs past the threshold: the server is busy while it is above zero

	tickHeap uint64 // the heap at the watchdog's last tick (watchMemory's goroutine only)
}

// start registers r, the caller's own (reused from run to run), as c's
// run from now.
func (b *busyScripts) start(r *scriptRun, c *command.Client) *scriptRun {
	r.c, r.start, r.busy, r.heap = c, b.clk.Mono(), false, 0
	r.wrote.Store(false)
	r.h.Reset()
	b.mu.Lock()
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

// kill stops the busy runs (SCRIPT KILL), unless one of them wrote.
func (b *busyScripts) kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var busy []*scriptRun
	for r := range b.runs {
		if r.busy {
			busy = append(busy, r)
		}
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
		r.h.Kill()
	}
	return nil
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
// script's own and to all but the commands that end a busy script.
func busyCheck(c *command.Client, cmd *command.Command, _ [][]byte) bool {
	if c.Calling() {
		return true
	}
	switch cmd.Name {
	case "script|kill", "function|kill", "shutdown", "auth", "hello", "replconf", "psync", "sync":
		return true
	}
	c.Err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	return false
}
