// Package redisarg is the arithmetic Redis applies to command arguments:
// string2ll's integers, and the index and range rules of LINDEX, LRANGE,
// LTRIM and ZRANGE. The command layer's families and the native twins of
// library scripts share it, so that a twin accepts and refuses exactly
// what the command it stands in for does. It imports nothing of the
// project.
package redisarg

import "math"

// ParseInt parses a base-10 int64 exactly as Redis's string2ll does: an
// optional minus sign, no plus sign, no spaces, no leading zeros. ok is
// false for anything else, or a value past int64.
func ParseInt(b []byte) (n int64, ok bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(ch-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ListIndex is index of a list of n elements counted from the head (a
// negative index counts from the tail), as LINDEX reads it; false when out
// of range.
func ListIndex(index int64, n int) (int, bool) {
	if index < 0 {
		index += int64(n)
	}
	return int(index), index >= 0 && index < int64(n)
}

// RankRange turns Redis's start and stop (negative counts from the end)
// into ranks within n elements, as LRANGE, LTRIM and ZRANGE read them; ok
// is false when the range is empty.
func RankRange(start, stop int64, n int) (int, int, bool) {
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
