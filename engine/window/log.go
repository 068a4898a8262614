package window

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxLogLimit bounds a sliding log's limit, and so its memory: at most
// MaxLogLimit stamps of 8 or 16 bytes per key. Larger limits belong to the
// sliding-window counter, whose memory does not grow with the limit.
const MaxLogLimit = 1_000_000

// Log is a sliding log: at most Limit cost in any window of Window
// nanoseconds, exactly. It keeps the instant and cost of every admitted
// request still inside the window, so it holds at most Limit stamps.
//
// A request at now is admitted when the costs logged after now-Window, plus
// its own, are at most Limit. A stamp at t counts while now < t+Window.
type Log struct {
	Limit  int64
	Window int64
}

// NewLog validates a sliding log of limit (at most MaxLogLimit) per window
// nanoseconds.
func NewLog(limit, window int64) (Log, error) {
	if err := checkLimit(limit, window); err != nil {
		return Log{}, err
	}
	if limit > MaxLogLimit {
		return Log{}, fmt.Errorf("%w: a sliding log keeps one stamp per request; limit %d is above %d (use the sliding-window counter)", ErrInvalid, limit, MaxLogLimit)
	}
	return Log{Limit: limit, Window: window}, nil
}

// Stamp is one admitted request.
type Stamp struct {
	At   int64
	Cost int64
}

// Ring is a sliding log's state: the stamps of admitted requests in time
// order, in a ring buffer that grows by doubling up to one slot more than
// the stamps the limit allows (the spare slot lets Record append without
// copying) and shrinks when mostly empty.
//
// While every stamp costs 1, as most requests do, the buffer holds one
// word per stamp, its instant (narrow); once one costs more, two, instant
// and cost (wide). Half the memory for the common case is half the cache
// misses for a random key. A ring changes width only when it moves to a
// new buffer: when it must (a stamp costing more than 1 for a narrow ring)
// or when it moves anyway (a wide ring whose stamps all cost 1 again).
//
// Record never writes a slot the ring it is given can see: it appends past
// that ring's last stamp or copies into a new buffer. So deciding and
// recording leave the state they came from intact, and a caller may drop a
// recorded state (an all-or-nothing check that failed elsewhere) without
// undoing anything. Only the ring given is protected, not its
// predecessors: recording on a successor may overwrite slots of stamps the
// successor dropped as expired and the predecessor still holds. So rings
// further back must not be kept, nor a ring recorded on twice in a row
// when the first is to survive a drop of both: Clone it first.
type Ring struct {
	Seen int64 // latest instant a request was recorded at
	// Oldest is the oldest stamp's instant, when the ring holds any: a
	// request finds that no stamp slid out without reading the buffer,
	// which for a random key is a cache miss. Only a request that drops
	// stamps, or is denied, reads them.
	Oldest int64
	buf    []int64 // narrow: an instant per slot; wide: instant, cost
	sum    int64   // total cost of the n stamps
	head   int32   // slot of the oldest stamp
	n      int32   // int32s keep a Ring to one cache line (64 bytes)
	wide   bool
}

// State packs all of r but Seen, Oldest and its buffer into one word: a
// caller that keeps those elsewhere (the engine keeps Seen, State and
// Oldest in an entry's A, B and C, beside the buffer) rebuilds r with
// Unpack. The stamps' number, their total cost and the oldest one's slot
// fit 21 bits each: they are at most MaxLogLimit+1 when stamps are
// recorded only as Decide admits them (their costs then total at most the
// limit), and DecodeRing checks that.
func (r *Ring) State() int64 {
	s := uint64(r.n) | uint64(r.head)<<21 | uint64(r.sum)<<42
	if r.wide {
		s |= 1 << 63
	}
	return int64(s)
}

// Unpack makes r the ring whose Seen, State and Oldest were seen, state
// and oldest, and whose buffer is buf (Words). It sets r in place: a Ring
// is 64 bytes, and SL.INCR's profile showed its copies.
func (r *Ring) Unpack(seen, state, oldest int64, buf []int64) {
	const mask = 1<<21 - 1
	s := uint64(state)
	r.Seen, r.Oldest, r.buf = seen, oldest, buf
	r.n, r.head, r.sum = int32(s&mask), int32(s>>21&mask), int64(s>>42&mask)
	r.wide = s>>63 != 0
}

// Words is r's buffer, which a ring rebuilt by Unpack needs. The caller
// must not change it.
func (r *Ring) Words() []int64 { return r.buf }

// Len is the number of stamps held.
func (r *Ring) Len() int { return int(r.n) }

// Cap is the number of stamp slots allocated.
func (r *Ring) Cap() int {
	if r.wide {
		return len(r.buf) / 2
	}
	return len(r.buf)
}

// Wide reports whether the ring keeps each stamp's cost (some stamp held
// since its buffer last moved cost more than 1).
func (r *Ring) Wide() bool { return r.wide }

// at is the i-th stamp from the oldest.
func (r *Ring) at(i int) Stamp {
	j := r.wrap(int(r.head) + i)
	if r.wide {
		return Stamp{At: r.buf[2*j], Cost: r.buf[2*j+1]}
	}
	return Stamp{At: r.buf[j], Cost: 1}
}

// set writes slot j.
func (r *Ring) set(j int, s Stamp) {
	if r.wide {
		r.buf[2*j], r.buf[2*j+1] = s.At, s.Cost
		return
	}
	r.buf[j] = s.At
}

// wrap maps i, less than twice the ring's size, to its slot: a compare
// rather than a division, which showed in SL.INCR's profile.
func (r *Ring) wrap(i int) int {
	if size := r.Cap(); i >= size {
		i -= size
	}
	return i
}

// live returns the index of the first stamp inside the window ending at
// eff, the total cost from it on, and that stamp's instant (eff when none
// is left). It reads the buffer only when the oldest stamp slid out.
func (l Log) live(r *Ring, eff int64) (first int, sum, oldest int64) {
	cutoff := eff - l.Window
	switch {
	case r.n == 0:
		return 0, 0, eff
	case r.Oldest > cutoff:
		return 0, r.sum, r.Oldest
	}
	sum = r.sum
	for first < int(r.n) {
		s := r.at(first)
		if s.At > cutoff {
			return first, sum, s.At
		}
		sum -= s.Cost
		first++
	}
	return first, sum, eff
}

// eff is the instant a decision is made at: now, or the latest recorded
// instant if the clock went back before it (so that stamps already dropped
// as expired could not have counted).
func eff(r *Ring, now int64) int64 {
	if r.n > 0 && r.Seen > now {
		return r.Seen
	}
	return now
}

// Decide applies a request of cost at now to r without changing it.
func (l Log) Decide(r *Ring, now, cost int64) (Decision, error) {
	if err := checkRequest(now, cost); err != nil {
		return Decision{}, err
	}
	t := eff(r, now)
	first, sum, _ := l.live(r, t)
	return l.decide(r, now, cost, t, first, sum), nil
}

// Step is a request decided by Plan: its Decision, and what Take needs to
// record it without walking the stamps again.
type Step struct {
	Decision
	t, sum, oldest int64
	first, size    int
	wide           bool
}

// Words is the number of words of the new buffer Take moves the stamps
// to (as Regrow), or 0 if it appends in the ring's own buffer.
func (s *Step) Words() int {
	if s.wide {
		return 2 * s.size
	}
	return s.size
}

// Plan is Decide and Regrow at once, into s: one walk of the stamps where
// SL.INCR made three (Decide, Regrow, Add).
func (l Log) Plan(r *Ring, now, cost int64, s *Step) error {
	if err := checkRequest(now, cost); err != nil {
		return err
	}
	s.t = eff(r, now)
	s.first, s.sum, s.oldest = l.live(r, s.t)
	s.Decision = l.decide(r, now, cost, s.t, s.first, s.sum)
	s.size, s.wide = 0, r.wide
	if !s.Limited && cost > 0 {
		s.size, s.wide = l.regrow(r, int(r.n)-s.first, s.sum, cost)
	}
	return nil
}

// Take records the request Plan(r, now, cost, s) admitted, as Add does:
// r must be as Plan saw it (or a copy, its buffer laid out alike), buf as
// Add's.
func (l Log) Take(r *Ring, s *Step, cost int64, buf []int64) {
	l.take(r, s.t, s.first, s.sum, s.oldest, s.size, s.wide, cost, buf)
}

// decide is Decide for the stamps from first on, of total cost sum, live
// at t.
func (l Log) decide(r *Ring, now, cost, t int64, first int, sum int64) Decision {
	d := Decision{RetryAfter: -1}
	if first < int(r.n) {
		// The newest stamp is at Seen: reading it would be one more
		// cache miss on a random key.
		d.ResetAfter = r.Seen + l.Window - now
	}
	if cost <= l.Limit-sum {
		d.Remaining = l.Limit - sum - cost
		if cost > 0 {
			d.ResetAfter = t + l.Window - now
		}
		return d
	}
	d.Limited = true
	d.Remaining = max(l.Limit-sum, 0)
	if cost <= l.Limit {
		// The request fits once enough of the oldest stamps slide out.
		for i := first; i < int(r.n); i++ {
			s := r.at(i)
			sum -= s.Cost
			if sum <= l.Limit-cost {
				d.RetryAfter = s.At + l.Window - now
				break
			}
		}
	}
	return d
}

// Expire is the instant r equals an empty log: its newest stamp has slid
// out. 0 for an empty ring.
func (l Log) Expire(r *Ring) int64 {
	if r.n == 0 {
		return 0
	}
	return r.Seen + l.Window
}

// Record returns r with a stamp of cost at now appended (at r.Seen if the
// clock went back) and the stamps that slid out dropped. r is unchanged.
func (l Log) Record(r *Ring, now, cost int64) Ring {
	next := *r
	l.Add(&next, now, cost, nil)
	return next
}

// Regrow is the number of words (8 bytes each) of the new buffer that
// Record(r, now, cost) moves the stamps to, or 0 if it appends in r's own
// buffer. A caller that wants the new buffer somewhere of its choosing
// passes it to Add.
func (l Log) Regrow(r *Ring, now, cost int64) int {
	first, sum, _ := l.live(r, eff(r, now))
	size, wide := l.regrow(r, int(r.n)-first, sum, cost)
	if wide {
		return 2 * size
	}
	return size
}

// regrow is the number of slots of the buffer that Record moves the
// stamps to when live of r's are left, of total cost sum, and a stamp of
// cost is added (0: no move); and whether that buffer is wide.
func (l Log) regrow(r *Ring, live int, sum, cost int64) (size int, wide bool) {
	switch size = r.Cap(); {
	case int(r.n) == size:
		// Every slot is visible to r, even the ones that slid out for
		// next: copy rather than overwrite.
		if live >= size/2 {
			size = min(max(2*size, 4), max(int(l.Limit)+1, live+1))
		}
	case size > 16 && 4*(live+1) < size:
		size /= 2
	case cost != 1 && !r.wide:
		// A narrow ring cannot hold the cost.
	default:
		return 0, r.wide
	}
	// Costs are at least 1: they total the stamps' number only if each is 1.
	return size, sum+cost != int64(live)+1
}

// Add is Record in place: it makes r the ring Record would return, and
// leaves the slots r saw before as they were, so that a copy of r taken
// before still reads the same. When Record would move the stamps to a new
// buffer, Add moves them to buf if it has at least Regrow(r, now, cost)
// words (else to a new buffer of its own); buf must share no memory with
// r, and r keeps it.
func (l Log) Add(r *Ring, now, cost int64, buf []int64) {
	t := eff(r, now)
	first, sum, oldest := l.live(r, t)
	size, wide := l.regrow(r, int(r.n)-first, sum, cost)
	l.take(r, t, first, sum, oldest, size, wide, cost, buf)
}

// take is Add once the stamps are walked: first of them slid out at t,
// leaving sum from the stamp at oldest on (at t if none), and size and
// wide are regrow's.
func (l Log) take(r *Ring, t int64, first int, sum, oldest int64, size int, wide bool, cost int64, buf []int64) {
	if r.n > 0 {
		r.head = int32(r.wrap(int(r.head) + first))
	}
	r.Seen, r.Oldest, r.n, r.sum = t, oldest, r.n-int32(first), sum
	if size > 0 {
		words := size
		if wide {
			words *= 2
		}
		if len(buf) < words {
			buf = make([]int64, words)
		}
		r.moveTo(buf[:words], wide)
	}
	r.set(r.wrap(int(r.head+r.n)), Stamp{At: t, Cost: cost})
	r.n++
	r.sum += cost
}

// Clone returns a copy of r that shares no memory with it: a ring that may
// be kept, or recorded on while r stays intact whatever follows.
func (r *Ring) Clone() Ring {
	c := *r
	if len(c.buf) > 0 {
		c.moveTo(make([]int64, len(c.buf)), c.wide)
	}
	return c
}

// moveTo copies the stamps to the start of buf, which becomes r's buffer,
// of the width given.
func (r *Ring) moveTo(buf []int64, wide bool) {
	next := Ring{Seen: r.Seen, Oldest: r.Oldest, buf: buf, sum: r.sum, n: r.n, wide: wide}
	for i := range int(r.n) {
		next.set(i, r.at(i))
	}
	*r = next
}

// AppendBinary appends the ring's serialised form: Seen as a varint, the
// number of stamps, then each stamp as its distance back from Seen and its
// cost, both uvarints.
func (r *Ring) AppendBinary(b []byte) []byte {
	b = binary.AppendVarint(b, r.Seen)
	b = binary.AppendUvarint(b, uint64(r.n))
	for i := range int(r.n) {
		s := r.at(i)
		b = binary.AppendUvarint(b, uint64(r.Seen-s.At))
		b = binary.AppendUvarint(b, uint64(s.Cost))
	}
	return b
}

var errCorruptRing = errors.New("window: corrupt sliding log")

// DecodeRing reads a ring written by AppendBinary, checking that its stamps
// are in time order, the newest at Seen (as Record leaves it), of positive
// cost, and of total cost at most MaxLogLimit (as Record leaves them). It returns
// the ring by value: the caller keeps it where it likes (the engine, in a
// box of its own) without a second allocation.
func DecodeRing(b []byte) (Ring, error) {
	seen, k := binary.Varint(b)
	if k <= 0 {
		return Ring{}, errCorruptRing
	}
	b = b[k:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b))/2 || n > MaxLogLimit {
		return Ring{}, errCorruptRing
	}
	b = b[k:]
	// Read twice: the first pass checks the stamps and finds the ring's
	// width, the second fills its buffer.
	prev, wide, rest, sum := int64(-1<<63), false, b, uint64(0)
	for range n {
		back, k1 := binary.Uvarint(b)
		if k1 <= 0 {
			return Ring{}, errCorruptRing
		}
		cost, k2 := binary.Uvarint(b[k1:])
		if k2 <= 0 || back > 1<<62 || cost < 1 || cost > MaxLogLimit {
			return Ring{}, errCorruptRing
		}
		b = b[k1+k2:]
		at := seen - int64(back)
		if at < prev {
			return Ring{}, errCorruptRing
		}
		prev = at
		wide = wide || cost != 1
		sum += cost
	}
	if len(b) != 0 || n > 0 && prev != seen || sum > MaxLogLimit {
		return Ring{}, errCorruptRing
	}
	r := Ring{Seen: seen, n: int32(n), wide: wide}
	if wide {
		r.buf = make([]int64, 2*max(n, 4))
	} else {
		r.buf = make([]int64, max(n, 4))
	}
	for i := range int(n) {
		back, k1 := binary.Uvarint(rest)
		cost, k2 := binary.Uvarint(rest[k1:])
		rest = rest[k1+k2:]
		r.set(i, Stamp{At: seen - int64(back), Cost: int64(cost)})
		r.sum += int64(cost)
	}
	if n > 0 {
		r.Oldest = r.at(0).At
	}
	return r, nil
}
