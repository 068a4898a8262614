package engine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine/lease"
)

const leaseT0 = int64(1_767_225_600_000_000_000)

// TestLeasesInPlace runs the commands' path: acquire, renew, release and
// expiry on one key, its expiry the latest lease's, its memory accounted,
// and the key gone with its last lease.
func TestLeasesInPlace(t *testing.T) {
	e := New(clock.NewFake(leaseT0), 1)
	key := []byte("k")
	l, err := NewLeaseLimiter(2, 10e9)
	if err != nil {
		t.Fatal(err)
	}
	r, a, err := l.Acquire(e, key, leaseT0, 1, "")
	if err != nil || r.Limited || r.Remaining != 1 || len(a) != 32 || r.ResetAfter != 10_000 {
		t.Fatalf("first acquire: %+v %q %v", r, a, err)
	}
	r, b, _ := l.Acquire(e, key, leaseT0+1e9, 1, "worker-b")
	if r.Limited || b != "worker-b" || r.Remaining != 0 {
		t.Fatalf("second acquire: %+v %q", r, b)
	}
	r, c, _ := l.Acquire(e, key, leaseT0+2e9, 1, "")
	if !r.Limited || c != "" || r.RetryAfter != 8_000 || r.ResetAfter != 9_000 {
		t.Fatalf("third acquire, full: %+v %q", r, c)
	}
	if _, exp, _ := e.Peek(key, leaseT0); exp != leaseT0+11e9 {
		t.Fatalf("key expires at t0%+d, want the latest lease's t0+11s", exp-leaseT0)
	}
	if n, _ := e.KeyBytes(key, leaseT0); n != e.UsedBytes() {
		t.Fatalf("MEMORY USAGE %d, accounted %d", n, e.UsedBytes())
	}
	if exp, err := RenewLease(e, key, leaseT0+3e9, a, 20e9); err != nil || exp != leaseT0+23e9 {
		t.Fatalf("renew: %d %v", exp, err)
	}
	if _, exp, _ := e.Peek(key, leaseT0); exp != leaseT0+23e9 {
		t.Fatalf("after renew the key expires at t0%+d", exp-leaseT0)
	}
	if ok, err := ReleaseLease(e, key, leaseT0+4e9, a); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if ok, err := ReleaseLease(e, key, leaseT0+4e9, a); ok || err != nil {
		t.Fatalf("second release: %v %v, want false, nil", ok, err)
	}
	if _, exp, _ := e.Peek(key, leaseT0); exp != leaseT0+11e9 {
		t.Fatalf("after the release the key expires at t0%+d, want b's t0+11s", exp-leaseT0)
	}
	if _, err := RenewLease(e, key, leaseT0+11e9, "worker-b", 1e9); !errors.Is(err, lease.ErrNoLease) {
		t.Fatalf("renew of an expired lease: %v", err)
	}
	if e.Len() != 0 || e.UsedBytes() != 0 {
		t.Fatalf("after the last lease expired: %d keys, %d bytes", e.Len(), e.UsedBytes())
	}
	// The last release deletes the key.
	l.Acquire(e, key, leaseT0+20e9, 1, "x")
	ReleaseLease(e, key, leaseT0+20e9, "x")
	if e.Len() != 0 || e.UsedBytes() != 0 {
		t.Fatalf("after the last release: %d keys, %d bytes", e.Len(), e.UsedBytes())
	}
	// Another kind is WRONGTYPE for every lease operation.
	e.Do([]byte("s"), leaseT0, func(Entry) (Entry, bool) { return StringOfInt(7, 0), true })
	if _, _, err := l.Acquire(e, []byte("s"), leaseT0, 1, ""); !errors.Is(err, ErrWrongType) {
		t.Errorf("acquire on a string: %v", err)
	}
	if _, err := ReleaseLease(e, []byte("s"), leaseT0, "x"); !errors.Is(err, ErrWrongType) {
		t.Errorf("release on a string: %v", err)
	}
	if _, err := RenewLease(e, []byte("s"), leaseT0, "x", 1e9); !errors.Is(err, ErrWrongType) {
		t.Errorf("renew on a string: %v", err)
	}
}

// TestLeaseMemory measures the memory accounted per live lease, 100k of
// them: in one key (a semaphore of 100k permits) and one per key (a
// limit per user with one request in flight each). Accounting must equal
// MEMORY USAGE's sum and come back to zero when they are released. The
// figures are in docs/algorithms.md: go test ./engine -run TestLeaseMemory -v
func TestLeaseMemory(t *testing.T) {
	const n = 100_000
	t.Run("OneKey", func(t *testing.T) {
		e := New(clock.NewFake(leaseT0), 0)
		l, _ := NewLeaseLimiter(n, 60e9)
		key := []byte("pool")
		ids := make([]string, n)
		heapBefore := heapBytes()
		for i := range ids {
			_, id, err := l.Acquire(e, key, leaseT0, 1, "")
			if err != nil || id == "" {
				t.Fatalf("lease %d: %v", i, err)
			}
			ids[i] = id
		}
		used := e.UsedBytes()
		heapAfter := heapBytes()
		if kb, _ := e.KeyBytes(key, leaseT0); kb != used {
			t.Fatalf("MEMORY USAGE %d, accounted %d", kb, used)
		}
		t.Logf("one key, %d leases of generated ids: %d bytes accounted, %.1f per lease; Go heap grew %.1f per lease (ids kept by the test included)",
			n, used, float64(used)/n, float64(heapAfter-heapBefore)/n)
		if per := used / n; per < 32+32 || per > 200 {
			t.Errorf("%d bytes per lease: the accounting misses the lease or its id", per)
		}
		for _, id := range ids {
			if ok, _ := ReleaseLease(e, key, leaseT0, id); !ok {
				t.Fatalf("release %s: nothing released", id)
			}
		}
		if e.UsedBytes() != 0 || e.Len() != 0 {
			t.Fatalf("after releasing all: %d bytes, %d keys", e.UsedBytes(), e.Len())
		}
	})
	t.Run("KeyEach", func(t *testing.T) {
		e := New(clock.NewFake(leaseT0), 0)
		l, _ := NewLeaseLimiter(20, 60e9)
		var sum int64
		for i := 0; i < n; i++ {
			key := []byte(fmt.Sprintf("user:%08d", i))
			if _, _, err := l.Acquire(e, key, leaseT0, 1, ""); err != nil {
				t.Fatal(err)
			}
			kb, _ := e.KeyBytes(key, leaseT0)
			sum += kb
		}
		used := e.UsedBytes()
		if sum != used {
			t.Fatalf("MEMORY USAGE sums to %d, accounted %d", sum, used)
		}
		t.Logf("%d keys of 13 bytes, one lease each: %.1f bytes per key and lease", n, float64(used)/n)
		e.ExpireCycle(leaseT0+60e9, 1<<20)
		if e.UsedBytes() != 0 {
			t.Fatalf("after the leases expired: %d bytes", e.UsedBytes())
		}
	})
}

func heapBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLeaseCodec: a key's leases survive the entry's serialised form
// (snapshots, the change stream, DUMP) with their absolute expiries, and
// the copy is independent of the original.
func TestLeaseCodec(t *testing.T) {
	e := New(clock.NewFake(leaseT0), 1)
	key := []byte("k")
	l, _ := NewLeaseLimiter(3, 5e9)
	l.Acquire(e, key, leaseT0, 1, "a")
	l.Acquire(e, key, leaseT0+1e9, 1, "b")
	ent, _ := e.Get(key, leaseT0+1e9)
	b, err := ent.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := DecodeEntry(b)
	if err != nil || got.Kind != KindLease || got.Expire != leaseT0+6e9 {
		t.Fatalf("decoded %+v %v", got, err)
	}
	e2 := New(clock.NewFake(leaseT0), 1)
	e2.Do(key, leaseT0+2e9, func(Entry) (Entry, bool) { return got, true })
	// a expires at t0+5s on the copy too; b is still held until t0+6s.
	r, _, _ := l.Acquire(e2, key, leaseT0+5e9, 1, "c")
	if r.Limited || r.Remaining != 1 {
		t.Fatalf("on the copy at t0+5s: %+v, want a gone and b held", r)
	}
	if ok, _ := ReleaseLease(e, key, leaseT0+5e9-1, "a"); !ok {
		t.Fatal("the original lost a when the copy reclaimed it")
	}
}

// TestLeasesUnderContention: goroutines acquiring and releasing on one key
// never hold more than the limit between them, and every lease they were
// told is theirs to release.
func TestLeasesUnderContention(t *testing.T) {
	t.Parallel()
	e := New(clock.NewFake(leaseT0), 4)
	l, _ := NewLeaseLimiter(3, 60e9)
	key := []byte("pool")
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				r, id, err := l.Acquire(e, key, leaseT0, 1, "")
				if err != nil {
					t.Error(err)
					return
				}
				if r.Limited {
					continue
				}
				n := held.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				held.Add(-1)
				if ok, err := ReleaseLease(e, key, leaseT0, id); !ok || err != nil {
					t.Errorf("release of %s: %v %v", id, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if peak.Load() > 3 || peak.Load() < 1 {
		t.Fatalf("peak holders %d, limit 3", peak.Load())
	}
	if e.Len() != 0 || e.UsedBytes() != 0 {
		t.Fatalf("after every release: %d keys, %d bytes", e.Len(), e.UsedBytes())
	}
}
