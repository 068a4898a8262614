package command

import (
	"math"
	"strconv"

	"github.com/limitdb/limitdb/engine"
)

// Twins of the fixed-window counters of express-rate-limit's Redis store
// and of python-limits (see native.go for what a twin promises).

// rateLimitRedisIncrement is rate-limit-redis's increment: where the key
// has no expiry or no value (PTTL <= 0), SET key 1 PX windowMs and the
// reply {1, windowMs}; else INCR key and {hits, PTTL}.
func rateLimitRedisIncrement(c *Client, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 1 {
		return false
	}
	window, ok := luaNumber(argv[0])
	if !ok || window != math.Trunc(window) || window < 1 || window > 1<<53 {
		return false // SET PX refuses it: the interpreter says so
	}
	now := c.Now()
	at, err := setExpiry(now, int64(window), 1e6, false, "set")
	if err != nil {
		return false
	}
	handled := false
	var hits, ttl int64
	c.eng().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
		switch {
		case ent.Kind == engine.KindNone || (ent.Kind == engine.KindString && ent.Expire == 0):
			hits, ttl, handled = 1, int64(window), true
			return engine.StringEntry([]byte("1"), at), true
		case ent.Kind != engine.KindString:
			return ent, false
		}
		n, ok := engine.StringInteger(ent)
		if !ok || n == math.MaxInt64 {
			return ent, false // INCR's error
		}
		hits, ttl, handled = n+1, pttl(ent.Expire, now), true
		return engine.StringEntry(strconv.AppendInt(nil, hits, 10), ent.Expire), true
	})
	if handled {
		c.Array(2)
		c.Int(hits)
		c.Int(ttl)
	}
	return handled
}

// limitsIncrExpire is python-limits' incr_expire: INCRBY key amount, and
// where that made the value amount (a new window), EXPIRE key expiry; the
// reply is the new value.
func limitsIncrExpire(c *Client, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 2 {
		return false
	}
	amount, ok := luaNumber(argv[1])
	if !ok || amount != math.Trunc(amount) || math.Abs(amount) > 1<<53 {
		return false // INCRBY refuses it
	}
	secs, err := strconv.ParseInt(string(argv[0]), 10, 64) // EXPIRE's own parse of ARGV[1]
	if err != nil || secs <= 0 {
		return false
	}
	now := c.Now()
	at, err := setExpiry(now, secs, 1e9, false, "expire")
	if err != nil {
		return false
	}
	delta := int64(amount)
	handled := false
	var current int64
	c.eng().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
		var n int64
		if ent.Kind != engine.KindNone {
			var ok bool
			if n, ok = engine.StringInteger(ent); !ok {
				return ent, false
			}
		}
		if (delta > 0 && n > math.MaxInt64-delta) || (delta < 0 && n < math.MinInt64-delta) {
			return ent, false
		}
		current, handled = n+delta, true
		expire := ent.Expire
		if current == delta {
			expire = at
		}
		return engine.StringEntry(strconv.AppendInt(nil, current, 10), expire), true
	})
	if handled {
		c.Int(current)
	}
	return handled
}
