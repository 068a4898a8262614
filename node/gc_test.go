package node

import "testing"

func TestGCPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, rate, headroom uint64
		want                 int
	}{
		{0, 100 * mb, 128 * mb, 100},
		{38 * mb, 100 * mb, 0, 100},         // no headroom: Go's default
		{38 * mb, 100 * mb, 128 * mb, 336},  // scripts: 200 MB in gcSpan, capped at the headroom
		{38 * mb, 30 * mb, 128 * mb, 157},   // 60 MB in gcSpan
		{38 * mb, 5 * mb, 128 * mb, 100},    // little garbage: Go's default
		{64 * mb, 100 * mb, 128 * mb, 200},  //
		{128 * mb, 100 * mb, 128 * mb, 100}, // a heap as large as the headroom
		{4 << 30, 100 * mb, 128 * mb, 100},
		{1, 1 << 40, 1 << 40, 100_000},
	} {
		if got := gcPercent(c.live, c.rate, c.headroom); got != c.want {
			t.Errorf("gcPercent(%d, %d, %d) = %d, want %d", c.live, c.rate, c.headroom, got, c.want)
		}
	}
}

// TestGCPacerSetsOnChange: the pacer follows the live heap and the rate
// of garbage, but leaves GOGC alone while it would move by a tenth or
// less.
func TestGCPacerSetsOnChange(t *testing.T) {
	const mb = 1 << 20
	var live, allocated uint64
	var sets []int
	p := &gcPacer{read: func() (uint64, uint64) { return live, allocated }, set: func(v int) int { sets = append(sets, v); return 0 }}
	for _, step := range []struct {
		live, rate uint64
		headroom   int64
	}{
		{40 * mb, 100 * mb, 128 * mb}, // 320
		{41 * mb, 100 * mb, 128 * mb}, // 312: within a tenth
		{60 * mb, 100 * mb, 128 * mb}, // 213
		{60 * mb, 100 * mb, 0},        // 100
		{60 * mb, 100 * mb, 0},        // 100 again: nothing
		{40 * mb, 1 * mb, 128 * mb},   // 100 again: little garbage
		{40 * mb, 40 * mb, 128 * mb},  // 200
	} {
		live, allocated = step.live, allocated+step.rate
		p.pace(step.headroom)
	}
	want := []int{320, 213, 100, 200}
	if len(sets) != len(want) {
		t.Fatalf("set %v, want %v", sets, want)
	}
	for i := range want {
		if sets[i] != want[i] {
			t.Fatalf("set %v, want %v", sets, want)
		}
	}
}
