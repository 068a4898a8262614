package keyspace

import (
	"math"
	"math/big"
	"strconv"

	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
)

// Hash commands, for the limiter libraries whose Lua scripts keep a
// bucket's fields in a hash. Replies and error texts are Redis 7.0's.

func registerHash(t *command.Table) {
	h := func(name string, arity int, flags command.Flag, complexity, summary, syntax string, fn func(*command.Client, [][]byte)) *command.Command {
		return &command.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1,
			Group: "hash", Since: "0.2.0", Complexity: complexity, Summary: summary, Syntax: syntax, Handler: fn}
	}
	t.Register(
		h("hset", -4, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(N) where N is the number of fields set",
			"Sets fields of a hash, creating it; answers how many fields are new.", "key field value [field value ...]", cmdHSet(false)),
		h("hmset", -4, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(N) where N is the number of fields set",
			"Sets fields of a hash, creating it; answers OK (HSET's old form).", "key field value [field value ...]", cmdHSet(true)),
		h("hsetnx", 4, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(1)",
			"Sets a field of a hash only if it is absent; answers 1 if set.", "key field value", cmdHSetNX),
		h("hget", 3, command.FlagReadonly|command.FlagFast, "O(1)", "Returns a field's value; nil when the field or key is absent.", "key field", cmdHGet),
		h("hmget", -3, command.FlagReadonly|command.FlagFast, "O(N) where N is the number of fields",
			"Returns the values of several fields, nil for absent ones.", "key field [field ...]", cmdHMGet),
		h("hgetall", 2, command.FlagReadonly, "O(N) where N is the size of the hash",
			"Returns every field and value: in the order fields were set for a small hash (listpack), unordered for a large one.", "key", cmdHGetAll(true, true)),
		h("hkeys", 2, command.FlagReadonly, "O(N) where N is the size of the hash", "Returns every field of a hash.", "key", cmdHGetAll(true, false)),
		h("hvals", 2, command.FlagReadonly, "O(N) where N is the size of the hash", "Returns every value of a hash.", "key", cmdHGetAll(false, true)),
		h("hstrlen", 3, command.FlagReadonly|command.FlagFast, "O(1)", "Returns the length of a field's value (0 when absent).", "key field", cmdHStrlen),
		h("hlen", 2, command.FlagReadonly|command.FlagFast, "O(1)", "Counts the fields of a hash (0 when absent).", "key", cmdHLen),
		h("hexists", 3, command.FlagReadonly|command.FlagFast, "O(1)", "Answers 1 if the hash has the field.", "key field", cmdHExists),
		h("hdel", -3, command.FlagWrite|command.FlagFast, "O(N) where N is the number of fields removed",
			"Removes fields of a hash, and the key with its last field; answers how many were there.", "key field [field ...]", cmdHDel),
		h("hincrby", 4, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(1)",
			"Adds an integer to a field (0 if absent) and returns the sum.", "key field increment", cmdHIncrBy),
		h("hincrbyfloat", 4, command.FlagWrite|command.FlagDenyOOM|command.FlagFast, "O(1)",
			"Adds a float to a field (0 if absent) in long double precision, as Redis does, and returns the sum's text.", "key field increment", cmdHIncrByFloat),
	)
}

func cmdHSet(ok bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		if len(args)%2 != 0 {
			c.Errf("wrong number of arguments for '%s' command", lower(args[0]))
			return
		}
		added := int64(0)
		_, err := c.Engine().DoHash(args[1], c.Now(), true, func(h *engine.Hash) bool {
			for i := 2; i < len(args); i += 2 {
				if h.Set(args[i], args[i+1]) {
					added++
				}
			}
			return true
		})
		if err == nil {
			c.Notify(config.NotifyHash, "hset", args[1])
		}
		switch {
		case err != nil:
			c.Error(err)
		case ok:
			c.OK()
		default:
			c.Int(added)
		}
	}
}

func cmdHSetNX(c *command.Client, args [][]byte) {
	set := false
	_, err := c.Engine().DoHash(args[1], c.Now(), true, func(h *engine.Hash) bool {
		if _, ok := h.Get(args[2]); ok {
			return false
		}
		set = h.Set(args[2], args[3])
		return true
	})
	if err == nil && set {
		c.Notify(config.NotifyHash, "hset", args[1])
	}
	c.IntOrError(b2i(set), err)
}

// The read commands reply from inside the callback, under the shard's
// lock: the hash's bytes are valid there, and copying them out first
// would only cost an allocation.

func cmdHGet(c *command.Client, args [][]byte) {
	replied := false
	_, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
		if v, ok := h.Get(args[2]); ok {
			c.Bulk(v)
			replied = true
		}
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case !replied:
		c.Null()
	}
}

func cmdHMGet(c *command.Client, args [][]byte) {
	found, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
		c.Array(len(args) - 2)
		for _, f := range args[2:] {
			if v, ok := h.Get(f); ok {
				c.Bulk(v)
			} else {
				c.Null()
			}
		}
		return false
	})
	switch {
	case err != nil:
		c.Error(err)
	case !found:
		c.Array(len(args) - 2)
		for range args[2:] {
			c.Null()
		}
	}
}

// cmdHGetAll is HGETALL (fields and values: a map in RESP3), HKEYS and
// HVALS.
func cmdHGetAll(fields, values bool) func(c *command.Client, args [][]byte) {
	return func(c *command.Client, args [][]byte) {
		found, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
			if fields && values {
				c.Map(h.Len())
			} else {
				c.Array(h.Len())
			}
			h.Range(func(f, v []byte) bool {
				if fields {
					c.Bulk(f)
				}
				if values {
					c.Bulk(v)
				}
				return true
			})
			return false
		})
		switch {
		case err != nil:
			c.Error(err)
		case !found && fields && values:
			c.Map(0)
		case !found:
			c.Array(0)
		}
	}
}

func cmdHLen(c *command.Client, args [][]byte) {
	n := 0
	_, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
		n = h.Len()
		return false
	})
	c.IntOrError(int64(n), err)
}

func cmdHStrlen(c *command.Client, args [][]byte) {
	n := 0
	_, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
		v, _ := h.Get(args[2])
		n = len(v)
		return false
	})
	c.IntOrError(int64(n), err)
}

func cmdHExists(c *command.Client, args [][]byte) {
	has := false
	_, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
		_, has = h.Get(args[2])
		return false
	})
	c.IntOrError(b2i(has), err)
}

func cmdHDel(c *command.Client, args [][]byte) {
	n, left := int64(0), 0
	_, err := c.Engine().DoHash(args[1], c.Now(), false, func(h *engine.Hash) bool {
		n = countTrue(args[2:], h.Delete)
		left = h.Len()
		return n > 0
	})
	if err == nil && n > 0 {
		notifyLeft(c, config.NotifyHash, "hdel", args[1], left)
	}
	c.IntOrError(n, err)
}

func cmdHIncrBy(c *command.Client, args [][]byte) {
	incr, err := command.ParseInt(args[3])
	if err != nil {
		c.Error(err)
		return
	}
	var n int64
	var opErr error
	_, err = c.Engine().DoHash(args[1], c.Now(), true, func(h *engine.Hash) bool {
		if v, ok := h.Get(args[2]); ok {
			if n, opErr = command.ParseInt(v); opErr != nil {
				opErr = command.WireError("ERR hash value is not an integer")
				return false
			}
		}
		if (incr < 0 && n < math.MinInt64-incr) || (incr > 0 && n > math.MaxInt64-incr) {
			opErr = command.WireError("ERR increment or decrement would overflow")
			return false
		}
		n += incr
		var buf [20]byte
		h.Set(args[2], strconv.AppendInt(buf[:0], n, 10))
		return true
	})
	switch {
	case err != nil:
		c.Error(err)
	case opErr != nil:
		c.Error(opErr)
	default:
		c.Notify(config.NotifyHash, "hincrby", args[1])
		c.Int(n)
	}
}

func cmdHIncrByFloat(c *command.Client, args [][]byte) {
	incr, ok := engine.ParseLongDouble(args[3])
	if !ok {
		c.Error(engine.ErrNotFloat)
		return
	}
	if incr.IsInf() {
		c.Err("ERR value is NaN or Infinity")
		return
	}
	var out []byte
	var opErr error
	_, err := c.Engine().DoHash(args[1], c.Now(), true, func(h *engine.Hash) bool {
		cur := new(big.Float)
		if v, has := h.Get(args[2]); has {
			var ok bool
			if cur, ok = engine.ParseLongDouble(v); !ok {
				opErr = command.WireError("ERR hash value is not a float")
				return false
			}
		}
		sum, ok := engine.AddLongDouble(cur, incr)
		if !ok {
			opErr = engine.ErrNaNOrInf
			return false
		}
		out = engine.AppendLongDouble(c.Scratch(), sum)
		h.Set(args[2], out)
		return true
	})
	switch {
	case err != nil:
		c.Error(err)
	case opErr != nil:
		c.Error(opErr)
	default:
		c.Notify(config.NotifyHash, "hincrbyfloat", args[1])
		c.Bulk(out)
		c.SetScratch(out)
	}
}
