// Package client is limitdb for Go applications: typed calls for every
// limiter command on top of go-redis, each answering one Result with
// durations as time.Duration. It owns the wire spelling of the commands and
// of their replies, and the near cache of denials and the batching of
// concurrent calls an application may turn on (WithNearCache,
// WithBatching). It never imports the server (resp, engine): an
// application links only go-redis and package clock.
package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/limitdb/limitdb/clock"
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
	rdb   Doer
	near  *nearCache // nil unless WithNearCache
	batch *batcher   // nil unless WithBatching
}

// Option configures a Client (WithNearCache, WithBatching).
type Option func(*Client)

// New wraps a go-redis client. For a client made for limiting, build its
// options with Options: go-redis' defaults retry failed commands (which can
// charge a request twice) and ignore the context's deadline on reads.
func New(rdb Doer, opts ...Option) *Client {
	c := &Client{rdb: rdb}
	for _, o := range opts {
		o(c)
	}
	return c
}

// WithNearCache makes Take answer, without a round trip, a request that a
// denial it got from the server proves denied: a denial of cost c for a
// key under a GCRA limit (Throttle, GCRA, a gcra Policy) or a token bucket
// (TokenBucket, a token_bucket Policy) stays a denial for any cost >= c
// until its RetryAfter has passed (less one unit of the reply's rounding).
// clk measures that time: clock.Real() in an application, the server's
// fake clock in a test. A locally answered Result has the cached reply's
// Limited, Limit and Remaining (the server's Remaining can only have grown
// since, unless other clients took from the key), and its RetryAfter and
// ResetAfter less the time elapsed since the request that got the denial
// was sent. Reset, SetPolicy and DeletePolicy forget what they affect; see
// near.go for what the cache cannot see.
func WithNearCache(clk clock.Clock) Option {
	return func(c *Client) { c.near = newNearCache(clk) }
}

// WithBatching makes concurrent Take calls share round trips: commands
// queued while maxInFlight pipelines (at least 1) are in flight are sent
// together in the next one. rdb must be a Pipeliner (every go-redis client
// is); otherwise the option does nothing. A lone call is sent at once.
func WithBatching(maxInFlight int) Option {
	return func(c *Client) {
		if p, ok := c.rdb.(Pipeliner); ok {
			c.batch = &batcher{p: p, max: max(maxInFlight, 1)}
		}
	}
}

// Stats counts what the near cache and batching saved.
type Stats struct {
	// NearAnswered are the Take calls answered from the near cache;
	// NearAsked those it could not answer, which went to the server.
	NearAnswered, NearAsked int64
	// Pipelines are the round trips batching made for Commands commands.
	Pipelines, Commands int64
}

// Stats returns the counts since the client was made.
func (c *Client) Stats() Stats {
	var s Stats
	if c.near != nil {
		s.NearAnswered, s.NearAsked = c.near.answered.Load(), c.near.asked.Load()
	}
	if c.batch != nil {
		s.Pipelines, s.Commands = c.batch.pipelines.Load(), c.batch.commands.Load()
	}
	return s
}

// ForgetNear empties the near cache: call it after deleting keys or
// changing policies by other means than this client (FLUSHALL, DEL, an
// operator's RL.POLICY SET, a rules file reload).
func (c *Client) ForgetNear() {
	if c.near != nil {
		c.near.forgetAll()
	}
}

// do sends one command, through the batcher when there is one.
func (c *Client) do(ctx context.Context, args []any) *redis.Cmd {
	if c.batch != nil {
		return c.batch.do(ctx, args)
	}
	return c.rdb.Do(ctx, args...)
}

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
// allow it; GCRA requires at least 1). With WithNearCache, a request a
// cached denial proves denied is answered without a round trip.
func (c *Client) Take(ctx context.Context, key string, l Limit, cost int64) (Result, error) {
	args, err := l.args(key, cost)
	if err != nil {
		return Result{}, err
	}
	var sent time.Duration
	var forgets int64
	nl, near := nearLimit(l)
	near = near && c.near != nil && cost > 0
	if near {
		sent = c.near.clk.Mono()
		var r Result
		var ok bool
		if r, forgets, ok = c.near.lookup(nl, key, cost, sent); ok {
			return r, nil
		}
	}
	v, err := c.do(ctx, args).Int64Slice()
	if err != nil {
		return Result{}, err
	}
	r, err := decode(v, l.unit())
	switch {
	case err != nil || !near:
	case r.Limited:
		c.near.store(ctx, c.rdb, nl, key, cost, sent, forgets, r)
	default:
		// An admission charged the key: a denial kept for a larger cost
		// still holds, but its Remaining no longer does.
		c.near.drop(nl, key)
	}
	return r, err
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
