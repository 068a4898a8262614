package enginetest

import (
	"math"
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/calendar"
	"github.com/limitdb/limitdb/engine/gcra"
)

const sec = int64(time.Second)

// The suite, once per algorithm; each is set up so that a fresh key admits
// exactly limit at one instant.
var algorithms = []Algorithm{
	{
		Name: "CL.THROTTLE (GCRA)", Period: sec, Unit: sec,
		New: func(limit int64) (engine.Limiter, error) {
			l, err := gcra.CellLimit(limit-1, limit, 1)
			return engine.CellLimiter{L: l}, err
		},
		Invalid: map[string]func() error{
			"zero period": func() error { _, err := gcra.CellLimit(1, 1, 0); return err },
			"huge period": func() error { _, err := gcra.CellLimit(1, 1, math.MaxInt64); return err },
		},
	},
	{
		Name: "TB.TAKE", Period: sec, Unit: 1e6, ExactRetry: true,
		New: func(limit int64) (engine.Limiter, error) { return engine.NewTokenBucket(limit, 3, sec) },
		Invalid: map[string]func() error{
			"zero refill":       func() error { _, err := engine.NewTokenBucket(1, 0, sec); return err },
			"zero period":       func() error { _, err := engine.NewTokenBucket(1, 1, 0); return err },
			"negative period":   func() error { _, err := engine.NewTokenBucket(1, 1, -sec); return err },
			"centuries to fill": func() error { _, err := engine.NewTokenBucket(math.MaxInt64, 1, sec); return err },
		},
	},
	{
		Name: "LB.QUEUE", Period: sec, Unit: 1e6, ExactRetry: true,
		New: func(limit int64) (engine.Limiter, error) { return engine.NewLeakyQueue(limit, 7, 3*sec) },
		Invalid: map[string]func() error{
			"zero rate":          func() error { _, err := engine.NewLeakyQueue(1, 0, sec); return err },
			"zero period":        func() error { _, err := engine.NewLeakyQueue(1, 1, 0); return err },
			"centuries to drain": func() error { _, err := engine.NewLeakyQueue(1<<40, 1, 1<<30*sec); return err },
		},
	},
	{
		Name: "FW.INCR", Period: sec, Unit: 1e6, ExactRetry: true,
		New: func(limit int64) (engine.Limiter, error) { return engine.NewFixedWindow(limit, sec) },
		Invalid: map[string]func() error{
			"zero window": func() error { _, err := engine.NewFixedWindow(1, 0); return err },
			"huge window": func() error { _, err := engine.NewFixedWindow(1, math.MaxInt64); return err },
			"negative":    func() error { _, err := engine.NewFixedWindow(1, -1); return err },
		},
	},
	{
		Name: "SW.INCR", Period: sec, Unit: 1e6, ExactRetry: true,
		New: func(limit int64) (engine.Limiter, error) { return engine.NewSlidingWindow(limit, sec, 1) },
		Invalid: map[string]func() error{
			"zero window":          func() error { _, err := engine.NewSlidingWindow(1, 0, 1); return err },
			"huge window":          func() error { _, err := engine.NewSlidingWindow(1, math.MaxInt64, 1); return err },
			"zero precision":       func() error { _, err := engine.NewSlidingWindow(1, sec, 0); return err },
			"uneven precision":     func() error { _, err := engine.NewSlidingWindow(1, sec, 7); return err },
			"too many sub-windows": func() error { _, err := engine.NewSlidingWindow(1, sec, 1e6); return err },
		},
	},
	{
		Name: "SW.INCR PRECISION 8", Period: sec, Unit: 1e6, ExactRetry: true,
		New: func(limit int64) (engine.Limiter, error) { return engine.NewSlidingWindow(limit, sec, 8) },
	},
	{
		Name: "SL.INCR", Period: sec, Unit: 1e6, ExactRetry: true,
		New: func(limit int64) (engine.Limiter, error) { return engine.NewSlidingLog(limit, sec) },
		Invalid: map[string]func() error{
			"zero window":        func() error { _, err := engine.NewSlidingLog(1, 0); return err },
			"limit beyond a log": func() error { _, err := engine.NewSlidingLog(1e7, sec); return err },
		},
	},

	{
		// Leases of one ttl (the Period): a fresh key admits exactly limit
		// permits, and each frees its share when its ttl passes.
		Name: "CL.ACQUIRE (concurrency)", Period: sec, Unit: 1e6, ExactRetry: true,
		New: func(limit int64) (engine.Limiter, error) { return engine.NewLeaseLimiter(limit, sec) },
		Invalid: map[string]func() error{
			"zero ttl":     func() error { _, err := engine.NewLeaseLimiter(1, 0); return err },
			"negative ttl": func() error { _, err := engine.NewLeaseLimiter(1, -sec); return err },
			"huge ttl":     func() error { _, err := engine.NewLeaseLimiter(1, math.MaxInt64); return err },
		},
	},

	calendarAlgorithm("FW.INCR day Europe/Paris", calendar.Day, "Europe/Paris", false),
	calendarAlgorithm("SW.INCR day America/New_York", calendar.Day, "America/New_York", true),
	calendarAlgorithm("SW.INCR month Europe/Paris", calendar.Month, "Europe/Paris", true),
	calendarAlgorithm("FW.INCR business_day UTC", calendar.BusinessDay, "UTC", false),
}

// calendarAlgorithm is a calendar window to the suite: its time scale the
// unit's nominal length.
func calendarAlgorithm(name string, u calendar.Unit, zone string, sliding bool) Algorithm {
	return Algorithm{
		Name: name, Period: int64(u.Nominal()), Unit: 1e6, ExactRetry: true,
		New: func(limit int64) (engine.Limiter, error) {
			cal, err := calendar.New(u, zone, nil)
			if err != nil {
				return nil, err
			}
			return engine.NewCalendarWindow(limit, cal, sliding)
		},
		Invalid: map[string]func() error{
			"unknown zone": func() error { _, err := calendar.New(u, "Nowhere/Atlantis", nil); return err },
			"beyond 32 bits": func() error {
				cal, _ := calendar.New(u, zone, nil)
				_, err := engine.NewCalendarWindow(1<<32, cal, sliding)
				return err
			},
		},
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, a := range algorithms {
		t.Run(a.Name, func(t *testing.T) { Run(t, a) })
	}
}
