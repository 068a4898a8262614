package command

import "math"

// Expiry arithmetic shared by the commands that take a time to live: SET,
// SETEX and GETEX, EXPIRE and its forms, RESTORE, MIGRATE and the native
// twins. Instants are Unix nanoseconds; unit is the argument's, in
// nanoseconds (1e9 for seconds, 1e6 for milliseconds).

// ExpireAt turns SET's expiry argument into an absolute instant: n units
// after now, or n units since the epoch when abs. It fails where Redis
// says "invalid expire time in 'cmd' command": n <= 0, or past the int64
// nanosecond range (the year 2262, sooner than Redis's millisecond range).
func ExpireAt(now, n, unit int64, abs bool, cmd string) (int64, error) {
	if n <= 0 || n > math.MaxInt64/unit {
		return 0, invalidExpire(cmd)
	}
	at := n * unit
	if !abs {
		if at > math.MaxInt64-now {
			return 0, invalidExpire(cmd)
		}
		at += now
	}
	return at, nil
}

func invalidExpire(cmd string) error {
	return WireError("ERR invalid expire time in '" + cmd + "' command")
}

// ExpireAtSigned is ExpireAt for EXPIRE and RESTORE, where zero and
// negative times are allowed (they delete the key); false when the instant
// is outside the int64 range.
func ExpireAtSigned(now, n, unit int64, abs bool) (int64, bool) {
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return 0, false
	}
	at := n * unit
	if abs {
		return at, true
	}
	if (at > 0 && now > math.MaxInt64-at) || (at < 0 && now < math.MinInt64-at) {
		return 0, false
	}
	return now + at, true
}

// PTTL is PTTL's answer for a key expiring at expire: milliseconds, rounded
// up, so that a live key has at least 1.
func PTTL(expire, now int64) int64 { return (expire - now + 999_999) / 1_000_000 }
