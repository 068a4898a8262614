package twins

import (
	"github.com/limitdb/limitdb/internal/redisarg"
	"math"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/scripting"
)

// Twins of the fixed-window counters of express-rate-limit's Redis store
// and of python-limits (see doc.go for what a twin promises).

// rateLimitRedisIncrement is rate-limit-redis's increment: where the key
// has no expiry or no value (PTTL <= 0), SET key 1 PX windowMs and the
// reply {1, windowMs}; else INCR key and {hits, PTTL}.
func rateLimitRedisIncrement(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 1 {
		return false
	}
	window, ok := luaNumber(argv[0])
	if !ok || !luaInteger(window) || window < 1 {
		return false // SET PX refuses it: the interpreter says so
	}
	now := h.Now()
	at, ok := expireAt(now, int64(window), 1e6)
	if !ok {
		return false
	}
	handled := false
	var hits, ttl int64
	h.Engine().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
		switch {
		case ent.Kind == engine.KindNone || (ent.Kind == engine.KindString && ent.Expire == 0):
			hits, ttl, handled = 1, int64(window), true
			return engine.StringOfInt(1, at), true
		case ent.Kind != engine.KindString:
			return ent, false
		}
		var err error
		if hits, err = engine.AddInt(ent, 1); err != nil {
			return ent, false // INCR's error
		}
		ttl, handled = pttl(ent.Expire, now), true
		return engine.StringOfInt(hits, ent.Expire), true
	})
	if handled {
		w.Array(2)
		w.Int(luaInteger64(hits))
		w.Int(ttl)
	}
	return handled
}

// limitsIncrExpire is python-limits' incr_expire: INCRBY key amount, and
// where that made the value amount (a new window), EXPIRE key expiry; the
// reply is the new value.
func limitsIncrExpire(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 2 {
		return false
	}
	amount, ok := luaNumber(argv[1])
	if !ok || !luaInteger(amount) {
		return false // INCRBY refuses it
	}
	secs, err := parseInt(argv[0]) // EXPIRE's own parse of ARGV[1]
	if err != nil || secs <= 0 {
		return false
	}
	now := h.Now()
	at, ok := expireAt(now, secs, 1e9)
	if !ok {
		return false
	}
	delta := int64(amount)
	handled := false
	var current int64
	h.Engine().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
		var err error
		if current, err = engine.AddInt(ent, delta); err != nil {
			return ent, false // INCRBY's error
		}
		handled = true
		expire := ent.Expire
		if current == delta {
			expire = at
		}
		return engine.StringOfInt(current, expire), true
	})
	if handled {
		w.Int(luaInteger64(current))
	}
	return handled
}

// limitsAcquireMovingWindow is python-limits' acquire_moving_window: the
// list at key holds the window's timestamps, newest first. Where the entry
// at index limit - amount is no older than timestamp - expiry the window
// is full: the reply is false (nil). Else it pushes amount copies of
// timestamp (as redis.call writes a number, "%.17g"), trims the list to
// limit entries, sets its expiry to expiry seconds and replies true (1).
func limitsAcquireMovingWindow(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 4 {
		return false
	}
	var nums [4]float64
	for i := range nums {
		var ok bool
		if nums[i], ok = luaNumber(argv[i]); !ok {
			return false
		}
	}
	timestamp, limit, expiry, amount := nums[0], nums[1], nums[2], nums[3]
	if !luaInteger(limit) || !luaInteger(amount) || !luaInteger(expiry) || amount < 1 || amount > 1<<16 || expiry < 1 {
		return false // LINDEX, LPUSH, LTRIM or EXPIRE refuses, or EXPIRE deletes: the interpreter says so
	}
	now := h.Now()
	at, ok := expireAt(now, int64(expiry), 1e9)
	if !ok {
		return false
	}
	value := scripting.AppendCallNumber(nil, timestamp)
	handled, full := false, false
	h.Engine().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
		var l *engine.List
		switch ent.Kind {
		case engine.KindList:
			l = ent.Ext.(*engine.List)
		case engine.KindNone:
			l = engine.NewList()
			ent = engine.Entry{Kind: engine.KindList, Ext: l}
		default:
			return ent, false
		}
		if i, ok := redisarg.ListIndex(int64(limit-amount), l.Len()); ok {
			newest, ok := luaNumber(l.Index(i))
			if !ok {
				return ent, false // tonumber(entry) is nil: Lua's error
			}
			if newest >= timestamp-expiry {
				handled, full = true, true
				return ent, false
			}
		}
		handled = true
		for range int(amount) {
			l.PushHead(value)
		}
		from, to, ok := redisarg.RankRange(0, int64(limit)-1, l.Len())
		switch {
		case !ok:
			return engine.Entry{}, true // trimmed empty: the key is gone, EXPIRE finds nothing
		case to < l.Len()-1:
			l.Trim(from, to)
		}
		ent.Expire = at
		return ent, true
	})
	switch {
	case !handled:
		return false
	case full:
		w.Null()
	default:
		w.Int(1)
	}
	return true
}

// limitsMovingWindow is python-limits' moving_window, read-only: of the
// first limit+1 timestamps of the list at key, those no older than
// ARGV[1], counted until the first older one; the reply is {the newest,
// how many}, or an empty array when none is (a Lua table that starts with
// nil).
func limitsMovingWindow(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 2 {
		return false
	}
	since, ok1 := luaNumber(argv[0])
	limit, ok2 := luaNumber(argv[1])
	if !ok1 || !ok2 || !luaInteger(limit) {
		return false
	}
	var newest float64
	count := 0
	declined := false
	_, err := h.Engine().DoList(keys[0], h.Now(), false, func(l *engine.List) bool {
		from, to, ok := redisarg.RankRange(0, int64(limit), l.Len())
		for i := from; ok && i <= to; i++ {
			v, isNum := luaNumber(l.Index(i))
			if !isNum {
				declined = true
				return false
			}
			if v < since {
				break
			}
			if count == 0 {
				newest = v
			}
			count++
		}
		return false
	})
	if err != nil || declined {
		return false
	}
	if count == 0 {
		w.Array(0)
		return true
	}
	w.Array(2)
	w.Int(toLuaInteger(newest))
	w.Int(int64(count))
	return true
}

// luaInteger reports whether f is an integer that redis.call writes as
// one a command reads ("%.17g" of it has no point or exponent; -0, which
// tonumber("-0") is, is written "-0", which Redis reads as no integer).
func luaInteger(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) < 1e15 && !(f == 0 && math.Signbit(f))
}

// throttledCAS is throttled's compare-and-swap (goredisstore.v9): GET key;
// no value: the error reply "key does not exist"; a value other than
// ARGV[1]: 0; else SETEX key ARGV[3] ARGV[2] and 1. A key of another type
// (GET's WRONGTYPE) or an expiry SETEX refuses declines.
func throttledCAS(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 3 {
		return false
	}
	secs, err := parseInt(argv[2])
	if err != nil {
		return false
	}
	now := h.Now()
	at, ok := expireAt(now, secs, 1e9)
	if !ok {
		return false
	}
	handled, missing, swapped := false, false, false
	h.Engine().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
		switch ent.Kind {
		case engine.KindNone:
			handled, missing = true, true
			return ent, false
		case engine.KindString:
		default:
			return ent, false
		}
		handled = true
		var buf [24]byte
		if string(engine.AppendString(buf[:0], ent)) != string(argv[0]) {
			return ent, false
		}
		swapped = true
		return engine.StringEntry(argv[1], at), true
	})
	switch {
	case !handled:
	case missing:
		w.Error("key does not exist") // a reply the script returns, written as the interpreter writes it
	default:
		w.Int(b2i(swapped))
	}
	return handled
}
