package engine

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/limitdb/limitdb/engine/lease"
	"github.com/limitdb/limitdb/engine/limit"
)

// The concurrency limiter (CL.ACQUIRE, CL.RELEASE, CL.RENEW and policies
// of algorithm concurrency): a key of KindLease holds a lease.Set in a
// *leaseBox as its Ext state, changed in place under the shard's lock as a
// collection is (collections.go). Its Expire is the latest lease's expiry,
// so the key goes when its last lease does and PTTL shows that instant; A
// and B are 0. Expired leases are reclaimed by the next command on the key.
//
// Apply (the Limiter interface, for callers that may drop what it
// computes) works on a copy; the commands change the set in place through
// AcquireIn, ReleaseIn and RenewIn, inside their own Do.

// leaseBox is a key's leases as its Ext state.
type leaseBox struct{ s lease.Set }

func (b *leaseBox) extBytes() int64 { return int64(unsafe.Sizeof(*b)) + b.s.Bytes() }
func (b *leaseBox) cloneExt() any   { return &leaseBox{s: b.s.Clone()} }

// leaseExt serialises a key's leases with their absolute expiries
// (lease.Set.AppendBinary), so that a copy loaded later, elsewhere, on
// another clock, expires each lease at the same instant.
var leaseExt = ExtCodec{
	Append: func(b []byte, e *Entry) ([]byte, error) {
		x, ok := e.Ext.(*leaseBox)
		if !ok {
			return nil, fmt.Errorf("lease state is %T", e.Ext)
		}
		e.A, e.B = 0, 0
		return x.s.AppendBinary(b), nil
	},
	Decode: func(b []byte, e *Entry) error {
		s, err := lease.Decode(b)
		if err != nil {
			return err
		}
		if s.Len() == 0 {
			return errors.New("a lease key without leases")
		}
		e.Ext, e.A, e.B = &leaseBox{s: s}, 0, 0
		e.Expire = s.Latest()
		return nil
	},
}

// LeaseLimiter is the concurrency limiter with its parameters bound: at
// most Limit permits held at once, each lease held for TTL nanoseconds
// unless renewed or released. Its results are in milliseconds, rounded
// up; RetryAfter is the time until the earliest leases expire and free
// enough permits.
type LeaseLimiter struct {
	Limit int64
	TTL   int64
}

// Errors of NewLeaseLimiter.
var (
	ErrLeaseLimit  = errors.New("limit must be at least 1")
	ErrLeaseWeight = errors.New("a lease's weight must not be negative")
	ErrLeaseTTL    = fmt.Errorf("ttl must be positive and at most %d days", lease.MaxTTL/(24*3600*1e9))
)

// NewLeaseLimiter validates a limit of concurrent permits and a lease ttl
// in nanoseconds.
func NewLeaseLimiter(limit, ttl int64) (LeaseLimiter, error) {
	switch {
	case limit < 1:
		return LeaseLimiter{}, ErrLeaseLimit
	case ttl <= 0 || ttl > lease.MaxTTL:
		return LeaseLimiter{}, ErrLeaseTTL
	}
	return LeaseLimiter{Limit: limit, TTL: ttl}, nil
}

// Kind implements Limiter.
func (LeaseLimiter) Kind() Kind { return KindLease }

// Apply implements Limiter: a lease of cost permits (cost 0 peeks),
// decided on a copy of ent's leases. No caller learns its id, so nobody
// can release or renew it: it frees its permits when its ttl passes. The
// id is derived from the set and now (lease.Set.UnusedID), so that the same
// request on equal states gives equal states. Commands use AcquireIn.
func (l LeaseLimiter) Apply(ent Entry, now, cost int64) (Entry, limit.Result, bool, error) {
	if cost < 0 {
		return ent, limit.Result{}, false, ErrLeaseWeight
	}
	b := &leaseBox{}
	if x, ok := ent.Ext.(*leaseBox); ok {
		b = &leaseBox{s: x.s.Clone()}
	}
	b.s.Reclaim(now)
	id := ""
	if cost > 0 {
		id = b.s.UnusedID(now)
	}
	d := b.s.Acquire(now, l.Limit, cost, l.TTL, id, cost > 0)
	return leaseEntry(b), l.result(d), cost > 0 && !d.Limited, nil
}

// ApplyLease is Apply under a fresh id (lease.NewID), which it returns
// ("" unless admitted): for a caller that decides on copies and may drop
// them (RL.HITALL) but tells the holder its id when it keeps them.
func (l LeaseLimiter) ApplyLease(ent Entry, now, cost int64) (Entry, limit.Result, string, bool, error) {
	if cost < 0 {
		return ent, limit.Result{}, "", false, ErrLeaseWeight
	}
	b := &leaseBox{}
	if x, ok := ent.Ext.(*leaseBox); ok {
		b = &leaseBox{s: x.s.Clone()}
	}
	b.s.Reclaim(now)
	if d := b.s.Peek(now, l.Limit, cost); d.Limited || cost == 0 {
		return leaseEntry(b), l.result(d), "", false, nil
	}
	id := lease.NewID()
	d := b.s.Acquire(now, l.Limit, cost, l.TTL, id, true)
	return leaseEntry(b), l.result(d), id, true, nil
}

// result is the uniform reply of a decision.
func (l LeaseLimiter) result(d lease.Decision) limit.Result {
	return result(d.Limited, l.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
}

// leaseEntry is the entry of a key holding b's leases: none deletes it.
func leaseEntry(b *leaseBox) Entry {
	if b.s.Len() == 0 {
		return Entry{}
	}
	return Entry{Kind: KindLease, Expire: b.s.Latest(), Ext: b}
}

// leaseBoxOf is ent's leases to change in place, a new box for an absent
// key; ErrWrongType for another kind.
func leaseBoxOf(ent Entry) (*leaseBox, error) {
	switch ent.Kind {
	case KindNone:
		return &leaseBox{}, nil
	case KindLease:
		if b, ok := ent.Ext.(*leaseBox); ok {
			return b, nil
		}
		return nil, fmt.Errorf("lease state is %T", ent.Ext)
	}
	return nil, ErrWrongType
}

// AcquireIn acquires a lease of weight permits (0 peeks) under id on ent
// at now, changing ent's leases in place, for a caller inside Do. An empty
// id gets a fresh one (lease.NewID) when the lease is admitted; an id
// already live renews its lease (lease.Set.Acquire). It returns the entry
// to store, whether to store it (an admission, or expired leases
// reclaimed), and the lease's id ("" when denied or peeking). ent must be
// absent or KindLease.
func (l LeaseLimiter) AcquireIn(ent Entry, now, weight int64, id string) (next Entry, r limit.Result, leaseID string, write bool, err error) {
	b, err := leaseBoxOf(ent)
	if err != nil {
		return ent, limit.Result{}, "", false, err
	}
	if weight < 0 {
		return ent, limit.Result{}, "", false, ErrLeaseWeight
	}
	reclaimed := b.s.Reclaim(now) > 0
	if weight > 0 && id == "" {
		if d := b.s.Peek(now, l.Limit, weight); !d.Limited {
			id = lease.NewID()
		}
	}
	d := b.s.Acquire(now, l.Limit, weight, l.TTL, id, weight > 0)
	admitted := weight > 0 && !d.Limited
	if admitted {
		leaseID = id
	}
	return leaseEntry(b), l.result(d), leaseID, admitted || reclaimed, nil
}

// ReleaseIn releases the lease id on ent at now in place, for a caller
// inside Do: released is false when no live lease has that id (never
// acquired, released already, or expired), which is not an error.
func ReleaseIn(ent Entry, now int64, id string) (next Entry, released, write bool, err error) {
	if ent.Kind == KindNone {
		return ent, false, false, nil
	}
	b, err := leaseBoxOf(ent)
	if err != nil {
		return ent, false, false, err
	}
	reclaimed := b.s.Reclaim(now) > 0
	released = b.s.Release(now, id)
	return leaseEntry(b), released, released || reclaimed, nil
}

// RenewIn sets the live lease id on ent to expire ttl nanoseconds after
// now, in place, for a caller inside Do; lease.ErrNoLease when no live
// lease has that id. expire is the lease's new expiry.
func RenewIn(ent Entry, now int64, id string, ttl int64) (next Entry, expire int64, write bool, err error) {
	if ttl <= 0 || ttl > lease.MaxTTL {
		return ent, 0, false, ErrLeaseTTL
	}
	if ent.Kind == KindNone {
		return ent, 0, false, lease.ErrNoLease
	}
	b, err := leaseBoxOf(ent)
	if err != nil {
		return ent, 0, false, err
	}
	reclaimed := b.s.Reclaim(now) > 0
	if err := b.s.Renew(now, id, ttl); err != nil {
		return leaseEntry(b), 0, reclaimed, err
	}
	return leaseEntry(b), now + ttl, true, nil
}

// Acquire is CL.ACQUIRE: AcquireIn on key, atomically under its shard's
// lock. A key of another kind is ErrWrongType.
func (l LeaseLimiter) Acquire(e *Engine, key []byte, now, weight int64, id string) (r limit.Result, leaseID string, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		next, res, got, write, aerr := l.AcquireIn(ent, now, weight, id)
		r, leaseID, err = res, got, aerr
		return next, write
	})
	return r, leaseID, err
}

// ReleaseLease is CL.RELEASE: ReleaseIn on key, atomically.
func ReleaseLease(e *Engine, key []byte, now int64, id string) (released bool, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		next, rel, write, rerr := ReleaseIn(ent, now, id)
		released, err = rel, rerr
		return next, write
	})
	return released, err
}

// RenewLease is CL.RENEW: RenewIn on key, atomically.
func RenewLease(e *Engine, key []byte, now int64, id string, ttl int64) (expire int64, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		next, exp, write, rerr := RenewIn(ent, now, id, ttl)
		expire, err = exp, rerr
		return next, write
	})
	return expire, err
}
