package scripts

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// TestWatchdogStopsAtItsFirstTick: a run that has grown the heap past
// script-memory-limit with many small values is stopped by the first
// tick of the watchdog that sees it, measured from the tick before it
// began. Each tick is a call of watchMemory, as Watch makes one every
// 100 ms of the engine's clock.
func TestWatchdogStopsAtItsFirstTick(t *testing.T) {
	srv, f := newServer(clock.NewFake(0))
	defer srv.Close()
	const limit = 8 << 20
	if err := srv.SetConfig([2]string{"script-memory-limit", "8mb"}); err != nil {
		t.Fatal(err)
	}
	logf := func(string, ...any) {}
	f.busy.watchMemory(limit, logf) // the tick before the run
	runtime.GC()
	start := heapBytes()
	done := make(chan string, 1)
	go func() {
		c := srv.NewLocalClient()
		done <- string(c.DoString("EVAL", "local t = {} for i = 1, 3e5 do t[i] = {i} end while true do end", "0"))
	}()
	// Wait for the run to hold twice the limit (the table it fills).
	deadline := time.Now().Add(30 * time.Second)
	for heapBytes() < start+2*limit {
		if time.Now().After(deadline) {
			f.busy.killAll()
			t.Fatalf("the run grew the heap by %d bytes only", heapBytes()-start)
		}
		time.Sleep(time.Millisecond)
	}
	f.busy.watchMemory(limit, logf) // the first tick that sees it
	select {
	case got := <-done:
		if !strings.HasPrefix(got, "-ERR Script used more memory than script-memory-limit allows script: ") {
			t.Fatalf("reply %q", got)
		}
	case <-time.After(30 * time.Second): // a failure guard: the run loops forever
		f.busy.killAll()
		<-done
		t.Fatal("the first tick over the limit did not stop the run")
	}
}
