package engine

import (
	"slices"
)

// Exclusive runs fn with the shards owning keys locked, in ascending order
// (every shard when all is true), so that no other goroutine reads or
// writes those keys until fn returns: the isolation of a MULTI/EXEC
// transaction. fn gets tx, the transaction's handle on the keyspace: calls
// through tx do not lock the shards the transaction holds, so whole
// commands run inside it. A call through e itself from fn on a held shard
// waits for fn: a deadlock.
//
// fn must touch only the keys given (or all must be true): locking another
// shard while holding these would break the ascending order that keeps
// multi-key operations free of deadlock.
func (e *Engine) Exclusive(keys [][]byte, all bool, fn func(tx *Engine)) {
	tx, _ := e.txs.Get().(*Engine)
	if tx == nil {
		tx = &Engine{keyspace: e.keyspace, held: make([]bool, e.tab.Count()), tx: &txLog{}}
	}
	idx := tx.idx[:0]
	if all {
		for i := range e.tab.Count() {
			idx = append(idx, i)
		}
	} else {
		idx = e.shardsOf(idx, keys)
	}
	locked := idx[:0]
	defer func() {
		for j := len(locked) - 1; j >= 0; j-- {
			e.tab.Shard(locked[j]).Unlock()
		}
		clear(tx.held)
		tx.tx.flushed, tx.tx.keys = false, tx.tx.keys[:0]
		tx.idx = idx[:0]
		e.txs.Put(tx)
	}()
	for _, i := range idx {
		if e.lockShard(i) {
			tx.held[i] = true
			locked = append(locked, i)
		}
	}
	fn(tx)
	if j := e.journal(); j != nil && (tx.tx.flushed || len(tx.tx.keys) > 0) {
		e.recordKeys(j, tx.tx.flushed, tx.tx.keys)
	}
}

// lockShard locks shard i and reports true, or reports false without
// locking when e is a transaction's handle that holds it.
func (e *Engine) lockShard(i int) bool {
	if e.held != nil && e.held[i] {
		return false
	}
	e.tab.Shard(i).Lock()
	return true
}

// lockShards locks the distinct shards of idx in ascending order and
// returns the indexes it locked (not those the goroutine already held), for
// shard.Table.UnlockIndexes. It reorders idx.
func (e *Engine) lockShards(idx []int) []int {
	slices.Sort(idx)
	idx = slices.Compact(idx)
	locked := idx[:0]
	for _, i := range idx {
		if e.lockShard(i) {
			locked = append(locked, i)
		}
	}
	return locked
}

// shardsOf appends the sorted, distinct shard indexes of keys to idx
// (empty).
func (e *Engine) shardsOf(idx []int, keys [][]byte) []int {
	for _, k := range keys {
		idx = append(idx, e.tab.Index(k))
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}

// Holds reports whether a call through e may touch key: always for the
// keyspace itself, and for a transaction's handle when it holds key's
// shard.
func (e *Engine) Holds(key []byte) bool {
	return e.held == nil || e.held[e.tab.Index(key)]
}
