package tests

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/limitdb/limitdb/persistence"
)

// TestWaitCountsOnlyReplicasThatHoldTheData: a connection that asks for
// the stream and acknowledges an offset past anything the primary wrote,
// without reading a byte, is no replica for WAIT (Redis answers 0 too); one
// that reads its snapshot and acknowledges what it was sent counts.
func TestWaitCountsOnlyReplicasThatHoldTheData(t *testing.T) {
	t.Parallel()
	ts, _ := startWith(t, nil, nil)
	defer ts.stepping(time.Millisecond)()
	c := ts.client(t, 2)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	liar := dialRaw(t, ts.addr)
	liar.send(cmd("PSYNC", "?", "-1"))
	liar.send(cmd("REPLCONF", "ACK", "9223372036854775807"))
	require.Equal(t, int64(0), c.Do(ctx, "WAIT", 1, 500).Val(), "WAIT 1 500 with only a replica that read nothing")

	honest := dialRaw(t, ts.addr)
	honest.send(cmd("PSYNC", "?", "-1"))
	f := strings.Fields(honest.mustLine())
	require.Len(t, f, 3, "PSYNC's answer")
	require.Equal(t, "+FULLRESYNC", f[0])
	size, err := strconv.Atoi(strings.TrimPrefix(honest.mustLine(), "$")) // the snapshot: $len, then len bytes and no CRLF
	require.NoError(t, err)
	_, err = io.ReadFull(honest.rd, make([]byte, size))
	require.NoError(t, err)
	// It reads the stream as a replica does and answers GETACK with the
	// offset it read up to.
	go func() {
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return
		}
		for {
			args, raw, err := persistence.ReadRecord(honest.rd, nil, nil)
			if err != nil {
				return
			}
			off += int64(len(raw))
			if len(args) == 3 && strings.EqualFold(string(args[1]), "GETACK") {
				honest.nc.Write([]byte(cmd("REPLCONF", "ACK", strconv.FormatInt(off, 10))))
			}
		}
	}()
	waiter := dialRaw(t, ts.addr)
	require.Equal(t, ":1\r\n", waiter.do("WAIT", "1", "5000"), "WAIT 1 with a replica that read its snapshot and acknowledges what it reads")
	require.Equal(t, ":1\r\n", waiter.do("WAIT", "2", "500"), "WAIT 2: still only the replica that reads")
}

// TestReplicaThatDoesNotReadCostsItsLag: a replica connection that never
// reads holds the primary's stream in the stream's own memory, counted
// against client-output-buffer-limit's replica class, and not as copies
// queued on its connection (CLIENT LIST's omem stays under 16 MB of 40);
// past the hard limit it is cut, as Redis cuts it.
func TestReplicaThatDoesNotReadCostsItsLag(t *testing.T) {
	t.Parallel()
	ts, logs := startWith(t, nil, nil)
	defer ts.stepping(time.Millisecond)() // the sender looks at the replica's socket on the server's clock
	c := ts.client(t, 2)
	value := strings.Repeat("v", 100<<10)
	omem := regexp.MustCompile(`omem=(\d+) `)
	replicaOmem := func() int64 {
		list, err := c.ClientList(ctx).Result()
		require.NoError(t, err)
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, "cmd=psync") {
				n, _ := strconv.ParseInt(omem.FindStringSubmatch(line)[1], 10, 64)
				return n
			}
		}
		t.Fatalf("no replica in CLIENT LIST:\n%s", list)
		return 0
	}

	require.NoError(t, c.ConfigSet(ctx, "client-output-buffer-limit", "replica 0 0 0").Err())
	idle := dialRaw(t, ts.addr)
	idle.send(cmd("PSYNC", "?", "-1"))
	worst := int64(0)
	for i := 0; i < 400; i++ { // 40 MB of writes
		require.NoError(t, c.Set(ctx, fmt.Sprint("k", i), value, 0).Err())
		if i%40 == 39 {
			worst = max(worst, replicaOmem())
		}
	}
	// The stream is pushed while the connection holds under 4 MB; one push
	// carries what accumulated since the last, several MB when the machine
	// is busy. Copies of the whole lag reached 30 MiB here.
	if worst > 16<<20 {
		t.Errorf("a replica that does not read held %d MiB queued on its connection", worst>>20)
	}
	require.Equal(t, "1", infoOf(t, c, "replication", "connected_slaves"), "with no limit the replica stays")

	require.NoError(t, c.ConfigSet(ctx, "client-output-buffer-limit", "replica 16mb 0 0").Err())
	for i := 0; i < 400 && !strings.Contains(logs.String(), "output buffer limits"); i++ {
		require.NoError(t, c.Set(ctx, fmt.Sprint("k", i), value, 0).Err())
	}
	idle.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(io.Discard, idle.nc); err != nil {
		t.Fatalf("a replica 40 MB behind was not cut at a 16 MB hard limit: %v", err)
	}
	require.Contains(t, logs.String(), "closed for overcoming of output buffer limits")
	require.Eventually(t, func() bool { return infoOf(t, c, "replication", "connected_slaves") == "0" }, 20*time.Second, 10*time.Millisecond)
}
