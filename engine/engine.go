// Package engine is limitdb's keyspace: typed entries in a sharded table,
// read and written under the owning shard's lock, with expiry and stats.
//
// Handlers reach state only through Do (one key) and DoMulti (several keys,
// atomically), passing the instant of the command, read once from the
// injected Clock. The algorithms in engine/* are pure functions of (state,
// now, params) called inside those callbacks; engine never interprets their
// state beyond Kind and Expire.
//
// engine must never import resp (the protocol) or persistence.
package engine

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/shard"
)

// ErrShardFull is the panic of a write that would take one shard past its
// 256 MiB of keys (shard.ErrFull); the server answers it as an OOM error.
// The key being written is left as it was, and DoMulti writes none of its
// keys (roomFor).
var ErrShardFull = shard.ErrFull

// Kind says which algorithm (or data type) owns a key. Using a key with
// another algorithm is a WRONGTYPE error at the protocol edge.
type Kind uint8

// The kinds of entries. The numbers are part of the snapshot format: never
// renumber them, only append.
const (
	KindNone          Kind = iota // absent
	KindGCRA                      // CL.THROTTLE and GCRA: A = TAT (ns)
	KindTokenBucket               // TB.TAKE
	KindLeakyQueue                // LB.QUEUE
	KindFixedWindow               // FW.INCR
	KindSlidingWindow             // SW.INCR
	KindSlidingLog                // SL.INCR
	KindString                    // GET/SET/INCR values
	KindHash                      // HSET/HGET fields: Ext = *Hash
	KindSet                       // SADD members: Ext = *Set
	KindZSet                      // ZADD scored members: Ext = *ZSet
	KindList                      // LPUSH elements: Ext = *List

	KindCalendarWindow // FW.INCR/SW.INCR over calendar windows: A = window's first day, B = counts (calendar.go)

	KindReserve // a limiter's entry with reservations open (RL.RESERVE): Ext = *Reserved

	KindLease // CL.ACQUIRE leases: Ext = *leaseBox (leases.go)

	kindCount
)

var kindNames = [...]string{"none", "gcra", "tbucket", "lbqueue", "fwindow", "swindow", "slog", "string", "hash", "set", "zset", "list",

	KindCalendarWindow: "cwindow",
	KindReserve:        "reserved",

	KindLease: "lease",
}

// Limiter reports whether k is a limiter's state, which expires by itself
// when its limit is fresh (ErrLimiterExpire), rather than a Redis data type
// (string, hash, set, zset, list) whose expiry the client sets.
func (k Kind) Limiter() bool {
	return k >= KindGCRA && k <= KindSlidingLog ||

		k == KindCalendarWindow ||
		k == KindReserve ||

		k == KindLease
}

// String is the name TYPE answers.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// KindByName maps a TYPE name back to its kind (SCAN ... TYPE name).
func KindByName(name string) (Kind, bool) {
	for i, n := range kindNames {
		if n == name {
			return Kind(i), true
		}
	}
	return KindNone, false
}

// Entry is one key's state. A and B hold an algorithm's numbers; Ext holds
// state that does not fit two integers (a sliding log, a string value). C
// is a third number kept only beside Ext state (0 without it): a sliding
// log's oldest stamp, which spares a request the read of its buffer.
type Entry struct {
	Kind    Kind
	Expire  int64 // Unix ns at which the entry becomes absent; 0 = never
	A, B, C int64
	Ext     any
}

// Live reports whether the entry exists at now.
func (e *Entry) Live(now int64) bool {
	return e.Kind != KindNone && (e.Expire == 0 || e.Expire > now)
}

// Engine is the keyspace, or a transaction's handle on it (Exclusive):
// the same keys, but a handle does not lock the shards its transaction
// holds.
type Engine struct {
	*keyspace
	held []bool // in a transaction's handle, the shards it holds; nil otherwise
	tx   *txLog // in a transaction's handle, what it changed (journal.go)
	idx  []int  // in a transaction's handle, the shards it holds: a buffer reused with the handle
}

// keyspace is the state an engine and its transactions' handles share.
type keyspace struct {
	clock clock.Clock
	tab   *shard.Table[stored]
	stats []shardStats
	side  []sideState // per shard, guarded by the shard's lock

	jr        journalRef                   // who is told every change (journal.go)
	keyEvents atomic.Pointer[keyEventsBox] // who is told the keys expiry and eviction delete (keyevents.go)

	txs sync.Pool // transactions' handles, reused: a script or EXEC allocates none

	expireNext atomic.Uint64 // the shard ExpireShards starts at
	evictNext  atomic.Uint64 // the shard EvictSoonest starts at
}

// stored is an Entry as the table keeps it: 24 bytes without pointers, so
// the table keeps it outside the Go heap (see shard). The kind lives in the
// key's tag byte (tagExt set when the key has Ext state in a slot). Ext
// state lives in the shard's ext slab: for such a key, B is its slot there,
// and the slot keeps the entry's own B and C (extslab.go). A sliding log of
// up to maxInlineWords keeps its buffer, and C, in its entry's words
// instead, with no slot (logbuf.go).
type stored struct {
	Expire, A, B int64
}

const tagExt = 0x80

func (st *stored) live(now int64) bool { return st.Expire == 0 || st.Expire > now }

// sideState is what a shard keeps beside its table.
type sideState struct {
	ext    extSlab
	cursor uint64     // active expiry's position in the shard (shard.Scan)
	peak   int        // keys the shard held lately, decaying: room Compact keeps
	change [1]Change  // the journal's record of a one-key unit, reused
	reaped reapedKeys // the journal's record of an expiry step, reused
	_      [32]byte
}

// load is the Entry that st (of tag byte tag) in shard i stores.
func (e *Engine) load(i int, st *stored, tag byte) Entry {
	ent := Entry{Kind: Kind(tag &^ tagExt), Expire: st.Expire, A: st.A, B: st.B}
	switch {
	case tag&tagExt != 0:
		x := &e.side[i].ext.slots[st.B]
		ent.Ext, ent.B, ent.C = x.ext, x.b, x.c
	case ent.Kind == KindSlidingLog:
		e.loadLog(i, st, &ent) // logbuf.go
	}
	return ent
}

// dropExt frees the ext slot of a key of shard i that stored st.
func (e *Engine) dropExt(i int, st stored, tag byte) {
	if tag&tagExt != 0 {
		e.side[i].ext.drop(st.B)
	}
}

type shardStats struct {
	expired atomic.Int64
	hits    atomic.Int64
	misses  atomic.Int64
	changes atomic.Int64 // writes since start, for "changes since last save"
	bytes   atomic.Int64 // estimated memory of the shard's keys (memory.go)
	_       [40]byte
}

// New returns an empty keyspace of n shards (shard.DefaultShards if n <= 0)
// reading clk, which must not be nil: the program's main chooses the real
// clock, a test a fake.
func New(clk clock.Clock, n int) *Engine {
	if n <= 0 {
		n = shard.DefaultShards
	}
	if clk == nil {
		panic("engine: New with a nil clock")
	}
	t := shard.New[stored](n)
	return &Engine{keyspace: &keyspace{clock: clk, tab: t, stats: make([]shardStats, t.Count()), side: make([]sideState, t.Count())}}
}

// Now reads the engine's clock: once per command.
func (e *Engine) Now() int64 { return e.clock.Now() }

// Clock is the clock the engine was made with, which everything that
// serves the keyspace reads and waits on.
func (e *Engine) Clock() clock.Clock { return e.clock }

// Do runs fn on key's entry at now under the shard's lock. fn gets the live
// entry (Kind == KindNone when the key is absent or expired) and returns the
// entry to store and whether to store it; an entry with KindNone, or already
// expired at now, deletes the key. Do reports whether the key existed.
// Entries pass by value so that nothing escapes to the heap.
func (e *Engine) Do(key []byte, now int64, fn func(ent Entry) (Entry, bool)) (existed bool) {
	h := e.tab.Hash(key)
	i := e.tab.IndexOf(h)
	s := e.tab.Shard(i)
	if e.lockShard(i) {
		defer s.Unlock()
	}
	var ent Entry
	at := e.find(i, s, key, h, now)
	if at.live {
		ent = e.load(i, at.cur, *at.tag)
	}
	next, write := fn(ent)
	switch {
	case write:
		e.store(i, s, key, h, at, next, now)
	case at.cur != nil && !at.live: // expired and not written again
		e.reap(i, s, key, h, at.cur, *at.tag)
	default:
		return at.live
	}
	if j := e.journal(); j != nil {
		if st, known := storedState(write, next, now); known && e.tx == nil {
			e.recordState(j, i, key, st)
		} else {
			e.changed(j, i, key, h)
		}
	}
	return at.live
}

// DoMulti runs fn on the entries of several keys at one instant, atomically:
// their shards stay locked, in ascending order, from read to write. fn gets
// one entry per key (a key named twice is given once, in its first place,
// and KindNone in the others) and returns true to store them all.
func (e *Engine) DoMulti(keys [][]byte, now int64, fn func(ents []Entry) (write bool)) {
	// Each key is hashed once, for its shard and for both lookups.
	at := make([]keyAt, len(keys))
	idx := make([]int, len(keys)) // for lockShards, which sorts it
	first := FirstPlaces(keys)
	for k, key := range keys {
		at[k].h = e.tab.Hash(key)
		at[k].i = e.tab.IndexOf(at[k].h)
		at[k].dup = first[k] != k
		idx[k] = at[k].i
	}
	locked := e.lockShards(idx)
	defer e.tab.UnlockIndexes(locked)
	ents := make([]Entry, len(keys))
	for k, key := range keys {
		if at[k].dup {
			continue
		}
		i := at[k].i
		f := e.find(i, e.tab.Shard(i), key, at[k].h, now)
		at[k].payload = f.payload
		if f.live {
			ents[k] = e.load(i, f.cur, *f.tag)
		}
	}
	write := fn(ents)
	if write {
		e.roomFor(keys, at, ents)
		e.settleLogs(keys, at, ents) // logbuf.go
	}
	changed := write
	for k, key := range keys {
		if at[k].dup {
			continue
		}
		// Look again: a store may have moved this shard's entries.
		h, i := at[k].h, at[k].i
		s := e.tab.Shard(i)
		cur, tag := s.GetTagged(key, h)
		f := found{cur: cur, tag: tag, live: cur != nil && cur.live(now), payload: at[k].payload}
		switch {
		case write:
			e.store(i, s, key, h, f, ents[k], now)
		case cur != nil && !f.live:
			e.reap(i, s, key, h, cur, *tag)
			changed = true
		}
	}
	if j := e.journal(); j != nil && changed {
		if e.tx != nil {
			for _, key := range keys {
				e.tx.keys = append(e.tx.keys, append([]byte(nil), key...))
			}
			return
		}
		e.recordKeys(j, false, keys)
	}
}

// smallMulti is the most keys a multi-key call handles with loops over
// pairs of keys, which allocate nothing; past it they take maps, so that a
// call's time grows with its keys, not with their square (MGET or MSET of
// tens of thousands of keys).
const smallMulti = 16

// FirstPlaces returns, for each key, the index of its first place in keys:
// where DoMulti puts the entry of a key named more than once.
func FirstPlaces(keys [][]byte) []int {
	first := make([]int, len(keys))
	if len(keys) <= smallMulti {
		for k := range keys {
			first[k] = k
			for j := 0; j < k; j++ {
				if string(keys[j]) == string(keys[k]) {
					first[k] = j
					break
				}
			}
		}
		return first
	}
	seen := make(map[string]int, len(keys))
	for k, key := range keys {
		if j, ok := seen[string(key)]; ok {
			first[k] = j
			continue
		}
		seen[string(key)] = k
		first[k] = k
	}
	return first
}

// roomForMany is roomFor in one pass over the keys, for many keys: the
// size of every shard's entries, and, only for shards where that does not
// fit, of those that need a new place.
func (e *Engine) roomForMany(keys [][]byte, at []keyAt, ents []Entry) {
	all := map[int]int{}
	for j, key := range keys {
		if !at[j].dup {
			all[at[j].i] += shard.EntrySizeWords[stored](len(key), entryWords(&ents[j]))
		}
	}
	var fresh map[int]int
	for i, size := range all {
		if !e.tab.Shard(i).Fits(size) {
			fresh = map[int]int{}
			break
		}
	}
	if fresh == nil {
		return
	}
	for j, key := range keys {
		i := at[j].i
		if at[j].dup || e.tab.Shard(i).Fits(all[i]) {
			continue
		}
		s, words := e.tab.Shard(i), entryWords(&ents[j])
		if cur, _ := s.GetTagged(key, at[j].h); cur == nil || len(s.Words(cur)) != words {
			fresh[i] += shard.EntrySizeWords[stored](len(key), words)
		}
	}
	for i, size := range all {
		if s := e.tab.Shard(i); !s.Fits(size) && !s.Fits(fresh[i]) {
			panic(ErrShardFull)
		}
	}
}

// roomFor panics with ErrShardFull, before DoMulti writes anything, when
// its new keys would take a shard past its capacity: a write of several
// keys is all or nothing at capacity too, where storing them one by one
// would keep the first and refuse the second. Far from the bound (every
// key counted as new still fits) it looks nothing up.
func (e *Engine) roomFor(keys [][]byte, at []keyAt, ents []Entry) {
	if len(keys) > smallMulti {
		e.roomForMany(keys, at, ents)
		return
	}
	// need is what shard i's keys take: all of them (exact false) or
	// only those that need a new entry (an entry present with room for the
	// same words is written in place).
	need := func(i int, exact bool) int {
		size := 0
		for j, key := range keys {
			if at[j].dup || at[j].i != i {
				continue
			}
			words := entryWords(&ents[j])
			if exact {
				s := e.tab.Shard(i)
				if cur, _ := s.GetTagged(key, at[j].h); cur != nil && len(s.Words(cur)) == words {
					continue
				}
			}
			size += shard.EntrySizeWords[stored](len(key), words)
		}
		return size
	}
	for k := range keys {
		i := at[k].i
		s := e.tab.Shard(i)
		if !at[k].dup && !s.Fits(need(i, false)) && !s.Fits(need(i, true)) {
			panic(ErrShardFull)
		}
	}
}

// keyAt is one key of DoMulti: its hash, its shard, and whether it was
// named before.
type keyAt struct {
	h       uint64
	i       int
	dup     bool  // named earlier in keys
	payload int64 // found.payload of the first lookup
}

// found is where a key's entry sits in its shard: cur and tag are nil when
// the key is absent; live is false when it is absent or expired.
type found struct {
	cur     *stored
	tag     *byte
	live    bool
	payload int64 // cur's Ext state's memory when found (extPayload), before any change in place
}

// find looks key (of hash h) up in shard i at now. An expired entry is
// counted as expired but left in place: the write that usually follows
// (the key coming back) reuses its entry instead of deleting the key and
// inserting it again, and Do reaps it when nothing is written. The caller
// holds the shard's lock.
func (e *Engine) find(i int, s *shard.Shard[stored], key []byte, h uint64, now int64) found {
	cur, tag := s.GetTagged(key, h)
	switch {
	case cur == nil:
		e.stats[i].misses.Add(1)
		return found{}
	case !cur.live(now):
		e.stats[i].expired.Add(1)
		e.stats[i].misses.Add(1)
		// Do and DoMulti delete it or write it anew in this unit.
		e.expiredEvent(key)
		f := found{cur: cur, tag: tag}
		if *tag&tagExt != 0 {
			f.payload = e.extPayload(i, cur, *tag)
		}
		return f
	}
	e.stats[i].hits.Add(1)
	// The payload is measured now: a limiter may grow its Ext state in
	// place before the write that stores it (a sliding window's second
	// set of counts, a big log's buffer).
	f := found{cur: cur, tag: tag, live: true}
	if *tag&tagExt != 0 {
		f.payload = e.extPayload(i, cur, *tag)
	}
	return f
}

// reap deletes key (of hash h, stored entry cur and tag byte tag) from
// shard i.
func (e *Engine) reap(i int, s *shard.Shard[stored], key []byte, h uint64, cur *stored, tag byte) {
	e.stats[i].bytes.Add(-keyCost(key) - e.payload(i, s, len(key), cur, tag))
	e.dropExt(i, *cur, tag)
	s.DeleteHashed(key, h)
}

// payload is what the entry cur (of tag byte tag) of a key of keyLen bytes
// in shard i holds beyond keyCost: a sliding log's words in the entry, or
// the slot and heap memory of its Ext state. UsedBytes, and so maxmemory,
// counts it with the key, as MEMORY USAGE does (KeyBytes).
func (e *Engine) payload(i int, s *shard.Shard[stored], keyLen int, cur *stored, tag byte) int64 {
	if tag&tagExt != 0 {
		return e.extPayload(i, cur, tag)
	}
	if Kind(tag) == KindSlidingLog {
		return wordsBytes(keyLen, len(s.Words(cur)))
	}
	return 0
}

// extPayload is the slot and heap memory of cur's Ext state, 0 when it has
// none.
func (e *Engine) extPayload(i int, cur *stored, tag byte) int64 {
	if tag&tagExt == 0 {
		return 0
	}
	switch x := e.side[i].ext.slots[cur.B].ext.(type) {
	case []byte:
		return extSlotBytes + 24 + int64(cap(x))
	case sizedExt:
		return extSlotBytes + x.extBytes()
	}
	return extSlotBytes
}

// wordsBytes is what n words after a key of keyLen bytes add to its entry.
func wordsBytes(keyLen, n int) int64 {
	if n == 0 {
		return 0
	}
	return int64(shard.EntrySizeWords[stored](keyLen, n) - shard.EntrySize[stored](keyLen))
}

// store writes ent for key at at: it inserts an absent key, overwrites a
// present one (live or expired) and deletes the key when ent is not live.
func (e *Engine) store(i int, s *shard.Shard[stored], key []byte, h uint64, at found, ent Entry, now int64) {
	e.stats[i].changes.Add(1)
	cur, tag := at.cur, at.tag
	if !ent.Live(now) {
		switch {
		case cur != nil && *tag&tagExt != 0:
			// A collection emptied in place (HDEL of its last field) has
			// already shrunk: what was accounted for it is what find
			// measured before the change.
			e.stats[i].bytes.Add(-keyCost(key) - at.payload)
			e.dropExt(i, *cur, *tag)
			s.DeleteHashed(key, h)
		case cur != nil:
			e.reap(i, s, key, h, cur, *tag)
		}
		return
	}
	if ent.Kind == KindSlidingLog || (cur != nil && Kind(*tag&^tagExt) == KindSlidingLog) {
		e.storeLog(i, s, key, h, cur, tag, ent, at.payload) // an entry with words (logbuf.go)
		return
	}
	if cur == nil {
		cur, tag = s.InsertWords(key, h, 0)
		e.stats[i].bytes.Add(keyCost(key))
	}
	old, hadExt := *cur, *tag&tagExt != 0
	*cur = stored{Expire: ent.Expire, A: ent.A, B: ent.B}
	*tag = byte(ent.Kind)
	switch {
	case ent.Ext != nil:
		*tag |= tagExt
		cur.B = e.storeExt(i, old.B, hadExt, &ent)
	case hadExt:
		e.side[i].ext.drop(old.B)
	}
	if hadExt || ent.Ext != nil {
		e.stats[i].bytes.Add(e.extPayload(i, cur, *tag) - at.payload)
	}
}

// storeExt sets the Ext state, B and C of ent for a key of shard i whose
// Ext state is in slot (had: false when it has none), and returns the
// key's slot. A staged state (extbox.go) is committed to the key's box in
// place: on a write to an existing key nothing is allocated.
func (e *Engine) storeExt(i int, slot int64, had bool, ent *Entry) int64 {
	x := &e.side[i].ext
	ext := ent.Ext
	if !had {
		if s, ok := ext.(stagedExt); ok {
			ext, _ = s.commit(nil)
		}
		return x.add(extSlot{ext: ext, b: ent.B, c: ent.C})
	}
	sl := &x.slots[slot]
	if s, ok := ext.(stagedExt); ok {
		ext, _ = s.commit(sl.ext)
	}
	*sl = extSlot{ext: ext, b: ent.B, c: ent.C}
	return slot
}

// Delete removes key; it reports whether a live key was removed.
func (e *Engine) Delete(key []byte, now int64) bool {
	return e.Do(key, now, func(ent Entry) (Entry, bool) {
		return Entry{}, ent.Kind != KindNone
	})
}

// Get returns a copy of key's live entry, Ext state included: later
// writes to the key do not change it.
func (e *Engine) Get(key []byte, now int64) (ent Entry, ok bool) {
	e.Do(key, now, func(cur Entry) (Entry, bool) {
		ent, ok = cur, cur.Kind != KindNone
		switch x := cur.Ext.(type) {
		case clonedExt:
			ent.Ext = x.cloneExt()
		case []byte: // a string's bytes, which SETRANGE and SETBIT change in place
			ent.Ext = append([]byte(nil), x...)
		}
		return cur, false
	})
	return ent, ok
}

// Peek reports key's kind and expiry at now without copying its state:
// what TYPE, EXISTS and TTL need, cheap for a key holding a large hash.
func (e *Engine) Peek(key []byte, now int64) (kind Kind, expire int64, ok bool) {
	e.Do(key, now, func(cur Entry) (Entry, bool) {
		kind, expire, ok = cur.Kind, cur.Expire, cur.Kind != KindNone
		return cur, false
	})
	return kind, expire, ok
}

// Len is the number of stored keys, including expired ones not yet reaped.
func (e *Engine) Len() int {
	n := 0
	for i := 0; i < e.tab.Count(); i++ {
		if e.lockShard(i) {
			n += e.tab.Shard(i).Len()
			e.tab.Shard(i).Unlock()
		} else {
			n += e.tab.Shard(i).Len()
		}
	}
	return n
}

// Shards is the number of shards, for cursors that walk the keyspace.
func (e *Engine) Shards() int { return e.tab.Count() }

// RangeShard calls fn for each live key of shard i at now, under that
// shard's lock, until fn returns false. ent is a copy: changing it changes
// nothing; but its Ext state is the key's own, valid only during the call
// (extbox.go). fn must not call back into the engine.
func (e *Engine) RangeShard(i int, now int64, fn func(key string, ent *Entry) bool) {
	e.RangeShardTransient(i, now, func(key string, ent *Entry) bool {
		return fn(strings.Clone(key), ent)
	})
}

// RangeShardTransient is RangeShard without copying the keys: key is valid
// only during the call, which saves an allocation per key for callers that
// copy it anyway (snapshots).
func (e *Engine) RangeShardTransient(i int, now int64, fn func(key string, ent *Entry) bool) {
	s := e.tab.Shard(i)
	if e.lockShard(i) {
		defer s.Unlock()
	}
	var ent Entry // one copy reused: a fresh one per key would escape and allocate
	s.Scan(0, -1, func(k string, v *stored, tag byte) bool {
		if !v.live(now) {
			return true
		}
		ent = e.load(i, v, tag)
		return fn(k, &ent)
	})
}

// Flush deletes every key, with every shard locked: no write lands
// between the first shard's flush and the last's.
func (e *Engine) Flush() {
	n := e.tab.Count()
	locked := make([]bool, n)
	for i := 0; i < n; i++ {
		locked[i] = e.lockShard(i)
	}
	for i := 0; i < n; i++ {
		s := e.tab.Shard(i)
		if s.Len() > 0 {
			s.Reset()
			e.stats[i].bytes.Store(0)
		}
		e.side[i].ext, e.side[i].cursor = extSlab{}, 0
		e.stats[i].changes.Add(1)
	}
	switch j := e.journal(); {
	case e.tx != nil:
		e.tx.flushed, e.tx.keys = true, e.tx.keys[:0]
	case j != nil:
		j.Record(true, nil)
	}
	for i := n - 1; i >= 0; i-- {
		if locked[i] {
			e.tab.Shard(i).Unlock()
		}
	}
}

// ExpireCycle is active expiry: it walks every shard a step of sample keys
// at a time from where the last cycle stopped, deleting the expired ones,
// and takes another step of the same shard while more than a quarter of the
// last step had expired (as Redis's active expiry does), at most 16 steps.
// Each step holds one shard's lock for a bounded amount of work, so a
// million keys expiring together are reaped over a few cycles without a
// latency spike. After its steps it lets the shard give memory back when
// deleted keys dominate and the shard has not needed the room lately (its
// peak, decaying by 1/16 a cycle: about a second at ten cycles a second).
// It returns the number of keys it deleted.
func (e *Engine) ExpireCycle(now int64, sample int) int {
	total := 0
	for i := 0; i < e.tab.Count(); i++ {
		total += e.expireShard(i, now, sample)
	}
	return total
}

// ExpireShards is a slice of a cycle: ExpireCycle's work on the next n
// shards in turn, so a caller can spread a cycle over several calls and
// never hold a core for the whole of one. It returns the number of keys it
// deleted.
func (e *Engine) ExpireShards(now int64, sample, n int) int {
	total := 0
	count := uint64(e.tab.Count())
	first := e.expireNext.Add(uint64(n)) - uint64(n)
	for j := uint64(0); j < uint64(n); j++ {
		total += e.expireShard(int((first+j)%count), now, sample)
	}
	return total
}

// expireShard is one shard's part of ExpireCycle.
func (e *Engine) expireShard(i int, now int64, sample int) int {
	total := 0
	var kb []byte
	s := e.tab.Shard(i)
	sd := &e.side[i]
	j := e.journal()
	for step := 0; step < 16; step++ {
		s.Lock()
		if step == 0 {
			// The keys the shard held since the last cycle, expired ones
			// included, are what it must keep room for (see Compact).
			sd.peak = max(s.Len(), sd.peak-sd.peak/16)
			if sd.ext.sparse() {
				e.compactSlab(i, s)
			}
		}
		seen, gone := 0, 0
		sd.cursor = s.Scan(sd.cursor, sample, func(k string, v *stored, tag byte) bool {
			seen++
			if !v.live(now) {
				var key []byte
				if j != nil { // kept for the journal until the step ends
					key = sd.reaped.add(k)
				} else {
					kb = append(kb[:0], k...)
					key = kb
				}
				e.reap(i, s, key, e.tab.Hash(key), v, tag)
				e.expiredEvent(key)
				gone++
			}
			return true
		})
		if j != nil && len(sd.reaped.keys) > 0 {
			j.Expired(sd.reaped.keys)
			sd.reaped.reset()
		}
		if gone > 0 || sd.cursor == 0 {
			s.Compact(sd.peak)
		}
		s.Unlock()
		e.stats[i].expired.Add(int64(gone))
		total += gone
		if gone*4 <= seen || sd.cursor == 0 {
			break
		}
	}
	return total
}

// compactSlab moves shard i's live ext slots to the front of a slab of
// their own size, in the order of their keys in the shard, and points each
// key's entry at its new slot. The caller holds the shard's lock.
func (e *Engine) compactSlab(i int, s *shard.Shard[stored]) {
	x := &e.side[i].ext
	slots := make([]extSlot, 0, x.live)
	s.Scan(0, -1, func(_ string, v *stored, tag byte) bool {
		if tag&tagExt != 0 {
			slots = append(slots, x.slots[v.B])
			v.B = int64(len(slots) - 1)
		}
		return true
	})
	x.slots, x.free = slots, 0
}

// MemoryBytes is what the keyspace holds: Bytes is the storage allocated
// (capacity included), Live what the live keys need. maxmemory compares
// Live, which falls as soon as keys go.
func (e *Engine) MemoryBytes() (bytes, live int64) {
	for i := 0; i < e.tab.Count(); i++ {
		s := e.tab.Shard(i)
		locked := e.lockShard(i)
		bytes += int64(s.Bytes())
		live += int64(s.LiveBytes())
		if locked {
			s.Unlock()
		}
	}
	return bytes, live
}

// Stats is a point-in-time summary for INFO.
type Stats struct {
	Keys         int
	ExpiredKeys  int64
	KeyspaceHits int64
	KeyspaceMiss int64
	Changes      int64 // writes since start; persistence subtracts its last save's figure
}

// Changes is the number of writes since start, without locking any shard:
// persistence compares it with its figure at the last save.
func (e *Engine) Changes() int64 {
	var n int64
	for i := range e.stats {
		n += e.stats[i].changes.Load()
	}
	return n
}

// Stats sums the per-shard counters.
func (e *Engine) Stats() Stats {
	st := Stats{Keys: e.Len()}
	for i := range e.stats {
		st.ExpiredKeys += e.stats[i].expired.Load()
		st.KeyspaceHits += e.stats[i].hits.Load()
		st.KeyspaceMiss += e.stats[i].misses.Load()
		st.Changes += e.stats[i].changes.Load()
	}
	return st
}

// ErrWrongType is returned when a key is owned by another algorithm.
var ErrWrongType = errors.New("key holds another kind of value")

// ErrNoSuchKey is RENAME of an absent key.
var ErrNoSuchKey = errors.New("no such key")

// Rename moves src's entry, expiry included, to dst at one instant,
// replacing whatever dst held; with nx it does nothing when dst exists.
// It reports whether it moved the entry; an absent src is ErrNoSuchKey.
// The state moves through its serialised form: a deep copy, so that dst
// shares no memory with the entry src held (Ext state is changed in place,
// extbox.go).
func (e *Engine) Rename(src, dst []byte, now int64, nx bool) (done bool, err error) {
	keys := [][]byte{src, dst}
	e.DoMulti(keys, now, func(ents []Entry) bool {
		switch {
		case ents[0].Kind == KindNone:
			err = ErrNoSuchKey
			return false
		case string(src) == string(dst):
			done = !nx
			return false
		case nx && ents[1].Kind != KindNone:
			return false
		}
		b, encErr := ents[0].AppendBinary(nil)
		if encErr != nil {
			err = encErr
			return false
		}
		moved, _, decErr := DecodeEntry(b)
		if decErr != nil {
			err = decErr
			return false
		}
		ents[0], ents[1] = Entry{}, moved
		done = true
		return true
	})
	return done, err
}

// PrefetchMax is the most keys Prefetch reads ahead at once.
const PrefetchMax = shard.PrefetchMax

// Prefetch brings into the cache what looking up each of keys reads first
// (shard.Table.Prefetch), for a batch of commands about to run on them. It
// skips shards that are locked, and does nothing in a transaction's handle.
// Its result is shard.Table.Prefetch's, for the caller to keep.
func (e *Engine) Prefetch(keys [][]byte) uint32 {
	if e.held != nil {
		return 0
	}
	var hs [shard.PrefetchMax]uint64
	var sum uint32
	for len(keys) > 0 {
		n := min(len(keys), len(hs))
		for i, k := range keys[:n] {
			hs[i] = e.tab.Hash(k)
		}
		sum += e.tab.Prefetch(hs[:n])
		keys = keys[n:]
	}
	return sum
}
