// Package window implements the window-counting limiters as pure functions
// of (state, now, parameters), in integer nanoseconds: the fixed window
// (FW.INCR), the sliding-window counter (SW.INCR) and the sliding log
// (SL.INCR). It never reads a clock, takes a lock or knows about keys.
//
// All three count the cost of admitted requests against a limit per window;
// they differ in what they remember, and so in how exact they are:
//
//   - Fixed: one count per window aligned to multiples of the window since
//     the Unix epoch. Two bytes of state, but a client can spend the limit at
//     the end of one window and again at the start of the next: up to twice
//     the limit inside one window-length span.
//   - Sliding: a count per sub-window (precision n splits the window into n),
//     and the oldest sub-window weighted by the share of it still inside the
//     sliding window. Never above the limit under even traffic, close to
//     exact under bursts; more sub-windows, closer.
//   - Log: the timestamp and cost of every admitted request still inside the
//     window. Exact, and its memory grows with the limit.
//
// Time going backwards never admits extra requests: each state remembers the
// latest instant it was charged at and decides at the later of that and now.
package window

import (
	"errors"
	"fmt"
)

// Errors for parameters that cannot describe a window limit.
var (
	ErrInvalid  = errors.New("invalid window limit")
	ErrOverflow = errors.New("window limit too large for the nanosecond time range")
)

// maxWindow bounds a window (about 36 years), so that a state's expiry, at
// most two windows after now, fits in an int64 for any clock before 2200.
const maxWindow = 1 << 60

// maxNow is the latest instant the algorithms accept: now plus two maximal
// windows still fits in an int64.
const maxNow = 1<<63 - 1 - 2*maxWindow

// Decision is the outcome of one request. Durations are nanoseconds.
type Decision struct {
	Limited bool
	// Remaining is how much more cost would be admitted now (after this
	// request when admitted).
	Remaining int64
	// RetryAfter is how long until the same request would be admitted; -1
	// when admitted or when the cost exceeds the limit and never fits.
	RetryAfter int64
	// ResetAfter is how long until the state equals a new key's (an empty
	// window).
	ResetAfter int64
}

func checkLimit(limit, window int64) error {
	switch {
	case limit < 1:
		return fmt.Errorf("%w: limit must be at least 1, got %d", ErrInvalid, limit)
	case window < 1:
		return fmt.Errorf("%w: window must be at least 1ns, got %d", ErrInvalid, window)
	case window > maxWindow:
		return fmt.Errorf("%w: window of %dns is longer than 36 years", ErrOverflow, window)
	}
	return nil
}

func checkRequest(now, cost int64) error {
	if cost < 0 {
		return fmt.Errorf("%w: cost must not be negative, got %d", ErrInvalid, cost)
	}
	if now > maxNow || now < -maxNow {
		return ErrOverflow
	}
	return nil
}

// floorTo rounds t down to a multiple of w (toward -inf, so negative
// instants align too).
func floorTo(t, w int64) int64 {
	m := t % w
	if m < 0 {
		m += w
	}
	return t - m
}
