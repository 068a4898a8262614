package analytics

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/internal/benchcpu"
)

const t0 = int64(1_700_000_040) * 1e9 // a minute's start, Unix ns

// zipf is a skewed stream: n draws over keys distinct keys, key i drawn
// about as often as 1/(i+1)^1.1, and the true count of every key.
func zipf(n, keys int) ([]string, map[string]uint64) {
	rng := rand.New(rand.NewSource(1))
	z := rand.NewZipf(rng, 1.1, 1, uint64(keys-1))
	stream := make([]string, n)
	truth := map[string]uint64{}
	for i := range stream {
		k := fmt.Sprintf("user:%d", z.Uint64())
		stream[i] = k
		truth[k]++
	}
	return stream, truth
}

// TestSketchErrorBound: on a skewed stream of many more keys than slots,
// every monitored key's count is an upper bound, count - error a lower
// bound, the error at most N/Slots, and every key heavier than N/Slots is
// monitored.
func TestSketchErrorBound(t *testing.T) {
	stream, truth := zipf(100_000, 50_000)
	var s Sketch
	hashes := map[string]uint64{}
	for i, k := range stream {
		h, ok := hashes[k]
		if !ok {
			h = uint64(len(hashes))*0x9e3779b97f4a7c15 + 1
			hashes[k] = h
		}
		s.Add(h, []byte(stream[i]), 1)
	}
	n := uint64(len(stream))
	if s.Total() != n {
		t.Fatalf("total %d, want %d", s.Total(), n)
	}
	bound := n / Slots
	seen := map[string]bool{}
	for _, e := range s.Entries() {
		seen[e.Key] = true
		tr := truth[e.Key]
		if e.Count < tr || e.Count-e.Error > tr {
			t.Errorf("%s: count %d error %d, true %d: not within [count-error, count]", e.Key, e.Count, e.Error, tr)
		}
		if e.Error > bound {
			t.Errorf("%s: error %d over N/Slots = %d", e.Key, e.Error, bound)
		}
	}
	for k, tr := range truth {
		if tr > bound && !seen[k] {
			t.Errorf("%s weighs %d > N/Slots = %d and is not monitored", k, tr, bound)
		}
	}
	if s.Min() > bound {
		t.Errorf("min %d over N/Slots %d", s.Min(), bound)
	}
}

// TestSketchMemoryIsFixed: a sketch's size does not depend on the keys it
// saw, and adding a key never allocates.
func TestSketchMemoryIsFixed(t *testing.T) {
	if sz := unsafe.Sizeof(Sketch{}); sz > 1024 {
		t.Errorf("Sketch is %d bytes, over the 1 KiB its doc states", sz)
	}
	var s Sketch
	key := make([]byte, 100)
	i := uint64(0)
	allocs := testing.AllocsPerRun(100_000, func() {
		i++
		k := strconv.AppendUint(append(key[:0], "key-"...), i, 10)
		s.Add(i*0x9e3779b97f4a7c15, k, 1)
	})
	if allocs != 0 {
		t.Errorf("Add allocates %v times per key", allocs)
	}
}

// TestGroupBytes: the memory a group holds is the figure stated.
func TestGroupBytes(t *testing.T) {
	got := unsafe.Sizeof(group{}) + unsafe.Sizeof(History{}) + HistorySeconds*unsafe.Sizeof([3]uint32{}) + HistoryMinutes*unsafe.Sizeof([3]uint64{})
	if got != GroupBytes {
		t.Errorf("a group holds %d bytes, GroupBytes says %d", got, GroupBytes)
	}
}

// TestRecordAllocatesNothing: once a policy is tracked, recording a
// decision on a key never seen allocates nothing, however many keys.
func TestRecordAllocatesNothing(t *testing.T) {
	r := NewRecorder(time.Minute)
	key := make([]byte, 0, 32)
	r.Record(Policy, "api", []byte("x"), t0, Decision{Admitted: true, Limit: 10, Remaining: 1})
	i := 0
	allocs := testing.AllocsPerRun(200_000, func() {
		i++
		key = strconv.AppendInt(append(key[:0], "ip:"...), int64(i), 10)
		r.Record(Policy, "api", key, t0+int64(i)*1000, Decision{Denied: i%3 == 0, Admitted: i%3 != 0, Limit: 10, Remaining: int64(i % 10)})
	})
	if allocs != 0 {
		t.Errorf("Record allocates %v times per decision", allocs)
	}
}

// TestTopOnASkewedStream: the recorder's rankings, merged over its
// stripes, hold every key within [count-error, count] and name the
// heaviest keys in order.
func TestTopOnASkewedStream(t *testing.T) {
	stream, truth := zipf(200_000, 100_000)
	r := NewRecorder(time.Hour)
	for _, k := range stream {
		r.Record(Command, "cl.throttle", []byte(k), t0, Decision{Denied: true})
	}
	top, ok := r.Top(Command, "cl.throttle", Denied, 10, t0)
	if !ok || len(top) != 10 {
		t.Fatalf("top: %v, %v", top, ok)
	}
	for i, e := range top {
		tr := truth[e.Key]
		if e.Count < tr || e.Count-e.Error > tr {
			t.Errorf("%d %s: count %d error %d, true %d", i, e.Key, e.Count, e.Error, tr)
		}
		// The heaviest keys of a Zipf stream are user:0, user:1, ...
		if want := fmt.Sprintf("user:%d", i); e.Key != want {
			t.Errorf("rank %d is %s (count %d), want %s (true %d)", i, e.Key, e.Count, want, truth[want])
		}
	}
	if top[0].Error != 0 {
		t.Errorf("the heaviest key's error is %d, want 0 (counted from its first decision)", top[0].Error)
	}
}

// TestRankings: a decision counts in HITS always, in DENIED when refused or
// would have been (shadow), in NEAR when admitted with a fifth of the limit
// or less left; one that is none of admitted, denied, shadow-denied is not
// recorded.
func TestRankings(t *testing.T) {
	r := NewRecorder(time.Minute)
	rec := func(key string, d Decision) { r.Record(Policy, "p", []byte(key), t0, d) }
	rec("denied", Decision{Denied: true, Limit: 10})
	rec("shadow", Decision{Admitted: true, ShadowDenied: true, Limit: 10})
	rec("near", Decision{Admitted: true, Limit: 10, Remaining: 2})
	rec("far", Decision{Admitted: true, Limit: 10, Remaining: 3})
	rec("none", Decision{Limit: 10})
	keys := func(rk Ranking) []string {
		top, _ := r.Top(Policy, "p", rk, 10, t0)
		var out []string
		for _, e := range top {
			out = append(out, e.Key)
		}
		return out
	}
	for _, c := range []struct {
		rk   Ranking
		want string
	}{{Denied, "[denied shadow]"}, {Hits, "[denied far near shadow]"}, {Near, "[near]"}} {
		if got := fmt.Sprint(keys(c.rk)); got != c.want {
			t.Errorf("%s: %s, want %s", c.rk, got, c.want)
		}
	}
}

// TestTopSlidesOverTwoPeriods: the rankings read at an instant count the
// period holding it and the one before, on the fake clock's time.
func TestTopSlidesOverTwoPeriods(t *testing.T) {
	clk := clock.NewFake(t0)
	r := NewRecorder(10 * time.Second)
	hit := func(key string, n int) {
		for i := 0; i < n; i++ {
			r.Record(Command, "tb.take", []byte(key), clk.Now(), Decision{Denied: true})
		}
	}
	count := func(key string) uint64 {
		top, _ := r.Top(Command, "tb.take", Denied, 10, clk.Now())
		for _, e := range top {
			if e.Key == key {
				return e.Count
			}
		}
		return 0
	}
	steps := []struct {
		advance  time.Duration
		hitA     int
		hitB     int
		wantA    uint64
		wantB    uint64
		describe string
	}{
		{0, 3, 0, 3, 0, "period 0: a 3"},
		{9 * time.Second, 0, 2, 3, 2, "still period 0: b 2"},
		{1 * time.Second, 1, 0, 4, 2, "period 1 reads period 0 too"},
		{10 * time.Second, 0, 0, 1, 0, "period 2: period 0 is gone, period 1's a remains"},
		{30 * time.Second, 0, 0, 0, 0, "period 5: all gone"},
		{0, 0, 5, 0, 5, "period 5: b 5"},
		{-3 * time.Second, 0, 1, 0, 6, "time back: counted in the current period"},
	}
	for i, s := range steps {
		clk.Set(clk.Now() + int64(s.advance))
		hit("a", s.hitA)
		hit("b", s.hitB)
		if a, b := count("a"), count("b"); a != s.wantA || b != s.wantB {
			t.Errorf("step %d (%s): a=%d b=%d, want %d %d", i, s.describe, a, b, s.wantA, s.wantB)
		}
	}
}

// TestMergeKeepsBounds: a key one period does not monitor (it was evicted
// there) takes that period's smallest count into both its count and its
// error, so the bounds hold across periods.
func TestMergeKeepsBounds(t *testing.T) {
	var prev, cur Sketch
	// prev: 16 keys of 5, then x (evicting one, count 6, error 5)
	for i := 0; i < Slots; i++ {
		for j := 0; j < 5; j++ {
			prev.Add(uint64(i+1), []byte(fmt.Sprint("k", i)), 1)
		}
	}
	prev.Add(100, []byte("x"), 1)
	cur.Add(200, []byte("y"), 7)
	got := map[string]Entry{}
	for _, e := range merge(&cur, &prev) {
		got[e.Key] = e
	}
	if e := got["y"]; e.Count != 7+prev.Min() || e.Error != prev.Min() {
		t.Errorf("y: %+v, want count %d error %d", e, 7+prev.Min(), prev.Min())
	}
	if e := got["x"]; e.Count != 6 || e.Error != 5 {
		t.Errorf("x: %+v, want count 6 error 5 (cur is not full: min 0)", e)
	}
}

// TestLongKeysAreTruncated: a key longer than KeyBytes is shown by its
// start, marked, and still told apart from another with the same start.
func TestLongKeysAreTruncated(t *testing.T) {
	r := NewRecorder(time.Minute)
	long := make([]byte, KeyBytes+10)
	for i := range long {
		long[i] = 'a'
	}
	other := append([]byte(nil), long...)
	other[len(other)-1] = 'b'
	r.Record(Policy, "p", long, t0, Decision{Admitted: true})
	r.Record(Policy, "p", long, t0, Decision{Admitted: true})
	r.Record(Policy, "p", other, t0, Decision{Admitted: true})
	top, _ := r.Top(Policy, "p", Hits, 10, t0)
	if len(top) != 2 || top[0].Count != 2 || top[1].Count != 1 || !top[0].Truncated || len(top[0].Key) != KeyBytes {
		t.Errorf("top: %+v", top)
	}
}

// TestHistoryRotates: per-second and per-minute counts follow the fake
// clock: an hour later the seconds are gone and the minutes remain, a day
// later both are gone; a decision from an earlier second still held goes
// where it belongs.
func TestHistoryRotates(t *testing.T) {
	clk := clock.NewFake(t0)
	r := NewRecorder(time.Minute)
	rec := func(d Decision, n int) {
		for i := 0; i < n; i++ {
			r.Record(Policy, "api", []byte(fmt.Sprint("k", i)), clk.Now(), d)
		}
	}
	adm, den, sh := Decision{Admitted: true}, Decision{Denied: true}, Decision{Admitted: true, ShadowDenied: true}
	rec(adm, 5)
	rec(den, 2)
	clk.Advance(time.Second)
	rec(sh, 3)
	clk.Advance(1500 * time.Millisecond) // t0+2.5s
	sec := t0 / 1e9
	want := []Point{{sec, 5, 2, 0}, {sec + 1, 3, 0, 3}, {sec + 2, 0, 0, 0}}
	got, ok := r.Seconds(Policy, "api", clk.Now(), 3)
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("seconds: %v, want %v", got, want)
	}
	// time going back one second: counted in that second
	r.Record(Policy, "api", []byte("late"), clk.Now()-2e9, den)
	got, _ = r.Seconds(Policy, "api", clk.Now(), 3)
	if got[0].Denied != 3 {
		t.Errorf("a late decision: %v, want 3 denied in the first second", got)
	}
	mins, _ := r.Minutes(Policy, "api", clk.Now(), 2)
	if want := []Point{{sec - 60, 0, 0, 0}, {sec, 8, 3, 3}}; fmt.Sprint(mins) != fmt.Sprint(want) {
		t.Errorf("minutes: %v, want %v", mins, want)
	}

	clk.Advance(time.Hour)
	rec(adm, 1) // the ring moves on
	got, _ = r.Seconds(Policy, "api", clk.Now(), HistorySeconds)
	if len(got) != HistorySeconds {
		t.Fatalf("%d seconds, want %d", len(got), HistorySeconds)
	}
	var total uint64
	for _, p := range got {
		total += p.Admitted + p.Denied + p.ShadowDenied
	}
	if total != 1 || got[len(got)-1].Admitted != 1 {
		t.Errorf("an hour later the seconds hold %d decisions (want only the new one)", total)
	}
	mins, _ = r.Minutes(Policy, "api", clk.Now(), 61)
	if mins[0].Time != sec || mins[0].Admitted != 8 || mins[60].Admitted != 1 {
		t.Errorf("an hour later the minutes: first %v last %v", mins[0], mins[60])
	}
	clk.Advance(24 * time.Hour)
	mins, _ = r.Minutes(Policy, "api", clk.Now(), HistoryMinutes)
	for _, p := range mins {
		if p.Admitted+p.Denied+p.ShadowDenied != 0 {
			t.Fatalf("a day later minute %d still holds %v", p.Time, p)
		}
	}
	if _, ok := r.Seconds(Policy, "other", clk.Now(), 1); ok {
		t.Error("a policy never recorded has a history")
	}
}

// TestGroupsAreBounded: past MaxGroups, decisions of new names are
// dropped and counted.
func TestGroupsAreBounded(t *testing.T) {
	r := NewRecorder(time.Minute)
	for i := 0; i < MaxGroups+3; i++ {
		r.Record(Policy, fmt.Sprint("p", i), []byte("k"), t0, Decision{Admitted: true})
	}
	if n := len(r.Names(Policy)); n != MaxGroups {
		t.Errorf("%d groups, want %d", n, MaxGroups)
	}
	if r.Dropped() != 3 {
		t.Errorf("dropped %d, want 3", r.Dropped())
	}
}

// TestViewIsJSON: the whole view encodes, with empty rankings as [] and
// the history asked for.
func TestViewIsJSON(t *testing.T) {
	r := NewRecorder(time.Minute)
	r.Record(Policy, "api", []byte("user:1"), t0, Decision{Denied: true, Limit: 5})
	r.Record(Command, "rl.hit", []byte("user:1"), t0, Decision{Denied: true, Limit: 5})
	v := r.View(t0, ViewOptions{Seconds: 2, Minutes: 1})
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":1700000040000,"period_seconds":60,"dropped":0,"policies":[{"name":"api","denied":[{"key":"user:1","count":1,"error":0}],"hits":[{"key":"user:1","count":1,"error":0}],"near":[],` +
		`"seconds":[{"time":1700000039,"admitted":0,"denied":0,"shadow_denied":0},{"time":1700000040,"admitted":0,"denied":1,"shadow_denied":0}],"minutes":[{"time":1700000040,"admitted":0,"denied":1,"shadow_denied":0}]}],` +
		`"commands":[{"name":"rl.hit","denied":[{"key":"user:1","count":1,"error":0}],"hits":[{"key":"user:1","count":1,"error":0}],"near":[],` +
		`"seconds":[{"time":1700000039,"admitted":0,"denied":0,"shadow_denied":0},{"time":1700000040,"admitted":0,"denied":1,"shadow_denied":0}],"minutes":[{"time":1700000040,"admitted":0,"denied":1,"shadow_denied":0}]}]}`
	if string(b) != want {
		t.Errorf("view:\n%s\nwant\n%s", b, want)
	}
}

// BenchmarkRecord is the hot path of every limiter decision with
// analytics on: one Record, on one hot key (always monitored) and on keys
// spread over 100k (each a miss that takes a slot over), with a denial in
// four and a second's history flush every 1000 decisions. cpu-ns/op is
// the process's CPU time per decision; "parallel" runs it from every
// -cpu goroutine on one policy.
func BenchmarkRecord(b *testing.B) {
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("user:", rand.Intn(100_000)))
	}
	decide := func(i int) Decision {
		return Decision{Admitted: i%4 != 0, Denied: i%4 == 0, Limit: 10, Remaining: int64(i % 10)}
	}
	for _, c := range []struct {
		name string
		key  func(i int) []byte
	}{{"hot", func(int) []byte { return keys[0] }}, {"spread", func(i int) []byte { return keys[i&(1<<16-1)] }}} {
		b.Run(c.name, func(b *testing.B) {
			r := NewRecorder(time.Minute)
			b.ReportAllocs()
			defer benchcpu.Report(b)()
			for i := 0; b.Loop(); i++ {
				r.Record(Policy, "api", c.key(i), t0+int64(i)*1000, decide(i))
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		r := NewRecorder(time.Minute)
		b.ReportAllocs()
		defer benchcpu.Report(b)()
		b.RunParallel(func(pb *testing.PB) {
			i := rand.Intn(1 << 16)
			for pb.Next() {
				i++
				r.Record(Policy, "api", keys[i&(1<<16-1)], t0+int64(i)*1000, decide(i))
			}
		})
	})
}

// TestConcurrentRecordAndRead: goroutines record while others read (go
// test -race); every decision is in the history once the writers are done.
func TestConcurrentRecordAndRead(t *testing.T) {
	r := NewRecorder(time.Second)
	const writers, each = 4, 5000
	done := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-done:
				return
			default:
				r.Top(Policy, "api", Hits, 5, t0)
				r.Seconds(Policy, "api", t0+3e9, 5)
				r.View(t0, ViewOptions{Seconds: 3})
			}
		}
	}()
	errs := make(chan int, writers)
	for w := 0; w < writers; w++ {
		go func(w int) {
			key := make([]byte, 0, 16)
			for i := 0; i < each; i++ {
				key = strconv.AppendInt(append(key[:0], 'k'), int64(i%100), 10)
				r.Record(Policy, "api", key, t0+int64(i)*500_000, Decision{Admitted: true, Limit: 10, Remaining: 5})
			}
			errs <- w
		}(w)
	}
	for w := 0; w < writers; w++ {
		<-errs
	}
	close(done)
	<-readerDone
	pts, _ := r.Seconds(Policy, "api", t0+3e9, 4)
	var total uint64
	for _, p := range pts {
		total += p.Admitted
	}
	if total != writers*each {
		t.Errorf("history holds %d admissions, want %d", total, writers*each)
	}
}
