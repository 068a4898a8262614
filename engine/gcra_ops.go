package engine

import (
	"errors"

	"github.com/limitdb/limitdb/engine/gcra"
)

// ErrWrongType is returned when a key is owned by another algorithm.
var ErrWrongType = errors.New("key holds another kind of value")

// Throttle applies CL.THROTTLE to key at now: a GCRA TAT in nanoseconds that
// expires exactly when it is reached, since from then on the key behaves as
// a fresh one.
func (e *Engine) Throttle(key []byte, now int64, l gcra.Limit, quantity int64) (r gcra.Reply, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		if ent.Kind != KindNone && ent.Kind != KindGCRA {
			err = ErrWrongType
			return ent, false
		}
		var tat int64
		var write bool
		r, tat, write, err = gcra.Throttle(ent.A, now, l, quantity)
		return Entry{Kind: KindGCRA, A: tat, Expire: tat}, write
	})
	return r, err
}

// RedisGCRA applies the GCRA command to key at now. It shares the key type
// and TAT with CL.THROTTLE; Redis's arithmetic is in microseconds, so the
// TAT is read and written at microsecond precision.
func (e *Engine) RedisGCRA(key []byte, now int64, l gcra.Limit, tokens int64) (r gcra.Reply, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		if ent.Kind != KindNone && ent.Kind != KindGCRA {
			err = ErrWrongType
			return ent, false
		}
		var tatUs int64
		var write bool
		r, tatUs, write, err = gcra.RedisGCRA(ent.A/1000, now/1000, l, tokens)
		return Entry{Kind: KindGCRA, A: tatUs * 1000, Expire: tatUs * 1000}, write
	})
	return r, err
}
