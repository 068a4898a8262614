package clock

import (
	"testing"
	"time"
)

const t0 = int64(1_700_000_000e9)

// ticks drains what a ticker's channel holds now.
func ticks(t Ticker) int {
	n := 0
	for {
		select {
		case <-t.C():
			n++
		default:
			return n
		}
	}
}

func TestFakeTicker(t *testing.T) {
	t.Parallel()
	steps := []struct {
		advance time.Duration
		drain   bool // read the channel after the step
		want    int  // ticks read
		now     int64
	}{
		{50 * time.Millisecond, true, 0, t0 + 50e6},
		{50 * time.Millisecond, true, 1, t0 + 100e6},
		{100 * time.Millisecond, true, 1, t0 + 200e6},
		{350 * time.Millisecond, true, 1, t0 + 550e6}, // three due, the channel holds one: two dropped
		{50 * time.Millisecond, true, 1, t0 + 600e6},
	}
	f := NewFake(t0)
	tk := f.NewTicker(100 * time.Millisecond)
	for i, st := range steps {
		f.Advance(st.advance)
		if got := ticks(tk); got != st.want {
			t.Errorf("step %d: %d ticks, want %d", i, got, st.want)
		}
		if got := f.Now(); got != st.now {
			t.Errorf("step %d: now %d, want %d", i, got, st.now)
		}
	}
	tk.Stop()
	f.Advance(time.Second)
	if got := ticks(tk); got != 0 {
		t.Errorf("a stopped ticker fired %d times", got)
	}
	if f.Waiters() != 0 {
		t.Errorf("%d waiters after Stop", f.Waiters())
	}
}

func TestFakeTickTimes(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	tk := f.NewTicker(time.Second)
	f.Advance(1500 * time.Millisecond)
	if got := (<-tk.C()).UnixNano(); got != t0+1e9 {
		t.Errorf("tick at %d, want the instant it fell due, %d", got, t0+1e9)
	}
}

func TestFakeSetMovesNoTicker(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	tk := f.NewTicker(time.Second)
	f.Set(t0 - 3600e9)
	f.Set(t0 + 3600e9)
	if got := ticks(tk); got != 0 {
		t.Errorf("Set fired %d ticks", got)
	}
	if f.Now() != t0+3600e9 || f.Mono() != 0 {
		t.Errorf("now %d mono %v", f.Now(), f.Mono())
	}
}

func TestFakeSleep(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	woke := make(chan struct{})
	go func() {
		f.Sleep(time.Second)
		close(woke)
	}()
	if !f.WaitForWaiters(1, 5*time.Second) {
		t.Fatal("the sleeper never registered")
	}
	f.Advance(999 * time.Millisecond)
	select {
	case <-woke:
		t.Fatal("woke before its time")
	case <-time.After(10 * time.Millisecond):
	}
	f.Advance(time.Millisecond)
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken once its time came")
	}
}

func TestWaitForTicksTaken(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	tk := f.NewTicker(time.Second)
	defer tk.Stop()
	if !f.WaitForTicksTaken(time.Millisecond) {
		t.Fatal("no tick is due, yet one is waiting")
	}
	f.Advance(time.Second)
	if f.WaitForTicksTaken(10 * time.Millisecond) {
		t.Fatal("reported taken a tick nobody received")
	}
	got := make(chan int64)
	go func() { got <- (<-tk.C()).UnixNano() }()
	if !f.WaitForTicksTaken(5 * time.Second) {
		t.Fatal("the tick was received, yet still reported waiting")
	}
	if at := <-got; at != t0+1e9 {
		t.Errorf("tick at %d, want %d", at, t0+1e9)
	}
}

func TestWaitForWaitersTimesOut(t *testing.T) {
	t.Parallel()
	if NewFake(t0).WaitForWaiters(1, 10*time.Millisecond) {
		t.Fatal("WaitForWaiters reported a waiter that never came")
	}
}

func TestFakeConcurrent(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	done := make(chan struct{})
	for i := 0; i < 4; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for j := 0; j < 100; j++ {
				tk := f.NewTicker(time.Millisecond)
				f.Advance(time.Millisecond)
				tk.Stop()
				_ = f.Now()
			}
		}()
	}
	for i := 0; i < 4; i++ {
		<-done
	}
	if f.Mono() != 400*time.Millisecond {
		t.Errorf("mono %v, want 400ms", f.Mono())
	}
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	c := Real()
	a, m := c.Now(), c.Mono()
	c.Sleep(time.Millisecond)
	if c.Now() <= a || c.Mono() <= m {
		t.Error("the real clock did not move")
	}
	tk := c.NewTicker(time.Millisecond)
	defer tk.Stop()
	select {
	case <-tk.C():
	case <-time.After(5 * time.Second):
		t.Fatal("the real ticker never fired")
	}
}

func TestFakeAfter(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	at := f.After(time.Second)
	f.Advance(999 * time.Millisecond)
	select {
	case <-at:
		t.Fatal("After fired early")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case got := <-at:
		if got.UnixNano() != t0+1e9 {
			t.Errorf("After sent %d, want %d", got.UnixNano(), t0+1e9)
		}
	default:
		t.Fatal("After did not fire when due")
	}
	if f.Waiters() != 0 {
		t.Errorf("%d waiters left", f.Waiters())
	}
}
