package policy_test

import (
	"fmt"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

func ExampleParseRules() {
	_, err := policy.ParseRules("limits.yaml", []byte(`policies:
  - name: api
    algorithm: gcra
    limit: 0
    period: 1m
`))
	fmt.Println(err)
	// Output: limits.yaml:4: policies[0] (api): field limit: must be at least 1, got 0
}

func ExampleStore_HitAll() {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	eng := engine.New(clk, 0)
	s := policy.NewStore(nil)
	s.Set(policy.Policy{Name: "per-second", Algorithm: policy.GCRA, Limit: 10, Period: time.Second})
	s.Set(policy.Policy{Name: "per-day", Algorithm: policy.FixedWindow, Limit: 1, Period: 24 * time.Hour})
	pairs := []policy.Pair{{Policy: []byte("per-second"), Key: []byte("user:42")}, {Policy: []byte("per-day"), Key: []byte("user:42")}}
	for i := 0; i < 2; i++ {
		limited, replies, _ := s.HitAll(eng, pairs, clk.Now(), 1)
		fmt.Println(limited, replies[0].Remaining, replies[1].Remaining)
	}
	// Output:
	// false 9 0
	// true 9 0
}
