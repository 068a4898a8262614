package ratelimit

import (
	"errors"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/policy"
)

// RL.RESERVE and RL.SETTLE: reserve an estimated cost on a named policy,
// settle it later with the real one (policy.Store.Reserve and Settle; the
// arithmetic per algorithm is in the engine and docs/algorithms.md).

func (f *Family) registerReserve(t *command.Table) {
	const flags = command.FlagWrite | command.FlagDenyOOM | command.FlagFast
	t.Register(
		&command.Command{Name: "rl.reserve", Arity: -4, MaxArgs: 5, Flags: flags, Keys: hitKeys,
			FirstKey: 2, LastKey: 2, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(R) where R is the key's open reservations",
			Summary: "Charges an estimated cost to a named policy's key and opens a reservation: [limited, limit, remaining, retry_after, reset_after, reservation_id or null].",
			Syntax:  "policy key cost [ttl]", Handler: f.cmdRLReserve},
		&command.Command{Name: "rl.settle", Arity: 5, Flags: flags, Keys: hitKeys,
			FirstKey: 2, LastKey: 2, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(R) where R is the key's open reservations",
			Summary: "Settles a reservation at its actual cost, charging or giving back the difference: [over_limit, limit, remaining, retry_after, reset_after, settled].",
			Syntax:  "policy key reservation_id actual_cost", Handler: f.cmdRLSettle},
	)
}

// cmdRLReserve answers RL.RESERVE policy key cost [ttl].
func (f *Family) cmdRLReserve(c *command.Client, args [][]byte) {
	cost, err := command.ParseAtLeast(args[3], 0, "cost")
	if err != nil {
		c.Error(err)
		return
	}
	var ttl int64
	if len(args) == 5 {
		if ttl, err = command.ParseDuration(args[4], "ttl"); err != nil {
			c.Error(err)
			return
		}
		if ttl <= 0 || ttl > engine.MaxReservationTTL {
			c.Errf("invalid ttl '%s': must be positive and at most 1d", command.Clip(args[4]))
			return
		}
	}
	res, err := f.policies.Reserve(c.Engine(), args[1], args[2], c.Now(), cost, ttl)
	if err != nil {
		c.Error(reserveError(err))
		return
	}
	f.waitReplicas(c, args[1])
	c.CountLimit(res.Limited) // the policy reported it to the analytics
	c.Array(6)
	writeUniform(c, res.Reply)
	if !res.Admitted {
		c.Null()
		return
	}
	var buf [48]byte
	c.Bulk(res.ID.Append(buf[:0]))
}

// cmdRLSettle answers RL.SETTLE policy key reservation_id actual_cost.
func (f *Family) cmdRLSettle(c *command.Client, args [][]byte) {
	id, ok := engine.ParseReservationID(args[3])
	if !ok {
		c.Errf("invalid reservation id '%s': RL.RESERVE answers ids of the form <deadline-ms>-<seq>", command.Clip(args[3]))
		return
	}
	actual, err := command.ParseAtLeast(args[4], 0, "actual_cost")
	if err != nil {
		c.Error(err)
		return
	}
	r, st, err := f.policies.Settle(c.Engine(), args[1], args[2], c.Now(), id, actual)
	if err != nil {
		if errors.Is(err, engine.ErrReservationExpired) || errors.Is(err, engine.ErrReservationUnknown) {
			c.Errf("reservation '%s': %v", command.Clip(args[3]), err)
			return
		}
		c.Error(reserveError(err))
		return
	}
	f.waitReplicas(c, args[1])
	if st == engine.Settled {
		// INFO limits: a settle that left the key over its limit counts
		// as a denial, any other as an admission; a repeat counts nothing.
		c.CountLimitOn(args[2], r.Result)
	}
	c.Array(6)
	writeUniform(c, r)
	c.Int(int64(st))
}

// writeUniform writes the five uniform fields of r, inside a reply's array.
func writeUniform(c *command.Client, r policy.Reply) {
	c.Int(int64(command.InfoBool(r.Limited)))
	c.Int(r.Limit)
	c.Int(r.Remaining)
	c.Int(r.RetryAfter)
	c.Int(r.ResetAfter)
}

// reserveError words a reservation's errors for the wire.
func reserveError(err error) error {
	switch {
	case errors.Is(err, policy.ErrNoReservations):
		return command.WireError("ERR " + err.Error())
	case errors.Is(err, engine.ErrReservationsFull):
		return command.WireError("ERR " + err.Error())
	}
	return policyError(err)
}
