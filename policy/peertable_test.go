package policy

import (
	"math/rand"
	"testing"
)

// TestSlotsMergeIgnoresRepeatsAndOrder: every order and any repetition of
// the same slots leaves the same state, and the deltas returned add up to
// the final values exactly once.
func TestSlotsMergeIgnoresRepeatsAndOrder(t *testing.T) {
	// One region's slots as it sent them: two windows, values growing.
	sent := []Slot{{100, 1}, {100, 3}, {100, 7}, {200, 2}, {200, 5}, {300, 1}, {300, 4}}
	want := slots{{300, 4}, {200, 5}}
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		batch := append([]Slot(nil), sent...)
		for i := 0; i < 5; i++ { // repeats
			batch = append(batch, sent[rng.Intn(len(sent))])
		}
		rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
		var ss slots
		var sum int64
		applied := map[int64]int64{}
		for _, s := range batch {
			d := ss.merge(s)
			sum += d
			applied[s.ID] += d
		}
		if ss != want {
			t.Fatalf("trial %d: %v, want %v (batch %v)", trial, ss, want, batch)
		}
		// What was applied per window never exceeds what was consumed in it.
		for id, d := range applied {
			var top int64
			for _, s := range sent {
				if s.ID == id {
					top = max(top, s.Value)
				}
			}
			if d > top {
				t.Fatalf("trial %d: window %d applied %d, more than its %d", trial, id, d, top)
			}
		}
		if in := ss.value(300) + ss.value(200); in != 9 {
			t.Fatalf("trial %d: value(300)+value(200) = %d", trial, in)
		}
	}
}

func TestSlotsInOrderApplyEachUnitOnce(t *testing.T) {
	var ss slots
	steps := []struct {
		s    Slot
		want int64
	}{
		{Slot{10, 3}, 3}, {Slot{10, 3}, 0}, {Slot{10, 2}, 0}, {Slot{10, 8}, 5},
		{Slot{20, 1}, 1}, {Slot{10, 9}, 1}, // the previous window still grows (late batch)
		{Slot{5, 4}, 0},                     // older than both kept: dropped
		{Slot{30, 2}, 2}, {Slot{10, 12}, 0}, // window 10 is gone
	}
	for i, st := range steps {
		if got := ss.merge(st.s); got != st.want {
			t.Fatalf("step %d: merge(%v) = %d, want %d (state %v)", i, st.s, got, st.want, ss)
		}
	}
}

func TestTableDirtyAndFull(t *testing.T) {
	tab := NewPeerTable(2, func() string { return KeepLast })
	charge := func(key string, s Slot, now int64) {
		v := tab.hold([]byte(key), 0, 3)
		v.release([]byte(key), s, true, now)
	}
	charge("rl:g:a", Slot{1, 1}, 1)
	charge("rl:g:a", Slot{1, 2}, 2)
	charge("rl:g:b", Slot{1, 5}, 2)
	ups := tab.TakeDirty(nil)
	if len(ups) != 2 {
		t.Fatalf("dirty %v, want one update per key", ups)
	}
	if again := tab.TakeDirty(nil); len(again) != 0 {
		t.Fatalf("dirty twice: %v", again)
	}
	if all := tab.All(nil); len(all) != 2 {
		t.Fatalf("full state %v", all)
	}
	if n := tab.Sweep(0, 100); n < 0 || tab.Size()+n != 2 {
		t.Fatalf("sweep")
	}
}

// TestPeerViewCountsPartitionedPeers: a partitioned peer counts as the
// on-partition choice says, its last heard slot kept for keep-last.
func TestPeerViewCountsPartitionedPeers(t *testing.T) {
	mode := KeepLast
	tab := NewPeerTable(2, func() string { return mode })
	key := []byte("rl:g:a")
	tab.Merge(0, key, Slot{10, 3}, 1)
	tab.Merge(1, key, Slot{10, 40}, 1)
	tab.SetPartitioned(1, true, 1)
	for _, c := range []struct {
		mode string
		want int64
	}{{KeepLast, 43}, {FairShare, 3 + 50}, {LocalOnly, 3}} {
		mode = c.mode
		v := tab.hold(key, 50, 3)
		got := v.heard(10)
		v.release(key, Slot{}, false, 2)
		if got != c.want {
			t.Errorf("%s: heard %d, want %d", c.mode, got, c.want)
		}
	}
}
