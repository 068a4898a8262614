package engine

// KeyEvents is told the keys the keyspace deletes on its own, not by a
// command's write: a key whose time to live ran out (found by the access
// that deletes it, or by active expiry), and a key maxmemory's policy
// evicted. It is called under the key's shard lock, before the unit that
// found the key goes on, and must not call back into the engine; key is
// valid only during the call. Keyspace notifications' expired and evicted
// events come from it.
type KeyEvents interface {
	Expired(key []byte)
	Evicted(key []byte)
}

type keyEventsBox struct{ k KeyEvents }

// SetKeyEvents starts (k non-nil) or stops telling k the keys expiry and
// eviction delete. With none set, an expired key costs one atomic load
// more; nothing else does.
func (e *Engine) SetKeyEvents(k KeyEvents) {
	if k == nil {
		e.keyEvents.Store(nil)
		return
	}
	e.keyEvents.Store(&keyEventsBox{k})
}

// expiredEvent tells the KeyEvents set, if any, that key expired.
func (e *Engine) expiredEvent(key []byte) {
	if b := e.keyEvents.Load(); b != nil {
		b.k.Expired(key)
	}
}
