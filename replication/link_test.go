package replication

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/persistence"
)

// A replica's full resynchronisation takes nothing on trust: the size
// the primary announces is never what it allocates, and a snapshot that
// does not arrive whole or does not verify leaves the keyspace as it was.
// Only a snapshot that loads replaces it.
func TestReplicaLoadsOnlyASnapshotThatVerifies(t *testing.T) {
	const now = int64(1_700_000_000e9)
	src := engine.New(clock.NewFake(now), 2)
	src.SetString([]byte("theirs"), now, []byte("v"), engine.SetOptions{}, nil)
	var good bytes.Buffer
	if _, err := persistence.Write(&good, src, &persistence.Sections{}); err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte{'x'}, good.Len())
	cases := []struct {
		name    string
		stream  string
		wantErr string
		want    string // the key the replica holds after
	}{
		{"announces 100 GB, sends 10 bytes", "\n$99999999999\r\n0123456789", "announced 99999999999 bytes and sent 10", "mine"},
		{"announces 1 TiB and more", "$1099511627777\r\n", "announced", "mine"},
		{"sends a snapshot that does not verify", "$" + strconv.Itoa(len(garbage)) + "\r\n" + string(garbage), "keyspace is kept", "mine"},
		{"sends a good snapshot", "$" + strconv.Itoa(good.Len()) + "\r\n" + good.String(), "", "theirs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := engine.New(clock.NewFake(now), 2)
			dst.SetString([]byte("mine"), now, []byte("v"), engine.SetOptions{}, nil)
			m := New(dst, log.New(io.Discard, "", 0), &benchHost{}, 1<<20)
			l := newLink(m, "127.0.0.1", 6379)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := l.loadSnapshot(bufio.NewReader(strings.NewReader(tc.stream)), func() {})
			runtime.ReadMemStats(&after)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("loadSnapshot: %v, want an error saying %q", err, tc.wantErr)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("reading the snapshot allocated %d MiB: the announced size was allocated", grew>>20)
			}
			if dst.Len() != 1 || !has(dst, tc.want, now) {
				t.Errorf("the replica holds %d keys, want only %q", dst.Len(), tc.want)
			}
		})
	}
}

func has(eng *engine.Engine, key string, now int64) bool {
	found := false
	eng.Do([]byte(key), now, func(ent engine.Entry) (engine.Entry, bool) {
		found = ent.Kind != engine.KindNone
		return ent, false
	})
	return found
}
