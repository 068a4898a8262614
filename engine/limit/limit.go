// Package limit holds what every limiting algorithm shares: the uniform
// reply and the rounding of durations into it. It is a leaf: it imports
// nothing of limitdb.
package limit

// Result is the uniform limiter reply, in CL.THROTTLE's field order:
// [limited, limit, remaining, retry_after, reset_after]. Durations are in the
// unit of the command that answers (seconds for CL.THROTTLE and GCRA,
// milliseconds for the rest). RetryAfter is -1 when the request was admitted
// or can never fit. Delay is LB.QUEUE's sixth field (-1 when denied); other
// algorithms leave it 0 and it is not sent.
type Result struct {
	Limited    bool
	Limit      int64
	Remaining  int64
	RetryAfter int64
	ResetAfter int64
	Delay      int64
}

// CeilMillis converts nanoseconds to milliseconds, rounding up so that a
// client waiting the answer is never early. Negative inputs stay -1.
func CeilMillis(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	return (ns + 999_999) / 1_000_000
}
