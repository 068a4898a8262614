package keyspace

import (
	"math"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// String and counter commands, for the fixed-window limiter libraries and
// proxies (envoy's ratelimit, rate-limiter-flexible, ulule/limiter) that
// build limits out of GET, SET and INCR. Semantics and error texts are
// Redis 7's.

func registerStrings(t *command.Table) {
	str := func(name string, arity int, flags command.Flag, first, last, step int, complexity, summary, syntax string, h func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: first, LastKey: last, Step: step,
			Group: "string", Since: "0.1.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: h}
	}
	t.Register(
		str("get", 2, command.FlagReadonly|command.FlagFast, 1, 1, 1, "O(1)", "Returns the string value of a key.", "key", cmdGet),
		str("strlen", 2, command.FlagReadonly|command.FlagFast, 1, 1, 1, "O(1)", "Returns the length of a string value (0 if absent).", "key", cmdStrlen),
		str("set", -3, command.FlagWrite|command.FlagDenyOOM, 1, 1, 1, "O(1)",
			"Sets a string value, optionally only if absent or present, with an expiry, returning the old value.",
			"key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]", cmdSet),
		str("setnx", 3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, 1, 1, 1, "O(1)", "Sets a string value only if the key is absent; answers 1 if set.", "key value", cmdSetNX),
		str("setex", 4, command.FlagWrite|command.FlagDenyOOM, 1, 1, 1, "O(1)", "Sets a string value that expires after a number of seconds.", "key seconds value", cmdSetEx(1e9, "setex")),
		str("psetex", 4, command.FlagWrite|command.FlagDenyOOM, 1, 1, 1, "O(1)", "Sets a string value that expires after a number of milliseconds.", "key milliseconds value", cmdSetEx(1e6, "psetex")),
		str("incr", 2, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, 1, 1, 1, "O(1)", "Adds 1 to the integer at key (0 if absent), keeping its expiry.", "key", cmdIncr(1, false)),
		str("decr", 2, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, 1, 1, 1, "O(1)", "Subtracts 1 from the integer at key (0 if absent), keeping its expiry.", "key", cmdIncr(-1, false)),
		str("incrby", 3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, 1, 1, 1, "O(1)", "Adds an increment to the integer at key (0 if absent), keeping its expiry.", "key increment", cmdIncr(1, true)),
		str("decrby", 3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, 1, 1, 1, "O(1)", "Subtracts a decrement from the integer at key (0 if absent), keeping its expiry.", "key decrement", cmdIncr(-1, true)),
		str("mget", -2, command.FlagReadonly|command.FlagFast, 1, -1, 1, "O(N) where N is the number of keys",
			"Returns the values of several keys at one instant; nil for absent keys and keys that are not strings.", "key [key ...]", cmdMGet),
		str("mset", -3, command.FlagWrite|command.FlagDenyOOM, 1, -1, 2, "O(N) where N is the number of keys", "Sets several string values atomically.", "key value [key value ...]", cmdMSet(false)),
		str("msetnx", -3, command.FlagWrite|command.FlagDenyOOM, 1, -1, 2, "O(N) where N is the number of keys",
			"Sets several string values atomically only if none of the keys exists; answers 1 if set.", "key value [key value ...]", cmdMSet(true)),
		str("incrbyfloat", 3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, 1, 1, 1, "O(1)",
			"Adds a float to the number at key (0 if absent) in long double precision, as Redis does, keeping its expiry; returns the new value's text.",
			"key increment", cmdIncrByFloat),
		str("getset", 3, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, 1, 1, 1, "O(1)",
			"Sets a string value and returns the old one (nil if absent), dropping the key's expiry.", "key value", cmdGetSet),
		str("getdel", 2, command.FlagWrite|command.FlagFast, 1, 1, 1, "O(1)", "Returns a string value and deletes the key.", "key", cmdGetDel),
		str("getex", -2, command.FlagWrite|command.FlagFast, 1, 1, 1, "O(1)",
			"Returns a string value and sets or removes its expiry.",
			"key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]", cmdGetEx),
	)
}

func cmdGet(c *command.Client, args [][]byte) {
	val, ok, err := c.Engine().GetString(args[1], c.Now(), c.Scratch())
	stringReply(c, val, ok, err)
}

// cmdStrlen answers STRLEN: redis-cli --bigkeys sizes strings with it.
func cmdStrlen(c *command.Client, args [][]byte) {
	val, _, err := c.Engine().GetString(args[1], c.Now(), c.Scratch())
	if err != nil {
		c.Error(err)
		return
	}
	c.Int(int64(len(val)))
	c.SetScratch(val)
}

func cmdSet(c *command.Client, args [][]byte) {
	var o engine.SetOptions
	var unit int64 // of the expiry argument; 0 when none
	var abs bool
	var expArg []byte
	for i := 3; i < len(args); i++ {
		a := args[i]
		switch {
		case command.EqualFold(a, "nx") && !o.XX:
			o.NX = true
		case command.EqualFold(a, "xx") && !o.NX:
			o.XX = true
		case command.EqualFold(a, "get"):
			o.Get = true
		case command.EqualFold(a, "keepttl") && unit == 0:
			o.KeepTTL = true
		case (command.EqualFold(a, "ex") || command.EqualFold(a, "px") || command.EqualFold(a, "exat") || command.EqualFold(a, "pxat")) &&
			unit == 0 && !o.KeepTTL && i+1 < len(args):
			unit, abs = 1e9, len(a) == 4
			if a[0] == 'p' || a[0] == 'P' {
				unit = 1e6
			}
			expArg = args[i+1]
			i++
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	now := c.Now()
	if unit != 0 {
		n, err := command.ParseInt(expArg)
		if err != nil {
			c.Error(err)
			return
		}
		if o.Expire, err = command.ExpireAt(now, n, unit, abs, "set"); err != nil {
			c.Error(err)
			return
		}
	}
	old, hadOld, done, err := c.Engine().SetString(args[1], now, args[2], o, c.Scratch())
	if err == nil && done {
		notifySet(c, args[1], o.Expire != 0)
	}
	switch {
	case err != nil:
		c.Error(err)
	case o.Get && hadOld:
		c.Bulk(old)
		c.SetScratch(old)
	case o.Get, !done:
		c.Null()
	default:
		c.OK()
	}
}

func cmdSetNX(c *command.Client, args [][]byte) {
	_, _, done, err := c.Engine().SetString(args[1], c.Now(), args[2], engine.SetOptions{NX: true}, nil)
	if err != nil {
		c.Error(err)
		return
	}
	if done {
		notifySet(c, args[1], false)
	}
	c.Int(b2i(done))
}

func cmdSetEx(unit int64, name string) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		n, err := command.ParseInt(args[2])
		if err != nil {
			c.Error(err)
			return
		}
		now := c.Now()
		at, err := command.ExpireAt(now, n, unit, false, name)
		if err != nil {
			c.Error(err)
			return
		}
		if _, _, _, err := c.Engine().SetString(args[1], now, args[3], engine.SetOptions{Expire: at}, nil); err != nil {
			c.Error(err)
			return
		}
		notifySet(c, args[1], true)
		c.OK()
	}
}

// cmdIncr is INCR and DECR (sign alone) and INCRBY and DECRBY (sign times
// the argument).
func cmdIncr(sign int64, withArg bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		delta := sign
		if withArg {
			n, err := command.ParseInt(args[2])
			if err != nil {
				c.Error(err)
				return
			}
			if sign < 0 && n == math.MinInt64 {
				c.Err("ERR decrement would overflow")
				return
			}
			delta = sign * n
		}
		n, err := c.Engine().IncrBy(args[1], c.Now(), delta)
		if err != nil {
			c.Error(err)
			return
		}
		c.Notify(config.NotifyString, "incrby", args[1])
		c.Int(n)
	}
}

func cmdMGet(c *command.Client, args [][]byte) {
	keys := args[1:]
	vals := make([][]byte, len(keys))
	present := make([]bool, len(keys))
	first := engine.FirstPlaces(keys)
	c.Engine().DoMulti(keys, c.Now(), func(ents []engine.Entry) bool {
		for i := range keys {
			ent := ents[first[i]]
			if ent.Kind == engine.KindString {
				vals[i], present[i] = engine.AppendString(nil, ent), true
			}
		}
		return false
	})
	c.Array(len(keys))
	for i := range keys {
		if present[i] {
			c.Bulk(vals[i])
		} else {
			c.Null()
		}
	}
}

func cmdMSet(nx bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		if len(args)%2 == 0 {
			c.Errf("wrong number of arguments for '%s' command", lower(args[0]))
			return
		}
		n := (len(args) - 1) / 2
		keys, vals := make([][]byte, n), make([][]byte, n)
		for i := 0; i < n; i++ {
			keys[i], vals[i] = args[1+2*i], args[2+2*i]
		}
		done := c.Engine().SetStrings(keys, vals, c.Now(), nx)
		if done || !nx {
			for _, k := range keys {
				c.Notify(config.NotifyString, "set", k)
			}
		}
		if nx {
			c.Int(b2i(done))
			return
		}
		c.OK()
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func lower(b []byte) string {
	out := make([]byte, len(b))
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		out[i] = ch
	}
	return string(out)
}

func cmdIncrByFloat(c *command.Client, args [][]byte) {
	incr, ok := engine.ParseLongDouble(args[2])
	if !ok {
		c.Error(engine.ErrNotFloat)
		return
	}
	val, err := c.Engine().IncrByFloat(args[1], c.Now(), incr)
	if err != nil {
		c.Error(err)
		return
	}
	c.Notify(config.NotifyString, "incrbyfloat", args[1])
	c.Bulk(val)
}

func cmdGetSet(c *command.Client, args [][]byte) {
	old, hadOld, _, err := c.Engine().SetString(args[1], c.Now(), args[2], engine.SetOptions{Get: true}, c.Scratch())
	if err == nil {
		notifySet(c, args[1], false)
	}
	switch {
	case err != nil:
		c.Error(err)
	case hadOld:
		c.Bulk(old)
		c.SetScratch(old)
	default:
		c.Null()
	}
}

func cmdGetDel(c *command.Client, args [][]byte) {
	val, ok, err := c.Engine().GetDel(args[1], c.Now(), c.Scratch())
	if err == nil && ok {
		c.Notify(config.NotifyGeneric, "del", args[1])
	}
	stringReply(c, val, ok, err)
}

// cmdGetEx answers GETEX. As in Redis, the options are checked first, the
// key next (absent: nil; another type: WRONGTYPE), and the expiry's value
// last, so that a bad time is an error only for a string that exists.
func cmdGetEx(c *command.Client, args [][]byte) {
	var unit int64 // of the expiry argument; 0 when none
	var abs, persist bool
	var expArg []byte
	for i := 2; i < len(args); i++ {
		a := args[i]
		switch {
		case (command.EqualFold(a, "ex") || command.EqualFold(a, "px") || command.EqualFold(a, "exat") || command.EqualFold(a, "pxat")) &&
			unit == 0 && !persist && i+1 < len(args):
			unit, abs = 1e9, len(a) == 4
			if a[0] == 'p' || a[0] == 'P' {
				unit = 1e6
			}
			expArg = args[i+1]
			i++
		case command.EqualFold(a, "persist") && unit == 0:
			persist = true
		default:
			c.Error(command.ErrSyntax)
			return
		}
	}
	now := c.Now()
	var at int64 // the expiry set, when one is
	hadExpiry := false
	if persist && c.NotifyOn(config.NotifyGeneric) {
		_, exp, _ := c.Engine().Peek(args[1], now)
		hadExpiry = exp != 0
	}
	val, ok, err := c.Engine().GetEx(args[1], now, c.Scratch(), func() (int64, bool, error) {
		if persist {
			return 0, true, nil
		}
		if unit == 0 {
			return 0, false, nil
		}
		n, err := command.ParseInt(expArg)
		if err != nil {
			return 0, false, err
		}
		at, err = command.ExpireAt(now, n, unit, abs, "getex")
		return at, err == nil, err
	})
	switch {
	case err != nil || !ok:
	case at != 0 && at <= now:
		c.Notify(config.NotifyGeneric, "del", args[1])
	case at != 0:
		c.Notify(config.NotifyGeneric, "expire", args[1])
	case persist && hadExpiry:
		c.Notify(config.NotifyGeneric, "persist", args[1])
	}
	stringReply(c, val, ok, err)
}

// stringReply answers a string read into c.Scratch(): the error, nil for no
// value, or the value (whose buffer c keeps for the next read).
func stringReply(c *command.Client, val []byte, ok bool, err error) {
	switch {
	case err != nil:
		c.Error(err)
	case !ok:
		c.Null()
	default:
		c.Bulk(val)
		c.SetScratch(val)
	}
}

// notifySet tells SET's events for key: set, and expire when it was given
// one.
func notifySet(c *command.Client, key []byte, expire bool) {
	c.Notify(config.NotifyString, "set", key)
	if expire {
		c.Notify(config.NotifyGeneric, "expire", key)
	}
}
