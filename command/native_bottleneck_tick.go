package command

import (
	"math"
	"strconv"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/scripting"
)

// The state the twins of bottleneck's scripts share (native_bottleneck.go
// has the scripts): refs.lua's eight keys and arguments, the limiter's
// settings hash, and process_tick.lua.
//
// A script errs where Lua would fail midway (a field that is no number, a
// key of the wrong kind), and Redis keeps what it wrote before the error.
// A twin never reaches such a point: it reads everything it will need,
// works out what process_tick will do (tickPlan), and declines before it
// writes, so the interpreter runs the script from the same state. The
// writes a twin makes before its checks are ones the interpreter repeats
// to the same effect: validate_client.lua's ZADD of the client's
// last_seen score, free.lua's ZADD of the job's expiry, and
// update_settings.lua's HMSET.

// refs.lua's keys, in KEYS order.
const (
	bnSettings = iota
	bnJobWeights
	bnJobExpirations
	bnJobClients
	bnClientRunning
	bnClientNumQueued
	bnClientLastRegistered
	bnClientLastSeen
	bnKeys
)

// bnKind is the kind of refs.lua's key i: hashes and sorted sets.
func bnKind(i int) engine.Kind {
	switch i {
	case bnSettings, bnJobWeights, bnJobClients, bnClientNumQueued:
		return engine.KindHash
	}
	return engine.KindZSet
}

// bnLimit bounds every number a twin computes with: below it a float64
// holds integers exactly and redis.call's "%.17g" writes them as digits,
// which HINCRBY and PEXPIRE read.
const bnLimit = 1e15

// luaNum is a Lua value that is a number or nil.
type luaNum struct {
	v   float64
	set bool
}

func num(v float64) luaNum { return luaNum{v: v, set: true} }

// bnNumber is tonumber(b) for the numbers bottleneck stores and sends:
// nil for "", else 1 to 15 decimal digits with an optional minus sign
// (scripting.ShortInteger), which Redis's Lua and the interpreter read
// alike. ok is false for anything else (fractions, exponents, words,
// spaces, "-0"), where the twin declines.
func bnNumber(b []byte) (n luaNum, ok bool) {
	if len(b) == 0 {
		return luaNum{}, true
	}
	i, negative, ok := scripting.ShortInteger(b)
	if !ok || (negative && i == 0) {
		return luaNum{}, false
	}
	if negative {
		i = -i
	}
	return num(float64(i)), true
}

// bnCounter reports whether HINCRBY can add to b: an integer's text as
// Redis reads one, below bnLimit.
func bnCounter(b []byte) bool {
	n, err := ParseInt(b)
	return err == nil && n > -bnLimit && n < bnLimit
}

// bnConfig is the limiter's settings hash, as tonumber reads its fields.
type bnConfig struct {
	hasID, hasVersion, hasClientTimeout                                  bool
	version                                                              [16]byte // its first bytes; versionLen is its whole length
	versionLen                                                           int
	maxConcurrent, running, reservoir                                    luaNum
	refreshInterval, refreshAmount, lastRefresh                          luaNum
	increaseInterval, increaseAmount, increaseMaximum, lastIncrease      luaNum
	priorityCounter, clientTimeout, nextRequest, minTime, groupTimeout   luaNum
	highWater, strategy, unblockTime, penalty, done                      luaNum
	runningCounts, doneCounts, counterCounts, reservoirCounts, allCounts bool // HINCRBY can add to the field (bnCounter or absent)
}

// field is the number a settings field holds, or nil for fields no script
// reads as a number.
func (s *bnConfig) field(name []byte) *luaNum {
	switch string(name) {
	case "maxConcurrent":
		return &s.maxConcurrent
	case "running":
		return &s.running
	case "reservoir":
		return &s.reservoir
	case "reservoirRefreshInterval":
		return &s.refreshInterval
	case "reservoirRefreshAmount":
		return &s.refreshAmount
	case "lastReservoirRefresh":
		return &s.lastRefresh
	case "reservoirIncreaseInterval":
		return &s.increaseInterval
	case "reservoirIncreaseAmount":
		return &s.increaseAmount
	case "reservoirIncreaseMaximum":
		return &s.increaseMaximum
	case "lastReservoirIncrease":
		return &s.lastIncrease
	case "capacityPriorityCounter":
		return &s.priorityCounter
	case "clientTimeout":
		return &s.clientTimeout
	case "nextRequest":
		return &s.nextRequest
	case "minTime":
		return &s.minTime
	case "groupTimeout":
		return &s.groupTimeout
	case "highWater":
		return &s.highWater
	case "strategy":
		return &s.strategy
	case "unblockTime":
		return &s.unblockTime
	case "penalty":
		return &s.penalty
	case "done":
		return &s.done
	}
	return nil
}

// set reads one field; false where a twin cannot be sure of Lua's answer.
func (s *bnConfig) set(name, value []byte) bool {
	switch string(name) {
	case "id":
		s.hasID = true
		return true
	case "version":
		s.hasVersion, s.versionLen = true, len(value)
		copy(s.version[:], value)
		return true
	case "running":
		s.runningCounts = bnCounter(value)
	case "done":
		s.doneCounts = bnCounter(value)
	case "capacityPriorityCounter":
		s.counterCounts = bnCounter(value)
	case "reservoir":
		s.reservoirCounts = bnCounter(value)
	case "clientTimeout":
		s.hasClientTimeout = true
	}
	p := s.field(name)
	if p == nil {
		return true
	}
	n, ok := bnNumber(value)
	*p = n
	return ok
}

// bnRun is one run of one of bottleneck's scripts, in a transaction that
// holds its keys.
type bnRun struct {
	c      *Client
	tx     *engine.Engine
	keys   [][]byte
	at     int64   // the server's instant: the keys' liveness and expiries
	now    float64 // ARGV[1], the client's Date.now()
	client []byte  // ARGV[2]
	num    [32]byte
	// hasSettings: the settings hash existed when the run began (before
	// any write of its own).
	hasSettings bool
}

// settings reads the settings hash; ok is false where a field is not what
// bottleneck keeps there.
func (r *bnRun) settings() (s bnConfig, ok bool) {
	ok = true
	s.runningCounts, s.doneCounts, s.counterCounts, s.reservoirCounts = true, true, true, true
	r.tx.DoHash(r.keys[bnSettings], r.at, false, func(h *engine.Hash) bool {
		h.Range(func(f, v []byte) bool {
			ok = s.set(f, v)
			return ok
		})
		return false
	})
	return s, ok
}

// callNumber is f as redis.call writes a number argument ("%.17g").
func (r *bnRun) callNumber(f float64) []byte {
	return scripting.AppendCallNumber(r.num[:0], f)
}

// luaText is f as Lua's tostring and .. write it ("%.14g").
func (r *bnRun) luaText(f float64) []byte {
	return scripting.AppendLuaNumber(r.num[:0], f)
}

func (r *bnRun) hget(k int, field []byte) (v []byte, ok bool) {
	r.tx.DoHash(r.keys[k], r.at, false, func(h *engine.Hash) bool {
		v, ok = h.Get(field)
		return false
	})
	return v, ok
}

func (r *bnRun) hset(k int, field, value []byte) {
	r.tx.DoHash(r.keys[k], r.at, true, func(h *engine.Hash) bool {
		h.Set(field, value)
		return true
	})
}

// hmset is HMSET key with field-value pairs.
func (r *bnRun) hmset(k int, pairs [][]byte) {
	r.tx.DoHash(r.keys[k], r.at, true, func(h *engine.Hash) bool {
		for i := 0; i+1 < len(pairs); i += 2 {
			h.Set(pairs[i], pairs[i+1])
		}
		return true
	})
}

// hsetNumber is HSET key field f with f as redis.call writes it.
func (r *bnRun) hsetNumber(k int, field string, f float64) {
	r.hset(k, []byte(field), r.callNumber(f))
}

// hincr is HINCRBY on a field bnCounter or the settings' checks allowed.
func (r *bnRun) hincr(k int, field []byte, by int64) int64 {
	var n int64
	r.tx.DoHash(r.keys[k], r.at, true, func(h *engine.Hash) bool {
		if v, ok := h.Get(field); ok {
			n, _ = ParseInt(v)
		}
		n += by
		var buf [20]byte
		h.Set(field, strconv.AppendInt(buf[:0], n, 10))
		return true
	})
	return n
}

func (r *bnRun) hdel(k int, fields [][]byte) {
	r.tx.DoHash(r.keys[k], r.at, false, func(h *engine.Hash) bool {
		return countTrue(fields, h.Delete) > 0
	})
}

func (r *bnRun) zscore(k int, member []byte) (score float64, ok bool) {
	r.tx.DoZSet(r.keys[k], r.at, false, func(z *engine.ZSet) bool {
		score, ok = z.Score(member)
		return false
	})
	return score, ok
}

// zadd is ZADD key score member; a score redis.call writes as "%.17g" reads
// back as itself.
func (r *bnRun) zadd(k int, score float64, member []byte) {
	r.tx.DoZSet(r.keys[k], r.at, true, func(z *engine.ZSet) bool {
		if cur, ok := z.Score(member); ok && cur == score {
			return false
		}
		z.Set(score, member)
		return true
	})
}

// zincr is ZINCRBY key by member; it returns the new score.
func (r *bnRun) zincr(k int, by float64, member []byte) float64 {
	var score float64
	r.tx.DoZSet(r.keys[k], r.at, true, func(z *engine.ZSet) bool {
		cur, _ := z.Score(member)
		score = cur + by
		z.Set(score, member)
		return true
	})
	return score
}

func (r *bnRun) zrem(k int, members [][]byte) {
	r.tx.DoZSet(r.keys[k], r.at, false, func(z *engine.ZSet) bool {
		return countTrue(members, z.Remove) > 0
	})
}

// bnItem is a sorted set's member, copied out, and its score.
type bnItem struct {
	member []byte
	score  float64
}

// zrange is the members of key k with scores in sr, in order.
func (r *bnRun) zrange(k int, sr engine.ScoreRange) (items []bnItem) {
	r.tx.DoZSet(r.keys[k], r.at, false, func(z *engine.ZSet) bool {
		z.AscendRange(sr, false, func(it engine.ZItem) bool {
			items = append(items, bnItem{member: []byte(it.Member), score: it.Score})
			return true
		})
		return false
	})
	return items
}

// refreshExpiration is refresh_expiration.lua: PEXPIRE of every key by ttl ms
// (an integer: bnLimit bounds it) when groupTimeout is set.
func (r *bnRun) refreshExpiration(now, nextRequest float64, groupTimeout luaNum) {
	if !groupTimeout.set {
		return
	}
	ttl := int64(nextRequest + groupTimeout.v - now)
	at, _ := ExpireAtSigned(r.at, ttl, 1e6, false)
	for _, k := range r.keys {
		_, _ = r.tx.SetExpire(k, r.at, at, engine.ExpireAlways)
	}
}

// refreshable reports whether refreshExpiration can run: its ttl is a
// number PEXPIRE takes.
func (r *bnRun) refreshable(now, nextRequest float64, groupTimeout luaNum) bool {
	if !groupTimeout.set {
		return true
	}
	ttl := nextRequest + groupTimeout.v - now
	_, ok := ExpireAtSigned(r.at, int64(ttl), 1e6, false)
	return ok && math.Abs(ttl) < bnLimit
}

// publish is PUBLISH b_<id> msg.
func (r *bnRun) publish(msg []byte) {
	id, _ := r.hget(bnSettings, []byte("id"))
	r.c.srv.Publish("b_"+string(id), msg)
}

// capacity is process_tick's compute_capacity.
func capacity(maxConcurrent, running, reservoir luaNum) luaNum {
	switch {
	case maxConcurrent.set && reservoir.set:
		return num(math.Min(maxConcurrent.v-running.v, reservoir.v))
	case maxConcurrent.set:
		return num(maxConcurrent.v - running.v)
	case reservoir.set:
		return reservoir
	}
	return luaNum{}
}

// bnWeight is one client's running weight that expired jobs give back.
type bnWeight struct {
	client []byte
	weight float64
}

// tickPlan is what process_tick(now, alwaysPublish) will do, worked out
// from the state before it changes anything.
type tickPlan struct {
	expired            [][]byte   // job_expirations' members scored below now
	total              float64    // their weights
	clients            []bnWeight // the weights by client, where positive
	running, reservoir luaNum     // as process_tick leaves them
	refresh, increase  bool       // the reservoir is refreshed, increased
	lastIncrease       float64    // lastReservoirIncrease after an increase
	unresponsive       [][]byte   // client_last_seen's members at or below now - clientTimeout
	terminated         [][]byte   // those of them left with no running weight
	initial, final     luaNum     // compute_capacity before and after
	counter            float64    // capacityPriorityCounter
	publish            bool       // a capacity message is sent
}

// plan works out process_tick for settings s; ok is false where the
// script would fail or the twin is not sure of Lua's answer.
func (r *bnRun) plan(s *bnConfig, alwaysPublish bool) (p tickPlan, ok bool) {
	now := r.now
	if s.maxConcurrent.set && !s.running.set {
		return p, false // maxConcurrent - nil
	}
	p.running, p.reservoir, p.counter = s.running, s.reservoir, s.priorityCounter.v
	p.initial = capacity(s.maxConcurrent, s.running, s.reservoir)

	// Expired jobs give their weight back, to the limiter and to their
	// clients.
	for _, it := range r.zrange(bnJobExpirations, engine.ScoreRange{Min: math.Inf(-1), Max: now, MaxEx: true}) {
		job := it.member
		p.expired = append(p.expired, job)
		var w float64
		if v, found := r.hget(bnJobWeights, job); found {
			n, ok := bnNumber(v)
			if !ok {
				return p, false
			}
			w = n.v // tonumber(weight) or 0
		}
		p.total += w
		if w <= 0 {
			continue
		}
		client, found := r.hget(bnJobClients, job)
		if !found {
			return p, false // a nil client's weight: the script fails
		}
		p.addClient(client, w)
	}
	if p.total > 0 {
		if !s.runningCounts || !s.doneCounts {
			return p, false
		}
		p.running = num(s.running.v - p.total) // HINCRBY of an absent field starts at 0, as nil's v does
		if math.Abs(p.total) >= bnLimit || math.Abs(p.running.v) >= bnLimit {
			return p, false
		}
	}

	if s.refreshInterval.set && s.refreshAmount.set {
		if !s.lastRefresh.set {
			return p, false
		}
		if now >= s.lastRefresh.v+s.refreshInterval.v {
			p.refresh, p.reservoir = true, s.refreshAmount
		}
	}
	if s.increaseInterval.set && s.increaseAmount.set {
		if !s.lastIncrease.set {
			return p, false
		}
		if now >= s.lastIncrease.v+s.increaseInterval.v {
			if s.increaseInterval.v == 0 {
				return p, false // an infinite or NaN count of intervals
			}
			intervals := math.Floor((now - s.lastIncrease.v) / s.increaseInterval.v)
			incr := s.increaseAmount.v * intervals
			if s.increaseMaximum.set {
				incr = math.Min(incr, s.increaseMaximum.v-p.reservoir.v)
			}
			if incr > 0 {
				p.reservoir = num(p.reservoir.v + incr)
			}
			p.increase, p.lastIncrease = true, s.lastIncrease.v+intervals*s.increaseInterval.v
			if !p.reservoir.set || math.Abs(p.reservoir.v) >= bnLimit || math.Abs(p.lastIncrease) >= bnLimit {
				return p, false // HMSET of a nil reservoir fails
			}
		}
	}

	// Clients not seen for clientTimeout, with no running jobs, are
	// dropped.
	if !s.clientTimeout.set {
		return p, false
	}
	for _, it := range r.zrange(bnClientLastSeen, engine.ScoreRange{Min: math.Inf(-1), Max: now - s.clientTimeout.v}) {
		client := it.member
		p.unresponsive = append(p.unresponsive, client)
		if score, ok := r.runningAfter(&p, client); ok && score == 0 {
			p.terminated = append(p.terminated, client)
		}
	}

	p.final = capacity(s.maxConcurrent, p.running, p.reservoir)
	p.publish = alwaysPublish || (p.initial.set && !p.final.set)
	priority := !p.publish && p.initial.set && p.final.set && p.final.v > p.initial.v
	if (p.publish || priority) && !s.hasID {
		return p, false
	}
	if priority && !(s.priorityCounter.set && s.counterCounts && r.prioritizable(&p)) {
		return p, false
	}
	return p, true
}

// addClient adds w to client's weight in p.
func (p *tickPlan) addClient(client []byte, w float64) {
	for i := range p.clients {
		if string(p.clients[i].client) == string(client) {
			p.clients[i].weight += w
			return
		}
	}
	p.clients = append(p.clients, bnWeight{client: append([]byte(nil), client...), weight: w})
}

// runningAfter is client's client_running score once p's expired jobs are
// given back, as ZSCORE then reads it.
func (r *bnRun) runningAfter(p *tickPlan, client []byte) (float64, bool) {
	score, ok := r.zscore(bnClientRunning, client)
	for _, cw := range p.clients {
		if string(cw.client) == string(client) {
			return score - cw.weight, true // ZINCRBY creates a missing member
		}
	}
	return score, ok
}

// prioritizable reports whether process_tick's search for the client to
// offer new capacity to can run: every client it may look at (the
// responsive ones in client_running after the tick) has a number of queued
// jobs and a last registration.
func (r *bnRun) prioritizable(p *tickPlan) bool {
	ok := true
	check := func(client []byte) {
		if !ok || inList(p.unresponsive, client) {
			return
		}
		v, found := r.hget(bnClientNumQueued, client)
		n, isNum := bnNumber(v)
		_, registered := r.zscore(bnClientLastRegistered, client)
		ok = found && isNum && n.set && registered
	}
	for _, it := range r.zrange(bnClientRunning, engine.ScoreRange{Min: math.Inf(-1), Max: math.Inf(1)}) {
		check(it.member)
	}
	for _, cw := range p.clients {
		check(cw.client)
	}
	return ok
}

func inList(list [][]byte, b []byte) bool {
	for _, x := range list {
		if string(x) == string(b) {
			return true
		}
	}
	return false
}

// tick does what p planned, in process_tick's order.
func (r *bnRun) tick(p *tickPlan) {
	if len(p.expired) > 0 {
		r.zrem(bnJobExpirations, p.expired)
		r.hdel(bnJobWeights, p.expired)
		r.hdel(bnJobClients, p.expired)
		if p.total > 0 {
			r.hincr(bnSettings, []byte("done"), int64(p.total))
			r.hincr(bnSettings, []byte("running"), -int64(p.total))
		}
		for _, cw := range p.clients {
			r.zincr(bnClientRunning, -cw.weight, cw.client)
		}
	}
	if p.refresh {
		r.hsetNumber(bnSettings, "reservoir", p.reservoir.v)
		r.hsetNumber(bnSettings, "lastReservoirRefresh", r.now)
	}
	if p.increase {
		r.hsetNumber(bnSettings, "reservoir", p.reservoir.v)
		r.hsetNumber(bnSettings, "lastReservoirIncrease", p.lastIncrease)
	}
	if len(p.terminated) > 0 {
		r.zrem(bnClientRunning, p.terminated)
		r.hdel(bnClientNumQueued, p.terminated)
		r.zrem(bnClientLastRegistered, p.terminated)
		r.zrem(bnClientLastSeen, p.terminated)
	}
	switch {
	case p.publish:
		r.publishCapacity(p.final, nil)
	case p.initial.set && p.final.set && p.final.v > p.initial.v:
		r.offerCapacity(p)
	}
}

// publishCapacity publishes "capacity:<final>", or with a client chosen
// "capacity-priority:<final>:<client>:<counter>".
func (r *bnRun) publishCapacity(final luaNum, priority []byte) {
	msg := make([]byte, 0, 64)
	if priority == nil {
		msg = append(msg, "capacity:"...)
	} else {
		msg = append(msg, "capacity-priority:"...)
	}
	if final.set {
		msg = scripting.AppendLuaNumber(msg, final.v)
	}
	if priority != nil {
		msg = append(append(msg, ':'), priority...)
	}
	r.publish(msg)
}

// offerCapacity sends new capacity to the responsive client with queued
// jobs that runs the least weight, the one that registered a job longest
// ago among equals; with none, to everyone.
func (r *bnRun) offerCapacity(p *tickPlan) {
	var lowest luaNum
	var best []byte
	var earliest float64
	for _, it := range r.zrange(bnClientRunning, engine.ScoreRange{Min: math.Inf(-1), Max: math.Inf(1)}) {
		client := it.member
		if (lowest.set && lowest.v != it.score) || inList(p.unresponsive, client) {
			continue
		}
		v, _ := r.hget(bnClientNumQueued, client)
		if n, _ := bnNumber(v); n.v <= 0 {
			continue
		}
		lowest = num(it.score)
		last, _ := r.zscore(bnClientLastRegistered, client)
		if best == nil || last < earliest {
			best, earliest = client, last
		}
	}
	if best == nil {
		r.publishCapacity(p.final, nil)
		return
	}
	who := scripting.AppendLuaNumber(append(best, ':'), p.counter)
	r.publishCapacity(p.final, who)
	r.hincr(bnSettings, []byte("capacityPriorityCounter"), 1)
}
