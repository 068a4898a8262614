package region

import (
	"hash/maphash"
	"sync"
)

// Slot is one region's count for one key: the id of the window or bucket
// state it counts in, and the cost consumed in it. Within an id the value
// only grows, and ids only grow: merging two slots keeps the larger, so a
// slot heard twice, late or out of order changes nothing (a G-counter
// entry, one per region per key per id).
type Slot struct{ ID, Value int64 }

// slots are the two latest slots of one region for one key: the current
// window and the previous one, which a sliding window weighs.
type slots [2]Slot

// merge folds s into ss and returns by how much the value of s's id grew
// (0 for a slot older than both kept, or not larger than what is kept).
func (ss *slots) merge(s Slot) int64 {
	switch {
	case s.ID == ss[0].ID:
		if s.Value <= ss[0].Value {
			return 0
		}
		d := s.Value - ss[0].Value
		ss[0].Value = s.Value
		return d
	case s.ID > ss[0].ID:
		ss[1], ss[0] = ss[0], s
		return s.Value
	case s.ID == ss[1].ID:
		if s.Value <= ss[1].Value {
			return 0
		}
		d := s.Value - ss[1].Value
		ss[1].Value = s.Value
		return d
	case s.ID > ss[1].ID:
		ss[1] = s
		return s.Value
	}
	return 0
}

// value is the count kept for id, 0 when none.
func (ss *slots) value(id int64) int64 {
	switch id {
	case ss[0].ID:
		return ss[0].Value
	case ss[1].ID:
		return ss[1].Value
	}
	return 0
}

// record is what the table keeps of one policy key: this region's own
// slots (what the peers are sent) and each peer's last heard.
type record struct {
	key     string
	own     slots
	heard   []slots // by peer index
	touched int64   // the last instant any slot changed
	dirty   bool    // own changed since the last batch
}

const tableShards = 64

// table is the records by key, in shards with a lock each.
type table struct {
	seed   maphash.Seed
	peers  int
	shards [tableShards]tableShard
}

type tableShard struct {
	mu    sync.Mutex
	recs  map[string]*record
	dirty []*record
	_     [40]byte
}

func newTable(peers int) *table {
	t := &table{seed: maphash.MakeSeed(), peers: peers}
	for i := range t.shards {
		t.shards[i].recs = map[string]*record{}
	}
	return t
}

func (t *table) shard(key []byte) *tableShard {
	return &t.shards[maphash.Bytes(t.seed, key)%tableShards]
}

// getLocked finds or makes key's record; the shard is locked.
func (t *table) getLocked(sh *tableShard, key []byte) *record {
	if r := sh.recs[string(key)]; r != nil {
		return r
	}
	r := &record{key: string(key), heard: make([]slots, t.peers)}
	sh.recs[r.key] = r
	return r
}

// charged records this region's own slot for key and marks it for the next
// batch.
func (t *table) charged(key []byte, s Slot, now int64) {
	sh := t.shard(key)
	sh.mu.Lock()
	r := t.getLocked(sh, key)
	r.own.merge(s)
	r.touched = now
	if !r.dirty {
		r.dirty = true
		sh.dirty = append(sh.dirty, r)
	}
	sh.mu.Unlock()
}

// merge folds peer p's slot for key into the table and returns by how much
// it grew.
func (t *table) merge(p int, key []byte, s Slot, now int64) int64 {
	sh := t.shard(key)
	sh.mu.Lock()
	r := t.getLocked(sh, key)
	d := r.heard[p].merge(s)
	if d > 0 {
		r.touched = now
	}
	sh.mu.Unlock()
	return d
}

// update is one own slot to send.
type update struct {
	key string
	Slot
}

// takeDirty appends every own slot changed since the last call to out.
func (t *table) takeDirty(out []update) []update {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for _, r := range sh.dirty {
			r.dirty = false
			out = append(out, update{r.key, r.own[0]})
		}
		clear(sh.dirty)
		sh.dirty = sh.dirty[:0]
		sh.mu.Unlock()
	}
	return out
}

// all appends every own slot kept (both windows) to out: the full state a
// peer gets after it (or this region) reconnects.
func (t *table) all(out []update) []update {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for _, r := range sh.recs {
			for _, s := range r.own {
				if s.ID != 0 || s.Value != 0 {
					out = append(out, update{r.key, s})
				}
			}
		}
		sh.mu.Unlock()
	}
	return out
}

// sweep drops shard i's records untouched since before cutoff: their
// windows and buckets are over everywhere.
func (t *table) sweep(i int, cutoff int64) int {
	sh := &t.shards[i%tableShards]
	sh.mu.Lock()
	n := 0
	for k, r := range sh.recs {
		if r.touched < cutoff && !r.dirty {
			delete(sh.recs, k)
			n++
		}
	}
	sh.mu.Unlock()
	return n
}

// size is the number of records.
func (t *table) size() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.recs)
		sh.mu.Unlock()
	}
	return n
}
