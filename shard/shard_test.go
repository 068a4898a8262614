package shard

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/rand"
	"sync"
	"testing"
)

func TestInsertGetDelete(t *testing.T) {
	t.Parallel()
	tab := New[int](4)
	if tab.Count() != 4 {
		t.Fatalf("count = %d", tab.Count())
	}
	for i := 0; i < 1000; i++ {
		k := []byte(fmt.Sprint("k", i))
		s := tab.Lock(k)
		*s.Insert(k) = i
		s.Unlock()
	}
	if n := tab.Len(); n != 1000 {
		t.Fatalf("len = %d, want 1000", n)
	}
	for i := 0; i < 1000; i += 2 {
		k := []byte(fmt.Sprint("k", i))
		s := tab.Lock(k)
		if !s.Delete(k) {
			t.Errorf("delete %s: not found", k)
		}
		s.Unlock()
	}
	for i := 0; i < 1000; i++ {
		k := []byte(fmt.Sprint("k", i))
		s := tab.Lock(k)
		v := s.Get(k)
		switch {
		case i%2 == 0 && v != nil:
			t.Errorf("%s: still present", k)
		case i%2 == 1 && (v == nil || *v != i):
			t.Errorf("%s: got %v, want %d", k, v, i)
		}
		s.Unlock()
	}
	// Freed slots are reused and come back zeroed.
	k := []byte("fresh")
	s := tab.Lock(k)
	if v := s.Insert(k); *v != 0 {
		t.Errorf("reused slot holds %d, want 0", *v)
	}
	s.Unlock()
}

func TestLockKeysAscendingAndDistinct(t *testing.T) {
	t.Parallel()
	tab := New[int](8)
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("a"), []byte("zz"), []byte("q")}
	idx := tab.LockKeys(keys)
	for i := 1; i < len(idx); i++ {
		if idx[i] <= idx[i-1] {
			t.Fatalf("indexes not strictly ascending: %v", idx)
		}
	}
	tab.UnlockIndexes(idx)
	// Everything is unlocked again.
	for i := 0; i < tab.Count(); i++ {
		if !tab.Shard(i).mu.TryLock() {
			t.Fatalf("shard %d left locked", i)
		}
		tab.Shard(i).Unlock()
	}
}

func TestConcurrentCounters(t *testing.T) {
	t.Parallel()
	tab := New[int](16)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				k := []byte(fmt.Sprint("c", i%10))
				s := tab.Lock(k)
				*s.Insert(k)++
				s.Unlock()
			}
		}()
	}
	wg.Wait()
	for i := 0; i < 10; i++ {
		k := []byte(fmt.Sprint("c", i))
		s := tab.Lock(k)
		if got := *s.Get(k); got != 800 {
			t.Errorf("%s = %d, want 800", k, got)
		}
		s.Unlock()
	}
}

func BenchmarkLockGet(b *testing.B) {
	tab := New[int](DefaultShards)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("key:", i))
		s := tab.Lock(keys[i])
		s.Insert(keys[i])
		s.Unlock()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i&1023]
		s := tab.Lock(k)
		*s.Get(k)++
		s.Unlock()
	}
}

// TestAgainstMap drives a shard and a Go map through the same random
// inserts, deletes, compactions and resets and compares them throughout,
// for values of several sizes (the arena pads them to 8 bytes) and keys
// from empty to over a kilobyte (multi-byte length fields, free lists
// kept in a map).
func TestAgainstMap(t *testing.T) {
	t.Parallel()
	t.Run("int64", func(t *testing.T) { againstMap(t, func(r uint64) int64 { return int64(r) }) })
	t.Run("struct", func(t *testing.T) {
		againstMap(t, func(r uint64) entry { return entry{int64(r), -int64(r), uint8(r)} })
	})
	t.Run("odd", func(t *testing.T) { againstMap(t, func(r uint64) [3]byte { return [3]byte{byte(r), byte(r >> 8), 1} }) })
}

// deleteChecked deletes k from s and from want, the keys s should hold,
// and fails unless s held k exactly when want did.
func deleteChecked[V, W any](t *testing.T, s *Shard[V], want map[string]W, k string, step int) {
	t.Helper()
	_, present := want[k]
	if got := s.Delete([]byte(k)); got != present {
		t.Fatalf("step %d: delete %q = %v", step, k, got)
	}
	delete(want, k)
}

type entry struct {
	A, B int64
	K    uint8
}

func againstMap[V comparable](t *testing.T, val func(uint64) V) {
	tab := New[V](1)
	s := tab.Shard(0)
	want := map[string]V{}
	rng := uint64(42)
	next := func() uint64 { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng }
	check := func(step int) {
		t.Helper()
		if s.Len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, s.Len(), len(want))
		}
		seen := 0
		s.Range(func(k string, v *V) bool {
			seen++
			if w, ok := want[k]; !ok || w != *v {
				t.Fatalf("step %d: %q = %v, want %v (present %v)", step, k, *v, w, ok)
			}
			return true
		})
		if seen != len(want) {
			t.Fatalf("step %d: Range saw %d keys, want %d", step, seen, len(want))
		}
	}
	var cursor uint64 // a Scan walk interleaved with everything else
	for step := 0; step < 200000; step++ {
		r := next()
		k := fmt.Sprint("key:", r%5000)
		switch r % 1000 {
		case 7: // an occasional long key: multi-byte length field
			k += string(make([]byte, 200))
		case 8: // a very long one: its free list lives in the map
			k += string(make([]byte, 1500+r%3))
		case 9:
			k = k[:r%4]
		}
		switch op := (r >> 20) % 10; {
		case op < 5:
			*s.Insert([]byte(k)) = val(r)
			want[k] = val(r)
		case op < 9:
			deleteChecked(t, s, want, k, step)
		default:
			if v := s.Get([]byte(k)); (v != nil) != hasKey(want, k) || v != nil && *v != want[k] {
				t.Fatalf("step %d: get %q = %v", step, k, v)
			}
		}
		if step%97 == 0 {
			cursor = s.Scan(cursor, 5, func(k string, v *V, _ byte) bool {
				if w, ok := want[k]; !ok || w != *v {
					t.Fatalf("step %d: Scan gave %q = %v, want %v (present %v)", step, k, *v, w, ok)
				}
				return true
			})
		}
		if step%5000 == 0 {
			s.Compact(0)
			check(step)
		}
		if step == 150000 {
			for k := range want { // expire almost everything, then compact
				if len(want) > 10 {
					s.Delete([]byte(k))
					delete(want, k)
				}
			}
			before := s.Bytes()
			if !s.Compact(0) || s.Bytes() >= before/4 {
				t.Fatalf("compaction after mass delete: %d -> %d bytes", before, s.Bytes())
			}
			check(step)
		}
	}
	check(-1)
	s.Reset()
	want = map[string]V{}
	check(-2)
	*s.Insert([]byte("again")) = val(1)
	want["again"] = val(1)
	check(-3)
}

// TestScanCursorAcrossCompaction: a cursor taken before a Compact or Reset
// restarts the walk; it never lands inside an entry. Within one
// generation a walk sees every key present throughout exactly once.
func TestScanCursorAcrossCompaction(t *testing.T) {
	t.Parallel()
	s := New[int64](1).Shard(0)
	for i := 0; i < 2000; i++ {
		*s.Insert(fmt.Appendf(nil, "key:%d%s", i, make([]byte, i%50))) = int64(i)
	}
	seen := map[string]int{}
	walk := func(cursor uint64, count int) uint64 {
		return s.Scan(cursor, count, func(k string, v *int64, _ byte) bool {
			if want := s.Get([]byte(k)); want == nil || want != v {
				t.Fatalf("Scan gave %q, which Get does not find at the same place", k)
			}
			seen[k]++
			return true
		})
	}
	cursor := walk(0, 700)
	if cursor == 0 {
		t.Fatal("a partial walk returned the end cursor")
	}
	for i := 0; i < 2000; i += 3 { // deletes during a walk
		s.Delete(fmt.Appendf(nil, "key:%d%s", i, make([]byte, i%50)))
	}
	for cursor = walk(cursor, 100); cursor != 0; cursor = walk(cursor, 100) {
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%q seen %d times in one walk", k, n)
		}
	}
	want := 700 // the keys walked before the deletes, then those left after the cursor
	for i := 700; i < 2000; i++ {
		if i%3 != 0 {
			want++
		}
	}
	if len(seen) != want {
		t.Fatalf("walk saw %d keys, want %d", len(seen), want)
	}

	for _, rebuild := range []func(){
		func() {
			for i := 1; i < 2000; i += 3 {
				s.Delete(fmt.Appendf(nil, "key:%d%s", i, make([]byte, i%50)))
			}
			if !s.Compact(0) {
				t.Fatal("no compaction after deleting two thirds")
			}
		},
		s.Reset,
	} {
		clear(seen)
		cursor := walk(0, 300)
		rebuild()
		for k := 0; k < 1000; k++ { // new keys over the old offsets
			*s.Insert(fmt.Appendf(nil, "new:%d", k)) = 1
		}
		clear(seen)
		for cursor = walk(cursor, 50); cursor != 0; cursor = walk(cursor, 50) {
		}
		if len(seen) != s.Len() {
			t.Fatalf("stale cursor: walk saw %d keys of %d", len(seen), s.Len())
		}
	}
}

// TestSample: sampling every index slot in turn reaches every key, and
// each sample is a whole key with its own value.
func TestSample(t *testing.T) {
	t.Parallel()
	s := New[int64](1).Shard(0)
	if s.Sample(0, func(string, *int64, byte) bool { return true }) {
		t.Fatal("an empty shard gave a sample")
	}
	for i := 0; i < 500; i++ {
		*s.Insert(fmt.Appendf(nil, "k%d", i)) = int64(i)
	}
	for i := 0; i < 500; i += 2 {
		s.Delete(fmt.Appendf(nil, "k%d", i))
	}
	seen := map[string]bool{}
	for i := uint64(0); i < uint64(len(s.slot)); i++ {
		if !s.Sample(i, func(k string, v *int64, _ byte) bool {
			if fmt.Sprint("k", *v) != k {
				t.Fatalf("sample %q holds %d", k, *v)
			}
			seen[k] = true
			return true
		}) {
			t.Fatal("no sample from a shard with keys")
		}
	}
	if len(seen) != 250 {
		t.Fatalf("sampling every slot reached %d keys, want 250", len(seen))
	}
}

func TestNewRefusesPointers(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("New[*int] did not panic")
		}
	}()
	New[*int](1)
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

// hashOf is the hash Table.Hash gives key in this shard's table.
func (s *Shard[V]) hashOf(key []byte) uint64 { return maphash.Bytes(s.seed, key) }

// TestFlatStorage checks which values leave the Go heap.
func TestFlatStorage(t *testing.T) {
	t.Parallel()
	if !flat[entry]() || !flat[int64]() || !flat[byte]() {
		t.Error("pointer-free types should be stored off the heap")
	}
	if flat[string]() || flat[*int]() || flat[struct{ X any }]() || flat[[2][]byte]() {
		t.Error("types with pointers must stay on the Go heap")
	}
	s := New[entry](1).Shard(0)
	for i := 0; i < 10000; i++ {
		s.Insert([]byte(fmt.Sprint("k", i))).A = int64(i)
	}
	for i := 0; i < 10000; i++ {
		if v := s.Get([]byte(fmt.Sprint("k", i))); v == nil || v.A != int64(i) {
			t.Fatalf("k%d = %v", i, v)
		}
	}
	s.Reset()
	if s.Get([]byte("k1")) != nil || s.Bytes() != 0 {
		t.Fatal("reset left data")
	}
}

// TestChurnReusesStorage: keys that are deleted and come back (a rate
// limit's keys expiring and being hit again) are stored in the entries
// they left, so the shard does not grow; Compact's reserve keeps
// it from shrinking storage that is about to be needed again.
func TestChurnReusesStorage(t *testing.T) {
	t.Parallel()
	s := New[int64](1).Shard(0)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k:%06d", i)
		*s.Insert(keys[i]) = int64(i)
	}
	size := 0 // after the first round, which sizes the free list
	for round := 0; round < 20; round++ {
		for _, k := range keys {
			if !s.Delete(k) {
				t.Fatalf("round %d: %s missing", round, k)
			}
		}
		if s.Compact(len(keys)) {
			t.Fatalf("round %d: compacted storage the reserve asked to keep", round)
		}
		for i := len(keys) - 1; i >= 0; i-- { // another order than the one they left in
			v, tag := s.InsertTagged(keys[i], s.hashOf(keys[i]))
			if *v != 0 || *tag != 0 {
				t.Fatalf("round %d: reused entry not fresh: value %d, tag %d", round, *v, *tag)
			}
			*v, *tag = int64(i+round), byte(round)
		}
		if got := s.Bytes(); round == 0 {
			size = got
		} else if got != size {
			t.Fatalf("round %d: storage grew from %d to %d bytes", round, size, got)
		}
	}
	for i, k := range keys {
		v, tag := s.GetTagged(k, s.hashOf(k))
		if v == nil || *v != int64(i+19) || *tag != 19 {
			t.Fatalf("%s: value %v tag %v", k, v, tag)
		}
	}
	// A key one byte shorter has entries of the same size: it takes them.
	for _, k := range keys {
		s.Delete(k)
	}
	for i := range keys {
		*s.Insert(fmt.Appendf(nil, "k:%05d", i)) = int64(i)
	}
	if got := s.Bytes(); got != size {
		t.Fatalf("keys of the same entry size grew storage from %d to %d bytes", size, got)
	}
	for i := range keys {
		if v := s.Get(fmt.Appendf(nil, "k:%05d", i)); v == nil || *v != int64(i) {
			t.Fatalf("k:%05d: %v", i, v)
		}
		s.Delete(fmt.Appendf(nil, "k:%05d", i))
	}
	// Keys of other sizes go to the end of the arena.
	*s.Insert([]byte("short")) = 1
	*s.Insert(make([]byte, 300)) = 2
	if v := s.Get([]byte("short")); v == nil || *v != 1 {
		t.Fatalf("short key: %v", v)
	}
	if v := s.Get(make([]byte, 300)); v == nil || *v != 2 {
		t.Fatalf("long key: %v", v)
	}
	if !s.Compact(0) || s.Len() != 2 {
		t.Fatalf("with no reserve, a mostly empty shard must compact (len %d)", s.Len())
	}
	if v := s.Get([]byte("short")); v == nil || *v != 1 {
		t.Fatalf("short key after compaction: %v", v)
	}
}

// benchValue is a value the size of engine's.
type benchValue struct{ Expire, A, B int64 }

// filledTable is a table of engine's shard count holding n 16-byte keys
// (as the headline benchmark's), key i with A = i, and the keys.
func filledTable(n int) (*Table[benchValue], [][]byte) {
	tab := New[benchValue](DefaultShards)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key:%012d", i)
		s := tab.Lock(keys[i])
		s.Insert(keys[i]).A = int64(i)
		s.Unlock()
	}
	return tab, keys
}

// BenchmarkGetRandom looks up 1M keys (engine's 256 shards, 16-byte keys
// like the headline benchmark's) in random order: a working set larger than
// the caches, so its ns/op is mostly the cache misses of one lookup and of
// reading the value found.
func BenchmarkGetRandom(b *testing.B) {
	tab, keys := filledTable(1 << 20)
	order := rand.Perm(len(keys))
	b.ReportAllocs()
	b.ResetTimer()
	var sum int64
	for i := 0; i < b.N; i++ {
		k := keys[order[i&(len(order)-1)]]
		s := tab.Lock(k)
		sum += s.Get(k).A
		s.Unlock()
	}
	if sum == -1 {
		b.Log(sum)
	}
}

// TestFull: a shard refuses the key that would take its arena past the
// bound the index's offsets can address, with ErrFull, and stays whole:
// the keys before it are all there and the shard takes writes again once
// keys go.
func TestFull(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fills 256 MiB")
	}
	s := New[int64](1).Shard(0)
	big := make([]byte, 1<<20)
	var n int
	func() {
		defer func() {
			if r := recover(); r != ErrFull {
				t.Fatalf("recovered %v, want ErrFull", r)
			}
		}()
		for ; n < 1000; n++ {
			binary.BigEndian.PutUint32(big, uint32(n))
			*s.Insert(big) = int64(n)
		}
		t.Fatal("1000 MiB of keys fitted in one shard")
	}()
	if n < 200 || s.Len() != n {
		t.Fatalf("full after %d keys, Len %d", n, s.Len())
	}
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint32(big, uint32(i))
		if v := s.Get(big); v == nil || *v != int64(i) {
			t.Fatalf("key %d lost after ErrFull", i)
		}
	}
	binary.BigEndian.PutUint32(big, 0)
	s.Delete(big)
	binary.BigEndian.PutUint32(big, uint32(n))
	*s.Insert(big) = 7 // takes the deleted key's entry
	if v := s.Get(big); v == nil || *v != 7 {
		t.Fatal("no insert after a delete")
	}
}

// TestWordsAgainstMap: keys that keep words with them (InsertWords) keep
// exactly those words through inserts and deletes of their neighbours,
// reuse of free entries, Scan and Compact, beside keys that have none;
// and a key's entry is the size EntrySizeWords says.
func TestWordsAgainstMap(t *testing.T) {
	t.Parallel()
	tab := New[entry](1)
	s := tab.Shard(0)
	type want struct {
		v     entry
		words []int64
	}
	m := map[string]want{}
	rng := rand.New(rand.NewSource(7))
	check := func(step int, k string, v *entry) {
		t.Helper()
		w, ok := m[k]
		if !ok || *v != w.v {
			t.Fatalf("step %d: %q = %v, want %v (present %v)", step, k, *v, w.v, ok)
		}
		got := s.Words(v)
		if (got == nil) != (len(w.words) == 0) || len(got) != len(w.words) {
			t.Fatalf("step %d: %q has %d words (nil %v), want %d", step, k, len(got), got == nil, len(w.words))
		}
		for i := range got {
			if got[i] != w.words[i] {
				t.Fatalf("step %d: %q word %d = %d, want %d", step, k, i, got[i], w.words[i])
			}
		}
	}
	checkAll := func(step int) {
		t.Helper()
		seen, live := 0, 0
		s.Range(func(k string, v *entry) bool {
			seen++
			check(step, k, v)
			return true
		})
		for off := 0; off < len(s.arena); {
			k, n, size, free := s.entryAt(off)
			if !free {
				live++
				if want := EntrySizeWords[entry](n, len(m[string(s.arena[k:k+n])].words)); size != want {
					t.Fatalf("step %d: entry of %q is %d bytes, want %d", step, s.arena[k:k+n], size, want)
				}
			}
			off += size
		}
		if seen != len(m) || live != len(m) {
			t.Fatalf("step %d: Range saw %d keys, the arena holds %d, want %d", step, seen, live, len(m))
		}
	}
	var cursor uint64
	for step := 0; step < 100000; step++ {
		// Keys of every length up to past the one-byte length field's
		// bound (32), so that the words start at every offset in a word,
		// and far past it.
		k := fmt.Sprint("k", rng.Intn(3000))
		switch rng.Intn(10) {
		case 0, 1, 2:
			k += string(make([]byte, rng.Intn(40)))
		case 3:
			k += string(make([]byte, 300))
		}
		switch op := rng.Intn(10); {
		case op < 5:
			n := 0 // no words, a few, or past 127 (a two-byte count)
			switch rng.Intn(6) {
			case 0, 1:
			case 2:
				n = 120 + rng.Intn(20)
			default:
				n = rng.Intn(40) + 1
			}
			s.Delete([]byte(k))
			v, _ := s.InsertWords([]byte(k), maphash.Bytes(s.seed, []byte(k)), n)
			w := want{v: entry{int64(step), int64(n), uint8(step)}}
			words := s.Words(v)
			for i := range words {
				if words[i] != 0 {
					t.Fatalf("step %d: new %q word %d = %d, want 0", step, k, i, words[i])
				}
				words[i] = int64(step)<<8 | int64(i)
			}
			w.words = append([]int64(nil), words...)
			*v = w.v
			m[k] = w
		case op < 8:
			deleteChecked(t, s, m, k, step)
		default:
			if v := s.Get([]byte(k)); v != nil {
				check(step, k, v)
			} else if _, ok := m[k]; ok {
				t.Fatalf("step %d: %q missing", step, k)
			}
		}
		if step%89 == 0 {
			cursor = s.Scan(cursor, 7, func(k string, v *entry, _ byte) bool {
				check(step, k, v)
				return true
			})
		}
		if step%4999 == 0 {
			s.Compact(0)
			checkAll(step)
		}
	}
	checkAll(-1)
}
