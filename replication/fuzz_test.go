package replication

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

// FuzzLinkApply: whatever a primary streams, the replica's link applies
// records or ends with an error, never panics, and stores only entries
// persistence.CheckEntry accepts.
func FuzzLinkApply(f *testing.F) {
	const now = int64(1_700_000_000e9)
	src := engine.New(clock.NewFake(now), 2)
	s := NewStream(1 << 20)
	r, _ := s.Tail(true)
	src.SetJournal(s)
	src.SetString([]byte("k"), now, []byte("v"), engine.SetOptions{}, nil)
	src.IncrBy([]byte("n"), now, 5)
	data, err := r.Next(nil, 1<<20)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(persistence.AppendCommand(nil, "REPLCONF", "GETACK", "*"))
	f.Add(persistence.AppendCommand(nil, "APPLY", "h", "\x08\x00\x00\x00\x00"))
	f.Add(persistence.AppendCommand(nil, "SECTION", "policies", "x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := engine.New(clock.NewFake(now), 2)
		m := New(dst, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
		m.stream.Activate()
		l := newLink(m, "127.0.0.1", 6379)
		l.apply(bufio.NewReaderSize(bytes.NewReader(b), 64), func() {})
		for i := 0; i < dst.Shards(); i++ {
			dst.RangeShardTransient(i, now, func(key string, ent *engine.Entry) bool {
				if err := persistence.CheckEntry(*ent); err != nil {
					t.Fatalf("key %q was stored: %v", key, err)
				}
				return true
			})
		}
	})
}
