package rls

import (
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestChargeWhenTheStreamEnds is what a gateway configures for a cost
// known only once the response ends (docs/envoy.md, "A cost known only
// afterwards"): one rate_limits entry checks at the request's start (a
// per-descriptor hits_addend of 0: charges nothing, OVER_LIMIT once the
// budget is spent), another with apply_on_stream_done charges the
// response's real cost as its hits_addend when the stream ends, which may
// take the counter over its limit; the next request's check is then
// refused.
func TestChargeWhenTheStreamEnds(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t, readmeMessaging)
	call := func(hits uint64) *rlspb.RateLimitResponse {
		d := desc("to_number", "9")
		d.HitsAddend = wrapperspb.UInt64(hits)
		resp, err := svc.Decide(&rlspb.RateLimitRequest{Domain: "messaging", Descriptors: []*rlcommon.RateLimitDescriptor{d}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i, s := range []struct {
		hits    uint64
		overall rlspb.RateLimitResponse_Code
		want    want
	}{
		{0, rlspb.RateLimitResponse_OK, want{false, 100, 86400}},       // request start: a check
		{70, rlspb.RateLimitResponse_OK, want{false, 30, 86400}},       // stream done: 70 used
		{0, rlspb.RateLimitResponse_OK, want{false, 30, 86400}},        // the next request starts
		{45, rlspb.RateLimitResponse_OVER_LIMIT, want{true, 0, 86400}}, // it used 45: over, counted
		{0, rlspb.RateLimitResponse_OVER_LIMIT, want{true, 0, 86400}},  // the next is refused at its start
	} {
		check(t, i, call(s.hits), s.overall, s.want)
	}
}
