package clock_test

import (
	"fmt"
	"time"

	"github.com/limitdb/limitdb/clock"
)

// A background loop takes the clock it is given; a test drives it with a
// Fake, without sleeping.
func Example() {
	f := clock.NewFake(0)
	done, seen := make(chan struct{}), make(chan int)
	go func() {
		t := f.NewTicker(time.Second)
		defer t.Stop()
		n := 0
		for {
			select {
			case <-done:
				return
			case <-t.C():
				n++
				seen <- n
			}
		}
	}()
	f.WaitForWaiters(1, time.Minute) // the loop is waiting on its ticker
	for i := 0; i < 3; i++ {
		f.Advance(time.Second)
		fmt.Println("tick", <-seen)
	}
	close(done)
	// Output:
	// tick 1
	// tick 2
	// tick 3
}
