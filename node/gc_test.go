package node

import "testing"

func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, 128 << 20, 100},
		{38 << 20, 0, 100},
		{38 << 20, 128 << 20, 336},
		{64 << 20, 128 << 20, 200},
		{128 << 20, 128 << 20, 100},
		{4 << 30, 128 << 20, 100},
		{1, 1 << 40, 100_000},
	} {
		if got := gcPercent(c.live, c.headroom); got != c.want {
			t.Errorf("gcPercent(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
}

// TestGCPacerSetsOnChange: the pacer follows the live heap, but leaves
// GOGC alone while it would move by a tenth or less.
func TestGCPacerSetsOnChange(t *testing.T) {
	var live uint64
	var sets []int
	p := &gcPacer{live: func() uint64 { return live }, set: func(v int) int { sets = append(sets, v); return 0 }}
	for _, step := range []struct {
		live     uint64
		headroom int64
	}{
		{40 << 20, 128 << 20}, // 320
		{41 << 20, 128 << 20}, // 312: within a tenth
		{60 << 20, 128 << 20}, // 213
		{60 << 20, 0},         // 100
		{60 << 20, 0},         // 100 again: nothing
		{1 << 30, 128 << 20},  // 100 again: nothing
	} {
		live = step.live
		p.pace(step.headroom)
	}
	want := []int{320, 213, 100}
	if len(sets) != len(want) {
		t.Fatalf("set %v, want %v", sets, want)
	}
	for i := range want {
		if sets[i] != want[i] {
			t.Fatalf("set %v, want %v", sets, want)
		}
	}
}
