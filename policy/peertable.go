package policy

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
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

// The on-partition policies: what a partitioned peer's counts are taken to
// be at a window's admission (buckets keep what they absorbed).
const (
	KeepLast  = "keep-last"  // the last counts heard
	FairShare = "fair-share" // at least the policy's limit / regions
	LocalOnly = "local"      // nothing: this region's limit alone
)

// record is what the table keeps of one policy key: this region's own
// slots (what the peers are sent) and each peer's last heard.
type record struct {
	key     string
	own     slots
	touched int64 // the last instant any slot changed
	wroteAt int64 // the last instant this region charged the key
	dirty   bool  // own changed since the last batch
	heard   []slots
	inline  [2]slots // heard's memory with up to two peers: one allocation, one cache line fewer
}

const tableShards = 64

// PeerTable is what a region knows of every global policy key: its own
// slots, to send, and the last slots heard from each peer region, to
// admit against. The admission reads and writes a key's record with one
// lookup under one lock of 64, held while it decides (under the key's
// shard lock in the keyspace: the order is always keyspace, then table);
// a key's first charge makes its record. The slots changed since the last
// batch wait in a per-shard dirty list that the sender drains (TakeDirty).
// Package region fills it from the peers' batches (Merge) and sends what
// changed.
type PeerTable struct {
	seed        maphash.Seed
	peers       int
	partitioned []atomic.Bool  // by peer index
	partedAt    []atomic.Int64 // when each peer was last partitioned
	onPartition func() string  // read when a peer is partitioned
	shards      [tableShards]tableShard
}

type tableShard struct {
	mu    sync.Mutex
	recs  map[string]*record
	dirty []*record
	_     [40]byte
}

// NewPeerTable returns the table of a region with peers peer regions,
// which counts a partitioned peer as onPartition() says (KeepLast,
// FairShare or LocalOnly), read at each admission that meets one.
func NewPeerTable(peers int, onPartition func() string) *PeerTable {
	t := &PeerTable{seed: maphash.MakeSeed(), peers: peers, partitioned: make([]atomic.Bool, peers), partedAt: make([]atomic.Int64, peers), onPartition: onPartition}
	for i := range t.shards {
		t.shards[i].recs = map[string]*record{}
	}
	return t
}

// Peers is the number of peer regions.
func (t *PeerTable) Peers() int { return t.peers }

// SetPartitioned marks peer p partitioned at now (or heard again: v
// false) and reports whether that changed anything. A partitioned peer's
// counts are taken as on-partition says.
func (t *PeerTable) SetPartitioned(p int, v bool, now int64) bool {
	if v {
		t.partedAt[p].Store(now)
	}
	return t.partitioned[p].CompareAndSwap(!v, v)
}

// Partitioned reports whether peer p is partitioned.
func (t *PeerTable) Partitioned(p int) bool { return t.partitioned[p].Load() }

func (t *PeerTable) shard(key []byte) *tableShard {
	return &t.shards[maphash.Bytes(t.seed, key)%tableShards]
}

// getLocked finds or makes key's record; the shard is locked.
func (t *PeerTable) getLocked(sh *tableShard, key []byte) *record {
	if r := sh.recs[string(key)]; r != nil {
		return r
	}
	r := &record{key: string(key)}
	if t.peers <= len(r.inline) {
		r.heard = r.inline[:t.peers]
	} else {
		r.heard = make([]slots, t.peers)
	}
	sh.recs[r.key] = r
	return r
}

// peerView is one admission's hold on a key's record: the table's shard
// locked, the record (nil when the key has none yet) and the fair share.
// The zero view (no table: no peers) hears nothing.
type peerView struct {
	t       *PeerTable
	sh      *tableShard
	rec     *record
	share   int64 // a window's limit / regions
	regions int64
}

// hold locks key's shard of the table until release.
func (t *PeerTable) hold(key []byte, share int64, regions int) peerView {
	if t == nil {
		return peerView{}
	}
	sh := t.shard(key)
	sh.mu.Lock()
	return peerView{t: t, sh: sh, rec: sh.recs[string(key)], share: share, regions: int64(max(regions, 1))}
}

// fairShareTAT is a bucket's TAT as on-partition fair-share counts it:
// each partitioned peer taken to consume its fair share of the rate (1 /
// regions of it) from the later of its partition and this region's last
// charge of the key (charges store the TAT so counted, so nothing counts
// twice while the partition lasts). A consumer at rate/regions moves the
// TAT by elapsed/regions. Under keep-last and local, and with no peer
// partitioned, it is tat.
func (v *peerView) fairShareTAT(tat, now int64) int64 {
	if v.t == nil {
		return tat
	}
	var extra int64
	first := int64(-1)
	mode := ""
	for i := range v.t.partitioned {
		if !v.t.partitioned[i].Load() {
			continue
		}
		if mode == "" {
			if mode = v.t.onPartition(); mode != FairShare {
				return tat
			}
		}
		from := v.t.partedAt[i].Load()
		if v.rec != nil {
			from = max(from, v.rec.wroteAt)
		}
		if now > from {
			extra += now - from
			if first < 0 || from < first {
				first = from
			}
		}
	}
	if extra == 0 {
		return tat
	}
	// A TAT before the virtual consumption began is a full bucket then.
	return max(tat, first) + extra/v.regions
}

// heard is the peers' counts for the window (or bucket state) id, each
// partitioned peer counted as on-partition says.
func (v *peerView) heard(id int64) int64 {
	if v.t == nil {
		return 0
	}
	var sum int64
	mode := ""
	for i := range v.t.partitioned {
		var n int64
		if v.rec != nil {
			n = v.rec.heard[i].value(id)
		}
		if v.t.partitioned[i].Load() {
			if mode == "" {
				mode = v.t.onPartition()
			}
			switch mode {
			case LocalOnly:
				n = 0
			case FairShare:
				n = max(n, v.share)
			}
		}
		sum += n
	}
	return sum
}

// release records this region's new slot for key when the admission wrote
// it (marking it for the next batch), and unlocks the shard.
func (v *peerView) release(key []byte, s Slot, wrote bool, now int64) {
	if v.t == nil {
		return
	}
	if wrote {
		r := v.rec
		if r == nil {
			r = v.t.getLocked(v.sh, key)
		}
		r.own.merge(s)
		r.touched, r.wroteAt = now, now
		if !r.dirty {
			r.dirty = true
			v.sh.dirty = append(v.sh.dirty, r)
		}
	}
	v.sh.mu.Unlock()
}

// Merge folds peer p's slot for key into the table and returns by how much
// it grew.
func (t *PeerTable) Merge(p int, key []byte, s Slot, now int64) int64 {
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

// Update is one own slot to send.
type Update struct {
	Key string
	Slot
}

// TakeDirty appends every own slot changed since the last call to out.
func (t *PeerTable) TakeDirty(out []Update) []Update {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for _, r := range sh.dirty {
			r.dirty = false
			out = append(out, Update{r.key, r.own[0]})
		}
		clear(sh.dirty)
		sh.dirty = sh.dirty[:0]
		sh.mu.Unlock()
	}
	return out
}

// All appends every own slot kept (both windows) to out: the full state a
// peer gets after it (or this region) reconnects.
func (t *PeerTable) All(out []Update) []Update {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for _, r := range sh.recs {
			for _, s := range r.own {
				if s.ID != 0 || s.Value != 0 {
					out = append(out, Update{r.key, s})
				}
			}
		}
		sh.mu.Unlock()
	}
	return out
}

// Sweep drops shard i's records untouched since before cutoff: their
// windows and buckets are over everywhere.
func (t *PeerTable) Sweep(i int, cutoff int64) int {
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

// Size is the number of records.
func (t *PeerTable) Size() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.recs)
		sh.mu.Unlock()
	}
	return n
}
