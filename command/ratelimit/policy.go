package ratelimit

import (
	"github.com/limitdb/limitdb/command"

	"errors"
	"strconv"

	"github.com/limitdb/limitdb/engine/limit"
	"github.com/limitdb/limitdb/policy"
)

// Named policies: RL.HIT, RL.HITALL and RL.POLICY. The policies themselves
// (model, rules file, watcher, counters, all-or-nothing application) live
// in package policy; this file parses arguments and writes replies.

func (f *Family) registerPolicy(t *command.Table) {
	t.Register(
		// The keys RL.HIT and RL.HITALL touch are derived, rl:<policy>:<key>:
		// Keys names them, so that MULTI and scripts lock their shards.
		// The key positions (COMMAND, COMMAND GETKEYS) are the key
		// arguments, which decide a cluster client's slot.
		&command.Command{Name: "rl.hit", Arity: -3, MaxArgs: 4, Flags: command.FlagWrite | command.FlagDenyOOM | command.FlagFast, Keys: hitKeys,
			FirstKey: 2, LastKey: 2, Step: 1,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(1); sliding_log: O(1) amortized, memory O(limit) per key",
			Summary: "Applies a named policy to a key: [limited, limit, remaining, retry_after, reset_after] in milliseconds.",
			Syntax:  "policy key [cost]", Handler: f.cmdRLHit},
		&command.Command{Name: "rl.hitall", Arity: -4, Flags: command.FlagWrite | command.FlagDenyOOM, Keys: hitAllKeys, KeyArgs: hitAllKeyArgs,
			Group: "rate_limit", Since: "0.1.0", Complexity: "O(N) where N is the number of pairs",
			Summary: "Applies several policies to keys, all or nothing: [limited, reply1, reply2, ...]; a denial charges none.",
			Syntax:  "numpairs policy key [policy key ...] [COST cost]", Handler: f.cmdRLHitAll},
		&command.Command{Name: "rl.policy", Arity: -2, Group: "rate_limit", Since: "0.1.0",
			Complexity: "Depends on subcommand.", Summary: "Defines, inspects and reloads named policies.", Syntax: "subcommand",
			Subs: []*command.Command{
				{Name: "rl.policy|set", Arity: -6, Flags: command.FlagWrite | command.FlagAdmin, Group: "rate_limit", Since: "0.1.0",
					Complexity: "O(P) where P is the number of policies",
					Summary:    "Defines or changes a runtime policy (kept in snapshots); names the rules file defines are refused. SCOPE global shares its limit with the peer regions (fixed_window, sliding_window, gcra, token_bucket; docs/global.md).",
					Syntax:     "name algorithm limit period [BURST burst] [SHADOW] [TZ zone] [HOLIDAYS date,...] [SCOPE local|global] [WAITREPLICAS n]",
					Handler:    f.cmdPolicySet},
				{Name: "rl.policy|get", Arity: 3, Flags: command.FlagReadonly | command.FlagFast, Group: "rate_limit", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Describes a policy in effect and its counters, or null; a global policy adds its scope, its over-admission bound and each peer region's lag.",
					Syntax: "name", Handler: f.cmdPolicyGet},
				{Name: "rl.policy|del", Arity: 3, Flags: command.FlagWrite | command.FlagAdmin, Group: "rate_limit", Since: "0.1.0",
					Complexity: "O(P) where P is the number of policies", Summary: "Deletes a runtime policy: 1 if it existed, else 0.",
					Syntax: "name", Handler: f.cmdPolicyDel},
				{Name: "rl.policy|list", Arity: 2, Flags: command.FlagReadonly, Group: "rate_limit", Since: "0.1.0",
					Complexity: "O(P log P)", Summary: "Lists the names of the policies in effect.", Handler: f.cmdPolicyList},
				{Name: "rl.policy|reload", Arity: 2, Flags: command.FlagAdmin, Group: "rate_limit", Since: "0.1.0",
					Complexity: "O(size of the rules file)", Summary: "Re-reads the rules file now; a broken file keeps the last good rules and answers why.",
					Handler: f.cmdPolicyReload},
				{Name: "rl.policy|help", Arity: 2, Flags: command.FlagLoading | command.FlagStale, Group: "rate_limit", Since: "0.1.0",
					Complexity: "O(1)", Summary: "Lists the RL.POLICY subcommands.", Handler: command.HelpFor("rl.policy")},
			}},
	)
}

// cmdRLHit answers RL.HIT policy key [cost].
func (f *Family) cmdRLHit(c *command.Client, args [][]byte) {
	cost := int64(1)
	if len(args) == 4 {
		var err error
		if cost, err = command.ParseAtLeast(args[3], 0, "cost"); err != nil {
			c.Error(err)
			return
		}
	}
	r, err := f.policies.Hit(c.Engine(), args[1], args[2], c.Now(), cost)
	if err != nil {
		c.Error(policyError(err))
		return
	}
	if cost > 0 {
		f.waitReplicas(c, args[1])
	}

	// The policy reported the decision to the analytics under its name.
	if r.Leased {
		c.CountLimit(r.Limited)
		writeLease(c, r.Result, r.Lease)
		return
	}
	c.PolicyLimit(r.Result, r.WithDelay)
}

// cmdRLHitAll answers RL.HITALL numpairs policy key [policy key ...] [COST n].
func (f *Family) cmdRLHitAll(c *command.Client, args [][]byte) {
	n, err := command.ParseAtLeast(args[1], 1, "numpairs")
	if err != nil {
		c.Error(err)
		return
	}
	rest := args[2:]
	if n > int64(len(rest)/2) {
		c.Err("ERR numpairs is larger than the number of policy key pairs given")
		return
	}
	cost := int64(1)
	switch extra := rest[2*n:]; {
	case len(extra) == 0:
	case len(extra) == 2 && command.EqualFold(extra[0], "cost"):
		if cost, err = command.ParseAtLeast(extra[1], 0, "cost"); err != nil {
			c.Error(err)
			return
		}
	default:
		c.Error(command.ErrSyntax)
		return
	}
	pairs := make([]policy.Pair, n)
	for i := range pairs {
		pairs[i] = policy.Pair{Policy: rest[2*i], Key: rest[2*i+1]}
	}
	limited, replies, err := f.policies.HitAll(c.Engine(), pairs, c.Now(), cost)
	if err != nil {
		c.Error(policyError(err))
		return
	}
	if cost > 0 {
		for _, p := range pairs {
			f.waitReplicas(c, p.Policy)
		}
	}
	// INFO limits: one decision per call, not per pair; each pair's
	// policy reported its key to the analytics.
	c.CountLimit(limited)
	c.Array(1 + len(replies))
	c.Int(int64(command.InfoBool(limited)))
	for _, r := range replies {

		if r.Leased {
			writeLease(c, r.Result, r.Lease)
			continue
		}

		writeLimit(c, r.Result, r.WithDelay)
	}
}

// writeLimit writes one uniform reply inside RL.HITALL's array. It is not
// command.Client.Limit so that each pair is not counted as a decision of its own:
// the call as a whole is admitted or denied.
func writeLimit(c *command.Client, r limit.Result, withDelay bool) {
	n := 5
	if withDelay {
		n = 6
	}
	c.Array(n)
	c.Int(int64(command.InfoBool(r.Limited)))
	c.Int(r.Limit)
	c.Int(r.Remaining)
	c.Int(r.RetryAfter)
	c.Int(r.ResetAfter)
	if withDelay {
		c.Int(r.Delay)
	}
}

// cmdPolicySet answers RL.POLICY SET name algorithm limit period [BURST n]
// [SHADOW] [TZ zone] [HOLIDAYS date,...] [SCOPE local|global]
// [WAITREPLICAS n]; period may be a calendar unit.
func (f *Family) cmdPolicySet(c *command.Client, args [][]byte) {
	p := policy.Policy{Name: string(args[2])}
	alg, ok := policy.ParseAlgorithm(string(args[3]))
	if !ok {
		c.Errf("unknown algorithm '%s' (use gcra, token_bucket, leaky_queue, fixed_window, sliding_window, sliding_log or concurrency)", command.Clip(args[3]))
		return
	}
	p.Algorithm = alg
	var err error
	if p.Limit, err = command.ParseAtLeast(args[4], 1, "limit"); err != nil {
		c.Error(err)
		return
	}
	if u, ok := calendarUnit(args[5]); ok {
		p.Calendar.Unit = u
	} else {
		d, err := limit.ParseDuration(string(args[5]))
		if err != nil {
			c.Errf("invalid period '%s': %v (or a calendar period: day, week, month, year or business_day)", command.Clip(args[5]), err)
			return
		}
		p.Period = d
	}
	for i := 6; i < len(args); i++ {
		switch {
		case command.EqualFold(args[i], "tz") && i+1 < len(args) && p.Calendar.Timezone == "":
			p.Calendar.Timezone = string(args[i+1])
			i++
		case command.EqualFold(args[i], "holidays") && i+1 < len(args) && p.Calendar.Holidays == "":
			p.Calendar.Holidays = string(args[i+1])
			i++
		case command.EqualFold(args[i], "burst") && i+1 < len(args) && p.Burst == 0:
			if p.Burst, err = command.ParseAtLeast(args[i+1], 1, "burst"); err != nil {
				c.Error(err)
				return
			}
			i++
		case command.EqualFold(args[i], "shadow") && !p.Shadow:
			p.Shadow = true
		case command.EqualFold(args[i], "scope") && i+1 < len(args):
			switch {
			case command.EqualFold(args[i+1], "global"):
				p.Global = true
			case command.EqualFold(args[i+1], "local"):
				p.Global = false
			default:
				c.Errf("invalid scope '%s' (local or global)", command.Clip(args[i+1]))
				return
			}
			i++
		case command.EqualFold(args[i], "waitreplicas") && i+1 < len(args):
			n, err := command.ParseAtLeast(args[i+1], 0, "waitreplicas")
			if err != nil {
				c.Error(err)
				return
			}
			p.WaitReplicas = int(min(n, policy.MaxWaitReplicas+1)) // past the bound: Validate's error
			i++
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	if err := f.policies.Set(p); err != nil {
		c.Error(policyError(err))
		return
	}
	f.replicate("policies", f.policies.MarshalRuntime)
	c.OK()
}

// cmdPolicyGet answers RL.POLICY GET name: a map of the policy's fields and
// counters, or null.
func (f *Family) cmdPolicyGet(c *command.Client, args [][]byte) {
	in, ok := f.policies.Get(string(args[2]))
	if !ok {
		c.Null()
		return
	}
	n := 10
	if in.Calendar.Unit != 0 {
		n += 2
	}
	if in.Global {
		n += 3
	}
	if in.WaitReplicas > 0 {
		n++
	}
	c.Map(n)
	c.BulkString("name")
	c.BulkString(in.Name)
	c.BulkString("algorithm")
	c.BulkString(string(in.Algorithm))
	c.BulkString("limit")
	c.Int(in.Limit)
	c.BulkString("period")
	c.BulkString(in.PeriodString())
	c.BulkString("burst")
	c.Int(in.EffectiveBurst())
	c.BulkString("shadow")
	c.Int(int64(command.InfoBool(in.Shadow)))
	c.BulkString("source")
	c.BulkString(string(in.Source))
	c.BulkString("admitted")
	c.Int(in.Admitted)
	c.BulkString("denied")
	c.Int(in.Denied)
	c.BulkString("shadow_denied")
	c.Int(in.ShadowDenied)
	if in.Global {
		writeGlobal(c, in.Policy, f.policies.Lags())
	}
	if in.WaitReplicas > 0 {
		c.BulkString("wait_replicas")
		c.Int(int64(in.WaitReplicas))
	}

	if in.Calendar.Unit != 0 {
		c.BulkString("timezone")
		c.BulkString(in.Calendar.Zone())
		holidays := in.Calendar.HolidayList()
		c.BulkString("holidays")
		c.Array(len(holidays))
		for _, h := range holidays {
			c.BulkString(h)
		}
	}
}

func (f *Family) cmdPolicyDel(c *command.Client, args [][]byte) {
	ok, err := f.policies.Del(string(args[2]))
	if err != nil {
		c.Error(policyError(err))
		return
	}
	if ok {
		f.replicate("policies", f.policies.MarshalRuntime)
	}
	c.Int(int64(command.InfoBool(ok)))
}

func (f *Family) cmdPolicyList(c *command.Client, _ [][]byte) {
	list := f.policies.List()
	c.Array(len(list))
	for _, in := range list {
		c.BulkString(in.Name)
	}
}

func (f *Family) cmdPolicyReload(c *command.Client, _ [][]byte) {
	if err := f.policies.Reload(); err != nil {
		if errors.Is(err, policy.ErrNoRulesFile) {
			c.Error(policyError(err))
			return
		}
		c.Err("ERR rules file not applied, keeping the last good rules: " + err.Error())
		return
	}
	c.OK()
}

// waitReplicas holds c's reply until the replicas policy name's
// wait_replicas asks for acknowledged its effect (docs/replication.md).
func (f *Family) waitReplicas(c *command.Client, name []byte) {
	if n := f.policies.WaitReplicas(name); n > 0 {
		c.WaitReplicas(n)
	}
}

// policyError words the policy package's errors for the wire.
func policyError(err error) error {
	var fe *policy.FieldError
	switch {
	case errors.Is(err, policy.ErrUnknown), errors.Is(err, policy.ErrFileOwned):
		return command.WireError("ERR " + err.Error())
	case errors.Is(err, policy.ErrNoRulesFile):
		return command.WireError("ERR no rules file configured (start limitdb with --rules FILE)")
	case errors.As(err, &fe):
		return command.WireError("ERR invalid " + fe.Field + ": " + fe.Msg)
	}
	return limitError(err)
}

// hitKeys is the key RL.HIT policy key touches.
func hitKeys(args [][]byte) [][]byte {
	return [][]byte{policy.Key(nil, string(args[1]), args[2])}
}

// hitAllKeys are the keys RL.HITALL numpairs policy key ... touches; a
// malformed call names none (it fails before touching any).
func hitAllKeys(args [][]byte) [][]byte {
	n, err := strconv.Atoi(string(args[1]))
	if err != nil || n < 1 || len(args) < 2+2*n {
		return nil
	}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = policy.Key(nil, string(args[2+2*i]), args[3+2*i])
	}
	return keys
}

// hitAllKeyArgs are the key arguments of RL.HITALL numpairs policy key ...
func hitAllKeyArgs(args [][]byte) [][]byte {
	n, err := strconv.Atoi(string(args[1]))
	if err != nil || n < 1 || len(args) < 2+2*n {
		return nil
	}
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = args[3+2*i]
	}
	return keys
}

// writeGlobal writes a global policy's scope, its over-admission bound now
// (cost units) and, per peer region, the lag the bound comes from:
// peers => [[name, lag_ms, max_lag_ms, partitioned, bound], ...].
func writeGlobal(c *command.Client, p policy.Policy, lags []policy.PeerLag) {
	c.BulkString("scope")
	c.BulkString("global")
	c.BulkString("bound")
	c.Int(policy.Bound(p, lags))
	c.BulkString("peers")
	c.Array(len(lags))
	for _, l := range lags {
		c.Array(5)
		c.BulkString(l.Name)
		c.Int(l.Lag.Milliseconds())
		c.Int(l.MaxLag.Milliseconds())
		c.Int(int64(command.InfoBool(l.Partitioned)))
		c.Int(policy.Bound(p, []policy.PeerLag{l}))
	}
}
