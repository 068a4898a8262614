package node

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlspb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/config"
	"github.com/limitdb/limitdb/engine"
	"github.com/limitdb/limitdb/internal/benchcpu"
	"github.com/limitdb/limitdb/rls"
)

// BenchmarkRLSDecide is one Envoy request of one descriptor through the
// node's rate limit service, bench/rls.sh's ok load without gRPC: through
// the command layer (RLS.CHARGE on a LocalClient, the gates, statistics)
// and, for comparison, straight into the engine past every gate.
func BenchmarkRLSDecide(b *testing.B) {
	dir := b.TempDir()
	rules := "domain: bench\ndescriptors:\n  - key: user\n    rate_limit:\n      unit: minute\n      requests_per_unit: 1000000\n"
	if err := os.WriteFile(filepath.Join(dir, "bench.yaml"), []byte(rules), 0o644); err != nil {
		b.Fatal(err)
	}
	reqs := make([]*rlspb.RateLimitRequest, 1000)
	for i := range reqs {
		reqs[i] = &rlspb.RateLimitRequest{Domain: "bench", Descriptors: []*rlcommon.RateLimitDescriptor{
			{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: "user", Value: fmt.Sprint("u", i)}}}}}
	}
	for _, path := range []string{"gates", "engine"} {
		b.Run(path, func(b *testing.B) {
			clk := clock.NewFake(1_700_000_000e9)
			n := New(config.Default(), engine.New(clk, 0), log.New(io.Discard, "", 0))
			defer n.Close()
			if err := n.Prepare(); err != nil {
				b.Fatal(err)
			}
			svc := n.RLS()
			if err := svc.LoadDir(dir, nil); err != nil {
				b.Fatal(err)
			}
			if path == "engine" {
				svc.SetCharger(rls.EngineCharger{Eng: n.Engine()})
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer benchcpu.Report(b)()
			for i := 0; i < b.N; i++ {
				if _, err := svc.Decide(reqs[i%len(reqs)], clk.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
