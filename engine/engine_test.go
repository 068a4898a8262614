package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine/gcra"
	"github.com/limitdb/limitdb/internal/benchcpu"
)

const t0 = int64(1_700_000_000) * int64(time.Second)

func TestThrottleExpiresExactlyWhenFresh(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	l, _ := gcra.CellLimit(1, 1, 10) // one per 10 s, burst 1
	key := []byte("k")
	if _, err := Limit(e, key, t0, CellLimiter{l}, 1); err != nil {
		t.Fatal(err)
	}
	ent, ok := e.Get(key, t0)
	if !ok || ent.Kind != KindGCRA || ent.Expire != t0+10*int64(time.Second) {
		t.Fatalf("after one request: %+v ok=%v", ent, ok)
	}
	if _, ok := e.Get(key, ent.Expire-1); !ok {
		t.Error("gone 1 ns before its TAT")
	}
	if _, ok := e.Get(key, ent.Expire); ok {
		t.Error("still there at its TAT")
	}
	if e.Len() != 0 {
		t.Errorf("lazy expiry left %d keys", e.Len())
	}
}

func TestPeekAndDenialWriteNothing(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	l, _ := gcra.CellLimit(0, 1, 60)
	key := []byte("k")
	if _, err := Limit(e, key, t0, CellLimiter{l}, 0); err != nil {
		t.Fatal(err)
	}
	if e.Len() != 0 {
		t.Fatal("a peek created the key")
	}
	Limit(e, key, t0, CellLimiter{l}, 1)
	before, _ := e.Get(key, t0)
	r, _ := Limit(e, key, t0+1, CellLimiter{l}, 1)
	after, _ := e.Get(key, t0+1)
	if !r.Limited || before != after {
		t.Errorf("denial changed state: limited=%v %+v -> %+v", r.Limited, before, after)
	}
}

func TestWrongType(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	key := []byte("s")
	e.Do(key, t0, func(Entry) (Entry, bool) { return Entry{Kind: KindString, Ext: []byte("x")}, true })
	l, _ := gcra.CellLimit(1, 1, 1)
	if _, err := Limit(e, key, t0, CellLimiter{l}, 1); err != ErrWrongType {
		t.Errorf("err = %v, want ErrWrongType", err)
	}
}

func TestExpireCycleReapsOnlyExpired(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 8)
	for i := 0; i < 2000; i++ {
		exp := t0 + int64(time.Second)
		if i%2 == 0 {
			exp = t0 + int64(time.Hour)
		}
		e.Do([]byte(fmt.Sprint("k", i)), t0, func(Entry) (Entry, bool) {
			return Entry{Kind: KindGCRA, A: exp, Expire: exp}, true
		})
	}
	now := t0 + 2*int64(time.Second)
	for e.ExpireCycle(now, 20) > 0 {
	}
	// The sampler stops once a sample is at most a quarter expired, as
	// Redis's does, so some expired keys may wait for lazy expiry; it must
	// still have reaped most of them, and never a live one.
	if n := e.Len(); n > 1200 || n < 1000 {
		t.Errorf("after expiry cycles %d keys, want 1000 live plus at most 200 expired", n)
	}
	live := 0
	for i := 0; i < e.Shards(); i++ {
		e.RangeShard(i, now, func(string, *Entry) bool { live++; return true })
	}
	if live != 1000 {
		t.Errorf("live keys = %d, want 1000", live)
	}
}

// TestExpireShardsSpreadsACycle checks that slices of a cycle, each on the
// next shards in turn, visit every shard: as many slices as make a cycle
// reap from every shard, and a slice reaps only from its own shards.
func TestExpireShardsSpreadsACycle(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 8)
	for i := 0; i < 800; i++ {
		exp := t0 + int64(time.Second)
		e.Do([]byte(fmt.Sprint("k", i)), t0, func(Entry) (Entry, bool) {
			return Entry{Kind: KindGCRA, A: exp, Expire: exp}, true
		})
	}
	now := t0 + 2*int64(time.Second)
	perShard := func() []int {
		n := make([]int, e.Shards())
		for i := range n {
			e.tab.Shard(i).Lock()
			n[i] = e.tab.Shard(i).Len()
			e.tab.Shard(i).Unlock()
		}
		return n
	}
	before := perShard()
	e.ExpireShards(now, 1000, 3) // shards 0, 1, 2
	after := perShard()
	for i := range after {
		if reaped := after[i] < before[i]; reaped != (i < 3) {
			t.Errorf("shard %d: %d keys -> %d after a slice of shards 0-2", i, before[i], after[i])
		}
	}
	e.ExpireShards(now, 1000, 3) // 3, 4, 5
	e.ExpireShards(now, 1000, 3) // 6, 7, then 0 again
	if n := e.Len(); n != 0 {
		t.Errorf("%d expired keys left after slices covering every shard", n)
	}
}

func TestDoMultiIsAtomicAndDeduplicates(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 4)
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("a")}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				e.DoMulti(keys, t0, func(ents []Entry) bool {
					if ents[2].Kind != KindNone {
						t.Error("duplicate key given twice")
					}
					for k := 0; k < 2; k++ {
						ents[k].Kind = KindString
						ents[k].A++
					}
					return true
				})
			}
		}()
	}
	wg.Wait()
	for _, k := range []string{"a", "b"} {
		if ent, _ := e.Get([]byte(k), t0); ent.A != 4000 {
			t.Errorf("%s = %d, want 4000", k, ent.A)
		}
	}
}

func TestConcurrentThrottleAdmitsExactlyTheLimit(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 16)
	l, _ := gcra.CellLimit(99, 1, 3600) // limit 100 within an hour
	var admitted sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for g := 0; g < 16; g++ {
		admitted.Add(1)
		go func() {
			defer admitted.Done()
			for i := 0; i < 50; i++ {
				r, _ := Limit(e, []byte("hot"), t0, CellLimiter{l}, 1)
				if !r.Limited {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		}()
	}
	admitted.Wait()
	if n != 100 {
		t.Errorf("admitted %d, want 100", n)
	}
}

func BenchmarkThrottle(b *testing.B) {
	e := New(testClock(), 0)
	l, _ := gcra.CellLimit(99, 1000, 60)
	keys := make([][]byte, 100000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("k:", i))
	}
	now := t0
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := 0; i < b.N; i++ {
		Limit(e, keys[i%len(keys)], now+int64(i), CellLimiter{l}, 1)
	}
}

// BenchmarkThrottleParallel is BenchmarkThrottle from every core at once:
// 100k keys over the shards, so goroutines rarely meet on one shard's lock.
// Its ns/op against BenchmarkThrottle's, at -cpu 1,2,..., is how the
// keyspace scales with cores.
func BenchmarkThrottleParallel(b *testing.B) {
	e := New(testClock(), 0)
	l, _ := gcra.CellLimit(99, 1000, 60)
	keys := make([][]byte, 100000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("k:", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.Intn(len(keys))
		for pb.Next() {
			i++
			Limit(e, keys[i%len(keys)], t0+int64(i), CellLimiter{l}, 1)
		}
	})
}

// BenchmarkThrottleChurn is the load of the headline server benchmark
// (`redis-benchmark -r 100000 CL.THROTTLE k:__rand_int__ 99 1000 60` at about
// 400k requests a second) on the engine alone: random keys whose state
// expires 60 ms after a hit, each key hit every 250 ms or so, and the active
// expiry cycle every 100 ms of simulated time. Almost every request thus
// finds its key expired (reaped or not) and creates it again: it measures
// the keyspace's churn (delete, insert, compaction) rather than the GCRA
// step.
func BenchmarkThrottleChurn(b *testing.B) {
	e := New(testClock(), 0)
	l, _ := gcra.CellLimit(99, 1000, 60)
	keys := make([][]byte, 100000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k:%012d", i)
	}
	const step = 2500 // ns of simulated time per request: 400k requests a second
	const cycle = int64(100 * time.Millisecond)
	rng := rand.New(rand.NewSource(1))
	now, next := t0, t0+cycle
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := 0; i < b.N; i++ {
		now += step
		if now >= next {
			e.ExpireCycle(now, 20)
			next += cycle
		}
		Limit(e, keys[rng.Intn(len(keys))], now, CellLimiter{l}, 1)
	}
}

// TestExpiredKeyComesBackInPlace: a key hit again after it expired, before
// active expiry reaped it, is written over its old entry (counted as
// expired, accounted once); an expired key that is only read is reaped.
func TestExpiredKeyComesBackInPlace(t *testing.T) {
	t.Parallel()
	e := New(testClock(), 1)
	l, _ := gcra.CellLimit(0, 1, 1) // burst 1, one a second: the key lives 1 s
	k := []byte("user:1")
	if _, err := Limit(e, k, t0, CellLimiter{l}, 1); err != nil {
		t.Fatal(err)
	}
	used, mem := e.UsedBytes(), e.tab.Shard(0).Bytes()
	later := t0 + 2*int64(time.Second)
	r, err := Limit(e, k, later, CellLimiter{l}, 1)
	if err != nil || r.Limited {
		t.Fatalf("after expiry: %+v, %v; want admitted", r, err)
	}
	st := e.Stats()
	if st.Keys != 1 || st.ExpiredKeys != 1 || e.UsedBytes() != used || e.tab.Shard(0).Bytes() != mem {
		t.Fatalf("keys %d expired %d used %d (want %d) storage %d (want %d)",
			st.Keys, st.ExpiredKeys, e.UsedBytes(), used, e.tab.Shard(0).Bytes(), mem)
	}
	if ent, ok := e.Get(k, later); !ok || ent.Kind != KindGCRA || ent.Expire <= later {
		t.Fatalf("rewritten entry: %+v %v", ent, ok)
	}
	// Expired again and only read: gone, and counted once more.
	if _, ok := e.Get(k, later+2*int64(time.Second)); ok {
		t.Fatal("expired key read as live")
	}
	if st := e.Stats(); st.Keys != 0 || st.ExpiredKeys != 2 || e.UsedBytes() != 0 {
		t.Fatalf("after the read: keys %d expired %d used %d", st.Keys, st.ExpiredKeys, e.UsedBytes())
	}
}

// TestDoMultiAllOrNothingWhenFull fills a one-shard engine to its bound and
// then writes two new keys at once, a small one that fits and a large one
// that does not: the write is refused whole, with ErrShardFull, and leaves
// no trace of the small key. A multi-key write to keys already present
// still goes through, in place.
func TestDoMultiAllOrNothingWhenFull(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fills 256 MiB")
	}
	e := New(testClock(), 1)
	big := make([]byte, 1<<20)
	n := 0
	for ; n < 1000; n++ {
		binary.BigEndian.PutUint32(big, uint32(n))
		if refusedFull(func() { e.DoMulti([][]byte{big}, t0, putHour) }) {
			break
		}
	}
	if n < 200 || n == 1000 {
		t.Fatalf("shard full after %d keys of 1 MiB", n)
	}
	// With few keys and with many (past smallMulti, where the room is
	// counted in one pass), duplicates among them.
	for _, pad := range []int{0, 2 * smallMulti} {
		keys := [][]byte{[]byte("small")}
		for j := 0; j < pad; j++ {
			keys = append(keys, []byte(fmt.Sprint("small", j%(pad/2+1))))
		}
		if !refusedFull(func() { e.DoMulti(append(keys, big), t0, putHour) }) {
			t.Fatalf("%d keys: a write of new small keys and a new 1 MiB key into a full shard was not refused", len(keys)+1)
		}
		for _, k := range keys {
			if e.Do(k, t0, func(Entry) (Entry, bool) { return Entry{}, false }) {
				t.Fatalf("%d keys: the refused write stored %q", len(keys)+1, k)
			}
		}
	}
	binary.BigEndian.PutUint32(big, 0)
	for _, copies := range []int{1, 2 * smallMulti} {
		keys := make([][]byte, copies)
		for j := range keys {
			keys[j] = big
		}
		if refusedFull(func() { e.DoMulti(keys, t0, putHour) }) {
			t.Errorf("a write to a key already present, named %d times, was refused at capacity", copies)
		}
	}
}

// TestDoMultiRoomPerShard fills shard 0 of a two-shard engine, then writes
// a new 1 MiB key that lands in shard 1 together with a key of shard 0 that
// is already present: the write fits and must go through, since each key's
// room is counted in its own shard (locking sorts the shard indexes, and
// the new key comes first so that they are sorted the other way).
func TestDoMultiRoomPerShard(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fills 256 MiB")
	}
	e := New(testClock(), 2)
	// bigKey returns the next 1 MiB key, counting from *n, of shard i.
	bigKey := func(n *uint32, i int) []byte {
		for ; ; *n++ {
			k := make([]byte, 1<<20)
			binary.BigEndian.PutUint32(k, *n)
			if e.tab.Index(k) == i {
				*n++
				return k
			}
		}
	}
	var n uint32
	var present []byte
	for {
		k := bigKey(&n, 0)
		if refusedFull(func() { e.DoMulti([][]byte{k}, t0, putHour) }) {
			break
		}
		present = k
	}
	fresh := bigKey(&n, 1)
	keys := [][]byte{fresh, present}
	if refusedFull(func() { e.DoMulti(keys, t0, putHour) }) {
		t.Fatal("a new key of an empty shard and a present key of a full one were refused together")
	}
	for len(keys) <= 2*smallMulti { // many keys: the room counted in one pass
		keys = append(keys, present)
	}
	if refusedFull(func() { e.DoMulti(keys, t0, putHour) }) {
		t.Fatalf("%d keys, a present key of a full shard named %d times, were refused", len(keys), len(keys)-1)
	}
}

func TestFirstPlaces(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 5, smallMulti, smallMulti + 1, 200} {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = []byte(fmt.Sprint("k", (i*7)%(n/3+1)))
		}
		first := FirstPlaces(keys)
		for i := range keys {
			want := i
			for j := 0; j < i; j++ {
				if string(keys[j]) == string(keys[i]) {
					want = j
					break
				}
			}
			if first[i] != want {
				t.Fatalf("%d keys: first place of %d (%q) = %d, want %d", n, i, keys[i], first[i], want)
			}
		}
	}
}

// putHour is a DoMulti function that writes every key a GCRA entry live
// for an hour.
func putHour(ents []Entry) bool {
	exp := t0 + int64(time.Hour)
	for i := range ents {
		ents[i] = Entry{Kind: KindGCRA, A: exp, Expire: exp}
	}
	return true
}

// refusedFull runs fn and reports whether it panicked with ErrShardFull;
// any other panic goes on.
func refusedFull(fn func()) (full bool) {
	defer func() {
		if r := recover(); r != nil {
			if err, ok := r.(error); !ok || !errors.Is(err, ErrShardFull) {
				panic(r)
			}
			full = true
		}
	}()
	fn()
	return false
}

// testClock is a fake clock at t0, for engines whose tests pass every
// instant themselves.
func testClock() clock.Clock { return clock.NewFake(t0) }
