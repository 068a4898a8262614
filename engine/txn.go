package engine

import (
	"runtime"
	"slices"
)

// Exclusive runs fn with the shards owning keys locked, in ascending order
// (every shard when all is true), so that no other goroutine reads or
// writes those keys until fn returns: the isolation of a MULTI/EXEC
// transaction. fn runs whole commands, which call back into the engine; an
// engine call from the goroutine running fn does not lock a shard that
// Exclusive holds.
//
// fn must touch only the keys given (or all must be true): locking another
// shard while holding these would break the ascending order that keeps
// multi-key operations free of deadlock.
func (e *Engine) Exclusive(keys [][]byte, all bool, fn func()) {
	var idx []int
	if all {
		idx = make([]int, e.tab.Count())
		for i := range idx {
			idx[i] = i
		}
	} else {
		idx = e.shardsOf(keys)
	}
	me := goroutineID()
	locked := idx[:0]
	defer func() {
		for j := len(locked) - 1; j >= 0; j-- {
			e.stats[locked[j]].owner.Store(0)
			e.tab.Shard(locked[j]).Unlock()
		}
	}()
	for _, i := range idx {
		if e.lockShard(i) {
			e.stats[i].owner.Store(me)
			locked = append(locked, i)
		}
	}
	fn()
}

// lockShard locks shard i and reports true, or reports false without
// locking when the calling goroutine already holds it in Exclusive. The
// common, uncontended case costs what Lock costs; the goroutine's identity
// is only read when the shard is busy and held by a transaction.
func (e *Engine) lockShard(i int) bool {
	s := e.tab.Shard(i)
	if s.TryLock() {
		return true
	}
	if o := e.stats[i].owner.Load(); o != 0 && o == goroutineID() {
		return false
	}
	s.Lock()
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

// shardsOf is the sorted, distinct shard indexes of keys.
func (e *Engine) shardsOf(keys [][]byte) []int {
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, e.tab.Index(k))
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}

// goroutineID reads the calling goroutine's number from the first line of
// its stack trace ("goroutine 42 [running]:"). Go hides goroutine identity
// on purpose; it is needed only to let a transaction re-enter the shard
// locks it holds, and only read on that rare path.
func goroutineID() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return -1
	}
	var id int64
	for _, ch := range b[len(prefix):] {
		if ch < '0' || ch > '9' {
			break
		}
		id = id*10 + int64(ch-'0')
	}
	return id
}
