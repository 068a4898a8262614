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

// TestGCPacerSetsOnChange: the pacer raises GOGC only while collecting at
// GOGC 100 would cost more than gcBudget, follows the live heap and the
// rate of garbage then, and leaves GOGC alone while it would move by a
// tenth or less.
func TestGCPacerSetsOnChange(t *testing.T) {
	const mb = 1 << 20
	var now gcReading
	var sets []int
	p := &gcPacer{read: func() gcReading { return now }, set: func(v int) int { sets = append(sets, v); return 0 }}
	for _, step := range []struct {
		live, rate, cycles uint64
		cpu                float64 // collector CPU seconds in the second
		headroom           int64
		why                string
	}{
		{1 * mb, 14 * mb, 5, 0.002, 128 * mb, "cheap cycles of a small heap (0.14%): 100"},
		{1 * mb, 200 * mb, 50, 0.025, 128 * mb, "50 short cycles a second (2.5%): nothing, still 100"},
		{40 * mb, 100 * mb, 5, 0.075, 128 * mb, "15 ms cycles, 2.5 a second at GOGC 100 (3.75%): 320"},
		{41 * mb, 100 * mb, 1, 0.015, 128 * mb, "312: within a tenth"},
		{41 * mb, 100 * mb, 0, 0, 128 * mb, "no cycle this second: still expensive, nothing"},
		{60 * mb, 100 * mb, 1, 0.015, 128 * mb, "213"},
		{60 * mb, 1 * mb, 0, 0, 128 * mb, "an idle second: still 213, nothing"},
		{60 * mb, 100 * mb, 1, 0.015, 128 * mb, "the load back: still 213, nothing"},
		{60 * mb, 100 * mb, 1, 0.015, 0, "no headroom: 100"},
		{60 * mb, 100 * mb, 1, 0.015, 0, "100 again: nothing"},
		{40 * mb, 40 * mb, 1, 0.015, 128 * mb, "1.5%, expensive: 200"},
		{40 * mb, 40 * mb, 1, 0.008, 128 * mb, "0.8%, between the marks: still 200, nothing"},
		{40 * mb, 10 * mb, 1, 0.008, 128 * mb, "0.2%, a second the load partly filled: still 200, nothing"},
		{40 * mb, 10 * mb, 1, 0.008, 128 * mb, "cheap, 2 in a row: nothing"},
		{40 * mb, 10 * mb, 1, 0.008, 128 * mb, "cheap, 3 in a row: nothing"},
		{40 * mb, 10 * mb, 1, 0.008, 128 * mb, "cheap, 4 in a row: nothing"},
		{40 * mb, 10 * mb, 1, 0.008, 128 * mb, "cheap, 5 in a row: 100"},
	} {
		now = gcReading{live: step.live, allocated: now.allocated + step.rate, cycles: now.cycles + step.cycles, gcCPU: now.gcCPU + step.cpu}
		before := len(sets)
		p.pace(step.headroom)
		t.Logf("%s: set %v", step.why, sets[before:])
	}
	want := []int{100, 320, 213, 100, 200, 100}
	if len(sets) != len(want) {
		t.Fatalf("set %v, want %v", sets, want)
	}
	for i := range want {
		if sets[i] != want[i] {
			t.Fatalf("set %v, want %v", sets, want)
		}
	}
}
