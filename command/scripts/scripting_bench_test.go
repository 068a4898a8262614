package scripts

import (
	"fmt"
	"os"
	"testing"

	"github.com/limitdb/limitdb/clock"
	"github.com/limitdb/limitdb/internal/benchcpu"
)

// BenchmarkEvalSHA is one EVALSHA of bench/lua/gcra.lua and of
// bench/lua/slog.lua, scripts limitdb runs on the interpreter, through the
// command table in batches of 16: their allocations are what the garbage
// collector pays for (go test -bench EvalSHA -benchmem ./command/scripts/).
func BenchmarkEvalSHA(b *testing.B) {
	b.Run("gcra", func(b *testing.B) { benchmarkEvalSHA(b, "gcra.lua", "99", "1000", "60") })
	b.Run("slog", func(b *testing.B) { benchmarkEvalSHA(b, "slog.lua", "10", "5") })
}

func benchmarkEvalSHA(b *testing.B, file string, args ...string) {
	body, err := os.ReadFile("../../bench/lua/" + file)
	if err != nil {
		b.Fatal(err)
	}
	clk := clock.NewFake(1_700_000_000e9)
	s, f := newServer(clk)
	defer s.Close()
	c := s.NewLocalClient()
	script, err := f.scripts.Load(body)
	if err != nil {
		b.Fatal(err)
	}
	cmds := make([][][]byte, 1000)
	for i := range cmds {
		cmds[i] = [][]byte{[]byte("EVALSHA"), []byte(script.SHA), []byte("1"), []byte(fmt.Sprint("user:", i))}
		for _, a := range args {
			cmds[i] = append(cmds[i], []byte(a))
		}
	}
	var batch [][][]byte
	b.ReportAllocs()
	b.ResetTimer()
	defer benchcpu.Report(b)()
	for i := 0; i < b.N; i++ {
		batch = append(batch, cmds[i%len(cmds)])
		if len(batch) == 16 || i == b.N-1 {
			c.Pipeline(batch)
			batch = batch[:0]
		}
		if i%len(cmds) == len(cmds)-1 {
			clk.Advance(1e9)
		}
	}
}
