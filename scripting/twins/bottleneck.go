package twins

import (
	"math"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/resp"
)

// Twins of bottleneck 2.19.5's scripts (lib/Scripts.js): each is refs.lua,
// the headers its template names (validate_keys.lua, validate_client.lua,
// process_tick.lua, conditions_check.lua, refresh_expiration.lua) and its
// own file. A limiter lives in eight keys, two hashes of settings and
// queued counts, two of jobs, four sorted sets; a script runs over all of
// them in one transaction, as the interpreter would, and publishes on
// b_<id> what the script publishes. bottleneck_tick.go has the shared
// state and process_tick; tests/native_bottleneck_test.go walks every
// script against its text on the interpreter.

// addBottleneck adds to twins bottleneck's, by SHA1 of the text it sends.
func addBottleneck(twins map[string]*Twin) {
	scripts := map[string]*Twin{
		"9681e2eb0f886df26fa948812dbd55b6263256c4": {Name: "bottleneck.init", run: bottleneckInit},
		"26d5cd859734aea4f86e797b89b5a69b6205af43": {Name: "bottleneck.group_check", run: bottleneckGroupCheck},
		"bf0099497e081e19f6e6f1a4e90d6d502e2230a7": {Name: "bottleneck.register_client", run: bottleneckRegisterClient},
		"3c8a7355139ada3e72f53fb98e867cbc6b003664": {Name: "bottleneck.blacklist_client", run: bottleneckBlacklistClient},
		"8bd3e064b718321194a8df49c69e48fd0ffb4dcd": {Name: "bottleneck.heartbeat", run: bottleneckHeartbeat},
		"621fc7ecd6cf6f4f27ef7c741843853adbcd265b": {Name: "bottleneck.update_settings", run: bottleneckUpdateSettings},
		"291d32ae9e5f34dc078d5ce506219b7f611c9ee2": {Name: "bottleneck.running", run: bottleneckAfterTick(bnRunning)},
		"608f9f70fd5309ad84c004a11b17c03168b3a300": {Name: "bottleneck.queued", run: bottleneckQueued},
		"e48fa2d8f7727c9774b7a088c3ca89cc24b02508": {Name: "bottleneck.done", run: bottleneckAfterTick(bnDone)},
		"6f6eb052b7b0a87b430ac68547917a8aecbb9a4a": {Name: "bottleneck.check", run: bottleneckCheck},
		"f00a66a4159e8488fd6e3b8ccba92a8c602f2062": {Name: "bottleneck.submit", run: bottleneckSubmit},
		"f015b372dc34d68d4d08ea116eac3307c8602945": {Name: "bottleneck.register", run: bottleneckRegister},
		"bc60425feabe5bc26ad7ef67604a9bb0d6c03afb": {Name: "bottleneck.free", run: bottleneckFree},
		"e8553397e5a377190dec59912c76c7986551aa06": {Name: "bottleneck.current_reservoir", run: bottleneckAfterTick(bnReservoir)},
		"a7cb1e67d8103dd9df7128caf9aae9f234f3fad7": {Name: "bottleneck.increment_reservoir", run: bottleneckIncrementReservoir},
	}
	for sha, t := range scripts {
		t.Loops = true
		twins[sha] = t
	}
}

// bnHeaders are the checks a script starts with.
type bnHeaders int

const (
	bnNoChecks     bnHeaders = iota
	bnValidateKeys           // validate_keys.lua: the settings exist
	bnValidateBoth           // and validate_client.lua: the client is known, and seen now
)

// bottleneckRun runs body as one of bottleneck's scripts over refs.lua's
// eight keys and arguments (ARGV[1] now, ARGV[2] the client, then at
// least args more), after the checks its headers make. body reports
// whether it answered; it declines only before its first write that is
// not idempotent.
func bottleneckRun(h Host, w *resp.Writer, keys, argv [][]byte, args int, headers bnHeaders, body func(r *bnRun) bool) bool {
	if len(keys) != bnKeys || len(argv) < 2+args || aliased(keys) {
		return false
	}
	now, ok := bnNumber(argv[0])
	if !ok || !now.set || math.Abs(now.v) >= 1e14 { // '('..now writes it as "%.14g"
		return false
	}
	r := bnRun{h: h, keys: keys, at: h.Now(), now: now.v, client: argv[1]}
	handled := false
	run := func(tx *engine.Engine) {
		r.tx = tx
		for i, k := range keys {
			kind, _, ok := tx.Peek(k, r.at)
			if ok && kind != bnKind(i) {
				return // WRONGTYPE somewhere: the interpreter says where
			}
			if i == bnSettings {
				r.hasSettings = ok
			}
		}
		if headers >= bnValidateKeys {
			if !r.hasSettings {
				w.Error("ERR SETTINGS_KEY_NOT_FOUND") // redis.error_reply adds ERR to a message with no code, as Redis 7 does
				handled = true
				return
			}
		}
		if headers >= bnValidateBoth {
			if _, ok := r.zscore(bnClientLastSeen, r.client); !ok {
				w.Error("ERR UNKNOWN_CLIENT")
				handled = true
				return
			}
			r.zadd(bnClientLastSeen, r.now, r.client)
		}
		handled = body(&r)
	}
	h.Exclusive(keys, run)
	return handled
}

// aliased reports whether a key is named twice: the twins read ahead of
// their writes, which only gives what the script gives for eight keys.
func aliased(keys [][]byte) bool {
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if string(keys[i]) == string(keys[j]) {
				return true
			}
		}
	}
	return false
}

// bnTick runs process_tick(now, alwaysPublish) on the settings as they
// are, or declines.
func bnTick(r *bnRun, alwaysPublish bool) (s bnConfig, p tickPlan, ok bool) {
	if s, ok = r.settings(); !ok {
		return s, p, false
	}
	if p, ok = r.plan(&s, alwaysPublish); ok {
		r.tick(&p)
	}
	return s, p, ok
}

// bnBool writes a Lua boolean: true is 1, false is nil.
func bnBool(w *resp.Writer, b bool) {
	if b {
		w.Int(1)
	} else {
		w.Null()
	}
}

// bnNumberReply writes a Lua number or nil.
func bnNumberReply(w *resp.Writer, n luaNum) {
	if n.set {
		w.Int(toLuaInteger(n.v))
	} else {
		w.Null()
	}
}

// bnPairs reports whether argv holds field-value pairs HMSET takes.
func bnPairs(argv [][]byte) bool { return len(argv) > 0 && len(argv)%2 == 0 }

// bottleneckInit is init.lua: with clear, DEL the keys; a limiter with no
// settings gets ARGV's pairs and its counters; one with settings of this
// version gets process_tick (another version's migrations decline). Then
// refresh_expiration by groupTimeout.
func bottleneckInit(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 2, bnNoChecks, func(r *bnRun) bool {
		clear, ok := bnNumber(argv[2])
		if !ok {
			return false
		}
		version, pairs := argv[3], argv[4:]
		if clear.set && clear.v == 1 || !r.hasSettings {
			var groupTimeout luaNum
			for i := 0; i+1 < len(pairs); i += 2 {
				if string(pairs[i]) == "groupTimeout" {
					if groupTimeout, ok = bnNumber(pairs[i+1]); !ok {
						return false
					}
				}
			}
			if !bnPairs(pairs) || !r.refreshable(0, 0, groupTimeout) {
				return false
			}
			if clear.set && clear.v == 1 {
				for _, k := range keys {
					r.tx.Delete(k, r.at)
				}
			}
			r.hmset(bnSettings, pairs)
			for _, f := range []string{"nextRequest", "lastReservoirRefresh", "lastReservoirIncrease"} {
				r.hsetNumber(bnSettings, f, r.now)
			}
			for _, f := range []string{"running", "done", "unblockTime", "capacityPriorityCounter"} {
				r.hsetNumber(bnSettings, f, 0)
			}
			r.refreshExpiration(0, 0, groupTimeout)
			w.Array(0)
			return true
		}
		s, ok := r.settings()
		sameVersion := s.hasVersion && s.versionLen <= len(s.version) && string(s.version[:s.versionLen]) == string(version)
		if !ok || !sameVersion || !r.refreshable(0, 0, s.groupTimeout) {
			return false
		}
		p, ok := r.plan(&s, false)
		if !ok {
			return false
		}
		r.tick(&p)
		r.refreshExpiration(0, 0, s.groupTimeout)
		w.Array(0)
		return true
	})
}

// bottleneckGroupCheck is group_check.lua: whether the limiter has no
// settings.
func bottleneckGroupCheck(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 0, bnNoChecks, func(r *bnRun) bool {
		bnBool(w, !r.hasSettings)
		return true
	})
}

// bottleneckRegisterClient is register_client.lua: a client not seen
// before gets no running weight, ARGV[3] queued jobs and no registration;
// every client is seen now.
func bottleneckRegisterClient(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 1, bnValidateKeys, func(r *bnRun) bool {
		queued, ok := bnNumber(argv[2])
		if !ok || !queued.set {
			return false
		}
		if _, seen := r.zscore(bnClientLastSeen, r.client); !seen {
			r.zadd(bnClientRunning, 0, r.client)
			r.hset(bnClientNumQueued, r.client, r.callNumber(queued.v))
			r.zadd(bnClientLastRegistered, 0, r.client)
		}
		r.zadd(bnClientLastSeen, r.now, r.client)
		w.Array(0)
		return true
	})
}

// bottleneckBlacklistClient is blacklist_client.lua: a known client
// ARGV[3] is last seen at 0, so the next tick drops it.
func bottleneckBlacklistClient(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 1, bnValidateBoth, func(r *bnRun) bool {
		if _, seen := r.zscore(bnClientLastSeen, argv[2]); seen {
			r.zadd(bnClientLastSeen, 0, argv[2])
		}
		w.Array(0)
		return true
	})
}

// bottleneckHeartbeat is heartbeat.lua: process_tick, publishing the
// capacity; it returns nothing (nil).
func bottleneckHeartbeat(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 0, bnValidateBoth, func(r *bnRun) bool {
		if _, _, ok := bnTick(r, true); !ok {
			return false
		}
		w.Null()
		return true
	})
}

// bottleneckUpdateSettings is update_settings.lua: HMSET of ARGV's pairs,
// process_tick publishing the capacity, refresh_expiration by
// groupTimeout.
func bottleneckUpdateSettings(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 0, bnValidateBoth, func(r *bnRun) bool {
		pairs := argv[2:]
		if !bnPairs(pairs) {
			return false
		}
		r.hmset(bnSettings, pairs)
		s, ok := r.settings()
		if !ok || !r.refreshable(0, 0, s.groupTimeout) {
			return false // after an HMSET the interpreter repeats to the same effect
		}
		p, ok := r.plan(&s, true)
		if !ok {
			return false
		}
		r.tick(&p)
		r.refreshExpiration(0, 0, s.groupTimeout)
		w.Array(0)
		return true
	})
}

// bottleneckAfterTick runs one of the scripts that reply with what
// process_tick leaves (pick): running.lua, current_reservoir.lua,
// done.lua.
func bottleneckAfterTick(pick func(s *bnConfig, p *tickPlan) luaNum) func(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return func(h Host, w *resp.Writer, keys, argv [][]byte) bool {
		return bottleneckRun(h, w, keys, argv, 0, bnValidateBoth, func(r *bnRun) bool {
			s, p, ok := bnTick(r, false)
			if ok {
				bnNumberReply(w, pick(&s, &p))
			}
			return ok
		})
	}
}

// bnRunning is running.lua's reply: the running weight.
func bnRunning(_ *bnConfig, p *tickPlan) luaNum { return p.running }

// bnReservoir is current_reservoir.lua's: the reservoir.
func bnReservoir(_ *bnConfig, p *tickPlan) luaNum { return p.reservoir }

// bnDone is done.lua's: HGET of the finished weight, which process_tick's
// HINCRBY made a count where jobs expired.
func bnDone(s *bnConfig, p *tickPlan) luaNum {
	if p.total > 0 {
		return num(s.done.v + p.total)
	}
	return s.done
}

// bottleneckQueued is queued.lua: the queued jobs of the clients seen
// within clientTimeout.
func bottleneckQueued(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 0, bnValidateBoth, func(r *bnRun) bool {
		s, ok := r.settings()
		if !ok || !s.clientTimeout.set {
			return false
		}
		seen := r.zrange(bnClientLastSeen, engine.ScoreRange{Min: r.now - s.clientTimeout.v, Max: math.Inf(1)})
		if len(seen) == 0 {
			return false // HMGET of no fields: the script fails
		}
		sum := 0.0
		for _, it := range seen {
			v, _ := r.hget(bnClientNumQueued, it.member)
			n, ok := bnNumber(v)
			if !ok || !n.set {
				return false
			}
			sum += n.v
		}
		w.Int(toLuaInteger(sum))
		return true
	})
}

// bottleneckCheck is check.lua: whether a job of weight ARGV[3] could run
// now, after process_tick.
func bottleneckCheck(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 1, bnValidateBoth, func(r *bnRun) bool {
		weight, ok := bnNumber(argv[2])
		if !ok || !weight.set {
			return false
		}
		s, ok := r.settings()
		if !ok || !s.nextRequest.set {
			return false
		}
		p, ok := r.plan(&s, false)
		if !ok {
			return false
		}
		r.tick(&p)
		bnBool(w, conditionsCheck(p.final, weight) && s.nextRequest.v-r.now <= 0)
		return true
	})
}

// conditionsCheck is conditions_check.lua: no capacity limit, or the
// weight fits.
func conditionsCheck(capacity, weight luaNum) bool { return !capacity.set || weight.v <= capacity.v }

// bottleneckSubmit is submit.lua: after process_tick, refuse a job heavier
// than maxConcurrent; find whether the queue reached highWater and whether
// the BLOCK strategy blocks (then the penalty, every client's queue
// emptied, "blocked:" published); count the job as queued where neither.
// The reply is {reachedHWM, blocked, strategy}.
func bottleneckSubmit(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 2, bnValidateBoth, func(r *bnRun) bool {
		queueLength, ok1 := bnNumber(argv[2])
		weight, ok2 := bnNumber(argv[3])
		s, ok3 := r.settings()
		if !ok1 || !ok2 || !ok3 || !weight.set {
			return false
		}
		p, ok := r.plan(&s, false)
		if !ok {
			return false
		}
		now := r.now
		overweight := s.maxConcurrent.set && weight.v > s.maxConcurrent.v
		atHighWater := s.highWater.set && queueLength.set && queueLength.v == s.highWater.v
		var reachedHWM, blocked bool
		var penalty, nextRequest float64
		if !overweight {
			if atHighWater && conditionsCheck(p.final, weight) && !s.nextRequest.set {
				return false // nextRequest - now of nil
			}
			reachedHWM = atHighWater && !(conditionsCheck(p.final, weight) && s.nextRequest.v-now <= 0)
			if s.strategy.set && s.strategy.v == 3 && !reachedHWM && !s.unblockTime.set {
				return false // unblockTime >= now of nil
			}
			blocked = s.strategy.set && s.strategy.v == 3 && (reachedHWM || s.unblockTime.v >= now)
		}
		var queued [][]byte
		switch {
		case blocked:
			if !s.minTime.set || !s.hasID {
				return false
			}
			switch {
			case s.penalty.set:
				penalty = s.penalty.v
			case s.minTime.v == 0:
				penalty = 5000
			default:
				penalty = 15 * s.minTime.v
			}
			nextRequest = now + penalty + s.minTime.v
			if math.Abs(nextRequest) >= bnLimit || !r.refreshable(now, nextRequest, s.groupTimeout) {
				return false
			}
			r.tx.DoHash(keys[bnClientNumQueued], r.at, false, func(hash *engine.Hash) bool {
				hash.Range(func(f, _ []byte) bool {
					queued = append(queued, append([]byte(nil), f...))
					return true
				})
				return false
			})
			if len(queued) == 0 {
				return false // HMSET of no pairs: the script fails
			}
		case !overweight && !reachedHWM:
			if v, found := r.hget(bnClientNumQueued, r.client); found && !bnCounter(v) {
				return false
			}
		}
		r.tick(&p)
		if overweight {
			msg := append([]byte("ERR OVERWEIGHT:"), r.luaText(weight.v)...)
			msg = append(append(msg, ':'), r.luaText(s.maxConcurrent.v)...)
			w.Error(string(msg))
			return true
		}
		switch {
		case blocked:
			r.hsetNumber(bnSettings, "unblockTime", now+penalty)
			r.hsetNumber(bnSettings, "nextRequest", nextRequest)
			r.tx.DoHash(keys[bnClientNumQueued], r.at, false, func(hash *engine.Hash) bool {
				for _, f := range queued {
					hash.Set(f, []byte("0"))
				}
				return true
			})
			r.publish([]byte("blocked:"))
			r.refreshExpiration(now, nextRequest, s.groupTimeout)
		case !reachedHWM:
			r.hincr(bnClientNumQueued, r.client, 1)
		}
		w.Array(2 + int(b2i(s.strategy.set)))
		bnBool(w, reachedHWM)
		bnBool(w, blocked)
		if s.strategy.set {
			w.Int(toLuaInteger(s.strategy.v))
		}
		return true
	})
}

// bottleneckRegister is register.lua: after process_tick, a job of weight
// ARGV[4] that fits is registered (its weight, expiry and client; the
// client's running weight, one fewer queued job, its registration), the
// next request moved on by minTime, the reservoir drawn down, the keys'
// expiry refreshed; the reply is {true, wait, reservoir} or {false}.
func bottleneckRegister(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 3, bnValidateBoth, func(r *bnRun) bool {
		index := argv[2]
		weight, ok1 := bnNumber(argv[3])
		expiration, ok2 := bnNumber(argv[4])
		s, ok3 := r.settings()
		if !ok1 || !ok2 || !ok3 || !weight.set || !s.nextRequest.set || !s.minTime.set || !s.runningCounts {
			return false
		}
		if v, found := r.hget(bnClientNumQueued, r.client); found && !bnCounter(v) {
			return false
		}
		p, ok := r.plan(&s, false)
		if !ok {
			return false
		}
		now := r.now
		fits := conditionsCheck(p.final, weight)
		wait := math.Max(s.nextRequest.v-now, 0)
		nextRequest := now + wait + s.minTime.v
		reservoir := p.reservoir
		if reservoir.set {
			reservoir.v -= weight.v
		}
		if fits && (math.Abs(nextRequest) >= bnLimit || math.Abs(reservoir.v) >= bnLimit ||
			math.Abs(p.running.v+weight.v) >= bnLimit || !r.refreshable(now, nextRequest, s.groupTimeout)) {
			return false
		}
		r.tick(&p)
		if !fits {
			w.Array(1)
			w.Null()
			return true
		}
		r.hincr(bnSettings, []byte("running"), int64(weight.v))
		r.hset(bnJobWeights, index, r.callNumber(weight.v))
		if expiration.set {
			r.zadd(bnJobExpirations, now+expiration.v, index)
		}
		r.hset(bnJobClients, index, r.client)
		r.zincr(bnClientRunning, weight.v, r.client)
		r.hincr(bnClientNumQueued, r.client, -1)
		r.zadd(bnClientLastRegistered, now, r.client)
		if reservoir.set {
			r.hsetNumber(bnSettings, "reservoir", reservoir.v)
		}
		r.hsetNumber(bnSettings, "nextRequest", nextRequest)
		r.refreshExpiration(now, nextRequest, s.groupTimeout)
		w.Array(2 + int(b2i(reservoir.set)))
		w.Int(1)
		w.Int(toLuaInteger(wait))
		if reservoir.set {
			w.Int(toLuaInteger(reservoir.v))
		}
		return true
	})
}

// bottleneckFree is free.lua: the job ARGV[3] expires at 0, so
// process_tick gives its weight back; the reply is the running weight.
func bottleneckFree(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 1, bnValidateBoth, func(r *bnRun) bool {
		r.zadd(bnJobExpirations, 0, argv[2]) // the interpreter repeats it to the same effect
		_, p, ok := bnTick(r, false)
		if ok {
			bnNumberReply(w, p.running)
		}
		return ok
	})
}

// bottleneckIncrementReservoir is increment_reservoir.lua: HINCRBY of the
// reservoir by ARGV[3], process_tick publishing the capacity,
// refresh_expiration by groupTimeout; the reply is the reservoir.
func bottleneckIncrementReservoir(h Host, w *resp.Writer, keys, argv [][]byte) bool {
	return bottleneckRun(h, w, keys, argv, 1, bnValidateBoth, func(r *bnRun) bool {
		incr, ok1 := bnNumber(argv[2])
		s, ok2 := r.settings()
		if !ok1 || !ok2 || !incr.set || !s.reservoirCounts || !r.refreshable(0, 0, s.groupTimeout) {
			return false
		}
		s.reservoir = num(s.reservoir.v + incr.v)
		if math.Abs(s.reservoir.v) >= bnLimit {
			return false
		}
		p, ok := r.plan(&s, true)
		if !ok {
			return false
		}
		r.hincr(bnSettings, []byte("reservoir"), int64(incr.v))
		r.tick(&p)
		r.refreshExpiration(0, 0, s.groupTimeout)
		bnNumberReply(w, p.reservoir)
		return true
	})
}
