package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Concurrency is CL.ACQUIRE key limit ttl [lease_id]: at most Limit leases
// held at once on a key, each freed by CL.RELEASE or, if its holder never
// releases it (it crashed), when TTL has passed since it was acquired or
// last renewed.
type Concurrency struct {
	Limit int64
	TTL   time.Duration
}

// ErrNoLease is CL.RENEW or RL.RENEW of a lease that is no longer held:
// it expired or was released. Its holder has lost its slot.
var ErrNoLease = errors.New("limitdb: no live lease with this id")

// Acquire takes one of l.Limit slots on key for l.TTL under an id the
// server makes (128 random bits, unique across restarts and failovers).
// The Result's LeaseID, "" when denied, releases and renews the lease;
// when denied, RetryAfter is the time until the earliest lease expires.
func (c *Client) Acquire(ctx context.Context, key string, l Concurrency) (Result, error) {
	return c.AcquireID(ctx, key, l, "")
}

// AcquireID is Acquire under an id the caller chooses (1 to 256 bytes; ""
// lets the server choose). Acquiring an id that is already held renews
// that lease for l.TTL and is admitted whatever the count: the holder
// keeps its slot.
func (c *Client) AcquireID(ctx context.Context, key string, l Concurrency, id string) (Result, error) {
	ttl, err := formatDuration(l.TTL)
	if err != nil {
		return Result{}, fmt.Errorf("limitdb: CL.ACQUIRE ttl: %w", err)
	}
	args := []any{"CL.ACQUIRE", key, l.Limit, ttl}
	if id != "" {
		args = append(args, id)
	}
	return decodeLease(c.rdb.Do(ctx, args...))
}

// Release frees the lease id on key. It reports whether a live lease was
// released; releasing twice, or after the lease expired, answers false and
// is not an error.
func (c *Client) Release(ctx context.Context, key, id string) (bool, error) {
	n, err := c.rdb.Do(ctx, "CL.RELEASE", key, id).Int64()
	return n == 1, err
}

// Renew makes the live lease id on key expire ttl from now and returns the
// time left until it does; ErrNoLease when the lease expired or was
// released.
func (c *Client) Renew(ctx context.Context, key, id string, ttl time.Duration) (time.Duration, error) {
	d, err := formatDuration(ttl)
	if err != nil {
		return 0, fmt.Errorf("limitdb: CL.RENEW ttl: %w", err)
	}
	return renewReply(c.rdb.Do(ctx, "CL.RENEW", key, id, d))
}

// AcquirePolicy is RL.HIT on a concurrency policy: a lease of the
// policy's period on key. (Take with a Policy cannot read the lease's id.)
func (c *Client) AcquirePolicy(ctx context.Context, policy, key string) (Result, error) {
	return decodeLease(c.rdb.Do(ctx, "RL.HIT", policy, key))
}

// ReleasePolicy is RL.RELEASE: Release for a lease AcquirePolicy took.
func (c *Client) ReleasePolicy(ctx context.Context, policy, key, id string) (bool, error) {
	n, err := c.rdb.Do(ctx, "RL.RELEASE", policy, key, id).Int64()
	return n == 1, err
}

// RenewPolicy is RL.RENEW: Renew for a lease AcquirePolicy took; a ttl of
// 0 renews for the policy's period.
func (c *Client) RenewPolicy(ctx context.Context, policy, key, id string, ttl time.Duration) (time.Duration, error) {
	args := []any{"RL.RENEW", policy, key, id}
	if ttl != 0 {
		d, err := formatDuration(ttl)
		if err != nil {
			return 0, fmt.Errorf("limitdb: RL.RENEW ttl: %w", err)
		}
		args = append(args, d)
	}
	return renewReply(c.rdb.Do(ctx, args...))
}

// decodeLease reads [limited, limit, remaining, retry_after, reset_after,
// lease_id] in milliseconds.
func decodeLease(cmd *redis.Cmd) (Result, error) {
	v, err := cmd.Slice()
	if err != nil {
		return Result{}, err
	}
	if len(v) != 6 {
		return Result{}, fmt.Errorf("%w: a lease reply of %d fields, want 6", ErrReply, len(v))
	}
	return decodeLeaseFields(v)
}

// decodeLeaseFields reads a six-field lease reply (RL.HITALL's pairs too).
func decodeLeaseFields(v []any) (Result, error) {
	ns := make([]int64, 5)
	for i := range ns {
		n, ok := v[i].(int64)
		if !ok {
			return Result{}, fmt.Errorf("%w: lease reply field %d is %T", ErrReply, i, v[i])
		}
		ns[i] = n
	}
	r, err := decode(ns, time.Millisecond)
	if err != nil {
		return Result{}, err
	}
	switch id := v[5].(type) {
	case nil:
		return r, nil
	case string:
		r.LeaseID = id
		return r, nil
	}
	return Result{}, fmt.Errorf("%w: lease id is %T", ErrReply, v[5])
}

// renewReply reads a renewal's milliseconds, or NOLEASE as ErrNoLease.
func renewReply(cmd *redis.Cmd) (time.Duration, error) {
	ms, err := cmd.Int64()
	if err != nil {
		if strings.HasPrefix(err.Error(), "NOLEASE ") {
			return 0, fmt.Errorf("%w: %s", ErrNoLease, strings.TrimPrefix(err.Error(), "NOLEASE "))
		}
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}
