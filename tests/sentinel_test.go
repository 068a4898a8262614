package tests

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// sentinelDownAfter is the sentinels' down-after-milliseconds: short, so
// that a failover test takes seconds, and not so short that a node or proxy
// starved of CPU for a moment by the rest of a parallel test run looks
// dead to Sentinel, which would then fail over a second time.
const sentinelDownAfter = 2 * time.Second

// startSentinels runs n real redis-sentinel processes monitoring the
// primary at addr as "mymaster" with a quorum of 2, and returns a client
// of each. It skips the test where redis-sentinel is not installed.
func startSentinels(t *testing.T, n int, addr string) []*redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Skip("redis-sentinel not installed")
	}
	host, port, _ := net.SplitHostPort(addr)
	var clients []*redis.Client
	for i := 0; i < n; i++ {
		dir := t.TempDir()
		p := freePort(t)
		conf := filepath.Join(dir, "sentinel.conf")
		require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
			"port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor mymaster %s %s 2\n"+
				"sentinel down-after-milliseconds mymaster %d\nsentinel failover-timeout mymaster 3000\n",
			p, dir, filepath.Join(dir, "sentinel.log"), host, port, sentinelDownAfter.Milliseconds())), 0o600))
		cmd := exec.Command(bin, conf)
		cmd.Stdout, cmd.Stderr = nil, nil
		require.NoError(t, cmd.Start())
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
				t.Logf("sentinel on port %d:\n%s", p, log)
			}
		})
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", p), Protocol: 2})
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	return clients
}

// TestSentinelsFindEachOtherThroughLimitdb: three real redis-sentinel
// processes monitoring a limitdb primary see it up (INFO, PING), find one
// another through its pub/sub (__sentinel__:hello) and agree that a
// failover could be authorized: SENTINEL CKQUORUM answers OK.
func TestSentinelsFindEachOtherThroughLimitdb(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	sentinels := startSentinels(t, 3, ts.addr)
	var last string
	eventually(t, 60*time.Second, func() bool {
		last, _ = sentinels[0].Do(ctx, "SENTINEL", "CKQUORUM", "mymaster").Text()
		return strings.HasPrefix(last, "OK 3 usable Sentinels")
	}, func() string { return fmt.Sprintf("SENTINEL CKQUORUM: %q", last) })
	// Each sentinel learns of the others on its own schedule: the first
	// may count three while the second still knows one other.
	fields := map[string]string{}
	require.Eventually(t, func() bool {
		master, err := sentinels[1].Do(ctx, "SENTINEL", "MASTER", "mymaster").StringSlice()
		if err != nil {
			return false
		}
		for i := 0; i+1 < len(master); i += 2 {
			fields[master[i]] = master[i+1]
		}
		return fields["num-other-sentinels"] == "2"
	}, 60*time.Second, 100*time.Millisecond, "the second sentinel never saw two others: %v", fields)
	require.Equal(t, "master", fields["flags"], "the primary is up, not s_down")
	require.Regexp(t, `^[0-9a-f]{40}$`, fields["runid"], "the run_id Sentinel read from INFO")
}
