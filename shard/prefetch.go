package shard

// PrefetchMax is the most hashes one Prefetch call takes.
const PrefetchMax = 32

// Prefetch reads, for each hash in hs (at most PrefetchMax), the index
// slot and then the arena entry a lookup of that hash reads first, so that
// the lookups that follow find both in the cache. It reads in two passes,
// every slot and then every entry, so that no read waits for another and
// the processor overlaps their cache misses: under random keys a lookup
// waits for two misses in a row, and a pipeline of n lookups prefetched
// waits for about two in all (go test ./shard -bench Prefetch).
//
// It takes each shard's lock only if it is free, and changes nothing. Its
// result means nothing: it is what was read, for the caller to keep
// somewhere, so that the compiler does not drop reads whose values are
// otherwise unused.
func (t *Table[V]) Prefetch(hs []uint64) uint32 {
	var slots [PrefetchMax]uint32
	hs = hs[:min(len(hs), PrefetchMax)]
	for i, h := range hs {
		s := &t.shards[t.IndexOf(h)]
		pos, _ := split(h)
		if !s.mu.TryLock() {
			continue // held, perhaps for a long script's run: not worth a wait
		}
		if size := len(s.slot); size > 0 {
			slots[i] = s.slot[home(pos, size)]
		}
		s.mu.Unlock()
	}
	var sum uint32
	for i, h := range hs {
		v := slots[i]
		if _, tag := split(h); !isFull(v) || v&tagMask != tag {
			continue // nothing there, or another key's
		}
		s := &t.shards[t.IndexOf(h)]
		if !s.mu.TryLock() {
			continue
		}
		// The key's length field, which keyIs reads first, and the value
		// at the entry's start, which can be on the cache line before.
		if off := offOf(v); off+valSize[V]()+1 < len(s.arena) {
			sum += uint32(s.arena[off]) + uint32(s.arena[off+valSize[V]()+1])
		}
		s.mu.Unlock()
	}
	return sum
}
