package engine

import (
	"testing"
	"time"

	"github.com/limitdb/limitdb/engine/window"
)

// A sliding log's box and its stamps are one allocation (logbox.go), when
// a key is new and each time its ring moves, up to maxInlineWords; a
// larger ring keeps a buffer of its own.
func TestSlidingLogBoxHoldsItsStamps(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	sec := int64(time.Second)
	for _, c := range []struct {
		name   string
		limit  int64
		stamps int   // the ring's stamps (of cost 1) before the request that moves them
		cost   int64 // that request's
		allocs float64
	}{
		{"new key", 100, 0, 1, 1},
		{"4 to 8 slots", 100, 4, 1, 1},
		{"128 to 256 slots", 1000, 128, 1, 1},
		{"256 to 512 slots", 1000, 256, 1, 2},
		{"narrow to wide", 100, 3, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, _ := NewSlidingLog(c.limit, sec)
			ent := Entry{}
			for k := range c.stamps {
				next, r, _, err := l.Apply(ent, t0+int64(k), 1)
				if err != nil || r.Limited {
					t.Fatalf("request %d: %+v %v", k, r, err)
				}
				// Stored: the stage becomes the key's state.
				if s, ok := next.Ext.(stagedExt); ok {
					next.Ext, _ = s.commit(ent.Ext)
				}
				ent = next
			}
			now := t0 + int64(c.stamps)
			if c.stamps > 0 && l.L.Regrow(extRead[window.Ring](ent.Ext), now, c.cost) == 0 {
				t.Fatalf("%d stamps: the next request does not move them", c.stamps)
			}
			n := testing.AllocsPerRun(100, func() {
				if _, _, _, err := l.Apply(ent, now, c.cost); err != nil {
					t.Fatal(err)
				}
			})
			if n != c.allocs {
				t.Errorf("%v allocations, want %v", n, c.allocs)
			}
		})
	}
}
