package ratelimit

import (
	"github.com/limitdb/limitdb/command"

	"errors"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/gcra"
)

func registerGcra(t *command.Table) {
	t.Register(
		&command.Command{Name: "cl.throttle", Arity: -5, MaxArgs: 6, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, CostArg: 5,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1)",
			Summary: "GCRA exactly as redis-cell: [limited, limit, remaining, retry_after, reset_after] in seconds.",
			Syntax:  "key max_burst count period [quantity]", Handler: cmdClThrottle},
		&command.Command{Name: "gcra", Arity: -5, MaxArgs: 7, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1)",
			Summary: "GCRA as Redis proposed it (redis/redis PR #15191, in no release): fractional period in seconds, replies rounded up to seconds.",
			Syntax:  "key max_burst tokens_per_period period [TOKENS count]", Handler: cmdGCRA},
	)
}

// cmdClThrottle answers CL.THROTTLE key max_burst count period [quantity]:
// integers only, period in seconds, quantity 0 peeks.
func cmdClThrottle(c *command.Client, args [][]byte) {
	maxBurst, err := command.ParseAtLeast(args[2], 0, "max_burst")
	if err != nil {
		c.Error(err)
		return
	}
	count, err := command.ParseAtLeast(args[3], 1, "count")
	if err != nil {
		c.Error(err)
		return
	}
	period, err := command.ParseAtLeast(args[4], 1, "period")
	if err != nil {
		c.Error(err)
		return
	}
	quantity := int64(1)
	if len(args) == 6 {
		if quantity, err = command.ParseAtLeast(args[5], 0, "quantity"); err != nil {
			c.Error(err)
			return
		}
	}
	l, err := gcra.CellLimit(maxBurst, count, period)
	if err != nil {
		c.Error(limitError(err))
		return
	}
	r, err := engine.Limit(c.Engine(), args[1], c.Now(), engine.CellLimiter{L: l}, quantity)
	if err != nil {
		c.Error(limitError(err))
		return
	}
	c.Limit(args[1], r, false)
}

// cmdGCRA answers GCRA key max_burst tokens_per_period period [TOKENS n]
// with the argument rules and error texts of the GCRA command Redis
// proposed (redis/redis PR #15191; in no released Redis or Valkey).
func cmdGCRA(c *command.Client, args [][]byte) {
	maxBurst, err := command.ParseInt(args[2])
	if err != nil {
		c.Error(err)
		return
	}
	if maxBurst < 0 {
		c.Err("ERR value is out of range, must be positive")
		return
	}
	perPeriod, err := command.ParseInt(args[3])
	if err != nil || perPeriod < 1 {
		c.Err("ERR value is out of range")
		return
	}
	period, err := command.ParseFloat(args[4])
	if err != nil {
		c.Error(err)
		return
	}
	if period <= 0 || period >= 1e12 {
		c.Err("ERR period must be > 0 and < 1e12")
		return
	}
	tokens := int64(1)
	if len(args) >= 6 {
		if !command.EqualFold(args[5], "tokens") {
			c.Error(command.ErrSyntax)
			return
		}
		if len(args) == 6 {
			c.Err("ERR Missing TOKENS value")
			return
		}
		if tokens, err = command.ParseInt(args[6]); err != nil || tokens < 1 {
			c.Err("ERR value is out of range")
			return
		}
	}
	l, err := gcra.RedisLimit(maxBurst, perPeriod, period)
	if err != nil {
		c.Err("ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and max_burst would cause an overflow")
		return
	}
	r, err := engine.Limit(c.Engine(), args[1], c.Now(), engine.RedisGCRALimiter{L: l}, tokens)
	if errors.Is(err, gcra.ErrOverflow) {
		c.Err("ERR GCRA limiting uses microsecond accuracy. Combination of period, tokens_per_period and TOKENS would cause an overflow")
		return
	}
	if err != nil {
		c.Error(err)
		return
	}
	c.Limit(args[1], r, false)
}

// limitError words the algorithm's parameter errors for the wire.
func limitError(err error) error {
	switch {
	case errors.Is(err, gcra.ErrZeroRate):
		return command.WireError("ERR zero rates are not supported: count and period must be positive")
	case errors.Is(err, gcra.ErrOverflow):
		return command.WireError("ERR parameters too large: max_burst, period and quantity overflow the nanosecond time range")
	}
	return err
}
