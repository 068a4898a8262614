package limit

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration units accepted after a number; a bare integer means seconds. Every
// limitdb command and the policy file spell durations this way.
var durationUnits = []struct {
	suffix string
	ns     float64
}{
	{"ms", 1e6}, {"us", 1e3}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9},
}

// ParseDuration reads a period: an integer (seconds) or a number with a
// unit: 250ms, 1s, 1.5s, 5m, 1h, 1d. It refuses zero, negative, sub-
// nanosecond and overflowing durations.
func ParseDuration(s string) (time.Duration, error) {
	num, scale := s, 1e9
	for _, u := range durationUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, scale = strings.TrimSuffix(s, u.suffix), u.ns
			break
		}
	}
	if num == "" {
		return 0, errors.New("no number")
	}
	for _, r := range num {
		if (r < '0' || r > '9') && r != '.' && r != '-' {
			return 0, errors.New("unknown unit (use ms, s, m, h or d)")
		}
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if n <= 0 {
			return 0, errors.New("must be positive")
		}
		if float64(n) > math.MaxInt64/scale {
			return 0, errors.New("too large")
		}
		return time.Duration(n * int64(scale)), nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errors.New("not a number")
	}
	if f <= 0 {
		return 0, errors.New("must be positive")
	}
	ns := f * scale
	if ns >= math.MaxInt64 {
		return 0, errors.New("too large")
	}
	if ns < 1 {
		return 0, errors.New("shorter than a nanosecond")
	}
	return time.Duration(math.Round(ns)), nil
}

// FormatDuration writes d the way ParseDuration reads it back, in the
// largest unit that divides it exactly.
func FormatDuration(d time.Duration) string {
	units := []struct {
		suffix string
		ns     int64
	}{{"d", 86400e9}, {"h", 3600e9}, {"m", 60e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}}
	for _, u := range units {
		if int64(d)%u.ns == 0 {
			return strconv.FormatInt(int64(d)/u.ns, 10) + u.suffix
		}
	}
	return strconv.FormatFloat(float64(d)/1e3, 'f', -1, 64) + "us"
}
