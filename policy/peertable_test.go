package policy

import (
	"fmt"
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

// TestTableShardFindsByKeyUnderCollisions: records whose hashes are equal,
// or start their probes at the same place (the table's end, so the probe
// wraps), are each found by their key, through growth, and a sweep keeps
// exactly the records still in use.
func TestTableShardFindsByKeyUnderCollisions(t *testing.T) {
	var tab PeerTable
	sh := &tab.shards[0]
	const n = 300
	hashOf := func(i int) uint64 {
		switch i % 3 {
		case 0:
			return 42 // the same hash for a third of the keys
		case 1:
			return uint64(15)<<8 | uint64(i%7) // the same start in a table of 16
		}
		return uint64(i) * 0x9e3779b97f4a7c15
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("rl:api:%d", i)) }
	for i := 0; i < n; i++ {
		if sh.find(hashOf(i), key(i)) != nil {
			t.Fatalf("key %d found before it was added", i)
		}
		sh.put(hashOf(i), &record{key: string(key(i)), touched: int64(i)})
		for j := 0; j <= i; j += 17 {
			if r := sh.find(hashOf(j), key(j)); r == nil || r.key != string(key(j)) {
				t.Fatalf("after %d adds: key %d found as %v", i+1, j, r)
			}
		}
	}
	if sh.n != n || sh.n*4 > len(sh.slot)*3 {
		t.Fatalf("%d records in %d places", sh.n, len(sh.slot))
	}
	// Sweep: drop the records touched before 200 unless dirty.
	for i := 0; i < 200; i += 50 {
		tab.shards[0].find(hashOf(i), key(i)).dirty = true
	}
	if got, want := tab.Sweep(0, 200), 200-4; got != want {
		t.Fatalf("swept %d, want %d", got, want)
	}
	for i := 0; i < n; i++ {
		kept := i >= 200 || i%50 == 0
		if r := tab.shards[0].find(hashOf(i), key(i)); (r != nil) != kept {
			t.Fatalf("key %d: found %v, want kept %v", i, r != nil, kept)
		}
	}
	if tab.Size() != 104 {
		t.Fatalf("size %d after the sweep, want 104", tab.Size())
	}
}

// TestTablePrefetchChangesNothing: reading ahead keys with and without
// records makes none and leaves every count as it was.
func TestTablePrefetchChangesNothing(t *testing.T) {
	tab := NewPeerTable(2, func() string { return KeepLast })
	var keys [][]byte
	for i := 0; i < 40; i++ {
		k := []byte(fmt.Sprintf("rl:g:%d", i))
		keys = append(keys, k)
		if i%2 == 0 {
			tab.Merge(1, k, Slot{100, int64(i + 1)}, 1)
		}
	}
	tab.Prefetch(keys) // more than PrefetchMax: the rest are skipped
	tab.Prefetch(nil)
	var none *PeerTable
	none.Prefetch(keys)
	if tab.Size() != 20 {
		t.Fatalf("size %d, want 20", tab.Size())
	}
	for i, k := range keys {
		h := tab.hash(k)
		sh := tab.shard(h)
		r := sh.find(h, k)
		if (r != nil) != (i%2 == 0) || r != nil && r.heard[1].value(100) != int64(i+1) {
			t.Fatalf("key %s: record %+v", k, r)
		}
	}
}
