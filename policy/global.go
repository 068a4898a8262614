package policy

import (
	"errors"
	"fmt"
	"time"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/gcra"
	"github.com/limitdb/limitdb/engine/limit"
	"github.com/limitdb/limitdb/engine/window"
)

// Global policies (scope: global) are one limit shared by several regions
// (docs/global.md). Every region decides locally, at local latency,
// against its own state in the keyspace plus what it last heard from the
// other regions, which it reads through Peers; package region implements
// Peers and carries the counts between regions. Each algorithm counts this
// region's consumed cost in a slot (id, value): an id that only grows (a
// window's start, or the instant a bucket's state began) and a value that
// only grows while the id stays. Peers merge slots by taking the larger,
// so a batch lost, repeated or reordered never counts twice.
//
//   - fixed_window: the slot is (window start, cost admitted here in it); a
//     request is admitted when own + heard(start) + cost <= limit.
//   - sliding_window: slots for the current and the previous window; the
//     estimate weighs the previous window's own + heard counts as a local
//     sliding window does.
//   - gcra and token_bucket (a bucket of burst refilled at limit/period is
//     GCRA with that tolerance): the slot is (state's birth, cost admitted
//     here since). A region that hears a peer's slot grow by d moves its
//     own TAT: TAT = max(TAT, now) + d x emission interval (Absorb), once per
//     unit thanks to the merge.
//   - sliding_log, leaky_queue, concurrency and calendar windows cannot be
//     merged from per-region counts and are refused.

// Peers is what a global policy's admission knows of the other regions:
// their counts, kept in a PeerTable that the admission reads and writes
// under the key's shard lock without blocking or allocating, how many
// regions there are, and how stale their counts may be.
type Peers interface {
	// Table is the counts heard from the peers and this region's own
	// slots to send them.
	Table() *PeerTable
	// Regions is the number of regions, this one included.
	Regions() int
	// Lags reports, per peer, how far behind its counts may be.
	Lags() []PeerLag
}

// PeerLag is how stale one peer's counts are: the sync interval plus the
// measured one-way delay of its batches, and whether it is partitioned.
type PeerLag struct {
	Name        string
	Lag         time.Duration // interval + delay of the latest batch
	MaxLag      time.Duration // the largest seen
	Partitioned bool
}

// ErrNotGlobal is a rejected scope: global for an algorithm that cannot be
// merged across regions, or a command that cannot apply a global policy.
var ErrNotGlobal = errors.New("cannot be global")

// SetPeers connects global policies to the other regions. Without it, a
// global policy counts this region alone.
func (s *Store) SetPeers(p Peers) { s.peers.Store(&p) }

// peersOrNil is the Peers set, or nil.
func (s *Store) peersOrNil() Peers {
	if p := s.peers.Load(); p != nil {
		return *p
	}
	return nil
}

// Bound is the most a global policy may over-admit now (cost units): its
// rate times the sum over peers of their lag, (regions - 1) x rate x
// (interval + one-way delay) when the peers' lags are equal.
func Bound(p Policy, lags []PeerLag) int64 {
	if p.Period <= 0 {
		return 0
	}
	var sum time.Duration
	for _, l := range lags {
		sum += l.MaxLag
	}
	// rate x sum, rounded up, in integer arithmetic.
	return (p.Limit*int64(sum) + int64(p.Period) - 1) / int64(p.Period)
}

// validateGlobal refuses scope: global where the algorithm's state cannot
// be merged from per-region counts.
func (p Policy) validateGlobal() error {
	if !p.Global {
		return nil
	}
	if p.Calendar.Unit != 0 {
		return &FieldError{"scope", "a calendar period cannot be global (its windows are not aligned across regions' zones); use a period in seconds"}
	}
	switch p.Algorithm {
	case FixedWindow, SlidingWindow, GCRA, TokenBucket:
		return nil
	case SlidingLog:
		return &FieldError{"scope", "sliding_log cannot be global: an exact log cannot be merged from per-region counts without a cross-region round trip per hit; use sliding_window"}
	}
	return &FieldError{"scope", fmt.Sprintf("%s cannot be global (use fixed_window, sliding_window, gcra or token_bucket)", p.Algorithm)}
}

// globalAlg is a global policy's decision: the local algorithm's state in
// the entry plus the peers' heard counts.
type globalAlg struct {
	kind   engine.Kind
	fixed  window.Fixed
	slide  window.Sliding
	cell   gcra.Limit
	limit  int64 // the reply's limit field
	bucket bool  // gcra or token_bucket
}

func newGlobal(p Policy) (*globalAlg, error) {
	g := &globalAlg{limit: p.Limit}
	var err error
	switch p.Algorithm {
	case FixedWindow:
		g.kind = engine.KindFixedWindow
		g.fixed, err = window.NewFixed(p.Limit, int64(p.Period))
	case SlidingWindow:
		g.kind = engine.KindSlidingWindow
		g.slide, err = window.NewSliding(p.Limit, int64(p.Period), 1)
	default: // GCRA, TokenBucket
		g.kind, g.bucket, g.limit = engine.KindGCRA, true, p.EffectiveBurst()
		interval := int64(p.Period) / p.Limit
		if interval < 1 {
			return nil, errors.New("more than one request per nanosecond")
		}
		g.cell, err = gcra.NewLimit(interval, p.EffectiveBurst()-1)
	}
	return g, err
}

// apply decides a request of cost at now for key (the policy's keyspace
// key) against ent, this region's state, and what peers reported. It
// returns the entry to store, the reply, whether to store it, and the slot
// to tell the peers when written.
func (g *globalAlg) apply(ent engine.Entry, now, cost int64, peers *peerView) (engine.Entry, limit.Result, bool, slot, error) {
	if ent.Kind != g.kind {
		ent = engine.Entry{}
	}
	switch {
	case g.bucket:
		return g.applyBucket(ent, now, cost, peers)
	case g.kind == engine.KindFixedWindow:
		return g.applyFixed(ent, now, cost, peers)
	}
	return g.applySliding(ent, now, cost, peers)
}

// slot is this region's (id, total) for a key after a write.
type slot struct{ id, total int64 }

// share is the fair share of a window's limit among regions.
func (g *globalAlg) share(regions int) int64 {
	return g.fixedOrSlideLimit() / int64(max(regions, 1))
}

func (g *globalAlg) fixedOrSlideLimit() int64 {
	if g.kind == engine.KindFixedWindow {
		return g.fixed.Limit
	}
	return g.slide.Limit
}

// applyFixed: own count in the entry (A = window start, B = own count),
// decided as window.Fixed over own + heard.
func (g *globalAlg) applyFixed(ent engine.Entry, now, cost int64, peers *peerView) (engine.Entry, limit.Result, bool, slot, error) {
	w := g.fixed.Window
	start := now - ((now%w)+w)%w
	own := window.FixedState{Start: ent.A, Count: ent.B}
	if own.Count == 0 || own.Start < start {
		own = window.FixedState{Start: start}
	}
	h := peers.heard(own.Start)
	d, st, err := g.fixed.Incr(window.FixedState{Start: own.Start, Count: own.Count + h}, now, cost)
	if err != nil {
		return ent, limit.Result{}, false, slot{}, err
	}
	r := limit.Result{Limited: d.Limited, Limit: g.fixed.Limit, Remaining: d.Remaining,
		RetryAfter: ceilOrNeg(d.RetryAfter), ResetAfter: limit.CeilMillis(d.ResetAfter)}
	if d.Limited || cost == 0 {
		return ent, r, false, slot{}, nil
	}
	own.Count = st.Count - h
	next := engine.Entry{Kind: engine.KindFixedWindow, A: own.Start, B: own.Count, Expire: g.fixed.Expire(own)}
	return next, r, true, slot{own.Start, own.Count}, nil
}

// applySliding: own counts in the entry as SW.INCR keeps them (A = the
// current window's start, B = its count low and the previous window's
// high), decided as window.Sliding over own + heard for both windows.
func (g *globalAlg) applySliding(ent engine.Entry, now, cost int64, peers *peerView) (engine.Entry, limit.Result, bool, slot, error) {
	w := g.slide.Window
	start := now - ((now%w)+w)%w
	var cur, prev int64
	switch {
	case ent.Kind == engine.KindNone:
	case ent.A >= start: // this window (or later: the clock went back)
		start, cur, prev = ent.A, int64(uint32(ent.B)), int64(uint64(ent.B)>>32)
	case ent.A == start-w:
		prev = int64(uint32(ent.B))
	}
	all := [2]int64{cur + peers.heard(start), prev + peers.heard(start-w)}
	d, err := g.slide.Decide(window.SlidingState{Start: start, Counts: all[:]}, now, cost)
	if err != nil {
		return ent, limit.Result{}, false, slot{}, err
	}
	r := limit.Result{Limited: d.Limited, Limit: g.slide.Limit, Remaining: d.Remaining,
		RetryAfter: ceilOrNeg(d.RetryAfter), ResetAfter: limit.CeilMillis(d.ResetAfter)}
	if d.Limited || cost == 0 {
		return ent, r, false, slot{}, nil
	}
	cur += cost
	if cur > 1<<32-1 {
		return ent, limit.Result{}, false, slot{}, window.ErrOverflow
	}
	ownCounts := [2]int64{cur, prev}
	next := engine.Entry{Kind: engine.KindSlidingWindow, A: start, B: int64(uint64(cur) | uint64(prev)<<32),
		Expire: g.slide.Expire(window.SlidingState{Start: start, Counts: ownCounts[:]})}
	return next, r, true, slot{start, cur}, nil
}

// applyBucket: GCRA over the TAT every region's consumption moves. The
// entry's expiry is the TAT (the state is fresh once it passes); A is when
// this state began, the slot's id; B is the cost admitted here since.
// Peers' consumption arrives through Absorb; a partitioned peer's, under
// on-partition fair-share, as its fair share of the rate (fairShareTAT).
func (g *globalAlg) applyBucket(ent engine.Entry, now, cost int64, peers *peerView) (engine.Entry, limit.Result, bool, slot, error) {
	tat, birth, own := ent.Expire, ent.A, ent.B
	if ent.Kind == engine.KindNone || birth == 0 || tat <= now {
		tat, birth, own = 0, now, 0
	}
	d, err := gcra.Decide(peers.fairShareTAT(tat, now), now, g.cell, cost)
	if err != nil {
		return ent, limit.Result{}, false, slot{}, err
	}
	r := limit.Result{Limited: d.Limited, Limit: g.limit, RetryAfter: ceilOrNeg(d.RetryAfter), ResetAfter: limit.CeilMillis(d.TTL)}
	if d.Next > 0 {
		r.Remaining = d.Next / g.cell.Interval
	}
	if d.Limited || cost == 0 {
		return ent, r, false, slot{}, nil
	}
	own += cost
	return engine.Entry{Kind: engine.KindGCRA, A: birth, B: own, Expire: d.TAT}, r, true, slot{birth, own}, nil
}

func ceilOrNeg(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	return limit.CeilMillis(ns)
}

// IsBucket reports whether the global policy name moves its state by the
// peers' consumption as it arrives (gcra, token_bucket: Absorb) rather than
// reading it at admission (the windows: Peers.Heard).
func (s *Store) IsBucket(name []byte) (global, bucket bool) {
	c := s.lookup(name)
	if c == nil || c.glob == nil {
		return false, false
	}
	return true, c.glob.bucket
}

// PolicyOf is the policy name in a policy key rl:<name>:<key>.
func PolicyOf(key []byte) ([]byte, bool) {
	if len(key) < 4 || string(key[:3]) != "rl:" {
		return nil, false
	}
	for i := 3; i < len(key); i++ {
		if key[i] == ':' {
			return key[3:i], i > 3
		}
	}
	return nil, false
}

// Absorb moves the state of key (a global gcra or token_bucket policy's
// key) by cost a peer consumed, heard now: TAT = max(TAT, now) + cost x
// emission interval. A unit consumed elsewhere and absorbed later drains
// later, so a region's TAT is never below the one a single limiter would
// have over every region's admissions once it has heard them all.
func (s *Store) Absorb(e *engine.Engine, key []byte, now, cost int64) error {
	name, ok := PolicyOf(key)
	if !ok {
		return ErrUnknown
	}
	c := s.lookup(name)
	if c == nil || c.glob == nil || !c.glob.bucket {
		return ErrUnknown
	}
	if cost <= 0 {
		return nil
	}
	var err error
	e.Do(key, now, func(ent engine.Entry) (engine.Entry, bool) {
		if ent.Kind != engine.KindGCRA && ent.Kind != engine.KindNone {
			if !ent.Kind.Limiter() {
				err = engine.ErrWrongType
				return ent, false
			}
			ent = engine.Entry{}
		}
		if ent.Kind == engine.KindNone || ent.A == 0 || ent.Expire <= now {
			ent = engine.Entry{Kind: engine.KindGCRA, A: now}
		}
		tat := max(ent.Expire, now)
		iv := c.glob.cell.Interval
		if cost > (1<<62-tat)/iv {
			tat = 1 << 62
		} else {
			tat += cost * iv
		}
		ent.Expire = tat
		return ent, true
	})
	return err
}

// Lags is the peers' lags, or none when no peers are set.
func (s *Store) Lags() []PeerLag {
	if p := s.peersOrNil(); p != nil {
		return p.Lags()
	}
	return nil
}
