package client

import (
	"fmt"
	"strconv"
	"time"
)

// Limit is one limiter command with its parameters: Throttle, GCRA,
// TokenBucket, LeakyQueue, FixedWindow, SlidingWindow, SlidingLog or a
// named Policy. The set is closed: each type knows its command's spelling
// and reply unit.
type Limit interface {
	// Approx reduces the limit to a GCRA of the same sustained rate and
	// burst: what a local stand-in limiter (httplimit's fallback) enforces
	// when limitdb cannot be reached.
	Approx() Rate
	args(key string, cost int64) ([]any, error)
	unit() time.Duration
}

// Rate is a limit in GCRA terms: one unit every Interval, with Burst more
// units admitted at once on top of it.
type Rate struct {
	Burst    int64
	Interval time.Duration
}

// Throttle is CL.THROTTLE key max_burst count period [quantity]: redis-cell's
// GCRA, Count requests per Period with MaxBurst extra at once. Period must
// be whole seconds; the reply is in seconds.
type Throttle struct {
	MaxBurst, Count int64
	Period          time.Duration
}

func (l Throttle) Approx() Rate      { return gcraRate(l.MaxBurst, l.Count, l.Period) }
func (Throttle) unit() time.Duration { return time.Second }
func (l Throttle) args(key string, cost int64) ([]any, error) {
	if l.Period%time.Second != 0 {
		return nil, fmt.Errorf("limitdb: CL.THROTTLE period %v is not whole seconds", l.Period)
	}
	return []any{"CL.THROTTLE", key, l.MaxBurst, l.Count, int64(l.Period / time.Second), cost}, nil
}

// GCRA is GCRA key max_burst tokens_per_period period [TOKENS n], the
// spelling Redis proposed (redis/redis PR #15191; in no released Redis or
// Valkey): the period may be fractional seconds (microsecond precision); the
// reply is in seconds, rounded up. A cost below 1 is an error, as in that
// proposal.
type GCRA struct {
	MaxBurst, TokensPerPeriod int64
	Period                    time.Duration
}

func (l GCRA) Approx() Rate      { return gcraRate(l.MaxBurst, l.TokensPerPeriod, l.Period) }
func (GCRA) unit() time.Duration { return time.Second }
func (l GCRA) args(key string, cost int64) ([]any, error) {
	period := strconv.FormatFloat(l.Period.Seconds(), 'f', -1, 64)
	return []any{"GCRA", key, l.MaxBurst, l.TokensPerPeriod, period, "TOKENS", cost}, nil
}

// TokenBucket is TB.TAKE key capacity refill period [tokens]: a bucket of
// Capacity tokens that gains Refill tokens every Period.
type TokenBucket struct {
	Capacity, Refill int64
	Period           time.Duration
}

func (l TokenBucket) Approx() Rate      { return gcraRate(l.Capacity-1, l.Refill, l.Period) }
func (TokenBucket) unit() time.Duration { return time.Millisecond }
func (l TokenBucket) args(key string, cost int64) ([]any, error) {
	return msArgs("TB.TAKE", key, l.Capacity, l.Refill, l.Period, cost)
}

// LeakyQueue is LB.QUEUE key capacity rate period [cost]: a queue of at most
// Capacity requests that drains Rate requests every Period; an admitted
// request gets Result.Delay, the time it must wait before running.
type LeakyQueue struct {
	Capacity, Rate int64
	Period         time.Duration
}

func (l LeakyQueue) Approx() Rate      { return gcraRate(l.Capacity-1, l.Rate, l.Period) }
func (LeakyQueue) unit() time.Duration { return time.Millisecond }
func (l LeakyQueue) args(key string, cost int64) ([]any, error) {
	return msArgs("LB.QUEUE", key, l.Capacity, l.Rate, l.Period, cost)
}

// FixedWindow is FW.INCR key limit window [cost] [TZ zone]: at most Limit
// units per Window, windows aligned to the Unix epoch; or, with Calendar
// set, per calendar window in the zone TZ (Calendar).
type FixedWindow struct {
	Limit  int64
	Window time.Duration

	Calendar Calendar
}

func (l FixedWindow) Approx() Rate      { return gcraRate(l.Limit-1, l.Limit, l.Calendar.window(l.Window)) }
func (FixedWindow) unit() time.Duration { return time.Millisecond }
func (l FixedWindow) args(key string, cost int64) ([]any, error) {
	if l.Calendar.Unit != "" {
		return l.Calendar.args("FW.INCR", key, l.Limit, cost), nil
	}
	return msArgs("FW.INCR", key, l.Limit, 0, l.Window, cost)
}

// SlidingWindow is SW.INCR key limit window [cost] [PRECISION n]: a
// sliding-window counter that weighs the previous window (or, with
// Precision above 1, the previous sub-window) by how much of it still
// overlaps. Precision 0 leaves the server's default.
type SlidingWindow struct {
	Limit     int64
	Window    time.Duration
	Precision int64

	Calendar Calendar // instead of Window: the previous calendar window weighs in
}

func (l SlidingWindow) Approx() Rate {
	return gcraRate(l.Limit-1, l.Limit, l.Calendar.window(l.Window))
}
func (SlidingWindow) unit() time.Duration { return time.Millisecond }
func (l SlidingWindow) args(key string, cost int64) ([]any, error) {
	if l.Calendar.Unit != "" {
		return l.Calendar.args("SW.INCR", key, l.Limit, cost), nil
	}
	args, err := msArgs("SW.INCR", key, l.Limit, 0, l.Window, cost)
	if err == nil && l.Precision != 0 {
		args = append(args, "PRECISION", l.Precision)
	}
	return args, err
}

// SlidingLog is SL.INCR key limit window [cost]: an exact log of the last
// Window's requests.
type SlidingLog struct {
	Limit  int64
	Window time.Duration
}

func (l SlidingLog) Approx() Rate      { return gcraRate(l.Limit-1, l.Limit, l.Window) }
func (SlidingLog) unit() time.Duration { return time.Millisecond }
func (l SlidingLog) args(key string, cost int64) ([]any, error) {
	return msArgs("SL.INCR", key, l.Limit, 0, l.Window, cost)
}

// msArgs spells "NAME key a [b] period cost" for the commands whose periods
// take a unit; b is left out when 0 (the window commands have no rate).
func msArgs(name, key string, a, b int64, period time.Duration, cost int64) ([]any, error) {
	p, err := formatDuration(period)
	if err != nil {
		return nil, fmt.Errorf("limitdb: %s: %w", name, err)
	}
	if b == 0 {
		return []any{name, key, a, p, cost}, nil
	}
	return []any{name, key, a, b, p, cost}, nil
}

// formatDuration spells d in the server's duration syntax, exactly: whole
// seconds as "N", else milliseconds or microseconds with their unit.
func formatDuration(d time.Duration) (string, error) {
	switch {
	case d <= 0:
		return "", fmt.Errorf("period %v must be positive", d)
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10), nil
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms", nil
	case d%time.Microsecond == 0:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us", nil
	}
	return "", fmt.Errorf("period %v is finer than a microsecond", d)
}

// gcraRate is perPeriod units per period with burst extra at once.
func gcraRate(burst, perPeriod int64, period time.Duration) Rate {
	if burst < 0 {
		burst = 0
	}
	if perPeriod < 1 {
		perPeriod = 1
	}
	return Rate{Burst: burst, Interval: period / time.Duration(perPeriod)}
}
