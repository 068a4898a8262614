package rls

import (
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/limitdb/limitdb/engine"
)

// algorithmRules use limitdb's extension: each rule one of its other
// algorithms, with a burst where the algorithm has one.
const algorithmRules = `domain: alg
descriptors:
  - key: gcra
    rate_limit: {unit: minute, requests_per_unit: 60, algorithm: gcra, burst: 3}
  - key: tb
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: token_bucket, burst: 4}
  - key: sw
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: sliding_window}
  - key: sl
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: sliding_log}
  - key: fw
    rate_limit: {unit: minute, requests_per_unit: 2, algorithm: fixed_window}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: gcra}
`

// TestAlgorithms walks each algorithm through fixed instants: what it
// admits, limit_remaining, duration_until_reset (until a request fits when
// over, until the state is fresh otherwise), and that a denial charges
// nothing.
func TestAlgorithms(t *testing.T) {
	type step struct {
		at   time.Duration // after t0
		hits uint32
		want want
	}
	cases := []struct {
		key   string
		steps []step
	}{
		// One every second, three at once.
		{"gcra", []step{
			{0, 1, want{false, 2, 1}},
			{0, 1, want{false, 1, 2}},
			{0, 1, want{false, 0, 3}},
			{0, 1, want{true, 0, 1}},
			{time.Second, 1, want{false, 0, 3}},
			{10 * time.Second, 2, want{false, 1, 2}},
		}},
		// Four tokens, two more every second.
		{"tb", []step{
			{0, 4, want{false, 0, 2}},
			{0, 1, want{true, 0, 1}},
			{500 * time.Millisecond, 1, want{false, 0, 2}},
			{5 * time.Second, 5, want{true, 4, 0}}, // never fits: time to full, now
		}},
		// Three a minute, the previous minute weighted by its share still
		// inside the window.
		{"sw", []step{
			{0, 3, want{false, 0, 120}},
			{0, 1, want{true, 0, 80}},
			{80 * time.Second, 1, want{false, 0, 100}},
		}},
		// Two in any 60 s.
		{"sl", []step{
			{0, 1, want{false, 1, 60}},
			{30 * time.Second, 1, want{false, 0, 60}},
			{31 * time.Second, 1, want{true, 0, 29}},
			{60 * time.Second, 1, want{false, 0, 60}}, // the stamp of 0 s is out
		}},
		// envoyproxy/ratelimit's own fixed window, named: every hit counts.
		{"fw", []step{
			{0, 2, want{false, 0, 60}},
			{0, 1, want{true, 0, 60}},
			{59 * time.Second, 1, want{true, 0, 1}},
			{60 * time.Second, 1, want{false, 1, 60}},
		}},
		// Shadow mode: over, but OK.
		{"shadow", []step{
			{0, 1, want{false, 0, 3600}},
			{0, 1, want{false, 0, 3600}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			svc, _ := newService(t, algorithmRules)
			for i, s := range tc.steps {
				resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "alg", HitsAddend: s.hits,
					Descriptors: []*rlcommon.RateLimitDescriptor{desc(tc.key, "u")}}, t0+int64(s.at))
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				overall := rlspb.RateLimitResponse_OK
				if s.want.over {
					overall = rlspb.RateLimitResponse_OVER_LIMIT
				}
				check(t, i, resp, overall, s.want)
			}
		})
	}
}

// TestAlgorithmKey: a rule of another algorithm keeps its state under the
// counter key's path and the algorithm's name, with no window in it.
func TestAlgorithmKey(t *testing.T) {
	svc, eng := newService(t, algorithmRules)
	if _, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "alg", Descriptors: []*rlcommon.RateLimitDescriptor{desc("gcra", "u")}}, t0); err != nil {
		t.Fatal(err)
	}
	var got engine.Entry
	eng.Do([]byte("alg_gcra_u_gcra"), t0, func(e engine.Entry) (engine.Entry, bool) { got = e; return e, false })
	if got.Kind != engine.KindGCRA {
		t.Errorf("alg_gcra_u_gcra: %+v", got)
	}
	// Another limiter's state there (written by hand) counts as absent; a
	// Redis string is an error.
	eng.Do([]byte("alg_tb_u_token_bucket"), t0, func(engine.Entry) (engine.Entry, bool) {
		return engine.Entry{Kind: engine.KindFixedWindow, A: t0, B: 99, Expire: t0 + 60e9}, true
	})
	resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "alg", Descriptors: []*rlcommon.RateLimitDescriptor{desc("tb", "u")}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	check(t, 0, resp, rlspb.RateLimitResponse_OK, want{false, 3, 1})
}

// TestAllOrNothing: in AllOrNothing mode a request is charged only when
// every descriptor not in shadow mode is admitted; a refused request
// charges nothing, its refusing descriptors answer OVER_LIMIT and the
// others their state as it stands.
func TestAllOrNothing(t *testing.T) {
	svc, _ := newService(t, readmeMessaging, algorithmRules)
	svc.SetAllOrNothing(true)
	const day = 86400
	marketing := desc("message_type", "marketing", "to_number", "1")
	number := desc("to_number", "1")
	steps := []struct {
		domain  string
		hits    uint32
		ds      []*rlcommon.RateLimitDescriptor
		overall rlspb.RateLimitResponse_Code
		want    []want
	}{
		{"messaging", 4, []*rlcommon.RateLimitDescriptor{marketing, number}, rlspb.RateLimitResponse_OK, []want{{false, 1, day}, {false, 96, day}}},
		// 4 + 2 > 5: refused; the number is not charged.
		{"messaging", 2, []*rlcommon.RateLimitDescriptor{marketing, number}, rlspb.RateLimitResponse_OVER_LIMIT, []want{{true, 0, day}, {false, 96, day}}},
		// Nor was marketing: one more fits.
		{"messaging", 1, []*rlcommon.RateLimitDescriptor{marketing, number}, rlspb.RateLimitResponse_OK, []want{{false, 0, day}, {false, 95, day}}},
		// Algorithms join in: a GCRA rule refuses, the fixed window is
		// left as it was.
		{"alg", 2, []*rlcommon.RateLimitDescriptor{desc("fw", "u"), desc("gcra", "u")}, rlspb.RateLimitResponse_OK, []want{{false, 0, 60}, {false, 1, 2}}},
		{"alg", 1, []*rlcommon.RateLimitDescriptor{desc("gcra", "u"), desc("sl", "u")}, rlspb.RateLimitResponse_OK, []want{{false, 0, 3}, {false, 1, 60}}},
		{"alg", 1, []*rlcommon.RateLimitDescriptor{desc("sl", "u"), desc("gcra", "u")}, rlspb.RateLimitResponse_OVER_LIMIT, []want{{false, 1, 60}, {true, 0, 1}}},
		// A shadow rule over does not refuse.
		{"alg", 1, []*rlcommon.RateLimitDescriptor{desc("shadow", "u"), desc("sl", "u")}, rlspb.RateLimitResponse_OK, []want{{false, 0, 3600}, {false, 0, 60}}},
		{"alg", 1, []*rlcommon.RateLimitDescriptor{desc("shadow", "u"), desc("sl", "v")}, rlspb.RateLimitResponse_OK, []want{{false, 0, 3600}, {false, 1, 60}}},
	}
	for i, s := range steps {
		resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: s.domain, HitsAddend: s.hits, Descriptors: s.ds}, t0)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		check(t, i, resp, s.overall, s.want...)
	}
	// The refused request counted its refusal and nothing else.
	for _, r := range svc.RuleStats() {
		if r.Domain == "messaging" && r.Key == "to_number" && r.Stats.TotalHits != 5 {
			t.Errorf("to_number: %+v, want 5 hits (the refused request's uncounted)", r.Stats)
		}
		if r.Domain == "messaging" && r.Key == "message_type_marketing.to_number" && (r.Stats.TotalHits != 7 || r.Stats.OverLimit != 1) {
			t.Errorf("marketing: %+v, want 7 hits, 1 over", r.Stats)
		}
	}
}

// TestAlgorithmDump: /rlconfig names a rule's algorithm, and its burst
// where it has one.
func TestAlgorithmDump(t *testing.T) {
	d := mustParse(t, "alg.yaml", algorithmRules).Dump()
	for _, line := range []string{
		"alg.gcra: unit=MINUTE requests_per_unit=60, shadow_mode: false, quota_mode: false, algorithm: gcra, burst: 3\n",
		"alg.shadow: unit=HOUR requests_per_unit=1, shadow_mode: true, quota_mode: false, algorithm: gcra, burst: 1\n",
		"alg.sw: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false, algorithm: sliding_window\n",
		"alg.fw: unit=MINUTE requests_per_unit=2, shadow_mode: false, quota_mode: false\n",
	} {
		if !strings.Contains(d, line) {
			t.Errorf("dump lacks %q:\n%s", line, d)
		}
	}
}
