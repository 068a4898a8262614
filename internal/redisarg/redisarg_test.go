package redisarg

import "testing"

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"-1", -1, true}, {"9223372036854775807", 1<<63 - 1, true},
		{"-9223372036854775808", -1 << 63, true}, {"9223372036854775808", 0, false},
		{"+1", 0, false}, {"01", 0, false}, {" 1", 0, false}, {"-", 0, false}, {"", 0, false}, {"-0", 0, false},
	} {
		if got, ok := ParseInt([]byte(tc.in)); got != tc.want || ok != tc.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		start, stop int64
		n           int
		from, to    int
		ok          bool
	}{
		{0, -1, 5, 0, 4, true}, {-2, -1, 5, 3, 4, true}, {-9, 2, 5, 0, 2, true},
		{3, 1, 5, 0, 0, false}, {5, 9, 5, 0, 0, false}, {0, 99, 5, 0, 4, true}, {0, -1, 0, 0, 0, false},
	} {
		from, to, ok := RankRange(tc.start, tc.stop, tc.n)
		if from != tc.from || to != tc.to || ok != tc.ok {
			t.Errorf("RankRange(%d, %d, %d) = %d, %d, %v; want %d, %d, %v", tc.start, tc.stop, tc.n, from, to, ok, tc.from, tc.to, tc.ok)
		}
	}
	for _, tc := range []struct {
		index int64
		n     int
		want  int
		ok    bool
	}{{0, 3, 0, true}, {-1, 3, 2, true}, {3, 3, 3, false}, {-4, 3, -1, false}} {
		if got, ok := ListIndex(tc.index, tc.n); got != tc.want || ok != tc.ok {
			t.Errorf("ListIndex(%d, %d) = %d, %v; want %d, %v", tc.index, tc.n, got, ok, tc.want, tc.ok)
		}
	}
}
