package command

import (
	"errors"
	"fmt"
	"github.com/limitdb/limitdb/internal/redisarg"
	"math"
	"strconv"
	"strings"

	"github.com/limitdb/limitdb/engine/limit"
)

var (
	ErrSyntax = errors.New("syntax error")
	ErrNotInt = errors.New("value is not an integer or out of range")
)

// ParseInt parses a base-10 int64 exactly as Redis's string2ll does: an
// optional minus sign, no plus sign, no spaces, no leading zeros.
func ParseInt(b []byte) (int64, error) {
	n, ok := redisarg.ParseInt(b)
	if !ok {
		return 0, ErrNotInt
	}
	return n, nil
}

// parsePositive parses an integer that must be at least min, naming the
// argument in the error.
func ParseAtLeast(b []byte, min int64, what string) (int64, error) {
	n, err := ParseInt(b)
	if err != nil {
		return 0, WireError(fmt.Sprintf("ERR %s must be an integer, got '%s'", what, Clip(b)))
	}
	if n < min {
		return 0, WireError(fmt.Sprintf("ERR %s must be at least %d, got %d", what, min, n))
	}
	return n, nil
}

// ParseFloat parses a finite float the way Redis reads doubles.
func ParseFloat(b []byte) (float64, error) {
	s := string(b)
	if s == "" || strings.TrimSpace(s) != s {
		return 0, WireError("ERR value is not a valid float")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, WireError("ERR value is not a valid float")
	}
	return f, nil
}

// ParseDuration reads a duration the way every limitdb command spells one
// (limit.ParseDuration: an integer is seconds, or 250ms, 1.5s, 5m, 1h, 1d)
// and returns nanoseconds, naming the argument in the error.
func ParseDuration(b []byte, what string) (int64, error) {
	// The common case, whole seconds, without the unit search below: a
	// tenth of TB.TAKE's CPU in BenchmarkPipeline's profile otherwise.
	if n, err := ParseInt(b); err == nil && n > 0 && n <= math.MaxInt64/1_000_000_000 {
		return n * 1e9, nil
	}
	d, err := limit.ParseDuration(string(b))
	if err != nil {
		return 0, WireError(fmt.Sprintf("ERR invalid %s '%s': %v", what, Clip(b), err))
	}
	return int64(d), nil
}

// Clip shortens client input quoted back in an error.
func Clip(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// EqualFold compares an argument to a lower-case keyword without allocating.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		ch := b[i]
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != lower[i] {
			return false
		}
	}
	return true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
