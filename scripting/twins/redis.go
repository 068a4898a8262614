package twins

import (
	"errors"
	"github.com/limitdb/limitdb/internal/redisarg"
	"math"
)

// The arithmetic of the Redis commands the scripts call, as the command
// layer does it, so that a twin accepts and refuses exactly what
// redis.call would.

var errNotInt = errors.New("twins: not an integer")

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

// parseInt parses an integer as Redis's string2ll does (redisarg.ParseInt).
func parseInt(b []byte) (int64, error) {
	n, ok := redisarg.ParseInt(b)
	if !ok {
		return 0, errNotInt
	}
	return n, nil
}
