package rls

import (
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/limit"
	"github.com/limitdb/limitdb/policy"
)

// Counting as envoyproxy/ratelimit's Redis fixed window does, in limitdb's
// keyspace:
//
//   - a rule's window is its unit, aligned to the Unix epoch in whole
//     seconds: it starts at floor(now_s / unit_s) * unit_s;
//   - its counter's key is "domain_" then "key_value_" for each entry of
//     the request's descriptor, then the window's start in Unix seconds
//     (envoyproxy/ratelimit's key with an empty CACHE_KEY_PREFIX);
//   - every request adds its hits to the counter, admitted or not, and is
//     over the limit when the count after adding exceeds requests_per_unit;
//     limit_remaining is requests_per_unit minus that count (0 when over);
//     duration_until_reset is the whole seconds left in the window;
//   - every descriptor of a request is charged, whether or not another
//     one goes over (envoyproxy/ratelimit's default,
//     STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false; StopWhenOverLimit is
//     that setting on); two descriptors with the same key (the same path,
//     or values that share a counter) add up, the later seeing the
//     earlier's hits;
//   - a count that stays 0 (hits 0) writes nothing: an absent counter is
//     a 0 count (envoyproxy/ratelimit's INCRBY 0 leaves a key holding 0).
//
// The counter is an FW.INCR entry (A = the window's start in ns, B = the
// count), expiring at the window's end, so it is snapshotted, replicated
// and shown by TYPE like any fixed window. A request's counters are read
// and written under their shards' locks at once (engine.DoMulti): unlike
// envoyproxy/ratelimit's pipelined INCRBYs, no other request comes between
// two of them.
//
// A rule naming another algorithm (limitdb's extension, decideAlgorithm)
// keeps that algorithm's state instead, and the AllOrNothing mode changes
// the charging of a whole request; neither is envoyproxy/ratelimit's.

// NearLimitRatio is envoyproxy/ratelimit's NEAR_LIMIT_RATIO default: hits
// past this share of the limit count as near the limit. The share is a
// float32 as there, so the threshold, floor(limit × ratio), rounds alike.
const NearLimitRatio float32 = 0.8

// ErrWrongType is a counter's key held by something else than a limiter's
// state (a string set from redis-cli, say), or a fixed window's key held
// by another limiter.
var ErrWrongType = errors.New("rls: a counter's key holds another type")

// Hit is one descriptor of a request, resolved: its rule (nil: none), its
// entries and how many hits it adds.
type Hit struct {
	Limit   *RateLimit
	Entries []Entry
	Hits    uint64
	// Shared and StatsKey are the rules' Match's: the wildcard values that
	// stand for entries' values in the counter's key (share_threshold), and
	// the statistics' name when not Limit.FullKey.
	Shared   []string
	StatsKey string
}

// Status is one descriptor's answer.
type Status struct {
	Limit *RateLimit // the rule that applied; nil: none (always OK)
	Over  bool       // the count went past the limit (even in shadow mode)
	// Remaining is requests_per_unit minus the count, 0 when over; for a
	// descriptor without a rule 0, and math.MaxUint32 for an unlimited one.
	Remaining  uint32
	ResetAfter int64 // seconds until the window ends; 0 without a rule
	Stats      Stats // what this descriptor adds to its rule's counters
	// StatsKey names the counters Stats add to; "": Limit.FullKey.
	StatsKey string
}

// Limited reports whether the descriptor makes the request OVER_LIMIT: over
// and not in shadow mode.
func (s Status) Limited() bool { return s.Over && !s.Limit.ShadowMode }

// Stats are the hits of one descriptor, split as envoyproxy/ratelimit's
// per-rule counters split them.
type Stats struct {
	TotalHits, OverLimit, NearLimit, WithinLimit, ShadowMode uint64
}

// Mode is how a request of several descriptors is charged.
type Mode int

const (
	// PerDescriptor charges each descriptor on its own, as
	// envoyproxy/ratelimit does: a fixed window rule counts every hit,
	// admitted or not; a rule of another algorithm charges only what it
	// admits.
	PerDescriptor Mode = iota
	// AllOrNothing charges every descriptor only when every rule not in
	// shadow mode admits it, and nothing otherwise (RL.HITALL's rule). On a
	// denial the descriptors that refused answer OVER_LIMIT and the others
	// answer their state as it stands, uncharged.
	AllOrNothing
	// StopWhenOverLimit is envoyproxy/ratelimit's
	// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: when any descriptor would go
	// over with its hits (judged on the counts before the request, shadow
	// mode included), only those descriptors are charged; the others
	// answer their count as it stands and, as there, their statistics count
	// their hits as if they had been charged within the limit. When none
	// would go over, every descriptor is charged, as PerDescriptor.
	StopWhenOverLimit
)

// tally is what a request's counting reads besides its counters: the
// instant (Unix ns and whole seconds) and the near-limit share.
type tally struct {
	now, nowSec int64
	nearRatio   float32
}

// Check charges hits against their rules at now (Unix ns) in eng and
// returns one status per hit; hits past nearRatio of a limit count as near
// it (NearLimitRatio is envoyproxy/ratelimit's default).
func Check(eng *engine.Engine, domain string, hits []Hit, now int64, mode Mode, nearRatio float32) ([]Status, error) {
	out, charges, idx := Plan(domain, hits, now)
	if len(charges) == 0 {
		return out, nil
	}
	sts, err := Apply(eng, charges, now, mode, nearRatio)
	if err != nil {
		return nil, err
	}
	Merge(out, sts, hits, idx)
	return out, nil
}

// Plan is the first half of Check: the statuses of the hits that touch no
// counter (no rule, an unlimited one, an override of unknown unit), and
// the charges of the others, each naming its counter's key, with idx[k]
// the hit of charges[k]. Apply charges them wherever their keys live;
// Merge puts the answers back in place.
func Plan(domain string, hits []Hit, now int64) (out []Status, charges []Charge, idx []int) {
	var p plan
	p.make(domain, hits, now)
	return p.out, p.charges, p.idx
}

// plan is Plan's result in memory that a caller may reuse for the next
// request: make overwrites it.
type plan struct {
	out     []Status
	charges []Charge
	idx     []int
	keys    []byte // the charges' keys, one after another
}

func (p *plan) make(domain string, hits []Hit, now int64) {
	p.out = append(p.out[:0], make([]Status, len(hits))...)
	p.charges, p.idx, p.keys = p.charges[:0], p.idx[:0], p.keys[:0]
	nowSec := floorDiv(now, 1e9)
	for i, h := range hits {
		switch {
		case h.Limit == nil:
			continue
		case h.Limit.Unlimited:
			p.out[i] = Status{Limit: h.Limit, Remaining: math.MaxUint32}
			continue
		}
		unit := UnitSeconds(h.Limit.Unit)
		if unit == 0 { // an override with an unknown unit: no limit
			continue
		}
		ch := Charge{Limit: h.Limit, Hits: h.Hits}
		at := len(p.keys)
		if h.Limit.Limiter != nil {
			p.keys = appendAlgorithmKey(p.keys, domain, h.Entries, h.Shared, h.Limit.Algorithm)
		} else {
			ch.Start = floorDiv(nowSec, unit) * unit
			p.keys = appendCacheKey(p.keys, domain, h.Entries, h.Shared, ch.Start)
		}
		ch.Key = p.keys[at:len(p.keys):len(p.keys)]
		p.charges = append(p.charges, ch)
		p.idx = append(p.idx, i)
	}
}

// Merge puts the statuses of Plan's charges in place in out, with each
// hit's statistics name.
func Merge(out, sts []Status, hits []Hit, idx []int) {
	for k, i := range idx {
		st := sts[k]
		st.Limit, st.StatsKey = hits[i].Limit, hits[i].StatsKey
		out[i] = st
	}
}

// Apply charges charges in eng at now (Unix ns), under their shards'
// locks at once, in mode, and returns one status per charge (StatsKey
// left empty). A fixed window charge counts in the window that starts at
// its Start, whatever now says: its key names that window.
func Apply(eng *engine.Engine, charges []Charge, now int64, mode Mode, nearRatio float32) ([]Status, error) {
	out := make([]Status, len(charges))
	t := tally{now: now, nowSec: floorDiv(now, 1e9), nearRatio: nearRatio}
	keys := make([][]byte, len(charges))
	for k := range charges {
		keys[k] = charges[k].Key
	}
	first := engine.FirstPlaces(keys)
	var err error
	eng.DoMulti(keys, now, func(ents []engine.Entry) bool {
		// work holds each key's state as the earlier charges left it (at
		// its first place): a key charged twice sees the first charge.
		work := make([]engine.Entry, len(keys))
		for k := range keys {
			if first[k] == k {
				if work[k], err = own(ents[k], charges[k].Limit); err != nil {
					return false
				}
			}
		}
		var charge []bool // StopWhenOverLimit: the charges made
		if mode == StopWhenOverLimit {
			if charge, err = t.overLimit(charges, first, work); err != nil {
				return false
			}
		}
		dirty := make([]bool, len(keys))
		refused := false
		for k := range keys {
			ch, f := charges[k], first[k]
			if charge != nil && !charge[k] {
				if out[k], err = t.uncharged(ch, work[f]); err != nil {
					return false
				}
				continue
			}
			var next engine.Entry
			var write bool
			out[k], next, write, err = t.apply(ch, work[f], ch.Hits)
			if err != nil {
				return false
			}
			if write {
				work[f], dirty[f] = next, true
			}
			refused = refused || out[k].Limited()
		}
		if mode == AllOrNothing && refused {
			// Nothing is charged: the refusals stand, the rest answer a
			// check of the state before the request.
			for k := range keys {
				if out[k].Limited() {
					continue
				}
				base, _ := own(ents[first[k]], charges[k].Limit)
				out[k], _, _, err = t.apply(charges[k], base, 0)
				if err != nil {
					return false
				}
			}
			return false
		}
		write := false
		for k := range keys {
			if dirty[k] {
				ents[k], write = work[k], true
			}
		}
		return write
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// own is the state a rule may read from its key's entry: an absent entry,
// or one of the rule's kind. A fixed window rule finds only fixed windows
// under its keys; another algorithm's key holding another limiter's state
// (the rule's algorithm changed) counts as absent, so it starts afresh. A
// Redis type there (a string set from redis-cli) is ErrWrongType.
func own(e engine.Entry, lim *RateLimit) (engine.Entry, error) {
	kind := engine.KindFixedWindow
	if lim.Limiter != nil {
		kind = lim.Limiter.Kind()
	}
	switch {
	case e.Kind == engine.KindNone || e.Kind == kind:
		return e, nil
	case lim.Limiter != nil && e.Kind.Limiter():
		return engine.Entry{}, nil
	}
	return e, ErrWrongType
}

// overLimit is StopWhenOverLimit's choice: nil when no descriptor would
// go over with its hits on the counts before the request (every one is
// then charged), else which are charged: those that would. work holds
// each key's entry before the request, at its first place.
func (t tally) overLimit(charges []Charge, first []int, work []engine.Entry) ([]bool, error) {
	var over []bool
	for k, ch := range charges {
		st, _, _, err := t.apply(ch, work[first[k]], ch.Hits)
		if err != nil {
			return nil, err
		}
		if st.Over {
			if over == nil {
				over = make([]bool, len(charges))
			}
			over[k] = true
		}
	}
	return over, nil
}

// uncharged is StopWhenOverLimit's answer for a descriptor left uncharged
// beside one that went over: its count as it stands in e, with statistics
// that count its hits as envoyproxy/ratelimit counts them, as if the count
// before them had been the count less the hits (an INCRBY of 0 read back;
// below 0 its unsigned arithmetic wraps to a huge count).
func (t tally) uncharged(h Charge, e engine.Entry) (Status, error) {
	if l := h.Limit.Limiter; l != nil {
		_, r, _, err := l.Apply(e, t.now, 0)
		if err != nil {
			return Status{}, err
		}
		return t.decideAlgorithm(h.Limit, r, h.Hits), nil
	}
	before := e.B - int64(h.Hits)
	if before < 0 {
		before = math.MaxInt64
	}
	return t.decide(h, before, e.B, t.resetAfter(h)), nil
}

// apply decides one descriptor of hits units against its key's entry e
// and returns its status and the entry to store when write.
func (t tally) apply(h Charge, e engine.Entry, hits uint64) (st Status, next engine.Entry, write bool, err error) {
	if l := h.Limit.Limiter; l != nil {
		next, r, write, err := l.Apply(e, t.now, int64(hits))
		if err != nil {
			return Status{}, e, false, err
		}
		return t.decideAlgorithm(h.Limit, r, hits), next, write, nil
	}
	before := e.B
	after := before + int64(hits)
	h.Hits = hits
	st = t.decide(h, before, after, t.resetAfter(h))
	if hits == 0 {
		return st, e, false, nil
	}
	end := h.Start + UnitSeconds(h.Limit.Unit)
	return st, engine.Entry{Kind: engine.KindFixedWindow, A: h.Start * 1e9, B: after, Expire: end * 1e9}, true, nil
}

// resetAfter is the whole seconds from now to the end of a fixed window
// charge's window, never below 0 (a charge whose window ended while it
// travelled to its key's owner).
func (t tally) resetAfter(h Charge) int64 {
	return max(0, h.Start+UnitSeconds(h.Limit.Unit)-t.nowSec)
}

// decideAlgorithm is the answer and the statistics of a rule of another
// algorithm (limitdb's extension), from its limiter's result r for hits:
// limit_remaining is the limiter's remaining (what a request could still
// take now); duration_until_reset, in whole seconds rounded up, is the
// time until a request of this size would be admitted when over, and
// until the state is fresh again (the whole limit available) otherwise.
// A refused request charged nothing. Hits count as near the limit when
// admitted with more than the near-limit share of the limit used.
func (t tally) decideAlgorithm(lim *RateLimit, r limit.Result, hits uint64) Status {
	st := Status{Limit: lim, Over: r.Limited, Stats: Stats{TotalHits: hits}}
	ms := r.ResetAfter
	if r.Limited && r.RetryAfter >= 0 {
		ms = r.RetryAfter
	}
	st.ResetAfter = (ms + 999) / 1000
	if r.Remaining > 0 {
		st.Remaining = uint32(min(r.Remaining, math.MaxUint32))
	}
	switch {
	case r.Limited:
		st.Stats.OverLimit = hits
		if lim.ShadowMode {
			st.Stats.ShadowMode = hits
		}
	default:
		st.Stats.WithinLimit = hits
		if used := r.Limit - r.Remaining; float64(used) > math.Floor(float64(float32(r.Limit)*t.nearRatio)) {
			st.Stats.NearLimit = hits
		}
	}
	return st
}

// decide is the answer and the statistics of a descriptor whose count went
// from before to after (after - before may be 0: a check).
func (t tally) decide(h Charge, before, after, resetAfter int64) Status {
	lim := int64(h.Limit.RequestsPerUnit)
	near := int64(math.Floor(float64(float32(lim) * t.nearRatio)))
	hits := uint64(h.Hits)
	st := Status{Limit: h.Limit, ResetAfter: resetAfter, Stats: Stats{TotalHits: hits}}
	if after > lim {
		st.Over = true
		if before >= lim {
			st.Stats.OverLimit = hits
		} else {
			st.Stats.OverLimit = uint64(after - lim)
			st.Stats.NearLimit = uint64(lim - max(near, before))
		}
		if h.Limit.ShadowMode {
			// As over_limit: only the hits past the limit.
			st.Stats.ShadowMode = st.Stats.OverLimit
		}
		return st
	}
	st.Remaining = uint32(lim - after)
	st.Stats.WithinLimit = hits
	if after > near {
		if before >= near {
			st.Stats.NearLimit = hits
		} else {
			st.Stats.NearLimit = uint64(after - near)
		}
	}
	return st
}

// appendCacheKey appends envoyproxy/ratelimit's counter key: domain_key_value_..._start,
// with shared[i] in place of entry i's value when it is not "".
func appendCacheKey(b []byte, domain string, entries []Entry, shared []string, start int64) []byte {
	n := len(domain) + 21
	for i, e := range entries {
		n += len(e.Key) + len(e.Value) + 2
		if shared != nil {
			n += len(shared[i])
		}
	}
	b = slices.Grow(b, n)
	b = append(b, domain...)
	b = append(b, '_')
	for i, e := range entries {
		b = append(b, e.Key...)
		b = append(b, '_')
		if shared != nil && shared[i] != "" {
			b = append(b, shared[i]...)
		} else {
			b = append(b, e.Value...)
		}
		b = append(b, '_')
	}
	return strconv.AppendInt(b, start, 10)
}

// appendAlgorithmKey appends the state's key of a rule of another algorithm: the
// counter key's domain_key_value_... then the algorithm's name in place of
// the window's start (a state that spans windows has none), so it never
// meets envoyproxy/ratelimit's keys.
func appendAlgorithmKey(b []byte, domain string, entries []Entry, shared []string, a policy.Algorithm) []byte {
	b = appendCacheKey(b, domain, entries, shared, 0)
	return append(b[:len(b)-1], a...)
}

// floorDiv is a / b rounded toward minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
