package command

import (
	"math"
	"testing"
)

// TestLuaNumber: an argument reads as Lua 5.1's coercion of a string
// (strtod) reads it, or declines.
func TestLuaNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"-0", math.Copysign(0, -1), true}, {"60000", 60000, true}, {"-5", -5, true},
		{"007", 7, true}, {"+1", 1, true}, {" 1 ", 1, true}, {"1.5", 1.5, true}, {"1e3", 1000, true},
		{"999999999999999", 999999999999999, true}, {"-999999999999999", -999999999999999, true},
		{"1234567890123456789", 1234567890123456789, true}, {"9223372036854775808", 9223372036854775808, true},
		{"", 0, false}, {"-", 0, false}, {"abc", 0, false}, {"0x10", 0, false}, {"inf", 0, false},
		{"nan", 0, false}, {"1_000", 0, false}, {"1-", 0, false},
	} {
		got, ok := luaNumber([]byte(tc.in))
		if ok != tc.ok || got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("luaNumber(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
