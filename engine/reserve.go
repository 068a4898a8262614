package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unsafe"

	"github.com/limitdb/limitdb/engine/limit"
)

// Reservations: RL.RESERVE charges an estimated cost now and hands out a
// reservation id; RL.SETTLE names the id with the real cost, and the
// difference is charged or given back (Adjuster). A key with reservations
// open is a KindReserve entry that wraps the algorithm's own entry with
// the reservations (Reserved): one key, one entry, so the charge, the
// record of it and the settle are one atomic update under the key's shard
// lock, and everything that carries entries (snapshots, the change stream,
// the append-only file, replication, DUMP and MIGRATE) carries the
// reservations with the state they were charged to.
//
// A reservation's deadline is its reserve instant plus its ttl, rounded up
// to a millisecond. At and after it the reservation is settled at its
// estimate: its cost stays charged, as it already is, and its record is
// dropped on the key's next write. A settle after the deadline answers
// ErrReservationExpired and changes nothing.
//
// Ids are "<deadline-ms>-<seq>": seq counts the key's reservations from 1,
// and the key's Reserved lives at least until the latest deadline it has
// issued (Reserved.Last), so that while any id could still be settled the
// count goes on; once the key is gone every id it issued has expired. A
// settle of an id that was issued, is not expired and is not open was
// settled before: SettleAlready, nothing changes. DEL of the key (or a
// change of its policy's algorithm) forgets its reservations.

// Reserved is a KindReserve entry's Ext state. It is never changed once
// stored: every write builds a new one, so an entry read from the engine
// and kept (RL.HITALL's all-or-nothing) stays valid.
type Reserved struct {
	// Inner is the algorithm's entry the reservations were charged to;
	// KindNone when fresh. It never has a Kind of KindReserve.
	Inner Entry
	// Seq is the last reservation number issued on the key.
	Seq int64
	// Last is the latest deadline issued, in Unix ns: the entry lives at
	// least until then.
	Last int64
	// Open are the reservations not settled yet, by ascending Seq.
	Open []Reservation
}

// Reservation is one open reservation.
type Reservation struct {
	Seq      int64
	Deadline int64 // Unix ns, a whole millisecond: settled at its estimate from then on
	Cost     int64 // units charged when reserved (0 for a shadow policy's would-be denial)
	Mark     int64 // where they were charged (Adjuster.Mark)
}

// reservationBytes is the memory of one open reservation in Reserved.Open.
const reservationBytes = int64(unsafe.Sizeof(Reservation{}))

// extBytes implements sizedExt: the Reserved, its reservations and the
// wrapped entry's own Ext state.
func (r *Reserved) extBytes() int64 {
	n := int64(unsafe.Sizeof(*r)) + reservationBytes*int64(cap(r.Open))
	if s, ok := r.Inner.Ext.(sizedExt); ok {
		n += s.extBytes()
	}
	return n
}

// ReservationID names a reservation on its key.
type ReservationID struct {
	Deadline int64 // Unix ms
	Seq      int64
}

// String is the id as RL.RESERVE answers it: "<deadline-ms>-<seq>".
func (id ReservationID) String() string {
	return string(id.Append(nil))
}

// Append appends the id's text to b.
func (id ReservationID) Append(b []byte) []byte {
	b = strconv.AppendInt(b, id.Deadline, 10)
	b = append(b, '-')
	return strconv.AppendInt(b, id.Seq, 10)
}

// ParseReservationID reads an id written by String.
func ParseReservationID(b []byte) (ReservationID, bool) {
	i := slices.Index(b, '-')
	if i <= 0 {
		return ReservationID{}, false
	}
	d, err1 := strconv.ParseInt(string(b[:i]), 10, 64)
	s, err2 := strconv.ParseInt(string(b[i+1:]), 10, 64)
	if err1 != nil || err2 != nil || d < 0 || s < 1 || d > (1<<63-1)/1_000_000 {
		return ReservationID{}, false
	}
	return ReservationID{Deadline: d, Seq: s}, true
}

// Errors of Settle.
var (
	ErrReservationExpired = errors.New("expired: its ttl passed and it settled at its estimate")
	ErrReservationUnknown = errors.New("was never issued on this key")
	ErrReservationsFull   = fmt.Errorf("too many open reservations on the key (at most %d)", MaxOpenReservations)
)

// MaxOpenReservations bounds a key's open reservations: a key's state is
// written whole to the change stream on every change.
const MaxOpenReservations = 65536

// MaxReservationTTL bounds a reservation's ttl (a day).
const MaxReservationTTL = int64(24 * 3600 * 1e9)

// Adjuster is a Limiter whose charges can be corrected afterwards: the
// algorithms that take reservations.
type Adjuster interface {
	Limiter
	// Mark is where the charge that produced ent (Apply's entry after an
	// admitted request) went, as Adjust needs it to give cost back: a
	// window's start; 0 where any charge is as good as any other.
	Mark(ent Entry) int64
	// Adjust corrects a charge marked mark, at now: delta > 0 charges
	// delta more units with no limit check, delta < 0 gives -delta back
	// (per algorithm: docs/algorithms.md). It returns the entry to store
	// and the peek of it (cost 0), Limited when it is over its limit. ent
	// is never modified.
	Adjust(ent Entry, now, mark, delta int64) (Entry, limit.Result, error)
}

// Reservations returns the algorithm's entry of ent (which has Kind kind,
// or is KindReserve around it) and its reservations, live at now: nil
// when there are none. State of another algorithm counts as absent, and
// the reservations charged to it are dropped with it; the count of ids
// goes on.
func Reservations(ent Entry, kind Kind, now int64) (inner Entry, r *Reserved) {
	if ent.Kind != KindReserve {
		if ent.Kind != kind {
			return Entry{}, nil
		}
		return ent, nil
	}
	r = ent.Ext.(*Reserved)
	switch inner = r.Inner; {
	case inner.Kind != KindNone && inner.Kind != kind:
		return Entry{}, &Reserved{Seq: r.Seq, Last: r.Last}
	case !inner.Live(now):
		inner = Entry{}
	}
	return inner, r
}

// Rewrap is the entry to store after a limiter applied to the inner entry
// of orig (as Reservations returned it) returned next: orig's
// reservations around next, or next alone when there are none left.
func Rewrap(orig, next Entry, now int64) Entry {
	if orig.Kind != KindReserve {
		return next
	}
	_, r := Reservations(orig, next.Kind, now)
	return wrap(next, r.Seq, r.Last, live(r.Open, now), now)
}

// live is open without the reservations whose deadline has passed at now;
// open itself when none has.
func live(open []Reservation, now int64) []Reservation {
	for i := range open {
		if open[i].Deadline <= now {
			out := make([]Reservation, 0, len(open)-1)
			for _, x := range open {
				if x.Deadline > now {
					out = append(out, x)
				}
			}
			return out
		}
	}
	return open
}

// wrap is the entry that stores inner with the reservations: inner alone
// once none is open and every id issued has expired.
func wrap(inner Entry, seq, last int64, open []Reservation, now int64) Entry {
	if !inner.Live(now) {
		inner = Entry{}
	}
	if len(open) == 0 && last <= now {
		return inner
	}
	if x, ok := inner.Ext.(clonedExt); ok {
		// A staged or boxed state is written in place by later Applies:
		// the Reserved keeps a copy of its own.
		inner.Ext = x.cloneExt()
	}
	return Entry{Kind: KindReserve, Expire: max(inner.Expire, last), Ext: &Reserved{Inner: inner, Seq: seq, Last: last, Open: open}}
}

// Reserve applies a request of cost at now to ent, the key's entry, with
// a's algorithm, and when it is admitted records a reservation of it
// lasting ttl ns. A shadow limit's would-be denial is recorded with cost 0
// (nothing charged). It returns the entry to store (write false: store
// nothing) and the decision; id is valid when the request was admitted or
// shadow.
func Reserve(ent Entry, a Adjuster, now, cost, ttl int64, shadow bool) (next Entry, r limit.Result, id ReservationID, write bool, err error) {
	if ent.Kind != KindNone && ent.Kind != KindReserve && ent.Kind != a.Kind() && !ent.Kind.Limiter() {
		return ent, r, id, false, ErrWrongType
	}
	inner, res := Reservations(ent, a.Kind(), now)
	if res == nil {
		res = &Reserved{}
	}
	n, r, w, err := a.Apply(inner, now, cost)
	if err != nil {
		return ent, r, id, false, err
	}
	charged := cost
	switch {
	case r.Limited && !shadow:
		return ent, r, id, false, nil
	case r.Limited:
		n, charged = inner, 0
	case !w:
		n = inner
	}
	open := live(res.Open, now)
	if len(open) >= MaxOpenReservations {
		return ent, r, id, false, ErrReservationsFull
	}
	deadline := (now + ttl + 999_999) / 1_000_000
	seq := res.Seq + 1
	// A new slice of exactly the length: the stored one is never changed
	// (Reserved), and its capacity is the key's memory.
	grown := make([]Reservation, len(open)+1)
	copy(grown, open)
	grown[len(open)] = Reservation{Seq: seq, Deadline: deadline * 1_000_000, Cost: charged, Mark: a.Mark(n)}
	open = grown
	id = ReservationID{Deadline: deadline, Seq: seq}
	return wrap(n, seq, max(res.Last, deadline*1_000_000), open, now), r, id, true, nil
}

// SettleStatus is what a settle did.
type SettleStatus int

// The outcomes of a settle that is not an error.
const (
	Settled        SettleStatus = 1 // settled now: the difference charged or given back
	SettledAlready SettleStatus = 0 // settled before: nothing changed
)

// Settle settles reservation id of ent at its actual cost, at now: the
// difference from its estimate is charged or given back (a.Adjust), and
// its record dropped. It returns the entry to store, the peek of the key
// after the settle (Limited: over its limit), and what it did. A settle
// of a reservation already settled changes nothing (SettledAlready); one
// whose deadline has passed is ErrReservationExpired; one never issued on
// the key is ErrReservationUnknown.
func Settle(ent Entry, a Adjuster, now int64, id ReservationID, actual int64) (next Entry, r limit.Result, st SettleStatus, write bool, err error) {
	if ent.Kind != KindNone && ent.Kind != KindReserve && ent.Kind != a.Kind() && !ent.Kind.Limiter() {
		return ent, r, st, false, ErrWrongType
	}
	if now >= id.Deadline*1_000_000 {
		return ent, r, st, false, ErrReservationExpired
	}
	inner, res := Reservations(ent, a.Kind(), now)
	if res == nil || id.Seq > res.Seq {
		return ent, r, st, false, ErrReservationUnknown
	}
	open := live(res.Open, now)
	i, found := slices.BinarySearchFunc(open, id.Seq, func(x Reservation, s int64) int { return cmpInt(x.Seq, s) })
	if !found || open[i].Deadline != id.Deadline*1_000_000 {
		_, r, _, err = a.Apply(inner, now, 0)
		return ent, r, SettledAlready, false, err
	}
	rv := open[i]
	n, r, err := a.Adjust(inner, now, rv.Mark, actual-rv.Cost)
	if err != nil {
		return ent, r, st, false, err
	}
	rest := make([]Reservation, 0, len(open)-1)
	rest = append(append(rest, open[:i]...), open[i+1:]...)
	return wrap(n, res.Seq, res.Last, rest, now), r, Settled, true, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// reservedExt is the codec of a KindReserve entry: the wrapped entry's
// own form (AppendBinary), then Seq, Last and the number of open
// reservations as varints, then each reservation's Seq (as the step from
// the one before), Deadline, Cost and Mark.
// It is built by a function, not held in a variable: decoding it decodes
// an entry, whose codecs include it.
func reservedExt() ExtCodec { return ExtCodec{Append: appendReserved, Decode: decodeReserved} }

func appendReserved(b []byte, e *Entry) ([]byte, error) {
	r, ok := e.Ext.(*Reserved)
	if !ok {
		return nil, fmt.Errorf("reservations state is %T", e.Ext)
	}
	b, err := r.Inner.AppendBinaryOrNone(b)
	if err != nil {
		return nil, err
	}
	b = binary.AppendVarint(b, r.Seq)
	b = binary.AppendVarint(b, r.Last)
	b = binary.AppendUvarint(b, uint64(len(r.Open)))
	prev := int64(0)
	for _, x := range r.Open {
		b = binary.AppendVarint(b, x.Seq-prev)
		b = binary.AppendVarint(b, x.Deadline)
		b = binary.AppendVarint(b, x.Cost)
		b = binary.AppendVarint(b, x.Mark)
		prev = x.Seq
	}
	return b, nil
}

func decodeReserved(b []byte, e *Entry) error {
	r := &Reserved{}
	if len(b) > 0 && b[0] == 0 {
		b = b[1:]
	} else {
		inner, n, err := DecodeEntry(b)
		if err != nil {
			return err
		}
		if !inner.Kind.Limiter() || inner.Kind == KindReserve {
			return fmt.Errorf("reservations on a %v", inner.Kind)
		}
		r.Inner, b = inner, b[n:]
	}
	var nums [3]int64
	for i := range 2 {
		v, n := binary.Varint(b)
		if n <= 0 {
			return errCorruptReserved
		}
		nums[i], b = v, b[n:]
	}
	r.Seq, r.Last = nums[0], nums[1]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > MaxOpenReservations || count > uint64(len(b)) {
		return errCorruptReserved
	}
	b = b[n:]
	r.Open = make([]Reservation, count)
	prev := int64(0)
	for i := range r.Open {
		var f [4]int64
		for j := range f {
			v, n := binary.Varint(b)
			if n <= 0 {
				return errCorruptReserved
			}
			f[j], b = v, b[n:]
		}
		if f[0] <= 0 || prev+f[0] > r.Seq || f[2] < 0 {
			return errCorruptReserved
		}
		prev += f[0]
		r.Open[i] = Reservation{Seq: prev, Deadline: f[1], Cost: f[2], Mark: f[3]}
	}
	if len(b) != 0 {
		return errCorruptReserved
	}
	e.Ext = r
	return nil
}

var errCorruptReserved = errors.New("corrupt reservations")

// AppendBinaryOrNone is AppendBinary, or a single 0 byte for an absent
// entry (KindNone), which AppendBinary's readers refuse.
func (e Entry) AppendBinaryOrNone(b []byte) ([]byte, error) {
	if e.Kind == KindNone {
		return append(b, 0), nil
	}
	return e.AppendBinary(b)
}
