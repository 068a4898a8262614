package rls

import (
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const statsRules = `
domain: counted
descriptors:
  - key: k
    value: v
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: trial
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 2}
    descriptors:
      - key: plan
        rate_limit: {unit: minute, requests_per_unit: 5}
  - key: free
    rate_limit: {unlimited: true}
`

// TestRuleStats walks requests through one window and checks each rule's
// counters after every step: within, near (past 80% of the limit, so from
// the 9th hit of 10), over, and shadow mode.
func TestRuleStats(t *testing.T) {
	svc, _ := newService(t, statsRules)
	steps := []struct {
		desc *rlcommon.RateLimitDescriptor
		hits uint64
		key  string // the rule counted; "" for none
		add  Stats
	}{
		{desc("k", "v"), 1, "k_v", Stats{TotalHits: 1, WithinLimit: 1}},
		{desc("k", "v"), 7, "k_v", Stats{TotalHits: 7, WithinLimit: 7}},               // 8: at 80%, not past
		{desc("k", "v"), 2, "k_v", Stats{TotalHits: 2, WithinLimit: 2, NearLimit: 2}}, // 10: the limit
		{desc("k", "v"), 1, "k_v", Stats{TotalHits: 1, OverLimit: 1}},
		{desc("k", "v"), 0, "k_v", Stats{}}, // a check charges nothing
		{desc("trial", "x"), 2, "trial", Stats{TotalHits: 2, WithinLimit: 2, NearLimit: 1}},
		{desc("trial", "x"), 3, "trial", Stats{TotalHits: 3, OverLimit: 3, ShadowMode: 3}},
		{desc("trial", "x", "plan", "pro"), 6, "trial.plan", Stats{TotalHits: 6, OverLimit: 1, NearLimit: 1}},
		{desc("free", "x"), 5, "", Stats{}},
		{desc("k", "other"), 5, "", Stats{}},
	}
	want := map[string]Stats{}
	for i, s := range steps {
		d := s.desc
		d.HitsAddend = wrapperspb.UInt64(s.hits)
		if _, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "counted", Descriptors: []*rlcommon.RateLimitDescriptor{d}}, t0); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if s.key != "" {
			w := want[s.key]
			w.TotalHits += s.add.TotalHits
			w.OverLimit += s.add.OverLimit
			w.NearLimit += s.add.NearLimit
			w.WithinLimit += s.add.WithinLimit
			w.ShadowMode += s.add.ShadowMode
			want[s.key] = w
		}
		got := map[string]Stats{}
		for _, r := range svc.RuleStats() {
			if r.Domain != "counted" {
				t.Fatalf("step %d: domain %q", i, r.Domain)
			}
			got[r.Key] = r.Stats
		}
		if len(got) != len(want) {
			t.Errorf("step %d: rules counted %v, want %v", i, got, want)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("step %d: %s = %+v, want %+v", i, k, got[k], w)
			}
		}
	}
}
