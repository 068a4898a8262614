package engine

import "math/rand/v2"

// Random picks and set algebra (SPOP, SRANDMEMBER, SINTER, SUNION, SDIFF
// and their STOREs). Random choices read math/rand's generator: which
// members come out is unspecified, as in Redis, and tests check only
// membership, counts and distinctness.

// Members returns copies of the set's members, in Range's order.
func (s *Set) Members() [][]byte {
	out := make([][]byte, 0, s.Len())
	s.Range(func(m []byte) bool {
		out = append(out, append([]byte(nil), m...))
		return true
	})
	return out
}

// Sample returns n members chosen at random (copies): distinct, and at
// most all of them, with distinct; with repetition, exactly n, otherwise.
// An empty set gives none.
func (s *Set) Sample(n int, distinct bool) [][]byte {
	all := s.Members()
	return sample(all, n, distinct)
}

// sample picks n of items at random: a partial shuffle when distinct.
func sample[T any](items []T, n int, distinct bool) []T {
	if len(items) == 0 || n <= 0 {
		return nil
	}
	if !distinct {
		out := make([]T, n)
		for i := range out {
			out[i] = items[rand.IntN(len(items))]
		}
		return out
	}
	if n >= len(items) {
		return items
	}
	for i := 0; i < n; i++ {
		j := i + rand.IntN(len(items)-i)
		items[i], items[j] = items[j], items[i]
	}
	return items[:n]
}

// SampleFields is Set.Sample for a hash: fields with their values
// (copies).
func (h *Hash) SampleFields(n int, distinct bool) [][2][]byte {
	all := make([][2][]byte, 0, h.Len())
	h.Range(func(f, v []byte) bool {
		all = append(all, [2][]byte{append([]byte(nil), f...), append([]byte(nil), v...)})
		return true
	})
	return sample(all, n, distinct)
}

// SetOf returns a set holding members (copied), nil when there are none.
func SetOf(members [][]byte) *Set {
	if len(members) == 0 {
		return nil
	}
	s := NewSet()
	for _, m := range members {
		s.Add(m)
	}
	return s
}

// Sample picks n of items at random, distinct (a partial shuffle of items,
// which it reorders), at most all of them.
func Sample[T any](items []T, n int) []T { return sample(items, n, true) }

// RandIntN is a random int in [0, n).
func RandIntN(n int) int { return rand.IntN(n) }
