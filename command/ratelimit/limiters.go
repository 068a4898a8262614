package ratelimit

import (
	"github.com/limitdb/limitdb/command"

	"github.com/limitdb/limitdb/engine"
)

// The limiter commands beyond GCRA: one handler per algorithm, each parsing
// its arguments, building the engine's Limiter (which validates the
// combination) and writing the uniform reply in milliseconds.

func (f *Family) registerLimiters(t *command.Table) {
	const flags = command.FlagWrite | command.FlagDenyOOM | command.FlagFast
	t.Register(
		&command.Command{Name: "tb.take", Arity: -5, MaxArgs: 6, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, CostArg: 5,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1)",
			Summary: "Token bucket: take tokens (default 1) from a bucket of capacity refilled at refill per period. Reply in ms.",
			Syntax:  "key capacity refill period [tokens]", Handler: cmdTBTake},
		&command.Command{Name: "lb.queue", Arity: -5, MaxArgs: 6, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, CostArg: 5,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1)",
			Summary: "Leaky bucket as a queue: admit into a queue of capacity served at rate per period; the sixth field is the delay in ms.",
			Syntax:  "key capacity rate period [cost]", Handler: cmdLBQueue},
		&command.Command{Name: "fw.incr", Arity: -4, MaxArgs: 7, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, CostArg: 4,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1)",
			Summary: "Fixed window aligned to the Unix epoch, or a calendar window (day, week, month, year, business_day) in zone TZ (default UTC): count cost (default 1) against limit per window. Reply in ms.",
			Syntax:  "key limit window [cost] [TZ zone]", Handler: f.cmdFWIncr},
		&command.Command{Name: "sw.incr", Arity: -4, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, CostArg: 4,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1) with precision 1, O(precision) otherwise",
			Summary: "Sliding-window counter: the previous (sub-)window weighted by its share still inside the window; the window a duration or a calendar unit in zone TZ. Reply in ms.",
			Syntax:  "key limit window [cost] [PRECISION n] [TZ zone]", Handler: f.cmdSWIncr},
		&command.Command{Name: "sl.incr", Arity: -4, MaxArgs: 5, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, CostArg: 4,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1) amortized; memory O(limit) per key",
			Summary: "Sliding log, exact: admit when the cost logged in the last window plus cost fits the limit. Reply in ms.",
			Syntax:  "key limit window [cost]", Handler: cmdSLIncr},
	)
}

// limiterArgs are a limiter command's numbers: a count (capacity or limit),
// a rate where the command has one, a period or window in nanoseconds and
// the cost (1 unless given).
type limiterArgs struct {
	count, rate, period, cost int64
}

// parseRateArgs reads "capacity rate period [cost]" (TB.TAKE, LB.QUEUE).
func parseRateArgs(c *command.Client, args [][]byte, capName, rateName, costName string) (a limiterArgs, ok bool) {
	var err error
	if a.count, err = command.ParseAtLeast(args[2], 1, capName); err == nil {
		if a.rate, err = command.ParseAtLeast(args[3], 1, rateName); err == nil {
			a.period, err = command.ParseDuration(args[4], "period")
		}
	}
	a.cost = 1
	if err == nil && len(args) == 6 {
		a.cost, err = command.ParseAtLeast(args[5], 0, costName)
	}
	if err != nil {
		c.Error(err)
		return a, false
	}
	return a, true
}

// parseWindowArgs reads "limit window" (FW.INCR, SW.INCR, SL.INCR).
func parseWindowArgs(c *command.Client, args [][]byte) (a limiterArgs, ok bool) {
	var err error
	if a.count, err = command.ParseAtLeast(args[2], 1, "limit"); err == nil {
		a.period, err = command.ParseDuration(args[3], "window")
	}
	a.cost = 1
	if err != nil {
		c.Error(err)
		return a, false
	}
	return a, true
}

// limitReply runs l on the command's key and writes the reply.
func limitReply[L engine.Limiter](c *command.Client, args [][]byte, l L, err error, cost int64, withDelay bool) {
	if err != nil {
		c.Error(err)
		return
	}
	r, err := engine.Limit(c.Engine(), args[1], c.Now(), l, cost)
	if err != nil {
		c.Error(err)
		return
	}
	c.Limit(args[1], r, withDelay)
}

// cmdTBTake answers TB.TAKE key capacity refill period [tokens].
func cmdTBTake(c *command.Client, args [][]byte) {
	a, ok := parseRateArgs(c, args, "capacity", "refill", "tokens")
	if !ok {
		return
	}
	l, err := engine.NewTokenBucket(a.count, a.rate, a.period)
	limitReply(c, args, l, err, a.cost, false)
}

// cmdLBQueue answers LB.QUEUE key capacity rate period [cost] with the
// sixth field, the delay.
func cmdLBQueue(c *command.Client, args [][]byte) {
	a, ok := parseRateArgs(c, args, "capacity", "rate", "cost")
	if !ok {
		return
	}
	l, err := engine.NewLeakyQueue(a.count, a.rate, a.period)
	limitReply(c, args, l, err, a.cost, true)
}

// parseCost reads the optional cost of FW.INCR and SL.INCR.
func parseCost(c *command.Client, args [][]byte, a *limiterArgs) bool {
	if len(args) == 5 {
		var err error
		if a.cost, err = command.ParseAtLeast(args[4], 0, "cost"); err != nil {
			c.Error(err)
			return false
		}
	}
	return true
}

// cmdFWIncr answers FW.INCR key limit window [cost] [TZ zone].
func (f *Family) cmdFWIncr(c *command.Client, args [][]byte) {
	a, err := parseWindow(args, false)
	if err != nil {
		c.Error(err)
		return
	}
	if a.unit != 0 {
		l, err := f.calendarWindow(a, false)
		limitReply(c, args, l, err, a.cost, false)
		return
	}
	l, err := engine.NewFixedWindow(a.limit, a.period)
	limitReply(c, args, l, err, a.cost, false)
}

// cmdSLIncr answers SL.INCR key limit window [cost].
func cmdSLIncr(c *command.Client, args [][]byte) {
	if _, ok := calendarUnit(args[3]); ok {
		c.Error(errLogCalendar)
		return
	}
	a, ok := parseWindowArgs(c, args)
	if !ok || !parseCost(c, args, &a) {
		return
	}
	l, err := engine.NewSlidingLog(a.count, a.period)
	limitReply(c, args, l, err, a.cost, false)
}

// cmdSWIncr answers SW.INCR key limit window [cost] [PRECISION n] [TZ
// zone]; the cost and the options may come in any order.
func (f *Family) cmdSWIncr(c *command.Client, args [][]byte) {
	a, err := parseWindow(args, true)
	if err != nil {
		c.Error(err)
		return
	}
	if a.unit != 0 {
		l, err := f.calendarWindow(a, true)
		limitReply(c, args, l, err, a.cost, false)
		return
	}
	l, err := engine.NewSlidingWindow(a.limit, a.period, a.precision)
	limitReply(c, args, l, err, a.cost, false)
}
