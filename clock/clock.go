// Package clock is limitdb's one source of time. Every component that
// reads the time, waits or ticks takes the Clock it is given: the real
// one in production, a Fake in tests, which tests step by hand and which
// fires tickers and wakes sleepers as it is stepped, so background loops
// are tested without sleeping.
//
// Time is integer nanoseconds of Unix wall-clock time, as the keyspace
// keeps it; Mono measures durations. The package imports nothing of the
// project.
package clock

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the time and waits.
type Clock interface {
	// Now is the wall-clock time, Unix nanoseconds.
	Now() int64
	// Mono is a monotonic reading, for measuring durations: it never goes
	// backwards, whatever the wall clock does.
	Mono() time.Duration
	// NewTicker sends the time on its channel every d (d > 0), dropping
	// ticks a slow receiver misses, as time.Ticker does.
	NewTicker(d time.Duration) Ticker
	// Sleep waits for d.
	Sleep(d time.Duration)
	// After sends the time on the channel it returns once d has passed.
	After(d time.Duration) <-chan time.Time
}

// Time is c's Now as a time.Time.
func Time(c Clock) time.Time { return time.Unix(0, c.Now()) }

// Ticker is a Clock's ticker.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real returns the system clock.
func Real() Clock { return realClock{start: time.Now()} }

type realClock struct{ start time.Time }

func (realClock) Now() int64                             { return time.Now().UnixNano() }
func (c realClock) Mono() time.Duration                  { return time.Since(c.start) }
func (realClock) NewTicker(d time.Duration) Ticker       { return realTicker{time.NewTicker(d)} }
func (realClock) Sleep(d time.Duration)                  { time.Sleep(d) }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (t realTicker) C() <-chan time.Time                 { return t.t.C }
func (t realTicker) Stop()                               { t.t.Stop() }

type realTicker struct{ t *time.Ticker }

// Fake is a clock that moves only when a test moves it; safe for
// concurrent use. Advance fires, in time order, every tick that falls due
// and wakes every sleeper whose time has come.
type Fake struct {
	now     atomic.Int64 // Unix ns; written under mu
	mu      sync.Mutex
	mono    time.Duration // advances with Advance, never with Set
	tickers []*fakeTicker
	sleeps  []sleeper
	changed chan struct{} // closed and replaced when a waiter is added
}

type sleeper struct {
	until time.Duration  // on mono
	wake  chan struct{}  // closed when due (Sleep)
	at    chan time.Time // sent the time when due (After)
}

// NewFake returns a fake clock reading ns.
func NewFake(ns int64) *Fake {
	f := &Fake{changed: make(chan struct{})}
	f.now.Store(ns)
	return f
}

// Now is the fake's wall-clock time.
func (f *Fake) Now() int64 { return f.now.Load() }

// Mono is the total the fake has been advanced by.
func (f *Fake) Mono() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mono
}

// Set moves the wall clock to ns, backwards too. Nothing fires: tickers
// and sleepers follow the monotonic reading, which Set does not move.
func (f *Fake) Set(ns int64) {
	f.mu.Lock()
	f.now.Store(ns)
	f.mu.Unlock()
}

// Advance moves the clock forward by d, firing what falls due.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clock: Advance by a negative duration; use Set")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	end := f.mono + d
	for {
		// The earliest tick due by end, in time order.
		var next *fakeTicker
		for _, t := range f.tickers {
			if !t.stopped && t.next <= end && (next == nil || t.next < next.next) {
				next = t
			}
		}
		if next == nil {
			break
		}
		f.now.Add(int64(next.next - f.mono))
		f.mono = next.next
		select {
		case next.c <- time.Unix(0, f.now.Load()):
		default: // the receiver has not taken the last tick: this one is dropped
		}
		next.next += next.every
	}
	f.now.Add(int64(end - f.mono))
	f.mono = end
	kept := f.sleeps[:0]
	for _, s := range f.sleeps {
		if s.until <= f.mono {
			if s.at != nil {
				s.at <- time.Unix(0, f.now.Load())
			} else {
				close(s.wake)
			}
		} else {
			kept = append(kept, s)
		}
	}
	f.sleeps = kept
}

// NewTicker returns a ticker that fires as Advance passes each multiple of
// d from now.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTicker{f: f, c: make(chan time.Time, 1), every: d, next: f.mono + d}
	f.tickers = append(f.tickers, t)
	f.notify()
	return t
}

// Sleep waits until Advance has moved the clock by d.
func (f *Fake) Sleep(d time.Duration) {
	f.mu.Lock()
	if d <= 0 {
		f.mu.Unlock()
		return
	}
	s := sleeper{until: f.mono + d, wake: make(chan struct{})}
	f.sleeps = append(f.sleeps, s)
	f.notify()
	f.mu.Unlock()
	<-s.wake
}

// After sends the time once Advance has moved the clock by d.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	at := make(chan time.Time, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		at <- time.Unix(0, f.now.Load())
		return at
	}
	f.sleeps = append(f.sleeps, sleeper{until: f.mono + d, at: at})
	f.notify()
	return at
}

// Waiters is the number of live tickers and sleepers.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.sleeps)
	for _, t := range f.tickers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// WaitForWaiters blocks until at least n tickers and sleepers are live, so
// a test knows a background loop is waiting before it advances; it reports
// false if that has not happened within limit (real time).
func (f *Fake) WaitForWaiters(n int, limit time.Duration) bool {
	deadline := time.After(limit)
	for {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		if f.Waiters() >= n {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// WaitForTicksTaken blocks until every live ticker's last tick has been
// received, so that a test stepping a background loop knows the loop has
// woken for the steps so far and the next step's tick will not be dropped;
// it reports false if that has not happened within limit (real time).
// It yields the processor while it waits: the receivers run meanwhile.
func (f *Fake) WaitForTicksTaken(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for f.ticksPending() {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// ticksPending reports whether a live ticker holds a tick not yet received.
func (f *Fake) ticksPending() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tickers {
		if !t.stopped && len(t.c) > 0 {
			return true
		}
	}
	return false
}

// notify wakes WaitForWaiters; f.mu is held.
func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTicker struct {
	f       *Fake
	c       chan time.Time
	every   time.Duration
	next    time.Duration // on the fake's mono
	stopped bool          // guarded by f.mu
}

func (t *fakeTicker) C() <-chan time.Time { return t.c }

func (t *fakeTicker) Stop() {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.stopped = true
	kept := t.f.tickers[:0]
	for _, x := range t.f.tickers {
		if x != t {
			kept = append(kept, x)
		}
	}
	t.f.tickers = kept
}
