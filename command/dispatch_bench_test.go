package command

import (
	"fmt"
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/benchcpu"
)

// BenchmarkDispatchThrottle is one CL.THROTTLE through the command table,
// gates, handler, limiter, reply and the statistics kept after it.
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
	s := New(cfg, engine.New(clk, 0), log.New(io.Discard, "", 0))
	defer s.Close()
	c := s.NewLocalClient()
	if cfg.ClusterEnabled == "yes" {
		// The member waits for raft, which runs on the system clock: the
		// fake follows it until the cluster serves every slot.
		stop := follow(clk)
		if err := s.StartCluster(6379); err != nil {
			b.Fatal(err)
		}
		s.handle(c.Client, [][]byte{[]byte("CLUSTER"), []byte("ADDSLOTSRANGE"), []byte("0"), []byte("16383")})
		stop()
		if out := string(c.w.Bytes()); out != "+OK\r\n" {
			b.Fatalf("ADDSLOTSRANGE: %q", out)
		}
		c.w.Reset()
	}
	cmds := make([][][]byte, 1000)
	for i := range cmds {
		cmds[i] = [][]byte{[]byte("CL.THROTTLE"), []byte(fmt.Sprint("user:", i)), []byte("15"), []byte("30"), []byte("60")}
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := 0; i < b.N; i++ {
		s.handle(c.Client, cmds[i%len(cmds)])
		if i%16 == 15 { // end a batch as the transport does
			if i == 15 && c.failed {
				b.Fatalf("CL.THROTTLE refused: %q", c.w.Bytes())
			}
			c.endBatch()
			c.w.Reset()
		}
		if i%len(cmds) == len(cmds)-1 {
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
