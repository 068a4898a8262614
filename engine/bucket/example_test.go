package bucket_test

import (
	"fmt"
	"time"

	"github.com/limitdb/limitdb/engine/bucket"
)

// A bucket of 10 tokens refilled at one per second, as TB.TAKE tb 10 1 1s.
func Example() {
	b, err := bucket.New(10, 1, int64(time.Second))
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var s bucket.State // a new bucket is full
	d, _ := b.Take(s, now, 10)
	s = d.State
	fmt.Println("take 10:", d.Limited, d.Remaining, time.Duration(d.ResetAfter))
	d, _ = b.Take(s, now+int64(1500*time.Millisecond), 2)
	fmt.Println("take 2 after 1.5s:", d.Limited, d.Remaining, time.Duration(d.RetryAfter))
	// Output:
	// take 10: false 0 10s
	// take 2 after 1.5s: true 1 500ms
}
