package command

import (
	"maps"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/scripting"
)

// Native scripts: limitdb recognises the exact scripts of the limiter
// libraries it was tested with, by the SHA1 of their text, and runs a Go
// implementation that gives what Redis's Lua gives: the same reply (down
// to Lua's "%.14g" in tostring), the same value left at the key (as
// redis.call's "%.17g" writes it) and the same expiry. Each works on one
// key with one engine call, so it is atomic without a transaction. Where
// the input is anything but the plain numbers the library sends (a value
// that is not a number, the wrong kind of key, hexadecimal arguments) the
// native code declines before changing anything and the script runs on
// the interpreter, errors and all.
//
// TestNativeScriptsMatchLua (tests/) runs each against its Lua text on the
// same states and compares replies, values and expiries;
// TestNativeEdgesMatchLua does the same for arguments and values other than
// plain numbers.

// nativeScript is one recognised script.
type nativeScript struct {
	Name string // library.function, as INFO scripting shows it
	run  func(c *Client, keys, argv [][]byte) bool
	runs atomic.Int64
	// loops: its run is not one engine call in constant time (bottleneck's
	// walk expired jobs and clients), so the batch's instant is read anew
	// after it, as after any command that is not fast.
	loops bool
}

// nativeScripts returns the recognised scripts by SHA1.
func nativeScripts() map[string]*nativeScript {
	scripts := map[string]*nativeScript{
		// go-redis/redis_rate v10.0.1, lua.go: allowN and allowAtMost.
		"f52a5b566060d79fd321d695df55bc918339c4aa": {Name: "redis_rate.allowN", run: redisRateAllowN},
		"054143318f521948424aa25df61d7f7ba835a9d7": {Name: "redis_rate.allowAtMost", run: redisRateAllowAtMost},
		// ulule/limiter v3.11.2, drivers/store/redis/store.go: the redis
		// store's increment and peek.
		"f74233f556d3f99c50b61169cf8aa8d5deb63fb2": {Name: "ulule.incr", run: ululeIncr},
		"566f5c6a17e5fddb9a10bf389f754edd0d899c61": {Name: "ulule.peek", run: ululePeek},
		// rate-limiter-flexible 11.4.0, lib/RateLimiterRedis.js: every
		// consume, reward and penalty with a duration.
		"a1de965f42e177aa339706bd580f049065eca79a": {Name: "rate-limiter-flexible.incrTtl", run: flexibleIncrTTL},
		// rate-limit-redis 6.0.1 (express-rate-limit's store), index.mjs:
		// increment.
		"895b92e1712734e1b464999be23953485475357b": {Name: "rate-limit-redis.increment", run: rateLimitRedisIncrement},
		// python-limits 2.8.0, resources/redis/lua_scripts/: its fixed
		// window, incr_expire.lua,
		"628bd136a573a06b346879695681af12ccef300f": {Name: "limits.incr_expire", run: limitsIncrExpire},
		// and its moving window: acquire_moving_window.lua, moving_window.lua.
		"d19f37c18768a509dbf1310a257bfc35be65609f": {Name: "limits.acquire_moving_window", run: limitsAcquireMovingWindow},
		"3136f0028c572d2959b5cdc5ec15b287fab6a9ff": {Name: "limits.moving_window", run: limitsMovingWindow},
		// throttled v2.15.0, store/goredisstore.v9: the compare-and-swap
		// its GCRA store sends with EVAL.
		"ebd682e30de074a6919bde872b507734c7c3ebe5": {Name: "throttled.cas", run: throttledCAS},
	}
	// bottleneck 2.19.5's datastore: native_bottleneck.go.
	maps.Copy(scripts, bottleneckScripts())
	return scripts
}

// nativeAdmits reports whether a twin may run for c. A twin makes its
// script's writes without the gates each redis.call passes
// (scriptCaller.Call), so where one of them could refuse a write (a
// read-only replica, writes stopped by a failed save, a user whose
// commands are limited, a keyspace at maxmemory) the script runs on the
// interpreter, which answers as Redis does.
func (s *Server) nativeAdmits(c *Client) bool {
	if s.readOnly.Load() || s.refuseWrites.Load() {
		return false
	}
	if !unrestricted(s.guard.acl.Load(), c) {
		return false
	}
	max, limited := s.memoryLimit()
	return !limited || s.eng.UsedBytes() <= max
}

// luaNumber converts an argument as Lua's arithmetic coerces a string
// (decimal only: anything else declines).
func luaNumber(b []byte) (float64, bool) {
	if f, ok := shortInteger(b); ok {
		return f, true
	}
	s := strings.TrimSpace(string(b))
	if s == "" || strings.ContainsAny(s, "xXnN_") { // hex, inf, nan, Go's digit separators
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// shortInteger reads the arguments libraries send (scripting.ShortInteger)
// as strtod does: "-0" is -0.
func shortInteger(b []byte) (float64, bool) {
	n, negative, ok := scripting.ShortInteger(b)
	if negative {
		return -float64(n), ok
	}
	return float64(n), ok
}

// stringNumber is tonumber(redis.call("GET", key)) of a string entry: the
// number it keeps (as redis_rate's twin stores one) or its text as Lua
// reads it. ok is false for text that is no number and for another kind.
func stringNumber(ent engine.Entry) (float64, bool) {
	if f, ok := engine.StringFloat(ent); ok || ent.Kind != engine.KindString {
		return f, ok
	}
	var buf [32]byte
	return luaNumber(engine.AppendString(buf[:0], ent))
}

// luaBulk writes f as a bulk string in Lua's tostring text.
func luaBulk(c *Client, f float64) {
	var buf [32]byte
	c.Bulk(scripting.AppendLuaNumber(buf[:0], f))
}

// redisRateNow is redis_rate's clock: TIME's seconds since 2017-01-01
// plus its microseconds as a fraction, computed as the script does.
func redisRateNow(now int64) float64 {
	sec, usec := now/1e9, (now%1e9)/1e3
	return (float64(sec) - 1483228800) + float64(usec)/1000000
}

// redisRateArgs reads burst, rate, period and cost.
func redisRateArgs(keys, argv [][]byte) (burst, rate, period, cost float64, ok bool) {
	if len(keys) != 1 || len(argv) != 4 {
		return 0, 0, 0, 0, false
	}
	var oks [4]bool
	burst, oks[0] = luaNumber(argv[0])
	rate, oks[1] = luaNumber(argv[1])
	period, oks[2] = luaNumber(argv[2])
	cost, oks[3] = luaNumber(argv[3])
	return burst, rate, period, cost, oks[0] && oks[1] && oks[2] && oks[3]
}

// redisRateTAT reads the stored theoretical arrival time as tonumber
// would; ok is false where the script would fail.
func redisRateTAT(ent engine.Entry, now float64) (float64, bool) {
	tat := now
	if ent.Kind != engine.KindNone {
		t, ok := stringNumber(ent)
		if !ok {
			return 0, false
		}
		tat = t
	}
	if now > tat { // math.max(tat, now)
		tat = now
	}
	return tat, true
}

// redisRateStore is redis.call("SET", key, new_tat, "EX",
// math.ceil(reset_after)) for a reset_after > 0: the number as "%.17g",
// the expiry as SET reads it. ok is false where SET would refuse the
// expiry.
func redisRateStore(now int64, newTAT, resetAfter float64) (engine.Entry, bool) {
	// ex >= 1: below 1e17 its "%.17g" is its digits; from 1e17 on it is
	// "1e+17" and the like, which SET refuses (as it does NaN's text).
	ex := math.Ceil(resetAfter)
	if !(ex < 1e17) {
		return engine.Entry{}, false
	}
	at, err := ExpireAt(now, int64(ex), 1e9, false, "set")
	if err != nil {
		return engine.Entry{}, false
	}
	return engine.StringOfFloat(newTAT, at), true
}

// redisRateAnswer is what one of redis_rate's scripts decides: its reply,
// and the theoretical arrival time to SET when store is true and
// resetAfter > 0 (the scripts' `if reset_after > 0 then SET ...`).
type redisRateAnswer struct {
	allowed, remaining float64
	retry, reset       float64 // replied in tostring's text
	store              bool
	newTAT, resetAfter float64
}

// redisRate runs one of redis_rate's scripts: its arguments, its clock,
// its GET, then decide's arithmetic on (tat, now, emission interval,
// burst offset, cost) in one engine call, then its SET and its reply.
func redisRate(c *Client, keys, argv [][]byte, decide func(tat, now, emission, burstOffset, cost float64) redisRateAnswer) bool {
	burst, rate, period, cost, ok := redisRateArgs(keys, argv)
	if !ok {
		return false
	}
	emission := period / rate
	burstOffset := emission * burst
	nowNs := c.Now()
	now := redisRateNow(nowNs)
	handled := false
	var a redisRateAnswer
	c.Engine().Do(keys[0], nowNs, func(ent engine.Entry) (engine.Entry, bool) {
		tat, ok := redisRateTAT(ent, now)
		if !ok {
			return ent, false
		}
		a, handled = decide(tat, now, emission, burstOffset, cost), true
		if !a.store || a.resetAfter <= 0 {
			return ent, false
		}
		next, ok := redisRateStore(nowNs, a.newTAT, a.resetAfter)
		if !ok {
			handled = false
			return ent, false
		}
		return next, true
	})
	if handled {
		c.Array(4)
		c.Int(toLuaInteger(a.allowed))
		c.Int(toLuaInteger(a.remaining))
		luaBulk(c, a.retry)
		luaBulk(c, a.reset)
	}
	return handled
}

// toLuaInteger is Redis's conversion of a Lua number to an integer reply.
func toLuaInteger(f float64) int64 {
	if math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return math.MinInt64
	}
	return int64(f)
}

func redisRateAllowN(c *Client, keys, argv [][]byte) bool {
	return redisRate(c, keys, argv, func(tat, now, emission, burstOffset, cost float64) redisRateAnswer {
		newTAT := tat + emission*cost
		allowAt := newTAT - burstOffset
		diff := now - allowAt
		remaining := diff / emission
		if remaining < 0 {
			return redisRateAnswer{retry: diff * -1, reset: tat - now}
		}
		resetAfter := newTAT - now
		return redisRateAnswer{allowed: cost, remaining: remaining, retry: -1, reset: resetAfter,
			store: true, newTAT: newTAT, resetAfter: resetAfter}
	})
}

func redisRateAllowAtMost(c *Client, keys, argv [][]byte) bool {
	return redisRate(c, keys, argv, func(tat, now, emission, burstOffset, cost float64) redisRateAnswer {
		diff := now - (tat - burstOffset)
		remaining := diff / emission
		if remaining < 1 {
			return redisRateAnswer{retry: emission - diff, reset: tat - now}
		}
		take := cost
		if remaining < take {
			take, remaining = remaining, 0
		} else {
			remaining -= take
		}
		newTAT := tat + emission*take
		resetAfter := newTAT - now
		return redisRateAnswer{allowed: take, remaining: remaining, retry: -1, reset: resetAfter,
			store: true, newTAT: newTAT, resetAfter: resetAfter}
	})
}

// ululeIncr is ulule/limiter's increment: INCRBY key count; a key that
// count started (ret == count) gets PEXPIRE ttl when ttl > 0 and the reply
// {ret, ttl}; any other gets {ret, PTTL}.
func ululeIncr(c *Client, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) != 2 {
		return false
	}
	delta, err := ParseInt(argv[0]) // INCRBY's own parse
	if err != nil {
		return false
	}
	count := float64(delta) // tonumber(ARGV[1]) of an integer's text
	// PEXPIRE reads ARGV[2] itself when ttl > 0: an integer, or the script
	// fails.
	ttlMs, err := ParseInt(argv[1])
	ttl := float64(ttlMs)
	if err != nil {
		var ok bool
		if ttl, ok = luaNumber(argv[1]); !ok || ttl > 0 {
			return false
		}
	}
	if ttl <= 0 {
		ttlMs = 0 // no PEXPIRE
	} else if ttlMs > math.MaxInt64/1_000_000 {
		return false
	}
	now := c.Now()
	if ttlMs*1_000_000 > math.MaxInt64-now { // PEXPIRE refuses it
		return false
	}
	handled := false
	var ret, left int64
	c.Engine().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
		var err error
		if ret, err = engine.AddInt(ent, delta); err != nil {
			return ent, false // INCRBY's error: the interpreter says so
		}
		next := engine.StringOfInt(ret, ent.Expire)
		handled = true
		switch {
		case float64(ret) == count && ttl > 0:
			next.Expire = now + ttlMs*1e6
			left = toLuaInteger(ttl)
		case float64(ret) == count:
			left = toLuaInteger(ttl)
		case next.Expire == 0:
			left = -1
		default:
			left = PTTL(next.Expire, now)
		}
		return next, true
	})
	if handled {
		c.Array(2)
		c.Int(ret)
		c.Int(left)
	}
	return handled
}

// ululePeek is ulule/limiter's peek: {0, 0} for no key, else
// {tonumber(value), PTTL}.
func ululePeek(c *Client, keys, argv [][]byte) bool {
	if len(keys) != 1 {
		return false
	}
	now := c.Now()
	ent, ok := c.Engine().Get(keys[0], now)
	if !ok {
		c.Array(2)
		c.Int(0)
		c.Int(0)
		return true
	}
	v, ok := stringNumber(ent)
	if !ok {
		return false
	}
	c.Array(2)
	c.Int(toLuaInteger(v))
	if ent.Expire == 0 {
		c.Int(-1)
	} else {
		c.Int(PTTL(ent.Expire, now))
	}
	return true
}

// flexibleIncrTTL is rate-limiter-flexible's script: SET key 0 EX secs NX,
// INCRBY key points, PTTL key, and where the key has no expiry EXPIRE key
// secs with ttl = 1000 * secs; the reply is {consumed, ttl}.
func flexibleIncrTTL(c *Client, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 2 {
		return false
	}
	points, err1 := ParseInt(argv[0]) // INCRBY's parse
	secs, err2 := ParseInt(argv[1])   // SET EX's and EXPIRE's
	if err1 != nil || err2 != nil || secs <= 0 {
		return false // SET EX and EXPIRE refuse or delete: the interpreter says so
	}
	secsNum := float64(secs) // 1000 * ARGV[2]'s coercion of an integer's text
	now := c.Now()
	at, err := ExpireAt(now, secs, 1e9, false, "set")
	if err != nil {
		return false
	}
	handled := false
	var consumed, ttl int64
	c.Engine().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
		var err error
		if consumed, err = engine.AddInt(ent, points); err != nil {
			return ent, false // INCRBY's error
		}
		expire := at // SET NX of an absent key
		if ent.Kind != engine.KindNone {
			expire = ent.Expire
		}
		if expire == 0 { // EXPIRE key secs
			expire, ttl = at, toLuaInteger(1000*secsNum)
		} else {
			ttl = PTTL(expire, now)
		}
		handled = true
		return engine.StringOfInt(consumed, expire), true
	})
	if handled {
		c.Array(2)
		c.Int(consumed)
		c.Int(ttl)
	}
	return handled
}
