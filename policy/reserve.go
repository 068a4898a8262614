package policy

import (
	"errors"
	"fmt"

	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/engine/gcra"
	"github.com/limitdb/limitdb/engine/limit"
)

// Reservations on named policies (RL.RESERVE, RL.SETTLE): the request's
// estimated cost is charged now, under a reservation id, and the real cost
// settled later (engine.Reserve, engine.Settle). gcra, token_bucket,
// fixed_window and sliding_window policies take them; leaky_queue and
// sliding_log refuse them (ErrNoReservations, docs/algorithms.md says
// why).

// ErrNoReservations is a reservation on a policy whose algorithm takes
// none.
var ErrNoReservations = errors.New("takes no reservations")

// DefaultReservationTTL is the ttl of a reservation RL.RESERVE gives none:
// five minutes, longer than a streamed response of a language model
// takes, after which an unsettled reservation settles at its estimate.
const DefaultReservationTTL = int64(5 * 60 * 1e9)

// Reservation is the answer to Reserve: the policy's reply and, when the
// request was admitted, the reservation's id.
type Reservation struct {
	Reply
	ID engine.ReservationID // valid when Admitted
	// Admitted is true when the estimate was charged (or a shadow policy
	// would have denied it) and ID names the reservation.
	Admitted bool
}

// adjuster is the compiled policy's limiter as an engine.Adjuster, or an
// error naming why its algorithm takes no reservations.
func (c *compiled) adjuster() (engine.Adjuster, error) {
	if c.glob != nil {
		return nil, fmt.Errorf("policy '%s' is global, and a global policy %w: a cost given back cannot be taken back from the peers' counts", c.Name, ErrNoReservations)
	}
	if a, ok := c.lim.(engine.Adjuster); ok {
		return a, nil
	}
	if c.Calendar.Unit != 0 {
		return nil, fmt.Errorf("policy '%s' counts in calendar windows, and a calendar period %w: use a period of fixed length", c.Name, ErrNoReservations)
	}
	why := "its state cannot give cost back"
	switch c.Algorithm {
	case LeakyQueue:
		why = "giving cost back would serve later requests ahead of those already queued behind it; use token_bucket"
	case SlidingLog:
		why = "it keeps one stamp per unit, at most limit of them, and giving cost back would remove stamps from the middle of its ring; use sliding_window"

	case Concurrency:
		why = "its leases give their slots back themselves: RL.RELEASE frees one, RL.RENEW keeps it longer"
	}
	return nil, fmt.Errorf("policy '%s' is %s, which %w: %s", c.Name, c.Algorithm, ErrNoReservations, why)
}

// Reserve applies policy name to the client key at now, charging cost
// units, and when the request is admitted records a reservation of them
// that lasts ttl ns (DefaultReservationTTL when ttl is 0). A shadow
// policy's would-be denial is admitted with a reservation that charged
// nothing.
func (s *Store) Reserve(e *engine.Engine, name, key []byte, now, cost, ttl int64) (Reservation, error) {
	c := s.lookup(name)
	if c == nil {
		return Reservation{}, unknown(name)
	}
	a, err := c.adjuster()
	if err != nil {
		return Reservation{}, err
	}
	if ttl == 0 {
		ttl = DefaultReservationTTL
	}
	var buf [128]byte
	k := Key(buf[:0], c.Name, key)
	var out Reservation
	var r limit.Result
	e.Do(k, now, func(ent engine.Entry) (engine.Entry, bool) {
		next, res, id, write, rerr := engine.Reserve(ent, a, now, cost, ttl, c.Shadow)
		r, out.ID, out.Admitted, err = res, id, write, rerr
		return next, write && rerr == nil
	})
	if err != nil {
		return Reservation{}, err
	}
	s.count(c, key, now, r, r.Limited, !r.Limited || c.Shadow)
	out.Reply = c.reply(r)
	return out, nil
}

// Settle settles reservation id on policy name's client key at its actual
// cost, at now (engine.Settle): the reply is the key's state after it (a
// peek; limited when the settle left the key over its limit) and whether
// this call settled it. A shadow policy's reply is never limited.
func (s *Store) Settle(e *engine.Engine, name, key []byte, now int64, id engine.ReservationID, actual int64) (Reply, engine.SettleStatus, error) {
	c := s.lookup(name)
	if c == nil {
		return Reply{}, 0, unknown(name)
	}
	a, err := c.adjuster()
	if err != nil {
		return Reply{}, 0, err
	}
	var buf [128]byte
	k := Key(buf[:0], c.Name, key)
	var r limit.Result
	var st engine.SettleStatus
	e.Do(k, now, func(ent engine.Entry) (engine.Entry, bool) {
		next, res, status, write, serr := engine.Settle(ent, a, now, id, actual)
		r, st, err = res, status, serr
		return next, write && serr == nil
	})
	if err != nil {
		return Reply{}, 0, err
	}
	return c.reply(r), st, nil
}

// Mark implements engine.Adjuster: a TAT's give-back needs no mark.
func (gcraLimiter) Mark(engine.Entry) int64 { return 0 }

// Adjust implements engine.Adjuster: the TAT moved (gcra.Adjust), after
// the rescale Apply makes when the policy's rate changed.
func (g gcraLimiter) Adjust(ent engine.Entry, now, _, delta int64) (engine.Entry, limit.Result, error) {
	tat := ent.A
	if ent.B > 0 && ent.B != g.l.Interval && tat > now {
		tat = now + rescale(tat-now, g.l.Interval, ent.B)
	}
	tat = gcra.Adjust(tat, now, g.l, delta)
	next := engine.Entry{Kind: engine.KindGCRA, A: tat, B: g.l.Interval, Expire: tat}
	_, r, _, err := g.Apply(next, now, 0)
	return next, r, err
}
