package engine

import (
	"errors"
	"math"
	"strconv"
)

// String values (KindString) are what GET, SET and INCR keep, for the
// fixed-window limiter libraries that build on them.
//
// An integer value whose text is canonical (what INCR writes, and what SET
// "42" stores) lives in A with B = strInt, so counters never allocate. A
// float's "%.17g" text written by StringOfFloat (a script's
// redis.call("SET", key, number), as redis_rate's twin stores its
// theoretical arrival time) lives in A as the float's bits with B =
// strFloat, so that such a key is one entry in the table, with no Ext
// slot or heap value to reach. Any other value is a []byte in Ext (nil Ext
// is the empty string). Every form reads back byte for byte as the text
// that was written; the serialised form (AppendBinary) of a strFloat
// value is its text, as for a []byte value.
const (
	strInt   = 1
	strFloat = 2
)

var (
	// ErrNotInteger is INCR on a value that is not a base-10 int64.
	ErrNotInteger = errors.New("value is not an integer or out of range")
	// ErrIncrOverflow is INCR past the int64 range.
	ErrIncrOverflow = errors.New("increment or decrement would overflow")
	// ErrLimiterExpire is EXPIRE or PERSIST on a limiter's key: a limiter
	// key expires by itself at the instant its state is fresh again, and
	// moving that instant would make the limit forget or hoard state.
	ErrLimiterExpire = errors.New("limiter keys expire by themselves when their limit is fresh; DEL resets a limit")
)

// stringExt keeps a string's bytes when they are not a canonical integer.
var stringExt = ExtCodec{
	Append: func(b []byte, e *Entry) ([]byte, error) {
		v, ok := e.Ext.([]byte)
		if !ok {
			return nil, errors.New("string ext is not []byte")
		}
		return append(b, v...), nil
	},
	Decode: func(b []byte, e *Entry) error {
		e.Ext = append([]byte(nil), b...)
		return nil
	},
}

// StringEntry is the entry for value (copied) expiring at expire.
func StringEntry(value []byte, expire int64) Entry {
	if n, ok := canonicalInt(value); ok {
		return StringOfInt(n, expire)
	}
	ent := Entry{Kind: KindString, Expire: expire}
	if len(value) > 0 {
		ent.Ext = append([]byte(nil), value...)
	}
	return ent
}

// StringOfInt is the entry whose value is n's decimal text, expiring at
// expire.
func StringOfInt(n, expire int64) Entry {
	return Entry{Kind: KindString, Expire: expire, A: n, B: strInt}
}

// StringOfFloat is the entry whose value is f as "%.17g" prints it
// (strconv's 'g' format of precision 17), expiring at expire: the text a
// script's redis.call gives for a Lua number (scripting/doc.go).
func StringOfFloat(f float64, expire int64) Entry {
	// Below 1e17 "%.17g" prints an integer's every digit and no point:
	// the canonical integer text, kept as one (but "-0" is not canonical).
	if f == math.Trunc(f) && math.Abs(f) < 1e17 && !(f == 0 && math.Signbit(f)) {
		return StringOfInt(int64(f), expire)
	}
	return Entry{Kind: KindString, Expire: expire, A: int64(math.Float64bits(f)), B: strFloat}
}

// StringFloat is the number a string entry's text reads as (C's strtod,
// Lua's tonumber) when the entry keeps its value as a number: an integer
// (StringOfInt, INCR, SET of a canonical integer) or StringOfFloat's
// float. ok is false for a value kept as text, which the caller parses
// from AppendString.
func StringFloat(ent Entry) (f float64, ok bool) {
	switch {
	case ent.Kind != KindString:
		return 0, false
	case ent.B == strInt:
		return float64(ent.A), true // rounded to nearest even, as strtod rounds the text
	case ent.B == strFloat:
		return math.Float64frombits(uint64(ent.A)), true
	}
	return 0, false
}

// AppendString appends a string entry's value to dst.
func AppendString(dst []byte, ent Entry) []byte {
	switch ent.B {
	case strInt:
		return strconv.AppendInt(dst, ent.A, 10)
	case strFloat:
		return strconv.AppendFloat(dst, math.Float64frombits(uint64(ent.A)), 'g', 17, 64)
	}
	v, _ := ent.Ext.([]byte)
	return append(dst, v...)
}

// canonicalInt parses b if it is exactly the text strconv.FormatInt would
// give back, so that storing it as a number loses nothing.
func canonicalInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [20]byte
	return n, string(strconv.AppendInt(buf[:0], n, 10)) == string(b)
}

// stringInt reads a string entry as an integer the way Redis's INCR does:
// the whole value must be a base-10 int64 without spaces or a plus sign.
func stringInt(ent Entry) (int64, error) {
	if ent.B == strInt {
		return ent.A, nil
	}
	v, _ := ent.Ext.([]byte)
	if n, ok := canonicalInt(v); ok {
		return n, nil
	}
	return 0, ErrNotInteger
}

// GetString appends key's value to dst. ok is false when the key is absent;
// err is ErrWrongType when a limiter owns it.
func (e *Engine) GetString(key []byte, now int64, dst []byte) (val []byte, ok bool, err error) {
	val = dst
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		switch ent.Kind {
		case KindNone:
		case KindString:
			val, ok = AppendString(dst, ent), true
		default:
			err = ErrWrongType
		}
		return ent, false
	})
	return val, ok, err
}

// SetOptions are SET's conditions and expiry.
type SetOptions struct {
	NX, XX  bool  // only if absent / only if present
	Get     bool  // return the old value; a non-string old value is ErrWrongType
	KeepTTL bool  // keep the old expiry
	Expire  int64 // absolute Unix ns; 0 = no expiry
}

// SetString stores value at key (whatever kind held it before, as in
// Redis) unless a condition fails. With o.Get the old value is appended to
// dst. done says whether the value was stored.
func (e *Engine) SetString(key []byte, now int64, value []byte, o SetOptions, dst []byte) (old []byte, hadOld, done bool, err error) {
	old = dst
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		exists := ent.Kind != KindNone
		if o.Get && exists {
			if ent.Kind != KindString {
				err = ErrWrongType
				return ent, false
			}
			old, hadOld = AppendString(dst, ent), true
		}
		if (o.NX && exists) || (o.XX && !exists) {
			return ent, false
		}
		expire := o.Expire
		if o.KeepTTL && exists {
			expire = ent.Expire
		}
		done = true
		return StringEntry(value, expire), true
	})
	return old, hadOld, done, err
}

// SetStrings stores every pair (key, value) at one instant, atomically;
// with nx it stores none unless every key is absent. It reports whether it
// stored them.
func (e *Engine) SetStrings(keys, values [][]byte, now int64, nx bool) (done bool) {
	first := FirstPlaces(keys)
	e.DoMulti(keys, now, func(ents []Entry) bool {
		if nx {
			for _, ent := range ents {
				if ent.Kind != KindNone {
					return false
				}
			}
		}
		// DoMulti stores a key named twice from its first place; the last
		// value given wins, as in Redis.
		for i := range keys {
			ents[first[i]] = StringEntry(values[i], 0)
		}
		done = true
		return true
	})
	return done
}

// IncrBy adds delta to the integer at key (0 when absent), keeping its
// expiry, and returns the new value.
func (e *Engine) IncrBy(key []byte, now, delta int64) (n int64, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		if n, err = AddInt(ent, delta); err != nil {
			return ent, false
		}
		return StringOfInt(n, ent.Expire), true
	})
	return n, err
}

// AddInt is what INCRBY makes of ent: the integer its string holds (0 for
// no entry) plus delta, or INCRBY's error (ErrWrongType, ErrNotInteger,
// ErrIncrOverflow).
func AddInt(ent Entry, delta int64) (int64, error) {
	var n int64
	switch ent.Kind {
	case KindNone:
	case KindString:
		var err error
		if n, err = stringInt(ent); err != nil {
			return 0, err
		}
	default:
		return 0, ErrWrongType
	}
	if (delta > 0 && n > math.MaxInt64-delta) || (delta < 0 && n < math.MinInt64-delta) {
		return 0, ErrIncrOverflow
	}
	return n + delta, nil
}

// ExpireCond is EXPIRE's NX, XX, GT and LT conditions.
type ExpireCond uint8

const (
	ExpireAlways ExpireCond = iota
	ExpireNX                // only when the key has no expiry
	ExpireXX                // only when it has one
	ExpireGT                // only when later than the current one (none counts as infinite)
	ExpireLT                // only when earlier than the current one
)

// SetExpire makes a key of a Redis type (string, hash, set, zset, list) expire at the Unix ns instant at; an
// instant at or before now deletes it. It reports whether the key existed
// and the condition held. Limiter keys answer ErrLimiterExpire.
func (e *Engine) SetExpire(key []byte, now, at int64, cond ExpireCond) (set bool, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		switch {
		case ent.Kind == KindNone:
			return ent, false
		case ent.Kind.Limiter():
			err = ErrLimiterExpire
			return ent, false
		}
		cur := ent.Expire
		switch cond {
		case ExpireNX:
			set = cur == 0
		case ExpireXX:
			set = cur != 0
		case ExpireGT:
			set = cur != 0 && at > cur
		case ExpireLT:
			set = cur == 0 || at < cur
		default:
			set = true
		}
		if !set {
			return ent, false
		}
		if at <= now {
			return Entry{}, true // deleted, as EXPIRE with a past time does in Redis
		}
		ent.Expire = at
		return ent, true
	})
	return set, err
}

// Persist removes the expiry of a key of a Redis type; it reports whether there was one.
func (e *Engine) Persist(key []byte, now int64) (done bool, err error) {
	e.Do(key, now, func(ent Entry) (Entry, bool) {
		switch {
		case ent.Kind == KindNone:
			return ent, false
		case ent.Kind.Limiter():
			err = ErrLimiterExpire
			return ent, false
		case ent.Expire == 0:
			return ent, false
		}
		ent.Expire = 0
		done = true
		return ent, true
	})
	return done, err
}
