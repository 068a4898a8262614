package window_test

import (
	"fmt"
	"time"

	"github.com/limitdb/limitdb/engine/window"
)

// Cloudflare's counter, as SW.INCR k 10 1s: ten at the start of one
// window weigh fully at the start of the next, and slide out evenly.
func ExampleSliding() {
	s, err := window.NewSliding(10, int64(time.Second), 1)
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	st := window.SlidingState{Counts: make([]int64, 2)}
	st = s.Record(st, start, 10, make([]int64, 2))
	d, _ := s.Decide(st, start+int64(time.Second), 1)
	fmt.Println("next window:", d.Limited, time.Duration(d.RetryAfter))
	d, _ = s.Decide(st, start+int64(1500*time.Millisecond), 0)
	fmt.Println("half way:", d.Remaining)
	// Output:
	// next window: true 100ms
	// half way: 5
}
