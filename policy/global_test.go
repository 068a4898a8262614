package policy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakePeers is Peers over a real PeerTable of two peers, with counts a
// test sets for the first.
type fakePeers struct {
	tab     *PeerTable
	regions int
}

func newFakePeers() *fakePeers {
	return &fakePeers{tab: NewPeerTable(2, func() string { return KeepLast }), regions: 3}
}

func (f *fakePeers) Table() *PeerTable { return f.tab }
func (f *fakePeers) Regions() int      { return f.regions }
func (f *fakePeers) Lags() []PeerLag {
	return []PeerLag{{Name: "us", Lag: 100 * time.Millisecond, MaxLag: 100 * time.Millisecond}, {Name: "ap", Lag: 50 * time.Millisecond, MaxLag: 200 * time.Millisecond}}
}

// set makes the first peer's count for key in id n.
func (f *fakePeers) set(key string, id, n int64) { f.tab.Merge(0, []byte(key), Slot{id, n}, 1) }

// charged is this region's latest own slot for key, as (id, total).
func (f *fakePeers) charged(key string) [2]int64 {
	var last [2]int64
	for _, u := range f.tab.All(nil) {
		if u.Key == key && u.ID >= last[0] {
			last = [2]int64{u.ID, u.Value}
		}
	}
	return last
}

func TestGlobalFixedWindowCountsWhatPeersReported(t *testing.T) {
	s, e, clk := newTest(t, Policy{Name: "g", Algorithm: FixedWindow, Limit: 10, Period: time.Second, Global: true})
	peers := newFakePeers()
	s.SetPeers(peers)
	start := t0 - t0%int64(time.Second)
	peers.set("rl:g:k", start, 7)
	for i, want := range [][5]int64{{0, 10, 2, -1, 1000}, {0, 10, 1, -1, 1000}, {0, 10, 0, -1, 1000}, {1, 10, 0, 1000, 1000}} {
		if got := hit(t, s, e, clk, "g", "k", 1); got != want {
			t.Fatalf("step %d: %v, want %v", i, got, want)
		}
	}
	if got := peers.charged("rl:g:k"); got != [2]int64{start, 3} {
		t.Fatalf("charged %v, want this region's own 3 in the window", got)
	}
	// The next window: what the peers reported for the last one no longer counts.
	clk.Advance(time.Second)
	if got := hit(t, s, e, clk, "g", "k", 1); got[0] != 0 || got[2] != 9 {
		t.Fatalf("next window: %v, want admitted with 9 left", got)
	}
}

func TestGlobalSlidingWindowWeighsPeersPreviousWindow(t *testing.T) {
	s, e, clk := newTest(t, Policy{Name: "g", Algorithm: SlidingWindow, Limit: 10, Period: time.Second, Global: true})
	peers := newFakePeers()
	s.SetPeers(peers)
	start := t0 - t0%int64(time.Second)
	clk.Set(start + int64(time.Second) + int64(500*time.Millisecond)) // half into the next window
	peers.set("rl:g:k", start, 10)                                    // the previous window, weighed 1/2: 5
	peers.set("rl:g:k", start+int64(time.Second), 3)                  // the current window: 3
	if got := hit(t, s, e, clk, "g", "k", 2); got[0] != 0 || got[2] != 0 {
		t.Fatalf("5 + 3 + 2: %v, want admitted with 0 left", got)
	}
	if got := hit(t, s, e, clk, "g", "k", 1); got[0] != 1 {
		t.Fatalf("over: %v, want limited", got)
	}
	if got := peers.charged("rl:g:k"); got != [2]int64{start + int64(time.Second), 2} {
		t.Fatalf("charged %v", got)
	}
}

func TestGlobalGCRAAbsorbsPeersConsumption(t *testing.T) {
	s, e, clk := newTest(t, Policy{Name: "g", Algorithm: GCRA, Limit: 10, Period: 10 * time.Second, Burst: 5, Global: true})
	peers := newFakePeers()
	s.SetPeers(peers)
	if got := hit(t, s, e, clk, "g", "k", 1); got[0] != 0 || got[2] != 4 {
		t.Fatalf("first: %v", got)
	}
	if got := peers.charged("rl:g:k"); got != [2]int64{t0, 1} {
		t.Fatalf("charged %v, want (birth, 1)", got)
	}
	// Peers consumed 4 more: the bucket is empty.
	if err := s.Absorb(e, []byte("rl:g:k"), clk.Now(), 4); err != nil {
		t.Fatal(err)
	}
	if got := hit(t, s, e, clk, "g", "k", 1); got[0] != 1 {
		t.Fatalf("after absorbing 4: %v, want limited", got)
	}
	clk.Advance(time.Second) // one emission interval
	if got := hit(t, s, e, clk, "g", "k", 1); got[0] != 0 {
		t.Fatalf("a second later: %v, want admitted", got)
	}
	if got := peers.charged("rl:g:k"); got != [2]int64{t0, 2} {
		t.Fatalf("charged %v, want own total 2 under the same birth", got)
	}
	// A key no global bucket owns is refused.
	if err := s.Absorb(e, []byte("rl:nope:k"), clk.Now(), 1); !errors.Is(err, ErrUnknown) {
		t.Fatalf("absorb into an unknown policy: %v", err)
	}
}

// TestGlobalBucketFairShareDuringAPartition: with one of two peers
// partitioned, on-partition fair-share leaves a bucket 2/3 of the rate
// (the partitioned peer takes its 1/3), keep-last and local the whole rate
// (what was absorbed stays, and nothing more is counted); a bucket that
// stays idle through the partition is full when it ends.
func TestGlobalBucketFairShareDuringAPartition(t *testing.T) {
	admitted := map[string]int{}
	for _, mode := range []string{FairShare, KeepLast, LocalOnly} {
		s, e, clk := newTest(t, Policy{Name: "g", Algorithm: GCRA, Limit: 60, Period: time.Minute, Burst: 10, Global: true})
		peers := newFakePeers()
		peers.tab = NewPeerTable(2, func() string { return mode })
		s.SetPeers(peers)
		hit(t, s, e, clk, "g", "k", 1)
		peers.tab.SetPartitioned(1, true, clk.Now())
		// Idle for a minute: the partitioned peer's share (20 s of
		// emissions) is less than the minute refilled.
		clk.Advance(time.Minute)
		if got := hit(t, s, e, clk, "g", "k", 0); got[2] != 10 {
			t.Fatalf("%s: after an idle minute: %v, want a full bucket (10)", mode, got)
		}
		// Ten requests a second for 60 s, from the full bucket.
		for i := 0; i < 600; i++ {
			if hit(t, s, e, clk, "g", "k", 1)[0] == 0 {
				admitted[mode]++
			}
			clk.Advance(100 * time.Millisecond)
		}
	}
	t.Logf("admitted in a minute: %v", admitted)
	// keep-last and local: the burst and the rate, 10 + 60; fair-share: the
	// burst and 2/3 of the rate, 10 + 40.
	for mode, want := range map[string]int{KeepLast: 70, LocalOnly: 70, FairShare: 50} {
		if got := admitted[mode]; got < want-2 || got > want+1 {
			t.Errorf("%s admitted %d in a minute, want about %d", mode, got, want)
		}
	}
}

func TestGlobalScopeRefusedWhereItCannotMerge(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{Name: "a", Algorithm: SlidingLog, Limit: 5, Period: time.Second, Global: true}, "sliding_log cannot be global"},
		{Policy{Name: "a", Algorithm: LeakyQueue, Limit: 5, Period: time.Second, Global: true}, "leaky_queue cannot be global"},
		{Policy{Name: "a", Algorithm: Concurrency, Limit: 5, Period: time.Second, Global: true}, "concurrency cannot be global"},
	} {
		err := tc.p.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "scope" || !strings.Contains(fe.Msg, tc.want) {
			t.Errorf("%s: %v, want a scope error containing %q", tc.p.Algorithm, err, tc.want)
		}
	}
	s, e, _ := newTest(t, Policy{Name: "g", Algorithm: FixedWindow, Limit: 5, Period: time.Second, Global: true})
	if _, _, err := s.HitAll(e, []Pair{{[]byte("g"), []byte("k")}}, t0, 1); !errors.Is(err, ErrNotGlobal) {
		t.Fatalf("RL.HITALL on a global policy: %v", err)
	}
	if _, err := s.Reserve(e, []byte("g"), []byte("k"), t0, 1, 0); !errors.Is(err, ErrNoReservations) {
		t.Fatalf("RL.RESERVE on a global policy: %v", err)
	}
}

func TestRulesFileScope(t *testing.T) {
	ps, err := ParseRules("r.yaml", []byte("policies:\n  - name: g\n    algorithm: fixed_window\n    limit: 5\n    period: 1s\n    scope: global\n"))
	if err != nil || len(ps) != 1 || !ps[0].Global {
		t.Fatalf("%v %v", ps, err)
	}
	_, err = ParseRules("r.yaml", []byte("policies:\n  - name: g\n    algorithm: sliding_log\n    limit: 5\n    period: 1s\n    scope: global\n"))
	if err == nil || !strings.Contains(err.Error(), "r.yaml:6: policies[0] (g): field scope: sliding_log cannot be global") {
		t.Fatalf("sliding_log global: %v", err)
	}
	_, err = ParseRules("r.yaml", []byte("policies:\n  - name: g\n    algorithm: gcra\n    limit: 5\n    period: 1s\n    scope: planet\n"))
	if err == nil || !strings.Contains(err.Error(), "field scope: must be local or global") {
		t.Fatalf("bad scope: %v", err)
	}
}

func TestBound(t *testing.T) {
	p := Policy{Limit: 6000, Period: time.Minute}
	// 100 per second x (200 ms + 200 ms).
	lags := []PeerLag{{MaxLag: 200 * time.Millisecond}, {MaxLag: 200 * time.Millisecond}}
	if got := Bound(p, lags); got != 40 {
		t.Fatalf("bound %d, want 40", got)
	}
}

func TestGlobalPolicySurvivesASnapshot(t *testing.T) {
	s, _, _ := newTest(t, Policy{Name: "g", Algorithm: GCRA, Limit: 5, Period: time.Second, Global: true})
	b, err := s.MarshalRuntime()
	if err != nil {
		t.Fatal(err)
	}
	s2, _, _ := newTest(t)
	if err := s2.UnmarshalRuntime(b); err != nil {
		t.Fatal(err)
	}
	if in, ok := s2.Get("g"); !ok || !in.Global {
		t.Fatalf("restored %+v", in)
	}
}
