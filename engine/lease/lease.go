// Package lease is the concurrency limiter: at most a limit of permits
// held at once, each held by a lease that expires by itself.
//
// A Set is one key's leases. A lease has an id, a weight (the permits it
// holds, 1 from CL.ACQUIRE) and an absolute expiry in Unix nanoseconds. A
// lease counts while now < its expiry; from its expiry on it is gone, as if
// released, so a worker that crashed while holding one frees its permits
// when the lease's ttl passes. Every method takes now and first drops the
// leases that have expired (Reclaim): there is no background work.
//
// The contract, in the spirit of golang.org/x/time/rate:
//
//   - Acquire admits a new lease of weight w when held+w <= limit, held
//     being the weight of the live leases; a weight above the limit never
//     fits. A denial changes nothing.
//   - An acquire naming an id that is already live renews that lease (its
//     expiry becomes now+ttl, its weight stays) and is admitted whatever
//     the count: the holder keeps the permits it has, as re-acquiring a
//     redis-semaphore with the same identifier refreshes it.
//   - Release drops a live lease and reports whether it did; releasing an
//     unknown or expired id releases nothing and is not an error.
//   - Renew sets a live lease's expiry to now+ttl (earlier or later); an
//     unknown or expired id is ErrNoLease.
//   - RetryAfter is the time until enough of the earliest-expiring leases
//     have expired for a weight w to fit; ResetAfter the time until the
//     last lease expires (Latest), when the key is as a new one.
//   - Time going backwards frees nothing: expiries are absolute, so an
//     earlier now only makes every lease look longer-lived.
//
// Durations are integer nanoseconds; now+ttl must not pass math.MaxInt64
// (the caller bounds ttl). Leases are kept in a binary min-heap on expiry,
// so reclaiming the expired ones and computing retry_after read the
// earliest first; past indexAt leases an id → position map makes release
// and renew O(log n) instead of a scan.
//
// lease imports only the standard library.
package lease

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"sort"
	"strconv"
	"unsafe"
)

// ErrNoLease is Renew of an id that is not live: never acquired, released,
// or expired.
var ErrNoLease = errors.New("lease: no live lease with this id")

// Lease is one holder's claim on Weight permits until Expire (Unix ns).
type Lease struct {
	Expire int64
	Weight int64
	ID     string
}

// Set is one key's live leases. The zero value is an empty set.
type Set struct {
	heap    []Lease        // a min-heap on Expire
	index   map[string]int // id → position in heap, once len(heap) > indexAt
	held    int64          // the sum of the leases' weights
	latest  int64          // the latest expiry among the leases
	latestN int            // how many leases expire at latest
	idBytes int64          // the bytes of the leases' ids
}

// MaxTTL is the longest lease: a hundred years, so that now+ttl stays far
// inside the int64 nanosecond range.
const MaxTTL = 100 * 365 * 24 * 3600 * int64(1e9)

// indexAt is the most leases a set finds an id among by scanning the heap.
const indexAt = 32

// Len is the number of leases (expired ones included until a method
// reclaims them).
func (s *Set) Len() int { return len(s.heap) }

// Held is the weight of the leases.
func (s *Set) Held() int64 { return s.held }

// Latest is the expiry of the last lease to expire, 0 when there is none.
func (s *Set) Latest() int64 { return s.latest }

// Earliest is the expiry of the first lease to expire, 0 when there is none.
func (s *Set) Earliest() int64 {
	if len(s.heap) == 0 {
		return 0
	}
	return s.heap[0].Expire
}

// Each calls fn for every lease, in no particular order.
func (s *Set) Each(fn func(l Lease)) {
	for _, l := range s.heap {
		fn(l)
	}
}

// Reclaim drops the leases expired at now (Expire <= now) and reports how
// many it dropped.
func (s *Set) Reclaim(now int64) int {
	n := 0
	for len(s.heap) > 0 && s.heap[0].Expire <= now {
		s.removeAt(0)
		n++
	}
	return n
}

// Decision is what Acquire answers, in nanoseconds.
type Decision struct {
	Limited    bool
	Remaining  int64 // permits left after the request, 0 when over
	RetryAfter int64 // -1 when admitted or when the weight can never fit
	ResetAfter int64 // until the last lease expires; 0 for an empty set
	Renewed    bool  // the id was live: its lease was renewed, not added
}

// Acquire decides a lease of weight (>= 1) for ttl (0 < ttl <= MaxTTL)
// nanoseconds at now under limit (>= 1), and with write, when admitted,
// adds it under id (non-empty) or renews the live lease of that id. Without
// write (a peek with weight 0, or a dry run) it decides and adds nothing;
// either way it first reclaims the expired leases, which changes the set
// when there were some (Reclaim).
func (s *Set) Acquire(now, limit, weight, ttl int64, id string, write bool) Decision {
	s.Reclaim(now)
	i := -1
	if id != "" {
		i = s.find(id)
	}
	if i >= 0 {
		d := Decision{Remaining: max(limit-s.held, 0), RetryAfter: -1, Renewed: true}
		if write {
			s.setExpire(i, now+ttl)
		}
		d.ResetAfter = s.latest - now
		return d
	}
	d := s.Peek(now, limit, weight)
	if d.Limited || !write || weight == 0 {
		return d
	}
	s.Add(Lease{Expire: now + ttl, Weight: weight, ID: id})
	d.Remaining = max(limit-s.held, 0)
	d.ResetAfter = s.latest - now
	return d
}

// Peek is Acquire's decision for weight at now, with the set's expired
// leases already reclaimed; it changes nothing. A weight of 0 answers
// limited only when the set holds more than limit (the limit was lowered).
func (s *Set) Peek(now, limit, weight int64) Decision {
	d := Decision{RetryAfter: -1}
	if len(s.heap) > 0 {
		d.ResetAfter = s.latest - now
	}
	free := limit - s.held
	switch {
	case weight == 0:
		d.Limited = free < 0
		d.Remaining = max(free, 0)
		return d
	case weight <= free:
		d.Remaining = free - weight
		return d
	}
	d.Limited = true
	d.Remaining = max(free, 0)
	if weight > limit {
		return d // never fits
	}
	d.RetryAfter = s.freedAt(weight-free) - now
	return d
}

// freedAt is the instant the earliest-expiring leases have freed need
// permits (need <= held).
func (s *Set) freedAt(need int64) int64 {
	if need <= s.heap[0].Weight {
		return s.heap[0].Expire // the common case: one lease is enough
	}
	order := make([]Lease, len(s.heap))
	copy(order, s.heap)
	sort.Slice(order, func(a, b int) bool { return order[a].Expire < order[b].Expire })
	for _, l := range order {
		need -= l.Weight
		if need <= 0 {
			return l.Expire
		}
	}
	return s.latest
}

// Release drops the live lease id at now and reports whether there was one.
func (s *Set) Release(now int64, id string) bool {
	s.Reclaim(now)
	i := s.find(id)
	if i < 0 {
		return false
	}
	s.removeAt(i)
	return true
}

// Renew sets the live lease id's expiry to now+ttl; ErrNoLease when id is
// not live at now.
func (s *Set) Renew(now int64, id string, ttl int64) error {
	s.Reclaim(now)
	i := s.find(id)
	if i < 0 {
		return ErrNoLease
	}
	s.setExpire(i, now+ttl)
	return nil
}

// Add puts l in the set as it is, for a decoder rebuilding a set (and
// Acquire): no limit is checked, and l's id must not be in the set.
func (s *Set) Add(l Lease) {
	s.heap = append(s.heap, l)
	s.held += l.Weight
	s.idBytes += int64(len(l.ID))
	s.noteExpire(l.Expire)
	i := len(s.heap) - 1
	if s.index != nil {
		s.index[l.ID] = i
	} else if len(s.heap) > indexAt {
		s.index = make(map[string]int, len(s.heap))
		for j, x := range s.heap {
			s.index[x.ID] = j
		}
	}
	s.up(i)
}

// Clone is a deep copy: changing either set leaves the other as it was.
func (s *Set) Clone() Set {
	c := *s
	c.heap = append([]Lease(nil), s.heap...)
	if s.index != nil {
		c.index = make(map[string]int, len(s.index))
		for k, v := range s.index {
			c.index[k] = v
		}
	}
	return c
}

// Bytes is the memory the set holds on the heap beyond its own struct: the
// heap's array (at its capacity), the ids' bytes, and the index's entries.
func (s *Set) Bytes() int64 {
	n := int64(cap(s.heap))*int64(unsafe.Sizeof(Lease{})) + s.idBytes
	if s.index != nil {
		// A map entry: the key's header, the value, and the table's share
		// of a slot (control byte, load factor), an estimate.
		n += int64(len(s.index)) * (16 + 8 + 16)
	}
	return n
}

// AppendBinary appends the set's serialised form: the lease count, then
// each lease's expiry (varint, absolute Unix ns), weight (uvarint) and id
// behind its uvarint length.
func (s *Set) AppendBinary(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s.heap)))
	for _, l := range s.heap {
		b = binary.AppendVarint(b, l.Expire)
		b = binary.AppendUvarint(b, uint64(l.Weight))
		b = binary.AppendUvarint(b, uint64(len(l.ID)))
		b = append(b, l.ID...)
	}
	return b
}

var errCorrupt = errors.New("lease: corrupt set")

// Decode reads what AppendBinary wrote. Weights below 1, empty or repeated
// ids are corrupt.
func Decode(b []byte) (Set, error) {
	var s Set
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return s, errCorrupt
	}
	b = b[k:]
	s.heap = make([]Lease, 0, n)
	seen := make(map[string]struct{}, n)
	for i := uint64(0); i < n; i++ {
		exp, k := binary.Varint(b)
		if k <= 0 {
			return s, errCorrupt
		}
		b = b[k:]
		w, k := binary.Uvarint(b)
		if k <= 0 || w < 1 || w > 1<<62 {
			return s, errCorrupt
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l == 0 || l > uint64(len(b)-k) {
			return s, errCorrupt
		}
		id := string(b[k : k+int(l)])
		b = b[k+int(l):]
		if s.held > 1<<62-int64(w) {
			return s, errCorrupt
		}
		if _, dup := seen[id]; dup {
			return s, errCorrupt
		}
		seen[id] = struct{}{}
		s.Add(Lease{Expire: exp, Weight: int64(w), ID: id})
	}
	if len(b) != 0 {
		return s, errCorrupt
	}
	return s, nil
}

// NewID is a fresh lease id: 128 random bits from the runtime's
// cryptographically seeded generator, as 32 hex digits. Ids so made are
// unique across restarts and failovers (two of them collide with
// probability 2^-128 per pair), with no counter to persist or replicate.
func NewID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// UnusedID is an id no lease of the set has, derived from now and the set
// alone: for a lease nobody is told the id of (nobody can release it), so
// that equal sets given equal requests stay equal. It is "~" and now's
// digits, then a counter where that is taken.
func (s *Set) UnusedID(now int64) string {
	base := "~" + strconv.FormatInt(now, 36)
	id := base
	for n := 1; s.find(id) >= 0; n++ {
		id = base + "." + strconv.Itoa(n)
	}
	return id
}

// find is id's position in the heap, -1 when it is not there.
func (s *Set) find(id string) int {
	if s.index != nil {
		if i, ok := s.index[id]; ok {
			return i
		}
		return -1
	}
	for i := range s.heap {
		if s.heap[i].ID == id {
			return i
		}
	}
	return -1
}

// removeAt drops the lease at position i.
func (s *Set) removeAt(i int) {
	l := s.heap[i]
	last := len(s.heap) - 1
	if i != last {
		s.swap(i, last)
	}
	s.heap[last] = Lease{}
	s.heap = s.heap[:last]
	if s.index != nil {
		delete(s.index, l.ID)
	}
	if i != last {
		s.fix(i)
	}
	s.held -= l.Weight
	s.idBytes -= int64(len(l.ID))
	s.forgetExpire(l.Expire)
	if len(s.heap) == 0 {
		*s = Set{heap: s.heap[:0]}
	}
}

// setExpire moves the lease at position i to expire at exp.
func (s *Set) setExpire(i int, exp int64) {
	old := s.heap[i].Expire
	s.heap[i].Expire = exp
	s.noteExpire(exp)
	s.forgetExpire(old)
	s.fix(i)
}

// noteExpire counts a lease expiring at exp towards latest.
func (s *Set) noteExpire(exp int64) {
	switch {
	case s.latestN == 0 || exp > s.latest:
		s.latest, s.latestN = exp, 1
	case exp == s.latest:
		s.latestN++
	}
}

// forgetExpire uncounts a lease that expired at exp, recomputing latest
// when the last lease at the latest expiry goes: amortised O(1) when many
// leases share it (equal ttls acquired at one instant).
func (s *Set) forgetExpire(exp int64) {
	if exp != s.latest {
		return
	}
	if s.latestN--; s.latestN > 0 {
		return
	}
	s.latest = 0
	for _, l := range s.heap {
		s.noteExpire(l.Expire)
	}
}

func (s *Set) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	if s.index != nil {
		s.index[h[i].ID] = i
		s.index[h[j].ID] = j
	}
}

func (s *Set) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if s.heap[p].Expire <= s.heap[i].Expire {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Set) down(i int) bool {
	start, n := i, len(s.heap)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && s.heap[r].Expire < s.heap[c].Expire {
			c = r
		}
		if s.heap[i].Expire <= s.heap[c].Expire {
			break
		}
		s.swap(i, c)
		i = c
	}
	return i > start
}

func (s *Set) fix(i int) {
	if !s.down(i) {
		s.up(i)
	}
}
