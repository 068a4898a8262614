package twins

import (
	"math"
	"slices"
	"sync/atomic"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
	"github.com/limitdb/limitdb/scripting"
)

// Host is what a twin needs of the server that runs it: what its script
// reaches through redis.call, and no more. The command layer implements it
// for the client whose EVAL or EVALSHA names the script.
type Host interface {
	// Now is the instant of the batch the script runs in, in Unix
	// nanoseconds: the keys' liveness and the base of every expiry.
	Now() int64
	// Engine is the keyspace as the script reaches it: the handle of the
	// transaction it runs in (a script queued in MULTI), else the keyspace
	// itself, where one engine call on one key is atomic alone.
	Engine() *engine.Engine
	// Exclusive runs fn in a transaction that holds the shards of keys:
	// the script's, when it runs inside one, else one of its own. Writes
	// through tx reach replicas and the append-only file as one unit, as
	// an interpreted script's do.
	Exclusive(keys [][]byte, fn func(tx *engine.Engine))
	// Publish is redis.call("PUBLISH", channel, message).
	Publish(channel string, message []byte)
}

// Twin is a Go implementation of one library script, recognised by the
// SHA1 of its text.
type Twin struct {
	Name string // library.function, as INFO scripting shows it
	// Loops: its run is not one engine call in constant time (bottleneck's
	// walk expired jobs and clients), so the batch's instant is read anew
	// after it, as after any command that is not fast.
	Loops bool
	run   func(h Host, w *resp.Writer, keys, argv [][]byte) bool
	runs  atomic.Int64
}

// Run runs the twin for the script's KEYS and ARGV on h, writing its reply
// to w, and reports whether it answered. When it did not, it changed
// nothing and wrote nothing, and the script runs on the interpreter.
func (t *Twin) Run(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if !t.run(h, w, keys, argv) {
		return false
	}
	t.runs.Add(1)
	return true
}

// Runs is how many times the twin answered.
func (t *Twin) Runs() int64 { return t.runs.Load() }

// Registry is the twins by the SHA1 of their scripts' text. Each server
// builds its own with New: the twins count their runs.
type Registry struct {
	bySHA map[string]*Twin
	shas  []string // bySHA's keys, sorted
}

// New returns the twins of the seven libraries' scripts.
func New() *Registry {
	r := &Registry{bySHA: map[string]*Twin{
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
	}}
	// bottleneck 2.19.5's datastore: bottleneck.go.
	addBottleneck(r.bySHA)
	for sha := range r.bySHA {
		r.shas = append(r.shas, sha)
	}
	slices.Sort(r.shas)
	return r
}

// Get is the twin of the script whose SHA1 is sha (lowercase hex), or nil.
func (r *Registry) Get(sha string) *Twin { return r.bySHA[sha] }

// Each calls fn on every twin, in the order of their SHA1s.
func (r *Registry) Each(fn func(sha string, t *Twin)) {
	for _, sha := range r.shas {
		fn(sha, r.bySHA[sha])
	}
}

// luaNumber converts an argument as Lua's arithmetic and tonumber read a
// string (scripting.ReadNumber: strtod's decimal, hexadecimal and
// exponents). An infinity or a NaN declines: no library sends one, and
// the interpreter runs the script on it as Redis would.
func luaNumber(b []byte) (float64, bool) {
	if f, ok := shortInteger(b); ok {
		return f, true
	}
	f, ok := scripting.ReadNumber(string(b))
	if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
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
func luaBulk(w *resp.Writer, f float64) {
	var buf [32]byte
	w.Bulk(scripting.AppendLuaNumber(buf[:0], f))
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
	at, ok := expireAt(now, int64(ex), 1e9)
	if !ok {
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
func redisRate(h Host, w *resp.Writer, keys, argv [][]byte, decide func(tat, now, emission, burstOffset, cost float64) redisRateAnswer) bool {
	burst, rate, period, cost, ok := redisRateArgs(keys, argv)
	if !ok {
		return false
	}
	emission := period / rate
	burstOffset := emission * burst
	nowNs := h.Now()
	now := redisRateNow(nowNs)
	handled := false
	var a redisRateAnswer
	h.Engine().Do(keys[0], nowNs, func(ent engine.Entry) (engine.Entry, bool) {
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
		w.Array(4)
		w.Int(toLuaInteger(a.allowed))
		w.Int(toLuaInteger(a.remaining))
		luaBulk(w, a.retry)
		luaBulk(w, a.reset)
	}
	return handled
}

// toLuaInteger is Redis's conversion of a Lua number to an integer reply:
// C's (long long) cast on x86-64, toward zero, and INT64_MIN for a NaN and
// for anything at or past ±2^63 (2^63 itself, 1e20, -1e20 alike).
func toLuaInteger(f float64) int64 {
	if math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return math.MinInt64
	}
	return int64(f)
}

// luaInteger64 is a command's integer reply (INCRBY's) as a script that
// returns it replies: through a Lua number, so that past 2^53 it is
// rounded to a double, and INT64_MAX, which rounds to 2^63, is INT64_MIN.
func luaInteger64(n int64) int64 { return toLuaInteger(float64(n)) }

func redisRateAllowN(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return redisRate(h, w, keys, argv, func(tat, now, emission, burstOffset, cost float64) redisRateAnswer {
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

func redisRateAllowAtMost(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return redisRate(h, w, keys, argv, func(tat, now, emission, burstOffset, cost float64) redisRateAnswer {
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
func ululeIncr(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) != 2 {
		return false
	}
	delta, err := parseInt(argv[0]) // INCRBY's own parse
	if err != nil {
		return false
	}
	count := float64(delta) // tonumber(ARGV[1]) of an integer's text
	// PEXPIRE reads ARGV[2] itself when ttl > 0: an integer, or the script
	// fails.
	ttlMs, err := parseInt(argv[1])
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
	now := h.Now()
	if ttlMs*1_000_000 > math.MaxInt64-now { // PEXPIRE refuses it
		return false
	}
	handled := false
	var ret, left int64
	h.Engine().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
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
			left = pttl(next.Expire, now)
		}
		return next, true
	})
	if handled {
		w.Array(2)
		w.Int(luaInteger64(ret))
		w.Int(left)
	}
	return handled
}

// ululePeek is ulule/limiter's peek: {0, 0} for no key, else
// {tonumber(value), PTTL}.
func ululePeek(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if len(keys) != 1 {
		return false
	}
	now := h.Now()
	ent, ok := h.Engine().Get(keys[0], now)
	if !ok {
		w.Array(2)
		w.Int(0)
		w.Int(0)
		return true
	}
	v, ok := stringNumber(ent)
	if !ok {
		return false
	}
	w.Array(2)
	w.Int(toLuaInteger(v))
	if ent.Expire == 0 {
		w.Int(-1)
	} else {
		w.Int(pttl(ent.Expire, now))
	}
	return true
}

// flexibleIncrTTL is rate-limiter-flexible's script: SET key 0 EX secs NX,
// INCRBY key points, PTTL key, and where the key has no expiry EXPIRE key
// secs with ttl = 1000 * secs; the reply is {consumed, ttl}.
func flexibleIncrTTL(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) < 2 {
		return false
	}
	points, err1 := parseInt(argv[0]) // INCRBY's parse
	secs, err2 := parseInt(argv[1])   // SET EX's and EXPIRE's
	if err1 != nil || err2 != nil || secs <= 0 {
		return false // SET EX and EXPIRE refuse or delete: the interpreter says so
	}
	secsNum := float64(secs) // 1000 * ARGV[2]'s coercion of an integer's text
	now := h.Now()
	at, ok := expireAt(now, secs, 1e9)
	if !ok {
		return false
	}
	handled := false
	var consumed, ttl int64
	h.Engine().Do(keys[0], now, func(ent engine.Entry) (engine.Entry, bool) {
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
			ttl = pttl(expire, now)
		}
		handled = true
		return engine.StringOfInt(consumed, expire), true
	})
	if handled {
		w.Array(2)
		w.Int(luaInteger64(consumed))
		w.Int(ttl)
	}
	return handled
}
