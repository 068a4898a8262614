package policy

import (
	"fmt"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine"
)

// Every algorithm behind a policy: exactly limit admitted from a fresh key,
// a denial charges nothing, a peek writes nothing, RL.HITALL is all or
// nothing, and shadow never denies.
func TestEveryAlgorithmThroughPolicies(t *testing.T) {
	t.Parallel()
	for _, alg := range Algorithms {
		t.Run(string(alg), func(t *testing.T) {
			s, e, clock := newTest(t,
				Policy{Name: "p", Algorithm: alg, Limit: 3, Period: time.Minute},
				Policy{Name: "other", Algorithm: alg, Limit: 1, Period: time.Minute},
				Policy{Name: "shadow", Algorithm: alg, Limit: 1, Period: time.Minute, Shadow: true})
			if got := hit(t, s, e, clock, "p", "k", 0); got[0] != 0 || got[1] != 3 || got[2] != 3 {
				t.Fatalf("peek on a fresh key: %v", got)
			}
			if e.Len() != 0 {
				t.Fatal("a peek created the key")
			}
			for i := 0; i < 3; i++ {
				if got := hit(t, s, e, clock, "p", "k", 1); got[0] != 0 || got[2] != int64(2-i) {
					t.Fatalf("hit %d: %v", i, got)
				}
			}
			if got := hit(t, s, e, clock, "p", "k", 1); got[0] != 1 || got[3] <= 0 {
				t.Fatalf("4th hit: %v, want denied with a retry_after", got)
			}
			if got := hit(t, s, e, clock, "p", "k", 4); got[0] != 1 || got[3] != -1 {
				t.Fatalf("cost above the limit: %v, want denied, retry_after -1", got)
			}
			ent, _ := e.Get(Key(nil, "p", []byte("k")), clock.Now())
			if want := builders[alg]; want == nil || ent.Kind != mustLimiter(t, s, "p").Kind() {
				t.Fatalf("state kind %v", ent.Kind)
			}
			// p2 has room, other is exhausted: nothing of the HITALL is charged.
			hit(t, s, e, clock, "other", "k", 1)
			limited, rs := hitAll(t, s, e, clock, 1, "p", "k2", "other", "k")
			if !limited || rs[0][0] != 0 || rs[0][2] != 3 || rs[1][0] != 1 {
				t.Fatalf("HITALL: %v %v", limited, rs)
			}
			if got := hit(t, s, e, clock, "p", "k2", 0); got[2] != 3 {
				t.Fatalf("a denied HITALL charged p: %v", got)
			}
			for i := 0; i < 3; i++ {
				if got := hit(t, s, e, clock, "shadow", "k", 1); got[0] != 0 || got[3] != -1 {
					t.Fatalf("shadow hit %d: %v", i, got)
				}
			}
			if in, _ := s.Get("shadow"); in.ShadowDenied != 2 || in.Admitted != 3 {
				t.Fatalf("shadow counters %+v", in)
			}
		})
	}
}

func mustLimiter(t *testing.T, s *Store, name string) engine.Limiter {
	t.Helper()
	c := s.lookup([]byte(name))
	if c == nil {
		t.Fatalf("no policy %s", name)
	}
	return c.lim
}

// What a change of limit, period or burst does to a client's usage, per
// algorithm, as docs/policies.md states it. Each case uses 4 of 10 a
// minute, changes the policy, and peeks at remaining.
func TestChangeKeepsUsage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		alg    Algorithm
		change Policy // Name and Algorithm are filled in
		want   int64  // remaining after the change
	}{
		{GCRA, Policy{Limit: 20, Period: time.Minute}, 16},                   // usage in requests kept
		{GCRA, Policy{Limit: 10, Period: time.Minute, Burst: 5}, 1},          // 4 used, burst 5
		{TokenBucket, Policy{Limit: 10, Period: time.Minute, Burst: 20}, 16}, // capacity change: tokens used kept
		{TokenBucket, Policy{Limit: 20, Period: time.Minute}, 12},            // rate doubled: time to refill kept, 24 s = 8 tokens
		{LeakyQueue, Policy{Limit: 10, Period: time.Minute, Burst: 20}, 16},
		{FixedWindow, Policy{Limit: 20, Period: time.Minute}, 16}, // count kept
		{FixedWindow, Policy{Limit: 10, Period: time.Hour}, 6},    // the hour's window began before the minute's: count kept
		{SlidingWindow, Policy{Limit: 20, Period: time.Minute}, 16},
		{SlidingLog, Policy{Limit: 20, Period: time.Minute}, 16},
		{SlidingLog, Policy{Limit: 10, Period: time.Hour}, 6}, // the stamps are re-read against the hour
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %d/%v burst %d", tc.alg, tc.change.Limit, tc.change.Period, tc.change.Burst), func(t *testing.T) {
			s, e, clock := newTest(t, Policy{Name: "p", Algorithm: tc.alg, Limit: 10, Period: time.Minute})
			clock.Advance(30 * time.Second) // in the middle of an epoch-aligned minute and hour
			hit(t, s, e, clock, "p", "k", 4)
			tc.change.Name, tc.change.Algorithm = "p", tc.alg
			if err := s.Set(tc.change); err != nil {
				t.Fatal(err)
			}
			if got := hit(t, s, e, clock, "p", "k", 0); got[2] != tc.want {
				t.Fatalf("after the change: %v, want remaining %d", got, tc.want)
			}
		})
	}
}

func TestAlgorithmChangeStartsFresh(t *testing.T) {
	t.Parallel()
	s, e, clock := newTest(t, Policy{Name: "p", Algorithm: GCRA, Limit: 2, Period: time.Minute})
	hit(t, s, e, clock, "p", "k", 2)
	for _, alg := range Algorithms[1:] {
		s.Set(Policy{Name: "p", Algorithm: alg, Limit: 2, Period: time.Minute})
		if got := hit(t, s, e, clock, "p", "k", 1); got[0] != 0 || got[2] != 1 {
			t.Fatalf("%s after a change of algorithm: %v, want a fresh key", alg, got)
		}
	}
}

func TestLeakyQueueReplyHasDelay(t *testing.T) {
	t.Parallel()
	s, e, clock := newTest(t, Policy{Name: "q", Algorithm: LeakyQueue, Limit: 10, Period: time.Second, Burst: 3})
	var delays []int64
	for i := 0; i < 4; i++ {
		r, err := s.Hit(e, []byte("q"), []byte("k"), clock.Now(), 1)
		if err != nil || !r.WithDelay {
			t.Fatalf("hit %d: %+v %v", i, r, err)
		}
		delays = append(delays, r.Delay)
	}
	if fmt.Sprint(delays) != "[0 100 200 -1]" {
		t.Fatalf("delays %v, want [0 100 200 -1]", delays)
	}
}
