package engine

import "sync/atomic"

// A Journal is told every change to the keyspace as the final state of the
// keys one atomic unit changed: one command on one key, a multi-key
// command (DoMulti), a transaction (Exclusive), eviction of one key, a
// flush (Record); and the deletions of active expiry, a step's at a time
// (Expired). Both are called under the shards' locks of those keys, so
// the journal sees the changes of each key in the order they happened,
// and a unit's changes together. It must not call back into the engine.
//
// Changes carry effects, never the command: a limiter's new state holds
// the instant it ran at, so applying a change anywhere, later, on another
// clock, gives the same entry. Applying the same change twice gives it
// too: a change is the key's whole state.
type Journal interface {
	Record(flushed bool, changes []Change)
	// Expired is told the keys one step of active expiry deleted from
	// one shard, under that shard's lock: each deletion is a unit of its
	// own, told together with the step's others. keys are valid only
	// during the call.
	Expired(keys [][]byte)
}

// Change is one key's state after a unit: Entry.Kind is KindNone when the
// unit deleted the key. Key and Entry's Ext state are valid only during
// Record.
type Change struct {
	Key   []byte
	Entry Entry
}

// journalRef holds the journal of a keyspace; nil when none.
type journalRef struct{ j atomic.Pointer[journalBox] }

type journalBox struct{ j Journal }

// SetJournal starts (j non-nil) or stops telling j every change. A change
// made by a writer that saw the journal set is recorded; one whose shard
// lock was taken before is not, and is in every copy of its shard made
// after SetJournal returns (a snapshot locks each shard).
func (e *Engine) SetJournal(j Journal) {
	if j == nil {
		e.jr.j.Store(nil)
		return
	}
	e.jr.j.Store(&journalBox{j})
}

// journal is the engine's journal, nil when none.
func (e *Engine) journal() Journal {
	if b := e.jr.j.Load(); b != nil {
		return b.j
	}
	return nil
}

// txLog is what a transaction changed: its keys, in order, and whether it
// flushed the keyspace; recorded as one unit when it ends.
type txLog struct {
	flushed bool
	keys    [][]byte
}

// changed records that key (in shard i, of hash h) was written or deleted
// by a unit of one key: for a transaction's handle, kept until it ends. The
// caller holds the shard's lock.
func (e *Engine) changed(j Journal, i int, key []byte, h uint64) {
	if e.tx != nil {
		e.tx.keys = append(e.tx.keys, append([]byte(nil), key...))
		return
	}
	e.recordOne(j, i, key, h)
}

// recordOne records key's state as stored, as a unit of its own: a write
// whose state Do does not know (changed), or an eviction, in or out of a
// transaction. The caller holds the shard's lock.
func (e *Engine) recordOne(j Journal, i int, key []byte, h uint64) {
	e.recordState(j, i, key, e.finalState(i, key, h).Entry)
}

// recordState records key's state st as a unit of its own. The caller
// holds the shard's lock.
func (e *Engine) recordState(j Journal, i int, key []byte, st Entry) {
	sd := &e.side[i]
	sd.change[0] = Change{Key: key, Entry: st}
	j.Record(false, sd.change[:1])
	sd.change[0] = Change{}
}

// storedState is what Do leaves stored for its key, when that is known
// without looking the key up again: nothing after a deletion (write false:
// an expired entry reaped; or an entry that is not live), or the entry as
// written when it has no Ext state or words (store keeps Kind, Expire, A
// and B as given, and C only beside Ext state). known is false otherwise,
// and finalState reads it.
func storedState(write bool, next Entry, now int64) (st Entry, known bool) {
	switch {
	case !write || !next.Live(now):
		return Entry{}, true
	case next.Ext == nil && next.Kind != KindSlidingLog:
		return Entry{Kind: next.Kind, Expire: next.Expire, A: next.A, B: next.B}, true
	}
	return Entry{}, false
}

// finalState is key's state as stored: its entry, or KindNone when it is
// absent. (A write never leaves an expired entry stored: store deletes it.)
// The caller holds the shard's lock.
func (e *Engine) finalState(i int, key []byte, h uint64) Change {
	c := Change{Key: key}
	if cur, tag := e.tab.Shard(i).GetTagged(key, h); cur != nil {
		c.Entry = e.load(i, cur, *tag)
	}
	return c
}

// recordKeys records keys (a DoMulti's, or a transaction's) as one unit,
// each key once. The caller holds the shards' locks.
func (e *Engine) recordKeys(j Journal, flushed bool, keys [][]byte) {
	first := FirstPlaces(keys)
	changes := make([]Change, 0, len(keys))
	for k, key := range keys {
		if first[k] != k {
			continue
		}
		h := e.tab.Hash(key)
		changes = append(changes, e.finalState(e.tab.IndexOf(h), key, h))
	}
	if flushed || len(changes) > 0 {
		j.Record(flushed, changes)
	}
}

// reapedKeys is the keys an expiry step deleted, copied into one buffer
// that every step of the shard reuses.
type reapedKeys struct {
	buf  []byte
	keys [][]byte // slices of buf (or of a smaller buf it outgrew)
}

// add copies k in and returns the copy.
func (r *reapedKeys) add(k string) []byte {
	start := len(r.buf)
	r.buf = append(r.buf, k...)
	key := r.buf[start:len(r.buf):len(r.buf)]
	r.keys = append(r.keys, key)
	return key
}

func (r *reapedKeys) reset() {
	clear(r.keys)
	r.buf, r.keys = r.buf[:0], r.keys[:0]
}
