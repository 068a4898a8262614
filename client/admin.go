package client

import (
	"context"
	"time"
)

// Reset deletes the state of key under l (DEL key; for a Policy, DEL of
// the key the server keeps it at, rl:<policy>:<key>), so that the key is
// fresh, and forgets the near cache's denials it voids. It reports whether
// there was state to delete. A Policy's state key hashes to another slot
// than key does, so on Redis Cluster send it to the node that owns key.
func (c *Client) Reset(ctx context.Context, key string, l Limit) (bool, error) {
	state, policy := key, ""
	if p, ok := l.(Policy); ok {
		state, policy = "rl:"+p.Name+":"+key, p.Name
	}
	n, err := c.rdb.Do(ctx, "DEL", state).Int64()
	if c.near != nil {
		// Forgotten even on an error: the DEL may have run.
		c.near.forgetKey(key, policy)
	}
	return n > 0, err
}

// PolicySpec is a named policy's rule, as RL.POLICY SET takes it.
type PolicySpec struct {
	// Algorithm is gcra, token_bucket, leaky_queue, fixed_window,
	// sliding_window, sliding_log or concurrency.
	Algorithm string
	Limit     int64
	Period    time.Duration
	// Burst is the burst of gcra and the buckets; 0 leaves the server's
	// default.
	Burst int64
	// Shadow counts would-be denials and denies nothing.
	Shadow bool
}

// SetPolicy defines or changes the runtime policy name (RL.POLICY SET) and
// forgets the near cache's denials under it, which a changed rule voids.
func (c *Client) SetPolicy(ctx context.Context, name string, s PolicySpec) error {
	period, err := formatDuration(s.Period)
	if err != nil {
		return err
	}
	args := []any{"RL.POLICY", "SET", name, s.Algorithm, s.Limit, period}
	if s.Burst != 0 {
		args = append(args, "BURST", s.Burst)
	}
	if s.Shadow {
		args = append(args, "SHADOW")
	}
	err = c.rdb.Do(ctx, args...).Err()
	if c.near != nil {
		c.near.forgetPolicy(name)
	}
	return err
}

// DeletePolicy deletes the runtime policy name (RL.POLICY DEL), reports
// whether it existed, and forgets the near cache's denials under it.
func (c *Client) DeletePolicy(ctx context.Context, name string) (bool, error) {
	n, err := c.rdb.Do(ctx, "RL.POLICY", "DEL", name).Int64()
	if c.near != nil {
		c.near.forgetPolicy(name)
	}
	return n == 1, err
}
