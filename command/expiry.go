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

// ExpireAtSigned is ExpireAt for RESTORE, where zero and
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

// ExpireAtMillis is the instant EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT
// set for n (seconds when seconds, else milliseconds; after now unless
// abs). It does Redis's millisecond arithmetic and fails where Redis
// answers "invalid expire time": converting seconds to milliseconds, or
// adding now, overflows int64. Instants are nanoseconds, so a millisecond
// instant past their range (after 2262-04-11, before 1677-09-21) is kept
// as the range's last or first nanosecond: the key still expires long
// after any running server, or at once.
func ExpireAtMillis(now, n int64, seconds, abs bool) (int64, bool) {
	ms := n
	if seconds {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		ms = n * 1000
	}
	if abs {
		return saturatingMillis(ms), true
	}
	if ms > math.MaxInt64-now/1_000_000 {
		return 0, false
	}
	at := saturatingMillis(ms)
	switch {
	case at > 0 && now > math.MaxInt64-at:
		return math.MaxInt64, true
	case at < 0 && now < math.MinInt64-at:
		return math.MinInt64, true
	}
	return now + at, true
}

// saturatingMillis is ms in nanoseconds, held within the int64 range.
func saturatingMillis(ms int64) int64 {
	switch {
	case ms > math.MaxInt64/1_000_000:
		return math.MaxInt64
	case ms < math.MinInt64/1_000_000:
		return math.MinInt64
	}
	return ms * 1_000_000
}

// PTTL is PTTL's answer for a key expiring at expire: milliseconds, rounded
// up, so that a live key has at least 1.
func PTTL(expire, now int64) int64 { return (expire - now + 999_999) / 1_000_000 }
