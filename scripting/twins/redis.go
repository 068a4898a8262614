package twins

import (
	"errors"
	"math"
)

// The arithmetic of the Redis commands the scripts call, as the command
// layer does it, so that a twin accepts and refuses exactly what
// redis.call would.

var errNotInt = errors.New("twins: not an integer")

// parseInt parses a base-10 int64 exactly as Redis's string2ll does: an
// optional minus sign, no plus sign, no spaces, no leading zeros. INCRBY,
// EXPIRE, SET EX and HINCRBY read their numbers so.
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 20 {
		return 0, errNotInt
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, nil
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, errNotInt
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, errNotInt
	}
	var v uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, errNotInt
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, errNotInt
		}
		v = v*10 + uint64(ch-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, errNotInt
		}
		return -int64(v), nil
	}
	if v > math.MaxInt64 {
		return 0, errNotInt
	}
	return int64(v), nil
}

// expireAt is the instant n units (1e9 for seconds, 1e6 for milliseconds)
// after now, as SET EX and PX, SETEX and EXPIRE read a relative expiry;
// ok is false where they answer "invalid expire time" (n <= 0, or an
// instant past int64).
func expireAt(now, n, unit int64) (int64, bool) {
	if n <= 0 || n > math.MaxInt64/unit {
		return 0, false
	}
	at := n * unit
	if at > math.MaxInt64-now {
		return 0, false
	}
	return now + at, true
}

// expireAtSigned is expireAt for PEXPIRE, where zero and negative times
// are allowed (they delete the key).
func expireAtSigned(now, n, unit int64) (int64, bool) {
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return 0, false
	}
	at := n * unit
	if (at > 0 && now > math.MaxInt64-at) || (at < 0 && now < math.MinInt64-at) {
		return 0, false
	}
	return now + at, true
}

// pttl is PTTL of a key that expires at expire (Unix nanoseconds).
func pttl(expire, now int64) int64 { return (expire - now + 999_999) / 1_000_000 }

// listIndex is index of a list of n elements counted from the head (a
// negative index counts from the tail), as LINDEX reads it; false when out
// of range.
func listIndex(index int64, n int) (int, bool) {
	if index < 0 {
		index += int64(n)
	}
	return int(index), index >= 0 && index < int64(n)
}

// rankRange turns Redis's start and stop (negative counts from the end)
// into ranks within n elements, as LRANGE and LTRIM read them; ok is false
// when the range is empty.
func rankRange(start, stop int64, n int) (int, int, bool) {
	l := int64(n)
	if start < 0 {
		start += l
	}
	if stop < 0 {
		stop += l
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= l {
		return 0, 0, false
	}
	if stop >= l {
		stop = l - 1
	}
	return int(start), int(stop), true
}

// countTrue calls f on each item and counts the trues: how many fields
// HDEL deleted, members ZREM removed.
func countTrue(items [][]byte, f func([]byte) bool) int64 {
	n := int64(0)
	for _, it := range items {
		if f(it) {
			n++
		}
	}
	return n
}

// b2i is a boolean as an integer reply.
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
