package engine

// The ext slab: where a shard keeps its keys' Ext state.
//
// A key with Ext state (tag bit tagExt) stores the number of its slot in
// its stored entry's B, and the slot keeps the entry's own B and C beside
// the Ext value. Finding the state is then one index into the slab from the
// entry the table lookup already found: no second hash of the key and no
// map probe. Entries keep showing their own B (load and store swap it), so
// no algorithm has to leave B unused when it has Ext state. (A sliding log
// keeps its buffer in its entry's words instead, up to maxInlineWords: one
// place fewer to read per request, logbuf.go.)
//
// A slot belongs to its key from the write that gives the key Ext state
// to the one that deletes the key (reap: DEL, lazy or active expiry,
// eviction) or stores it without Ext state (another kind, a packed sliding
// window): store reuses the slot while the key keeps Ext state, expired or
// not. Flush drops every shard's slab with its keys. The slab never moves
// a live slot while it grows, so entries need no update then. When fewer
// than a quarter of its slots are in use, active expiry compacts it
// (Engine.compactSlab): the live slots move to a slab of their own size and
// each key's entry learns its new slot, so a shard that once held many
// strings or big sliding logs gives their room back.

// extSlab is one shard's slots, guarded by the shard's lock. Free slots
// are chained through their b, from free.
type extSlab struct {
	slots []extSlot
	free  int64 // 1 + the first free slot; 0: none
	live  int   // slots in use: the shard's keys with Ext state
}

// extSlot is one key's Ext state, B and C: 32 bytes, two to a cache
// line. A free slot has a nil ext and, in b, 1 + the next free slot (0:
// none).
type extSlot struct {
	ext  any
	b, c int64
}

// add puts a key's slot in a free one and returns its number.
func (x *extSlab) add(sl extSlot) int64 {
	x.live++
	if x.free == 0 {
		x.slots = append(x.slots, sl)
		return int64(len(x.slots) - 1)
	}
	i := x.free - 1
	x.free = x.slots[i].b
	x.slots[i] = sl
	return i
}

// sparse reports whether the slab is worth compacting: most of its slots
// free, and enough of them to matter.
func (x *extSlab) sparse() bool { return len(x.slots) >= 64 && 4*x.live < len(x.slots) }

// drop frees slot i, letting its state go to the garbage collector.
func (x *extSlab) drop(i int64) {
	x.live--
	if x.live == 0 {
		*x = extSlab{}
		return
	}
	x.slots[i] = extSlot{b: x.free}
	x.free = i + 1
}
