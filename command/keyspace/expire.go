package keyspace

import (
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// Expiry commands. On a key of a Redis type (string, hash, set, sorted
// set) they behave as in Redis 7. A limiter's key expires by itself at the
// instant its state is fresh again (a full bucket, an empty window), so EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT and
// PERSIST refuse limiter keys with an error (DEL resets a limit); TTL, PTTL,
// EXPIRETIME and PEXPIRETIME read them.

func registerExpire(t *command.Table) {
	exp := func(name string, arity int, flags command.Flag, summary, syntax string, h func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "generic", Since: "0.1.0", Complexity: "O(1)", Summary: summary, Syntax: syntax, Handler: h}
	}
	const refuse = " Limiter keys refuse it: they expire when their limit is fresh."
	t.Register(
		exp("expire", -3, command.FlagWrite|command.FlagFast, "Sets a key's time to live in seconds."+refuse,
			"key seconds [NX|XX|GT|LT]", cmdExpire(1e9, false, "expire")),
		exp("pexpire", -3, command.FlagWrite|command.FlagFast, "Sets a key's time to live in milliseconds."+refuse,
			"key milliseconds [NX|XX|GT|LT]", cmdExpire(1e6, false, "pexpire")),
		exp("expireat", -3, command.FlagWrite|command.FlagFast, "Sets a key's expiry as a Unix time in seconds."+refuse,
			"key unix-time-seconds [NX|XX|GT|LT]", cmdExpire(1e9, true, "expireat")),
		exp("pexpireat", -3, command.FlagWrite|command.FlagFast, "Sets a key's expiry as a Unix time in milliseconds."+refuse,
			"key unix-time-milliseconds [NX|XX|GT|LT]", cmdExpire(1e6, true, "pexpireat")),
		exp("expiretime", 2, command.FlagReadonly|command.FlagFast, "Returns a key's expiry as a Unix time in seconds (-1 never, -2 absent).",
			"key", cmdExpireTime(1e9)),
		exp("pexpiretime", 2, command.FlagReadonly|command.FlagFast, "Returns a key's expiry as a Unix time in milliseconds (-1 never, -2 absent).",
			"key", cmdExpireTime(1e6)),
		exp("persist", 2, command.FlagWrite|command.FlagFast, "Removes a key's expiry; answers 1 if it had one."+refuse, "key", cmdPersist),
	)
}

func cmdExpire(unit int64, abs bool, name string) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		cond := engine.ExpireAlways
		var nx, xx, gt, lt bool
		for _, a := range args[3:] {
			switch {
			case command.EqualFold(a, "nx"):
				nx, cond = true, engine.ExpireNX
			case command.EqualFold(a, "xx"):
				xx, cond = true, engine.ExpireXX
			case command.EqualFold(a, "gt"):
				gt, cond = true, engine.ExpireGT
			case command.EqualFold(a, "lt"):
				lt, cond = true, engine.ExpireLT
			default:
				c.Errf("Unsupported option %s", command.Clip(a))
				return
			}
		}
		if nx && (xx || gt || lt) {
			c.Err("ERR NX and XX, GT or LT options at the same time are not compatible")
			return
		}
		if gt && lt {
			c.Err("ERR GT and LT options at the same time are not compatible")
			return
		}
		n, err := command.ParseInt(args[2])
		if err != nil {
			c.Error(err)
			return
		}
		now := c.Now()
		at, ok := command.ExpireAtMillis(now, n, unit == 1e9, abs)
		if !ok {
			c.Err("ERR invalid expire time in '" + name + "' command")
			return
		}
		set, err := c.Engine().SetExpire(args[1], now, at, cond)
		if err != nil {
			c.Error(err)
			return
		}
		switch {
		case set && at <= now: // Redis deletes a key given a time past
			c.Notify(config.NotifyGeneric, "del", args[1])
		case set:
			c.Notify(config.NotifyGeneric, "expire", args[1])
		}
		c.Int(b2i(set))
	}
}

func cmdExpireTime(unit int64) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		_, expire, ok := c.Engine().Peek(args[1], c.Now())
		switch {
		case !ok:
			c.Int(-2)
		case expire == 0:
			c.Int(-1)
		case unit == 1e6:
			c.Int(expire / 1e6)
		default:
			c.Int((expire/1e6 + 500) / 1000) // Redis rounds to the nearest second
		}
	}
}

func cmdPersist(c *command.Client, args [][]byte) {
	done, err := c.Engine().Persist(args[1], c.Now())
	if err != nil {
		c.Error(err)
		return
	}
	if done {
		c.Notify(config.NotifyGeneric, "persist", args[1])
	}
	c.Int(b2i(done))
}
