package ratelimit_test

import (
	"fmt"
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/command"
	"github.com/limitdb/limitdb/command/clustering"
	"github.com/limitdb/limitdb/command/ratelimit"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/benchcpu"
)

// BenchmarkDispatchThrottle is one CL.THROTTLE through the command table,
// gates, handler, limiter, reply and the statistics kept after it, in
// batches of 16 as a pipelining client sends them.
func BenchmarkDispatchThrottle(b *testing.B) { benchmarkThrottle(b, config.Default()) }

// BenchmarkRoutedThrottle is BenchmarkDispatchThrottle on a member of a
// cluster (of one, serving every slot): the difference is the routing
// check every keyed command passes in cluster mode.
func BenchmarkRoutedThrottle(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bus := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := config.Default()
	cfg.ClusterEnabled, cfg.Dir, cfg.ClusterPort = "yes", "", bus
	benchmarkThrottle(b, cfg)
}

func benchmarkThrottle(b *testing.B, cfg config.Config) {
	clk := clock.NewFake(1_700_000_000e9)
	cl := clustering.New()
	s := command.New(cfg, engine.New(clk, 0), log.New(io.Discard, "", 0), ratelimit.New(), cl)
	defer s.Close()
	c := s.NewLocalClient()
	if cfg.ClusterEnabled == "yes" {
		// The member waits for raft, which runs on the system clock: the
		// fake follows it until the cluster serves every slot.
		stop := follow(clk)
		if err := cl.StartCluster(6379); err != nil {
			b.Fatal(err)
		}
		out := string(c.DoString("CLUSTER", "ADDSLOTSRANGE", "0", "16383"))
		stop()
		if out != "+OK\r\n" {
			b.Fatalf("ADDSLOTSRANGE: %q", out)
		}
	}
	const batch = 16
	cmds := make([][][]byte, 1024)
	for i := range cmds {
		cmds[i] = [][]byte{[]byte("CL.THROTTLE"), []byte(fmt.Sprint("user:", i)), []byte("15"), []byte("30"), []byte("60")}
	}
	if out := c.Pipeline(cmds[:1]); out[0] != '*' {
		b.Fatalf("CL.THROTTLE refused: %q", out)
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := 0; i < b.N; i += batch {
		j := i % len(cmds)
		c.Pipeline(cmds[j : j+batch])
		if j+batch == len(cmds) {
			clk.Advance(1e9) // half a token per key per round: keys stay, half are denied
		}
	}
}

// follow advances clk with the system clock until the returned stop is
// called.
func follow(clk *clock.Fake) (stop func()) {
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
				clk.Advance(time.Millisecond)
			}
		}
	}()
	return func() { close(done); <-stopped }
}
