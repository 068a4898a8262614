package analytics

// Sketch is a space-saving summary (Metwally, Agrawal and El Abbadi, 2005)
// of a stream of keys: it monitors at most Slots keys, each with a count
// and an error. A key already monitored adds its weight to its count; a
// new key takes a free slot, or else the slot of the key with the smallest
// count m, inheriting m as both its count's base and its error.
//
// What it guarantees, for a stream of total weight N:
//   - a monitored key's count never underestimates: true <= count, and
//     count - error <= true, with error <= N/Slots;
//   - a key whose true weight is more than N/Slots is monitored;
//   - a key not monitored has a true weight of at most the smallest count
//     (Min), and Min <= N/Slots.
//
// Its size is fixed (unsafe.Sizeof(Sketch{}), under 1 KiB) whatever the
// number of distinct keys, and Add never allocates. Keys are told apart by
// a 64-bit hash of the whole key; the first KeyBytes bytes are kept to be
// shown (a longer key is shown truncated). Two distinct keys collide with
// probability 2^-64 per pair, and then count as one.
//
// The zero value is an empty sketch. It is not safe for concurrent use.
type Sketch struct {
	n     int
	total uint64
	hash  [Slots]uint64
	count [Slots]uint64
	err   [Slots]uint64
	klen  [Slots]uint16 // the key's whole length, capped at 65535
	key   [Slots][KeyBytes]byte
}

const (
	// Slots is how many keys a Sketch monitors.
	Slots = 8
	// KeyBytes is how many bytes of a key a Sketch keeps to show it.
	KeyBytes = 64
)

// Add adds weight w to key, whose hash is h (the same hash every time for
// the same key).
func (s *Sketch) Add(h uint64, key []byte, w uint64) {
	s.total += w
	// One pass finds the key or, failing that, the slot of the smallest
	// count: with 8 slots a scan of contiguous hashes beats an index.
	min, minCount := 0, ^uint64(0)
	for i := 0; i < s.n; i++ {
		if s.hash[i] == h {
			s.count[i] += w
			return
		}
		if c := s.count[i]; c < minCount {
			min, minCount = i, c
		}
	}
	i := s.n
	var base uint64
	if s.n < Slots {
		s.n++
	} else {
		i = min
		base = minCount
	}
	s.hash[i] = h
	s.count[i] = base + w
	s.err[i] = base
	copy(s.key[i][:], key)
	if len(key) > 0xffff {
		s.klen[i] = 0xffff
	} else {
		s.klen[i] = uint16(len(key))
	}
}

// Total is the weight added since the sketch was last reset.
func (s *Sketch) Total() uint64 { return s.total }

// Min is the most an unmonitored key may have weighed: the smallest count
// when every slot is taken, else 0.
func (s *Sketch) Min() uint64 {
	if s.n < Slots {
		return 0
	}
	m := s.count[0]
	for _, c := range s.count[1:s.n] {
		if c < m {
			m = c
		}
	}
	return m
}

// Reset empties the sketch.
func (s *Sketch) Reset() {
	s.n = 0
	s.total = 0
}

// find is the slot monitoring h, or -1.
func (s *Sketch) find(h uint64) int {
	for i := 0; i < s.n; i++ {
		if s.hash[i] == h {
			return i
		}
	}
	return -1
}

// Entry is one key of a ranking: Count never underestimates its weight
// over the period read, and the true weight is at least Count - Error.
// Truncated marks a key longer than KeyBytes, of which Key is the start.
type Entry struct {
	Key       string `json:"key"`
	Count     uint64 `json:"count"`
	Error     uint64 `json:"error"`
	Truncated bool   `json:"truncated,omitempty"`
	hash      uint64
}

// Entries returns the monitored keys with their counts and errors, in no
// particular order.
func (s *Sketch) Entries() []Entry {
	out := make([]Entry, s.n)
	for i := range out {
		out[i] = s.entry(i)
	}
	return out
}

func (s *Sketch) entry(i int) Entry {
	l := int(s.klen[i])
	e := Entry{Count: s.count[i], Error: s.err[i], hash: s.hash[i]}
	if l > KeyBytes {
		l, e.Truncated = KeyBytes, true
	}
	e.Key = string(s.key[i][:l])
	return e
}

// merge adds two sketches of disjoint spans of one stream (the previous
// period and the current one) into entries whose Count stays an upper
// bound and Count - Error a lower bound: a key one sketch does not monitor
// may have weighed up to that sketch's Min there, which its Count and
// Error both take in.
func merge(a, b *Sketch) []Entry {
	out := make([]Entry, 0, a.n+b.n)
	amin, bmin := a.Min(), b.Min()
	for i := 0; i < a.n; i++ {
		e := a.entry(i)
		if j := b.find(e.hash); j >= 0 {
			e.Count += b.count[j]
			e.Error += b.err[j]
		} else {
			e.Count += bmin
			e.Error += bmin
		}
		out = append(out, e)
	}
	for j := 0; j < b.n; j++ {
		if a.find(b.hash[j]) >= 0 {
			continue
		}
		e := b.entry(j)
		e.Count += amin
		e.Error += amin
		out = append(out, e)
	}
	return out
}
