package rls

import (
	"errors"
	"math"
	"strconv"

	"github.com/limitdb/limitdb/engine"
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
//     STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false); two descriptors
//     with the same key (the same path, or values that share a counter)
//     add up, the later seeing the earlier's hits;
//   - a count that stays 0 (hits 0) writes nothing: an absent counter is
//     a 0 count (envoyproxy/ratelimit's INCRBY 0 leaves a key holding 0).
//
// The counter is an FW.INCR entry (A = the window's start in ns, B = the
// count), expiring at the window's end, so it is snapshotted, replicated
// and shown by TYPE like any fixed window. A request's counters are read
// and written under their shards' locks at once (engine.DoMulti): unlike
// envoyproxy/ratelimit's GET then INCRBY, no other request comes between.

// NearLimitRatio is envoyproxy/ratelimit's NEAR_LIMIT_RATIO default: hits
// past this share of the limit count as near the limit.
const NearLimitRatio = 0.8

// ErrWrongType is a counter's key held by something else than a fixed
// window (a string set from redis-cli, say).
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

// Check charges hits against their rules at now (Unix ns) in eng and
// returns one status per hit.
func Check(eng *engine.Engine, domain string, hits []Hit, now int64) ([]Status, error) {
	out := make([]Status, len(hits))
	nowSec := floorDiv(now, 1e9)
	var keys [][]byte
	var idx []int // the hit of each key
	for i, h := range hits {
		switch {
		case h.Limit == nil:
			continue
		case h.Limit.Unlimited:
			out[i] = Status{Limit: h.Limit, Remaining: math.MaxUint32}
			continue
		}
		unit := UnitSeconds(h.Limit.Unit)
		if unit == 0 { // an override with an unknown unit: no limit
			out[i] = Status{}
			continue
		}
		keys = append(keys, cacheKey(domain, h.Entries, h.Shared, floorDiv(nowSec, unit)*unit))
		idx = append(idx, i)
	}
	if len(keys) == 0 {
		return out, nil
	}
	first := engine.FirstPlaces(keys)
	var err error
	eng.DoMulti(keys, now, func(ents []engine.Entry) bool {
		counts := make([]int64, len(keys))
		for k := range keys {
			e := ents[first[k]]
			switch {
			case e.Kind != engine.KindNone && e.Kind != engine.KindFixedWindow:
				err = ErrWrongType
				return false
			case e.Kind == engine.KindFixedWindow:
				counts[k] = e.B
			}
		}
		write := false
		for k := range keys {
			h, f := hits[idx[k]], first[k]
			unit := UnitSeconds(h.Limit.Unit)
			start := floorDiv(nowSec, unit) * unit
			before := counts[f]
			after := before + int64(h.Hits)
			counts[f] = after
			if h.Hits > 0 {
				write = true
				ents[f] = engine.Entry{Kind: engine.KindFixedWindow, A: start * 1e9, B: after, Expire: (start + unit) * 1e9}
			}
			out[idx[k]] = decide(h, before, after, start+unit-nowSec)
			out[idx[k]].StatsKey = h.StatsKey
		}
		return write
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// decide is the answer and the statistics of a descriptor whose count went
// from before to after (after - before may be 0: a check).
func decide(h Hit, before, after, resetAfter int64) Status {
	lim := int64(h.Limit.RequestsPerUnit)
	near := int64(math.Floor(float64(float32(lim) * NearLimitRatio)))
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
			st.Stats.ShadowMode = hits
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

// cacheKey is envoyproxy/ratelimit's counter key: domain_key_value_..._start,
// with shared[i] in place of entry i's value when it is not "".
func cacheKey(domain string, entries []Entry, shared []string, start int64) []byte {
	n := len(domain) + 21
	for i, e := range entries {
		n += len(e.Key) + len(e.Value) + 2
		if shared != nil {
			n += len(shared[i])
		}
	}
	b := make([]byte, 0, n)
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

// floorDiv is a / b rounded toward minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
