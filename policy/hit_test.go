package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/limit"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

func newTest(t *testing.T, ps ...Policy) (*Store, *engine.Engine, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	s := NewStore(log.New(&bytes.Buffer{}, "", 0))
	for _, p := range ps {
		if err := s.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	return s, engine.New(clk, 8), clk
}

// res is a reply as the wire shows it: [limited, limit, remaining, retry_after, reset_after].
func res(r limit.Result) [5]int64 {
	l := int64(0)
	if r.Limited {
		l = 1
	}
	return [5]int64{l, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter}
}

func hit(t *testing.T, s *Store, e *engine.Engine, c *clock.Fake, name, key string, cost int64) [5]int64 {
	t.Helper()
	r, err := s.Hit(e, []byte(name), []byte(key), c.Now(), cost)
	if err != nil {
		t.Fatalf("hit %s %s: %v", name, key, err)
	}
	return res(r.Result)
}

func TestHitGCRASteps(t *testing.T) {
	t.Parallel()
	// 10 per second: one every 100 ms, at most 10 at once.
	s, e, clk := newTest(t, Policy{Name: "api", Algorithm: GCRA, Limit: 10, Period: time.Second})
	steps := []struct {
		advance time.Duration
		cost    int64
		want    [5]int64
	}{
		{0, 1, [5]int64{0, 10, 9, -1, 100}},
		{0, 0, [5]int64{0, 10, 9, -1, 100}}, // peek
		{0, 9, [5]int64{0, 10, 0, -1, 1000}},
		{0, 1, [5]int64{1, 10, 0, 100, 1000}}, // denied, not charged
		{50 * time.Millisecond, 1, [5]int64{1, 10, 0, 50, 950}},
		{50 * time.Millisecond, 1, [5]int64{0, 10, 0, -1, 1000}},
		{0, 11, [5]int64{1, 10, 0, -1, 1000}}, // can never fit
		{time.Second, 0, [5]int64{0, 10, 10, -1, 0}},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		if got := hit(t, s, e, clk, "api", "bob", st.cost); got != st.want {
			t.Errorf("step %d: %v, want %v", i, got, st.want)
		}
	}
	in, _ := s.Get("api")
	if in.Admitted != 3 || in.Denied != 3 || in.ShadowDenied != 0 {
		t.Errorf("counters admitted=%d denied=%d shadow=%d, want 3 3 0", in.Admitted, in.Denied, in.ShadowDenied)
	}
}

func TestHitBurst(t *testing.T) {
	t.Parallel()
	// 100 a minute (one every 600 ms), at most 20 at once.
	s, e, clk := newTest(t, Policy{Name: "api", Algorithm: GCRA, Limit: 100, Period: time.Minute, Burst: 20})
	if got, want := hit(t, s, e, clk, "api", "k", 20), [5]int64{0, 20, 0, -1, 12000}; got != want {
		t.Fatalf("burst of 20: %v, want %v", got, want)
	}
	if got, want := hit(t, s, e, clk, "api", "k", 1), [5]int64{1, 20, 0, 600, 12000}; got != want {
		t.Fatalf("21st: %v, want %v", got, want)
	}
}

func TestHitUnknownPolicy(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t)
	_, err := s.Hit(e, []byte("nope"), []byte("k"), clk.Now(), 1)
	if !errors.Is(err, ErrUnknown) || err.Error() != "unknown policy 'nope'" {
		t.Fatalf("err = %v, want unknown policy 'nope'", err)
	}
}

func TestPoliciesNeverShareState(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t,
		Policy{Name: "a", Algorithm: GCRA, Limit: 1, Period: time.Minute},
		Policy{Name: "b", Algorithm: GCRA, Limit: 1, Period: time.Minute})
	hit(t, s, e, clk, "a", "bob", 1)
	if got := hit(t, s, e, clk, "a", "bob", 1); got[0] != 1 {
		t.Fatalf("a twice: %v, want limited", got)
	}
	if got := hit(t, s, e, clk, "b", "bob", 1); got[0] != 0 {
		t.Fatalf("b after a: %v, want admitted", got)
	}
	// The state is an ordinary key per (policy, key); the client key itself is untouched.
	for _, k := range []string{"rl:a:bob", "rl:b:bob"} {
		if ent, ok := e.Get([]byte(k), clk.Now()); !ok || ent.Kind != engine.KindGCRA {
			t.Errorf("%s: %+v %v, want a gcra entry", k, ent, ok)
		}
	}
	if _, ok := e.Get([]byte("bob"), clk.Now()); ok {
		t.Error("the client key itself was created")
	}
	// Deleting the policy key resets that client under that policy only.
	e.Delete([]byte("rl:a:bob"), clk.Now())
	if got := hit(t, s, e, clk, "a", "bob", 1); got[0] != 0 {
		t.Fatalf("a after DEL: %v, want admitted", got)
	}
}

func TestShadowNeverDenies(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t, Policy{Name: "trial", Algorithm: GCRA, Limit: 2, Period: time.Minute, Shadow: true})
	for i := 0; i < 5; i++ {
		if got := hit(t, s, e, clk, "trial", "k", 1); got[0] != 0 || got[3] != -1 {
			t.Fatalf("hit %d: %v, want admitted", i, got)
		}
	}
	in, _ := s.Get("trial")
	if in.Admitted != 5 || in.Denied != 0 || in.ShadowDenied != 3 {
		t.Errorf("counters admitted=%d denied=%d shadow=%d, want 5 0 3", in.Admitted, in.Denied, in.ShadowDenied)
	}
	// Would-be denials are not charged: the key is exactly at its limit.
	clk.Advance(30 * time.Second)
	if got := hit(t, s, e, clk, "trial", "k", 0); got[2] != 1 {
		t.Errorf("after half a period: %v, want remaining 1", got)
	}
}

// Changing a GCRA policy's rate keeps each client's usage counted in
// requests: 5 used of 10 a minute is 5 used of 20, and 5 used of 5.
func TestGCRAChangeKeepsUsage(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t, Policy{Name: "api", Algorithm: GCRA, Limit: 10, Period: time.Minute})
	hit(t, s, e, clk, "api", "k", 5)
	steps := []struct {
		limit int64
		want  [5]int64
	}{
		{20, [5]int64{0, 20, 15, -1, 15000}},
		{5, [5]int64{0, 5, 0, -1, 60000}},
		{10, [5]int64{0, 10, 5, -1, 30000}},
	}
	for i, st := range steps {
		if err := s.Set(Policy{Name: "api", Algorithm: GCRA, Limit: st.limit, Period: time.Minute}); err != nil {
			t.Fatal(err)
		}
		if got := hit(t, s, e, clk, "api", "k", 0); got != st.want {
			t.Errorf("step %d (limit %d): %v, want %v", i, st.limit, got, st.want)
		}
	}
	// Lowered to 5 with 5 used: denied until one request has drained at the new rate (12 s).
	s.Set(Policy{Name: "api", Algorithm: GCRA, Limit: 5, Period: time.Minute})
	if got := hit(t, s, e, clk, "api", "k", 1); got != [5]int64{1, 5, 0, 12000, 60000} {
		t.Errorf("over the lowered limit: %v", got)
	}
	clk.Advance(12 * time.Second)
	if got := hit(t, s, e, clk, "api", "k", 1); got[0] != 0 {
		t.Errorf("after 12 s at the new rate: %v, want admitted", got)
	}
}

func TestStringUnderPolicyKeyIsWrongType(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t, Policy{Name: "a", Algorithm: GCRA, Limit: 1, Period: time.Minute})
	e.Do([]byte("rl:a:k"), clk.Now(), func(engine.Entry) (engine.Entry, bool) {
		return engine.Entry{Kind: engine.KindString, Ext: []byte("v")}, true
	})
	if _, err := s.Hit(e, []byte("a"), []byte("k"), clk.Now(), 1); !errors.Is(err, engine.ErrWrongType) {
		t.Fatalf("err = %v, want WRONGTYPE", err)
	}
	if _, _, err := s.HitAll(e, []Pair{{[]byte("a"), []byte("k")}}, clk.Now(), 1); !errors.Is(err, engine.ErrWrongType) {
		t.Fatalf("HitAll err = %v, want WRONGTYPE", err)
	}
}

func pairs(kv ...string) []Pair {
	out := make([]Pair, len(kv)/2)
	for i := range out {
		out[i] = Pair{[]byte(kv[2*i]), []byte(kv[2*i+1])}
	}
	return out
}

func hitAll(t *testing.T, s *Store, e *engine.Engine, c *clock.Fake, cost int64, kv ...string) (bool, [][5]int64) {
	t.Helper()
	limited, rs, err := s.HitAll(e, pairs(kv...), c.Now(), cost)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][5]int64, len(rs))
	for i, r := range rs {
		out[i] = res(r.Result)
	}
	return limited, out
}

func TestHitAllAllOrNothing(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t,
		Policy{Name: "per-second", Algorithm: GCRA, Limit: 2, Period: time.Second},
		Policy{Name: "per-day", Algorithm: GCRA, Limit: 1, Period: 24 * time.Hour})
	limited, rs := hitAll(t, s, e, clk, 1, "per-second", "u1", "per-day", "u1")
	if limited || rs[0] != [5]int64{0, 2, 1, -1, 500} || rs[1] != [5]int64{0, 1, 0, -1, 86400000} {
		t.Fatalf("first: %v %v", limited, rs)
	}
	// per-day denies: per-second must not be charged, and answers its uncharged state.
	limited, rs = hitAll(t, s, e, clk, 1, "per-second", "u1", "per-day", "u1")
	if !limited || rs[0] != [5]int64{0, 2, 1, -1, 500} || rs[1] != [5]int64{1, 1, 0, 86400000, 86400000} {
		t.Fatalf("second: %v %v", limited, rs)
	}
	if got := hit(t, s, e, clk, "per-second", "u1", 0); got[2] != 1 {
		t.Fatalf("per-second was charged by a denied HITALL: %v", got)
	}
	ps, _ := s.Get("per-second")
	pd, _ := s.Get("per-day")
	if ps.Admitted != 1 || ps.Denied != 0 || pd.Admitted != 1 || pd.Denied != 1 {
		t.Errorf("counters: per-second %d/%d, per-day %d/%d; want 1/0 and 1/1", ps.Admitted, ps.Denied, pd.Admitted, pd.Denied)
	}
}

func TestHitAllSamePairTwiceChargesTwice(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t, Policy{Name: "a", Algorithm: GCRA, Limit: 3, Period: time.Minute})
	limited, rs := hitAll(t, s, e, clk, 1, "a", "k", "a", "k")
	if limited || rs[0][2] != 2 || rs[1][2] != 1 {
		t.Fatalf("%v %v: want remaining 2 then 1", limited, rs)
	}
	limited, rs = hitAll(t, s, e, clk, 1, "a", "k", "a", "k")
	if !limited || rs[0] != [5]int64{0, 3, 1, -1, 40000} || rs[1][0] != 1 {
		t.Fatalf("%v %v: want the second pair denied and nothing charged", limited, rs)
	}
	if got := hit(t, s, e, clk, "a", "k", 1); got[0] != 0 || got[2] != 0 {
		t.Fatalf("after the denied HITALL: %v, want one left", got)
	}
}

func TestHitAllPeekAndErrorsWriteNothing(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t, Policy{Name: "a", Algorithm: GCRA, Limit: 3, Period: time.Minute})
	if limited, rs := hitAll(t, s, e, clk, 0, "a", "k1", "a", "k2"); limited || rs[0][2] != 3 {
		t.Fatalf("peek: %v %v", limited, rs)
	}
	if _, _, err := s.HitAll(e, pairs("a", "k1", "nope", "k2"), clk.Now(), 1); !errors.Is(err, ErrUnknown) {
		t.Fatalf("err = %v, want unknown policy", err)
	}
	if n := e.Len(); n != 0 {
		t.Fatalf("%d keys written, want none", n)
	}
}

func TestHitAllShadowPair(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t,
		Policy{Name: "real", Algorithm: GCRA, Limit: 5, Period: time.Minute},
		Policy{Name: "trial", Algorithm: GCRA, Limit: 1, Period: time.Minute, Shadow: true})
	hitAll(t, s, e, clk, 1, "real", "k", "trial", "k")
	limited, rs := hitAll(t, s, e, clk, 1, "real", "k", "trial", "k")
	if limited || rs[0][2] != 3 || rs[1][0] != 0 {
		t.Fatalf("%v %v: the shadow pair must not deny", limited, rs)
	}
	tr, _ := s.Get("trial")
	if tr.Admitted != 2 || tr.ShadowDenied != 1 {
		t.Errorf("trial admitted=%d shadow=%d, want 2 and 1", tr.Admitted, tr.ShadowDenied)
	}
}

// Under concurrent RL.HITALLs across shards no call is ever half applied:
// every admitted call charged both keys, every denied call neither.
func TestHitAllConcurrentAtomic(t *testing.T) {
	t.Parallel()
	s, e, clk := newTest(t,
		Policy{Name: "wide", Algorithm: GCRA, Limit: 50, Period: time.Hour},
		Policy{Name: "narrow", Algorithm: GCRA, Limit: 30, Period: time.Hour})
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				// Alternate the order so shard locks are requested both ways round.
				kv := []string{"wide", "x", "narrow", "y"}
				if (g+i)%2 == 1 {
					kv = []string{"narrow", "y", "wide", "x"}
				}
				limited, _, err := s.HitAll(e, pairs(kv...), clk.Now(), 1)
				if err != nil {
					t.Error(err)
					return
				}
				if !limited {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}(g)
	}
	wg.Wait()
	if admitted != 30 {
		t.Fatalf("%d calls admitted, want exactly 30", admitted)
	}
	if got := hit(t, s, e, clk, "wide", "x", 0); got[2] != 20 {
		t.Fatalf("wide remaining %d, want 20: a denied call charged it", got[2])
	}
}

func TestFileWinsAndRuntimeLayer(t *testing.T) {
	t.Parallel()
	s, _, _ := newTest(t, Policy{Name: "b", Algorithm: GCRA, Limit: 7, Period: time.Second})
	s.setFile([]Policy{{Name: "a", Algorithm: GCRA, Limit: 1, Period: time.Second}, {Name: "b", Algorithm: GCRA, Limit: 2, Period: time.Second}})
	if err := s.Set(Policy{Name: "a", Algorithm: GCRA, Limit: 3, Period: time.Second}); !errors.Is(err, ErrFileOwned) {
		t.Fatalf("SET over a file policy: %v, want ErrFileOwned", err)
	}
	if _, err := s.Del("a"); !errors.Is(err, ErrFileOwned) {
		t.Fatalf("DEL of a file policy: %v, want ErrFileOwned", err)
	}
	if in, _ := s.Get("b"); in.Limit != 2 || in.Source != FromFile {
		t.Fatalf("b = %+v, want the file's", in)
	}
	s.setFile(nil) // the file stops defining b: the runtime one is back
	if in, _ := s.Get("b"); in.Limit != 7 || in.Source != FromRuntime {
		t.Fatalf("b = %+v, want the runtime one", in)
	}
	if _, ok := s.Get("a"); ok {
		t.Fatal("a outlived the file that defined it")
	}
	if ok, err := s.Del("b"); !ok || err != nil {
		t.Fatalf("DEL b: %v %v", ok, err)
	}
	if ok, _ := s.Del("b"); ok {
		t.Fatal("DEL b twice reported a deletion")
	}
}

func TestSetValidates(t *testing.T) {
	t.Parallel()
	s, _, _ := newTest(t)
	bad := []struct {
		p     Policy
		field string
	}{
		{Policy{Name: "", Algorithm: GCRA, Limit: 1, Period: time.Second}, "name"},
		{Policy{Name: "a:b", Algorithm: GCRA, Limit: 1, Period: time.Second}, "name"},
		{Policy{Name: "a", Algorithm: "GCRA", Limit: 1, Period: time.Second}, "algorithm"},
		{Policy{Name: "a", Algorithm: GCRA, Limit: 0, Period: time.Second}, "limit"},
		{Policy{Name: "a", Algorithm: GCRA, Limit: 1, Period: 0}, "period"},
		{Policy{Name: "a", Algorithm: GCRA, Limit: 10, Period: 5}, "limit"}, // more than one per ns
		{Policy{Name: "a", Algorithm: GCRA, Limit: 1, Period: time.Duration(1 << 62), Burst: 1 << 40}, "limit"},
		{Policy{Name: "a", Algorithm: SlidingLog, Limit: 1, Period: time.Second, Burst: 2}, "burst"},
	}
	for _, tc := range bad {
		err := s.Set(tc.p)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Set(%+v) = %v, want an error about %s", tc.p, err, tc.field)
		}
	}
	if len(s.List()) != 0 {
		t.Fatal("an invalid policy was stored")
	}
}

func TestRuntimeRoundTrip(t *testing.T) {
	t.Parallel()
	a, _, _ := newTest(t,
		Policy{Name: "x", Algorithm: GCRA, Limit: 3, Period: 1500 * time.Millisecond, Burst: 2, Shadow: true},
		Policy{Name: "y", Algorithm: GCRA, Limit: 9, Period: time.Hour})
	b, _, _ := newTest(t)
	data, err := a.MarshalRuntime()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.UnmarshalRuntime(data); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a.Runtime()) != fmt.Sprint(b.Runtime()) {
		t.Fatalf("round trip: %v, want %v", b.Runtime(), a.Runtime())
	}
	for _, bad := range []string{`{"version":2,"policies":[]}`, `{"version":1,"policies":[{"name":"z","algorithm":"gcra","limit":0,"period_ns":1}]}`, `nope`} {
		if err := b.UnmarshalRuntime([]byte(bad)); err == nil {
			t.Errorf("%s: loaded, want an error", bad)
		}
	}
	if len(b.Runtime()) != 2 {
		t.Fatal("a failed load changed the runtime policies")
	}
}

// The watcher applies a good change, keeps the last good rules on a broken
// one and logs why once. poll is called directly: no sleeping.
func TestWatchPoll(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := NewStore(log.New(&logs, "", 0))
	path := filepath.Join(t.TempDir(), "limits.yaml")
	write := func(limit string) {
		t.Helper()
		src := "policies:\n  - name: api\n    algorithm: gcra\n    limit: " + limit + "\n    period: 1m\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10")
	if err := s.LoadRules(path); err != nil {
		t.Fatal(err)
	}
	// Each write changes the size: timestamps alone may not tell two
	// writes a millisecond apart from each other.
	write("200")
	s.poll()
	if in, _ := s.Get("api"); in.Limit != 200 {
		t.Fatalf("limit %d after a good change, want 200", in.Limit)
	}
	write("zero")
	s.poll()
	s.poll()
	if in, _ := s.Get("api"); in.Limit != 200 {
		t.Fatalf("limit %d after a broken change, want the last good 200", in.Limit)
	}
	if n := strings.Count(logs.String(), "field limit: must be a whole number"); n != 1 {
		t.Fatalf("broken file logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), path+":4: policies[0] (api): field limit") {
		t.Fatalf("log does not name the line and field:\n%s", logs.String())
	}
	if err := s.Reload(); err == nil {
		t.Fatal("Reload of a broken file succeeded")
	}
	os.Remove(path)
	s.poll()
	if in, _ := s.Get("api"); in.Limit != 200 {
		t.Fatal("a deleted rules file dropped the policies")
	}
	write("30")
	s.poll()
	if in, _ := s.Get("api"); in.Limit != 30 {
		t.Fatalf("limit %d after the file came back, want 30", in.Limit)
	}
}

func TestLoadRulesBrokenAtStart(t *testing.T) {
	t.Parallel()
	s, _, _ := newTest(t)
	path := filepath.Join(t.TempDir(), "limits.yaml")
	os.WriteFile(path, []byte("policies:\n  - name: a\n"), 0o644)
	if err := s.LoadRules(path); err == nil {
		t.Fatal("a broken file loaded")
	}
	if s.RulesPath() != "" {
		t.Fatal("a failed LoadRules kept the path")
	}
	if err := s.Reload(); !errors.Is(err, ErrNoRulesFile) {
		t.Fatalf("Reload without a file: %v", err)
	}
}

// A rules file over MaxRulesFileBytes is refused by its size, unread: the
// rules in effect stay, and Reload says why.
func TestRulesFileOverTheCap(t *testing.T) {
	t.Parallel()
	s := NewStore(log.New(io.Discard, "", 0))
	path := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, []byte("policies:\n  - name: api\n    algorithm: gcra\n    limit: 10\n    period: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.LoadRules(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, MaxRulesFileBytes+1); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "more than the 16777216 a rules file may hold") {
		t.Fatalf("Reload of a file over the cap: %v", err)
	}
	if in, _ := s.Get("api"); in.Limit != 10 {
		t.Fatalf("limit %d after a refused file, want the last good 10", in.Limit)
	}
}
