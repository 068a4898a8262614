package tests

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// startRedis runs a real redis-server on a Unix socket in a temporary
// directory, for tests that check limitdb's replies against Redis's own.
// It skips the test where redis-server is not installed (.ci/run installs it).
func startRedis(t testing.TB) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	for i := 0; ; i++ {
		if err := c.Ping(ctx).Err(); err == nil {
			return c
		} else if i == 100 {
			t.Fatalf("redis-server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
