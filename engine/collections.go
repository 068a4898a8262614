package engine

import (
	"encoding/binary"
	"errors"
)

// Hashes, sets, sorted sets and lists: the Redis data types that limiter
// libraries' Lua scripts keep their state in.
//
// A collection is its key's Ext state (*Hash, *Set, *ZSet, *List), changed in
// place under the shard's lock: a write to one field costs that field, not
// a copy of the collection. What follows for callers is extbox.go's rule:
// a collection read from Do, DoMulti or RangeShard is valid only under the
// lock; Get hands out a deep copy. A collection never stays empty: the
// write that removes its last element deletes the key, as in Redis.
//
// Each collection counts the heap memory it holds as it changes
// (extBytes), so the engine's accounting and MEMORY USAGE include it
// without walking it.

// The bounds of the compact encodings, as Redis 7.0 sets them in the
// redis.conf it ships (hash-max-listpack-entries 128, whose compiled-in
// default is 512; hash-max-listpack-value, zset-max-listpack-entries and
// zset-max-listpack-value, set-max-intset-entries). A collection that
// outgrows them converts, and stays converted until it is loaded again,
// as in Redis.
const (
	maxPackedEntries = 128
	maxPackedValue   = 64
	maxIntsetEntries = 512
)

// collection is what the four types share: their element count, their
// heap memory, and a deep copy for Get.
type collection interface {
	Len() int
	sizedExt
	clonedExt
}

// doCollection runs fn on key's collection of kind, created by mk when the
// key is absent (mk nil: fn is not called, and found is false). fn reports
// whether it changed the collection; a changed collection is stored with
// its key's expiry, or deletes the key when it is empty. A key of another
// kind is ErrWrongType.
func doCollection[T collection](e *Engine, key []byte, now int64, kind Kind, mk func() T, fn func(x T) (changed bool)) (found bool, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		var x T
		switch ent.Kind {
		case kind:
			x, found = ent.Ext.(T), true
		case KindNone:
			if mk == nil {
				return ent, false
			}
			x = mk()
			ent = Entry{Kind: kind, Ext: x}
		default:
			err = ErrWrongType
			return ent, false
		}
		if !fn(x) {
			return ent, false
		}
		if x.Len() == 0 {
			return Entry{}, true
		}
		return ent, true
	})
	return found, err
}

// appendBytes appends b behind its uvarint length.
func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// readBytes reads what appendBytes wrote from the front of b and returns it
// (sharing b's memory) with the rest of b.
func readBytes(b []byte) (v, rest []byte, err error) {
	s, e, ok := span(b, 0)
	if !ok {
		return nil, nil, errCollection
	}
	return b[s:e], b[e:], nil
}

// span is where the bytes appendBytes wrote at b[off:] are, b[s:e], for a
// loop that walks packed pairs by offset. A length under 128 is its one
// byte, read without binary.Uvarint: most fields and members are that
// short. ok is false where b is cut short.
func span(b []byte, off int) (s, e int, ok bool) {
	if off < len(b) && b[off] < 0x80 {
		s = off + 1
		e = s + int(b[off])
		return s, e, e <= len(b)
	}
	if off >= len(b) {
		return 0, 0, false
	}
	n, k := binary.Uvarint(b[off:])
	if k <= 0 || n > uint64(len(b)-off-k) {
		return 0, 0, false
	}
	s = off + k
	return s, s + int(n), true
}

// readCount reads a collection's element count: at most what the rest of
// b could hold at one byte an element, so a corrupt count cannot make a
// decoder reserve memory it will never fill.
func readCount(b []byte) (int, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return 0, nil, errCollection
	}
	return int(n), b[k:], nil
}

var errCollection = errors.New("truncated collection")

// stringBytes is the memory a Go string of n bytes holds: its header and
// its bytes.
func stringBytes(n int) int64 { return 16 + int64(n) }

// mapEntryBytes is a map entry's share of its table beyond its key and
// value (the tophash byte, the bucket's overflow pointer, the load factor's
// spare room): an estimate, as MEMORY USAGE is.
const mapEntryBytes = 16

// DoHash runs fn on key's hash under the shard's lock (see doCollection):
// with create, an absent key gets an empty hash, stored if fn fills it;
// without, fn runs only when the hash exists. The hash is valid only
// during fn.
func (e *Engine) DoHash(key []byte, now int64, create bool, fn func(h *Hash) (changed bool)) (found bool, err error) {
	var mk func() *Hash
	if create {
		mk = NewHash
	}
	return doCollection(e, key, now, KindHash, mk, fn)
}

// DoSet is DoHash for a set.
func (e *Engine) DoSet(key []byte, now int64, create bool, fn func(s *Set) (changed bool)) (found bool, err error) {
	var mk func() *Set
	if create {
		mk = NewSet
	}
	return doCollection(e, key, now, KindSet, mk, fn)
}

// DoZSet is DoHash for a sorted set.
func (e *Engine) DoZSet(key []byte, now int64, create bool, fn func(z *ZSet) (changed bool)) (found bool, err error) {
	var mk func() *ZSet
	if create {
		mk = NewZSet
	}
	return doCollection(e, key, now, KindZSet, mk, fn)
}

// DoList is DoHash for a list.
func (e *Engine) DoList(key []byte, now int64, create bool, fn func(l *List) (changed bool)) (found bool, err error) {
	var mk func() *List
	if create {
		mk = NewList
	}
	return doCollection(e, key, now, KindList, mk, fn)
}

// Encoding is what OBJECT ENCODING answers for key at now, as Redis 7.0
// would for its value: int, embstr or raw for a string, the compact or
// general encoding of a collection, and a limiter's kind for a limiter
// (which Redis does not have). ok is false when the key is absent.
func (e *Engine) Encoding(key []byte, now int64) (enc string, ok bool) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		ok = ent.Kind != KindNone
		switch x := ent.Ext.(type) {
		case *Hash:
			enc = x.Encoding()
		case *Set:
			enc = x.Encoding()
		case *ZSet:
			enc = x.Encoding()
		case *List:
			enc = x.Encoding()
		default:
			switch {
			case ent.Kind != KindString:
				enc = ent.Kind.String()
			case ent.B == strInt:
				enc = "int"
			case ent.A != rawString && len(AppendString(nil, ent)) <= 44: // OBJ_ENCODING_EMBSTR_SIZE_LIMIT
				enc = "embstr"
			default:
				enc = "raw"
			}
		}
		return ent, false
	})
	return enc, ok
}
