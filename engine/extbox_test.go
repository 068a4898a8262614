package engine

import (
	"bytes"
	"fmt"
	"testing"
)

// extLimiters are the algorithms whose state lives in Ext, written in
// place (extbox.go), with room for three more requests at next. The
// sliding log's numbers make the aliasing visible: three stamps fill three
// of its four slots; a request 105ns on drops the oldest and takes the
// fourth slot, and a second one takes the slot the dropped stamp held,
// which the stored ring still counts.
func extLimiters(t *testing.T) []struct {
	name string
	l    Limiter
	at   []int64 // offsets from t0 of the requests that build the state
	next int64   // offset of the requests applied and then dropped
} {
	sl, err := NewSlidingLog(5, 100)
	if err != nil {
		t.Fatal(err)
	}
	sw, err := NewSlidingWindow(10, 100, 10)
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		name string
		l    Limiter
		at   []int64
		next int64
	}{
		{"SL.INCR", sl, []int64{0, 10, 20}, 105},
		{"SW.INCR PRECISION 10", sw, []int64{0, 10, 20}, 105},
	}
}

// stateOf is key's serialised entry, read under the lock.
func stateOf(t *testing.T, e *Engine, key []byte, now int64) []byte {
	t.Helper()
	var b []byte
	var err error
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		b, err = ent.AppendBinary(nil)
		return ent, false
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func build(t *testing.T, e *Engine, key []byte, l Limiter, at []int64) {
	t.Helper()
	for _, d := range at {
		if r, err := Limit(e, key, t0+d, l, 1); err != nil || r.Limited {
			t.Fatalf("building the state at t0+%d: %+v %v", d, r, err)
		}
	}
}

// chain applies l n times to the key's entry, each on the last's result,
// as RL.HITALL charges a key named twice, and stores the result or drops it.
func chain(t *testing.T, e *Engine, key []byte, l Limiter, now int64, n int, store bool) {
	t.Helper()
	e.DoMulti([][]byte{key}, now, func(ents []Entry) bool {
		for k := 0; k < n; k++ {
			next, r, write, err := l.Apply(ents[0], now, 1)
			if err != nil || r.Limited || !write {
				t.Fatalf("charge %d: %+v write=%v %v", k+1, r, write, err)
			}
			ents[0] = next
		}
		return store
	})
}

// A write that is dropped (RL.HITALL denied by another key) leaves the
// stored state as it was, however many times it charged the key.
func TestDroppedWritesLeaveExtStateAlone(t *testing.T) {
	t.Parallel()
	for _, c := range extLimiters(t) {
		for n := 1; n <= 3; n++ {
			t.Run(fmt.Sprintf("%s/%d charges", c.name, n), func(t *testing.T) {
				e := New(testClock(), 1)
				key := []byte("k")
				build(t, e, key, c.l, c.at)
				before := stateOf(t, e, key, t0+c.next)
				chain(t, e, key, c.l, t0+c.next, n, false)
				if after := stateOf(t, e, key, t0+c.next); !bytes.Equal(after, before) {
					t.Fatalf("%d charges dropped: state %x, want %x", n, after, before)
				}
				// And the key goes on as if nothing had been tried.
				want := New(testClock(), 1)
				build(t, want, key, c.l, append(c.at, c.next))
				build(t, e, key, c.l, []int64{c.next})
				if got, w := stateOf(t, e, key, t0+c.next), stateOf(t, want, key, t0+c.next); !bytes.Equal(got, w) {
					t.Fatalf("after %d dropped charges, the next request left %x, want %x", n, got, w)
				}
			})
		}
	}
}

// Charges stored together are all kept: committing a chain of staged
// states ends where the same requests one by one end.
func TestChainedWritesCommit(t *testing.T) {
	t.Parallel()
	for _, c := range extLimiters(t) {
		t.Run(c.name, func(t *testing.T) {
			e, want := New(testClock(), 1), New(testClock(), 1)
			key := []byte("k")
			build(t, e, key, c.l, c.at)
			chain(t, e, key, c.l, t0+c.next, 2, true)
			build(t, want, key, c.l, append(c.at, c.next, c.next))
			if got, w := stateOf(t, e, key, t0+c.next), stateOf(t, want, key, t0+c.next); !bytes.Equal(got, w) {
				t.Fatalf("two charges stored together: %x, one by one: %x", got, w)
			}
		})
	}
}

// Get hands out a copy: writes after it do not change what it returned,
// although the key's own state is written in place.
func TestGetIsNotChangedByLaterWrites(t *testing.T) {
	t.Parallel()
	for _, c := range extLimiters(t) {
		t.Run(c.name, func(t *testing.T) {
			e := New(testClock(), 1)
			key := []byte("k")
			build(t, e, key, c.l, c.at)
			got, ok := e.Get(key, t0+c.next)
			if !ok {
				t.Fatal("key absent")
			}
			before, err := got.AppendBinary(nil)
			if err != nil {
				t.Fatal(err)
			}
			build(t, e, key, c.l, []int64{c.next, c.next, 2 * c.next, 2 * c.next})
			after, _ := got.AppendBinary(nil)
			if !bytes.Equal(after, before) {
				t.Fatalf("Get's entry changed from %x to %x by later writes", before, after)
			}
			if bytes.Equal(stateOf(t, e, key, t0+2*c.next), before) {
				t.Fatal("the writes changed nothing: the test proves nothing")
			}
		})
	}
}

// A key keeps its box for life: a write to an existing key allocates
// nothing once its memory has grown to the traffic.
func TestExtWritesAllocateNothing(t *testing.T) {
	// Not parallel: AllocsPerRun counts the whole process's allocations.
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, c := range extLimiters(t) {
		t.Run(c.name, func(t *testing.T) {
			e := New(testClock(), 1)
			key := []byte("k")
			now := t0
			step := func() {
				now += 30 // about three requests live in the 100ns window
				if _, err := Limit(e, key, now, c.l, 1); err != nil {
					t.Fatal(err)
				}
			}
			for range 100 {
				step()
			}
			if n := testing.AllocsPerRun(1000, step); n != 0 {
				t.Errorf("%v allocations per request on an existing key, want 0", n)
			}
		})
	}
}
