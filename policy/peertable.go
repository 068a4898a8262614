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
// slots (what the peers are sent) and each peer's last heard. The fields
// an admission reads come first.
type record struct {
	key     string
	heard   []slots
	wroteAt int64 // the last instant this region charged the key
	touched int64 // the last instant any slot changed
	own     slots
	dirty   bool     // own changed since the last batch
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
//
// Each shard is an open-addressing table keyed by the key's 64-bit hash
// (linear probing; the key kept in the record decides), so that a lookup
// reads one slot and one record, and Prefetch can read both ahead for a
// pipeline, as the keyspace's own lookups are.
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
	slot  []tslot // a power of two long, at most 3/4 full; nil until the first record
	n     int     // records
	dirty []*record
	_     [16]byte
}

// tslot is one place of a shard's table: a record and its key's hash; rec
// nil is a free place.
type tslot struct {
	h   uint64
	rec *record
}

// pos is where h's probe sequence starts in a table of size places (the
// low bits chose the shard).
func pos(h uint64, size int) int { return int(h>>8) & (size - 1) }

// find is key's record, or nil; the shard is locked.
func (sh *tableShard) find(h uint64, key []byte) *record {
	size := len(sh.slot)
	if size == 0 {
		return nil
	}
	for i := pos(h, size); ; i = (i + 1) & (size - 1) {
		s := &sh.slot[i]
		if s.rec == nil {
			return nil
		}
		if s.h == h && s.rec.key == string(key) {
			return s.rec
		}
	}
}

// put adds r, whose key is not there, under hash h; the shard is locked.
func (sh *tableShard) put(h uint64, r *record) {
	if (sh.n+1)*4 > len(sh.slot)*3 {
		sh.resize(max(16, 2*len(sh.slot)))
	}
	sh.place(h, r)
	sh.n++
}

// place puts r in the first free place of h's probe sequence.
func (sh *tableShard) place(h uint64, r *record) {
	size := len(sh.slot)
	i := pos(h, size)
	for sh.slot[i].rec != nil {
		i = (i + 1) & (size - 1)
	}
	sh.slot[i] = tslot{h, r}
}

// resize moves every record into a table of size places.
func (sh *tableShard) resize(size int) {
	old := sh.slot
	sh.slot = make([]tslot, size)
	for _, s := range old {
		if s.rec != nil {
			sh.place(s.h, s.rec)
		}
	}
}

// NewPeerTable returns the table of a region with peers peer regions,
// which counts a partitioned peer as onPartition() says (KeepLast,
// FairShare or LocalOnly), read at each admission that meets one.
func NewPeerTable(peers int, onPartition func() string) *PeerTable {
	t := &PeerTable{seed: maphash.MakeSeed(), peers: peers, partitioned: make([]atomic.Bool, peers), partedAt: make([]atomic.Int64, peers), onPartition: onPartition}
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

// hash is key's hash, which picks its shard (low bits) and its place there.
func (t *PeerTable) hash(key []byte) uint64 { return maphash.Bytes(t.seed, key) }

func (t *PeerTable) shard(h uint64) *tableShard { return &t.shards[h%tableShards] }

// getLocked finds or makes key's record; the shard is locked.
func (t *PeerTable) getLocked(sh *tableShard, h uint64, key []byte) *record {
	if r := sh.find(h, key); r != nil {
		return r
	}
	r := &record{key: string(key)}
	if t.peers <= len(r.inline) {
		r.heard = r.inline[:t.peers]
	} else {
		r.heard = make([]slots, t.peers)
	}
	sh.put(h, r)
	return r
}

// PrefetchMax is the most keys one Prefetch call reads ahead.
const PrefetchMax = 32

// Prefetch reads, for each of keys (at most PrefetchMax), the place and
// then the record (and its key) a lookup of that key reads, so that the
// admissions of a pipeline that follow find them in the cache: in passes,
// every place, then every record, then every key, so that no read waits
// for another and their cache misses overlap (the keyspace's
// shard.Table.Prefetch does the same for its own lookups). It takes each
// shard's lock only if it is free and changes nothing; its result is what
// was read, for the caller to keep so the reads are not dropped.
func (t *PeerTable) Prefetch(keys [][]byte) uint64 {
	if t == nil {
		return 0
	}
	var hs [PrefetchMax]uint64
	var recs [PrefetchMax]*record
	keys = keys[:min(len(keys), PrefetchMax)]
	for i, k := range keys {
		h := t.hash(k)
		hs[i] = h
		sh := t.shard(h)
		if !sh.mu.TryLock() {
			continue
		}
		if size := len(sh.slot); size > 0 {
			if s := sh.slot[pos(h, size)]; s.h == h {
				recs[i] = s.rec
			}
		}
		sh.mu.Unlock()
	}
	var sum uint64
	var ks [PrefetchMax]string
	for i, r := range recs[:len(keys)] {
		if r == nil {
			continue
		}
		sh := t.shard(hs[i])
		if !sh.mu.TryLock() {
			continue
		}
		// A word at most 64 bytes apart across the record, so that each
		// of its cache lines is read: the key, wroteAt, dirty and the
		// last inline slot.
		ks[i] = r.key
		sum += uint64(r.wroteAt) + uint64(r.inline[1][1].Value)
		if r.dirty {
			sum++
		}
		sh.mu.Unlock()
	}
	for _, k := range ks[:len(keys)] {
		if k != "" {
			sum += uint64(k[0])
		}
	}
	return sum
}

// peerView is one admission's hold on a key's record: the table's shard
// locked, the record (nil when the key has none yet) and the fair share.
// The zero view (no table: no peers) hears nothing.
type peerView struct {
	t       *PeerTable
	sh      *tableShard
	h       uint64 // the key's hash
	rec     *record
	share   int64 // a window's limit / regions
	regions int64
}

// hold locks key's shard of the table until release.
func (t *PeerTable) hold(key []byte, share int64, regions int) peerView {
	if t == nil {
		return peerView{}
	}
	h := t.hash(key)
	sh := t.shard(h)
	sh.mu.Lock()
	return peerView{t: t, sh: sh, h: h, rec: sh.find(h, key), share: share, regions: int64(max(regions, 1))}
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
			r = v.t.getLocked(v.sh, v.h, key)
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
	h := t.hash(key)
	sh := t.shard(h)
	sh.mu.Lock()
	r := t.getLocked(sh, h, key)
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
		for _, sl := range sh.slot {
			r := sl.rec
			if r == nil {
				continue
			}
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
// windows and buckets are over everywhere. The shard's table is rebuilt
// when any is dropped (at a size its records fit).
func (t *PeerTable) Sweep(i int, cutoff int64) int {
	sh := &t.shards[i%tableShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	keep := 0
	for _, s := range sh.slot {
		if s.rec != nil && (s.rec.touched >= cutoff || s.rec.dirty) {
			keep++
		}
	}
	n := sh.n - keep
	if n == 0 {
		return 0
	}
	old := sh.slot
	size := 16
	for keep*2 > size {
		size *= 2
	}
	sh.slot, sh.n = nil, keep
	if keep > 0 {
		sh.slot = make([]tslot, size)
	}
	for _, s := range old {
		if s.rec != nil && (s.rec.touched >= cutoff || s.rec.dirty) {
			sh.place(s.h, s.rec)
		}
	}
	return n
}

// Size is the number of records.
func (t *PeerTable) Size() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += sh.n
		sh.mu.Unlock()
	}
	return n
}
