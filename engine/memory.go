package engine

import (
	"math/rand/v2"
	"unsafe"

	"github.com/limitdb/limitdb/shard"
)

// indexBytes is a key's share of the shard table's index at full load (see
// shard.Shard's layout).
const indexBytes = 6

// keyCost is the memory accounted to one key for itself: its entry in the
// shard's arena (stored value, tag, length, key bytes, padding) and its
// share of the index. What the key holds beyond that (a sliding log's
// stamps, a string's bytes: payload) is accounted beside it, so UsedBytes
// grows when a log grows on an existing key.
func keyCost(key []byte) int64 { return int64(shard.EntrySize[stored](len(key))) + indexBytes }

// UsedBytes is the keyspace's accounted memory: the sum over live and
// not-yet-reaped keys of keyCost and payload, kept per shard as keys come,
// change and go, so reading it locks nothing. maxmemory compares it with
// its limit (TestUsedBytesCountsPayloads: it equals the sum of MEMORY
// USAGE over the keys).
func (e *Engine) UsedBytes() int64 {
	var n int64
	for i := range e.stats {
		n += e.stats[i].bytes.Load()
	}
	return n
}

// EvictSoonest deletes one key among those closest to expiry, as Redis's
// volatile-ttl does: it samples sample keys at random places of one shard
// (shards taken in turn), deletes expired ones it meets, and evicts the sampled key
// with the earliest expiry; keys that never expire are never evicted. It
// tries every shard before giving up and reports whether it freed a key
// (evicted or reaped). It locks one shard at a time.
func (e *Engine) EvictSoonest(now int64, sample int) (evicted, reaped bool) {
	n := e.tab.Count()
	start := int(e.evictNext.Add(1))
	var best []byte
	j := e.journal()
	for k := 0; k < n; k++ {
		i := (start + k) % n
		s := e.tab.Shard(i)
		locked := e.lockShard(i)
		bestExp := int64(0)
		var gone int
		var kb []byte
		visit := func(key string, v *stored, tag byte) bool {
			switch {
			case !v.live(now):
				kb = append(kb[:0], key...)
				h := e.tab.Hash(kb)
				e.reap(i, s, kb, h, v, tag)
				if j != nil {
					e.recordOne(j, i, kb, h)
				}
				e.expiredEvent(kb)
				gone++
			case v.Expire != 0 && (bestExp == 0 || v.Expire < bestExp):
				bestExp = v.Expire
				best = append(best[:0], key...)
			}
			return true
		}
		// Keys sit in the arena in arrival order, and keys that arrived
		// together tend to expire together: sample random index slots, not
		// a run of the arena.
		for j := 0; j < sample; j++ {
			if !s.Sample(rand.Uint64(), visit) {
				break
			}
		}
		if bestExp != 0 {
			h := e.tab.Hash(best)
			if cur, tag := s.GetTagged(best, h); cur != nil {
				e.reap(i, s, best, h, cur, *tag)
				e.stats[i].changes.Add(1)
				if j != nil {
					e.recordOne(j, i, best, h)
				}
				if b := e.keyEvents.Load(); b != nil {
					b.k.Evicted(best)
				}
			}
		}
		if locked {
			s.Unlock()
		}
		e.stats[i].expired.Add(int64(gone))
		if bestExp != 0 || gone > 0 {
			return bestExp != 0, gone > 0
		}
	}
	return false, false
}

// extSlotBytes is a key's ext slot (extslab.go).
const extSlotBytes = int64(unsafe.Sizeof(extSlot{}))

// sizedExt is Ext state that knows its own heap memory.
type sizedExt interface{ extBytes() int64 }

// KeyBytes is the memory key takes at now, as MEMORY USAGE reports it:
// keyCost, and for a key with Ext state its slot and the state's heap
// memory (a string's bytes, a sliding window's two sets of counts, a big
// sliding log's buffer), or the words its entry keeps a sliding log in.
// It reports false when the key is absent. It is an estimate of what the
// key holds, not of the allocator's overhead.
func (e *Engine) KeyBytes(key []byte, now int64) (n int64, ok bool) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		if ok = ent.Kind != KindNone; !ok {
			return ent, false
		}
		n = keyCost(key)
		switch x := ent.Ext.(type) {
		case *inlineLog: // in the key's entry: no slot
			n += int64(shard.EntrySizeWords[stored](len(key), inlineHeader+int(x.size)) - shard.EntrySize[stored](len(key)))
		case nil:
		case []byte:
			n += extSlotBytes + 24 + int64(cap(x)) // the boxed slice and its bytes
		case sizedExt:
			n += extSlotBytes + x.extBytes()
		default:
			n += extSlotBytes
		}
		return ent, false
	})
	return n, ok
}
