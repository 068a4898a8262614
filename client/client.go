// Package client is limitdb for Go applications: typed calls for every
// limiter command on top of go-redis, each answering one Result with
// durations as time.Duration. It owns the wire spelling of the commands and
// of their replies; it never imports the server (resp, engine), so an
// application links only go-redis.
package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Result is the uniform limiter reply, decoded. Every command fills the same
// fields whatever unit it answers in on the wire (seconds for CL.THROTTLE
// and GCRA, milliseconds for the rest).
type Result struct {
	// Limited is true when the request was denied; a denied request is never
	// charged.
	Limited bool
	// Limit is the most a fresh key admits at once (max_burst+1 for GCRA,
	// the capacity or window limit for the others).
	Limit int64
	// Remaining is how many more units the key admits right now.
	Remaining int64
	// RetryAfter is how long until the same request would be admitted. It
	// is 0 when the request was admitted, and Never when it was denied
	// because it is larger than the limit and can never be admitted.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to a fresh state.
	ResetAfter time.Duration
	// Delay is LB.QUEUE's answer: how long an admitted request waits in the
	// queue before it may run. 0 for every other command and when denied.
	Delay time.Duration

	// LeaseID is the lease a concurrency limit took (Acquire,
	// AcquirePolicy, a concurrency policy's pair of HitAll): "" when
	// denied, and for every other limit.
	LeaseID string
}

// Never is Result.RetryAfter for a request that can never be admitted.
const Never time.Duration = -1

// Doer is what Client needs of go-redis: *redis.Client, *redis.ClusterClient,
// *redis.Ring and redis.UniversalClient all have it.
type Doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// Client sends limiter commands through a go-redis client.
type Client struct {
	rdb Doer
}

// New wraps a go-redis client. For a client made for limiting, build its
// options with Options: go-redis' defaults retry failed commands (which can
// charge a request twice) and ignore the context's deadline on reads.
func New(rdb Doer) *Client { return &Client{rdb: rdb} }

// Options returns go-redis options suited to rate limiting at addr: the
// caller's context deadline bounds every read and write, and a command is
// never retried, because a retried limiter command that reached the server
// would be charged twice, and a refused connection is reported at once
// instead of being dialled again. Protocol 3 (RESP3) is used; both work.
func Options(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		Protocol:              3,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1, // go-redis spells "no retries" -1; 0 means its default of 3
		DialerRetries:         1,  // its default, 5 dials 100 ms apart, outlasts any request timeout
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
	}
}

// Take applies limit l to key for a request of cost units (0 peeks: it
// answers from the current state and charges nothing, for the commands that
// allow it; GCRA requires at least 1).
func (c *Client) Take(ctx context.Context, key string, l Limit, cost int64) (Result, error) {
	args, err := l.args(key, cost)
	if err != nil {
		return Result{}, err
	}
	v, err := c.rdb.Do(ctx, args...).Int64Slice()
	if err != nil {
		return Result{}, err
	}
	return decode(v, l.unit())
}

// Allow applies l to key for one unit.
func (c *Client) Allow(ctx context.Context, key string, l Limit) (Result, error) {
	return c.Take(ctx, key, l, 1)
}

// ErrReply is returned for a reply that is not a limiter reply.
var ErrReply = errors.New("limitdb: malformed limiter reply")

// decode turns [limited, limit, remaining, retry_after, reset_after(, delay)]
// into a Result; unit is the wire unit of the three durations.
func decode(v []int64, unit time.Duration) (Result, error) {
	if len(v) != 5 && len(v) != 6 {
		return Result{}, fmt.Errorf("%w: %d fields, want 5 or 6", ErrReply, len(v))
	}
	r := Result{
		Limited:    v[0] == 1,
		Limit:      v[1],
		Remaining:  v[2],
		ResetAfter: time.Duration(v[4]) * unit,
	}
	switch {
	case v[3] >= 0:
		r.RetryAfter = time.Duration(v[3]) * unit
	case r.Limited:
		r.RetryAfter = Never
	}
	if len(v) == 6 && v[5] > 0 {
		r.Delay = time.Duration(v[5]) * unit
	}
	return r, nil
}
