package tests

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/limitdb/limitdb/persistence"
)

// fakeReplica is a connection that asked a primary for its stream and
// read the snapshot: it reads the records as a replica does.
type fakeReplica struct {
	*raw
	off int64 // the offset read up to
}

// attachFakeReplica connects to ts as a replica and reads its snapshot.
func attachFakeReplica(t *testing.T, ts *testServer) *fakeReplica {
	t.Helper()
	r := dialRaw(t, ts.addr)
	r.send(cmd("PSYNC", "?", "-1"))
	f := strings.Fields(r.mustLine())
	require.Len(t, f, 3, "PSYNC's answer")
	require.Equal(t, "+FULLRESYNC", f[0])
	off, err := strconv.ParseInt(f[2], 10, 64)
	require.NoError(t, err)
	size, err := strconv.Atoi(strings.TrimPrefix(r.mustLine(), "$"))
	require.NoError(t, err)
	_, err = io.ReadFull(r.rd, make([]byte, size))
	require.NoError(t, err)
	return &fakeReplica{raw: r, off: off}
}

// until reads records until they hold every key of keys, and fails the
// test if none does within 20 s.
func (r *fakeReplica) until(keys ...string) {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	seen := map[string]bool{}
	for len(seen) < len(keys) {
		args, raw, err := persistence.ReadRecord(r.rd, nil, nil)
		if err != nil {
			r.t.Fatalf("the replica has %d of the writes %v: %v", len(seen), keys, err)
		}
		r.off += int64(len(raw))
		for _, k := range keys {
			for _, a := range args {
				if bytes.Equal(a, []byte(k)) {
					seen[k] = true
				}
			}
		}
	}
}

// TestWriteReachesReplicasBeforeItsReply: a pipeline's writes are on the
// replica's connection by the time their replies are, round after round,
// with the server's clock never stepped: they go out in the round that ran
// them, not on a timer (a sender paced by the clock would hold the second
// round's forever). The ordering itself, the push before the replies'
// flush, is replication's TestPublishPushesTheRoundBeforeItReturns.
func TestWriteReachesReplicasBeforeItsReply(t *testing.T) {
	t.Parallel()
	ts, _ := startWith(t, nil, nil)
	replica := attachFakeReplica(t, ts)
	c := ts.client(t, 1)
	require.Eventually(t, func() bool {
		return strings.Contains(infoOf(t, c, "replication", "slave0"), "state=online")
	}, 20*time.Second, 5*time.Millisecond, "the fake replica never came online")

	client := dialRaw(t, ts.addr)
	for round := 0; round < 20; round++ {
		var pipeline strings.Builder
		var keys []string
		for i := 0; i < 3; i++ {
			k := fmt.Sprintf("k%d-%d", round, i)
			keys = append(keys, k)
			pipeline.WriteString(cmd("CL.THROTTLE", k, "15", "30", "60"))
		}
		client.send(pipeline.String())
		for range keys {
			var out strings.Builder
			client.reply(&out)
			require.True(t, strings.HasPrefix(out.String(), "*5"), "CL.THROTTLE's reply: %q", out.String())
		}
		replica.until(keys...)
	}
}
