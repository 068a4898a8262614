package limit

import (
	"testing"
	"time"
)

func TestParseAndFormatDuration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"1", time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"1.5s", 1500 * time.Millisecond, ""},
		{"5m", 5 * time.Minute, ""},
		{"1d", 24 * time.Hour, ""},
		{"10us", 10 * time.Microsecond, ""},
		{"0", 0, "must be positive"},
		{"-1s", 0, "must be positive"},
		{"5y", 0, "unknown unit (use ms, s, m, h or d)"},
		{"ms", 0, "no number"},
		{"9999999999999d", 0, "too large"},
		{"0.0001us", 0, "shorter than a nanosecond"},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%q: err = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q = %v, %v; want %v", c.in, got, err, c.want)
		}
		if back, err := ParseDuration(FormatDuration(got)); err != nil || back != got {
			t.Errorf("FormatDuration(%v) = %q does not read back", got, FormatDuration(got))
		}
	}
}
