package rls

import (
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// TestResponseHeaders: with SetResponseHeaders, the answer carries the
// RateLimit-* headers of the most restrictive descriptor; without, none.
func TestResponseHeaders(t *testing.T) {
	const rules = `domain: d
descriptors:
  - key: minute
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: hour
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: free
    rate_limit: {unlimited: true}
`
	at := t0 + int64(90*time.Second) // 30 s left in the minute, 3510 s in the hour
	cases := []struct {
		name  string
		hits  uint32
		descs []*rlcommon.RateLimitDescriptor
		want  []string // limit, remaining, reset; nil: no headers
	}{
		{"fewest remaining", 1, []*rlcommon.RateLimitDescriptor{desc("minute", "a"), desc("hour", "a")}, []string{"3", "2", "3510"}},
		{"the first of equals", 1, []*rlcommon.RateLimitDescriptor{desc("hour", "b"), desc("hour", "c")}, []string{"3", "2", "3510"}},
		{"over beats fewer remaining", 4, []*rlcommon.RateLimitDescriptor{desc("minute", "d"), desc("hour", "d")}, []string{"3", "0", "3510"}},
		{"unlimited and unknown have none", 1, []*rlcommon.RateLimitDescriptor{desc("free", "x"), desc("nope", "x")}, nil},
		{"unlimited beside a limit", 1, []*rlcommon.RateLimitDescriptor{desc("free", "y"), desc("minute", "y")}, []string{"10", "9", "30"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newService(t, rules)
			req := &rlspb.RateLimitRequest{Domain: "d", HitsAddend: tc.hits, Descriptors: tc.descs}
			resp, err := s.Decide(req, at)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.ResponseHeadersToAdd) != 0 {
				t.Fatalf("headers while off: %v", resp.ResponseHeadersToAdd)
			}
			s2, _ := newService(t, rules)
			s2.SetResponseHeaders(true)
			resp, err = s2.Decide(req, at)
			if err != nil {
				t.Fatal(err)
			}
			hs := resp.ResponseHeadersToAdd
			if tc.want == nil {
				if len(hs) != 0 {
					t.Fatalf("headers %v, want none", hs)
				}
				return
			}
			names := []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}
			if len(hs) != 3 {
				t.Fatalf("headers %v, want %v", hs, tc.want)
			}
			for i, h := range hs {
				if h.Key != names[i] || h.Value != tc.want[i] {
					t.Errorf("header %d: %s: %s, want %s: %s", i, h.Key, h.Value, names[i], tc.want[i])
				}
			}
		})
	}
}
