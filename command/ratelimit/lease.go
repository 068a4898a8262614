package ratelimit

import (
	"errors"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/lease"
	"github.com/limitdb/limitdb/engine/limit"
)

// The concurrency limiter's commands: CL.ACQUIRE, CL.RELEASE and CL.RENEW
// on a key, and RL.RELEASE and RL.RENEW on a concurrency policy's key
// (RL.HIT acquires). Leases live in engine/lease; this file parses
// arguments and writes replies.

// maxLeaseID is the longest lease id a caller may choose.
const maxLeaseID = 256

func (f *Family) registerLeases(t *command.Table) {
	// Releases and renewals add no memory: they are not refused at
	// maxmemory (no FlagDenyOOM), so a full server still frees slots.
	t.Register(
		&command.Command{Name: "cl.acquire", Arity: -4, MaxArgs: 5, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(log N) where N is the number of leases held on the key",
			Summary: "Concurrency limit: takes one of limit slots for ttl unless released first: [limited, limit, remaining, retry_after, reset_after, lease_id] in ms; a live lease_id renews.",
			Syntax:  "key limit ttl [lease_id]", Handler: cmdClAcquire},
		&command.Command{Name: "cl.release", Arity: 3, Flags: command.FlagWrite | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(log N) where N is the number of leases held on the key",
			Summary: "Releases a lease CL.ACQUIRE took: 1, or 0 when no live lease has that id (released already or expired).",
			Syntax:  "key lease_id", Handler: cmdClRelease},
		&command.Command{Name: "cl.renew", Arity: 4, Flags: command.FlagWrite | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(log N) where N is the number of leases held on the key",
			Summary: "Makes a live lease expire ttl from now: the ms until it expires, or a NOLEASE error when it expired or was released.",
			Syntax:  "key lease_id ttl", Handler: cmdClRenew},
		&command.Command{Name: "rl.release", Arity: 4, Flags: command.FlagWrite | command.FlagFast, Keys: hitKeys, FirstKey: 2, LastKey: 2, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(log N) where N is the number of leases held on the key",
			Summary: "Releases a lease RL.HIT took on a concurrency policy: 1, or 0 when no live lease has that id.",
			Syntax:  "policy key lease_id", Handler: f.cmdRLRelease},
		&command.Command{Name: "rl.renew", Arity: -4, MaxArgs: 5, Flags: command.FlagWrite | command.FlagFast, Keys: hitKeys, FirstKey: 2, LastKey: 2, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(log N) where N is the number of leases held on the key",
			Summary: "Makes a live lease of a concurrency policy expire ttl (default: the policy's period) from now: the ms until it expires, or NOLEASE.",
			Syntax:  "policy key lease_id [ttl]", Handler: f.cmdRLRenew},
	)
}

// cmdClAcquire answers CL.ACQUIRE key limit ttl [lease_id].
func cmdClAcquire(c *command.Client, args [][]byte) {
	n, err := command.ParseAtLeast(args[2], 1, "limit")
	if err != nil {
		c.Error(err)
		return
	}
	ttl, ok := parseTTL(c, args[3])
	if !ok {
		return
	}
	var id string
	if len(args) == 5 {
		if !validLeaseID(c, args[4]) {
			return
		}
		id = string(args[4])
	}
	l := engine.LeaseLimiter{Limit: n, TTL: ttl}
	r, got, err := l.Acquire(c.Engine(), args[1], c.Now(), 1, id)
	if err != nil {
		c.Error(err)
		return
	}
	c.CountLimitOn(args[1], r)
	writeLease(c, r, got)
}

// cmdClRelease answers CL.RELEASE key lease_id.
func cmdClRelease(c *command.Client, args [][]byte) {
	released, err := engine.ReleaseLease(c.Engine(), args[1], c.Now(), string(args[2]))
	if err != nil {
		c.Error(err)
		return
	}
	c.Int(int64(command.InfoBool(released)))
}

// cmdClRenew answers CL.RENEW key lease_id ttl.
func cmdClRenew(c *command.Client, args [][]byte) {
	ttl, ok := parseTTL(c, args[3])
	if !ok {
		return
	}
	now := c.Now()
	exp, err := engine.RenewLease(c.Engine(), args[1], now, string(args[2]), ttl)
	if err != nil {
		c.Error(leaseError(err, args[2]))
		return
	}
	c.Int(limit.CeilMillis(exp - now))
}

// cmdRLRelease answers RL.RELEASE policy key lease_id.
func (f *Family) cmdRLRelease(c *command.Client, args [][]byte) {
	released, err := f.policies.Release(c.Engine(), args[1], args[2], string(args[3]), c.Now())
	if err != nil {
		c.Error(policyError(err))
		return
	}
	f.waitReplicas(c, args[1])
	c.Int(int64(command.InfoBool(released)))
}

// cmdRLRenew answers RL.RENEW policy key lease_id [ttl].
func (f *Family) cmdRLRenew(c *command.Client, args [][]byte) {
	var ttl int64
	if len(args) == 5 {
		var ok bool
		if ttl, ok = parseTTL(c, args[4]); !ok {
			return
		}
	}
	now := c.Now()
	exp, err := f.policies.Renew(c.Engine(), args[1], args[2], string(args[3]), ttl, now)
	if err != nil {
		c.Error(policyError(leaseError(err, args[3])))
		return
	}
	f.waitReplicas(c, args[1])
	c.Int(limit.CeilMillis(exp - now))
}

// parseTTL reads a lease's ttl as every limitdb duration (an integer is
// seconds; 500ms, 1.5s, 5m), at most lease.MaxTTL.
func parseTTL(c *command.Client, b []byte) (int64, bool) {
	ttl, err := command.ParseDuration(b, "ttl")
	if err == nil && ttl > lease.MaxTTL {
		err = command.WireError("ERR invalid ttl '" + command.Clip(b) + "': longer than 100 years")
	}
	if err != nil {
		c.Error(err)
		return 0, false
	}
	return ttl, true
}

// validLeaseID checks a lease id the caller chose: 1 to maxLeaseID bytes.
func validLeaseID(c *command.Client, id []byte) bool {
	if len(id) == 0 || len(id) > maxLeaseID {
		c.Err("ERR lease_id must be 1 to 256 bytes")
		return false
	}
	return true
}

// leaseError words lease.ErrNoLease for the wire: NOLEASE, a code of its
// own, so that a client tells a lost lease from a bad request.
func leaseError(err error, id []byte) error {
	if errors.Is(err, lease.ErrNoLease) {
		return command.WireError("NOLEASE no live lease '" + command.Clip(id) + "' on this key: it expired or was released")
	}
	return err
}

// writeLease writes the uniform reply and the lease's id, nil when none
// was taken.
func writeLease(c *command.Client, r limit.Result, id string) {
	c.Array(6)
	c.Int(int64(command.InfoBool(r.Limited)))
	c.Int(r.Limit)
	c.Int(r.Remaining)
	c.Int(r.RetryAfter)
	c.Int(r.ResetAfter)
	if id == "" {
		c.Null()
		return
	}
	c.BulkString(id)
}
