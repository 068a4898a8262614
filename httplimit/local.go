package httplimit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/limitdb/limitdb/client"
	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine/gcra"
)

// Local is an in-process GCRA limiter keyed like limitdb: the stand-in the
// Fallback policy uses while limitdb cannot be reached. It runs limitdb's
// own GCRA arithmetic (engine/gcra) over a map guarded by one mutex, so it
// limits each process separately: with N instances of an API, a key gets up
// to N times the limit during an outage. Size the rate accordingly.
type Local struct {
	rate  gcra.Limit
	burst int64
	clk   clock.Clock

	mu    sync.Mutex
	tat   map[string]int64 // theoretical arrival time, Unix ns
	calls int
}

// sweepEvery is how many calls pass between sweeps of fresh keys, so that
// memory holds only keys still being limited.
const sweepEvery = 1024

// NewLocal returns a local limiter enforcing r (see client.Limit's Approx)
// at the time clk reads: the middleware's clock.
func NewLocal(r client.Rate, clk clock.Clock) (*Local, error) {
	if clk == nil {
		return nil, errors.Join(ErrOptions, errors.New("a clock is required"))
	}
	l, err := gcra.NewLimit(int64(r.Interval), r.Burst)
	if err != nil {
		return nil, err
	}
	return &Local{rate: l, burst: r.Burst, clk: clk, tat: map[string]int64{}}, nil
}

// Take charges one unit to key.
func (l *Local) Take(_ context.Context, key string) (client.Result, error) {
	now := l.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls++; l.calls%sweepEvery == 0 {
		for k, tat := range l.tat {
			if tat <= now {
				delete(l.tat, k)
			}
		}
	}
	d, err := gcra.Decide(l.tat[key], now, l.rate, 1)
	if err != nil {
		return client.Result{}, err
	}
	if !d.Limited {
		l.tat[key] = d.TAT
	}
	r := client.Result{
		Limited:    d.Limited,
		Limit:      l.burst + 1,
		Remaining:  max(d.Next/l.rate.Interval, 0),
		ResetAfter: time.Duration(d.TTL),
	}
	if d.Limited {
		r.RetryAfter = time.Duration(d.RetryAfter)
		if d.RetryAfter < 0 {
			r.RetryAfter = client.Never
		}
	}
	return r, nil
}

// Len is the number of keys held.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tat)
}
