package policy

import (
	"errors"
	"fmt"

	"github.com/limitdb/limitdb/analytics"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/limit"
)

// Reply is one policy's answer: the uniform limiter reply in milliseconds,
// and whether it carries LB.QUEUE's sixth field (leaky_queue policies).
type Reply struct {
	limit.Result
	WithDelay bool

	// Leased marks a concurrency policy's reply, which carries Lease: the
	// id of the lease acquired, "" when none was (denied, a peek, or a
	// shadow policy's would-be denial).
	Leased bool
	Lease  string
}

// Pair is one (policy, client key) check of RL.HITALL.
type Pair struct{ Policy, Key []byte }

// Hit applies policy name to the client key at now, charging cost units
// (0 peeks). A shadow policy never answers limited; its would-be denials
// are counted instead.
func (s *Store) Hit(e *engine.Engine, name, key []byte, now, cost int64) (Reply, error) {
	c := s.lookup(name)
	if c == nil {
		return Reply{}, unknown(name)
	}
	var buf [128]byte
	k := Key(buf[:0], c.Name, key)
	if c.glob != nil {
		return s.hitGlobal(e, c, k, key, now, cost)
	}
	var r limit.Result
	var err error
	ll, leased := c.lim.(engine.LeaseLimiter)
	var id string
	e.Do(k, now, func(ent engine.Entry) (engine.Entry, bool) {
		orig := ent
		if ent, err = own(ent, c.lim.Kind()); err != nil {
			return ent, false
		}
		if leased {
			next, res, got, write, aerr := ll.AcquireIn(ent, now, cost, "")
			r, id, err = res, got, aerr
			return next, write && aerr == nil
		}
		next, res, write, aerr := c.lim.Apply(ent, now, cost)
		r, err = res, aerr
		next = engine.Rewrap(orig, next, now)
		return next, write && aerr == nil
	})
	if err != nil {
		return Reply{}, err
	}
	if cost > 0 {
		s.count(c, key, now, r, r.Limited, !r.Limited || c.Shadow)
	}
	rep := c.reply(r)
	rep.Lease = id
	return rep, nil
}

// hitGlobal is Hit for a global policy: decided here, against this
// region's state and the peers' heard counts, with the key's record in the
// peer table held from the read of the heard counts to the write of the
// new slot, under the key's shard lock (so slots are recorded in the order
// they were written).
func (s *Store) hitGlobal(e *engine.Engine, c *compiled, k, key []byte, now, cost int64) (Reply, error) {
	var r limit.Result
	var err error
	var tab *PeerTable
	var share int64
	regions := 1
	if p := s.peersOrNil(); p != nil {
		tab, regions = p.Table(), p.Regions()
		share = c.glob.share(regions)
	}
	e.Do(k, now, func(ent engine.Entry) (engine.Entry, bool) {
		if ent, err = own(ent, c.glob.kind); err != nil {
			return ent, false
		}
		view := tab.hold(k, share, regions)
		next, res, write, sl, aerr := c.glob.apply(ent, now, cost, &view)
		write = write && aerr == nil
		view.release(k, Slot{sl.id, sl.total}, write, now)
		r, err = res, aerr
		return next, write
	})
	if err != nil {
		return Reply{}, err
	}
	if cost > 0 {
		s.count(c, key, now, r, r.Limited, !r.Limited || c.Shadow)
	}
	return c.reply(r), nil
}

// HitAll applies every pair at one instant, all or nothing: every key's
// shard is locked (in ascending order) from the first read to the last
// write, each pair is decided against the state the earlier pairs left (the
// same policy and key twice is charged twice), and if any non-shadow policy
// denies, nothing is written. On a denial the pairs that would have passed
// answer as a peek: their state, uncharged. Unknown policies and wrong
// types fail the whole call before or without writing anything.
func (s *Store) HitAll(e *engine.Engine, pairs []Pair, now, cost int64) (limited bool, replies []Reply, err error) {
	cs := make([]*compiled, len(pairs))
	keys := make([][]byte, len(pairs))
	for i, p := range pairs {
		if cs[i] = s.lookup(p.Policy); cs[i] == nil {
			return false, nil, unknown(p.Policy)
		}
		if cs[i].glob != nil {
			return false, nil, fmt.Errorf("policy '%s' is global: RL.HITALL %w (use RL.HIT)", cs[i].Name, ErrNotGlobal)
		}
		keys[i] = Key(nil, cs[i].Name, p.Key)
	}
	// owner[i] is the first pair with the same key: its entry carries the
	// state for every repeat.
	owner := engine.FirstPlaces(keys)
	rs := make([]limit.Result, len(pairs))
	ids := make([]string, len(pairs))     // a concurrency policy's lease
	refused := make([]bool, len(pairs))   // this pair's policy denied
	wouldDeny := make([]bool, len(pairs)) // ... or would have, were it not shadow
	e.DoMulti(keys, now, func(ents []engine.Entry) bool {
		work := make([]engine.Entry, len(ents))
		for i, c := range cs {
			o := owner[i]
			if o == i {
				if work[i], err = own(ents[i], c.lim.Kind()); err != nil {
					return false
				}
			}
			var next engine.Entry
			var r limit.Result
			var write bool
			var aerr error
			if ll, ok := c.lim.(engine.LeaseLimiter); ok {
				next, r, ids[i], write, aerr = ll.ApplyLease(work[o], now, cost)
			} else {
				next, r, write, aerr = c.lim.Apply(work[o], now, cost)
			}
			if aerr != nil {
				err = aerr
				return false
			}
			rs[i], wouldDeny[i] = r, r.Limited
			if r.Limited && !c.Shadow {
				refused[i], limited = true, true
			}
			if write && !r.Limited {
				work[o] = next
			}
		}
		if limited {
			for i, c := range cs {
				if !refused[i] {
					_, rs[i], _, _ = c.lim.Apply(workBase(ents, owner, cs, i), now, 0)
				}
			}
			return false
		}
		if cost == 0 {
			return false
		}
		for i := range ents {
			if owner[i] == i {
				ents[i] = engine.Rewrap(ents[i], work[i], now)
			}
		}
		return true
	})
	if err != nil {
		return false, nil, err
	}
	replies = make([]Reply, len(pairs))
	for i, c := range cs {
		if cost > 0 {
			s.count(c, pairs[i].Key, now, rs[i], wouldDeny[i], !limited)
		}
		replies[i] = c.reply(rs[i])
		if !limited {
			replies[i].Lease = ids[i]
		}
	}
	return limited, replies, nil
}

// unknown is ErrUnknown naming the policy, clipped: the name is client input.
func unknown(name []byte) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w '%s...'", ErrUnknown, name[:MaxNameLen])
	}
	return fmt.Errorf("%w '%s'", ErrUnknown, name)
}

// workBase is pair i's entry as it was before the call (for the peeks that
// answer a denied RL.HITALL).
func workBase(ents []engine.Entry, owner []int, cs []*compiled, i int) engine.Entry {
	ent, _ := own(ents[owner[i]], cs[i].lim.Kind())
	return ent
}

// own returns the entry a policy's limiter may read. The rl: namespace
// belongs to policies: state another algorithm left there (the policy's
// algorithm changed) counts as absent, so the new algorithm starts fresh.
// A value of a Redis type (string, hash, set, zset, list) there is a WRONGTYPE
// error, never overwritten.
func own(ent engine.Entry, k engine.Kind) (engine.Entry, error) {
	switch ent.Kind {

	case engine.KindReserve: // the state the reservations were charged to (reserve.go)
		inner, _ := engine.Reservations(ent, k, 0)
		return inner, nil

	case engine.KindNone, k:
		return ent, nil
	}
	if !ent.Kind.Limiter() {
		return ent, engine.ErrWrongType
	}
	return engine.Entry{}, nil
}

// count records one decision of c on the client's key, in c's counters
// and to the store's Observer: denied (by this policy) or admitted. A
// shadow policy's limited answer counts as admitted and shadow-denied.
func (s *Store) count(c *compiled, key []byte, now int64, r limit.Result, limited, admitted bool) {
	var d analytics.Decision
	switch {
	case limited && c.Shadow:
		c.stats.ShadowDenied.Add(1)
		d.ShadowDenied = true
		if admitted {
			c.stats.Admitted.Add(1)
			d.Admitted = true
		}
	case limited:
		c.stats.Denied.Add(1)
		d.Denied = true
	case admitted:
		c.stats.Admitted.Add(1)
		d.Admitted = true
	default:
		return
	}
	if s.observer != nil {
		d.Limit, d.Remaining = r.Limit, r.Remaining
		s.observer.ObservePolicy(c.Name, key, now, d)
	}
}

// Observer sees each decision a policy counts (Counters) with the client's
// key, as it counts it, on the goroutine that made it: it must be cheap,
// never block, and not keep key. The analytics watch through it.
type Observer interface {
	ObservePolicy(policy string, key []byte, now int64, d analytics.Decision)
}

// SetObserver makes o see every decision the store's policies count. It
// must be called before the store is used (at start-up).
func (s *Store) SetObserver(o Observer) { s.observer = o }

// reply masks a shadow policy's denial: the client sees an admission.
func (c *compiled) reply(r limit.Result) Reply {
	if r.Limited && c.Shadow {
		r.Limited, r.RetryAfter = false, -1
		if r.Delay < 0 {
			r.Delay = 0
		}
	}
	return Reply{Result: r, WithDelay: c.Algorithm == LeakyQueue,

		Leased: c.Algorithm == Concurrency,
	}
}

// Release releases the lease id that concurrency policy name holds for the
// client key: released is false when no live lease has that id (released
// already, expired, or never acquired), which is not an error. A policy of
// another algorithm is ErrNotConcurrency.
func (s *Store) Release(e *engine.Engine, name, key []byte, id string, now int64) (released bool, err error) {
	c, err := s.leasePolicy(name)
	if err != nil {
		return false, err
	}
	var buf [128]byte
	e.Do(Key(buf[:0], c.Name, key), now, func(ent engine.Entry) (engine.Entry, bool) {
		if ent, err = own(ent, engine.KindLease); err != nil {
			return ent, false
		}
		next, rel, write, rerr := engine.ReleaseIn(ent, now, id)
		released, err = rel, rerr
		return next, write && rerr == nil
	})
	return released, err
}

// Renew extends the live lease id of concurrency policy name for the
// client key to expire ttl nanoseconds after now (the policy's period
// when ttl is 0) and returns its new expiry; lease.ErrNoLease when no live
// lease has that id.
func (s *Store) Renew(e *engine.Engine, name, key []byte, id string, ttl, now int64) (expire int64, err error) {
	c, err := s.leasePolicy(name)
	if err != nil {
		return 0, err
	}
	if ttl == 0 {
		ttl = int64(c.Period)
	}
	var buf [128]byte
	e.Do(Key(buf[:0], c.Name, key), now, func(ent engine.Entry) (engine.Entry, bool) {
		if ent, err = own(ent, engine.KindLease); err != nil {
			return ent, false
		}
		next, exp, write, rerr := engine.RenewIn(ent, now, id, ttl)
		expire, err = exp, rerr
		return next, write
	})
	return expire, err
}

// ErrNotConcurrency is RL.RELEASE or RL.RENEW naming a policy whose
// algorithm holds no leases.
var ErrNotConcurrency = errors.New("holds no leases: its algorithm is not concurrency")

// leasePolicy is the concurrency policy name.
func (s *Store) leasePolicy(name []byte) (*compiled, error) {
	c := s.lookup(name)
	if c == nil {
		return nil, unknown(name)
	}
	if c.Algorithm != Concurrency {
		return nil, fmt.Errorf("policy '%s' %w", c.Name, ErrNotConcurrency)
	}
	return c, nil
}
