// Package tests holds limitdb's end-to-end tests: a real server on
// 127.0.0.1:0 driven by real clients.
package tests

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/node"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// t0 is the fake clock's starting instant.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// testServer is a limitdb server on a free loopback port with a fake clock.
type testServer struct {
	srv  *node.Node
	clk  *clock.Fake
	addr string
}

func startServer(t testing.TB) *testServer {
	t.Helper()
	clk := clock.NewFake(t0)
	eng := engine.New(clk, 0)
	cfg := config.Default()
	cfg.Save = 0 // the test steps the clock, which would run automatic snapshots
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	srv := node.New(cfg, eng, nil)
	return serve(t, srv, clk)
}

// serve runs srv on a free loopback port until the test ends.
func serve(t testing.TB, srv *node.Node, clk *clock.Fake) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	runNode(t, srv, ln)
	return &testServer{srv: srv, clk: clk, addr: ln.Addr().String()}
}

// runNode starts srv on ln as cmd/limitdb starts it (node.Run: its data
// loaded, its rules and listeners started) and returns once it serves;
// the node closes when the test ends.
func runNode(t testing.TB, srv *node.Node, ln net.Listener) {
	t.Helper()
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(context.Background(), ln) }()
	t.Cleanup(func() {
		srv.Close()
		<-ran
	})
	select {
	case <-srv.Serving():
	case err := <-ran:
		ran <- err
		t.Fatalf("start-up: %v", err)
	}
}

// stepping advances ts's fake clock by step at every millisecond of real
// time until the returned stop is called, so that the loops on that clock
// (the script watchdog, replication's timers) run while the test waits for
// a command that needs them.
func (ts *testServer) stepping(step time.Duration) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ts.clk.Advance(step)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// client opens a go-redis client; protocol 2 or 3.
func (ts *testServer) client(t testing.TB, protocol int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: protocol, DisableIdentity: false})
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping: %v", err)
	}
	return c
}

// ints converts a limiter reply to []int64.
func ints(t testing.TB, cmd *redis.Cmd) []int64 {
	t.Helper()
	v, err := cmd.Result()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("reply %#v is not an array", v)
	}
	out := make([]int64, len(arr))
	for i, x := range arr {
		n, ok := x.(int64)
		if !ok {
			t.Fatalf("element %d of %#v is not an integer", i, v)
		}
		out[i] = n
	}
	return out
}

// errCase is one bad command and the prefix of the error it must get.
type errCase struct {
	args []any
	want string
}

// expectErrors sends every case, checks each gets its error, then checks
// that the connection is still usable and that the errors left exactly
// keys keys behind (the ones the test made before).
func expectErrors(t *testing.T, c *redis.Client, cases []errCase, keys int64) {
	t.Helper()
	for _, tc := range cases {
		err := c.Do(ctx, tc.args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want prefix %q", tc.args, err, tc.want)
		}
	}
	require.NoError(t, c.Ping(ctx).Err())
	if n := c.DBSize(ctx).Val(); n != keys {
		t.Errorf("errors left %d keys, want %d", n, keys)
	}
}

// skipUnderRace skips a test whose servers are all separate processes
// when the test binary runs with -race: the race detector instruments
// none of their code, only the harness, and .ci/loaded runs the test
// without it, on a loaded machine.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("its servers are separate processes, which -race does not instrument; .ci/loaded runs it without -race")
	}
}

// inBothProtocols runs f as a subtest for RESP2 and then RESP3, with a
// client of ts and one of the redis-server theirs speaking it, both
// keyspaces flushed first: the frame of every step-by-step comparison
// with Redis.
func inBothProtocols(t *testing.T, ts *testServer, theirs *redis.Client, f func(t *testing.T, ours, theirs *redis.Client)) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ours := ts.client(t, proto)
			opt := *theirs.Options()
			opt.Protocol = proto
			ref := redis.NewClient(&opt)
			defer ref.Close()
			require.NoError(t, ours.FlushAll(ctx).Err())
			require.NoError(t, ref.FlushAll(ctx).Err())
			f(t, ours, ref)
		})
	}
}
